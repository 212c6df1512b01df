// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * How closely the model should look at an image (`detail` of `image` and `localImage`).
 */
export type ImageDetail = "auto" | "low" | "high" | "original";

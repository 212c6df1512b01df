// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `config/read` params (both members may be ignored by the server).
 */
export type ConfigReadParams = {
/**
 * Directory to resolve configuration for.
 */
cwd?: string | null,
/**
 * Whether to include configuration layers.
 */
includeLayers?: boolean | null, };

// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `turn/steer` result.
 */
export type TurnSteerResponse = {
/**
 * The active turn the input was added to.
 */
turnId: string, };

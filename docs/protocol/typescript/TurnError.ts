// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `{message, additionalDetails}`: why a turn failed; also the `error` of the `error`
 * notification.
 */
export type TurnError = {
/**
 * What went wrong.
 */
message: string,
/**
 * More detail, if any.
 */
additionalDetails: string | null, };

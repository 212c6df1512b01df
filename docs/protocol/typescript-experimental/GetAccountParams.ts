// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `account/read` params.
 */
export type GetAccountParams = {
/**
 * Ask for a token refresh first; Tandem has no account tokens, so it is ignored.
 */
refreshToken?: boolean | null, };

// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * The `process/share` result.
 */
export type ProcessShareResponse = {
/**
 * What another client names, with the handle, in `process/attach`: it lets the holder
 * watch this run of the process (its screen and output), nothing more. The same token
 * for every `process/share` of the run; it stops working when the process exits.
 */
attachToken: string, };

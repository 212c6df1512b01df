// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `model/list` params. Every member may be omitted or `null`.
 */
export type ModelListParams = {
/**
 * Opaque cursor returned by a previous call.
 */
cursor?: string | null,
/**
 * Page size; all models when omitted (a `0` reads as `1`).
 */
limit?: number | null,
/**
 * Include models hidden from the default picker (Tandem hides none).
 */
includeHidden?: boolean | null,
/**
 * List this configured provider's models instead of the default provider's.
 */
modelProvider?: string | null, };

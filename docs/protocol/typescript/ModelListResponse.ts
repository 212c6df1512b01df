// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { Model } from "./Model";

/**
 * `model/list` result.
 */
export type ModelListResponse = {
/**
 * This page of models.
 */
data: Array<Model>,
/**
 * Cursor of the next page; `null` after the last.
 */
nextCursor: string | null, };

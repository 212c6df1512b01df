// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { DynamicToolCallOutputContentItem } from "./DynamicToolCallOutputContentItem";

/**
 * The client's result for `item/tool/call`.
 */
export type ToolCallResponse = {
/**
 * Output for the model.
 */
contentItems: Array<DynamicToolCallOutputContentItem>,
/**
 * Whether the call succeeded.
 */
success: boolean, };

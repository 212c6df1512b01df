// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `thread/items/list.deferOutput`: accepted; Tandem never defers an output, so
 * `outputDeferred` is never set.
 */
export type ThreadItemOutputDeferral = {
/**
 * Defer the output of successful commands (ignored).
 */
commandExecution?: boolean | null,
/**
 * Defer the results of successful MCP tool calls (ignored).
 */
mcpToolCall?: boolean | null, };

// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `item/commandExecution/outputDelta` params.
 */
export type CommandExecutionOutputDeltaNotification = {
/**
 * The thread.
 */
threadId: string,
/**
 * The turn.
 */
turnId: string,
/**
 * The `commandExecution` item.
 */
itemId: string,
/**
 * Output to append.
 */
delta: string, };

// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `thread/shellCommand` params.
 */
export type ThreadShellCommandParams = {
/**
 * The thread (loaded).
 */
threadId: string,
/**
 * A command line for the user's shell (pipes, redirections and quoting kept). It runs
 * without the thread's sandbox, with the server's rights.
 */
command: string,
/**
 * The most milliseconds it may run; omitted or `null`: one hour. Zero times out at once;
 * a negative value is refused (-32602).
 */
timeoutMs?: number | null, };

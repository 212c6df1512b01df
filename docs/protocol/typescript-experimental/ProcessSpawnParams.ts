// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { PtySize } from "./PtySize";

/**
 * `process/spawn` params.
 */
export type ProcessSpawnParams = {
/**
 * Caller-chosen handle naming the process in later requests and notifications.
 */
processHandle: string,
/**
 * Program and arguments.
 */
command: Array<string>,
/**
 * Absolute working directory. Optional in the type so that a missing `cwd` reaches the
 * server's own check (-32600) rather than failing as undecodable params.
 */
cwd?: string | null,
/**
 * Run under a PTY; implies `streamStdin` and `streamStdoutStderr`.
 */
tty?: boolean | null,
/**
 * Accept `process/writeStdin`.
 */
streamStdin?: boolean | null,
/**
 * Stream output as `process/outputDelta` instead of returning it in `process/exited`.
 */
streamStdoutStderr?: boolean | null,
/**
 * Per-stream cap: omitted = 1 MiB, `null` = none.
 */
outputBytesCap?: number | null,
/**
 * Timeout: omitted = 10 000 ms, `null` = none.
 */
timeoutMs?: number | null,
/**
 * Variables merged over the server's environment; `null` removes one.
 */
env?: { [key in string]: string | null } | null,
/**
 * Initial PTY size (requires `tty`).
 */
size?: PtySize | null, };

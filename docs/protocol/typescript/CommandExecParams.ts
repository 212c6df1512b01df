// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { PtySize } from "./PtySize";
import type { SandboxPolicy } from "./SandboxPolicy";

/**
 * `command/exec` params.
 *
 * Boolean switches accept `null` as `false`, and `outputBytesCap` / `timeoutMs` accept `null`
 * as "the server default", as the reference does.
 */
export type CommandExecParams = {
/**
 * Program and arguments; an empty vector is refused.
 */
command: Array<string>,
/**
 * Client-chosen, connection-scoped id; required for `tty`, `streamStdin`,
 * `streamStdoutStderr` and the follow-up `command/exec/*` requests.
 */
processId?: string | null,
/**
 * Run under a PTY; implies `streamStdin` and `streamStdoutStderr`.
 */
tty?: boolean | null,
/**
 * Accept `command/exec/write`.
 */
streamStdin?: boolean | null,
/**
 * Stream output as `command/exec/outputDelta` instead of returning it in the result.
 */
streamStdoutStderr?: boolean | null,
/**
 * Per-stream cap in bytes; omitted or `null` = the server default (1 MiB).
 */
outputBytesCap?: number | null,
/**
 * No output cap (cannot be combined with `outputBytesCap`).
 */
disableOutputCap?: boolean | null,
/**
 * Timeout in milliseconds; omitted or `null` = the server default (10 000 ms).
 */
timeoutMs?: number | null,
/**
 * No timeout (cannot be combined with `timeoutMs`).
 */
disableTimeout?: boolean | null,
/**
 * Working directory; omitted = the server's, relative = relative to the server's.
 */
cwd?: string | null,
/**
 * Variables merged over the server's environment; `null` removes one.
 */
env?: { [key in string]: string | null } | null,
/**
 * Initial PTY size (requires `tty`).
 */
size?: PtySize | null,
/**
 * The sandbox the command runs under; omitted = the configured one.
 */
sandboxPolicy?: SandboxPolicy | null, };

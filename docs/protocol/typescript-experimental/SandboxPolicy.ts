// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { NetworkAccess } from "./NetworkAccess";

/**
 * What the agent's commands may do: `sandbox` of the session settings,
 * `turn/start.sandboxPolicy`. Enforced by the operating system (docs/security.md); a policy
 * the machine cannot enforce refuses the command rather than running it with more rights.
 */
export type SandboxPolicy = { "type": "dangerFullAccess" } | { "type": "readOnly",
/**
 * Whether commands may open network sockets.
 */
networkAccess: boolean, } | { "type": "externalSandbox",
/**
 * What the outer sandbox allows, as the client reports it.
 */
networkAccess: NetworkAccess, } | { "type": "workspaceWrite",
/**
 * More writable directories (absolute).
 */
writableRoots: Array<string>,
/**
 * Whether commands may open network sockets.
 */
networkAccess: boolean,
/**
 * Leave `$TMPDIR` read-only.
 */
excludeTmpdirEnvVar: boolean,
/**
 * Leave `/tmp` read-only.
 */
excludeSlashTmp: boolean, };

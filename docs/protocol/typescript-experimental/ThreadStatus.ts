// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { ThreadActiveFlag } from "./ThreadActiveFlag";

/**
 * A thread's status, tagged on `type`.
 */
export type ThreadStatus = { "type": "notLoaded" } | { "type": "idle" } | { "type": "systemError" } | { "type": "active",
/**
 * What the running turn waits for; empty when it waits for nothing.
 */
activeFlags: Array<ThreadActiveFlag>, };

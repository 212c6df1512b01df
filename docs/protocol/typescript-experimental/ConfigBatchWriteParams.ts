// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { ConfigEdit } from "./ConfigEdit";

/**
 * `config/batchWrite` params: every edit applies, or none.
 */
export type ConfigBatchWriteParams = {
/**
 * The edits, applied in order.
 */
edits: Array<ConfigEdit>,
/**
 * The config file; only the home's `config.toml` is writable.
 */
filePath?: string | null,
/**
 * Write only if the file's `version` is still this one.
 */
expectedVersion?: string | null,
/**
 * Accepted and ignored: the server always takes the written file as its configuration.
 */
reloadUserConfig?: boolean | null, };

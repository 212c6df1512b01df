// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `fs/unwatch` params.
 */
export type FsUnwatchParams = {
/**
 * The id an earlier `fs/watch` gave; an unknown id is accepted (`{}`), as the reference
 * accepts it.
 */
watchId: string, };

// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * What a patch does to one file: `{type: "add"}`, `{type: "delete"}` or
 * `{type: "update", move_path}`.
 *
 * `move_path` is spelled in snake case on the wire, as the reference spells it (the one
 * member of its v2 items that is).
 */
export type PatchChangeKind = { "type": "add" } | { "type": "delete" } | { "type": "update",
/**
 * The file's new path when the patch also moves it.
 */
move_path: string | null, };

// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `thread/attachment/list` params.
 */
export type ThreadAttachmentListParams = {
/**
 * The thread.
 */
threadId: string,
/**
 * `nextCursor` of the previous page.
 */
cursor?: string | null,
/**
 * Page size (default 50; 0 counts as 1).
 */
limit?: number | null, };

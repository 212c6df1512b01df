// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * What `thread/unsubscribe` did.
 */
export type ThreadUnsubscribeStatus = "unsubscribed" | "notSubscribed" | "notLoaded";

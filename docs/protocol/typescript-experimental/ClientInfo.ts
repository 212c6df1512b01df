// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `clientInfo` of `initialize`.
 */
export type ClientInfo = {
/**
 * Machine-readable client name.
 */
name: string,
/**
 * Human-readable title.
 */
title?: string | null,
/**
 * Client version.
 */
version: string, };

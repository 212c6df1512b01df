// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * `capabilities` of `initialize`.
 */
export type InitializeCapabilities = {
/**
 * Opt in to experimental methods, fields and notifications.
 */
experimentalApi: boolean,
/**
 * Notification methods never to send to this connection.
 */
optOutNotificationMethods?: Array<string> | null, };

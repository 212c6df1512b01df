// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { ServerInfo } from "./ServerInfo";

/**
 * `initialize` result.
 */
export type InitializeResponse = {
/**
 * Names the server and the client.
 */
userAgent: string,
/**
 * `unix` or `windows`.
 */
platformFamily: string,
/**
 * e.g. `linux`, `macos`, `windows`.
 */
platformOs: string,
/**
 * Absolute path of the server's home directory. Tandem always sends it; empty when read
 * from a server that does not (the reference, reached over a unix socket or websocket).
 */
tandemHome: string,
/**
 * The same directory as `tandemHome`, under the reference's name (its schema requires it).
 */
codexHome: string,
/**
 * Server name and the upstream protocol revision it implements
 * (`crate::UPSTREAM_PROTOCOL_VERSION`), which clients compare with the release that
 * introduced a feature. Empty from a server that does not send it (the reference).
 */
serverInfo: ServerInfo,
/**
 * The server's own version (Tandem's release, not the protocol revision); empty from a
 * server that does not send it (the reference).
 */
tandemVersion: string,
/**
 * procre: the token of this connection's process session (experimental, sent only to
 * clients with the `experimentalApi` capability): given back in `process/resume` by a
 * later connection, it takes over the `process/spawn` processes of this one after it
 * closed (docs/protocol.md, "Processes across a reconnect"). Omitted by servers whose
 * processes die with their connection.
 */
processSession?: string | null, };

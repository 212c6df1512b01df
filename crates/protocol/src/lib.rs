//! Tandem wire protocol: the JSON-RPC envelope, the error codes, and typed messages for every
//! method of the Tandem app-server protocol (v2).
//!
//! Wire knowledge lives here and nowhere else: transports convert through [`wire`] (or the
//! envelope types such as [`JSONRPCMessage`]), the host and processors speak [`ClientRequest`],
//! [`ServerRequest`], [`ServerNotification`] and friends.
//!
//! ```
//! use tandem_protocol::{ClientRequest, JSONRPCRequest, RequestId};
//! use serde_json::json;
//!
//! let wire: JSONRPCRequest = serde_json::from_value(json!({
//!     "id": 1, "method": "process/kill", "params": {"processHandle": "build"}
//! })).unwrap();
//! let typed = ClientRequest::try_from(wire.clone()).unwrap();
//! assert_eq!(typed.method(), "process/kill");
//! assert_eq!(typed.id(), &RequestId::Integer(1));
//! assert_eq!(typed.into_jsonrpc().unwrap(), wire);
//! ```
//!
//! Transports that carry JSON (stdio lines, websocket frames) go through [`wire`]: it decodes a
//! frame into a [`wire::ClientMessage`] or [`wire::ServerMessage`] (or the error to answer) and
//! encodes one straight into a byte buffer.
//!
//! ```
//! use tandem_protocol::wire::{self, ClientMessage};
//!
//! let frame = br#"{"jsonrpc": "2.0", "id": 7, "method": "process/kill",
//!                  "params": {"processHandle": "build"}}"#;
//! let ClientMessage::Request(request) = wire::decode_client_message(frame).unwrap() else {
//!     panic!("a request")
//! };
//! assert_eq!(request.method(), "process/kill");
//!
//! let mut out = Vec::new();
//! wire::encode_client_message(&ClientMessage::Request(request), &mut out).unwrap();
//! assert_eq!(out, br#"{"id":7,"method":"process/kill","params":{"processHandle":"build"}}"#);
//! ```

#[macro_use]
mod macros;
#[macro_use]
mod schema_macros;
mod builders;
pub mod bytes_base64;
pub mod error_codes;
pub mod jsonrpc;
pub mod messages;
#[cfg(feature = "schema")]
pub mod schema;
pub mod shared_text;
pub mod types;
pub mod wire;

/// The byte buffer of process output and stdin deltas, re-exported so that embedders need no
/// direct dependency on `bytes`.
pub use bytes::Bytes;

/// The upstream app-server release whose protocol this crate implements. Servers advertise it
/// as `serverInfo.version` (and in `userAgent`): clients gate features on that version.
pub const UPSTREAM_PROTOCOL_VERSION: &str = "0.169.0";
pub use jsonrpc::{
    JSONRPCError, JSONRPCErrorError, JSONRPCMessage, JSONRPCNotification, JSONRPCRequest,
    JSONRPCResponse, RequestId,
};
pub use messages::*;
pub use shared_text::SharedText;
pub use types::*;

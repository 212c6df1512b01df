//! Event cursors (docs/protocol.md, "Cursors and replay"): where a notification stands in its
//! thread's event stream, so that a client that lost its connection can ask for everything
//! after the last one it saw.

use serde::{Deserialize, Serialize};

/// The position of one notification in its thread's event stream.
///
/// Carried as the top-level `cursor` member of every notification a thread's subscribers
/// receive, and given back in `thread/resume`'s `cursor` to replay what came after it. `seq`
/// grows by one per event of a thread; `epoch` names the server instance that assigned it, so
/// a cursor from before a restart is recognized as stale instead of being misread.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct EventCursor {
    /// The server instance that assigned `seq` (random, chosen when the server starts).
    pub epoch: String,
    /// The event's number in its thread's stream; strictly increasing, one per event.
    pub seq: u64,
}

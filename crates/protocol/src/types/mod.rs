//! The params, results and shared value types of docs/protocol.md sections 3 to 8, one struct per
//! wire object, named after the method they serve. One file per section; this module holds the
//! serde helpers they share and re-exports them all.

use std::collections::BTreeMap;

use bytes::Bytes;

use serde::de::Error as _;
use serde::ser::SerializeMap as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::{JSONRPCErrorError, RequestId, SharedText};

/// Serde helpers for three-state fields (`T | null` with a default): omitted is `None`,
/// `null` is `Some(None)`, a value is `Some(Some(v))`.
pub mod three_state {
    use super::*;

    /// Deserializes a present member (value or `null`) as `Some(..)`; pair with `default`.
    pub fn deserialize<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
    where
        D: Deserializer<'de>,
        T: Deserialize<'de>,
    {
        Option::<T>::deserialize(deserializer).map(Some)
    }

    /// Serializes `Some(None)` as `null`; pair with `skip_serializing_if = "Option::is_none"`.
    pub fn serialize<S, T>(value: &Option<Option<T>>, serializer: S) -> Result<S::Ok, S::Error>
    where
        S: Serializer,
        T: Serialize,
    {
        match value {
            Some(inner) => inner.serialize(serializer),
            None => serializer.serialize_none(),
        }
    }
}

/// Serde helpers for members that have a default but no `null` state of their own: an explicit
/// `null` on input reads as the default (clients that send every optional member as `null` for
/// "unset" must not fail to decode); output is the plain value. Pair with `default`.
mod null_as_default {
    use super::*;

    pub(super) fn deserialize<'de, D, T>(deserializer: D) -> Result<T, D::Error>
    where
        D: Deserializer<'de>,
        T: Deserialize<'de> + Default,
    {
        Option::<T>::deserialize(deserializer).map(Option::unwrap_or_default)
    }

    pub(super) fn serialize<S: Serializer, T: Serialize>(
        value: &T,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        value.serialize(serializer)
    }
}

/// Params with no members (`{}`); unknown members are ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
pub struct EmptyParams {}

/// A result with no members (`{}`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
pub struct EmptyResponse {}

mod command_exec;
// s-seq: event cursors.
mod cursor;
// apply29: file changes.
mod file_change;
// fs29: the `fs/*` API.
mod fs;
mod handshake;
// mcp30: MCP servers as tools.
mod mcp;
mod models;
mod notifications;
mod paging;
// reason29: plans and reasoning.
mod plan_reasoning;
mod processes;
// search29: fuzzyFileSearch and thread/shellCommand.
mod search_shell;
mod server_requests;
mod thread_ops;
mod threads;
mod values;

pub use command_exec::*;
pub use cursor::*;
pub use file_change::*;
pub use fs::*;
pub use handshake::*;
pub use mcp::*;
pub use models::*;
pub use notifications::*;
pub use paging::*;
pub use plan_reasoning::*;
pub use processes::*;
pub use search_shell::*;
pub use server_requests::*;
pub use thread_ops::*;
pub use threads::*;
pub use values::*;

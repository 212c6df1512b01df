//! History paging (docs/protocol.md section 4, "Paging a thread's history"): the
//! `thread/items/list` params and result and the `thread/resume` initial turns page.
//!
//! Kept apart from `threads` because these shapes only describe how a client walks a long
//! history one bounded page at a time; the thread lifecycle does not depend on them.

use serde::{Deserialize, Serialize};

use super::{SortDirection, ThreadItem, Turn, TurnItemsView};

/// `thread/resume.initialTurnsPage` (experimental): the `thread/turns/list` page to return
/// with the resume, from the newest (or oldest) turn.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadResumeInitialTurnsPageParams {
    /// Page size (as `thread/turns/list.limit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Order (default `desc`: newest first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort_direction: Option<SortDirection>,
    /// How much of each turn's items to include (default `summary`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items_view: Option<TurnItemsView>,
}

/// One page of turns, as `thread/turns/list` answers it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct TurnsPage {
    /// The turns.
    pub data: Vec<Turn>,
    /// Cursor of the next page in the same direction, if any.
    pub next_cursor: Option<String>,
    /// Cursor for the opposite direction that includes this page's first turn again; `null`
    /// for an empty page.
    pub backwards_cursor: Option<String>,
}

/// An item position inside the turn named by `thread/items/list.turnId`; the page starts
/// just past it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum ThreadItemsListAnchor {
    /// Just past the item with this id.
    Item {
        /// The anchor item's id.
        item_id: String,
    },
}

/// `thread/items/list.cursor`: a cursor string returned by an earlier page, or an item
/// anchor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(untagged)]
pub enum ThreadItemsListCursor {
    /// A `nextCursor` or `backwardsCursor` of an earlier page (or a `thread/resume`
    /// `itemsBackwardsCursor`).
    Cursor(String),
    /// An item position (requires `turnId`).
    Anchor(ThreadItemsListAnchor),
}

/// `thread/items/list.deferOutput`: accepted; Tandem never defers an output, so
/// `outputDeferred` is never set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadItemOutputDeferral {
    /// Defer the output of successful commands (ignored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_execution: Option<bool>,
    /// Defer the results of successful MCP tool calls (ignored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_tool_call: Option<bool>,
}

/// `thread/items/list` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadItemsListParams {
    /// The thread.
    pub thread_id: String,
    /// Only this turn's items; all the thread's items when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// Where the page starts (exclusive for an anchor or a `nextCursor`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<ThreadItemsListCursor>,
    /// Page size (default 50, at most 500; 0 counts as 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Order (default `asc`: oldest first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort_direction: Option<SortDirection>,
    /// Accepted and ignored (see [`ThreadItemOutputDeferral`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defer_output: Option<ThreadItemOutputDeferral>,
}

/// One item of a `thread/items/list` page, with the turn that holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadItemEntry {
    /// The turn holding the item.
    pub turn_id: String,
    /// The item, as stored.
    pub item: ThreadItem,
    /// When the item started, unix milliseconds (its `item/started`'s `startedAtMs`); `null`
    /// when not recorded (a forked thread's copied history, a database from before the times
    /// were kept).
    #[serde(default)]
    pub started_at_ms: Option<i64>,
    /// When the item completed, unix milliseconds (its `item/completed`'s `completedAtMs`);
    /// `null` while it runs, or when not recorded.
    #[serde(default)]
    pub completed_at_ms: Option<i64>,
}

/// `thread/items/list` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadItemsListResponse {
    /// One page of items.
    pub data: Vec<ThreadItemEntry>,
    /// Cursor of the next page in the same direction, if any.
    pub next_cursor: Option<String>,
    /// Cursor for the opposite direction that includes this page's first item again; `null`
    /// for an empty page.
    pub backwards_cursor: Option<String>,
}

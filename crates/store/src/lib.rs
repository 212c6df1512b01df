//! Tandem's durable threads: the [`ThreadStore`] trait a thread server talks to, and its three
//! implementations — [`SqliteThreadStore`] under `TANDEM_HOME` (the default),
//! [`PostgresThreadStore`] for threads shared by several servers (docs/scaling.md), and
//! [`InMemoryThreadStore`] for ephemeral threads and tests — with their migrations, writer
//! leases, idempotency keys, history paging and crash recovery.
//!
//! This crate knows the protocol's value types and nothing of processes, agents or the
//! server's runtime: the store keeps data only. Which threads are loaded, subscribed or
//! running is the server's state; a stored thread carries its *last* status so that
//! `systemError` survives an unload and resume (docs/protocol.md section 9), and the server
//! decides what status to report. The implementations share the value types and the semantics
//! defined here (update rules, list filters, cursor formats), so a thread behaves the same
//! whichever store holds it.
//!
//! Start from [`ThreadStore`]: create a thread, write a turn as it happens, read it back.
//!
//! ```
//! use serde_json::Map;
//! use tandem_protocol::{ApprovalPolicy, SessionSource, ThreadStatus};
//! use tandem_store::{InMemoryThreadStore, ThreadRecord, ThreadStore, new_id};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), tandem_store::StoreError> {
//! let store = InMemoryThreadStore::new();
//! let thread = ThreadRecord {
//!     id: new_id(),
//!     name: None,
//!     preview: "hello".into(),
//!     ephemeral: true,
//!     created_at: 1_700_000_000,
//!     updated_at: 1_700_000_000,
//!     status: ThreadStatus::Idle,
//!     cwd: "/work".to_owned(),
//!     source: SessionSource::AppServer,
//!     forked_from_id: None,
//!     model: None,
//!     model_provider: "scripted".to_owned(),
//!     cli_version: "0.1.0".to_owned(),
//!     approval_policy: ApprovalPolicy::Never,
//!     dynamic_tools: Vec::new(),
//!     config: Map::new(),
//!     archived_at: None,
//! };
//! store.create_thread(&thread, &[]).await?;
//! let stored = store.get_thread(&thread.id).await?.expect("just created");
//! assert_eq!(stored.preview, "hello");
//! # Ok(())
//! # }
//! ```
//!
//! A turn is written as it happens (issue 13): [`ThreadStore::begin_turn`] before `turn/start`
//! answers, [`ThreadStore::put_item`] before each `item/completed`, and
//! [`ThreadStore::finish_turn`] before `turn/completed`. A turn left `inProgress` by a crash
//! is closed as `interrupted` when the durable store opens (`recovery`).
//!
//! Threads shared between processes (PostgreSQL, or SQLite on a home several servers use) have
//! one writer at a time: the writer lease of issue 20 (`lease`, docs/scaling.md), acquired
//! with [`ThreadStore::acquire_lease`] when a server loads a thread and checked inside every
//! write transaction.
//!
//! Files: `error` holds [`StoreError`], `memory`, `sqlite` and `postgres` the implementations,
//! `paging` the history cursors and item queries both share, `recovery` what a turn cut
//! short by a crash becomes, `tests` one suite run against both plus the SQLite durability
//! tests (`paging_tests` the history paging suite, `thread_ops_tests` the same for archiving,
//! compaction summaries and truncation, schema version 2), `idempotency` the idempotency keys
//! (SQLite schema version 3), `lease` and `sqlite/lease` the writer leases (SQLite schema
//! version 4; PostgreSQL's migrations are in `crates/store/migrations/postgres`), `liveness`
//! whether a lease's owner is gone (its lock file under `TANDEM_HOME/lease-owners`),
//! `checkpoint` the file checkpoints that let a revert restore what a turn's patches changed
//! (SQLite schema version 5, PostgreSQL migration 4).

use async_trait::async_trait;
use serde_json::{Map, Value};
use tandem_protocol::{
    ApprovalPolicy, DynamicToolSpec, SessionSource, SharedText, SortDirection, Thread,
    ThreadAttachment, ThreadAttachmentAddResponse, ThreadItem, ThreadStatus, Turn, TurnItemsView,
};

mod checkpoint;
mod codec;
mod error;
mod idempotency;
mod lease;
mod liveness;
mod memory;
mod paging;
mod postgres;
mod recovery;
mod sqlite;

#[cfg(test)]
mod checkpoint_tests;
#[cfg(test)]
mod idempotency_tests;
#[cfg(test)]
mod incremental_tests;
#[cfg(test)]
mod lease_tests;
#[cfg(test)]
mod paging_tests;
#[cfg(test)]
mod sqlite_durability_tests;
#[cfg(test)]
mod test_fixtures;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod thread_ops_tests;

pub use checkpoint::{CheckpointFile, FileCheckpoint, evicted_reason};
pub use error::StoreError;
pub use idempotency::{IdempotencyRecord, KEY_MAX_AGE_SECS, KEYS_PER_SCOPE, SERVER_SCOPE};
pub use lease::{DEFAULT_LEASE_TTL, LeaseRenewal, LeaseSettings};
pub use liveness::OWNERS_DIR;
pub use memory::InMemoryThreadStore;
pub use paging::{
    ItemListQuery, ItemPosition, ItemStart, ItemTimes, MAX_HISTORY_PAGE_LIMIT, StoredItem,
    apply_items_view, history_page_limit, summary_items,
};
pub use postgres::PostgresThreadStore;
pub use recovery::{INTERRUPTED_BY_STOP, close_unfinished_item, close_unfinished_turn};
pub use sqlite::SqliteThreadStore;

/// Page size used by callers that have no `limit` of their own.
pub const DEFAULT_PAGE_LIMIT: usize = 50;

/// A new thread or turn id: a UUIDv7 string, lowercase and hyphenated, so that sorting ids
/// sorts by creation time (docs/protocol.md section 1). Ids made by one process are strictly
/// increasing.
pub fn new_id() -> String {
    uuid::Uuid::now_v7().hyphenated().to_string()
}

/// The kind a `thread/list` `sourceKinds` filter matches: the wire name of the variant
/// (`cli`, `vscode`, `exec`, `appServer`, `unknown`), and `custom` for every custom label.
pub fn source_kind(source: &SessionSource) -> &'static str {
    match source {
        SessionSource::Cli => "cli",
        SessionSource::Vscode => "vscode",
        SessionSource::Exec => "exec",
        SessionSource::AppServer => "appServer",
        SessionSource::Unknown => "unknown",
        SessionSource::Custom(_) => "custom",
    }
}

/// Everything stored about a thread except its turns and attachments: the protocol
/// [`Thread`] members plus the settings a resumed thread needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadRecord {
    /// UUIDv7 thread id (see [`new_id`]).
    pub id: String,
    /// The thread's name, if set.
    pub name: Option<String>,
    /// The first user text; may be empty. Shared with the turn's input it came from.
    pub preview: SharedText,
    /// Whether the thread is ephemeral (held only by an in-memory store).
    pub ephemeral: bool,
    /// Creation time, unix seconds.
    pub created_at: i64,
    /// Last update time, unix seconds.
    pub updated_at: i64,
    /// The last status the server recorded (e.g. `systemError` after a failed turn).
    pub status: ThreadStatus,
    /// Working directory (absolute).
    pub cwd: String,
    /// The session source of the connection that created the thread.
    pub source: SessionSource,
    /// The thread this one was forked from.
    pub forked_from_id: Option<String>,
    /// The thread's model, if set.
    pub model: Option<String>,
    /// The model provider.
    pub model_provider: String,
    /// The version of the server that created the thread.
    pub cli_version: String,
    /// The thread's approval policy.
    pub approval_policy: ApprovalPolicy,
    /// The client's dynamic tools (`thread/start.dynamicTools`).
    pub dynamic_tools: Vec<DynamicToolSpec>,
    /// Per-thread configuration overrides under config-file keys (`thread/start.config`).
    pub config: Map<String, Value>,
    /// When the thread was archived (unix seconds); `None` while it is not archived.
    pub archived_at: Option<i64>,
}

impl ThreadRecord {
    /// The protocol [`Thread`] with the recorded status and the given turns; the caller
    /// replaces `status` where the thread's live state differs (e.g. `notLoaded`).
    pub fn to_thread(&self, turns: Vec<Turn>) -> Thread {
        Thread {
            id: self.id.clone(),
            session_id: self.id.clone(),
            name: self.name.clone(),
            preview: self.preview.clone(),
            ephemeral: self.ephemeral,
            created_at: self.created_at,
            updated_at: self.updated_at,
            status: self.status.clone(),
            cwd: self.cwd.clone(),
            source: self.source.clone(),
            forked_from_id: self.forked_from_id.clone(),
            model: self.model.clone(),
            model_provider: self.model_provider.clone(),
            cli_version: self.cli_version.clone(),
            project_id: None,
            turns,
        }
    }

    /// A fork of this thread: id `id`, created and updated at `now`, `idle`,
    /// `forked_from_id` = this thread, every other member copied. The caller then applies the
    /// fork's overrides (source, ephemeral, settings).
    pub fn forked(&self, id: String, now: i64) -> Self {
        Self {
            id,
            created_at: now,
            updated_at: now,
            status: ThreadStatus::Idle,
            forked_from_id: Some(self.id.clone()),
            archived_at: None,
            ..self.clone()
        }
    }
}

/// Changes to a thread's metadata; `None` members are left alone. For the `Option` members
/// of [`ThreadRecord`], `Some(None)` clears the value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadUpdate {
    /// New name (`Some(None)` removes it).
    pub name: Option<Option<String>>,
    /// New preview.
    pub preview: Option<SharedText>,
    /// New update time, unix seconds.
    pub updated_at: Option<i64>,
    /// New last status.
    pub status: Option<ThreadStatus>,
    /// New working directory.
    pub cwd: Option<String>,
    /// New model (`Some(None)` removes it).
    pub model: Option<Option<String>>,
    /// New model provider.
    pub model_provider: Option<String>,
    /// New approval policy.
    pub approval_policy: Option<ApprovalPolicy>,
    /// New dynamic tools.
    pub dynamic_tools: Option<Vec<DynamicToolSpec>>,
    /// New per-thread configuration overrides (replacing the old ones).
    pub config: Option<Map<String, Value>>,
    /// Archive time (`Some(None)` unarchives).
    pub archived_at: Option<Option<i64>>,
}

impl ThreadUpdate {
    /// Applies the set members to `record`.
    pub fn apply(&self, record: &mut ThreadRecord) {
        fn set<T: Clone>(target: &mut T, value: &Option<T>) {
            if let Some(value) = value {
                *target = value.clone();
            }
        }
        set(&mut record.name, &self.name);
        set(&mut record.preview, &self.preview);
        set(&mut record.updated_at, &self.updated_at);
        set(&mut record.status, &self.status);
        set(&mut record.cwd, &self.cwd);
        set(&mut record.model, &self.model);
        set(&mut record.model_provider, &self.model_provider);
        set(&mut record.approval_policy, &self.approval_policy);
        set(&mut record.dynamic_tools, &self.dynamic_tools);
        set(&mut record.config, &self.config);
        set(&mut record.archived_at, &self.archived_at);
    }
}

/// What the end of a turn changes on its thread: its last status and update time, nothing
/// else. Narrower than [`ThreadUpdate`] on purpose: writing it neither reads nor writes the
/// thread's other columns, among them the preview, which is as large as the thread's first
/// input (a turn of N bytes would otherwise hold 2 N more at its end, issue 27).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnEndUpdate {
    /// The thread's status once the turn has ended.
    pub status: ThreadStatus,
    /// The thread's new update time, unix seconds.
    pub updated_at: i64,
}

impl TurnEndUpdate {
    /// Applies it to `record`, as the store does.
    pub fn apply(&self, record: &mut ThreadRecord) {
        record.status = self.status.clone();
        record.updated_at = self.updated_at;
    }
}

/// One page of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    /// The entries, in the requested order.
    pub data: Vec<T>,
    /// The cursor of the next page; `None` when this page is the last.
    pub next_cursor: Option<String>,
    /// For history listings, the cursor that with the opposite direction starts at this
    /// page's first entry (inclusive); `None` for an empty page and for `thread/list`.
    pub backwards_cursor: Option<String>,
}

impl<T> Page<T> {
    /// The first `limit` (at least 1) of `candidates`, which are already filtered, past the
    /// cursor and in the requested order; any candidate beyond the page only says that another
    /// page follows.
    pub fn from_candidates(
        mut candidates: Vec<T>,
        limit: usize,
        cursor_of: impl Fn(&T) -> String,
    ) -> Self {
        let limit = effective_limit(limit);
        let more = candidates.len() > limit;
        candidates.truncate(limit);
        let next_cursor = if more {
            candidates.last().map(cursor_of)
        } else {
            None
        };
        Page {
            data: candidates,
            next_cursor,
            backwards_cursor: None,
        }
    }
}

/// A `thread/list` query, ordered by creation time (ties broken by id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadListQuery {
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Page size; 0 counts as 1.
    pub limit: usize,
    /// Oldest or newest first.
    pub direction: SortDirection,
    /// Only threads whose [`source_kind`] is one of these; empty means any.
    pub source_kinds: Vec<String>,
    /// Only threads whose `cwd` is one of these; empty means any.
    pub cwds: Vec<String>,
    /// Only threads whose name contains this substring (case-sensitive); `None` or empty
    /// means any thread, named or not.
    pub search_term: Option<String>,
    /// Archived threads only (`true`) or unarchived threads only (`false`).
    pub archived: bool,
}

impl Default for ThreadListQuery {
    fn default() -> Self {
        Self {
            cursor: None,
            limit: DEFAULT_PAGE_LIMIT,
            direction: SortDirection::Desc,
            source_kinds: Vec::new(),
            cwds: Vec::new(),
            search_term: None,
            archived: false,
        }
    }
}

impl ThreadListQuery {
    /// Whether `thread` passes the filters (the cursor and limit aside), so that a server can
    /// filter threads it holds elsewhere by the same rules.
    pub fn matches(&self, thread: &ThreadRecord) -> bool {
        let kind_ok = self.source_kinds.is_empty()
            || self
                .source_kinds
                .iter()
                .any(|kind| kind == source_kind(&thread.source));
        let cwd_ok = self.cwds.is_empty() || self.cwds.contains(&thread.cwd);
        let name_ok = match self.search_term() {
            None => true,
            Some(term) => thread
                .name
                .as_deref()
                .is_some_and(|name| name.contains(term)),
        };
        let archive_ok = thread.archived_at.is_some() == self.archived;
        kind_ok && cwd_ok && name_ok && archive_ok
    }

    /// The search term, if it filters anything.
    fn search_term(&self) -> Option<&str> {
        self.search_term.as_deref().filter(|term| !term.is_empty())
    }
}

/// A `thread/turns/list` query, in turn order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnListQuery {
    /// The `next_cursor` (exclusive) or `backwards_cursor` (inclusive) of an earlier page.
    pub cursor: Option<String>,
    /// Page size; 0 counts as 1.
    pub limit: usize,
    /// Oldest or newest first.
    pub direction: SortDirection,
    /// How much of each turn's items to load (see [`apply_items_view`]).
    pub items_view: TurnItemsView,
}

impl Default for TurnListQuery {
    fn default() -> Self {
        Self {
            cursor: None,
            limit: DEFAULT_PAGE_LIMIT,
            direction: SortDirection::Desc,
            items_view: TurnItemsView::Full,
        }
    }
}

/// The turns of `history` up to and including `last_turn_id` (all of them for `None`): what a
/// fork copies. `thread_id` names the source in the error for an unknown turn.
pub fn history_through(
    thread_id: &str,
    mut history: Vec<Turn>,
    last_turn_id: Option<&str>,
) -> Result<Vec<Turn>, StoreError> {
    if let Some(last) = last_turn_id {
        let position = history
            .iter()
            .position(|turn| turn.id == last)
            .ok_or_else(|| StoreError::TurnNotFound {
                thread_id: thread_id.to_owned(),
                turn_id: last.to_owned(),
            })?;
        history.truncate(position + 1);
    }
    Ok(history)
}

/// The summary a compaction turn stored: from the turn after `turn_id` on, the agent sees
/// `summary` instead of the turns up to `turn_id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compaction {
    /// The compaction turn.
    pub turn_id: String,
    /// The summary of everything before it (earlier summaries included).
    pub summary: String,
}

/// The turns of `history` before `turn_id` (exclusive): what `thread/revert` keeps.
/// `thread_id` names the thread in the error for an unknown turn.
pub fn history_before(
    thread_id: &str,
    mut history: Vec<Turn>,
    turn_id: &str,
) -> Result<Vec<Turn>, StoreError> {
    let position = history
        .iter()
        .position(|turn| turn.id == turn_id)
        .ok_or_else(|| StoreError::TurnNotFound {
            thread_id: thread_id.to_owned(),
            turn_id: turn_id.to_owned(),
        })?;
    history.truncate(position);
    Ok(history)
}

/// Where threads, their turns (with items) and attachments are kept.
///
/// Every method that names a thread fails with [`StoreError::ThreadNotFound`] when the store
/// does not hold it, except [`ThreadStore::get_thread`], [`ThreadStore::get_thread_with_turns`]
/// and [`ThreadStore::delete_thread`], for which absence is an ordinary answer.
#[async_trait]
pub trait ThreadStore: Send + Sync {
    /// Stores a new thread with an initial history (empty for a new thread, the copied turns
    /// for a fork), all or nothing. Fails with [`StoreError::ThreadExists`] for a taken id.
    async fn create_thread(
        &self,
        thread: &ThreadRecord,
        history: &[Turn],
    ) -> Result<(), StoreError>;

    /// The thread's record, without turns.
    async fn get_thread(&self, thread_id: &str) -> Result<Option<ThreadRecord>, StoreError>;

    /// The thread's record and all its turns (oldest first), read as one snapshot.
    async fn get_thread_with_turns(
        &self,
        thread_id: &str,
    ) -> Result<Option<(ThreadRecord, Vec<Turn>)>, StoreError>;

    /// Applies `update` to the thread's record and returns the result.
    async fn update_thread(
        &self,
        thread_id: &str,
        update: &ThreadUpdate,
    ) -> Result<ThreadRecord, StoreError>;

    /// One page of the threads that pass `query`'s filters. A cursor that is not a
    /// `next_cursor` of this store fails with [`StoreError::InvalidCursor`].
    async fn list_threads(&self, query: &ThreadListQuery)
    -> Result<Page<ThreadRecord>, StoreError>;

    /// Removes the thread with its turns, items and attachments. `false` when there was no
    /// such thread.
    async fn delete_thread(&self, thread_id: &str) -> Result<bool, StoreError>;

    /// Stores `turn` with its items, the first recorded with `first_item_times` and the others
    /// with none, and applies `update` to the thread, all or nothing: after a crash the thread
    /// holds either the whole turn and update or neither. A new turn goes after the thread's
    /// other turns; a turn whose id is already stored is replaced in place. Returns the
    /// updated record. Callers use [`ThreadStore::commit_turn`] and
    /// [`ThreadStore::begin_turn`]; a store implements this once for both.
    async fn store_turn(
        &self,
        thread_id: &str,
        turn: &Turn,
        first_item_times: ItemTimes,
        update: &ThreadUpdate,
    ) -> Result<ThreadRecord, StoreError>;

    /// Stores a whole `turn` (see [`ThreadStore::store_turn`]), its items without times.
    async fn commit_turn(
        &self,
        thread_id: &str,
        turn: &Turn,
        update: &ThreadUpdate,
    ) -> Result<ThreadRecord, StoreError> {
        self.store_turn(thread_id, turn, ItemTimes::default(), update)
            .await
    }

    /// Stores a turn that has just started (status `inProgress`, with its user input as its
    /// first item, recorded with `input_times`) after the thread's other turns and applies
    /// `update`, all or nothing, so that the input survives a crash before the turn ends.
    async fn begin_turn(
        &self,
        thread_id: &str,
        turn: &Turn,
        input_times: ItemTimes,
        update: &ThreadUpdate,
    ) -> Result<ThreadRecord, StoreError> {
        self.store_turn(thread_id, turn, input_times, update).await
    }

    /// Stores `item`, with `times`, as item number `index` (from 0) of the stored turn
    /// `turn_id`, replacing the item at that index and its times (a started item completing)
    /// or appending it (`index` one past the last). Fails with [`StoreError::TurnNotFound`]
    /// for an unknown turn.
    async fn put_item(
        &self,
        thread_id: &str,
        turn_id: &str,
        index: usize,
        item: &ThreadItem,
        times: ItemTimes,
    ) -> Result<(), StoreError>;

    /// Records the end of the stored turn `turn.id`: its status, error, completion time and
    /// duration (its items are already stored through [`ThreadStore::put_item`]; `turn.items`
    /// is ignored), and applies `end` to the thread. `last_item`, when given, is stored first
    /// as [`ThreadStore::put_item`] would store it (`(index, item, times)`), in the same commit: a
    /// turn's final item and its end then cost one durable write, not two. All or nothing:
    /// after a crash the store holds the item and the end, or neither. Fails with
    /// [`StoreError::ThreadNotFound`] or [`StoreError::TurnNotFound`] when there is nothing
    /// to end.
    async fn finish_turn(
        &self,
        thread_id: &str,
        turn: &Turn,
        last_item: Option<(usize, &ThreadItem, ItemTimes)>,
        end: &TurnEndUpdate,
    ) -> Result<(), StoreError>;

    /// Makes everything written so far live in the store's main file (for SQLite: a WAL
    /// checkpoint that truncates the log), so that a copy of that file alone is complete.
    /// Called at shutdown; the store stays usable. Stores without a log do nothing.
    async fn checkpoint(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// One page of the thread's turns, with their items cut to `query.items_view`, found
    /// from the cursor's position (not by counting from the start). A cursor that names no
    /// turn of the thread fails with [`StoreError::InvalidCursor`].
    async fn list_turns(
        &self,
        thread_id: &str,
        query: &TurnListQuery,
    ) -> Result<Page<Turn>, StoreError>;

    /// One page of the thread's items (of one turn with `query.turn_id`), in turn order and
    /// then item order, found from the start position. A cursor that names no stored item
    /// position, an unknown `turn_id` and an anchor item that is not in the turn fail with
    /// [`StoreError::InvalidCursor`] (the turn, with [`StoreError::TurnNotFound`]).
    async fn list_items(
        &self,
        thread_id: &str,
        query: &ItemListQuery,
    ) -> Result<Page<StoredItem>, StoreError>;

    /// Adds `attachment` unless the thread has one with the same `attachment_type` and
    /// `identity_key`, in which case that one is returned unchanged with outcome `existing`.
    async fn add_attachment(
        &self,
        thread_id: &str,
        attachment: &ThreadAttachment,
    ) -> Result<ThreadAttachmentAddResponse, StoreError>;

    /// Removes the attachment with this type and key; returns it, or `None` if there was none.
    async fn remove_attachment(
        &self,
        thread_id: &str,
        attachment_type: &str,
        identity_key: &str,
    ) -> Result<Option<ThreadAttachment>, StoreError>;

    /// The thread's attachments, oldest first.
    async fn list_attachments(&self, thread_id: &str) -> Result<Vec<ThreadAttachment>, StoreError>;

    /// Removes the stored turn `turn_id` and every later turn, with their items and
    /// compaction summaries, all or nothing; applies `update` to the thread and returns the
    /// updated record. An unknown turn fails with [`StoreError::TurnNotFound`].
    async fn truncate_turns(
        &self,
        thread_id: &str,
        turn_id: &str,
        update: &ThreadUpdate,
    ) -> Result<ThreadRecord, StoreError>;

    /// Stores `summary` as the compaction summary of the stored turn `turn_id` (replacing an
    /// earlier one). Fails with [`StoreError::TurnNotFound`] for an unknown turn.
    async fn put_compaction(
        &self,
        thread_id: &str,
        turn_id: &str,
        summary: &str,
    ) -> Result<(), StoreError>;

    /// The summary of the thread's latest stored compaction turn, if it has one.
    async fn latest_compaction(&self, thread_id: &str) -> Result<Option<Compaction>, StoreError>;

    /// Stores `checkpoint` as the file checkpoint of the stored turn `turn_id` (replacing an
    /// earlier one), then keeps the earlier contents of the thread's newest checkpoints whose
    /// [`FileCheckpoint::kept_bytes`] add up to at most `thread_max_bytes` and drops those of
    /// every older one ([`FileCheckpoint::drop_contents`] with [`evicted_reason`]), all or
    /// nothing. Fails with [`StoreError::TurnNotFound`] for an unknown turn. A checkpoint goes
    /// with its turn when the turn is truncated or the thread deleted; forks do not copy it.
    async fn put_file_checkpoint(
        &self,
        thread_id: &str,
        turn_id: &str,
        checkpoint: &FileCheckpoint,
        thread_max_bytes: u64,
    ) -> Result<(), StoreError>;

    /// The file checkpoints of the stored turn `from_turn_id` and of every later turn, newest
    /// first, as `(turn id, checkpoint)`; turns that changed no file have none and are left
    /// out. An unknown turn fails with [`StoreError::TurnNotFound`].
    async fn file_checkpoints(
        &self,
        thread_id: &str,
        from_turn_id: &str,
    ) -> Result<Vec<(String, FileCheckpoint)>, StoreError>;

    // i-idem: idempotency keys (docs/protocol.md "Idempotent requests"; `idempotency`).

    /// Remembers `record` unless its scope already holds its key: then nothing is written and
    /// the stored record is returned, whatever its method and fingerprint (the caller decides
    /// between a retry and a conflict). First prunes every key older than
    /// [`KEY_MAX_AGE_SECS`] before `record.created_at` (such a key counts as absent), and
    /// keeps at most [`KEYS_PER_SCOPE`] keys in the scope by dropping its oldest. Keys are
    /// durable exactly as the store is; deleting a thread forgets the keys of its scope.
    async fn claim_idempotency_key(
        &self,
        record: &IdempotencyRecord,
    ) -> Result<Option<IdempotencyRecord>, StoreError>;

    /// The record of `key` in `scope`, if one is remembered and younger than
    /// [`KEY_MAX_AGE_SECS`] at `now` (unix seconds).
    async fn idempotency_key(
        &self,
        scope: &str,
        key: &str,
        now: i64,
    ) -> Result<Option<IdempotencyRecord>, StoreError>;

    /// Forgets `key` in `scope` (its request failed before it took effect, so a retry must
    /// run it); nothing happens for an unknown key.
    async fn release_idempotency_key(&self, scope: &str, key: &str) -> Result<(), StoreError>;

    /// Takes the writer lease of `thread_id` for this process (docs/scaling.md): granted when
    /// no other server holds a live one, with an epoch above every earlier one; turns the
    /// thread's previous writer left `inProgress` are closed as interrupted in the same
    /// transaction. Refused with [`StoreError::LeaseHeld`] (naming the owner and its expiry)
    /// while another server holds it, which is also asked to hand the thread over. From then
    /// on every write to the thread checks the epoch in its transaction and fails with
    /// [`StoreError::Fenced`] once the lease is gone. Stores used by one process only (the
    /// in-memory store) grant every lease without recording it.
    async fn acquire_lease(&self, thread_id: &str) -> Result<(), StoreError> {
        let _ = thread_id;
        Ok(())
    }

    /// Stores the new `thread` as [`ThreadStore::create_thread`] does and takes its writer
    /// lease as [`ThreadStore::acquire_lease`] does, in one commit where the store keeps
    /// leases: `thread/start` and `thread/fork` are then one durable write, not two. Stores
    /// nothing if either part fails. The default runs the two one after the other.
    async fn create_leased_thread(
        &self,
        thread: &ThreadRecord,
        history: &[Turn],
    ) -> Result<(), StoreError> {
        self.create_thread(thread, history).await?;
        self.acquire_lease(&thread.id).await
    }

    /// Gives the lease of `thread_id` up (the thread was unloaded, its connection closed, the
    /// server stops or hands it over), so that another server can take it at once rather than
    /// after the TTL. Nothing to do for a lease this process does not hold.
    async fn release_lease(&self, thread_id: &str) -> Result<(), StoreError> {
        let _ = thread_id;
        Ok(())
    }

    /// Renews every lease this process holds, in one statement; reports the leases lost
    /// since the last round and those another server asked for. Fails when the database
    /// cannot be reached; the caller then asks [`ThreadStore::lost_leases`] which leases ran
    /// out on its own clock meanwhile.
    async fn renew_leases(&self) -> Result<LeaseRenewal, StoreError> {
        Ok(LeaseRenewal::default())
    }

    /// The leases lost and not yet reported (past their local deadline or refused a write),
    /// without asking the database: what a server that cannot reach it acts on.
    fn lost_leases(&self) -> Vec<String> {
        Vec::new()
    }

    /// Called once at shutdown, after [`ThreadStore::release_lease`] for every loaded thread:
    /// this server writes no more, and a lease it could not release (the database failing)
    /// is free at once for another server of this process.
    fn retire_leases(&self) {}

    /// The lease settings, for stores that keep leases; `None` for the in-memory store.
    fn lease_settings(&self) -> Option<&LeaseSettings> {
        None
    }

    /// The handoff requests other servers send this one as they happen (PostgreSQL's
    /// `LISTEN`/`NOTIFY`: thread ids whose lease another server was refused), for the server
    /// to hand each over at once if no turn runs on it; taken once. `None`: the store has no
    /// such push, and requests arrive with [`ThreadStore::renew_leases`] only.
    fn take_handoff_requests(&self) -> Option<tokio::sync::mpsc::Receiver<String>> {
        None
    }

    /// Waits at most `wait` for a sign that the lease of `thread_id` was given up (a
    /// notification), returning early on one: what a server waiting for a handoff sleeps on
    /// between two tries. A notification may be lost, so the caller tries again either way;
    /// stores without notifications just wait.
    async fn lease_released(&self, thread_id: &str, wait: std::time::Duration) {
        let _ = thread_id;
        tokio::time::sleep(wait).await;
    }

    /// Creates `fork` (see [`ThreadRecord::forked`]) holding the source's turns through
    /// `last_turn_id` (inclusive; all for `None`) and returns the copied turns. Attachments
    /// are not copied: they describe the source thread. An unknown turn fails with
    /// [`StoreError::TurnNotFound`]. To fork across stores, read the source from one and use
    /// [`history_through`] and [`ThreadStore::create_thread`] on the other.
    async fn fork_thread(
        &self,
        source_id: &str,
        last_turn_id: Option<&str>,
        fork: &ThreadRecord,
    ) -> Result<Vec<Turn>, StoreError> {
        let (_, history) = self
            .get_thread_with_turns(source_id)
            .await?
            .ok_or_else(|| StoreError::ThreadNotFound(source_id.to_owned()))?;
        let history = history_through(source_id, history, last_turn_id)?;
        self.create_thread(fork, &history).await?;
        Ok(history)
    }
}

/// Page size with 0 counted as 1, so that a page always makes progress.
fn effective_limit(limit: usize) -> usize {
    limit.max(1)
}

/// The `thread/list` cursor of `thread`: its position in creation order.
fn thread_cursor(thread: &ThreadRecord) -> String {
    format!("{}:{}", thread.created_at, thread.id)
}

/// The position a thread cursor names: `(created_at, id)`.
fn parse_thread_cursor(cursor: &str) -> Result<(i64, String), StoreError> {
    let invalid = || StoreError::InvalidCursor(cursor.to_owned());
    let (created_at, id) = cursor.split_once(':').ok_or_else(invalid)?;
    let created_at = created_at.parse::<i64>().map_err(|_| invalid())?;
    if id.is_empty() {
        return Err(invalid());
    }
    Ok((created_at, id.to_owned()))
}

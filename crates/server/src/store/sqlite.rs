//! [`SqliteThreadStore`]: the durable thread store, one SQLite database in `TANDEM_HOME`.
//!
//! Choices, and why:
//! - WAL journal. A commit is an append to the log, and SQLite's recovery ignores a log tail
//!   without a commit record, so a process killed at any point leaves each transaction whole
//!   or absent. Readers in another process (a second server on the same home) never block it.
//! - `synchronous = FULL`. Each commit fsyncs the log. Commits come once per turn, so this
//!   costs one fsync per turn, and in exchange a turn the server reported as completed also
//!   survives power loss and OS crashes; `NORMAL` would only survive the death of the process.
//! - One connection behind a mutex, used from `spawn_blocking`. SQLite calls block, so they
//!   stay off the async workers; the mutex serializes this process's transactions, and
//!   `BEGIN IMMEDIATE` with a busy timeout serializes them against other processes.
//! - Group commit (issue 13). A turn now writes as it happens (its start, each item, its
//!   end), several times what one commit per turn cost. Writes are queued; whoever holds the
//!   connection next runs everything queued in one transaction, each write in a savepoint of
//!   its own so that one failing write does not take the others down, and one fsync covers
//!   them all. A caller is answered only after the commit, so "stored" always means durable.
//! - Recovery on open: a turn left `inProgress` by a crash is closed as `interrupted`, with
//!   its started items closed ([`super::recovery`]).
//! - [`ThreadStore::checkpoint`] at shutdown copies the WAL into the database file and
//!   truncates it, so that after a clean exit `threads.sqlite` alone holds everything.
//! - The schema is versioned with `PRAGMA user_version` and created (or, in later versions,
//!   migrated) inside one immediate transaction, so two servers starting on a fresh home do
//!   not race. A file from a newer build is refused rather than misread.
//! - Thread settings that are only ever read whole (status, source, tools, config) and items
//!   are stored as the JSON of their protocol types, which round-trips them exactly; columns
//!   that queries filter or sort on are plain columns.

use std::any::Any;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params, params_from_iter};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tandem_protocol::{
    SortDirection, ThreadAttachment, ThreadAttachmentAddOutcome, ThreadAttachmentAddResponse,
    ThreadItem, Turn, TurnError, TurnItemsView,
};
use tokio::sync::oneshot;

use self::items::read_items;

use super::paging::{self, Anchor, ItemListQuery, StoredItem};
use super::{
    Compaction, INTERRUPTED_BY_STOP, IdempotencyRecord, KEY_MAX_AGE_SECS, KEYS_PER_SCOPE, Page,
    StoreError, ThreadListQuery, ThreadRecord, ThreadStore, ThreadUpdate, TurnListQuery,
    close_unfinished_item, effective_limit, parse_thread_cursor, source_kind, thread_cursor,
};

mod items;

/// The schema version this build writes and reads.
const SCHEMA_VERSION: i64 = 4;

/// How long a transaction waits for another process's write lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Schema version 1.
///
/// Turns are ordered by `seq` (commit order), not by id, so that a fork's copied turns and a
/// re-committed turn keep their places. Foreign keys cascade, so deleting a thread removes
/// everything under it in one statement.
pub(super) const SCHEMA_V1: &str = "
CREATE TABLE threads (
    id              TEXT PRIMARY KEY NOT NULL,
    name            TEXT,
    preview         TEXT NOT NULL,
    ephemeral       INTEGER NOT NULL,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    status          TEXT NOT NULL,      -- JSON of ThreadStatus
    cwd             TEXT NOT NULL,
    source          TEXT NOT NULL,      -- JSON of SessionSource
    source_kind     TEXT NOT NULL,      -- what thread/list sourceKinds matches
    forked_from_id  TEXT,
    model           TEXT,
    model_provider  TEXT NOT NULL,
    cli_version     TEXT NOT NULL,
    approval_policy TEXT NOT NULL,      -- wire spelling
    dynamic_tools   TEXT NOT NULL,      -- JSON array of DynamicToolSpec
    config          TEXT NOT NULL       -- JSON object
) STRICT;
CREATE INDEX threads_by_creation ON threads (created_at, id);

CREATE TABLE turns (
    thread_id    TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    id           TEXT NOT NULL,
    seq          INTEGER NOT NULL,
    status       TEXT NOT NULL,         -- wire spelling
    items_view   TEXT NOT NULL,         -- wire spelling
    error        TEXT,                  -- JSON of TurnError
    started_at   INTEGER,
    completed_at INTEGER,
    duration_ms  INTEGER,
    PRIMARY KEY (thread_id, id),
    UNIQUE (thread_id, seq)
) STRICT;

CREATE TABLE items (
    thread_id TEXT NOT NULL,
    turn_id   TEXT NOT NULL,
    idx       INTEGER NOT NULL,
    item      TEXT NOT NULL,            -- JSON of ThreadItem
    PRIMARY KEY (thread_id, turn_id, idx),
    FOREIGN KEY (thread_id, turn_id) REFERENCES turns (thread_id, id) ON DELETE CASCADE
) STRICT;

CREATE TABLE attachments (
    thread_id       TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    id              TEXT NOT NULL,
    attachment_type TEXT NOT NULL,
    identity_key    TEXT NOT NULL,
    payload         TEXT NOT NULL,      -- JSON
    created_at      INTEGER NOT NULL,
    PRIMARY KEY (thread_id, attachment_type, identity_key),
    UNIQUE (thread_id, id)
) STRICT;
";

/// Schema version 2 (t-threadops): archiving and compaction. Applied on top of version 1, to
/// a new database and to a version-1 file alike.
///
/// `archived_at` is NULL for a thread that is not archived. A compaction summary belongs to
/// its turn, so reverting past the compaction turn drops the summary with it.
const SCHEMA_V2: &str = "
ALTER TABLE threads ADD COLUMN archived_at INTEGER;

CREATE TABLE compactions (
    thread_id TEXT NOT NULL,
    turn_id   TEXT NOT NULL,
    summary   TEXT NOT NULL,
    PRIMARY KEY (thread_id, turn_id),
    FOREIGN KEY (thread_id, turn_id) REFERENCES turns (thread_id, id) ON DELETE CASCADE
) STRICT;
";

/// Schema version 3: idempotency keys (`super::idempotency`). Applied on top of
/// version 2.
///
/// Not tied to `threads` by a foreign key: `thread/start` keys have no thread, and a key must
/// outlive a failed thread creation long enough to be released. Deleting a thread deletes
/// its scope's keys explicitly; `created_at` is indexed for the age pruning every claim runs.
const SCHEMA_V3: &str = "
CREATE TABLE idempotency_keys (
    scope       TEXT NOT NULL,
    key         TEXT NOT NULL,
    method      TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    result      TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (scope, key)
) STRICT;

CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);
CREATE INDEX idempotency_keys_by_scope_age ON idempotency_keys (scope, created_at);
";

/// The turns a crash left running, which [`recover`] looks for on every open: without this
/// index that look-up read every turn of every thread before the first request was served.
/// Partial, so it holds only the turns running now. Created on open whatever the version
/// (`IF NOT EXISTS`): a file without it is still version 2, and a build that does not know
/// it keeps it up to date like any other index.
const UNFINISHED_TURNS_INDEX: &str = "
CREATE INDEX IF NOT EXISTS turns_unfinished ON turns (thread_id, id) WHERE status = 'inProgress';
";

/// What [`recover`] looks for, through [`UNFINISHED_TURNS_INDEX`].
pub(super) const UNFINISHED_TURNS: &str =
    "SELECT thread_id, id FROM turns WHERE status = 'inProgress'";

/// The thread's latest compaction, read on every resume. CROSS JOIN keeps the thread's few
/// compactions as the outer loop: with a plain JOIN the planner walked every turn of the
/// thread newest first (to skip the sort) and probed compactions for each, which made every
/// resume O(turns).
pub(super) const LATEST_COMPACTION: &str = "SELECT c.turn_id, c.summary FROM compactions c \
     CROSS JOIN turns t ON t.thread_id = c.thread_id AND t.id = c.turn_id \
     WHERE c.thread_id = ?1 ORDER BY t.seq DESC LIMIT 1";

const THREAD_COLUMNS: &str = "id, name, preview, ephemeral, created_at, updated_at, status, \
     cwd, source, forked_from_id, model, model_provider, cli_version, approval_policy, \
     dynamic_tools, config, archived_at";

const TURN_COLUMNS: &str = "id, status, items_view, error, started_at, completed_at, duration_ms";

const ATTACHMENT_COLUMNS: &str = "id, attachment_type, identity_key, payload, created_at";

/// What a queued write returns: its operation's value, boxed so that writes of different
/// types share one queue.
type WriteResult = Result<Box<dyn Any + Send>, StoreError>;

/// A write waiting for the next group commit: the operation, run inside the batch's
/// transaction, and where its result goes once the batch has committed (or failed).
struct PendingWrite {
    apply: Box<dyn FnOnce(&Connection) -> WriteResult + Send>,
    reply: oneshot::Sender<WriteResult>,
}

/// A [`ThreadStore`] in an SQLite database under `TANDEM_HOME`.
#[derive(Clone)]
pub struct SqliteThreadStore {
    connection: Arc<Mutex<Connection>>,
    /// Writes queued for the next group commit, in arrival order.
    writes: Arc<Mutex<Vec<PendingWrite>>>,
    path: PathBuf,
    /// The writer leases this process holds, when the home may be shared by several
    /// processes (see `sqlite_lease`); `None` writes without checking any.
    pub(super) leases: Option<Arc<super::lease::LeaseBook>>,
}

impl std::fmt::Debug for SqliteThreadStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteThreadStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking operation drops its transaction, which rolls back, so the connection
    // behind a poisoned lock is still in a clean state; the queue is only pushed and taken.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl SqliteThreadStore {
    /// The database's file name inside `TANDEM_HOME`.
    pub const FILE_NAME: &'static str = "threads.sqlite";

    /// Opens (creating if needed) the store in `tandem_home`, which is created if missing.
    pub async fn open(tandem_home: impl Into<PathBuf>) -> Result<Self, StoreError> {
        let home = tandem_home.into();
        tokio::task::spawn_blocking(move || Self::open_blocking(&home)).await?
    }

    /// [`SqliteThreadStore::open`] for callers outside an async runtime; blocks.
    pub fn open_blocking(tandem_home: &Path) -> Result<Self, StoreError> {
        std::fs::create_dir_all(tandem_home).map_err(|source| StoreError::CreateDir {
            path: tandem_home.to_owned(),
            source,
        })?;
        let path = tandem_home.join(Self::FILE_NAME);
        let open_error = |source| StoreError::Open {
            path: path.clone(),
            source,
        };
        let mut connection = Connection::open(&path).map_err(open_error)?;
        configure(&connection).map_err(open_error)?;
        migrate(&mut connection, &path)?;
        let owners = tandem_home.join(super::liveness::OWNERS_DIR);
        match recover(&mut connection, &owners) {
            Ok(0) => {}
            Ok(recovered) => tracing::warn!(
                path = %path.display(),
                turns = recovered,
                "closed turns left running by a crash as interrupted"
            ),
            // The store still reads; every write will fail with the same cause, and is
            // reported where it happens.
            Err(error) => tracing::error!(
                error = %error.at("write to", &path),
                "cannot close turns left running by a crash"
            ),
        }
        tracing::debug!(path = %path.display(), "thread store opened");
        Ok(Self {
            connection: Arc::new(Mutex::new(connection)),
            writes: Arc::new(Mutex::new(Vec::new())),
            path,
            leases: None,
        })
    }

    /// The database file.
    pub fn database_path(&self) -> &Path {
        &self.path
    }

    /// Runs the read `operation` on the connection on the blocking pool.
    pub(super) async fn run<T, F>(&self, operation: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let connection = Arc::clone(&self.connection);
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || {
            let mut connection = lock(&connection);
            operation(&mut connection).map_err(|error| error.at("read", &path))
        })
        .await?
    }

    /// Queues the write `operation` for the next group commit and returns its result once
    /// that commit is durable. The write completes (or fails) even if the caller stops
    /// waiting, so a dropped request never leaves a write half done.
    pub(super) async fn write<T, F>(&self, operation: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        lock(&self.writes).push(PendingWrite {
            apply: Box::new(move |connection| {
                operation(connection).map(|value| Box::new(value) as Box<dyn Any + Send>)
            }),
            reply,
        });
        let store = self.clone();
        // The flush that runs this write may be this task or one queued before it; either
        // way, the answer arrives once the write's batch has committed.
        let flush = tokio::task::spawn_blocking(move || store.flush());
        match answer.await {
            Ok(result) => Ok(*result?
                .downcast::<T>()
                .expect("a write's answer has the type its operation returned")),
            Err(_) => {
                // The flush panicked before answering; its join error says why.
                flush.await?;
                Err(StoreError::Unavailable(format!(
                    "the write to the thread database {} was lost; retry",
                    self.path.display()
                )))
            }
        }
    }

    /// Runs every queued write, in batches: one transaction (one fsync) per batch.
    fn flush(&self) {
        let connection = lock(&self.connection);
        loop {
            let batch = std::mem::take(&mut *lock(&self.writes));
            if batch.is_empty() {
                return;
            }
            commit_batch(&connection, &self.path, batch);
        }
    }
}

/// Runs `batch` in one immediate transaction, each write in a savepoint, then commits and
/// answers every write: its own result if the commit succeeded, the commit's error if not.
fn commit_batch(connection: &Connection, path: &Path, batch: Vec<PendingWrite>) {
    let failure = |error: rusqlite::Error| StoreError::from(error).at("write to", path);
    let mut applied: Vec<(oneshot::Sender<_>, Box<dyn Any + Send>)> = Vec::new();
    let mut batch = batch.into_iter();
    if let Err(error) = connection.execute_batch("BEGIN IMMEDIATE") {
        let error = failure(error);
        for write in batch {
            let _ = write.reply.send(Err(error.duplicate()));
        }
        return;
    }
    while let Some(write) = batch.next() {
        let result = connection
            .execute_batch("SAVEPOINT one_write")
            .map_err(failure)
            .and_then(|()| (write.apply)(connection))
            .and_then(|value| {
                connection
                    .execute_batch("RELEASE one_write")
                    .map_err(failure)?;
                Ok(value)
            });
        match result {
            Ok(value) => applied.push((write.reply, value)),
            Err(error) => {
                let error = error.at("write to", path);
                if connection.is_autocommit() {
                    // SQLite rolled the whole transaction back (it does on a full disk or an
                    // I/O error): the writes before this one in the batch are gone too.
                    for (reply, _) in applied.drain(..) {
                        let _ = reply.send(Err(error.duplicate()));
                    }
                    let _ = write.reply.send(Err(error));
                    if let Err(error) = connection.execute_batch("BEGIN IMMEDIATE") {
                        let error = failure(error);
                        for write in batch {
                            let _ = write.reply.send(Err(error.duplicate()));
                        }
                        return;
                    }
                } else {
                    if let Err(rollback) =
                        connection.execute_batch("ROLLBACK TO one_write; RELEASE one_write")
                    {
                        tracing::warn!(error = %rollback, "cannot roll back a failed write");
                    }
                    let _ = write.reply.send(Err(error));
                }
            }
        }
    }
    match connection.execute_batch("COMMIT") {
        Ok(()) => {
            for (reply, value) in applied {
                let _ = reply.send(Ok(value));
            }
        }
        Err(error) => {
            let error = failure(error);
            if !connection.is_autocommit()
                && let Err(rollback) = connection.execute_batch("ROLLBACK")
            {
                tracing::warn!(error = %rollback, "cannot roll back a failed commit");
            }
            for (reply, _) in applied {
                let _ = reply.send(Err(error.duplicate()));
            }
        }
    }
}

/// Closes every turn a crash left `inProgress` (see [`super::recovery`]); returns how many.
/// Reads first, so that a healthy (or read-only) store is not written to at all.
/// Turns of a thread another process holds a live lease on are left alone: that process may be
/// running them now (a home shared by several servers). `owners` holds the owners' lock files.
fn recover(connection: &mut Connection, owners: &Path) -> Result<usize, StoreError> {
    let running: Vec<(String, String)> = connection
        .prepare(UNFINISHED_TURNS)?
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect::<Result<_, _>>()?;
    // A turn running under another live process's lease is that process's, not a crash's.
    let mut live_owner = connection.prepare(&format!(
        "SELECT owner FROM thread_leases WHERE thread_id = ?1 AND expires_at > {}",
        super::sqlite_lease::NOW_MS
    ))?;
    let mut candidates: Vec<(String, String, Option<String>)> = Vec::with_capacity(running.len());
    for (thread_id, turn_id) in running {
        let owner: Option<String> = live_owner
            .query_row([&thread_id], |row| row.get(0))
            .optional()?;
        candidates.push((thread_id, turn_id, owner));
    }
    drop(live_owner);
    let unfinished: Vec<(String, String)> = candidates
        .into_iter()
        .filter(|(_, _, owner)| {
            owner
                .as_deref()
                .is_none_or(|owner| super::liveness::owner_is_gone(Some(owners), owner))
        })
        .map(|(thread_id, turn_id, _)| (thread_id, turn_id))
        .collect();
    if unfinished.is_empty() {
        return Ok(0);
    }
    let reason = encode(
        &TurnError {
            message: INTERRUPTED_BY_STOP.to_owned(),
            additional_details: None,
        },
        "turn error",
    )?;
    let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    for (thread_id, turn_id) in &unfinished {
        transaction.execute(
            "UPDATE turns SET status = 'interrupted', error = ?3 \
             WHERE thread_id = ?1 AND id = ?2",
            params![thread_id, turn_id, reason],
        )?;
        let items: Vec<(i64, String)> = transaction
            .prepare("SELECT idx, item FROM items WHERE thread_id = ?1 AND turn_id = ?2")?
            .query_map(params![thread_id, turn_id], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })?
            .collect::<Result<_, _>>()?;
        for (index, item) in items {
            let mut item: ThreadItem = decode(&item, || {
                format!("item {index} of turn {turn_id} in thread {thread_id}")
            })?;
            if close_unfinished_item(&mut item) {
                transaction.execute(
                    "UPDATE items SET item = ?4 WHERE thread_id = ?1 AND turn_id = ?2 AND idx = ?3",
                    params![thread_id, turn_id, index, encode(&item, "item")?],
                )?;
            }
        }
    }
    transaction.commit()?;
    Ok(unfinished.len())
}

fn configure(connection: &Connection) -> rusqlite::Result<()> {
    connection.busy_timeout(BUSY_TIMEOUT)?;
    let mode: String =
        connection.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        // Some filesystems (network mounts) cannot hold a WAL; the rollback journal is still
        // atomic, only slower and blocking readers during writes.
        tracing::warn!(%mode, "thread database cannot use WAL; continuing with its journal mode");
    }
    connection.pragma_update(None, "synchronous", "FULL")?;
    connection.pragma_update(None, "foreign_keys", true)?;
    Ok(())
}

fn migrate(connection: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let open_error = |source| StoreError::Open {
        path: path.to_owned(),
        source,
    };
    let transaction = connection
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(open_error)?;
    let found: i64 = transaction
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(open_error)?;
    match found {
        0 => {
            transaction.execute_batch(SCHEMA_V1).map_err(open_error)?;
            transaction.execute_batch(SCHEMA_V2).map_err(open_error)?;
            transaction.execute_batch(SCHEMA_V3).map_err(open_error)?;
            transaction
                .execute_batch(super::sqlite_lease::SCHEMA_V4)
                .map_err(open_error)?;
            transaction
                .pragma_update(None, "user_version", SCHEMA_VERSION)
                .map_err(open_error)?;
            tracing::info!(path = %path.display(), version = SCHEMA_VERSION, "created thread database");
        }
        1..=3 => {
            if found == 1 {
                transaction.execute_batch(SCHEMA_V2).map_err(open_error)?;
            }
            if found < 3 {
                transaction.execute_batch(SCHEMA_V3).map_err(open_error)?;
            }
            transaction
                .execute_batch(super::sqlite_lease::SCHEMA_V4)
                .map_err(open_error)?;
            transaction
                .pragma_update(None, "user_version", SCHEMA_VERSION)
                .map_err(open_error)?;
            tracing::info!(path = %path.display(), from = found, to = SCHEMA_VERSION, "migrated thread database");
        }
        SCHEMA_VERSION => {}
        found => {
            return Err(StoreError::UnsupportedSchema {
                path: path.to_owned(),
                found,
                supported: SCHEMA_VERSION,
            });
        }
    }
    transaction
        .execute_batch(UNFINISHED_TURNS_INDEX)
        .map_err(open_error)?;
    transaction.commit().map_err(open_error)
}

// ---------------------------------------------------------------------------------------------
// Encoding.
// ---------------------------------------------------------------------------------------------

pub(super) fn encode<T: Serialize>(value: &T, what: &'static str) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|source| StoreError::Encode { what, source })
}

/// [`encode`] into a buffer of exactly the encoded size: an item can be as large as a turn's
/// input, and a buffer grown by doubling would briefly hold up to twice that, plus the copy
/// made at each growth.
pub(super) fn encode_exact<T: Serialize>(
    value: &T,
    what: &'static str,
) -> Result<String, StoreError> {
    /// Counts the bytes written to it.
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let fail = |source| StoreError::Encode { what, source };
    let mut counter = Counter(0);
    serde_json::to_writer(&mut counter, value).map_err(fail)?;
    let mut buffer = Vec::with_capacity(counter.0);
    serde_json::to_writer(&mut buffer, value).map_err(fail)?;
    // serde_json writes only valid UTF-8.
    String::from_utf8(buffer).map_err(|error| StoreError::Unavailable(error.to_string()))
}

pub(super) fn decode<T: DeserializeOwned>(
    text: &str,
    what: impl FnOnce() -> String,
) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|source| StoreError::Corrupt {
        what: what(),
        source,
    })
}

/// A unit enum's wire spelling, stored bare so that the column reads naturally in SQL.
pub(super) fn encode_word<T: Serialize>(
    value: &T,
    what: &'static str,
) -> Result<String, StoreError> {
    match serde_json::to_value(value).map_err(|source| StoreError::Encode { what, source })? {
        Value::String(word) => Ok(word),
        other => Ok(other.to_string()),
    }
}

pub(super) fn decode_word<T: DeserializeOwned>(
    word: String,
    what: impl FnOnce() -> String,
) -> Result<T, StoreError> {
    serde_json::from_value(Value::String(word)).map_err(|source| StoreError::Corrupt {
        what: what(),
        source,
    })
}

/// A `threads` row as stored, before its JSON members are decoded.
pub(super) struct RawThread {
    pub(super) id: String,
    pub(super) name: Option<String>,
    pub(super) preview: String,
    pub(super) ephemeral: bool,
    pub(super) created_at: i64,
    pub(super) updated_at: i64,
    pub(super) status: String,
    pub(super) cwd: String,
    pub(super) source: String,
    pub(super) forked_from_id: Option<String>,
    pub(super) model: Option<String>,
    pub(super) model_provider: String,
    pub(super) cli_version: String,
    pub(super) approval_policy: String,
    pub(super) dynamic_tools: String,
    pub(super) config: String,
    pub(super) archived_at: Option<i64>,
}

impl RawThread {
    /// Reads a row selected with [`THREAD_COLUMNS`].
    fn from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: row.get(0)?,
            name: row.get(1)?,
            preview: row.get(2)?,
            ephemeral: row.get(3)?,
            created_at: row.get(4)?,
            updated_at: row.get(5)?,
            status: row.get(6)?,
            cwd: row.get(7)?,
            source: row.get(8)?,
            forked_from_id: row.get(9)?,
            model: row.get(10)?,
            model_provider: row.get(11)?,
            cli_version: row.get(12)?,
            approval_policy: row.get(13)?,
            dynamic_tools: row.get(14)?,
            config: row.get(15)?,
            archived_at: row.get(16)?,
        })
    }

    pub(super) fn decode(self) -> Result<ThreadRecord, StoreError> {
        let id = self.id;
        let what = |member: &str| format!("{member} of thread {id}");
        Ok(ThreadRecord {
            status: decode(&self.status, || what("status"))?,
            source: decode(&self.source, || what("source"))?,
            approval_policy: decode_word(self.approval_policy, || what("approval policy"))?,
            dynamic_tools: decode(&self.dynamic_tools, || what("dynamic tools"))?,
            config: decode(&self.config, || what("config"))?,
            name: self.name,
            preview: self.preview.into(),
            ephemeral: self.ephemeral,
            created_at: self.created_at,
            updated_at: self.updated_at,
            cwd: self.cwd,
            forked_from_id: self.forked_from_id,
            model: self.model,
            model_provider: self.model_provider,
            cli_version: self.cli_version,
            archived_at: self.archived_at,
            id,
        })
    }
}

/// A `turns` row as stored, before its items are loaded.
struct RawTurn {
    id: String,
    status: String,
    items_view: String,
    error: Option<String>,
    started_at: Option<i64>,
    completed_at: Option<i64>,
    duration_ms: Option<i64>,
}

impl RawTurn {
    /// Reads a row selected with [`TURN_COLUMNS`].
    fn from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: row.get(0)?,
            status: row.get(1)?,
            items_view: row.get(2)?,
            error: row.get(3)?,
            started_at: row.get(4)?,
            completed_at: row.get(5)?,
            duration_ms: row.get(6)?,
        })
    }

    /// Decodes the row and loads as much of the turn's items as `view` shows (none for
    /// `notLoaded`, so a page of bare turns reads no item).
    fn load_view(
        self,
        connection: &Connection,
        thread_id: &str,
        view: TurnItemsView,
    ) -> Result<Turn, StoreError> {
        let id = self.id;
        let what = |member: &str| format!("{member} of turn {id} in thread {thread_id}");
        let items = if view == TurnItemsView::NotLoaded {
            Vec::new()
        } else {
            let mut statement = connection.prepare_cached(
                "SELECT idx, item FROM items WHERE thread_id = ?1 AND turn_id = ?2 ORDER BY idx",
            )?;
            statement
                .query_map(params![thread_id, id], |row| {
                    Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
                })?
                .map(|row| {
                    let (index, item) = row?;
                    decode(&item, || what(&format!("item {index}")))
                })
                .collect::<Result<Vec<_>, StoreError>>()?
        };
        let mut turn = Turn {
            items,
            status: decode_word(self.status, || what("status"))?,
            items_view: decode_word(self.items_view, || what("itemsView"))?,
            error: self
                .error
                .map(|error| decode(&error, || what("error")))
                .transpose()?,
            started_at: self.started_at,
            completed_at: self.completed_at,
            duration_ms: self.duration_ms,
            id,
        };
        paging::apply_items_view(&mut turn, view);
        Ok(turn)
    }
}

fn attachment_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<(ThreadAttachment, String)> {
    Ok((
        ThreadAttachment {
            id: row.get(0)?,
            attachment_type: row.get(1)?,
            identity_key: row.get(2)?,
            payload: Value::Null,
            created_at: row.get(4)?,
        },
        row.get(3)?,
    ))
}

/// Fills in the payload read beside an attachment by [`attachment_from_row`].
fn decode_attachment(
    (mut attachment, payload): (ThreadAttachment, String),
    thread_id: &str,
) -> Result<ThreadAttachment, StoreError> {
    attachment.payload = decode(&payload, || {
        format!(
            "payload of attachment {} in thread {thread_id}",
            attachment.id
        )
    })?;
    Ok(attachment)
}

// ---------------------------------------------------------------------------------------------
// Statements, each run inside the caller's transaction.
// ---------------------------------------------------------------------------------------------

fn read_thread(
    connection: &Connection,
    thread_id: &str,
) -> Result<Option<ThreadRecord>, StoreError> {
    connection
        .prepare_cached(&format!(
            "SELECT {THREAD_COLUMNS} FROM threads WHERE id = ?1"
        ))?
        .query_row([thread_id], RawThread::from_row)
        .optional()?
        .map(RawThread::decode)
        .transpose()
}

/// The position of the stored turn `turn_id` in its thread, if it is stored.
fn turn_seq(
    connection: &Connection,
    thread_id: &str,
    turn_id: &str,
) -> Result<Option<i64>, StoreError> {
    Ok(connection
        .prepare_cached("SELECT seq FROM turns WHERE thread_id = ?1 AND id = ?2")?
        .query_row(params![thread_id, turn_id], |row| row.get(0))
        .optional()?)
}

fn require_thread(connection: &Connection, thread_id: &str) -> Result<(), StoreError> {
    connection
        .prepare_cached("SELECT 1 FROM threads WHERE id = ?1")?
        .query_row([thread_id], |_| Ok(()))
        .optional()?
        .ok_or_else(|| StoreError::ThreadNotFound(thread_id.to_owned()))
}

/// Inserts the thread, or overwrites every member of an existing one in place (an
/// `INSERT OR REPLACE` would delete the row first and cascade to its turns).
fn upsert_thread(connection: &Connection, record: &ThreadRecord) -> Result<(), StoreError> {
    let sql = format!(
        "INSERT INTO threads ({THREAD_COLUMNS}, source_kind) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, \
         ?18) \
         ON CONFLICT (id) DO UPDATE SET name = excluded.name, preview = excluded.preview, \
         ephemeral = excluded.ephemeral, created_at = excluded.created_at, \
         updated_at = excluded.updated_at, status = excluded.status, cwd = excluded.cwd, \
         source = excluded.source, forked_from_id = excluded.forked_from_id, \
         model = excluded.model, model_provider = excluded.model_provider, \
         cli_version = excluded.cli_version, approval_policy = excluded.approval_policy, \
         dynamic_tools = excluded.dynamic_tools, config = excluded.config, \
         archived_at = excluded.archived_at, source_kind = excluded.source_kind"
    );
    connection.prepare_cached(&sql)?.execute(params![
        record.id,
        record.name,
        record.preview.as_str(),
        record.ephemeral,
        record.created_at,
        record.updated_at,
        encode(&record.status, "thread status")?,
        record.cwd,
        encode(&record.source, "thread source")?,
        record.forked_from_id,
        record.model,
        record.model_provider,
        record.cli_version,
        encode_word(&record.approval_policy, "approval policy")?,
        encode(&record.dynamic_tools, "dynamic tools")?,
        encode(&record.config, "thread config")?,
        record.archived_at,
        source_kind(&record.source),
    ])?;
    Ok(())
}

fn insert_turn(
    connection: &Connection,
    thread_id: &str,
    seq: i64,
    turn: &Turn,
) -> Result<(), StoreError> {
    connection
        .prepare_cached(&format!(
            "INSERT INTO turns (thread_id, seq, {TURN_COLUMNS}) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
        ))?
        .execute(params![
            thread_id,
            seq,
            turn.id,
            encode_word(&turn.status, "turn status")?,
            encode_word(&turn.items_view, "turn itemsView")?,
            turn.error
                .as_ref()
                .map(|error| encode(error, "turn error"))
                .transpose()?,
            turn.started_at,
            turn.completed_at,
            turn.duration_ms,
        ])?;
    let mut statement = connection.prepare_cached(
        "INSERT INTO items (thread_id, turn_id, idx, item) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for (index, item) in turn.items.iter().enumerate() {
        let index = i64::try_from(index).expect("a turn holds fewer than i64::MAX items");
        write_item(
            &mut statement,
            thread_id,
            &turn.id,
            index,
            encode_exact(item, "item")?,
        )?;
    }
    Ok(())
}

/// Runs `statement` (an insert of one `items` row: thread, turn, index, JSON) for `item`, its
/// JSON encoding. SQLite copies a bound text, so the encoding is dropped as soon as it is
/// bound, before the statement builds its row: a large item (a turn's whole input) is then
/// held twice while it is written, not three times.
fn write_item(
    statement: &mut rusqlite::Statement<'_>,
    thread_id: &str,
    turn_id: &str,
    index: i64,
    item: String,
) -> rusqlite::Result<usize> {
    statement.raw_bind_parameter(1, thread_id)?;
    statement.raw_bind_parameter(2, turn_id)?;
    statement.raw_bind_parameter(3, index)?;
    statement.raw_bind_parameter(4, item.as_str())?;
    drop(item);
    statement.raw_execute()
}

/// The thread's turns past `anchor` (a `seq`, inclusive or not) in `direction`, at most
/// `limit` (negative: all of them), with their items cut to `view`. The range is read
/// through the `(thread_id, seq)` index, so a page costs its own length.
fn read_turns(
    connection: &Connection,
    thread_id: &str,
    anchor: Option<Anchor<i64>>,
    direction: SortDirection,
    limit: i64,
    view: TurnItemsView,
) -> Result<Vec<Turn>, StoreError> {
    let order = sql_order(direction);
    let raw = match anchor {
        None => connection
            .prepare_cached(&format!(
                "SELECT {TURN_COLUMNS} FROM turns WHERE thread_id = ?1 \
                 ORDER BY seq {order} LIMIT ?2"
            ))?
            .query_map(params![thread_id, limit], RawTurn::from_row)?
            .collect::<Result<Vec<_>, _>>()?,
        Some(anchor) => {
            let comparison = sql_comparison(direction, anchor.inclusive);
            connection
                .prepare_cached(&format!(
                    "SELECT {TURN_COLUMNS} FROM turns WHERE thread_id = ?1 AND seq {comparison} ?2 \
                     ORDER BY seq {order} LIMIT ?3"
                ))?
                .query_map(
                    params![thread_id, anchor.position, limit],
                    RawTurn::from_row,
                )?
                .collect::<Result<Vec<_>, _>>()?
        }
    };
    raw.into_iter()
        .map(|turn| turn.load_view(connection, thread_id, view))
        .collect()
}

/// `ASC` or `DESC`.
pub(super) fn sql_order(direction: SortDirection) -> &'static str {
    match direction {
        SortDirection::Asc => "ASC",
        SortDirection::Desc => "DESC",
    }
}

/// The comparison that keeps the rows past an anchor in `direction`.
pub(super) fn sql_comparison(direction: SortDirection, inclusive: bool) -> &'static str {
    match (direction, inclusive) {
        (SortDirection::Asc, false) => ">",
        (SortDirection::Asc, true) => ">=",
        (SortDirection::Desc, false) => "<",
        (SortDirection::Desc, true) => "<=",
    }
}

fn find_attachment(
    connection: &Connection,
    thread_id: &str,
    attachment_type: &str,
    identity_key: &str,
) -> Result<Option<ThreadAttachment>, StoreError> {
    connection
        .prepare_cached(&format!(
            "SELECT {ATTACHMENT_COLUMNS} FROM attachments \
             WHERE thread_id = ?1 AND attachment_type = ?2 AND identity_key = ?3"
        ))?
        .query_row(
            params![thread_id, attachment_type, identity_key],
            attachment_from_row,
        )
        .optional()?
        .map(|row| decode_attachment(row, thread_id))
        .transpose()
}

/// A page size as SQLite's `LIMIT`, one more than asked so that the caller can tell whether a
/// next page exists.
pub(super) fn limit_plus_one(limit: usize) -> i64 {
    i64::try_from(effective_limit(limit))
        .unwrap_or(i64::MAX)
        .saturating_add(1)
}

#[async_trait]
impl ThreadStore for SqliteThreadStore {
    async fn create_thread(
        &self,
        thread: &ThreadRecord,
        history: &[Turn],
    ) -> Result<(), StoreError> {
        let thread = thread.clone();
        let history = history.to_vec();
        self.write_thread(thread.id.clone(), move |connection| {
            if read_thread(connection, &thread.id)?.is_some() {
                return Err(StoreError::ThreadExists(thread.id));
            }
            upsert_thread(connection, &thread)?;
            for (seq, turn) in (1..).zip(&history) {
                insert_turn(connection, &thread.id, seq, turn)?;
            }
            Ok(())
        })
        .await
    }

    async fn get_thread(&self, thread_id: &str) -> Result<Option<ThreadRecord>, StoreError> {
        let thread_id = thread_id.to_owned();
        self.run(move |connection| read_thread(connection, &thread_id))
            .await
    }

    async fn get_thread_with_turns(
        &self,
        thread_id: &str,
    ) -> Result<Option<(ThreadRecord, Vec<Turn>)>, StoreError> {
        let thread_id = thread_id.to_owned();
        self.run(move |connection| {
            // One read transaction, so a commit from another process cannot land between the
            // record and its turns.
            let transaction = connection.transaction()?;
            let Some(record) = read_thread(&transaction, &thread_id)? else {
                return Ok(None);
            };
            let turns = read_turns(
                &transaction,
                &thread_id,
                None,
                SortDirection::Asc,
                -1,
                TurnItemsView::Full,
            )?;
            Ok(Some((record, turns)))
        })
        .await
    }

    async fn update_thread(
        &self,
        thread_id: &str,
        update: &ThreadUpdate,
    ) -> Result<ThreadRecord, StoreError> {
        let thread_id = thread_id.to_owned();
        let update = update.clone();
        self.write_thread(thread_id.clone(), move |connection| {
            let mut record = read_thread(connection, &thread_id)?
                .ok_or_else(|| StoreError::ThreadNotFound(thread_id.clone()))?;
            update.apply(&mut record);
            upsert_thread(connection, &record)?;
            Ok(record)
        })
        .await
    }

    async fn list_threads(
        &self,
        query: &ThreadListQuery,
    ) -> Result<Page<ThreadRecord>, StoreError> {
        let after = query
            .cursor
            .as_deref()
            .map(parse_thread_cursor)
            .transpose()?;
        let (comparison, order) = match query.direction {
            SortDirection::Asc => (">", "ASC"),
            SortDirection::Desc => ("<", "DESC"),
        };
        let mut sql = format!("SELECT {THREAD_COLUMNS} FROM threads WHERE 1 = 1");
        let mut values: Vec<rusqlite::types::Value> = Vec::new();
        if let Some((created_at, id)) = after {
            // A cursor is a position, not a row: the thread it named may be gone since.
            sql.push_str(&format!(" AND (created_at, id) {comparison} (?, ?)"));
            values.extend([created_at.into(), id.into()]);
        }
        for (column, accepted) in [("source_kind", &query.source_kinds), ("cwd", &query.cwds)] {
            if !accepted.is_empty() {
                let placeholders = vec!["?"; accepted.len()].join(", ");
                sql.push_str(&format!(" AND {column} IN ({placeholders})"));
                values.extend(accepted.iter().cloned().map(Into::into));
            }
        }
        sql.push_str(if query.archived {
            " AND archived_at IS NOT NULL"
        } else {
            " AND archived_at IS NULL"
        });
        if let Some(term) = query.search_term() {
            // instr is a case-sensitive substring test, like str::contains; a NULL name never
            // matches.
            sql.push_str(" AND instr(name, ?) > 0");
            values.push(term.to_owned().into());
        }
        sql.push_str(&format!(" ORDER BY created_at {order}, id {order} LIMIT ?"));
        values.push(limit_plus_one(query.limit).into());

        let limit = query.limit;
        let records = self
            .run(move |connection| {
                let raw = connection
                    .prepare(&sql)?
                    .query_map(params_from_iter(values), RawThread::from_row)?
                    .collect::<Result<Vec<_>, _>>()?;
                raw.into_iter().map(RawThread::decode).collect()
            })
            .await?;
        Ok(Page::from_candidates(records, limit, thread_cursor))
    }

    async fn delete_thread(&self, thread_id: &str) -> Result<bool, StoreError> {
        let thread_id = thread_id.to_owned();
        self.write_thread(thread_id.clone(), move |connection| {
            // Turns, items and attachments go with it through ON DELETE CASCADE, in the same
            // transaction.
            let deleted = connection.execute("DELETE FROM threads WHERE id = ?1", [&thread_id])?;
            connection.execute(
                "DELETE FROM idempotency_keys WHERE scope = ?1",
                [&thread_id],
            )?;
            Ok(deleted > 0)
        })
        .await
    }

    async fn commit_turn(
        &self,
        thread_id: &str,
        turn: &Turn,
        update: &ThreadUpdate,
    ) -> Result<ThreadRecord, StoreError> {
        let thread_id = thread_id.to_owned();
        let turn = turn.clone();
        let update = update.clone();
        self.write_thread(thread_id.clone(), move |connection| {
            let mut record = read_thread(connection, &thread_id)?
                .ok_or_else(|| StoreError::ThreadNotFound(thread_id.clone()))?;
            let seq = match turn_seq(connection, &thread_id, &turn.id)? {
                Some(seq) => {
                    // Replacing deletes the old items through the cascade; the turn keeps its
                    // place.
                    connection.execute(
                        "DELETE FROM turns WHERE thread_id = ?1 AND id = ?2",
                        params![thread_id, turn.id],
                    )?;
                    seq
                }
                None => connection.query_row(
                    "SELECT COALESCE(MAX(seq), 0) + 1 FROM turns WHERE thread_id = ?1",
                    [&thread_id],
                    |row| row.get(0),
                )?,
            };
            insert_turn(connection, &thread_id, seq, &turn)?;
            update.apply(&mut record);
            upsert_thread(connection, &record)?;
            Ok(record)
        })
        .await
    }

    async fn put_item(
        &self,
        thread_id: &str,
        turn_id: &str,
        index: usize,
        item: &ThreadItem,
    ) -> Result<(), StoreError> {
        let thread_id = thread_id.to_owned();
        let turn_id = turn_id.to_owned();
        let index = i64::try_from(index).expect("a turn holds fewer than i64::MAX items");
        // Encoded here, on the caller's task, so the writer only copies bytes.
        let item = encode_exact(item, "item")?;
        self.write_thread(thread_id.clone(), move |connection| {
            if turn_seq(connection, &thread_id, &turn_id)?.is_none() {
                return Err(StoreError::TurnNotFound { thread_id, turn_id });
            }
            let count: i64 = connection
                .prepare_cached("SELECT COUNT(*) FROM items WHERE thread_id = ?1 AND turn_id = ?2")?
                .query_row(params![thread_id, turn_id], |row| row.get(0))?;
            if index > count {
                return Err(StoreError::Unavailable(format!(
                    "item {index} of turn {turn_id} in thread {thread_id} would leave a gap \
                     after item {count}; this is a bug in the caller"
                )));
            }
            let mut statement = connection.prepare_cached(
                "INSERT INTO items (thread_id, turn_id, idx, item) VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT (thread_id, turn_id, idx) DO UPDATE SET item = excluded.item",
            )?;
            write_item(&mut statement, &thread_id, &turn_id, index, item)?;
            Ok(())
        })
        .await
    }

    async fn finish_turn(
        &self,
        thread_id: &str,
        turn: &Turn,
        update: &ThreadUpdate,
    ) -> Result<ThreadRecord, StoreError> {
        let thread_id = thread_id.to_owned();
        let turn_id = turn.id.clone();
        let status = encode_word(&turn.status, "turn status")?;
        let items_view = encode_word(&turn.items_view, "turn itemsView")?;
        let error = turn
            .error
            .as_ref()
            .map(|error| encode(error, "turn error"))
            .transpose()?;
        let times = (turn.started_at, turn.completed_at, turn.duration_ms);
        let update = update.clone();
        self.write_thread(thread_id.clone(), move |connection| {
            let mut record = read_thread(connection, &thread_id)?
                .ok_or_else(|| StoreError::ThreadNotFound(thread_id.clone()))?;
            let changed = connection
                .prepare_cached(
                    "UPDATE turns SET status = ?3, items_view = ?4, error = ?5, \
                     started_at = ?6, completed_at = ?7, duration_ms = ?8 \
                     WHERE thread_id = ?1 AND id = ?2",
                )?
                .execute(params![
                    thread_id, turn_id, status, items_view, error, times.0, times.1, times.2
                ])?;
            if changed == 0 {
                return Err(StoreError::TurnNotFound { thread_id, turn_id });
            }
            update.apply(&mut record);
            upsert_thread(connection, &record)?;
            Ok(record)
        })
        .await
    }

    async fn checkpoint(&self) -> Result<(), StoreError> {
        let store = self.clone();
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || {
            // Writes queued before the checkpoint go into it.
            store.flush();
            let connection = lock(&store.connection);
            // (busy, log frames, checkpointed frames); busy means a reader in another process
            // kept part of the log, which stays valid and is checkpointed by a later writer.
            let (busy, log, done): (i64, i64, i64) = connection
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |row| {
                    Ok((row.get(0)?, row.get(1)?, row.get(2)?))
                })
                .map_err(|error| StoreError::from(error).at("write to", &path))?;
            if busy != 0 {
                tracing::warn!(
                    path = %path.display(),
                    log,
                    done,
                    "another process is reading the thread database; part of its log stays in the -wal file"
                );
            }
            Ok(())
        })
        .await?
    }

    async fn list_turns(
        &self,
        thread_id: &str,
        query: &TurnListQuery,
    ) -> Result<Page<Turn>, StoreError> {
        let thread_id = thread_id.to_owned();
        let query = query.clone();
        let limit = query.limit;
        let turns = self
            .run(move |connection| {
                let transaction = connection.transaction()?;
                require_thread(&transaction, &thread_id)?;
                let anchor = match &query.cursor {
                    None => None,
                    Some(cursor) => {
                        let anchor = paging::parse_turn_cursor(cursor)?;
                        let seq = turn_seq(&transaction, &thread_id, &anchor.position)?
                            .ok_or_else(|| StoreError::InvalidCursor(cursor.clone()))?;
                        Some(Anchor {
                            position: seq,
                            inclusive: anchor.inclusive,
                        })
                    }
                };
                read_turns(
                    &transaction,
                    &thread_id,
                    anchor,
                    query.direction,
                    limit_plus_one(query.limit),
                    query.items_view,
                )
            })
            .await?;
        Ok(paging::turn_page(turns, limit))
    }

    async fn list_items(
        &self,
        thread_id: &str,
        query: &ItemListQuery,
    ) -> Result<Page<StoredItem>, StoreError> {
        let thread_id = thread_id.to_owned();
        let query = query.clone();
        let limit = query.limit;
        let items = self
            .run(move |connection| {
                let transaction = connection.transaction()?;
                read_items(&transaction, &thread_id, &query)
            })
            .await?;
        Ok(paging::item_page(items, limit))
    }

    async fn add_attachment(
        &self,
        thread_id: &str,
        attachment: &ThreadAttachment,
    ) -> Result<ThreadAttachmentAddResponse, StoreError> {
        let thread_id = thread_id.to_owned();
        let attachment = attachment.clone();
        self.write_thread(thread_id.clone(), move |connection| {
            require_thread(connection, &thread_id)?;
            let existing = find_attachment(
                connection,
                &thread_id,
                &attachment.attachment_type,
                &attachment.identity_key,
            )?;
            if let Some(existing) = existing {
                return Ok(ThreadAttachmentAddResponse {
                    outcome: ThreadAttachmentAddOutcome::Existing,
                    attachment: existing,
                });
            }
            connection
                .prepare_cached(&format!(
                    "INSERT INTO attachments (thread_id, {ATTACHMENT_COLUMNS}) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
                ))?
                .execute(params![
                    thread_id,
                    attachment.id,
                    attachment.attachment_type,
                    attachment.identity_key,
                    encode(&attachment.payload, "attachment payload")?,
                    attachment.created_at,
                ])?;
            Ok(ThreadAttachmentAddResponse {
                outcome: ThreadAttachmentAddOutcome::Created,
                attachment,
            })
        })
        .await
    }

    async fn remove_attachment(
        &self,
        thread_id: &str,
        attachment_type: &str,
        identity_key: &str,
    ) -> Result<Option<ThreadAttachment>, StoreError> {
        let thread_id = thread_id.to_owned();
        let attachment_type = attachment_type.to_owned();
        let identity_key = identity_key.to_owned();
        self.write_thread(thread_id.clone(), move |connection| {
            require_thread(connection, &thread_id)?;
            let removed = find_attachment(connection, &thread_id, &attachment_type, &identity_key)?;
            if removed.is_some() {
                connection.execute(
                    "DELETE FROM attachments \
                     WHERE thread_id = ?1 AND attachment_type = ?2 AND identity_key = ?3",
                    params![thread_id, attachment_type, identity_key],
                )?;
            }
            Ok(removed)
        })
        .await
    }

    async fn list_attachments(&self, thread_id: &str) -> Result<Vec<ThreadAttachment>, StoreError> {
        let thread_id = thread_id.to_owned();
        self.run(move |connection| {
            let transaction = connection.transaction()?;
            require_thread(&transaction, &thread_id)?;
            // rowid follows insertion, which is the order clients added them in.
            let rows = transaction
                .prepare_cached(&format!(
                    "SELECT {ATTACHMENT_COLUMNS} FROM attachments \
                     WHERE thread_id = ?1 ORDER BY rowid"
                ))?
                .query_map([&thread_id], attachment_from_row)?
                .collect::<Result<Vec<_>, _>>()?;
            rows.into_iter()
                .map(|row| decode_attachment(row, &thread_id))
                .collect()
        })
        .await
    }

    async fn truncate_turns(
        &self,
        thread_id: &str,
        turn_id: &str,
        update: &ThreadUpdate,
    ) -> Result<ThreadRecord, StoreError> {
        let thread_id = thread_id.to_owned();
        let turn_id = turn_id.to_owned();
        let update = update.clone();
        self.write_thread(thread_id.clone(), move |connection| {
            let mut record = read_thread(connection, &thread_id)?
                .ok_or_else(|| StoreError::ThreadNotFound(thread_id.clone()))?;
            let Some(seq) = turn_seq(connection, &thread_id, &turn_id)? else {
                return Err(StoreError::TurnNotFound { thread_id, turn_id });
            };
            // Items and compaction summaries go with their turns through the cascade.
            connection
                .prepare_cached("DELETE FROM turns WHERE thread_id = ?1 AND seq >= ?2")?
                .execute(params![thread_id, seq])?;
            update.apply(&mut record);
            upsert_thread(connection, &record)?;
            Ok(record)
        })
        .await
    }

    async fn put_compaction(
        &self,
        thread_id: &str,
        turn_id: &str,
        summary: &str,
    ) -> Result<(), StoreError> {
        let thread_id = thread_id.to_owned();
        let turn_id = turn_id.to_owned();
        let summary = summary.to_owned();
        self.write_thread(thread_id.clone(), move |connection| {
            require_thread(connection, &thread_id)?;
            if turn_seq(connection, &thread_id, &turn_id)?.is_none() {
                return Err(StoreError::TurnNotFound { thread_id, turn_id });
            }
            connection
                .prepare_cached(
                    "INSERT INTO compactions (thread_id, turn_id, summary) VALUES (?1, ?2, ?3) \
                     ON CONFLICT (thread_id, turn_id) DO UPDATE SET summary = excluded.summary",
                )?
                .execute(params![thread_id, turn_id, summary])?;
            Ok(())
        })
        .await
    }

    async fn latest_compaction(&self, thread_id: &str) -> Result<Option<Compaction>, StoreError> {
        let thread_id = thread_id.to_owned();
        self.run(move |connection| {
            require_thread(connection, &thread_id)?;
            Ok(connection
                .prepare_cached(LATEST_COMPACTION)?
                .query_row([&thread_id], |row| {
                    Ok(Compaction {
                        turn_id: row.get(0)?,
                        summary: row.get(1)?,
                    })
                })
                .optional()?)
        })
        .await
    }

    // i-idem: idempotency keys.

    async fn claim_idempotency_key(
        &self,
        record: &IdempotencyRecord,
    ) -> Result<Option<IdempotencyRecord>, StoreError> {
        let record = record.clone();
        self.write(move |connection| {
            connection
                .prepare_cached("DELETE FROM idempotency_keys WHERE created_at < ?1")?
                .execute([record.created_at - KEY_MAX_AGE_SECS])?;
            let stored = connection
                .prepare_cached(
                    "SELECT method, fingerprint, result, created_at FROM idempotency_keys \
                     WHERE scope = ?1 AND key = ?2",
                )?
                .query_row(params![record.scope, record.key], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, String>(2)?,
                        row.get::<_, i64>(3)?,
                    ))
                })
                .optional()?;
            if let Some((method, fingerprint, result, created_at)) = stored {
                let result = decode(&result, || {
                    format!(
                        "the result remembered for key {} in {}",
                        record.key, record.scope
                    )
                })?;
                return Ok(Some(IdempotencyRecord {
                    method,
                    fingerprint,
                    result,
                    created_at,
                    ..record
                }));
            }
            // Room for one more: the scope's oldest keys beyond the bound go.
            connection
                .prepare_cached(
                    "DELETE FROM idempotency_keys WHERE scope = ?1 AND key IN \
                     (SELECT key FROM idempotency_keys WHERE scope = ?1 \
                      ORDER BY created_at DESC, rowid DESC LIMIT -1 OFFSET ?2)",
                )?
                .execute(params![record.scope, KEYS_PER_SCOPE as i64 - 1])?;
            connection
                .prepare_cached(
                    "INSERT INTO idempotency_keys \
                     (scope, key, method, fingerprint, result, created_at) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )?
                .execute(params![
                    record.scope,
                    record.key,
                    record.method,
                    record.fingerprint,
                    encode(&record.result, "idempotency result")?,
                    record.created_at,
                ])?;
            Ok(None)
        })
        .await
    }

    async fn idempotency_key(
        &self,
        scope: &str,
        key: &str,
        now: i64,
    ) -> Result<Option<IdempotencyRecord>, StoreError> {
        let (scope, key) = (scope.to_owned(), key.to_owned());
        self.run(move |connection| {
            let stored = connection
                .prepare_cached(
                    "SELECT method, fingerprint, result, created_at FROM idempotency_keys \
                     WHERE scope = ?1 AND key = ?2 AND created_at >= ?3",
                )?
                .query_row(params![scope, key, now - KEY_MAX_AGE_SECS], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, String>(2)?,
                        row.get::<_, i64>(3)?,
                    ))
                })
                .optional()?;
            let Some((method, fingerprint, result, created_at)) = stored else {
                return Ok(None);
            };
            let result = decode(&result, || {
                format!("the result remembered for key {key} in {scope}")
            })?;
            Ok(Some(IdempotencyRecord {
                scope,
                key,
                method,
                fingerprint,
                result,
                created_at,
            }))
        })
        .await
    }

    async fn release_idempotency_key(&self, scope: &str, key: &str) -> Result<(), StoreError> {
        let scope = scope.to_owned();
        let key = key.to_owned();
        self.write(move |connection| {
            connection
                .prepare_cached("DELETE FROM idempotency_keys WHERE scope = ?1 AND key = ?2")?
                .execute(params![scope, key])?;
            Ok(())
        })
        .await
    }

    async fn acquire_lease(&self, thread_id: &str) -> Result<(), StoreError> {
        self.acquire(thread_id).await
    }

    async fn release_lease(&self, thread_id: &str) -> Result<(), StoreError> {
        self.release(thread_id).await
    }

    async fn renew_leases(&self) -> Result<super::LeaseRenewal, StoreError> {
        self.renew().await
    }

    fn lost_leases(&self) -> Vec<String> {
        self.unreported_losses()
    }

    fn retire_leases(&self) {
        if let Some(leases) = &self.leases {
            leases.retire();
        }
    }

    fn lease_settings(&self) -> Option<&super::LeaseSettings> {
        self.settings()
    }
}

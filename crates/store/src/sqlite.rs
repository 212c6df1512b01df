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
use serde_json::Value;
use tandem_protocol::{
    SortDirection, ThreadAttachment, ThreadAttachmentAddOutcome, ThreadAttachmentAddResponse,
    ThreadItem, Turn, TurnError, TurnItemsView,
};
use tokio::sync::oneshot;

use self::items::read_items;

use super::paging::{self, Anchor, ItemListQuery, ItemTimes, StoredItem};
use super::{
    Compaction, FileCheckpoint, INTERRUPTED_BY_STOP, IdempotencyRecord, KEY_MAX_AGE_SECS,
    KEYS_PER_SCOPE, Page, StoreError, ThreadListQuery, ThreadRecord, ThreadStore, ThreadUpdate,
    TurnEndUpdate, TurnListQuery, close_unfinished_item, parse_thread_cursor, source_kind,
    thread_cursor,
};

mod checkpoints;
mod items;
mod lease;
mod rows;
mod statements;
mod store_impl;

use crate::codec::{
    RawThread, decode, decode_word, encode, encode_exact, encode_word, limit_plus_one,
    sql_comparison, sql_order,
};
use rows::*;
use statements::*;

#[cfg(test)]
pub(super) use lease::UNFINISHED_TURNS_OF_THREAD;

/// The schema version this build writes and reads.
const SCHEMA_VERSION: i64 = 6;

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

/// Schema version 6: when each item started and completed (`thread/items/list`'s
/// `startedAtMs` and `completedAtMs`), unix milliseconds. Rows written before have NULL:
/// their times were not recorded.
const SCHEMA_V6: &str = "
ALTER TABLE items ADD COLUMN started_at_ms INTEGER;
ALTER TABLE items ADD COLUMN completed_at_ms INTEGER;
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
    /// processes (see `lease`); `None` writes without checking any.
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
        lease::NOW_MS
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
        interrupt_turn(&transaction, thread_id, turn_id, &reason)?;
    }
    transaction.commit()?;
    Ok(unfinished.len())
}

/// Marks one turn `interrupted` with `reason` (an encoded [`TurnError`]) and closes the items it
/// left started: the one rule for a turn whose writer stopped, used by recovery on open and by
/// the release of a dead owner's lease.
pub(super) fn interrupt_turn(
    connection: &Connection,
    thread_id: &str,
    turn_id: &str,
    reason: &str,
) -> Result<(), StoreError> {
    connection.execute(
        "UPDATE turns SET status = 'interrupted', error = ?3 WHERE thread_id = ?1 AND id = ?2",
        params![thread_id, turn_id, reason],
    )?;
    let items: Vec<(i64, String)> = connection
        .prepare_cached("SELECT idx, item FROM items WHERE thread_id = ?1 AND turn_id = ?2")?
        .query_map(params![thread_id, turn_id], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })?
        .collect::<Result<_, _>>()?;
    for (index, item) in items {
        let mut item: ThreadItem = decode(&item, || {
            format!("item {index} of turn {turn_id} in thread {thread_id}")
        })?;
        if close_unfinished_item(&mut item) {
            connection.execute(
                "UPDATE items SET item = ?4 WHERE thread_id = ?1 AND turn_id = ?2 AND idx = ?3",
                params![thread_id, turn_id, index, encode(&item, "item")?],
            )?;
        }
    }
    Ok(())
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
                .execute_batch(lease::SCHEMA_V4)
                .map_err(open_error)?;
            transaction
                .execute_batch(checkpoints::SCHEMA_V5)
                .map_err(open_error)?;
            transaction.execute_batch(SCHEMA_V6).map_err(open_error)?;
            transaction
                .pragma_update(None, "user_version", SCHEMA_VERSION)
                .map_err(open_error)?;
            tracing::info!(path = %path.display(), version = SCHEMA_VERSION, "created thread database");
        }
        1..=5 => {
            if found == 1 {
                transaction.execute_batch(SCHEMA_V2).map_err(open_error)?;
            }
            if found < 3 {
                transaction.execute_batch(SCHEMA_V3).map_err(open_error)?;
            }
            if found < 4 {
                transaction
                    .execute_batch(lease::SCHEMA_V4)
                    .map_err(open_error)?;
            }
            if found < 5 {
                transaction
                    .execute_batch(checkpoints::SCHEMA_V5)
                    .map_err(open_error)?;
            }
            transaction.execute_batch(SCHEMA_V6).map_err(open_error)?;
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

//! [`StoreError`]: every way a thread store operation can fail, with the underlying cause
//! attached so that logs show what the database or filesystem said.

use std::path::PathBuf;

/// Why a thread store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store holds no thread with this id. The text is docs/protocol.md's own.
    #[error("thread not found: {0}")]
    ThreadNotFound(String),
    /// The thread has no turn with this id.
    #[error("turn not found in thread {thread_id}: {turn_id}")]
    TurnNotFound {
        /// The thread.
        thread_id: String,
        /// The turn asked for.
        turn_id: String,
    },
    /// A thread with this id is already stored.
    #[error("thread already exists: {0}")]
    ThreadExists(String),
    /// A list cursor that this store did not hand out (or whose turn is gone). The text is
    /// docs/protocol.md's own.
    #[error("invalid cursor: {0}")]
    InvalidCursor(String),
    /// The directory holding the database could not be created.
    #[error("cannot create thread store directory {path}: {source}")]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The filesystem error.
        #[source]
        source: std::io::Error,
    },
    /// The database could not be opened, configured or migrated.
    #[error(
        "cannot open thread database {path}: {source}; check that the file is a Tandem \
         database and that TANDEM_HOME is writable"
    )]
    Open {
        /// The database file.
        path: PathBuf,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// The database records a schema version this build cannot read (normally: written by a
    /// newer Tandem).
    #[error(
        "thread database {path} has schema version {found}, but this build reads only \
         versions up to {supported}; upgrade Tandem or point TANDEM_HOME elsewhere"
    )]
    UnsupportedSchema {
        /// The database file.
        path: PathBuf,
        /// The version recorded in the file.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// A query or transaction failed outside a store operation that knows the file (the
    /// statements inside one); [`StoreError::Database`] is what callers see.
    #[error("thread database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The database could not be read or written: the disk is full, the file or its
    /// directory is read-only, another process holds the lock, or the disk failed. Nothing of
    /// the operation was kept.
    #[error("cannot {action} the thread database {path}: {detail}; {advice}")]
    Database {
        /// `read` or `write to`.
        action: &'static str,
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        detail: String,
        /// What the user can do about it.
        advice: &'static str,
    },
    /// A stored value does not decode: the file was edited by hand or by an incompatible
    /// build.
    #[error("thread database holds an unreadable {what}: {source}")]
    Corrupt {
        /// What was being read, e.g. `status of thread X`.
        what: String,
        /// The decoding error.
        #[source]
        source: serde_json::Error,
    },
    /// A value could not be encoded for storage.
    #[error("cannot encode {what} for the thread database: {source}")]
    Encode {
        /// What was being written.
        what: &'static str,
        /// The encoding error.
        #[source]
        source: serde_json::Error,
    },
    /// A test or embedder store refused a write (e.g. a fault-injecting test double); the
    /// message is the store's own and names where it failed.
    #[error("{0}")]
    Unavailable(String),
    /// Another server holds the thread's writer lease (docs/scaling.md). The text is the
    /// reference app-server's, which integrators match.
    #[error("thread {thread_id} already has an active writer")]
    LeaseHeld {
        /// The thread.
        thread_id: String,
        /// The server holding the lease (`host/pid/suffix`).
        owner: String,
        /// When its lease runs out unless renewed, unix milliseconds on the database's clock.
        expires_at_ms: i64,
    },
    /// This server lost the thread's writer lease (another server took it over, or it could
    /// not be renewed in time): the write was refused and nothing of it was kept.
    #[error(
        "this server lost the writer lease of thread {0} (another server took it over or it \
         could not be renewed in time); nothing more is written to it here: resume the thread \
         to continue"
    )]
    Fenced(String),
    /// The PostgreSQL store's `store.url` does not parse or names no usable database.
    #[error("invalid store.url: {0}; expected postgres://USER@HOST/DATABASE (see docs/scaling.md)")]
    PostgresUrl(String),
    /// A PostgreSQL statement failed.
    #[error(
        "PostgreSQL thread store error: {}; check that the database named by store.url is reachable and retry",
        describe_postgres(.0)
    )]
    Postgres(#[from] tokio_postgres::Error),
    /// No PostgreSQL connection could be had from the pool.
    #[error(
        "cannot connect to the PostgreSQL thread store: {0}; check store.url and that the database is up"
    )]
    PostgresPool(String),
    /// Every connection of this server's pool stayed busy for as long as a request may wait
    /// for one: the database answers too slowly for the load, or a statement is stuck.
    #[error(
        "all {connections} PostgreSQL connections of this server stayed busy for {waited_ms} ms; \
         the database is slow or a statement is stuck: look for this server's backends \
         (application_name tandem/<pid>) in pg_stat_activity, and retry"
    )]
    PostgresPoolBusy {
        /// The pool's size.
        connections: usize,
        /// How long the request waited for a connection.
        waited_ms: u64,
    },
    /// The connection was lost after a `COMMIT` was sent and before its answer came, and the
    /// database could not be asked what became of the transaction.
    #[error(
        "the connection to PostgreSQL was lost while transaction {xid} committed, and for \
         {waited_ms} ms the database could not be asked whether it did ({last}): the write may \
         or may not be stored; check that the database named by store.url is up, then read \
         the thread back before writing it again"
    )]
    PostgresCommitUnknown {
        /// The transaction's id (`txid_current()`).
        xid: i64,
        /// How long the database was asked.
        waited_ms: u64,
        /// The last answer or error met while asking.
        last: String,
    },
    /// The PostgreSQL database records a migration this build does not know (normally:
    /// migrated by a newer Tandem).
    #[error(
        "the PostgreSQL thread store has schema version {found}, but this build knows only \
         versions up to {supported}; upgrade Tandem"
    )]
    UnsupportedPostgresSchema {
        /// The newest version recorded in the database.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// The blocking task running a database operation panicked or was cancelled.
    #[error("thread database task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}

impl StoreError {
    /// `error`, raised while doing `action` (`read` or `write to`) on the database at `path`,
    /// as the error a caller sees: SQLite failures become [`StoreError::Database`] naming the
    /// file and what to do; every other error is returned as it is.
    pub(crate) fn at(self, action: &'static str, path: &std::path::Path) -> Self {
        match self {
            StoreError::Sqlite(error) => StoreError::Database {
                action,
                path: path.to_owned(),
                advice: advice(&error),
                detail: error.to_string(),
            },
            other => other,
        }
    }

    /// A copy of this error for a second caller, as far as it can be copied: every caller of
    /// a failed group commit gets the same message.
    pub(crate) fn duplicate(&self) -> Self {
        match self {
            StoreError::Database {
                action,
                path,
                detail,
                advice,
            } => StoreError::Database {
                action,
                path: path.clone(),
                detail: detail.clone(),
                advice,
            },
            StoreError::Fenced(thread_id) => StoreError::Fenced(thread_id.clone()),
            StoreError::LeaseHeld {
                thread_id,
                owner,
                expires_at_ms,
            } => StoreError::LeaseHeld {
                thread_id: thread_id.clone(),
                owner: owner.clone(),
                expires_at_ms: *expires_at_ms,
            },
            other => StoreError::Unavailable(other.to_string()),
        }
    }

    /// Whether the failure is the storage's (disk, permissions, lock, I/O) rather than a
    /// request's (unknown thread, bad cursor): the server reports these as internal errors
    /// and fails the turn that needed the write.
    pub fn is_storage_failure(&self) -> bool {
        !matches!(
            self,
            StoreError::ThreadNotFound(_)
                | StoreError::TurnNotFound { .. }
                | StoreError::ThreadExists(_)
                | StoreError::InvalidCursor(_)
                | StoreError::LeaseHeld { .. }
        )
    }

    /// Whether a PostgreSQL failure is a lost connection (the server terminated the backend,
    /// or the socket closed): worth one retry on a fresh connection before anything was
    /// written.
    pub fn is_lost_connection(&self) -> bool {
        match self {
            StoreError::Postgres(error) => {
                error.is_closed()
                    || error.code().is_some_and(|code| {
                        code.code().starts_with("57P") || code.code().starts_with("08")
                    })
                    || error.to_string().contains("connection closed")
            }
            StoreError::PostgresPool(_) => true,
            _ => false,
        }
    }
}

/// What the user can do about `error`.
fn advice(error: &rusqlite::Error) -> &'static str {
    use rusqlite::ErrorCode;
    match error.sqlite_error_code() {
        Some(ErrorCode::DiskFull) => "free space on the disk that holds it, then retry",
        Some(ErrorCode::ReadOnly) => {
            "make the file, its -wal and -shm files and their directory writable, then retry"
        }
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
            "another process holds its lock; stop that process or retry later"
        }
        Some(ErrorCode::PermissionDenied | ErrorCode::CannotOpen) => {
            "check the permissions of the file and its directory (TANDEM_HOME), then retry"
        }
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => {
            "the file is damaged; move it aside to start an empty store"
        }
        _ => "check the disk that holds it and that TANDEM_HOME is writable, then retry",
    }
}

/// A PostgreSQL error with what the database said: tokio-postgres displays an error the
/// server reported as just "db error", and the server's message and SQLSTATE (a full disk, a
/// deadlock, a terminated session) are what an operator needs to act on it.
fn describe_postgres(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!(
            "{}: {} (SQLSTATE {})",
            db.severity(),
            db.message(),
            db.code().code()
        ),
        None => error.to_string(),
    }
}

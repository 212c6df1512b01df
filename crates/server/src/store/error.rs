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
    /// A query or transaction failed.
    #[error("thread database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
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
    /// The blocking task running a database operation panicked or was cancelled.
    #[error("thread database task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}

//! The `fs/*` requests (docs/protocol.md section 4, "Files"): the host's file system for the
//! connected client, with the server's own rights (docs/security.md), in the reference
//! app-server's shapes and errors. `files` does what each request does to the file system,
//! `watch` owns the watches and their `fs/changed`; this module owns the per-connection state,
//! the order of a connection's requests, the `fs_api` switch and the errors.
//!
//! A connection's `fs/*` requests run one after another in arrival order on a task of its own
//! (the blocking calls on the blocking pool), so a client that sends `fs/writeFile` and then
//! `fs/readFile` without waiting reads what it wrote, and the processor task never waits on
//! the disk. Its watches end when it closes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tandem_host::{ConnectionId, OutgoingMessageSender, RequestContext};
use tandem_protocol::{
    AbsolutePathBuf, ClientRequest, EmptyResponse, FsWatchResponse, JSONRPCErrorError, error_codes,
};
use tokio::sync::mpsc;

mod files;
mod watch;

pub use watch::{DEBOUNCE, MAX_CHANGED_PATHS};

/// Why an `fs/*` request failed. The messages of the cases the reference app-server also has
/// are its own, word for word, so that clients matching on them keep working.
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    /// The file system refused: the OS's words (`No such file or directory (os error 2)`,
    /// `Permission denied (os error 13)`, ...), -32603 as in the reference.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// `fs/readFile` of something that is not a regular file.
    #[error("path `{path}` is not a file")]
    NotAFile {
        /// The path.
        path: AbsolutePathBuf,
    },
    /// `fs/readFile` of a file larger than the server's bound.
    #[error(
        "file `{path}` is {size} bytes, more than fs/readFile returns on this server \
         ({max_bytes} bytes, the config key fs_read_max_bytes): read it in parts with a \
         command, or raise fs_read_max_bytes"
    )]
    TooLarge {
        /// The path.
        path: AbsolutePathBuf,
        /// Its size (at least; it may have grown while read).
        size: u64,
        /// The bound.
        max_bytes: u64,
    },
    /// `fs/writeFile` with `dataBase64` that is not base64.
    #[error("fs/writeFile requires valid base64 dataBase64: {source}")]
    InvalidBase64 {
        /// The decoder's reason.
        source: base64::DecodeError,
    },
    /// `fs/copy` of a directory without `recursive: true`.
    #[error("fs/copy requires recursive: true when sourcePath is a directory")]
    CopyDirectoryNeedsRecursive,
    /// `fs/copy` of a directory into itself.
    #[error("fs/copy cannot copy a directory to itself or one of its descendants")]
    CopyIntoItself,
    /// `fs/copy` of a file onto itself (which would empty it).
    #[error("fs/copy cannot copy a file onto itself: choose another destinationPath")]
    CopyOntoItself,
    /// `fs/watch` with an id this connection already watches with.
    #[error("watchId already exists: {watch_id}")]
    WatchIdExists {
        /// The id.
        watch_id: String,
    },
    /// The OS watcher could not be created or refused the path (e.g. the inotify watch limit).
    #[error(
        "cannot watch: {source}; on Linux, raise fs.inotify.max_user_watches or unwatch other paths"
    )]
    Watch {
        /// The watcher's error.
        source: notify::Error,
    },
    /// The server runs with `fs_api = false`.
    #[error("{method} is disabled on this server (fs_api = false in its config.toml)")]
    Disabled {
        /// The method.
        method: String,
    },
    /// The blocking task running the request ended without an answer (it panicked).
    #[error("the fs request failed inside the server: {0}; this is a bug, please report it")]
    Internal(String),
}

impl From<FsError> for JSONRPCErrorError {
    fn from(error: FsError) -> Self {
        let code = match &error {
            FsError::Io(_) | FsError::Watch { .. } | FsError::Internal(_) => {
                error_codes::INTERNAL_ERROR
            }
            FsError::Disabled { .. } => error_codes::METHOD_NOT_FOUND,
            FsError::NotAFile { .. }
            | FsError::TooLarge { .. }
            | FsError::InvalidBase64 { .. }
            | FsError::CopyDirectoryNeedsRecursive
            | FsError::CopyIntoItself
            | FsError::CopyOntoItself
            | FsError::WatchIdExists { .. } => error_codes::INVALID_REQUEST,
        };
        JSONRPCErrorError::new(code, error.to_string())
    }
}

/// Whether `request` is one of the `fs/*` methods.
pub(crate) fn is_fs_request(request: &ClientRequest) -> bool {
    matches!(
        request,
        ClientRequest::FsReadFile { .. }
            | ClientRequest::FsWriteFile { .. }
            | ClientRequest::FsCreateDirectory { .. }
            | ClientRequest::FsGetMetadata { .. }
            | ClientRequest::FsReadDirectory { .. }
            | ClientRequest::FsRemove { .. }
            | ClientRequest::FsCopy { .. }
            | ClientRequest::FsWatch { .. }
            | ClientRequest::FsUnwatch { .. }
    )
}

/// What the `fs/*` requests may do, read from the effective configuration per request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FsSettings {
    /// `fs_api`: whether the methods are served at all.
    pub(crate) enabled: bool,
    /// `fs_read_max_bytes`: the most bytes `fs/readFile` returns.
    pub(crate) read_max_bytes: u64,
}

/// One connection's `fs/*` state: the queue its requests run from, and its watches.
struct FsConnection {
    queue: mpsc::UnboundedSender<(ClientRequest, RequestContext, FsSettings)>,
    watches: Arc<watch::Watches>,
}

/// The `fs/*` state of every connection that used the API.
pub(crate) struct FsService {
    outgoing: OutgoingMessageSender,
    connections: Mutex<HashMap<ConnectionId, FsConnection>>,
}

impl FsService {
    /// No connection yet.
    pub(crate) fn new(outgoing: OutgoingMessageSender) -> Self {
        Self {
            outgoing,
            connections: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<ConnectionId, FsConnection>> {
        self.connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues an `fs/*` request behind the connection's earlier ones; answers -32601 at once
    /// when the API is off.
    pub(crate) fn handle(
        &self,
        request: ClientRequest,
        context: RequestContext,
        settings: FsSettings,
    ) {
        if !settings.enabled {
            let outgoing = self.outgoing.clone();
            let error = FsError::Disabled {
                method: request.method().to_owned(),
            };
            tokio::spawn(async move { outgoing.send_error(context.id, error.into()).await });
            return;
        }
        let connection = context.id.connection_id;
        let mut connections = self.lock();
        let entry = connections.entry(connection).or_insert_with(|| {
            let watches = Arc::new(watch::Watches::new(connection, self.outgoing.clone()));
            let (queue, requests) = mpsc::unbounded_channel();
            tokio::spawn(run_requests(
                requests,
                self.outgoing.clone(),
                Arc::clone(&watches),
            ));
            FsConnection { queue, watches }
        });
        if let Err(mpsc::error::SendError((request, context, _))) =
            entry.queue.send((request, context, settings))
        {
            // The task ends only when the queue is dropped, which happens under this lock.
            tracing::error!(method = request.method(), id = ?context.id, "fs request queue closed");
        }
    }

    /// The connection closed: its watches end now, its queued requests are answered into the
    /// void and its task ends.
    pub(crate) fn connection_closed(&self, connection: ConnectionId) {
        if let Some(state) = self.lock().remove(&connection) {
            tracing::debug!(%connection, watches = state.watches.len(), "connection closed; ending its fs watches");
            state.watches.close();
        }
    }

    /// How many watches `connection` has running.
    pub(crate) fn watch_count(&self, connection: ConnectionId) -> usize {
        self.lock()
            .get(&connection)
            .map_or(0, |state| state.watches.len())
    }

    /// How many watches run over every connection.
    pub(crate) fn watch_total(&self) -> usize {
        self.lock().values().map(|state| state.watches.len()).sum()
    }

    /// The server shuts down: every watch ends.
    pub(crate) fn shutdown(&self) {
        for (_, state) in self.lock().drain() {
            state.watches.close();
        }
    }
}

/// A connection's `fs/*` requests, one at a time, in arrival order.
async fn run_requests(
    mut requests: mpsc::UnboundedReceiver<(ClientRequest, RequestContext, FsSettings)>,
    outgoing: OutgoingMessageSender,
    watches: Arc<watch::Watches>,
) {
    while let Some((request, context, settings)) = requests.recv().await {
        let method = request.method().to_owned();
        let id = context.id;
        let answer = answer(request, &watches, settings).await;
        if let Err(error) = &answer {
            tracing::debug!(%method, %error, "fs request failed");
        }
        match answer {
            Ok(value) => outgoing.send_response(id, value).await,
            Err(error) => outgoing.send_error(id, error.into()).await,
        }
    }
}

/// Runs `work` on the blocking pool.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, FsError> + Send + 'static,
) -> Result<T, FsError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| FsError::Internal(error.to_string()))?
}

/// The result of one `fs/*` request, as the JSON of its answer.
async fn answer(
    request: ClientRequest,
    watches: &watch::Watches,
    settings: FsSettings,
) -> Result<serde_json::Value, FsError> {
    fn json<T: serde::Serialize>(value: T) -> Result<serde_json::Value, FsError> {
        serde_json::to_value(value).map_err(|error| FsError::Internal(error.to_string()))
    }
    let empty = |()| json(EmptyResponse {});
    match request {
        ClientRequest::FsReadFile { params, .. } => {
            let max = settings.read_max_bytes;
            json(blocking(move || files::read_file(&params.path, max)).await?)
        }
        ClientRequest::FsWriteFile { params, .. } => {
            empty(blocking(move || files::write_file(&params)).await?)
        }
        ClientRequest::FsCreateDirectory { params, .. } => {
            empty(blocking(move || files::create_directory(&params)).await?)
        }
        ClientRequest::FsGetMetadata { params, .. } => {
            json(blocking(move || files::get_metadata(&params.path)).await?)
        }
        ClientRequest::FsReadDirectory { params, .. } => {
            json(blocking(move || files::read_directory(&params.path)).await?)
        }
        ClientRequest::FsRemove { params, .. } => {
            empty(blocking(move || files::remove(&params)).await?)
        }
        ClientRequest::FsCopy { params, .. } => {
            empty(blocking(move || files::copy(&params)).await?)
        }
        ClientRequest::FsWatch { params, .. } => {
            let path = watches.watch(params)?;
            json(FsWatchResponse { path })
        }
        ClientRequest::FsUnwatch { params, .. } => {
            watches.unwatch(&params.watch_id).await;
            json(EmptyResponse {})
        }
        other => Err(FsError::Internal(format!(
            "{} is not an fs request",
            other.method()
        ))),
    }
}

//! `fuzzyFileSearch` (docs/protocol.md section 4, "Files"): paths under the client's roots that
//! match a query, best first, in the reference app-server's shapes. `engine` walks and scores;
//! this module owns the requests: the `file_search_api` switch, the bounds, the blocking pool,
//! and the cancellation tokens.
//!
//! The walk runs on the blocking pool (its walker threads beside it), never on the runtime, so
//! a search over a large tree holds up no other request. A search with a `cancellationToken`
//! is cancelled by the connection's next search with the same token (a client typing sends one
//! per key): it answers at once with no files, as the reference does, and its walk stops
//! within a few hundred entries. A connection's searches are cancelled when it closes.

pub mod engine;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tandem_host::{ConnectionId, OutgoingMessageSender, RequestContext};
use tandem_protocol::{
    FuzzyFileSearchParams, FuzzyFileSearchResponse, JSONRPCErrorError, error_codes,
};
use tokio_util::sync::CancellationToken;

/// The most results one search returns (the reference's bound).
pub const MAX_RESULTS: usize = 50;

/// How long one search may walk; it then answers with the best it found so far.
pub const TIME_LIMIT: Duration = Duration::from_secs(5);

/// Why a `fuzzyFileSearch` failed.
#[derive(Debug, thiserror::Error)]
pub enum FuzzySearchError {
    /// The server runs with `file_search_api = false`.
    #[error(
        "fuzzyFileSearch is disabled on this server (file_search_api = false in its config.toml)"
    )]
    Disabled,
}

impl From<FuzzySearchError> for JSONRPCErrorError {
    fn from(error: FuzzySearchError) -> Self {
        let code = match error {
            FuzzySearchError::Disabled => error_codes::METHOD_NOT_FOUND,
        };
        JSONRPCErrorError::new(code, error.to_string())
    }
}

/// A search that may still be cancelled by its token: its number (to tell it from a later
/// search with the same token) and its cancellation.
type Pending = (u64, CancellationToken);

/// The running searches that carry a cancellation token, by connection and token.
pub(crate) struct FuzzySearchService {
    outgoing: OutgoingMessageSender,
    pending: Arc<Mutex<HashMap<(ConnectionId, String), Pending>>>,
    /// Every search of a connection, to cancel them all when it closes.
    running: Arc<Mutex<HashMap<ConnectionId, CancellationToken>>>,
    next: AtomicU64,
}

impl FuzzySearchService {
    /// No search yet.
    pub(crate) fn new(outgoing: OutgoingMessageSender) -> Self {
        Self {
            outgoing,
            pending: Arc::default(),
            running: Arc::default(),
            next: AtomicU64::new(0),
        }
    }

    /// Answers `params` from a task of its own (the walk on the blocking pool); -32601 at once
    /// when `enabled` is false.
    pub(crate) fn handle(
        &self,
        params: FuzzyFileSearchParams,
        context: RequestContext,
        enabled: bool,
    ) {
        let outgoing = self.outgoing.clone();
        if !enabled {
            let error = FuzzySearchError::Disabled;
            tokio::spawn(async move { outgoing.send_error(context.id, error.into()).await });
            return;
        }
        let connection = context.id.connection_id;
        // A child of the connection's token: closing the connection cancels it too.
        let cancel = lock(&self.running)
            .entry(connection)
            .or_default()
            .child_token();
        let number = self.next.fetch_add(1, Ordering::Relaxed);
        let key = params
            .cancellation_token
            .clone()
            .map(|token| (connection, token));
        if let Some(key) = &key
            && let Some((_, earlier)) =
                lock(&self.pending).insert(key.clone(), (number, cancel.clone()))
        {
            earlier.cancel();
        }
        let pending = Arc::clone(&self.pending);
        tokio::spawn(async move {
            let files = run(params, cancel).await;
            if let Some(key) = key {
                let mut pending = lock(&pending);
                if pending
                    .get(&key)
                    .is_some_and(|(current, _)| *current == number)
                {
                    pending.remove(&key);
                }
            }
            outgoing
                .send_response(context.id, FuzzyFileSearchResponse { files })
                .await;
        });
    }

    /// The connection closed: its searches stop.
    pub(crate) fn connection_closed(&self, connection: ConnectionId) {
        if let Some(token) = lock(&self.running).remove(&connection) {
            token.cancel();
        }
        lock(&self.pending).retain(|(owner, _), _| *owner != connection);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One search: the walk on the blocking pool, abandoned (it stops by itself) the moment the
/// search is cancelled.
async fn run(
    params: FuzzyFileSearchParams,
    cancel: CancellationToken,
) -> Vec<tandem_protocol::FuzzyFileSearchResult> {
    let FuzzyFileSearchParams { query, roots, .. } = params;
    if query.is_empty() || roots.is_empty() {
        return Vec::new();
    }
    let limits = engine::SearchLimits {
        max_results: MAX_RESULTS,
        deadline: Instant::now() + TIME_LIMIT,
        threads: engine::default_threads(),
    };
    let walk_cancel = cancel.clone();
    let walk =
        tokio::task::spawn_blocking(move || engine::search(&query, &roots, limits, &walk_cancel));
    tokio::select! {
        outcome = walk => match outcome {
            Ok(outcome) => {
                if outcome.timed_out {
                    tracing::debug!(visited = outcome.visited, "fuzzyFileSearch stopped at its time limit");
                }
                outcome.files
            }
            Err(error) => {
                // As the reference: a failed search answers no files; the log says why.
                tracing::warn!(%error, "fuzzyFileSearch failed inside the server");
                Vec::new()
            }
        },
        () = cancel.cancelled() => Vec::new(),
    }
}

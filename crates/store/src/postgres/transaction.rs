//! Transactions of the PostgreSQL store and what happens when their connection is lost: the
//! retry schedule ([`Reconnect`]) and the settling of a `COMMIT` whose answer never came.
//!
//! A connection can die at any point of a transaction (a restart of the database,
//! `pg_terminate_backend`, a network cut). Before `COMMIT` is sent that is harmless: the
//! database rolls the transaction back, and it is run again. After `COMMIT` is sent and
//! before its answer arrives, the write may or may not have taken effect, and neither
//! guessing is acceptable: reporting a failure for a write that is stored makes the client
//! and the database disagree, and running it again writes it twice. So every write
//! transaction reads its own transaction id when it begins (in the same round trip as its
//! `BEGIN`), and a lost commit answer is settled by asking the database, once it can be
//! reached again, what became of that transaction (`txid_status`): committed (success),
//! rolled back (run it again), or still in progress (its backend has not noticed the lost
//! connection yet: it is terminated, which ends the transaction one way or the other, and
//! the database is asked again). Only when the database cannot be asked within the
//! reconnect window does the caller get [`StoreError::PostgresCommitUnknown`], which says
//! that the outcome is unknown.

use std::time::{Duration, Instant};

use deadpool_postgres::{ClientWrapper, Object, Pool};
use tokio_postgres::SimpleQueryMessage;

use super::super::StoreError;

/// The first pause before trying again; it doubles up to [`MAX_RECONNECT_PAUSE`].
const FIRST_RECONNECT_PAUSE: Duration = Duration::from_millis(20);

/// The longest pause between two tries.
const MAX_RECONNECT_PAUSE: Duration = Duration::from_millis(500);

/// What a write transaction starts with: its transaction id (assigned now rather than at its
/// first write, so that it is known before anything can be lost) and its backend, in one
/// round trip.
const BEGIN_WRITE: &str = "BEGIN; SELECT txid_current(), pg_backend_pid()";

/// Ends the backend that still runs the transaction whose commit answer was lost; the check
/// on `backend_xid` (the low 32 bits of the 64-bit id) keeps a recycled process id safe.
const END_LOST_BACKEND: &str = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
     WHERE pid = $1 AND backend_xid::text = $2";

/// Trying an operation again while the database cannot be reached (a restart, terminated
/// connections): after a pause that doubles from [`FIRST_RECONNECT_PAUSE`] up to
/// [`MAX_RECONNECT_PAUSE`], until the window runs out. Only for attempts that are known not
/// to have committed anything: a transaction whose connection is lost before its `COMMIT`
/// was sent is rolled back by the database, and a lost commit answer is settled first (the
/// module doc).
pub(super) struct Reconnect {
    deadline: Instant,
    pause: Duration,
}

impl Reconnect {
    pub(super) fn new(window: Duration) -> Self {
        Self {
            deadline: Instant::now() + window,
            pause: FIRST_RECONNECT_PAUSE,
        }
    }

    /// How long to pause before trying again after `result`; `None`: do not try again (it
    /// succeeded, failed otherwise, or the window ran out).
    pub(super) fn pause_for<T>(&mut self, result: &Result<T, StoreError>) -> Option<Duration> {
        let error = result.as_ref().err()?;
        if !error.is_lost_connection() {
            return None;
        }
        let pause = self.next_pause()?;
        tracing::debug!(%error, "the database cannot be reached; trying again");
        Some(pause)
    }

    /// The next pause, or `None` once it would end past the window.
    fn next_pause(&mut self) -> Option<Duration> {
        if Instant::now() + self.pause >= self.deadline {
            return None;
        }
        let pause = self.pause;
        self.pause = (pause * 2).min(MAX_RECONNECT_PAUSE);
        Some(pause)
    }
}

/// An open write (or read) transaction on a pooled connection: committed with
/// [`Tx::finish`]; dropped unfinished (the caller stopped waiting), it is rolled back on a
/// task of its own before the connection is reused.
pub(crate) struct Tx {
    client: Option<Object>,
    /// For a write transaction: how to find out what became of it if its commit answer is
    /// lost.
    commit_check: Option<CommitCheck>,
}

impl Tx {
    /// A read transaction on `client` (`BEGIN ... READ ONLY` already sent): a lost commit
    /// answer is an error like any other, and the read is simply run again.
    pub(super) fn read(client: Object) -> Self {
        Self {
            client: Some(client),
            commit_check: None,
        }
    }

    /// Begins a write transaction on `client`, from the pool `pool`; a lost commit answer is
    /// settled within `window` (the module doc).
    pub(super) async fn begin_write(
        client: Object,
        pool: &Pool,
        window: Duration,
    ) -> Result<Self, StoreError> {
        let messages = client.simple_query(BEGIN_WRITE).await?;
        let mut tx = Self {
            client: Some(client),
            commit_check: None,
        };
        let (xid, backend_pid) = messages
            .iter()
            .find_map(|message| match message {
                SimpleQueryMessage::Row(row) => Some((
                    row.get(0).and_then(|xid| xid.parse::<i64>().ok())?,
                    row.get(1).and_then(|pid| pid.parse::<i32>().ok())?,
                )),
                _ => None,
            })
            .ok_or_else(|| {
                StoreError::Unavailable(
                    "PostgreSQL did not return the transaction id of a write; \
                     check that store.url names a PostgreSQL server"
                        .to_owned(),
                )
            })?;
        tx.commit_check = Some(CommitCheck {
            xid,
            backend_pid,
            pool: pool.clone(),
            window,
        });
        Ok(tx)
    }

    /// The transaction's connection, for its statements.
    pub(super) fn db(&self) -> &ClientWrapper {
        self.client
            .as_ref()
            .expect("a transaction's connection is held until it finishes")
    }

    /// Commits when `result` is `Ok`, rolls back otherwise; the commit's failure is the
    /// result's. A write whose commit answer is lost is settled (the module doc): `Ok` if it
    /// committed; the lost-connection error if the database rolled it back (nothing was
    /// written, so the caller may run it again); [`StoreError::PostgresCommitUnknown`] if the
    /// database could not be asked.
    pub(super) async fn finish<T>(
        mut self,
        result: Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let client = self.client.take().expect("finished once");
        let value = match result {
            Ok(value) => value,
            Err(error) => {
                if let Err(rollback) = client.batch_execute("ROLLBACK").await {
                    tracing::debug!(error = %rollback, "cannot roll back; the connection is dropped");
                }
                return Err(error);
            }
        };
        let lost = match client.batch_execute("COMMIT").await {
            Ok(()) => return Ok(value),
            Err(error) => StoreError::from(error),
        };
        drop(client);
        match self.commit_check.take() {
            Some(check) if lost.is_lost_connection() => match check.settle().await {
                Ok(Settled::Committed) => Ok(value),
                Ok(Settled::RolledBack) => Err(lost),
                Err(unknown) => Err(unknown),
            },
            _ => Err(lost),
        }
    }
}

impl Drop for Tx {
    fn drop(&mut self) {
        if let Some(client) = self.client.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                let _ = client.batch_execute("ROLLBACK").await;
            });
        }
    }
}

/// What a write transaction needs to find out what became of it.
struct CommitCheck {
    /// `txid_current()` of the transaction (64 bits: with its epoch).
    xid: i64,
    /// The backend that ran it.
    backend_pid: i32,
    /// Where to get a connection to ask on.
    pool: Pool,
    /// How long to go on asking while the database cannot be reached.
    window: Duration,
}

/// What became of a transaction whose commit answer was lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Settled {
    Committed,
    RolledBack,
}

impl CommitCheck {
    /// Asks the database what became of the transaction, on fresh connections, until it
    /// answers or the window runs out.
    async fn settle(&self) -> Result<Settled, StoreError> {
        let mut reconnect = Reconnect::new(self.window);
        let mut backend_ended = false;
        let mut last: String;
        loop {
            match self.status().await {
                Ok(Some(status)) if status == "committed" => {
                    tracing::info!(xid = self.xid, "a commit whose answer was lost took effect");
                    return Ok(Settled::Committed);
                }
                Ok(Some(status)) if status == "aborted" => {
                    tracing::info!(
                        xid = self.xid,
                        "a commit whose answer was lost did not take effect; running the transaction again"
                    );
                    return Ok(Settled::RolledBack);
                }
                Ok(Some(status)) => {
                    // "in progress": its backend has not noticed yet that the connection is
                    // gone. Ending the backend ends the transaction, committed or not.
                    if !backend_ended {
                        backend_ended = true;
                        if let Err(error) = self.end_backend().await {
                            tracing::debug!(%error, "cannot end the backend of a lost commit");
                        }
                        continue;
                    }
                    last = format!("the transaction was still {status}");
                }
                Ok(None) => {
                    last = "the database no longer knows the transaction".to_owned();
                    break;
                }
                Err(error) => {
                    last = error.to_string();
                    if !error.is_lost_connection() {
                        break;
                    }
                }
            }
            match reconnect.next_pause() {
                Some(pause) => tokio::time::sleep(pause).await,
                None => break,
            }
        }
        Err(StoreError::PostgresCommitUnknown {
            xid: self.xid,
            waited_ms: u64::try_from(self.window.as_millis()).unwrap_or(u64::MAX),
            last,
        })
    }

    /// `txid_status` of the transaction: `committed`, `aborted`, `in progress`, or `None`
    /// when it is too old to be known.
    async fn status(&self) -> Result<Option<String>, StoreError> {
        let client = self
            .pool
            .get()
            .await
            .map_err(|error| StoreError::PostgresPool(error.to_string()))?;
        let row = client
            .query_one("SELECT txid_status($1)", &[&self.xid])
            .await?;
        Ok(row.get(0))
    }

    /// Terminates the backend still running the transaction (nothing if it no longer does).
    async fn end_backend(&self) -> Result<(), StoreError> {
        let client = self
            .pool
            .get()
            .await
            .map_err(|error| StoreError::PostgresPool(error.to_string()))?;
        let low_bits = (self.xid & 0xFFFF_FFFF).to_string();
        client
            .query(END_LOST_BACKEND, &[&self.backend_pid, &low_bits])
            .await?;
        Ok(())
    }
}

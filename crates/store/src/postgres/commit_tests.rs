//! Lost commit answers (`transaction`): a proxy between the store and the test cluster cuts
//! a connection around the `COMMIT` of a write, the way a restart of the database or a
//! network cut can, and the write must come out stored exactly once and reported as what it
//! is: stored when it committed, run again when the database rolled it back, and an error
//! saying the outcome is unknown only while the database cannot be asked.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tandem_test_support::postgres::PostgresCluster;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{UnixListener, UnixStream};

use super::*;
use crate::ThreadStore;
use crate::test_fixtures::{record, turn};

/// The socket's file name, as PostgreSQL names it for port 5432.
const SOCKET: &str = ".s.PGSQL.5432";

/// The startup codes of the requests for an encrypted session, which come before the real
/// startup message.
const ENCRYPTION_REQUESTS: [u32; 2] = [80_877_103, 80_877_104];

/// What the proxy does to the next `COMMIT` it sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    /// Let it through: nothing armed.
    Nothing,
    /// Sent to the database, which commits; its answer is dropped and the client's
    /// connection closed.
    AnswerLost,
    /// Never sent: both connections closed, so the database rolls the transaction back.
    NeverSent,
    /// Never sent, the client's connection closed, the database's kept open: the backend
    /// sits idle in its transaction, which stays in progress until something ends it.
    Stalled,
}

/// The proxy's shared state.
#[derive(Default)]
struct Cuts {
    armed: Mutex<Option<Cut>>,
    /// How many `COMMIT`s were cut.
    cut: Mutex<Vec<Cut>>,
    /// While set, new connections are closed at once (the database cannot be reached).
    refusing: AtomicBool,
    /// The database's side of stalled connections, kept open.
    stalled: Mutex<Vec<OwnedWriteHalf>>,
}

impl Cuts {
    fn take(&self) -> Cut {
        self.armed
            .lock()
            .expect("cuts")
            .take()
            .unwrap_or(Cut::Nothing)
    }
}

/// A unix socket proxy in front of the test cluster's socket.
struct CommitCutter {
    dir: tempfile::TempDir,
    cuts: Arc<Cuts>,
    accepting: tokio::task::JoinHandle<()>,
}

impl CommitCutter {
    async fn start(upstream_dir: &Path) -> Self {
        let dir = tempfile::tempdir().expect("a directory for the proxy's socket");
        let listener = UnixListener::bind(dir.path().join(SOCKET)).expect("bind the proxy");
        let upstream = upstream_dir.join(SOCKET);
        let cuts = Arc::new(Cuts::default());
        let shared = Arc::clone(&cuts);
        let accepting = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if shared.refusing.load(Ordering::SeqCst) {
                    continue;
                }
                let cuts = Arc::clone(&shared);
                let upstream = upstream.clone();
                tokio::spawn(async move {
                    if let Ok(server) = UnixStream::connect(&upstream).await {
                        relay(client, server, cuts).await;
                    }
                });
            }
        });
        Self {
            dir,
            cuts,
            accepting,
        }
    }

    fn url(&self, database: &str) -> String {
        format!(
            "postgres://postgres@localhost:5432/{database}?host={}",
            self.dir.path().display()
        )
    }

    fn arm(&self, cut: Cut) {
        *self.cuts.armed.lock().expect("cuts") = Some(cut);
    }

    fn cut(&self) -> Vec<Cut> {
        self.cuts.cut.lock().expect("cuts").clone()
    }
}

impl Drop for CommitCutter {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

/// Relays one connection, cutting it at a `COMMIT` as armed.
async fn relay(client: UnixStream, server: UnixStream, cuts: Arc<Cuts>) {
    let (mut from_client, to_client) = client.into_split();
    let (from_server, mut to_server) = server.into_split();
    let drop_answers = Arc::new(AtomicBool::new(false));
    let answers = tokio::spawn(forward_answers(
        from_server,
        to_client,
        Arc::clone(&drop_answers),
    ));
    let cut = forward_requests(&mut from_client, &mut to_server, &cuts, &drop_answers).await;
    match cut {
        Some(Cut::Stalled) => {
            answers.abort();
            cuts.stalled.lock().expect("cuts").push(to_server);
        }
        // The database's side closes here; the answers then end and close the client's.
        _ => drop(to_server),
    }
}

/// Copies the database's answers to the client until either side closes, or (once
/// `drop_answers` is set) drops the next answer and closes the client's connection.
async fn forward_answers(
    mut from_server: OwnedReadHalf,
    mut to_client: OwnedWriteHalf,
    drop_answers: Arc<AtomicBool>,
) {
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let read = match from_server.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(read) => read,
        };
        if drop_answers.load(Ordering::SeqCst) {
            return;
        }
        if to_client.write_all(&buffer[..read]).await.is_err() {
            return;
        }
    }
}

/// Copies the client's messages to the database, message by message, until the client
/// closes or a `COMMIT` is cut; returns the cut, if any.
async fn forward_requests(
    from_client: &mut OwnedReadHalf,
    to_server: &mut OwnedWriteHalf,
    cuts: &Cuts,
    drop_answers: &AtomicBool,
) -> Option<Cut> {
    // The startup message and the requests for encryption before it carry no type byte.
    loop {
        let length = from_client.read_u32().await.ok()?;
        let mut body = vec![0u8; usize::try_from(length).ok()?.checked_sub(4)?];
        from_client.read_exact(&mut body).await.ok()?;
        to_server.write_u32(length).await.ok()?;
        to_server.write_all(&body).await.ok()?;
        let code = u32::from_be_bytes(body.get(..4)?.try_into().ok()?);
        if !ENCRYPTION_REQUESTS.contains(&code) {
            break;
        }
    }
    loop {
        let kind = from_client.read_u8().await.ok()?;
        let length = from_client.read_u32().await.ok()?;
        let mut body = vec![0u8; usize::try_from(length).ok()?.checked_sub(4)?];
        from_client.read_exact(&mut body).await.ok()?;
        let cut = if kind == b'Q' && body.starts_with(b"COMMIT") {
            cuts.take()
        } else {
            Cut::Nothing
        };
        if cut != Cut::Nothing {
            cuts.cut.lock().expect("cuts").push(cut);
        }
        match cut {
            Cut::Nothing | Cut::AnswerLost => {
                if cut == Cut::AnswerLost {
                    drop_answers.store(true, Ordering::SeqCst);
                }
                to_server.write_u8(kind).await.ok()?;
                to_server.write_u32(length).await.ok()?;
                to_server.write_all(&body).await.ok()?;
            }
            Cut::NeverSent | Cut::Stalled => return Some(cut),
        }
    }
}

/// How many rows `sql` counts, read with `psql` beside the store.
fn count(cluster: &PostgresCluster, database: &str, sql: &str) -> String {
    cluster.sql_in(database, sql).expect("count")
}

/// A fresh database of the shared cluster, the proxy in front of it, and a store with lease
/// TTL `ttl` connected through the proxy; `None` where PostgreSQL is not installed.
async fn through_a_proxy(
    ttl: Duration,
) -> Option<(
    &'static PostgresCluster,
    String,
    CommitCutter,
    PostgresThreadStore,
)> {
    let cluster = PostgresCluster::shared()?;
    let (database, _) = cluster.create_named_database();
    let proxy = CommitCutter::start(&cluster.socket_dir()).await;
    let store =
        PostgresThreadStore::connect(&proxy.url(&database), LeaseSettings::for_this_process(ttl))
            .await
            .expect("connect through the proxy");
    Some((cluster, database, proxy, store))
}

/// A commit that took effect is a success (not run again: the thread would then exist
/// twice, or the second insert fail); one the database rolled back, or left in progress on a
/// backend that did not notice the cut, is run again; either way the thread is stored once.
/// Before the store settled lost commit answers, the first case failed with "connection
/// closed" although the thread was stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_whose_commit_answer_is_lost_is_stored_once_and_reported_as_stored() {
    let Some((cluster, database, proxy, store)) = through_a_proxy(Duration::from_secs(60)).await
    else {
        return;
    };
    for (n, cut) in [Cut::AnswerLost, Cut::NeverSent, Cut::Stalled]
        .into_iter()
        .enumerate()
    {
        let id = crate::new_id();
        proxy.arm(cut);
        let created = tokio::time::timeout(
            Duration::from_secs(30),
            store.create_thread(&record(&id, n as i64), &[turn(1)]),
        )
        .await
        .expect("bounded");
        assert!(created.is_ok(), "{cut:?}: {created:?}");
        assert_eq!(proxy.cut().last(), Some(&cut), "the commit was cut");
        assert_eq!(
            count(
                cluster,
                &database,
                &format!("SELECT count(*) FROM threads WHERE id = '{id}'")
            ),
            "1",
            "{cut:?}"
        );
        assert_eq!(
            count(
                cluster,
                &database,
                &format!("SELECT count(*) FROM turns WHERE thread_id = '{id}'")
            ),
            "1",
            "{cut:?}"
        );
        let read = store.get_thread(&id).await.expect("read back");
        assert_eq!(read.map(|thread| thread.id), Some(id), "{cut:?}");
    }
    // The stalled backend was ended to settle its transaction.
    let stalled = count(
        cluster,
        &database,
        "SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction' \
         AND datname = current_database()",
    );
    assert_eq!(stalled, "0");
    proxy.cuts.stalled.lock().expect("cuts").clear();
}

/// While the database cannot be asked, a lost commit answer is reported as unknown (not as a
/// plain lost connection, which would invite a blind retry), within the reconnect window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_commit_answer_that_cannot_be_settled_says_the_outcome_is_unknown() {
    // A third of the TTL is the reconnect window: 1 s.
    let Some((cluster, database, proxy, store)) = through_a_proxy(Duration::from_secs(3)).await
    else {
        return;
    };
    assert_eq!(
        store.pool.status().size,
        1,
        "the premise: the one pooled connection is the one cut, so asking needs a new one"
    );
    let id = crate::new_id();
    proxy.arm(Cut::AnswerLost);
    proxy.cuts.refusing.store(true, Ordering::SeqCst);
    let created = tokio::time::timeout(
        Duration::from_secs(30),
        store.create_thread(&record(&id, 1), &[turn(1)]),
    )
    .await
    .expect("bounded");
    proxy.cuts.refusing.store(false, Ordering::SeqCst);
    let error = created.expect_err("the outcome cannot be known");
    assert!(
        matches!(error, StoreError::PostgresCommitUnknown { .. }),
        "{error:?}"
    );
    assert!(!error.is_lost_connection(), "not retried blindly");
    assert!(
        error.to_string().contains("may or may not be stored"),
        "{error}"
    );
    // It did commit: reading it back is what the message asks for.
    assert_eq!(
        count(
            cluster,
            &database,
            &format!("SELECT count(*) FROM threads WHERE id = '{id}'")
        ),
        "1"
    );
}

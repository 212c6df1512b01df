//! Handoffs that wait (issue 32, docs/scaling.md): when server B is refused a thread server A
//! holds, A hears of it at once and B hears at once that A gave the lease back, through
//! PostgreSQL's `LISTEN`/`NOTIFY` rather than A's next renewal (a third of the TTL later).
//!
//! - A refused acquire notifies `tandem_lease_handoff` with `OWNER \x1f THREAD` in its
//!   transaction; the holder's listener passes the thread to its server, which hands it over
//!   if no turn runs on it.
//! - A release notifies `tandem_lease_released` with the thread id; a server waiting for that
//!   thread tries again at once.
//!
//! `LISTEN` is session state, and the pool's connections are shared and recycled, so each
//! store keeps one connection of its own for it, outside the pool, and opens it again (and
//! listens again) when it drops. A notification sent while it is down is lost: the holder
//! still sees the request at its next renewal, and the waiting side polls the lease row
//! within its bound, so a lost notification costs time, never correctness.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use tokio::sync::{broadcast, mpsc};
use tokio::task::JoinHandle;
use tokio_postgres::tls::MakeTlsConnect;
use tokio_postgres::{AsyncMessage, Config, Socket};

/// Where refused acquires ask the holder to hand a thread over.
pub(super) const HANDOFF_CHANNEL: &str = "tandem_lease_handoff";
/// Where releases are announced.
pub(super) const RELEASED_CHANNEL: &str = "tandem_lease_released";
/// Between the owner and the thread id in a handoff payload (neither contains it).
pub(super) const PAYLOAD_SEPARATOR: char = '\u{1f}';

/// Requests queued for the server; past this many unread, more are dropped (the renewal
/// reports them anyway).
const REQUESTS_QUEUED: usize = 1024;
/// Releases kept for slow waiters; a waiter that misses some polls the row anyway.
const RELEASES_KEPT: usize = 256;
/// The first wait before listening again after the connection dropped; it doubles up to
/// [`MAX_RELISTEN_BACKOFF`].
const FIRST_RELISTEN_BACKOFF: Duration = Duration::from_millis(100);
const MAX_RELISTEN_BACKOFF: Duration = Duration::from_secs(5);

/// The listening connection's task and what it hears.
pub(super) struct Handoffs {
    requests: Mutex<Option<mpsc::Receiver<String>>>,
    released: broadcast::Sender<String>,
    task: JoinHandle<()>,
}

impl Drop for Handoffs {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Handoffs {
    /// Starts listening on a connection of its own, made with `config` and `tls`, for the
    /// handoff requests addressed to `owner`.
    pub(super) fn start<T>(config: Config, tls: T, owner: String) -> Self
    where
        T: MakeTlsConnect<Socket> + Clone + Send + Sync + 'static,
        T::Stream: Send + 'static,
        T::TlsConnect: Send,
        <T::TlsConnect as tokio_postgres::tls::TlsConnect<Socket>>::Future: Send,
    {
        let (requests_tx, requests) = mpsc::channel(REQUESTS_QUEUED);
        let (released, _) = broadcast::channel(RELEASES_KEPT);
        let task = tokio::spawn(listen_forever(
            config,
            tls,
            owner,
            requests_tx,
            released.clone(),
        ));
        Self {
            requests: Mutex::new(Some(requests)),
            released,
            task,
        }
    }

    /// The handoff requests, for the server to act on; `None` once taken.
    pub(super) fn take_requests(&self) -> Option<mpsc::Receiver<String>> {
        self.requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }

    /// Returns when `thread_id`'s release is announced, or after `wait`.
    pub(super) async fn released(&self, thread_id: &str, wait: Duration) {
        let mut releases = self.released.subscribe();
        let _ = tokio::time::timeout(wait, async {
            loop {
                match releases.recv().await {
                    Ok(released) if released == thread_id => return,
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => {
                        // No listener: the timeout ends the wait.
                        std::future::pending::<()>().await;
                    }
                }
            }
        })
        .await;
    }
}

/// Listens, and listens again after every drop, until the store is dropped.
async fn listen_forever<T>(
    config: Config,
    tls: T,
    owner: String,
    requests: mpsc::Sender<String>,
    released: broadcast::Sender<String>,
) where
    T: MakeTlsConnect<Socket> + Clone + Send + Sync + 'static,
    T::Stream: Send + 'static,
    T::TlsConnect: Send,
    <T::TlsConnect as tokio_postgres::tls::TlsConnect<Socket>>::Future: Send,
{
    let mut backoff = FIRST_RELISTEN_BACKOFF;
    loop {
        let began = Instant::now();
        match listen_once(&config, tls.clone(), &owner, &requests, &released).await {
            Ok(()) => tracing::info!("the handoff listener's connection ended; listening again"),
            Err(error) => {
                tracing::warn!(%error, "the handoff listener's connection failed; listening again")
            }
        }
        if requests.is_closed() {
            return;
        }
        // A connection that lived a while starts the backoff over.
        if began.elapsed() > MAX_RELISTEN_BACKOFF * 6 {
            backoff = FIRST_RELISTEN_BACKOFF;
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_RELISTEN_BACKOFF);
    }
}

/// One listening connection, from connect to its end.
async fn listen_once<T>(
    config: &Config,
    tls: T,
    owner: &str,
    requests: &mpsc::Sender<String>,
    released: &broadcast::Sender<String>,
) -> Result<(), tokio_postgres::Error>
where
    T: MakeTlsConnect<Socket> + Send + 'static,
    T::Stream: Send + 'static,
    T::TlsConnect: Send,
    <T::TlsConnect as tokio_postgres::tls::TlsConnect<Socket>>::Future: Send,
{
    let (client, mut connection) = config.connect(tls).await?;
    // The connection delivers notifications only while it is polled; its messages go to
    // this task while the client issues LISTEN.
    let (messages_tx, mut messages) = mpsc::unbounded_channel();
    let driver = tokio::spawn(async move {
        let mut stream = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = stream.next().await {
            if messages_tx.send(message).is_err() {
                return;
            }
        }
    });
    let listened = client
        .batch_execute(&format!(
            "LISTEN {HANDOFF_CHANNEL}; LISTEN {RELEASED_CHANNEL}"
        ))
        .await;
    if let Err(error) = listened {
        driver.abort();
        return Err(error);
    }
    tracing::debug!("listening for lease handoffs");
    while let Some(message) = messages.recv().await {
        let notification = match message? {
            AsyncMessage::Notification(notification) => notification,
            _ => continue,
        };
        match notification.channel() {
            HANDOFF_CHANNEL => {
                let Some((addressee, thread_id)) =
                    notification.payload().split_once(PAYLOAD_SEPARATOR)
                else {
                    continue;
                };
                if addressee == owner
                    && requests.try_send(thread_id.to_owned()).is_err()
                    && requests.is_closed()
                {
                    break;
                }
            }
            RELEASED_CHANNEL => {
                let _ = released.send(notification.payload().to_owned());
            }
            _ => {}
        }
    }
    driver.abort();
    drop(client);
    Ok(())
}

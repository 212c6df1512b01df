//! A loopback proxy (TCP, or a unix socket in front of a unix socket) between a client and a
//! websocket server that cuts the connection at seeded points: after a drawn number of bytes from the server (so a cut can fall in the
//! middle of a frame), both sockets are dropped. The client sees its websocket fail and has to
//! come back through the proxy, which forwards the next connection the same way.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::task::JoinHandle;

/// Where cuts fall: every cut comes after a number of server bytes drawn from `range`.
pub(crate) struct CutPlan {
    rng: StdRng,
    range: std::ops::RangeInclusive<u64>,
}

impl CutPlan {
    pub(crate) fn seeded(seed: u64, range: std::ops::RangeInclusive<u64>) -> Self {
        Self {
            rng: StdRng::seed_from_u64(seed),
            range,
        }
    }

    fn next_budget(&mut self) -> u64 {
        self.rng.random_range(self.range.clone())
    }
}

struct State {
    /// `None`: never cut.
    plan: Option<CutPlan>,
    /// Server bytes still to forward before the next cut.
    budget: u64,
    /// While set, server bytes are dropped instead of forwarded (a network path that went
    /// dark): counted in `dropped` once the client sent something since the freeze.
    frozen: bool,
    sent_while_frozen: bool,
    dropped: u64,
}

/// Where a server listens, and so where the proxy connects each client's connection.
pub(crate) enum Upstream {
    /// `--listen ws://ADDRESS`.
    Tcp(SocketAddr),
    /// `--listen unix://PATH`; the proxy listens on a socket of its own beside it.
    Unix(PathBuf),
}

/// The running proxy; stops with the test.
pub(crate) struct Proxy {
    /// The URL a client connects to: `ws://ADDRESS` or `unix://PATH`.
    pub(crate) url: String,
    state: Arc<Mutex<State>>,
    cut_now: tokio::sync::watch::Sender<u64>,
    cuts: Arc<AtomicU64>,
    task: JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    /// A proxy to `upstream`; `plan: None` forwards without ever cutting.
    pub(crate) async fn start(upstream: Upstream, plan: Option<CutPlan>) -> Self {
        let mut plan = plan;
        let budget = plan.as_mut().map_or(u64::MAX, CutPlan::next_budget);
        let state = Arc::new(Mutex::new(State {
            plan,
            budget,
            frozen: false,
            sent_while_frozen: false,
            dropped: 0,
        }));
        let cuts = Arc::new(AtomicU64::new(0));
        let (cut_now, _) = tokio::sync::watch::channel(0u64);
        let connection = Connection {
            state: state.clone(),
            cuts: cuts.clone(),
            cut_now: cut_now.clone(),
        };
        let (url, task) = match upstream {
            Upstream::Tcp(upstream) => {
                let listener = TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind the proxy");
                let address = listener.local_addr().expect("the proxy's address");
                let task = tokio::spawn(async move {
                    loop {
                        let Ok((client, _)) = listener.accept().await else {
                            return;
                        };
                        let Ok(server) = TcpStream::connect(upstream).await else {
                            continue;
                        };
                        let _ = client.set_nodelay(true);
                        let _ = server.set_nodelay(true);
                        connection.pump(client, server);
                    }
                });
                (format!("ws://{address}"), task)
            }
            Upstream::Unix(upstream) => {
                let path = upstream.with_file_name("chaos-proxy.sock");
                let listener = UnixListener::bind(&path).expect("bind the proxy's socket");
                let task = tokio::spawn(async move {
                    loop {
                        let Ok((client, _)) = listener.accept().await else {
                            return;
                        };
                        let Ok(server) = UnixStream::connect(&upstream).await else {
                            continue;
                        };
                        connection.pump(client, server);
                    }
                });
                (format!("unix://{}", path.display()), task)
            }
        };
        Self {
            url,
            state,
            cut_now,
            cuts,
            task,
        }
    }

    /// Stops cutting (a message larger than the largest budget would never get through).
    pub(crate) fn calm(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.plan = None;
        state.budget = u64::MAX;
    }

    /// Drops the server's bytes from now on, until [`Self::cut`].
    pub(crate) fn freeze(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.frozen = true;
        state.sent_while_frozen = false;
        state.dropped = 0;
    }

    /// Server bytes dropped since the last [`Self::freeze`], after the client sent something
    /// (a request) while frozen: the server's answer, or what it sent meanwhile.
    pub(crate) fn dropped(&self) -> u64 {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .dropped
    }

    /// Cuts the current connection now. The next connection is forwarded again; nothing
    /// dropped is ever followed by later bytes of the same connection, as on a real network.
    pub(crate) fn cut(&self) {
        self.cut_now.send_modify(|cuts| *cuts += 1);
    }

    /// How many times the connection was cut.
    pub(crate) fn cuts(&self) -> u64 {
        self.cuts.load(Ordering::SeqCst)
    }
}

/// What each accepted connection's pump shares with the proxy.
struct Connection {
    state: Arc<Mutex<State>>,
    cuts: Arc<AtomicU64>,
    cut_now: tokio::sync::watch::Sender<u64>,
}

impl Connection {
    /// Forwards a new connection; one at a time is all the client keeps, each pumps until cut.
    fn pump<S>(&self, client: S, server: S)
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        // A new connection: a frozen path was cut, this one carries bytes again.
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .frozen = false;
        tokio::spawn(pump(
            client,
            server,
            self.state.clone(),
            self.cuts.clone(),
            self.cut_now.subscribe(),
        ));
    }
}

/// Moves bytes both ways until either side ends or the budget of server bytes runs out; then
/// both sockets are dropped (the cut).
async fn pump<S: AsyncRead + AsyncWrite + Unpin>(
    mut client: S,
    mut server: S,
    state: Arc<Mutex<State>>,
    cuts: Arc<AtomicU64>,
    mut cut_now: tokio::sync::watch::Receiver<u64>,
) {
    let mut from_client = vec![0u8; 16 * 1024];
    let mut from_server = vec![0u8; 16 * 1024];
    cut_now.mark_unchanged();
    loop {
        tokio::select! {
            biased;
            _ = cut_now.changed() => {
                cuts.fetch_add(1, Ordering::SeqCst);
                return;
            }
            read = client.read(&mut from_client) => {
                let Ok(n) = read else { return };
                if n == 0 || server.write_all(&from_client[..n]).await.is_err() {
                    return;
                }
                let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
                if state.frozen {
                    state.sent_while_frozen = true;
                }
            }
            read = server.read(&mut from_server) => {
                let Ok(n) = read else { return };
                if n == 0 {
                    return;
                }
                let (forward, cut) = {
                    let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
                    let n = n as u64;
                    if state.frozen {
                        if state.sent_while_frozen {
                            state.dropped += n;
                        }
                        (0, false)
                    } else if n < state.budget {
                        state.budget -= n;
                        (n, false)
                    } else {
                        let forward = state.budget;
                        state.budget = state.plan.as_mut().map_or(u64::MAX, CutPlan::next_budget);
                        (forward, true)
                    }
                };
                if client.write_all(&from_server[..forward as usize]).await.is_err() {
                    return;
                }
                if cut {
                    cuts.fetch_add(1, Ordering::SeqCst);
                    // Dropped without a close frame, mid-frame if the budget ended there: a
                    // proxy restart or a dead network path.
                    return;
                }
            }
        }
    }
}

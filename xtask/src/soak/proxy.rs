//! A loopback TCP proxy in front of one websocket server: the soak's websocket clients
//! connect to it, so that it can cut every connection at once (a network fault) and so that
//! they find the server again at the same address after a restart, which binds a new port.
//! While the server is down the proxy refuses connections, as a dead server's port would.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How long the proxy waits for the server to accept a forwarded connection.
const CONNECT_LIMIT: Duration = Duration::from_secs(5);

/// The running proxy; stops when dropped.
#[derive(Debug)]
pub(crate) struct Proxy {
    address: SocketAddr,
    upstream: watch::Sender<Option<SocketAddr>>,
    cut: watch::Sender<u64>,
    cut_connections: Arc<AtomicU64>,
    task: JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
        // Live connections end with the next cut signal or their own end; a dropped sender
        // ends them now.
        self.cut.send_modify(|generation| *generation += 1);
    }
}

impl Proxy {
    /// Listens on a free loopback port and forwards to `upstream`.
    pub(crate) async fn start(upstream: SocketAddr) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?;
        let (upstream_tx, upstream_rx) = watch::channel(Some(upstream));
        let (cut_tx, cut_rx) = watch::channel(0);
        let cut_connections = Arc::new(AtomicU64::new(0));
        let task = tokio::spawn(accept(
            listener,
            upstream_rx,
            cut_rx,
            cut_connections.clone(),
        ));
        Ok(Self {
            address,
            upstream: upstream_tx,
            cut: cut_tx,
            cut_connections,
            task,
        })
    }

    /// The address clients connect to.
    pub(crate) fn address(&self) -> SocketAddr {
        self.address
    }

    /// Forwards new connections to `upstream`; `None` refuses them (the server is down).
    pub(crate) fn retarget(&self, upstream: Option<SocketAddr>) {
        self.upstream.send_replace(upstream);
    }

    /// Cuts every live connection (both sockets closed at once, without a websocket close).
    pub(crate) fn cut(&self) {
        self.cut.send_modify(|generation| *generation += 1);
    }

    /// How many connections the cuts ended so far.
    pub(crate) fn cut_connections(&self) -> u64 {
        self.cut_connections.load(Ordering::Relaxed)
    }
}

async fn accept(
    listener: TcpListener,
    upstream: watch::Receiver<Option<SocketAddr>>,
    cut: watch::Receiver<u64>,
    cut_connections: Arc<AtomicU64>,
) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        let Some(server) = *upstream.borrow() else {
            // Down: the client sees its connection refused and tries again later.
            continue;
        };
        let mut cut = cut.clone();
        cut.mark_unchanged();
        let cut_connections = cut_connections.clone();
        tokio::spawn(async move {
            let connected = tokio::time::timeout(CONNECT_LIMIT, TcpStream::connect(server)).await;
            let Ok(Ok(mut server)) = connected else {
                return;
            };
            let _ = client.set_nodelay(true);
            let _ = server.set_nodelay(true);
            let mut client = client;
            tokio::select! {
                _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                _ = cut.changed() => {
                    cut_connections.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    }
}

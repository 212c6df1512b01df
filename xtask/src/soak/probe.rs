//! The probe: a client of its own, connected to one websocket server directly (not through the
//! cutting proxy), that sends a cheap request (`config/read`, answered from memory) every
//! 100 ms and records each round trip. Its p99, outside the windows in which the server is
//! down by design, is one of the soak's bounds.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tandem_client::{Client, ClientOptions, ReconnectPolicy, Transport, WebSocketTarget};
use tandem_protocol::ConfigReadParams;
use tokio::sync::watch;
use tokio::time::MissedTickBehavior;

use super::record::Counters;
use super::watcher::ServerAt;

/// How often the probe asks.
pub(crate) const PERIOD: Duration = Duration::from_millis(100);
/// How long one probe request may take before it counts as failed.
const REQUEST_LIMIT: Duration = Duration::from_secs(5);

/// One probe request.
#[derive(Debug, Clone)]
pub(crate) struct ProbeSample {
    /// When it was sent.
    pub(crate) at: Instant,
    /// Its round trip, or why it failed.
    pub(crate) outcome: Result<Duration, String>,
}

/// Probes the server at `server`'s address (which changes on restarts; `None` while it is
/// down) until `stop`; returns every sample.
pub(crate) async fn run(
    mut server: ServerAt,
    counters: Arc<Counters>,
    mut stop: watch::Receiver<bool>,
) -> Vec<ProbeSample> {
    let mut samples = Vec::new();
    let mut client: Option<(SocketAddr, Client)> = None;
    let mut tick = tokio::time::interval(PERIOD);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => break,
        }
        let current = server.borrow_and_update().1;
        let Some(current) = current else {
            continue;
        };
        if client.as_ref().is_none_or(|(at, _)| *at != current) {
            if let Some((_, old)) = client.take() {
                old.close().await;
            }
            client = Some((current, connect(current).await));
        }
        let Some((_, probe)) = &client else {
            continue;
        };
        let at = Instant::now();
        counters.request();
        let outcome = match tokio::time::timeout(
            REQUEST_LIMIT,
            probe.config_read(ConfigReadParams::default()),
        )
        .await
        {
            Ok(Ok(_)) => Ok(at.elapsed()),
            Ok(Err(error)) => Err(error.to_string()),
            Err(_) => Err(format!("no answer within {REQUEST_LIMIT:?}")),
        };
        samples.push(ProbeSample { at, outcome });
    }
    if let Some((_, probe)) = client {
        probe.close().await;
    }
    samples
}

async fn connect(address: SocketAddr) -> Client {
    let options = ClientOptions::new()
        .client_name("soak-probe")
        .request_timeout(Some(REQUEST_LIMIT))
        .reconnect(ReconnectPolicy::disabled());
    let target = WebSocketTarget::new(format!("ws://{address}"));
    Client::start(Transport::WebSocket(target), options)
        .await
        .expect("a websocket client starts without connecting")
}

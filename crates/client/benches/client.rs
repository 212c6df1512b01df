//! `cargo bench -p tandem-client`: round trips through `tandem-client` in-process against the
//! same requests sent straight to `InProcessClientHandle`, in the same run, on a
//! current-thread and a 2-worker runtime. The ratio is the client's overhead: id generation,
//! the timeout, error classification and decoding the typed response.

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde_json::json;
use tandem_client::{Client, ClientOptions, Transport};
use tandem_host::in_process::{self, InProcessStartArgs};
use tandem_host::{
    ConnectionId, ConnectionSessionState, InProcessClientHandle, MessageProcessor,
    OutgoingMessageSender, RequestContext,
};
use tandem_protocol::client_methods::ThreadLoadedList;
use tandem_protocol::{
    ClientRequest, InitializeParams, InitializeResponse, JSONRPCErrorError, RequestId,
    ThreadLoadedListParams,
};

const ROUND_TRIPS: usize = 50_000;
const PIPELINED: usize = 100_000;
const IN_FLIGHT: usize = 64;
const RUNS: usize = 7;

/// Answers every request at once with an empty `thread/loaded/list` result.
struct Noop {
    outgoing: OutgoingMessageSender,
}

#[async_trait]
impl MessageProcessor for Noop {
    async fn initialize(
        &self,
        _: ConnectionId,
        _: &InitializeParams,
        _: &ConnectionSessionState,
    ) -> Result<InitializeResponse, JSONRPCErrorError> {
        Ok(tandem_test_support::initialize_response())
    }

    async fn process_request(&self, request: ClientRequest, context: RequestContext) {
        let _ = request;
        self.outgoing
            .send_response(context.id, json!({"data": [], "nextCursor": null}))
            .await;
    }
}

fn factory(outgoing: OutgoingMessageSender) -> Arc<dyn MessageProcessor> {
    Arc::new(Noop { outgoing })
}

fn request(id: i64) -> ClientRequest {
    ClientRequest::ThreadLoadedList {
        request_id: RequestId::Integer(id),
        params: ThreadLoadedListParams::new(),
    }
}

async fn handle() -> InProcessClientHandle {
    let args = InProcessStartArgs::new(factory, tandem_test_support::initialize_params(false));
    in_process::start(args).await.expect("host starts")
}

async fn client() -> Client {
    Client::start(Transport::processor(factory), ClientOptions::new())
        .await
        .expect("client starts")
}

#[derive(Clone, Copy)]
enum Case {
    RoundTrip,
    Pipelined,
}

/// Seconds for `n` requests straight to the handle.
async fn direct(case: Case, n: usize) -> f64 {
    let mut handle = handle().await;
    let started = Instant::now();
    match case {
        Case::RoundTrip => {
            for id in 0..n {
                let reply = handle.request(request(id as i64 + 1)).await;
                assert!(matches!(reply, Ok(Ok(_))));
            }
        }
        Case::Pipelined => {
            let mut in_flight = FuturesUnordered::new();
            let mut next = 0;
            while next < n || !in_flight.is_empty() {
                while next < n && in_flight.len() < IN_FLIGHT {
                    next += 1;
                    in_flight.push(handle.request(request(next as i64)));
                }
                let reply = in_flight.next().await.expect("in flight");
                assert!(matches!(reply, Ok(Ok(_))));
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    handle.shutdown().await.expect("shutdown");
    seconds
}

/// Seconds for `n` typed calls through the client.
async fn through_client(case: Case, n: usize) -> f64 {
    let client = client().await;
    let started = Instant::now();
    match case {
        Case::RoundTrip => {
            for _ in 0..n {
                client
                    .call::<ThreadLoadedList>(ThreadLoadedListParams::new())
                    .await
                    .expect("reply");
            }
        }
        Case::Pipelined => {
            let mut in_flight = FuturesUnordered::new();
            let mut next = 0;
            while next < n || !in_flight.is_empty() {
                while next < n && in_flight.len() < IN_FLIGHT {
                    next += 1;
                    in_flight.push(client.call::<ThreadLoadedList>(ThreadLoadedListParams::new()));
                }
                in_flight.next().await.expect("in flight").expect("reply");
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    client.close().await;
    seconds
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    // `cargo test --benches` runs this without `--bench`; keep that quick.
    let quick = !std::env::args().any(|arg| arg == "--bench");
    let scale = if quick { 100 } else { 1 };
    let runtimes = [
        (
            "current-thread",
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime"),
        ),
        (
            "2 workers",
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime"),
        ),
    ];
    println!(
        "{:<40} {:>14} {:>14} {:>8}",
        "figure (runtime)", "client", "handle", "ratio"
    );
    for (flavor, runtime) in &runtimes {
        for (name, case, n) in [
            ("round trip", Case::RoundTrip, ROUND_TRIPS / scale),
            (
                "pipelined, 64 in flight",
                Case::Pipelined,
                PIPELINED / scale,
            ),
        ] {
            runtime.block_on(direct(case, n));
            runtime.block_on(through_client(case, n));
            let (mut client_runs, mut direct_runs) = (Vec::new(), Vec::new());
            let runs = if quick { 1 } else { RUNS };
            for _ in 0..runs {
                client_runs.push(runtime.block_on(through_client(case, n)));
                direct_runs.push(runtime.block_on(direct(case, n)));
            }
            let (client, direct) = (median(client_runs), median(direct_runs));
            let (shown_client, shown_direct) = match case {
                Case::RoundTrip => (
                    format!("{:.2} us", client / n as f64 * 1e6),
                    format!("{:.2} us", direct / n as f64 * 1e6),
                ),
                Case::Pipelined => (
                    format!("{:.0} k/s", n as f64 / client / 1e3),
                    format!("{:.0} k/s", n as f64 / direct / 1e3),
                ),
            };
            println!(
                "{:<40} {:>14} {:>14} {:>7.2}x",
                format!("{name} ({flavor})"),
                shown_client,
                shown_direct,
                client / direct
            );
        }
    }
}

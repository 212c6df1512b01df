//! `cargo bench -p tandem-client`: round trips through `tandem-client` in-process against the
//! same requests sent straight to `InProcessClientHandle`, in the same run, on a
//! current-thread and a 2-worker runtime. The ratio is the client's overhead: id generation,
//! the timeout, error classification and decoding the typed response.
//!
//! `-- --bench --profile client|handle FIGURE` runs one side of one figure (named as in the
//! first column) once, and nothing else, for a profiler:
//!
//! ```text
//! valgrind --tool=callgrind target/release/deps/client-HASH --bench \
//!     --profile client "pipelined, 64 in flight (current-thread)"
//! ```

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

/// The side of a figure that `--profile` runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Client,
    Handle,
}

/// `--profile SIDE FIGURE`, if given.
fn profile_request() -> Option<(Side, String)> {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|arg| arg == "--profile")?;
    let side = match args.get(at + 1).map(String::as_str) {
        Some("client") => Side::Client,
        Some("handle") => Side::Handle,
        other => panic!("--profile takes `client` or `handle`, got {other:?}"),
    };
    let figure = args
        .get(at + 2)
        .cloned()
        .expect("--profile SIDE takes a figure name, e.g. \"round trip (current-thread)\"");
    Some((side, figure))
}

fn main() {
    // `cargo test --benches` runs this without `--bench`; keep that quick.
    let quick = !std::env::args().any(|arg| arg == "--bench");
    let profile = profile_request();
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
            let figure = format!("{name} ({flavor})");
            if let Some((side, wanted)) = &profile {
                if *wanted == figure {
                    let seconds = match side {
                        Side::Client => runtime.block_on(through_client(case, n)),
                        Side::Handle => runtime.block_on(direct(case, n)),
                    };
                    println!("{figure}: {n} requests in {seconds:.3} s");
                }
                continue;
            }
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
                figure,
                shown_client,
                shown_direct,
                client / direct
            );
        }
    }
}

//! `cargo bench -p tandem-server --bench cassette`: what a cassette costs per turn (issue 33).
//! The same unit as the `turns` bench (`thread/start` plus one `hello` turn, timed until its
//! `turn/completed`, 1 and 16 threads at a time), with the in-memory store so that SQLite's
//! commits (milliseconds, and noisy on a shared machine) do not hide the agent's own path. The
//! OpenAI-compatible agent runs three ways in one run: live against the loopback mock (`tandem_test_support::mock_http`,
//! a four-event Chat Completions stream per request), recording that to a cassette, and
//! replaying the cassette with the provider's URL pointing nowhere. The figures are per-turn
//! times and their ratios to the live baseline of the same run (target: replay no slower than
//! live).
//!
//! Without `--bench` (as under `cargo test --benches`) it runs a handful of turns so it
//! finishes in about a second.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tandem_host::MessageProcessor;
use tandem_host::in_process::{
    self, InProcessClientHandle, InProcessServerEvent, InProcessStartArgs,
};
use tandem_protocol::client_methods::{ThreadStart, TurnStart};
use tandem_protocol::{ClientRequest, RequestId, RequestMethod, ServerNotification};
use tandem_server::store::InMemoryThreadStore;
use tandem_server::{ServerConfig, ServerOptions, TandemServer};
use tandem_test_support::initialize_params;
use tandem_test_support::mock_http::{MockHttpServer, MockResponse};

/// Upper bound for one batch, so a regression fails instead of hanging.
const BATCH_TIMEOUT: Duration = Duration::from_secs(120);

/// Nothing listens here: replay must not need the provider.
const DEAD_URL: &str = "http://127.0.0.1:9/v1";

fn main() {
    let quick = !std::env::args().any(|arg| arg == "--bench");
    let turns_per_run = if quick { 16 } else { 800 };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let mock = runtime.block_on(async {
        let mock = MockHttpServer::start().await.expect("mock provider");
        mock.fallback(
            MockResponse::sse()
                .event(r#"{"choices":[{"index":0,"delta":{"content":"Hello "}}]}"#)
                .event(r#"{"choices":[{"index":0,"delta":{"content":"there"}}]}"#)
                .event(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#)
                .event("[DONE]"),
        );
        mock
    });
    let base_url = mock.url("/v1");
    let cassettes = tempfile::tempdir().expect("cassette dir");
    println!(
        "thread/start + one `hello` turn to turn/completed, in-memory store, OpenAI-compatible agent"
    );
    for concurrency in [1, 16] {
        let cassette = cassettes.path().join(format!("bench-{concurrency}.jsonl"));
        let run = |url: &str, mode: Option<&str>| {
            let home = tempfile::tempdir().expect("temp home");
            let mut config = ServerConfig::builder()
                .tandem_home(home.path())
                .config_override("model_provider", "mock".into())
                .config_override("model_providers.mock.base_url", url.into())
                .config_override("model", "bench".into());
            if let Some(mode) = mode {
                config = config
                    .config_override(
                        "model_providers.mock.cassette",
                        cassette.display().to_string().into(),
                    )
                    .config_override("model_providers.mock.cassette_mode", mode.into());
            }
            let rate = runtime.block_on(turns_per_second(config, concurrency, turns_per_run));
            drop(home);
            1000.0 / rate
        };
        let live = run(&base_url, None);
        let record = run(&base_url, Some("record"));
        let replay = run(DEAD_URL, Some("replay"));
        println!("  {concurrency:>2} concurrent threads (ms per turn, ratio to live):");
        println!("      live (mock):         {live:>8.3} ms   1.00");
        println!(
            "      record (mock):       {record:>8.3} ms   {:.2}",
            record / live
        );
        println!(
            "      replay (offline):    {replay:>8.3} ms   {:.2}",
            replay / live
        );
    }
    drop(mock);
}

fn request<M: RequestMethod<Request = ClientRequest>>(
    id: i64,
    params: serde_json::Value,
) -> ClientRequest {
    M::into_request(
        RequestId::Integer(id),
        serde_json::from_value(params).expect("params"),
    )
}

async fn turns_per_second(
    config: tandem_server::ServerConfigBuilder,
    concurrency: usize,
    total: usize,
) -> f64 {
    let options = ServerOptions::load(config)
        .expect("options")
        .with_store(Arc::new(InMemoryThreadStore::new()));
    let mut args = InProcessStartArgs::new(
        move |outgoing| Arc::new(TandemServer::new(outgoing, options)) as Arc<dyn MessageProcessor>,
        initialize_params(true),
    );
    // Room for every in-flight turn's notifications, so the measurement is the server's work
    // rather than the consumer's drain pattern.
    args.channel_capacity = 1024;
    let mut handle = in_process::start(args).await.expect("host");
    // Warm up: open the database and run one turn outside the timing.
    run_batch(&mut handle, 1, 0).await;
    let began = Instant::now();
    let mut done = 0;
    let mut next_id = 1_000;
    while done < total {
        let batch = concurrency.min(total - done);
        run_batch(&mut handle, batch, next_id).await;
        next_id += 10 * batch as i64;
        done += batch;
    }
    let rate = total as f64 / began.elapsed().as_secs_f64();
    handle.shutdown().await.expect("shutdown");
    rate
}

/// Starts `count` threads with one `hello` turn each, concurrently, and waits for every
/// `turn/completed`.
async fn run_batch(handle: &mut InProcessClientHandle, count: usize, first_id: i64) {
    let sender = handle.sender();
    let mut starts = Vec::new();
    for index in 0..count {
        let sender = sender.clone();
        let id = first_id + 2 * index as i64;
        starts.push(tokio::spawn(async move {
            let reply = sender
                .request(request::<ThreadStart>(id, json!({})))
                .await
                .expect("host")
                .expect("thread/start");
            let thread_id = reply["thread"]["id"].as_str().expect("id").to_owned();
            sender
                .request(request::<TurnStart>(
                    id + 1,
                    json!({"threadId": thread_id, "input": [{"type": "text", "text": "hello"}]}),
                ))
                .await
                .expect("host")
                .expect("turn/start");
            thread_id
        }));
    }
    let mut completed_threads = HashSet::new();
    let mut completed = 0;
    let drain = async {
        while completed < count {
            // turn/completed is guaranteed, so no completion hides behind a `Lagged`.
            if let InProcessServerEvent::ServerNotification(ServerNotification::TurnCompleted(
                done,
            )) = handle.next_event().await.expect("event stream")
            {
                completed_threads.insert(done.thread_id);
                completed += 1;
            }
        }
    };
    tokio::time::timeout(BATCH_TIMEOUT, drain)
        .await
        .expect("batch completes");
    for start in starts {
        let thread_id = start.await.expect("start task");
        assert!(
            completed_threads.contains(&thread_id),
            "turn of {thread_id} completed"
        );
    }
}

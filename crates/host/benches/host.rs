//! `cargo bench -p tandem-host`: the in-process host against a raw model of the same path
//! built from bare tokio channels, on a current-thread and a 2-worker runtime. Prints each
//! figure and its ratio to the baseline measured in the same run.
//!
//! The raw model has the host's hop structure (client -> runtime -> processor -> router ->
//! runtime -> oneshot) and a pending-request map, and nothing else: the difference is the cost
//! of the host's protocol work (handshake gate, lanes, delivery classes, filtering).

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde_json::{Value, json};
use tandem_host::in_process::{self, InProcessClientHandle, InProcessServerEvent};
use tandem_host::{DeliveryPolicy, InProcessClientSender};
use tandem_protocol::{ClientRequest, RequestId, ServerNotification};
use tandem_test_support::TestProcessor;
use tokio::sync::{mpsc, oneshot};

const ROUND_TRIPS: usize = 20_000;
const PIPELINED: usize = 100_000;
const IN_FLIGHT: usize = 64;
const NOTIFICATIONS: u64 = 200_000;
const RUNS: usize = 5;

fn main() {
    // `cargo test --benches` runs this binary with `--bench` absent; keep that fast.
    let quick = !std::env::args().any(|arg| arg == "--bench");
    let scale = if quick { 100 } else { 1 };
    println!(
        "{:<34} {:>14} {:>14} {:>8}",
        "figure (runtime)", "tandem", "raw model", "ratio"
    );
    for (flavor, runtime) in runtimes() {
        let figures = [
            ("round trip", Unit::Latency, Case::RoundTrip),
            ("pipelined, 64 in flight", Unit::Throughput, Case::Pipelined),
            (
                "best-effort notifications",
                Unit::Throughput,
                Case::BestEffort,
            ),
            (
                "guaranteed notifications",
                Unit::Throughput,
                Case::Guaranteed,
            ),
        ];
        for (name, unit, case) in figures {
            let tandem = median(RUNS, || runtime.block_on(tandem_case(case, scale)));
            let raw = median(RUNS, || runtime.block_on(raw_case(case, scale)));
            let ratio = match unit {
                Unit::Latency => tandem / raw,
                Unit::Throughput => raw / tandem,
            };
            println!(
                "{:<34} {:>14} {:>14} {:>7.2}x",
                format!("{name} ({flavor})"),
                unit.show(tandem),
                unit.show(raw),
                ratio
            );
        }
    }
}

#[derive(Clone, Copy)]
enum Case {
    RoundTrip,
    Pipelined,
    BestEffort,
    Guaranteed,
}

#[derive(Clone, Copy)]
enum Unit {
    /// Seconds per operation.
    Latency,
    /// Seconds per operation, shown as operations per second.
    Throughput,
}

impl Unit {
    fn show(self, seconds_per_op: f64) -> String {
        match self {
            Unit::Latency => format!("{:.2} us", seconds_per_op * 1e6),
            Unit::Throughput => format!("{:.0} k/s", 1e-3 / seconds_per_op),
        }
    }
}

fn runtimes() -> Vec<(&'static str, tokio::runtime::Runtime)> {
    let current = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let workers = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    vec![("current-thread", current), ("2 workers", workers)]
}

fn median(runs: usize, mut measure: impl FnMut() -> f64) -> f64 {
    measure(); // warm-up
    let mut samples: Vec<f64> = (0..runs).map(|_| measure()).collect();
    samples.sort_by(f64::total_cmp);
    samples[runs / 2]
}

/// Seconds per operation through the in-process host.
async fn tandem_case(case: Case, scale: usize) -> f64 {
    let processor = TestProcessor::builder()
        .on("noop", |call| async move { call.reply(json!({})).await })
        .on("emit", |call| async move {
            let count = call.params()["count"].as_u64().unwrap();
            let method = call.params()["method"].as_str().unwrap().to_owned();
            let outgoing = call.outgoing.clone();
            let connection = call.context.id.connection_id;
            tokio::spawn(async move {
                for seq in 0..count {
                    let note = ServerNotification::Custom {
                        method: method.clone(),
                        params: Value::from(seq),
                    };
                    outgoing.send_notification(connection, note).await;
                }
                let done = ServerNotification::Custom {
                    method: "bench/done".into(),
                    params: Value::Null,
                };
                outgoing.send_notification(connection, done).await;
            });
            call.reply(json!({})).await;
        });
    let mut args = processor.start_args(false);
    args.delivery_policy = DeliveryPolicy::default()
        .guarantee("bench/guaranteed")
        .guarantee("bench/done");
    let mut handle = in_process::start(args).await.unwrap();
    let seconds = match case {
        Case::RoundTrip => {
            let sender = handle.sender();
            let count = ROUND_TRIPS / scale;
            timed(count, async {
                for id in 0..count {
                    sender.request(noop(id)).await.unwrap().unwrap();
                }
            })
            .await
        }
        Case::Pipelined => {
            let sender = handle.sender();
            let count = PIPELINED / scale;
            timed(count, pipelined(count, move |id| sender.request(noop(id)))).await
        }
        Case::BestEffort | Case::Guaranteed => {
            let method = if matches!(case, Case::BestEffort) {
                "bench/bestEffort"
            } else {
                "bench/guaranteed"
            };
            let count = NOTIFICATIONS / scale as u64;
            let params = json!({"count": count, "method": method});
            let request = ClientRequest::Custom {
                request_id: RequestId::Integer(0),
                method: "emit".into(),
                params,
            };
            timed(count as usize, async {
                handle.request(request).await.unwrap().unwrap();
                drain_until_done(&mut handle).await;
            })
            .await
        }
    };
    handle.shutdown().await.unwrap();
    seconds
}

fn noop(id: usize) -> ClientRequest {
    ClientRequest::Custom {
        request_id: RequestId::Integer(id as i64),
        method: "noop".into(),
        params: json!({}),
    }
}

async fn drain_until_done(handle: &mut InProcessClientHandle) {
    while let Some(event) = handle.next_event().await {
        if let InProcessServerEvent::ServerNotification(note) = event
            && note.method() == "bench/done"
        {
            return;
        }
    }
}

async fn timed(count: usize, work: impl Future<Output = ()>) -> f64 {
    let started = Instant::now();
    work.await;
    started.elapsed().as_secs_f64() / count as f64
}

/// Keeps `IN_FLIGHT` requests outstanding until `count` have completed.
async fn pipelined<F, Fut, T, E>(count: usize, mut send: F)
where
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: std::fmt::Debug,
{
    let mut in_flight = FuturesUnordered::new();
    let mut next = 0;
    while next < count.min(IN_FLIGHT) {
        in_flight.push(send(next));
        next += 1;
    }
    while let Some(result) = in_flight.next().await {
        result.unwrap();
        if next < count {
            in_flight.push(send(next));
            next += 1;
        }
    }
}

// ---- the raw model -------------------------------------------------------------------------

type Reply = oneshot::Sender<Value>;

enum RawOut {
    Response(usize, Value),
    Notification(u64),
}

/// Seconds per operation through bare channels with the host's hop structure.
async fn raw_case(case: Case, scale: usize) -> f64 {
    let capacity = tandem_host::DEFAULT_IN_PROCESS_CHANNEL_CAPACITY;
    let (client_tx, mut client_rx) = mpsc::channel::<(usize, Reply)>(capacity);
    let (processor_tx, mut processor_rx) = mpsc::channel::<usize>(capacity);
    let (router_tx, mut router_rx) = mpsc::channel::<RawOut>(capacity);
    let (writer_tx, mut writer_rx) = mpsc::channel::<RawOut>(capacity);
    let (event_tx, mut event_rx) = mpsc::channel::<u64>(capacity);
    let notify_count = Arc::new(std::sync::atomic::AtomicU64::new(0));

    let runtime = tokio::spawn(async move {
        let mut pending: HashMap<usize, Reply> = HashMap::new();
        loop {
            tokio::select! {
                biased;
                request = client_rx.recv() => match request {
                    Some((id, reply)) => {
                        pending.insert(id, reply);
                        processor_tx.try_send(id).unwrap();
                    }
                    None => break,
                },
                Some(out) = writer_rx.recv() => match out {
                    RawOut::Response(id, value) => {
                        let _ = pending.remove(&id).unwrap().send(value);
                    }
                    RawOut::Notification(seq) => {
                        let _ = event_tx.send(seq).await;
                    }
                },
            }
        }
    });
    let emit = notify_count.clone();
    let processor = tokio::spawn(async move {
        while let Some(id) = processor_rx.recv().await {
            let count = emit.load(std::sync::atomic::Ordering::Relaxed);
            if count > 0 {
                let router = router_tx.clone();
                tokio::spawn(async move {
                    for seq in 0..=count {
                        let _ = router.send(RawOut::Notification(seq)).await;
                    }
                });
            }
            let _ = router_tx.send(RawOut::Response(id, json!({}))).await;
        }
    });
    let router = tokio::spawn(async move {
        while let Some(out) = router_rx.recv().await {
            if writer_tx.send(out).await.is_err() {
                break;
            }
        }
    });
    let client = RawClient(client_tx);

    let seconds = match case {
        Case::RoundTrip => {
            let count = ROUND_TRIPS / scale;
            timed(count, async {
                for id in 0..count {
                    client.request(id).await.unwrap();
                }
            })
            .await
        }
        Case::Pipelined => {
            let count = PIPELINED / scale;
            let sender = client.clone();
            timed(count, pipelined(count, move |id| sender.request(id))).await
        }
        Case::BestEffort | Case::Guaranteed => {
            let count = NOTIFICATIONS / scale as u64;
            notify_count.store(count, std::sync::atomic::Ordering::Relaxed);
            timed(count as usize, async {
                client.request(0).await.unwrap();
                while let Some(seq) = event_rx.recv().await {
                    if seq == count {
                        break;
                    }
                }
            })
            .await
        }
    };
    drop(client);
    drop(event_rx);
    let _ = runtime.await;
    processor.abort();
    router.abort();
    seconds
}

#[derive(Clone)]
struct RawClient(mpsc::Sender<(usize, Reply)>);

impl RawClient {
    fn request(
        &self,
        id: usize,
    ) -> impl Future<Output = Result<Value, oneshot::error::RecvError>> + use<> {
        let (reply, answer) = oneshot::channel();
        let sent = self.0.try_send((id, reply));
        async move {
            sent.expect("raw client queue has room");
            answer.await
        }
    }
}

#[allow(dead_code)]
fn assert_sender_is_clone(sender: InProcessClientSender) -> InProcessClientSender {
    sender.clone()
}

#[allow(dead_code)]
const _: Duration = Duration::ZERO;

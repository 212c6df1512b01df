//! `cargo bench -p tandem-server`: process output through the in-process host, against reading
//! the same child's pipe directly, in one run; and the host's memory while a consumer stalls.
//!
//! Throughput: a child writes N bytes (`head -c N /dev/zero`, no cap, no timeout). The host
//! side is the whole path a client sees (pipe read, one guaranteed delta per stream in flight
//! through the router and the event queue) to a consumer that drains events and counts the
//! bytes they carry. The baseline reads the same command's pipe directly in 64 KiB reads. A
//! second reference row also base64-encodes each read: the baseline of the days when the
//! in-process deltas were base64 strings, kept to compare with the old figures.
//!
//! Memory: a child writes 1 GiB while nobody reads events for 10 s; the peak resident set of
//! this process (the host and its pumps) is sampled against its idle resident set.
//!
//! Without `--bench` (as under `cargo test --benches`) the sizes shrink so it finishes in a
//! second or two.

use std::collections::BTreeMap;
use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use tandem_host::MessageProcessor;
use tandem_host::in_process::{
    self, InProcessClientHandle, InProcessServerEvent, InProcessStartArgs,
};
use tandem_protocol::{
    ClientRequest, ProcessKillParams, ProcessSpawnParams, RequestId, ServerNotification,
};
use tandem_server::{ServerOptions, TandemServer};
use tandem_test_support::initialize_params;

const MIB: u64 = 1024 * 1024;
const READ_BYTES: usize = 64 * 1024;
/// Runs of each side of the throughput figure; the median is reported.
const RUNS: usize = 9;

struct Scale {
    stream_bytes: u64,
    stall_bytes: u64,
    stall_for: Duration,
    runs: usize,
}

fn main() {
    let quick = !std::env::args().any(|arg| arg == "--bench");
    let scale = if quick {
        Scale {
            stream_bytes: 4 * MIB,
            stall_bytes: 16 * MIB,
            stall_for: Duration::from_millis(200),
            runs: 1,
        }
    } else {
        Scale {
            stream_bytes: 256 * MIB,
            stall_bytes: 1024 * MIB,
            stall_for: Duration::from_secs(10),
            runs: RUNS,
        }
    };
    // Two workers: the machine the figures are for has two cores.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");

    // `cargo bench -p tandem-server -- rss` (or `throughput`) runs only that figure; `host`
    // runs only the host side of the throughput figure, for profiling.
    let filter = std::env::args()
        .skip(1)
        .find(|arg| !arg.starts_with("--"))
        .unwrap_or_default();
    match filter.as_str() {
        "" => {
            report_rss(&runtime, &scale);
            report_throughput(&runtime, &scale);
        }
        "rss" => report_rss(&runtime, &scale),
        "throughput" => report_throughput(&runtime, &scale),
        "host" => {
            let command = child_command(scale.stream_bytes);
            for _ in 0..scale.runs {
                let seconds = host_run(&runtime, &command, scale.stream_bytes);
                println!(
                    "host: {:.0} MB/s",
                    scale.stream_bytes as f64 / seconds / 1e6
                );
            }
        }
        other => panic!("unknown figure {other:?}: use rss, throughput or host"),
    }
}

/// The child of the throughput figure, for both sides.
fn child_command(bytes: u64) -> [String; 4] {
    [
        "head".to_owned(),
        "-c".to_owned(),
        bytes.to_string(),
        "/dev/zero".to_owned(),
    ]
}

/// Memory first (when both run), before the throughput runs have grown the allocator's pools.
fn report_rss(runtime: &tokio::runtime::Runtime, scale: &Scale) {
    let memory = runtime.block_on(stalled_consumer_rss(scale));
    println!(
        "stalled consumer, child writes {} MiB, nobody reads for {:?}:",
        scale.stall_bytes / MIB,
        scale.stall_for
    );
    println!(
        "  idle RSS {:.1} MiB, peak RSS {:.1} MiB, growth {:.1} MiB (bound: 64 MiB)",
        mib(memory.idle),
        mib(memory.peak),
        mib(memory.peak.saturating_sub(memory.idle))
    );
    assert!(
        memory.peak.saturating_sub(memory.idle) <= 64 * MIB,
        "the host grew by more than 64 MiB while the consumer stalled"
    );
}

fn report_throughput(runtime: &tokio::runtime::Runtime, scale: &Scale) {
    let command = child_command(scale.stream_bytes);
    let (mut host, mut encoded, mut raw) = (Vec::new(), Vec::new(), Vec::new());
    // Warm-up of both sides, then alternate so drift in the machine hits both alike.
    host_run(runtime, &command, scale.stream_bytes);
    direct_read(&command, scale.stream_bytes, true);
    for _ in 0..scale.runs {
        raw.push(direct_read(&command, scale.stream_bytes, false));
        encoded.push(direct_read(&command, scale.stream_bytes, true));
        host.push(host_run(runtime, &command, scale.stream_bytes));
    }
    let rate = |seconds: f64| scale.stream_bytes as f64 / seconds / 1e6;
    let (host, encoded, raw) = (rate(median(host)), rate(median(encoded)), rate(median(raw)));
    println!(
        "{} MiB of child output, median of {} runs:",
        scale.stream_bytes / MIB,
        scale.runs
    );
    println!("  {:<44} {:>9.0} MB/s", "direct pipe read (baseline)", raw);
    println!(
        "  {:<44} {:>9.0} MB/s",
        "direct pipe read + base64 (old baseline)", encoded
    );
    println!("  {:<44} {:>9.0} MB/s", "through the in-process host", host);
    println!(
        "  ratio host / baseline: {:.2}x (target: at least 0.80x)",
        host / raw
    );
    println!("  ratio host / old baseline: {:.2}x", host / encoded);
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / MIB as f64
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// Seconds for reading the command's whole stdout directly, base64-encoding each read if
/// `encode`, as the server's pump does.
fn direct_read(command: &[String], expected: u64, encode: bool) -> f64 {
    let began = Instant::now();
    let mut child = Command::new(&command[0])
        .args(&command[1..])
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn child");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut buf = vec![0u8; READ_BYTES];
    let (mut total, mut encoded) = (0u64, 0usize);
    loop {
        let n = stdout.read(&mut buf).expect("read");
        if n == 0 {
            break;
        }
        total += n as u64;
        if encode {
            // A fresh string per read, as each delta carries its own.
            encoded += std::hint::black_box(BASE64.encode(&buf[..n])).len();
        }
    }
    child.wait().expect("wait");
    let seconds = began.elapsed().as_secs_f64();
    assert_eq!(total, expected);
    assert!(!encode || encoded >= total as usize);
    seconds
}

fn start_args() -> InProcessStartArgs {
    let home = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("tandem-bench-{}", std::process::id()));
    let options = ServerOptions::new(home).expect("home");
    InProcessStartArgs::new(
        move |outgoing| Arc::new(TandemServer::new(outgoing, options)) as Arc<dyn MessageProcessor>,
        initialize_params(true),
    )
}

fn spawn_request(handle: &str, command: &[String]) -> ClientRequest {
    ClientRequest::ProcessSpawn {
        request_id: RequestId::String(format!("spawn-{handle}")),
        params: ProcessSpawnParams {
            process_handle: handle.to_owned(),
            command: command.to_vec(),
            cwd: Some(std::env::temp_dir().to_string_lossy().into_owned()),
            stream_stdout_stderr: Some(true),
            output_bytes_cap: Some(None),
            timeout_ms: Some(None),
            env: Some(BTreeMap::new()),
            ..Default::default()
        },
    }
}

/// Reads events until `process/exited`, returning the stdout bytes the deltas carried.
async fn drain(handle: &mut InProcessClientHandle) -> u64 {
    let mut total = 0;
    loop {
        match handle.next_event().await.expect("host running") {
            InProcessServerEvent::ServerNotification(ServerNotification::ProcessOutputDelta(
                delta,
            )) => total += delta.delta.len() as u64,
            InProcessServerEvent::ServerNotification(ServerNotification::ProcessExited(exited)) => {
                assert_eq!(exited.exit_code, 0);
                return total;
            }
            other => panic!("unexpected event {other:?}"),
        }
    }
}

/// [`through_host`] with the consumer as a task on the runtime's workers, as in a Tokio
/// application, rather than on the thread that blocks on the runtime.
fn host_run(runtime: &tokio::runtime::Runtime, command: &[String; 4], expected: u64) -> f64 {
    let command = command.clone();
    runtime
        .block_on(runtime.spawn(async move { through_host(&command, expected).await }))
        .expect("host run")
}

/// Seconds from `process/spawn` to `process/exited` with a consumer draining every event.
async fn through_host(command: &[String], expected: u64) -> f64 {
    let mut handle = in_process::start(start_args()).await.expect("host");
    let began = Instant::now();
    let reply = handle.request(spawn_request("bench", command)).await;
    assert!(matches!(reply, Ok(Ok(_))), "spawn: {reply:?}");
    let total = drain(&mut handle).await;
    let seconds = began.elapsed().as_secs_f64();
    assert_eq!(total, expected);
    handle.shutdown().await.expect("shutdown");
    seconds
}

struct Memory {
    idle: u64,
    peak: u64,
}

/// This process's resident set size in bytes, from `/proc/self/status`.
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .expect("VmRSS")
        * 1024
}

/// Idle RSS with a host running, and the peak while a child writes `stall_bytes` that nobody
/// reads for `stall_for`.
async fn stalled_consumer_rss(scale: &Scale) -> Memory {
    let mut handle = in_process::start(start_args()).await.expect("host");
    // Let the runtime's threads and the host's queues settle before the idle figure.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let idle = rss();

    let peak = Arc::new(AtomicU64::new(idle));
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (peak, sampling) = (Arc::clone(&peak), Arc::clone(&sampling));
        std::thread::spawn(move || {
            while sampling.load(Ordering::Relaxed) {
                peak.fetch_max(rss(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    let command = child_command(scale.stall_bytes);
    let reply = handle.request(spawn_request("stall", &command)).await;
    assert!(matches!(reply, Ok(Ok(_))), "spawn: {reply:?}");
    // Nobody reads events meanwhile: the child must end up blocked on its pipe.
    tokio::time::sleep(scale.stall_for).await;
    sampling.store(false, Ordering::Relaxed);
    sampler.join().expect("sampler");

    let kill = ClientRequest::ProcessKill {
        request_id: RequestId::String("kill".into()),
        params: ProcessKillParams {
            process_handle: "stall".into(),
        },
    };
    let reply = handle.request(kill).await;
    assert!(matches!(reply, Ok(Ok(_))), "kill: {reply:?}");
    handle.shutdown().await.expect("shutdown");
    Memory {
        idle,
        peak: peak.load(Ordering::Relaxed),
    }
}

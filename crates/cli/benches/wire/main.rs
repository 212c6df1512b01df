//! `cargo bench -p tandem-cli --bench wire [-- --server 'CMD ARGS...']...` (what
//! `cargo xtask bench wire` runs): app-servers driven over the wire, side by side with Tandem's
//! in-process host, in one run.
//!
//! Targets, each measured on a fresh server with an empty home in every run:
//! - Tandem in-process: typed requests through an `InProcessClientHandle` to a `TandemServer`;
//! - Tandem over stdio: this package's `tandem app-server --listen stdio://`;
//! - Tandem over websocket: `tandem app-server --listen ws://127.0.0.1:0`, the port read from
//!   its `listening on: ws://ADDR` line;
//! - Tandem over a unix socket: `tandem app-server --listen unix://PATH` (the websocket protocol
//!   on a socket in a private temporary directory; issue 32: each figure at least 0.9x stdio's);
//! - every `--server` command line (split on whitespace), driven over its stdin/stdout with
//!   `TANDEM_HOME` and `CODEX_HOME` set to a fresh empty directory. That is how another
//!   app-server (the one Tandem's protocol copies) is measured beside Tandem.
//!
//! Figures (see [`figures`]): sequential round trips of `thread/loaded/list`, the same request
//! with 64 in flight, streamed `process/spawn` output of `head -c 268435456 /dev/zero`, and
//! sequential ephemeral `thread/start`s, each until its reply and `thread/started` arrived
//! (a reply followed by a notification: websocket must stay within 2x of stdio; Tandem's
//! targets only).
//! Runs go round every target in turn, after one warm-up round; medians are reported with the
//! target ratios computed from them.
//!
//! The in-process output figure has a floor of its own (issue 31), `pipe read floor`: the same
//! child's pipe read by a plain loop in this process, in the same run
//! ([`figures::measure_pipe_floor`]).
//!
//! Floors (see [`floor`]): the bench binary itself, re-run as an echo server on the same codec
//! and transports with nothing behind them, over stdio, websocket and a unix socket; every Tandem wire figure
//! is also shown as a ratio to its floor.
//!
//! Memory (see [`memory`], `--memory`, issue 27): the growth of the server's peak resident
//! size for one turn of a text input of N bytes (8, 16 and 48 MiB, and three turns of 8 MiB),
//! over websocket and stdio, against the bound 4 N + 32 MiB. With `--memory` only this figure is measured, once
//! per run, and every run is reported.
//!
//! History (see [`history`], `--history`, issue 31): a cold paged `thread/resume` and history
//! pages over stdio at 10, 2 000 and 100 000 turns, on SQLite and PostgreSQL, each as a ratio
//! to its 10-turn figure (target 1.5x). With `--history` only these are measured.
//!
//! Without `--bench` (as under `cargo test --benches`) the sizes shrink and one round runs, so
//! it finishes in a second or two; the memory figure then runs once at 1 MiB.

use std::process::ExitCode;

mod client;
mod figures;
mod floor;
mod history;
mod memory;

use client::WireClient;
use figures::{Figures, IN_FLIGHT, Sizes, measure_in_process, measure_pipe_floor, measure_wire};
use memory::{MemoryCase, MemoryFigure};

pub(crate) const MIB: u64 = 1024 * 1024;
/// Measured rounds in a full run; the median is reported.
const RUNS: usize = 5;

const FULL: Sizes = Sizes {
    sequential: 10_000,
    pipelined: 50_000,
    output_bytes: 256 * MIB,
    warm_up: 1_000,
    notified: 500,
};

const QUICK: Sizes = Sizes {
    sequential: 50,
    pipelined: 500,
    output_bytes: MIB,
    warm_up: 10,
    notified: 20,
};

/// Targets of issue 8; each ratio is computed from the same run's medians.
const IN_PROCESS_OVER_STDIO_ROUND_TRIP: f64 = 5.0;
const STDIO_OVER_OTHER_PIPELINED: f64 = 2.0;
const STDIO_OVER_OTHER_OUTPUT: f64 = 100.0;
/// Issue 13: a reply followed by a notification over websocket, at most this many times the
/// stdio time.
const WEBSOCKET_OVER_STDIO_NOTIFIED_AT_MOST: f64 = 2.0;
/// Issue 16: a wire round trip within this many times its floor's.
const ROUND_TRIP_OVER_FLOOR_AT_MOST: f64 = 2.0;
/// Issue 16: websocket throughput and output at least this share of stdio's.
const WEBSOCKET_OVER_STDIO: f64 = 0.9;
/// Issue 32: a unix socket's round trip, throughput and output at least this share of stdio's.
const UNIX_OVER_STDIO: f64 = 0.9;
/// Issue 31: process output in-process at least this share of its pipe read floor's.
const IN_PROCESS_OVER_PIPE_FLOOR: f64 = 0.8;
/// Issue 16: process output over stdio at least this share of the in-process figure...
const STDIO_OVER_IN_PROCESS_OUTPUT: f64 = 0.5;
/// ...and at least this many times the other server's.
const STDIO_OVER_OTHER_OUTPUT_16: f64 = 2.0;

#[derive(Debug, Clone)]
enum Target {
    InProcess,
    /// The in-process output figure's floor: the child's pipe read in this process.
    PipeFloor,
    Stdio(Vec<String>),
    WebSocket(Vec<String>),
}

struct Row {
    label: String,
    target: Target,
    samples: Vec<Figures>,
}

struct Options {
    full: bool,
    /// Measure the memory figure only.
    memory: bool,
    /// Measure the history figures only (issue 31).
    history: bool,
    /// The `tandem` binary to measure instead of this package's (e.g. an older build).
    tandem: Option<String>,
    /// Measure only the targets whose label contains one of these (for profiling one of
    /// them, or a target with its floor).
    only: Vec<String>,
    /// With `--history`: measure PostgreSQL right after the bulk fill, before its statistics
    /// are gathered (what the figures were before they were gathered first).
    fresh_stats: bool,
    runs: usize,
    output_bytes: Option<u64>,
    /// Worker threads of the runtime the in-process host and the clients run on.
    workers: usize,
    servers: Vec<Vec<String>>,
}

fn usage() -> &'static str {
    "usage: wire [--bench] [--memory] [--history [--fresh-stats]] [--tandem PATH] [--runs N] [--output-mib N] [--workers N] [--only TEXT]... [--server 'CMD ARGS...']...\n  \
     --memory  measure only the server's memory growth for one large turn (issue 27)\n  \
     --history measure only a cold paged resume and history pages at 10, 2 000 and 100 000 \
     turns, SQLite and PostgreSQL (issue 31)\n  \
     --fresh-stats  with --history: measure PostgreSQL right after the bulk fill, without \
     VACUUM ANALYZE first (autovacuum then runs during the samples)\n  \
     --tandem  the tandem binary to measure instead of this package's (e.g. an older build)\n  \
     --server  another app-server command line, served on stdin/stdout (repeatable; split on \
     whitespace)\n  \
     --only    measure only the targets whose label contains TEXT, e.g. `tandem stdio` \
     (repeatable: any of them)\n  \
     --runs    measured rounds (default 5 with --bench, else 1)\n  \
     --output-mib  bytes the child writes in the output figure (default 256 with --bench, else 1)\n  \
     --workers  worker threads of the bench's runtime, where the in-process host runs (default 2, \
     the machine's cores)"
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        full: false,
        memory: false,
        history: false,
        tandem: None,
        only: Vec::new(),
        fresh_stats: false,
        runs: 0,
        output_bytes: None,
        workers: 2,
        servers: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .ok_or_else(|| format!("{name} needs a value\n{}", usage()))
        };
        match arg.as_str() {
            "--bench" => options.full = true,
            "--memory" => options.memory = true,
            "--history" => options.history = true,
            "--fresh-stats" => options.fresh_stats = true,
            "--tandem" => options.tandem = Some(value("--tandem")?),
            "--server" => {
                let argv: Vec<String> = value("--server")?
                    .split_whitespace()
                    .map(str::to_owned)
                    .collect();
                if argv.is_empty() {
                    return Err(format!("--server needs a command line\n{}", usage()));
                }
                options.servers.push(argv);
            }
            "--only" => options.only.push(value("--only")?),
            "--runs" => options.runs = positive(&value("--runs")?, "--runs")?,
            "--output-mib" => {
                let mib: u64 = positive(&value("--output-mib")?, "--output-mib")?;
                options.output_bytes = Some(mib * MIB);
            }
            "--workers" => options.workers = positive(&value("--workers")?, "--workers")?,
            "--help" | "-h" => return Err(usage().to_owned()),
            // The test harness's own flags (`cargo test --benches -- --nocapture`).
            other if other.starts_with("--") => {}
            other => return Err(format!("unexpected argument {other:?}\n{}", usage())),
        }
    }
    if options.runs == 0 {
        options.runs = if options.full && !options.memory {
            RUNS
        } else {
            1
        };
    }
    Ok(options)
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() == Some(floor::FLOOR_SERVER_FLAG) {
        let listen = args.next().unwrap_or_else(|| "stdio://".to_owned());
        return match floor::serve(&listen) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("wire bench floor server: {error}");
                ExitCode::FAILURE
            }
        };
    }
    let options = match parse_options() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    let mut sizes = if options.full { FULL } else { QUICK };
    if let Some(bytes) = options.output_bytes {
        sizes.output_bytes = bytes;
    }
    let tandem = options
        .tandem
        .clone()
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_tandem").to_owned());
    let tandem_at = |listen: &str| {
        vec![
            tandem.clone(),
            "app-server".to_owned(),
            "--listen".to_owned(),
            listen.to_owned(),
        ]
    };
    let floor_at = |listen: &str| {
        let me = std::env::current_exe().expect("the bench binary knows its path");
        vec![
            me.to_string_lossy().into_owned(),
            floor::FLOOR_SERVER_FLAG.to_owned(),
            listen.to_owned(),
        ]
    };
    // The unix sockets live in a private directory of this run, removed at the end.
    let sockets = tempfile::Builder::new()
        .prefix("tandem-wire-")
        .tempdir()
        .expect("a temporary directory for the sockets");
    let unix_at = |name: &str| format!("unix://{}", sockets.path().join(name).display());
    let mut rows = vec![
        row(FLOOR_STDIO, Target::Stdio(floor_at("stdio://"))),
        row(
            FLOOR_WEBSOCKET,
            Target::WebSocket(floor_at("ws://127.0.0.1:0")),
        ),
        row(PIPE_FLOOR, Target::PipeFloor),
        row(IN_PROCESS, Target::InProcess),
        row(TANDEM_STDIO, Target::Stdio(tandem_at("stdio://"))),
        row(
            TANDEM_WEBSOCKET,
            Target::WebSocket(tandem_at("ws://127.0.0.1:0")),
        ),
        row(
            FLOOR_UNIX,
            Target::WebSocket(floor_at(&unix_at("floor.sock"))),
        ),
        row(
            TANDEM_UNIX,
            Target::WebSocket(tandem_at(&unix_at("tandem.sock"))),
        ),
    ];
    for (n, argv) in options.servers.iter().enumerate() {
        rows.push(row(&other_label(n), Target::Stdio(argv.clone())));
    }
    if !options.only.is_empty() {
        rows.retain(|row| {
            options
                .only
                .iter()
                .any(|only| row.label.contains(only.as_str()))
        });
        if rows.is_empty() {
            eprintln!(
                "wire bench: no target's label contains any of {:?}",
                options.only
            );
            return ExitCode::from(2);
        }
    }

    // Two workers by default: the machine the figures are for has two cores. Every measurement
    // runs as a task on them, as in a Tokio application.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(options.workers)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let memory_cases = memory::memory_cases(options.full);
    if options.history {
        return match runtime.block_on(history::run(&tandem, options.full, !options.fresh_stats)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("wire bench: history: {error}");
                ExitCode::FAILURE
            }
        };
    }
    if options.memory {
        return match measure_memory(&runtime, &tandem, &memory_cases, options.runs) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("wire bench: memory: {error}");
                ExitCode::FAILURE
            }
        };
    }
    // A warm-up round first (page cache, binaries, allocator), unless this is the quick mode.
    let rounds = options.runs + usize::from(options.full);
    for round in 0..rounds {
        let warm_up = options.full && round == 0;
        for row in &mut rows {
            let target = row.target.clone();
            // Tandem's targets only: a floor has no threads to start, and another server's
            // `thread/start` may write a session to disk (the reference takes about 0.6 s,
            // which would make a full run last half an hour); issue 13's figure compares
            // Tandem's websocket with its stdio.
            let notified = matches!(
                row.label.as_str(),
                IN_PROCESS | TANDEM_STDIO | TANDEM_WEBSOCKET | TANDEM_UNIX
            );
            let measured = runtime
                .block_on(runtime.spawn(measure(target, sizes, notified)))
                .expect("a measurement does not panic");
            let figures = match measured {
                Ok(figures) => figures,
                Err(error) => {
                    eprintln!("wire bench: {}: {error}", row.label);
                    return ExitCode::FAILURE;
                }
            };
            eprintln!(
                "{} {}: {}",
                if warm_up {
                    "warm-up".to_owned()
                } else {
                    format!(
                        "run {}/{}",
                        round + 1 - usize::from(options.full),
                        options.runs
                    )
                },
                row.label,
                show(&figures)
            );
            if !warm_up {
                row.samples.push(figures);
            }
        }
    }
    report(&rows, &options, sizes);
    // The quick mode exercises the memory figure too, so that `cargo test --benches` runs it.
    if !options.full
        && options.only.is_empty()
        && let Err(error) = measure_memory(&runtime, &tandem, &memory_cases, options.runs)
    {
        eprintln!("wire bench: memory: {error}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// Runs every memory case `runs` times, each on a fresh server, and prints every run.
fn measure_memory(
    runtime: &tokio::runtime::Runtime,
    tandem: &str,
    cases: &[MemoryCase],
    runs: usize,
) -> Result<(), String> {
    println!(
        "memory: growth of the server's peak RSS (VmHWM - VmRSS before) for turns of one text \
         input of N bytes, read at once by the client; the server's default writer budget"
    );
    println!(
        "{:<5} {:<24} {:>10} {:>10} {:>10} {:>10} {:>9} {:>18}",
        "run", "turns x N", "baseline", "peak", "after", "growth", "growth/N", "bound 4N + 32 MiB"
    );
    for run in 1..=runs {
        for &case in cases {
            let argv = memory::server_argv(tandem, case);
            let figure: MemoryFigure = runtime
                .block_on(runtime.spawn(async move { memory::measure_memory(&argv, case).await }))
                .expect("a measurement does not panic")
                .map_err(|error| format!("{}: {error}", case.label()))?;
            let growth = figure.growth();
            let bound = case.bound().map_or_else(
                || "-".to_owned(),
                |bound| {
                    format!(
                        "{:.1} MiB {}",
                        mib(bound),
                        if growth <= bound { "met" } else { "MISSED" }
                    )
                },
            );
            println!(
                "{run:<5} {:<24} {:>6.1} MiB {:>6.1} MiB {:>6.1} MiB {:>6.1} MiB {:>9.2} {bound:>18}",
                case.label(),
                mib(figure.baseline),
                mib(figure.peak),
                mib(figure.after),
                mib(growth),
                growth as f64 / case.input_bytes as f64,
            );
        }
    }
    Ok(())
}

/// `text` as a positive integer, or why `flag` refuses it.
fn positive<N: std::str::FromStr + PartialOrd + Default>(
    text: &str,
    flag: &str,
) -> Result<N, String> {
    text.parse()
        .ok()
        .filter(|number| *number > N::default())
        .ok_or_else(|| format!("{flag} takes a positive integer\n{}", usage()))
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / MIB as f64
}

const IN_PROCESS: &str = "tandem in-process";
const PIPE_FLOOR: &str = "pipe read floor";
const TANDEM_STDIO: &str = "tandem stdio";
const TANDEM_WEBSOCKET: &str = "tandem websocket";
const FLOOR_STDIO: &str = "floor stdio";
const FLOOR_WEBSOCKET: &str = "floor websocket";
const TANDEM_UNIX: &str = "tandem unix socket";
const FLOOR_UNIX: &str = "floor unix socket";

/// The label of the `n`th (from 0) `--server`.
fn other_label(n: usize) -> String {
    format!("[{}] stdio", n + 1)
}

fn row(label: &str, target: Target) -> Row {
    Row {
        label: label.to_owned(),
        target,
        samples: Vec::new(),
    }
}

async fn measure(target: Target, sizes: Sizes, notified: bool) -> Result<Figures, String> {
    let client = match target {
        Target::InProcess => return measure_in_process(sizes).await,
        Target::PipeFloor => return measure_pipe_floor(sizes).await,
        Target::Stdio(argv) => WireClient::stdio(&argv).await,
        Target::WebSocket(argv) => WireClient::websocket(&argv).await,
    };
    let mut client = client.map_err(|error| error.to_string())?;
    let figures = measure_wire(&mut client, sizes, notified).await;
    client.close().await;
    figures.map_err(|error| error.to_string())
}

fn show(figures: &Figures) -> String {
    format!(
        "{:.2} us/round trip, {:.1} k requests/s, {:.1} MB/s, {:.2} us/notified round trip",
        figures.round_trip * 1e6,
        figures.pipelined / 1e3,
        figures.output / 1e6,
        figures.notified_round_trip * 1e6
    )
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn medians(row: &Row) -> Figures {
    let pick = |field: fn(&Figures) -> f64| median(row.samples.iter().map(field).collect());
    Figures {
        round_trip: pick(|figures| figures.round_trip),
        pipelined: pick(|figures| figures.pipelined),
        output: pick(|figures| figures.output),
        notified_round_trip: pick(|figures| figures.notified_round_trip),
    }
}

fn report(rows: &[Row], options: &Options, sizes: Sizes) {
    println!(
        "wire benchmark, median of {} run(s): {} sequential round trips of thread/loaded/list, \
         {} with {IN_FLIGHT} in flight, {} MiB of streamed process output, {} ephemeral \
         thread/start until reply and thread/started (notified)",
        options.runs,
        sizes.sequential,
        sizes.pipelined,
        sizes.output_bytes / MIB,
        sizes.notified
    );
    for (n, argv) in options.servers.iter().enumerate() {
        println!("  [{}] {}", n + 1, argv.join(" "));
    }
    println!(
        "{:<20} {:>16} {:>18} {:>16} {:>16}",
        "target", "round trip", "64 in flight", "process output", "notified"
    );
    let medians: Vec<Figures> = rows.iter().map(medians).collect();
    for (row, figures) in rows.iter().zip(&medians) {
        println!(
            "{:<20} {:>13.2} us {:>14.1} k/s {:>11.1} MB/s {:>13.2} us",
            row.label,
            figures.round_trip * 1e6,
            figures.pipelined / 1e3,
            figures.output / 1e6,
            figures.notified_round_trip * 1e6
        );
    }
    let find = |label: &str| {
        rows.iter()
            .zip(&medians)
            .find_map(|(row, figures)| (row.label == label).then_some(*figures))
    };
    println!("ratios:");
    let (in_process, stdio, websocket) =
        (find(IN_PROCESS), find(TANDEM_STDIO), find(TANDEM_WEBSOCKET));
    if let (Some(in_process), Some(stdio)) = (in_process, stdio) {
        ratio(
            "round trip, in-process vs tandem stdio (times faster)",
            stdio.round_trip / in_process.round_trip,
            Some(IN_PROCESS_OVER_STDIO_ROUND_TRIP),
        );
    }
    if let (Some(websocket), Some(stdio)) = (websocket, stdio) {
        ratio(
            "round trip, websocket vs stdio (times faster)",
            stdio.round_trip / websocket.round_trip,
            None,
        );
        let notified = websocket.notified_round_trip / stdio.notified_round_trip;
        println!(
            "  {:<56} {notified:>8.2}x (target <= {WEBSOCKET_OVER_STDIO_NOTIFIED_AT_MOST}x: {})",
            "notified round trip, websocket / stdio (time)",
            if notified <= WEBSOCKET_OVER_STDIO_NOTIFIED_AT_MOST {
                "met"
            } else {
                "MISSED"
            }
        );
    }
    for (label, floor_label) in [
        (TANDEM_STDIO, FLOOR_STDIO),
        (TANDEM_WEBSOCKET, FLOOR_WEBSOCKET),
        (TANDEM_UNIX, FLOOR_UNIX),
    ] {
        let (Some(tandem), Some(floor)) = (find(label), find(floor_label)) else {
            continue;
        };
        let round_trip = tandem.round_trip / floor.round_trip;
        println!(
            "  {:<56} {round_trip:>8.2}x (target <= {ROUND_TRIP_OVER_FLOOR_AT_MOST}x: {})",
            format!("round trip, {label} / {floor_label} (time)"),
            if round_trip <= ROUND_TRIP_OVER_FLOOR_AT_MOST {
                "met"
            } else {
                "MISSED"
            }
        );
        ratio(
            &format!("64 in flight, {label} / {floor_label}"),
            tandem.pipelined / floor.pipelined,
            None,
        );
        ratio(
            &format!("process output, {label} / {floor_label}"),
            tandem.output / floor.output,
            None,
        );
    }
    if let (Some(websocket), Some(stdio)) = (websocket, stdio) {
        ratio(
            "64 in flight, websocket / stdio",
            websocket.pipelined / stdio.pipelined,
            Some(WEBSOCKET_OVER_STDIO),
        );
        ratio(
            "process output, websocket / stdio",
            websocket.output / stdio.output,
            Some(WEBSOCKET_OVER_STDIO),
        );
    }
    if let (Some(unix), Some(stdio)) = (find(TANDEM_UNIX), stdio) {
        ratio(
            "round trip, unix socket vs stdio (times faster)",
            stdio.round_trip / unix.round_trip,
            Some(UNIX_OVER_STDIO),
        );
        ratio(
            "64 in flight, unix socket / stdio",
            unix.pipelined / stdio.pipelined,
            Some(UNIX_OVER_STDIO),
        );
        ratio(
            "process output, unix socket / stdio",
            unix.output / stdio.output,
            Some(UNIX_OVER_STDIO),
        );
    }
    if let (Some(in_process), Some(floor)) = (in_process, find(PIPE_FLOOR)) {
        ratio(
            "process output, tandem in-process / pipe read floor",
            in_process.output / floor.output,
            Some(IN_PROCESS_OVER_PIPE_FLOOR),
        );
    }
    if let (Some(in_process), Some(stdio)) = (in_process, stdio) {
        ratio(
            "process output, tandem stdio / in-process",
            stdio.output / in_process.output,
            Some(STDIO_OVER_IN_PROCESS_OUTPUT),
        );
    }
    for n in 0..options.servers.len() {
        let (Some(stdio), Some(other)) = (stdio, find(&other_label(n))) else {
            continue;
        };
        let n = n + 1;
        ratio(
            &format!("round trip, tandem stdio vs [{n}] (times faster)"),
            other.round_trip / stdio.round_trip,
            None,
        );
        ratio(
            &format!("64 in flight, tandem stdio / [{n}]"),
            stdio.pipelined / other.pipelined,
            Some(STDIO_OVER_OTHER_PIPELINED),
        );
        ratio(
            &format!("process output, tandem stdio / [{n}] (issue 8)"),
            stdio.output / other.output,
            Some(STDIO_OVER_OTHER_OUTPUT),
        );
        ratio(
            &format!("process output, tandem stdio / [{n}] (issue 16)"),
            stdio.output / other.output,
            Some(STDIO_OVER_OTHER_OUTPUT_16),
        );
    }
}

fn ratio(what: &str, value: f64, target: Option<f64>) {
    match target {
        Some(target) => println!(
            "  {what:<56} {value:>8.2}x (target >= {target}x: {})",
            if value >= target { "met" } else { "MISSED" }
        ),
        None => println!("  {what:<56} {value:>8.2}x"),
    }
}

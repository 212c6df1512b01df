//! `cargo xtask bench exec [--tandem PATH]`: 1 GiB through `tandem exec` against the same
//! command relayed by `dd`, and piped straight, all into the same reader, in one run.
//! `--tandem` measures a binary built elsewhere instead of building `target/release/tandem`.
//!
//! Every side is a shell pipeline ending in `dd bs=64k of=/dev/null`, the reader: a compiled,
//! optimized loop of 64 KiB reads, the same for every side (this xtask's own debug build was
//! once the bottleneck of the direct side, which made the ratios swing). What stands between
//! `head` and the reader: nothing; `dd bs=64k`, the floor of any process that relays the bytes
//! through its memory (one more pipe, one more read and write of each byte); or `tandem exec`
//! (an in-process host, the `process/*` API and its relay). The reader's byte count is
//! checked. Runs alternate so that drift in the machine hits every side alike; medians are
//! reported, and the target is `tandem exec` against the relay floor (issue 31).

use crate::paths::workspace_root;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

const GIB: u64 = 1024 * 1024 * 1024;
const RUNS: usize = 7;
/// `tandem exec` at least this share of the `dd` relay floor's rate.
const TARGET_OVER_RELAY: f64 = 0.9;
/// The reader every side ends in.
const READER: &str = "dd bs=64k of=/dev/null";

/// Runs the benchmark on `tandem` (`--tandem PATH`), or on `target/release/tandem` built first.
pub(crate) fn run(args: &[String]) -> ExitCode {
    let tandem = match args {
        [] => {
            eprintln!("xtask: cargo build --release -p tandem-cli");
            let built = Command::new(env!("CARGO"))
                .args(["build", "--release", "--quiet", "-p", "tandem-cli"])
                .status();
            if !built.is_ok_and(|status| status.success()) {
                eprintln!("xtask: building tandem failed");
                return ExitCode::FAILURE;
            }
            workspace_root().join("target/release/tandem")
        }
        // A binary built elsewhere (or kept from an earlier commit, to compare two builds).
        [flag, path] if flag == "--tandem" => PathBuf::from(path),
        _ => {
            eprintln!("usage: cargo xtask bench exec [--tandem PATH]");
            return ExitCode::from(2);
        }
    };
    let head = format!("head -c {GIB} /dev/zero");
    let tandem = shell_quote(&tandem.to_string_lossy());
    // The floor of any relay that handles the bytes: a second pipe, through a process that
    // only reads each 64 KiB into its memory and writes it out (`dd`; not `cat`, which moves
    // pipe to pipe inside the kernel with `copy_file_range` where it can, and `tandem exec`
    // cannot: its bytes travel as protocol messages). Three processes then share the cores.
    let sides: [(&str, String); 3] = [
        ("piped directly", format!("{head} | {READER}")),
        (
            "relayed by `dd bs=64k` (relay floor)",
            format!("{head} | dd bs=64k status=none | {READER}"),
        ),
        (
            "through `tandem exec`",
            format!("{tandem} exec -- {head} | {READER}"),
        ),
    ];

    // One warm-up of each side (page cache, binaries), then alternate so that drift in the
    // machine hits every side alike.
    let mut seconds: [Vec<f64>; 3] = Default::default();
    for round in 0..=RUNS {
        for ((label, pipeline), samples) in sides.iter().zip(&mut seconds) {
            let taken = match read_all(pipeline, GIB) {
                Ok(taken) => taken,
                Err(error) => {
                    eprintln!("xtask: {label}: {error}");
                    return ExitCode::FAILURE;
                }
            };
            if round > 0 {
                samples.push(taken);
            }
        }
    }
    for ((label, _), samples) in sides.iter().zip(&seconds) {
        let runs: Vec<String> = samples.iter().map(|s| format!("{s:.3}")).collect();
        eprintln!("  {label}: {} s", runs.join(" "));
    }
    let [direct, relay, exec] = seconds.map(median);
    let rate = |seconds: f64| GIB as f64 / seconds / 1e6;
    println!("1 GiB of `{head}` into `{READER}`, median of {RUNS} alternating runs:");
    for ((label, _), taken) in sides.iter().zip([direct, relay, exec]) {
        println!("  {label:<38} {taken:>6.3} s {:>7.0} MB/s", rate(taken));
    }
    println!("  ratio dd relay / direct: {:.2}x", direct / relay);
    println!("  ratio tandem exec / direct: {:.2}x", direct / exec);
    let ratio = relay / exec;
    println!(
        "  ratio tandem exec / dd relay: {ratio:.2}x (target: at least {TARGET_OVER_RELAY:.2}x: {})",
        if ratio >= TARGET_OVER_RELAY {
            "met"
        } else {
            "MISSED"
        }
    );
    ExitCode::SUCCESS
}

/// `text` as one shell word.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Seconds from starting `pipeline` (under `bash -o pipefail`) until it ended; fails unless
/// every command in it succeeded and its reader (`dd`, whose summary goes to stderr) counted
/// exactly `expected` bytes.
fn read_all(pipeline: &str, expected: u64) -> std::io::Result<f64> {
    let began = Instant::now();
    let output = Command::new("bash")
        .args(["-o", "pipefail", "-c", pipeline])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()?;
    let seconds = began.elapsed().as_secs_f64();
    let summary = String::from_utf8_lossy(&output.stderr);
    // dd's last line: "N bytes (...) copied, T s, R MB/s".
    let counted = summary
        .lines()
        .rev()
        .find_map(|line| line.split_once(" bytes")?.0.trim().parse::<u64>().ok());
    if !output.status.success() || counted != Some(expected) {
        return Err(std::io::Error::other(format!(
            "{}, {counted:?} bytes of {expected}: {summary}",
            output.status
        )));
    }
    Ok(seconds)
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

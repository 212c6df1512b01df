//! `cargo xtask bench exec [--tandem PATH]`: 1 GiB through `tandem exec` against the same
//! command piped straight to the same reader, and relayed by `dd`, in one run. `--tandem`
//! measures a binary built elsewhere instead of building `target/release/tandem`.
//!
//! Every side spawns a command whose stdout is a pipe to this process, which reads it in
//! 64 KiB reads and counts the bytes. The only difference is what stands between `head` and
//! that pipe: nothing; `dd bs=64k`, the floor of any process that relays the bytes through its
//! memory (one more pipe, one more read and write of each byte); or `tandem exec` (an
//! in-process host, the `process/*` API and its relay). Runs alternate so that drift in the
//! machine hits every side alike; medians are reported.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

const GIB: u64 = 1024 * 1024 * 1024;
const RUNS: usize = 7;
const TARGET_RATIO: f64 = 0.8;

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
    let bytes = GIB.to_string();
    let command = ["head", "-c", bytes.as_str(), "/dev/zero"];
    let mut through_exec = vec!["exec", "--"];
    through_exec.extend(command);
    // The floor of any relay that handles the bytes: a second pipe, through a process that
    // only reads each 64 KiB into its memory and writes it out (`dd`; not `cat`, which moves
    // pipe to pipe inside the kernel with `copy_file_range` where it can, and `tandem exec`
    // cannot: its bytes travel as protocol messages). Three processes then share the cores.
    let relayed = format!("head -c {bytes} /dev/zero | dd bs=64k status=none");
    let run_tandem = tandem.to_string_lossy().into_owned();
    let sides: [(&str, &str, Vec<&str>); 3] = [
        (
            "piped directly (baseline)",
            command[0],
            command[1..].to_vec(),
        ),
        (
            "relayed by `dd bs=64k` (relay floor)",
            "sh",
            vec!["-c", relayed.as_str()],
        ),
        ("through `tandem exec`", run_tandem.as_str(), through_exec),
    ];

    // One warm-up of each side (page cache, binaries), then alternate so that drift in the
    // machine hits every side alike.
    let mut seconds: [Vec<f64>; 3] = Default::default();
    for round in 0..=RUNS {
        for ((_, program, args), samples) in sides.iter().zip(&mut seconds) {
            let taken = match read_all(program, args, GIB) {
                Ok(taken) => taken,
                Err(error) => {
                    eprintln!("xtask: {program} failed: {error}");
                    return ExitCode::FAILURE;
                }
            };
            if round > 0 {
                samples.push(taken);
            }
        }
    }
    let [direct, relay, exec] = seconds.map(median);
    let rate = |seconds: f64| GIB as f64 / seconds / 1e6;
    println!("1 GiB of `head -c 1G /dev/zero`, median of {RUNS} alternating runs:");
    for ((label, ..), taken) in sides.iter().zip([direct, relay, exec]) {
        println!("  {label:<36} {taken:>6.3} s {:>7.0} MB/s", rate(taken));
    }
    println!("  ratio dd relay / direct: {:.2}x", direct / relay);
    let ratio = direct / exec;
    println!("  ratio tandem exec / direct: {ratio:.2}x (target: at least {TARGET_RATIO:.2}x)");
    println!("  ratio tandem exec / dd relay: {:.2}x", relay / exec);
    ExitCode::SUCCESS
}

/// Seconds from spawning `program` until its stdout reached EOF and it exited, reading every
/// byte here; fails unless exactly `expected` bytes arrived and it exited 0.
fn read_all(program: &str, args: &[&str], expected: u64) -> std::io::Result<f64> {
    let began = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()?;
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        match stdout.read(&mut buf)? {
            0 => break,
            n => total += n as u64,
        }
    }
    let status = child.wait()?;
    let seconds = began.elapsed().as_secs_f64();
    if !status.success() || total != expected {
        return Err(std::io::Error::other(format!(
            "{status}, {total} bytes of {expected}"
        )));
    }
    Ok(seconds)
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

pub(crate) fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace root")
        .to_path_buf()
}

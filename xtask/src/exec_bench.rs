//! `cargo xtask bench exec [--tandem PATH]`: 1 GiB through `tandem exec` against the same
//! command piped straight to the same reader, in one run. `--tandem` measures a binary built
//! elsewhere instead of building `target/release/tandem`.
//!
//! Both sides spawn a command whose stdout is a pipe to this process, which reads it in
//! 64 KiB reads and counts the bytes: the only difference is whether `tandem exec` (an
//! in-process host, the `process/*` API and its relay) stands between `head` and the pipe. Runs
//! alternate so that drift in the machine hits both alike; medians are reported.

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

    // One warm-up of each side (page cache, binary), then alternate.
    let (mut direct, mut exec) = (Vec::new(), Vec::new());
    let time = |program: &str, args: &[&str]| match read_all(program, args, GIB) {
        Ok(seconds) => Some(seconds),
        Err(error) => {
            eprintln!("xtask: {program} failed: {error}");
            None
        }
    };
    let run_tandem = tandem.to_string_lossy().into_owned();
    for round in 0..=RUNS {
        let (Some(d), Some(e)) = (
            time(command[0], &command[1..]),
            time(&run_tandem, &through_exec),
        ) else {
            return ExitCode::FAILURE;
        };
        if round > 0 {
            direct.push(d);
            exec.push(e);
        }
    }
    let (direct, exec) = (median(direct), median(exec));
    let rate = |seconds: f64| GIB as f64 / seconds / 1e6;
    println!("1 GiB of `head -c 1G /dev/zero`, median of {RUNS} alternating runs:");
    println!(
        "  {:<36} {:>6.3} s {:>7.0} MB/s",
        "piped directly (baseline)",
        direct,
        rate(direct)
    );
    println!(
        "  {:<36} {:>6.3} s {:>7.0} MB/s",
        "through `tandem exec`",
        exec,
        rate(exec)
    );
    let ratio = direct / exec;
    println!("  ratio tandem exec / direct: {ratio:.2}x (target: at least {TARGET_RATIO:.2}x)");
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

//! `cargo xtask soak [--minutes N] [--seed S] [--store sqlite|postgres|both] [--debug |
//! --tandem PATH] [--faults KIND,...|none] [--keep]`: the real `tandem` binary under a seeded mix of client work and
//! scheduled faults, checked all the time (issue 27, point 7; docs/reliability.md, "The
//! soak").
//!
//! The run is one phase per store, the minutes split between them: SQLite (one websocket
//! server, its home on a small tmpfs) and, where PostgreSQL is installed, PostgreSQL (two
//! websocket servers on one database of a throwaway cluster). In each, websocket workers
//! (through a proxy that can cut them off) and stdio workers (each with a server child of its
//! own on the same store) run turns with commands and approvals, streamed processes,
//! idempotent retries, forks, archives and compactions (`workload`); a watcher per server
//! checks every event's cursor and every resume's replay (`watcher`, `cursors`); a probe
//! times a cheap request every 100 ms (`probe`); a monitor samples each server's RSS and
//! descriptors every second (`monitor`). Faults follow a seeded schedule (`schedule`):
//! `kill -9` and restart of a server, `kill -9` of a stdio server, connection cuts, a full
//! disk, a PostgreSQL restart (`faults`). After every restart and at the end the store is
//! read back and compared with everything the clients were told (`ledger`). The summary and
//! a nonzero exit on any violation come from `report`.
//!
//! The binary is built in release (`cargo build --release -p tandem-cli`) unless `--debug`
//! (the debug binary `cargo test --workspace` builds, which CI has at hand) or `--tandem PATH`
//! names one.

mod cursors;
mod disk;
mod faults;
mod ledger;
mod monitor;
mod phase;
mod postgres;
mod probe;
mod procfs;
mod proxy;
mod record;
mod report;
mod schedule;
mod servers;
mod stats;
mod watcher;
mod workload;

use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::Duration;

use phase::{PhaseConfig, Store};
use schedule::FaultKind;

/// Why the soak could not run (as opposed to a violation it found).
#[derive(Debug, thiserror::Error)]
pub(crate) enum SoakError {
    /// The command line is wrong.
    #[error(
        "{0}\nusage: cargo xtask soak [--minutes N] [--seed S] [--store sqlite|postgres|both] \
         [--debug | --tandem PATH] [--faults KIND,...|none] [--keep]; fault kinds: \
         kill-server, kill-stdio, cut, disk-full, postgres-restart"
    )]
    Usage(String),
    /// A file or process operation failed.
    #[error("could not {what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// Why it failed.
        source: std::io::Error,
    },
    /// A server did not start.
    #[error("server {name}: {reason}")]
    Server {
        /// Which.
        name: String,
        /// Why.
        reason: String,
    },
    /// The PostgreSQL phase could not get a database.
    #[error(
        "the PostgreSQL phase cannot run: {reason}; install PostgreSQL (its binaries under \
         /usr/lib/postgresql/*/bin) or pass --store sqlite"
    )]
    Postgres {
        /// Why.
        reason: String,
    },
    /// The `tandem` binary could not be built.
    #[error("could not build tandem: {0}; fix the build, or pass --tandem PATH")]
    Build(String),
}

/// Which binary to run.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Binary {
    /// Built here with `cargo build --release -p tandem-cli`.
    Release,
    /// The debug binary `cargo test --workspace` builds.
    Debug,
    /// This one.
    Path(PathBuf),
}

/// The command line.
#[derive(Debug, Clone, PartialEq)]
struct Options {
    minutes: f64,
    seed: Option<u64>,
    stores: Vec<Store>,
    binary: Binary,
    faults: Vec<FaultKind>,
    keep: bool,
}

fn parse(args: &[String]) -> Result<Options, SoakError> {
    let mut options = Options {
        minutes: 10.0,
        seed: None,
        stores: vec![Store::Sqlite, Store::Postgres],
        binary: Binary::Release,
        faults: FaultKind::ALL.to_vec(),
        keep: false,
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .cloned()
                .ok_or_else(|| SoakError::Usage(format!("{name} needs a value")))
        };
        match arg.as_str() {
            "--minutes" => {
                let text = value("--minutes")?;
                options.minutes = text
                    .parse()
                    .ok()
                    .filter(|minutes: &f64| *minutes > 0.0)
                    .ok_or_else(|| {
                        SoakError::Usage(format!("--minutes {text}: not a positive number"))
                    })?;
            }
            "--seed" => {
                let text = value("--seed")?;
                options.seed = Some(text.parse().map_err(|_| {
                    SoakError::Usage(format!("--seed {text}: not an unsigned integer"))
                })?);
            }
            "--store" => {
                options.stores = match value("--store")?.as_str() {
                    "sqlite" => vec![Store::Sqlite],
                    "postgres" => vec![Store::Postgres],
                    "both" => vec![Store::Sqlite, Store::Postgres],
                    other => {
                        return Err(SoakError::Usage(format!(
                            "--store {other}: sqlite, postgres or both"
                        )));
                    }
                }
            }
            "--debug" => options.binary = Binary::Debug,
            "--tandem" => options.binary = Binary::Path(PathBuf::from(value("--tandem")?)),
            "--faults" => options.faults = parse_faults(&value("--faults")?)?,
            "--keep" => options.keep = true,
            other => return Err(SoakError::Usage(format!("unknown argument {other}"))),
        }
    }
    Ok(options)
}

/// `--faults`: a comma-separated list of kinds, or `none`.
fn parse_faults(text: &str) -> Result<Vec<FaultKind>, SoakError> {
    if text == "none" {
        return Ok(Vec::new());
    }
    text.split(',')
        .map(|name| {
            FaultKind::ALL
                .into_iter()
                .find(|kind| kind.flag() == name.trim())
                .ok_or_else(|| SoakError::Usage(format!("--faults: unknown fault kind {name}")))
        })
        .collect()
}

/// Whether a PostgreSQL server binary is installed where the cluster helper looks.
fn postgres_installed() -> bool {
    std::env::var_os(tandem_test_support::postgres::BIN_ENV).is_some()
        || std::fs::read_dir("/usr/lib/postgresql")
            .into_iter()
            .flatten()
            .flatten()
            .any(|entry| entry.path().join("bin/initdb").exists())
}

/// The binary to run, built if needed.
fn binary(choice: &Binary) -> Result<PathBuf, SoakError> {
    match choice {
        Binary::Path(path) if path.is_file() => Ok(path.clone()),
        Binary::Path(path) => Err(SoakError::Build(format!(
            "{} is not a file",
            path.display()
        ))),
        Binary::Debug => tandem_test_support::binary::tandem_binary()
            .map(PathBuf::from)
            .map_err(|error| SoakError::Build(error.to_string())),
        Binary::Release => {
            let root = tandem_test_support::binary::workspace_root();
            eprintln!("soak: cargo build --release -p tandem-cli --locked");
            let status = Command::new(env!("CARGO"))
                .args(["build", "--release", "-p", "tandem-cli", "--locked"])
                .current_dir(&root)
                .status()
                .map_err(|error| SoakError::Build(error.to_string()))?;
            if !status.success() {
                return Err(SoakError::Build(format!("cargo build exited {status}")));
            }
            let target = std::env::var_os("CARGO_TARGET_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| root.join("target"));
            Ok(target.join("release").join("tandem"))
        }
    }
}

/// `cargo xtask soak ...`.
pub(crate) fn run(args: &[String]) -> ExitCode {
    match soak(args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("soak: {error}");
            ExitCode::from(2)
        }
    }
}

fn soak(args: &[String]) -> Result<bool, SoakError> {
    let options = parse(args)?;
    let seed = options.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |since| since.as_nanos() as u64)
    });
    let mut stores = options.stores.clone();
    let mut notes = Vec::new();
    if stores.contains(&Store::Postgres) && !postgres_installed() {
        if stores.len() == 1 {
            return Err(SoakError::Postgres {
                reason: "no initdb under /usr/lib/postgresql/*/bin".into(),
            });
        }
        stores.retain(|store| *store != Store::Postgres);
        notes.push("PostgreSQL is not installed: the PostgreSQL phase is skipped".to_owned());
    }
    let tandem = binary(&options.binary)?;
    let root = std::env::temp_dir().join(format!("tandem-soak-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let length = Duration::from_secs_f64(options.minutes * 60.0 / stores.len() as f64);
    println!(
        "soak: seed {seed}, {} min, phases {}, binary {}, run directory {}",
        options.minutes,
        stores
            .iter()
            .map(|s| s.name())
            .collect::<Vec<_>>()
            .join(" then "),
        tandem.display(),
        root.display()
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|source| SoakError::Io {
            what: "start the async runtime".into(),
            source,
        })?;
    let mut reports = Vec::new();
    for store in stores {
        let config = PhaseConfig {
            store,
            length,
            seed,
            binary: tandem.clone(),
            root: root.clone(),
            run: format!("soak{}", std::process::id()),
            faults: options.faults.clone(),
        };
        reports.push(runtime.block_on(phase::run(config))?);
    }
    drop(runtime);
    let (summary, mut violations) = report::summarize(&reports);
    for phase in &reports {
        violations.extend(phase.violations.iter().cloned());
    }
    println!("\nsoak summary (seed {seed}, binary {}):", tandem.display());
    print!("{summary}");
    for note in &notes {
        println!("note: {note}");
    }
    if violations.is_empty() {
        println!("soak: PASS, no violation");
        if !options.keep {
            let _ = std::fs::remove_dir_all(&root);
        }
        Ok(true)
    } else {
        println!("soak: FAIL, {} violation(s):", violations.len());
        for violation in &violations {
            println!("  - {violation}");
        }
        println!(
            "the servers' logs are kept under {}; rerun with --seed {seed}",
            root.display()
        );
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn the_command_line_parses_and_rejects_nonsense() {
        let options = parse(&args("--minutes 2 --seed 1")).expect("parses");
        assert_eq!(options.minutes, 2.0);
        assert_eq!(options.seed, Some(1));
        assert_eq!(options.stores, [Store::Sqlite, Store::Postgres]);
        assert_eq!(options.binary, Binary::Release);
        assert_eq!(options.faults, FaultKind::ALL);
        let options = parse(&args(
            "--store sqlite --debug --keep --faults cut,disk-full",
        ))
        .expect("parses");
        assert_eq!(options.stores, [Store::Sqlite]);
        assert_eq!(options.binary, Binary::Debug);
        assert!(options.keep);
        assert_eq!(options.faults, [FaultKind::Cut, FaultKind::DiskFull]);
        assert_eq!(parse(&args("--faults none")).expect("parses").faults, []);
        for bad in [
            "--minutes",
            "--minutes 0",
            "--minutes x",
            "--seed -1",
            "--store mysql",
            "--faults cut,fire",
            "--x",
        ] {
            assert!(
                matches!(parse(&args(bad)), Err(SoakError::Usage(_))),
                "{bad}"
            );
        }
    }
}

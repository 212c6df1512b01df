//! `cargo xtask compat`: drives a server through the public API of each PyPI client of the
//! Codex app-server protocol (issue 15) and prints a client x scenario table.
//!
//! The drivers are Python (`xtask/compat/drivers/`, one module per client, sharing
//! `xtask/compat/harness.py`): a client can only be exercised from its own language. This
//! module owns the rest: the venv with the pinned clients (`xtask/compat/requirements.txt`),
//! building `tandem`, running every (client, transport) pair and the table. It needs the
//! package registry (or `--venv` with the clients installed), so it is not part of CI.
//!
//! Every stdio client runs a second time through `tandem app-server proxy --lines` (rows "(proxy)"),
//! sharing a daemon per scenario, as a user of the daemon would launch it.
//!
//! `--server BIN` runs the same drivers against another server (`BIN app-server`), e.g. the
//! reference, which is how the drivers themselves are checked; scenarios that would make the
//! reference call a model are then skipped.

use crate::paths::{target_dir, workspace_root};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

/// Each driver module and the transports its client offers.
const DRIVERS: &[(&str, &str, &[&str])] = &[
    ("openai-codex", "official_sdk", &["stdio"]),
    ("codex-app-server-sdk", "app_server_sdk", &["stdio", "ws"]),
    ("codex-app-server-client", "app_server_client", &["stdio"]),
    ("codex-python-sdk", "python_sdk", &["stdio"]),
    ("codexed", "codexed_driver", &["stdio", "ws"]),
    ("codex-python-sdk-unofficial", "agent_sdk", &["stdio"]),
];

/// The scenarios, in the order of `harness.SCENARIOS` (the table's columns).
const SCENARIOS: &[&str] = &[
    "thread_lifecycle",
    "turn_with_approval",
    "command_exec",
    "model_list",
    "archive_unarchive",
    "compact",
    "error_path",
];

/// The Python that creates the venv (the clients need 3.12 or 3.13); `COMPAT_PYTHON`
/// overrides it.
const DEFAULT_PYTHON: &str = "python3.13";

/// What the command line asked for.
#[derive(Debug, Default)]
struct Options {
    venv: Option<PathBuf>,
    server: Option<PathBuf>,
    clients: Vec<String>,
    runs: usize,
}

/// Why the check could not run (as opposed to a scenario failing).
#[derive(Debug, thiserror::Error)]
enum CompatError {
    #[error(
        "{0}\nusage: cargo xtask compat [--venv DIR] [--server BIN] [--client NAME]... [--runs N]"
    )]
    Usage(String),
    #[error("`{command}` failed ({status}); see its output above")]
    Step { command: String, status: String },
    #[error("could not run `{command}`: {source}; is it installed and on PATH?")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
}

fn parse(args: &[String]) -> Result<Options, CompatError> {
    let mut options = Options {
        runs: 1,
        ..Options::default()
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .cloned()
                .ok_or_else(|| CompatError::Usage(format!("{name} needs a value")))
        };
        match arg.as_str() {
            "--venv" => options.venv = Some(PathBuf::from(value("--venv")?)),
            "--server" => options.server = Some(PathBuf::from(value("--server")?)),
            "--client" => options.clients.push(value("--client")?),
            "--runs" => {
                options.runs = value("--runs")?
                    .parse()
                    .map_err(|_| CompatError::Usage("--runs takes a number".into()))?;
            }
            other => return Err(CompatError::Usage(format!("unknown argument {other}"))),
        }
    }
    let known: Vec<&str> = DRIVERS.iter().map(|(name, _, _)| *name).collect();
    if let Some(unknown) = options
        .clients
        .iter()
        .find(|c| !known.contains(&c.as_str()))
    {
        return Err(CompatError::Usage(format!(
            "unknown client {unknown}; one of {}",
            known.join(", ")
        )));
    }
    Ok(options)
}

/// `cargo xtask compat ARGS`.
pub(crate) fn run(args: &[String]) -> ExitCode {
    crate::steps::exit_code("compat", run_checked(args))
}

fn step(command: &mut Command) -> Result<(), CompatError> {
    crate::steps::run_step(
        "compat",
        command,
        |command, source| CompatError::Spawn { command, source },
        |command, status| CompatError::Step {
            command,
            status: status.to_string(),
        },
    )
}

/// The venv's python: `--venv` as given, else `target/compat-venv`, created and filled with
/// the pinned clients on first use.
fn python(options: &Options) -> Result<PathBuf, CompatError> {
    let venv = match &options.venv {
        Some(venv) => venv.clone(),
        None => {
            let venv = target_dir().join("compat-venv");
            if !venv.join("bin/python").exists() {
                let base = std::env::var("COMPAT_PYTHON").unwrap_or_else(|_| DEFAULT_PYTHON.into());
                step(Command::new(base).args(["-m", "venv"]).arg(&venv))?;
            }
            let requirements = workspace_root().join("xtask/compat/requirements.txt");
            step(
                Command::new(venv.join("bin/python"))
                    .args(["-m", "pip", "install", "--quiet", "-r"])
                    .arg(requirements),
            )?;
            venv
        }
    };
    Ok(venv.join("bin/python"))
}

/// The server binary: `--server`, else a freshly built `tandem`.
fn server(options: &Options) -> Result<PathBuf, CompatError> {
    if let Some(server) = &options.server {
        return Ok(server.clone());
    }
    step(Command::new(env!("CARGO")).args(["build", "-p", "tandem-cli", "--bin", "tandem"]))?;
    Ok(target_dir().join("debug/tandem"))
}

/// One scenario's outcome as the harness printed it.
#[derive(Debug, Clone, serde::Deserialize)]
struct Outcome {
    scenario: String,
    status: String,
    detail: String,
}

fn run_checked(args: &[String]) -> Result<bool, CompatError> {
    let options = parse(args)?;
    let python = python(&options)?;
    let server = server(&options)?;
    let reference = options.server.is_some();
    let harness = workspace_root().join("xtask/compat/harness.py");
    let mut all_passed = true;
    for run in 1..=options.runs {
        // Row label -> scenario -> outcome.
        let mut table: BTreeMap<usize, (String, BTreeMap<String, Outcome>)> = BTreeMap::new();
        let selected = DRIVERS.iter().filter(|(name, _, _)| {
            options.clients.is_empty() || options.clients.iter().any(|c| c == name)
        });
        for (name, module, transports) in selected {
            // Every stdio client also runs through `tandem app-server proxy --lines`, sharing a
            // daemon (issue 32); the reference has no line proxy.
            let through_proxy = transports.contains(&"stdio") && !reference;
            let transports = transports
                .iter()
                .copied()
                .chain(through_proxy.then_some("proxy"));
            for transport in transports {
                let mut command = Command::new(&python);
                command
                    .arg(&harness)
                    .args(["--client", module, "--transport", transport, "--server"])
                    .arg(&server);
                if reference {
                    command.arg("--reference");
                }
                eprintln!("xtask compat: run {run}: {name} over {transport}");
                let output = command.output().map_err(|source| CompatError::Spawn {
                    command: format!("{command:?}"),
                    source,
                })?;
                let mut outcomes = BTreeMap::new();
                for line in String::from_utf8_lossy(&output.stdout).lines() {
                    if let Ok(outcome) = serde_json::from_str::<Outcome>(line) {
                        outcomes.insert(outcome.scenario.clone(), outcome);
                    }
                }
                if outcomes.len() != SCENARIOS.len() {
                    eprintln!(
                        "xtask compat: the {name} driver reported {} of {} scenarios:\n{}",
                        outcomes.len(),
                        SCENARIOS.len(),
                        String::from_utf8_lossy(&output.stderr)
                    );
                }
                let row = table.len();
                table.insert(row, (format!("{name} ({transport})"), outcomes));
            }
        }
        all_passed &= print_table(run, &table);
    }
    Ok(all_passed)
}

/// Prints the table and the reason of every failure and skip; whether everything passed.
fn print_table(run: usize, table: &BTreeMap<usize, (String, BTreeMap<String, Outcome>)>) -> bool {
    let label_width = table
        .values()
        .map(|(label, _)| label.len())
        .max()
        .unwrap_or(0);
    let mut header = format!("{:label_width$}", format!("run {run}"));
    for scenario in SCENARIOS {
        header.push_str(&format!(" | {scenario}"));
    }
    println!("{header}");
    let mut notes = Vec::new();
    let mut all_passed = true;
    for (label, outcomes) in table.values() {
        let mut line = format!("{label:label_width$}");
        for scenario in SCENARIOS {
            let cell = match outcomes.get(*scenario) {
                Some(outcome) => {
                    if outcome.status != "pass" {
                        notes.push(format!(
                            "{label} {scenario}: {}: {}",
                            outcome.status, outcome.detail
                        ));
                    }
                    match outcome.status.as_str() {
                        "pass" => "pass",
                        "skip" => "skip",
                        _ => {
                            all_passed = false;
                            "FAIL"
                        }
                    }
                }
                None => {
                    all_passed = false;
                    notes.push(format!(
                        "{label} {scenario}: no result (the driver crashed)"
                    ));
                    "none"
                }
            };
            line.push_str(&format!(" | {cell:width$}", width = scenario.len()));
        }
        println!("{line}");
    }
    for note in notes {
        println!("  {note}");
    }
    all_passed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_parsed_and_unknown_clients_refused() {
        let args: Vec<String> = ["--venv", "/v", "--client", "codexed", "--runs", "3"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let options = parse(&args).expect("valid");
        assert_eq!(options.venv.as_deref(), Some(std::path::Path::new("/v")));
        assert_eq!(options.clients, ["codexed"]);
        assert_eq!(options.runs, 3);
        assert!(parse(&["--client".into(), "nope".into()]).is_err());
        assert!(parse(&["--runs".into()]).is_err());
    }
}

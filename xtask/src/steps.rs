//! What the xtask checks (`compat`, `fs-compare`, `mcp-check`, `schema-check`) share: the
//! exit code a check's outcome maps to, and running one command as a step of a check, shown
//! before it runs. Each check keeps its own error type, whose messages say what to do for
//! that check; these helpers only take the constructors.

use std::fmt::Display;
use std::io;
use std::process::{Command, ExitCode, ExitStatus};

/// The exit code of a check named `tool`: 0 when everything passed, 1 when something did
/// not, 2 (with the error on stderr) when the check could not run.
pub(crate) fn exit_code(tool: &str, outcome: Result<bool, impl Display>) -> ExitCode {
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("xtask {tool}: {error}");
            ExitCode::from(2)
        }
    }
}

/// Runs `command` to its end as a step of `tool`, printing it first. It is an error when it
/// cannot start (`spawn_failed`, with the command as shown) or ends unsuccessfully
/// (`failed`, with its status).
pub(crate) fn run_step<E>(
    tool: &str,
    command: &mut Command,
    spawn_failed: impl FnOnce(String, io::Error) -> E,
    failed: impl FnOnce(String, ExitStatus) -> E,
) -> Result<(), E> {
    let shown = format!("{command:?}");
    eprintln!("xtask {tool}: {shown}");
    match command.status() {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(failed(shown, status)),
        Err(source) => Err(spawn_failed(shown, source)),
    }
}

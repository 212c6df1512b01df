//! Helper programs: small jobs the server runs in a process of its own, by re-executing a
//! binary that links this crate (the `tandem` binary re-executes itself).
//!
//! A separate process is needed where the job must outlive the server or run with a setup the
//! server's own process must not have, and the workspace forbids the `unsafe` code a
//! `fork` without `exec` would take. One mechanism serves every such job: the embedder names
//! the program (tandem-server's `ServerOptions::with_helper_program`), the server starts it as
//! `PROGRAM __tandem-helper SUBCOMMAND ARGS...`, and the program calls [`run_if_helper`] first
//! thing in `main`, which runs the subcommand and exits instead of returning.
//!
//! The program itself is a [`HelperProgram`] (`program`, which the sandbox and the watchdog's
//! guard use too); this module runs its jobs.
//!
//! Subcommands: `watchdog` (see [`watchdog`]) kills everything the server started once the
//! server is gone, however it died; `sandbox` (see [`sandbox`]) restricts itself and then
//! executes an agent's command in its place, so that only the command is sandboxed;
//! `sandbox-probe` tells the server whether the sandbox can use a mount namespace here. Without a
//! helper program, commands under a restricting sandbox policy are refused. An embedder that names no helper program gets no
//! watchdog: its children are still killed on every orderly shutdown, but not when its
//! process is killed with `SIGKILL` (see docs/reliability.md, "What dies with the server").

use std::ffi::{OsStr, OsString};
use std::io::Write as _;

pub(crate) mod read_only;
pub mod sandbox;
pub mod watchdog;

/// The exit code of a helper invocation that names no known subcommand or malformed
/// arguments (a usage error, as clap reports them).
pub const HELPER_USAGE_EXIT_CODE: i32 = 2;

pub use crate::program::{HELPER_ARG, HelperProgram};

/// Runs the helper job this process was started for, and exits, if its first argument is
/// [`HELPER_ARG`]; returns at once otherwise. Call it first thing in `main`, before any
/// runtime or thread is started: a helper must not inherit the binary's usual setup.
pub fn run_if_helper() {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(OsStr::new(HELPER_ARG)) {
        return;
    }
    std::process::exit(run_helper(args.collect()));
}

/// Runs the helper subcommand `args[0]` with the rest of `args`; returns the exit code.
fn run_helper(args: Vec<OsString>) -> i32 {
    let Some((subcommand, rest)) = args.split_first() else {
        eprintln!(
            "tandem helper: missing subcommand (expected: {})",
            SUBCOMMANDS.join(", ")
        );
        return HELPER_USAGE_EXIT_CODE;
    };
    match subcommand.to_str() {
        Some(watchdog::SUBCOMMAND) => watchdog::main(rest),
        Some(sandbox::SUBCOMMAND) => sandbox::main(rest),
        Some(crate::sandbox::PROBE_SUBCOMMAND) => read_only::probe_main(rest),
        _ => {
            report(format_args!(
                "tandem helper: unknown subcommand {} (expected: {})",
                subcommand.to_string_lossy(),
                SUBCOMMANDS.join(", ")
            ));
            HELPER_USAGE_EXIT_CODE
        }
    }
}

/// Writes one diagnostic line to stderr, ignoring failure: `eprintln!` would panic on a closed
/// stderr, which is likely for a helper that outlives the server and whoever read its stderr,
/// and the job must go on.
pub(crate) fn report(message: std::fmt::Arguments<'_>) {
    let _ = writeln!(std::io::stderr(), "{message}");
}

/// Every subcommand [`run_if_helper`] knows.
const SUBCOMMANDS: &[&str] = &[
    watchdog::SUBCOMMAND,
    sandbox::SUBCOMMAND,
    crate::sandbox::PROBE_SUBCOMMAND,
];

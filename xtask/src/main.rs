//! `cargo xtask`: project automation that would otherwise live in shell snippets.
//!
//! - `cargo xtask ci`: exactly what `.ci/run` runs (tests, the 2-minute soak, clippy, rustfmt,
//!   rustdoc with warnings denied), in that order.
//! - `cargo xtask bench [host|server|exec|wire|mcp]`: the benchmarks behind
//!   `docs/performance.md` (`mcp`: `crates/cli/benches/mcp/`, an MCP tool call and
//!   `turn/start` while an MCP server starts, each against its baseline).
//!   `cargo xtask bench exec --tandem PATH` measures that binary instead of building one.
//!   `cargo xtask bench wire [-- --server 'CMD ARGS...']...` runs the wire benchmark
//!   (`crates/cli/benches/wire/`), passing it everything after `wire`.
//! - `cargo xtask codegen`: regenerates the protocol bindings under `docs/protocol/`.
//! - `cargo xtask check-ts`: compiles those TypeScript bindings with `tsc` (needs node).
//! - `cargo xtask compat [--venv DIR] [--server BIN] [--client NAME]... [--runs N]`: drives
//!   `tandem app-server` (or BIN) through the PyPI clients of the protocol (needs the package
//!   registry or a venv that has them; not in CI).
//! - `cargo xtask schema-check [--reference BIN]`: validates every message the server sends in
//!   the conformance suite against the reference app-server's JSON Schema (needs the
//!   reference; not in CI).
//! - `cargo xtask fs-compare [--reference BIN] [--tandem BIN]`: the same `fs/*` sequence,
//!   errors included, against the reference app-server and `tandem app-server` over stdio,
//!   answers normalized and compared in a table; non-zero on an unintended difference (needs
//!   the reference; not in CI).
//! - `cargo xtask mcp-check [--tandem BIN] [--reference BIN | --no-reference]`: Tandem's MCP
//!   client against the real `@modelcontextprotocol/server-everything` (npm) and
//!   `mcp-server-time` (PyPI), installed under `target/mcp-check/`, and the same requests
//!   against the reference compared (needs the registries on its first run; not in CI).
//! - `cargo xtask proxy-interop [--reference BIN] [--tandem BIN]`: the reference's raw proxy
//!   in front of Tandem's daemon, and Tandem's raw and line proxies in front of the
//!   reference's unix socket server (needs the reference; not in CI).
//! - `cargo xtask soak [--minutes N] [--seed S] [--store sqlite|postgres|both] [--debug |
//!   --tandem PATH] [--keep]`: the `tandem` binary under client work and scheduled faults,
//!   checked all the time (`soak`; docs/reliability.md, "The soak"); CI runs 2 minutes.

use std::process::{Command, ExitCode};

mod codegen;
mod compat;
mod exec_bench;
mod fs_compare;
mod mcp_check;
mod paths;
mod proxy_interop;
mod schema_check;
mod soak;
mod stdio_server;
mod steps;

/// The CI steps, shared by `cargo xtask ci` and mirrored by `.ci/run`.
const CI_STEPS: &[&[&str]] = &[
    &["test", "--workspace", "--locked"],
    // The soak on the debug binary the tests built (docs/reliability.md, "The soak").
    &["xtask", "soak", "--minutes", "2", "--seed", "1", "--debug"],
    // A wire-only tandem-client builds without the reference server.
    &[
        "check",
        "-p",
        "tandem-client",
        "--no-default-features",
        "--locked",
    ],
    // The in-process host's ratios to its raw model, and the process output pump's ratio to its
    // pipe-read floor, short mode, built lean (docs/performance.md, "Guarding the gains").
    &[
        "bench",
        "-p",
        "tandem-host",
        "-p",
        "tandem-process",
        "--bench",
        "host",
        "--bench",
        "output",
        "--no-default-features",
        "--profile",
        "guard",
        "--locked",
        "--",
        "--guard",
    ],
    &[
        "clippy",
        "--workspace",
        "--all-targets",
        "--locked",
        "--",
        "-D",
        "warnings",
    ],
    &["fmt", "--all", "--", "--check"],
    // Run with RUSTDOCFLAGS="-D warnings" (see `RUSTDOC_DENY_WARNINGS`).
    &["doc", "--workspace", "--no-deps", "--locked"],
];

/// The rustdoc flags of the `doc` CI step: broken or private intra-doc links fail CI.
const RUSTDOC_DENY_WARNINGS: &str = "-D warnings";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let steps: Vec<Vec<&str>> = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["ci"] => CI_STEPS.iter().map(|step| step.to_vec()).collect(),
        ["bench"] => vec![
            vec!["bench", "-p", "tandem-host"],
            vec!["bench", "-p", "tandem-server"],
            wire_bench_step(&[]),
        ],
        ["bench", "wire", ref rest @ ..] => vec![wire_bench_step(rest)],
        ["bench", "host"] => vec![vec!["bench", "-p", "tandem-host"]],
        ["bench", "mcp"] => vec![vec!["bench", "-p", "tandem-cli", "--bench", "mcp"]],
        ["bench", "server"] => vec![vec!["bench", "-p", "tandem-server"]],
        ["bench", "exec", ..] => return exec_bench::run(&args[2..]),
        ["codegen"] => return codegen::regenerate(),
        ["check-ts"] => return codegen::check_typescript(),
        ["compat", ..] => return compat::run(&args[1..]),
        ["schema-check", ..] => return schema_check::run(&args[1..]),
        ["fs-compare", ..] => return fs_compare::run(&args[1..]),
        ["mcp-check", ..] => return mcp_check::run(&args[1..]),
        ["proxy-interop", ..] => return proxy_interop::run(&args[1..]),
        ["soak", ..] => return soak::run(&args[1..]),
        _ => {
            eprintln!(
                "usage: cargo xtask ci | cargo xtask bench [host|server|mcp] | \
                 cargo xtask bench exec [--tandem PATH] | \
                 cargo xtask bench wire [-- --server 'CMD ARGS...']... | \
                 cargo xtask codegen | cargo xtask check-ts | cargo xtask compat [...] | \
                 cargo xtask schema-check [--reference BIN] | \
                 cargo xtask fs-compare [--reference BIN] [--tandem BIN] | \
                 cargo xtask mcp-check [--tandem BIN] [--reference BIN | --no-reference] | \
                 cargo xtask proxy-interop [--reference BIN] [--tandem BIN] | cargo xtask soak [...]"
            );
            return ExitCode::from(2);
        }
    };
    for step in steps {
        eprintln!("xtask: cargo {}", step.join(" "));
        let mut cargo = Command::new(env!("CARGO"));
        cargo.args(&step);
        if step.first() == Some(&"doc") {
            cargo.env("RUSTDOCFLAGS", RUSTDOC_DENY_WARNINGS);
        }
        let status = cargo.status();
        match status {
            Ok(status) if status.success() => {}
            Ok(status) => {
                eprintln!("xtask: `cargo {}` failed with {status}", step.join(" "));
                return ExitCode::FAILURE;
            }
            Err(err) => {
                eprintln!("xtask: could not run cargo: {err}");
                return ExitCode::FAILURE;
            }
        }
    }
    if args.len() == 1 && args[0] == "bench" {
        return exec_bench::run(&[]);
    }
    ExitCode::SUCCESS
}

/// `cargo bench` of the wire benchmark with `args` for it (a leading `--` is optional). Cargo
/// builds the bench profile's `tandem` (release, with debug info) for its stdio and websocket
/// targets.
fn wire_bench_step<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let args = match args {
        ["--", rest @ ..] => rest,
        rest => rest,
    };
    let mut step = vec!["bench", "-p", "tandem-cli", "--bench", "wire", "--"];
    step.extend_from_slice(args);
    step
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_bench_arguments_pass_through_with_or_without_a_separator() {
        let server = "codex app-server --listen stdio://";
        let expected = [
            "bench",
            "-p",
            "tandem-cli",
            "--bench",
            "wire",
            "--",
            "--server",
            server,
        ];
        assert_eq!(wire_bench_step(&["--", "--server", server]), expected);
        assert_eq!(wire_bench_step(&["--server", server]), expected);
        assert_eq!(
            wire_bench_step(&[]),
            ["bench", "-p", "tandem-cli", "--bench", "wire", "--"]
        );
    }
}

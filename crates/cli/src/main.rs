//! The `tandem` binary: parses the command line, sets up logging and the Tokio runtime, runs one
//! command, and exits with its status. Each command lives in a module of its own; this file
//! only wires them to clap so that `--help` and usage errors (exit 2) come from one place.

use clap::{Parser, Subcommand};

mod agent_view;
mod allocator;
mod app_server;
mod chat;
mod daemon;
mod exec;
mod mcp;
mod proxy;
mod render;
mod run;
mod session;
mod settings;
mod shutdown_deadline;
mod signals;
mod stderr_without_waiting;
mod terminal;
mod tui;

/// Tandem: an agent app-server hosted inside the process that uses it.
#[derive(Debug, Parser)]
#[command(name = "tandem", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    global: settings::GlobalOptions,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a command through an in-process Tandem host, streaming its output live.
    ///
    /// The command's stdout goes to tandem's stdout and its stderr to tandem's stderr, byte for
    /// byte, as it is produced; tandem exits with the command's exit code. Unlike the protocol's
    /// defaults, output is not capped and the command does not time out unless asked.
    Exec {
        #[command(flatten)]
        args: exec::ExecArgs,
        #[command(flatten)]
        global: settings::GlobalOptions,
    },
    /// Serve the Tandem app-server protocol to clients over stdio or websocket.
    ///
    /// A drop-in for clients written for other app-servers: they launch
    /// `tandem app-server --listen stdio://` as a child process, or connect to
    /// `tandem app-server --listen ws://IP:PORT`.
    #[command(after_help = app_server::AFTER_HELP)]
    AppServer {
        #[command(flatten)]
        args: app_server::AppServerArgs,
        #[command(flatten)]
        global: settings::GlobalOptions,
    },
    /// Run one agent turn on a new thread and print the agent's answer as it streams.
    Run {
        #[command(flatten)]
        args: run::RunArgs,
        #[command(flatten)]
        global: settings::GlobalOptions,
    },
    /// Chat with the agent on one thread, interactively.
    Chat {
        #[command(flatten)]
        args: chat::ChatArgs,
        #[command(flatten)]
        global: settings::GlobalOptions,
    },
    /// MCP servers: `tandem mcp list` starts the configured servers and prints each one's
    /// state and the tools a session gets from it.
    Mcp {
        #[command(flatten)]
        args: mcp::McpArgs,
        #[command(flatten)]
        global: settings::GlobalOptions,
    },
    /// A full-screen terminal UI: threads, the streamed transcript, approvals, and command
    /// output in terminal panes.
    Tui {
        #[command(flatten)]
        args: tui::TuiArgs,
        #[command(flatten)]
        global: settings::GlobalOptions,
    },
}

/// The environment variable holding a `tracing` filter for tandem's own logs (e.g. `debug`).
const LOG_ENV: &str = "TANDEM_LOG";

/// How long an exit waits for the log lines still queued (a stderr that stalled holds it no
/// longer).
const LOG_FLUSH_AT_EXIT: std::time::Duration = std::time::Duration::from_millis(250);

fn main() {
    // A re-execution of this binary as a helper of the server (its watchdog) runs that job
    // and exits here, before any runtime or logging is set up.
    tandem_server::run_if_helper();
    // Usage errors and --help/--version exit here, with clap's codes (2 for usage errors).
    let cli = Cli::parse();
    let trace_file = match &cli.command {
        Command::Exec { global, .. }
        | Command::AppServer { global, .. }
        | Command::Run { global, .. }
        | Command::Chat { global, .. }
        | Command::Mcp { global, .. }
        | Command::Tui { global, .. } => global.trace_file.clone(),
    }
    .or_else(|| cli.global.trace_file.clone());
    // A server's stderr is often a pipe nobody reads: keep it to warnings unless asked.
    let default = match &cli.command {
        Command::AppServer { args, .. } if args.logs_to_file() => "info",
        Command::AppServer { .. } => "warn",
        // Their stdout and stderr are the user's conversation.
        // The TUI owns the screen: a log line would garble it.
        Command::Exec { .. } | Command::Run { .. } | Command::Chat { .. } | Command::Tui { .. } => {
            "off"
        }
        // Its stdout is the listing; the reasons of failures are in it already.
        Command::Mcp { .. } => "error",
    };
    if let Err(error) = init_logging(default, trace_file.as_deref()) {
        eprintln!("tandem: {error}");
        std::process::exit(1);
    }
    // `tandem exec` runs its host, the command's pumps and the output relay on one thread, so
    // a delta goes from the pump to the write without crossing threads (`exec::output` keeps
    // the writes from ever holding that thread).
    let mut runtime = match &cli.command {
        Command::Exec { .. } => tokio::runtime::Builder::new_current_thread(),
        _ => tokio::runtime::Builder::new_multi_thread(),
    };
    let runtime = match runtime.enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("tandem: cannot start the async runtime: {error}");
            std::process::exit(1);
        }
    };
    let code = match cli.command {
        Command::Exec { args, global } => {
            runtime.block_on(exec::run(args, cli.global.then(global)))
        }
        Command::AppServer { args, global } => {
            runtime.block_on(app_server::run(args, cli.global.then(global)))
        }
        Command::Run { args, global } => runtime.block_on(run::run(args, cli.global.then(global))),
        Command::Chat { args, global } => {
            runtime.block_on(chat::run(args, cli.global.then(global)))
        }
        Command::Tui { args, global } => runtime.block_on(tui::run(args, cli.global.then(global))),
        Command::Mcp { args, global } => runtime.block_on(mcp::run(args, cli.global.then(global))),
    };
    // The last log lines leave, unless stderr stalled.
    stderr_without_waiting::LogWriter::get().flush_for(LOG_FLUSH_AT_EXIT);
    // Exit without dropping the runtime: a task blocked reading a terminal (stdin forwarding)
    // would otherwise hold the exit until the user pressed a key.
    std::process::exit(code);
}

/// Logs go to stderr, filtered by `TANDEM_LOG`; without it the command's `default` filter
/// applies (`off` for `exec`, so the command's stderr is not mixed with tandem's diagnostics).
/// Never to stdout: it is the conversation, or the stdio transport's wire. Lines are written by
/// a thread of their own, never by the thread that logs; a stderr that stalls costs the lines
/// past a bounded queue, counted and reported (`stderr_without_waiting`).
///
/// With `--trace-file PATH` the wire trace (target `tandem::wire`, every JSON message in and
/// out per connection) also goes to PATH, whatever `TANDEM_LOG` says; `TANDEM_LOG` alone can
/// send it to stderr (`TANDEM_LOG=tandem::wire=trace`).
fn init_logging(default: &str, trace_file: Option<&std::path::Path>) -> Result<(), String> {
    use tracing_subscriber::filter::{EnvFilter, Targets};
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    use tracing_subscriber::{Layer as _, fmt};

    let filter = EnvFilter::try_from_env(LOG_ENV).unwrap_or_else(|_| EnvFilter::new(default));
    let stderr = fmt::layer()
        .with_writer(stderr_without_waiting::Logs)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_filter(filter);
    let trace = match trace_file {
        Some(path) => {
            let file = std::fs::File::create(path).map_err(|error| {
                format!("--trace-file {}: cannot create it: {error}", path.display())
            })?;
            let wire_only = Targets::new().with_target(
                tandem_host::transport::WIRE_TRACE_TARGET,
                tracing::Level::TRACE,
            );
            Some(
                fmt::layer()
                    .with_writer(std::sync::Mutex::new(file))
                    .with_ansi(false)
                    .with_filter(wire_only),
            )
        }
        None => None,
    };
    tracing_subscriber::registry()
        .with(stderr)
        .with(trace)
        .init();
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn global_options_before_and_after_the_subcommand_are_joined_in_order() {
        let cli = Cli::try_parse_from([
            "tandem",
            "-c",
            "model_provider=mock",
            "--profile",
            "early",
            "--enable",
            "a",
            "run",
            "-c",
            "model=N",
            "--profile",
            "late",
            "--disable",
            "b",
            "hello",
        ])
        .expect("parses");
        let Command::Run { global, .. } = cli.command else {
            panic!("parsed as run");
        };
        let joined = cli.global.then(global);
        assert_eq!(joined.config, ["model_provider=mock", "model=N"]);
        assert_eq!(joined.enable, ["a"]);
        assert_eq!(joined.disable, ["b"]);
        assert_eq!(joined.profile.as_deref(), Some("late"));

        let cli =
            Cli::try_parse_from(["tandem", "--profile", "early", "exec", "true"]).expect("parses");
        let Command::Exec { global, .. } = cli.command else {
            panic!("parsed as exec");
        };
        assert_eq!(cli.global.then(global).profile.as_deref(), Some("early"));
    }
}

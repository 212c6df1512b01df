//! The `tandem` binary: parses the command line, sets up logging and the Tokio runtime, runs one
//! command, and exits with its status. Each command lives in a module of its own; this file
//! only wires them to clap so that `--help` and usage errors (exit 2) come from one place.

use clap::{Parser, Subcommand};

mod chat;
mod exec;
mod run;
mod session;
mod terminal;

/// Tandem: an agent app-server hosted inside the process that uses it.
#[derive(Debug, Parser)]
#[command(name = "tandem", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a command through an in-process Tandem host, streaming its output live.
    ///
    /// The command's stdout goes to tandem's stdout and its stderr to tandem's stderr, byte for
    /// byte, as it is produced; tandem exits with the command's exit code. Unlike the protocol's
    /// defaults, output is not capped and the command does not time out unless asked.
    Exec(exec::ExecArgs),
    /// Run one agent turn on a new thread and print the agent's answer as it streams.
    Run(run::RunArgs),
    /// Chat with the agent on one thread, interactively.
    Chat(chat::ChatArgs),
}

/// The environment variable holding a `tracing` filter for tandem's own logs (e.g. `debug`).
const LOG_ENV: &str = "TANDEM_LOG";

fn main() {
    // Usage errors and --help/--version exit here, with clap's codes (2 for usage errors).
    let cli = Cli::parse();
    init_logging();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("tandem: cannot start the async runtime: {error}");
            std::process::exit(1);
        }
    };
    let code = match cli.command {
        Command::Exec(args) => runtime.block_on(exec::run(args)),
        Command::Run(args) => runtime.block_on(run::run(args)),
        Command::Chat(args) => runtime.block_on(chat::run(args)),
    };
    // Exit without dropping the runtime: a task blocked reading a terminal (stdin forwarding)
    // would otherwise hold the exit until the user pressed a key.
    std::process::exit(code);
}

/// Logs go to stderr, filtered by `TANDEM_LOG`; without it nothing is logged, so the command's
/// stderr is not mixed with tandem's diagnostics.
fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env(LOG_ENV).unwrap_or_else(|_| EnvFilter::new("off"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

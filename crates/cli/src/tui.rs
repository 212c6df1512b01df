//! `tandem tui`: the full-screen terminal UI (crate tandem-tui) on the same server options as
//! `run` and `chat`: in-process by default, `--spawn 'CMD'` or `--connect ws://...`. This
//! module only builds the client and the options and maps the outcome to an exit code; the
//! terminal is restored by tandem-tui before the client is closed, so the bounded shutdown's
//! messages (if any) land on the normal screen.

use std::cell::Cell;
use std::time::Duration;

use clap::Args;
use tandem_protocol::SessionSource;
use tandem_tui::{TuiOptions, state::Limits};

use crate::session::{ServerArgs, SessionError};
use crate::settings::GlobalOptions;
use crate::signals::ShutdownSignals;

const AFTER_HELP: &str = "\
Keys: Enter sends (while a turn runs it steers it) · Alt-Enter new line · Esc interrupts the
turn · Ctrl-C twice quits · Ctrl-T thread list (Enter resume, n new, f fork, a archive) ·
y / a / n answer an approval (accept, accept for the session, decline) · PgUp/PgDn scroll ·
!CMD runs CMD in a terminal pane (Tab or Ctrl-O focuses it: keys go to the process) ·
/help lists the rest.";

/// The options of `tandem tui`.
#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct TuiArgs {
    #[command(flatten)]
    server: ServerArgs,

    /// Rows of scrollback each terminal pane keeps above its screen.
    #[arg(long, value_name = "ROWS", default_value_t = Limits::default().scrollback_rows)]
    scrollback: usize,

    /// Transcript entries kept on screen (the thread keeps everything; resume shows it).
    #[arg(long, value_name = "N", default_value_t = Limits::default().transcript_entries)]
    transcript_limit: usize,

    /// The most frames drawn per second, however fast events arrive.
    #[arg(long, value_name = "FPS", default_value_t = 60,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    max_fps: u32,
}

/// Runs `tandem tui` and returns the exit code; errors are reported on stderr.
pub(crate) async fn run(args: TuiArgs, global: GlobalOptions) -> i32 {
    match execute(args, global).await {
        Ok(code) => code,
        Err(error) => {
            eprintln!("tandem: {error}");
            1
        }
    }
}

async fn execute(args: TuiArgs, global: GlobalOptions) -> Result<i32, SessionError> {
    // SIGTERM and SIGHUP end the session with the same bounded shutdown; Ctrl-C is a key in
    // raw mode (twice quits).
    let mut signals =
        ShutdownSignals::install_without_interrupt().map_err(SessionError::Signals)?;
    let client = args.server.client(SessionSource::Cli, &global).await?;
    let cwd = std::env::current_dir()
        .map_err(|error| SessionError::CurrentDir(error.to_string()))?
        .to_str()
        .ok_or_else(|| SessionError::CurrentDir("the path is not valid UTF-8".into()))?
        .to_owned();
    let mut options = TuiOptions::new(args.server.label(), cwd);
    options.model = args.server.model.clone();
    options.limits.scrollback_rows = args.scrollback;
    options.limits.transcript_entries = args.transcript_limit.max(1);
    options.frame_interval = Duration::from_secs(1) / args.max_fps;
    let received = Cell::new(None);
    // The signals are taken on a task of their own: the UI writes to the terminal on this
    // thread, and a terminal nobody reads any more (a frozen emulator, a lost connection that
    // did not hang up) blocks that write, which would leave a signal unseen for ever. The
    // task arms the shutdown deadline, which ends tandem if the UI never gets to stop.
    let (signalled, on_signal) = tokio::sync::oneshot::channel();
    // An exit at the deadline skips the UI's own restoring of the terminal.
    crate::shutdown_deadline::before_exit(tandem_tui::restore_without_waiting);
    let watcher = tokio::spawn(async move {
        let signal = signals.recv().await;
        crate::shutdown_deadline::arm("tui", crate::shutdown_deadline::SESSION);
        let _ = signalled.send(signal);
    });
    let outcome = tandem_tui::run_in_terminal(client.clone(), options, async {
        if let Ok(signal) = on_signal.await {
            received.set(Some(signal));
        }
    })
    .await;
    watcher.abort();
    crate::shutdown_deadline::arm("tui", crate::shutdown_deadline::SESSION);
    client.close().await;
    Ok(match (outcome, received.get()) {
        (Ok(_), Some(signal)) => {
            eprintln!("tandem: {signal}: stopped; a running turn is interrupted");
            signal.exit_code()
        }
        (Ok(exit), None) => exit.exit_code(),
        (Err(error), _) => {
            eprintln!("tandem: {error}");
            1
        }
    })
}

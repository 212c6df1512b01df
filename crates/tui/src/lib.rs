//! tandem-tui: the full-screen terminal UI of `tandem tui`, a client of the Tandem protocol
//! through tandem-client (in-process, a child server or a websocket, whichever client it is
//! given).
//!
//! - [`state`]: what the screens show, as plain data; client events are applied to it as they
//!   arrive.
//! - [`ui`]: draws a state into a frame (the real terminal or ratatui's `TestBackend`).
//!   A coding agent's file changes (coloured diffs), plans (checklists) and reasoning (dimmed,
//!   folded) are drawn by `diff_view`.
//! - [`keymap`]: which action a key means where.
//! - [`Tui`]: the runtime: intake tasks, the bounded-rate renderer, input handling.
//! - [`TermPane`]: command and process output through a terminal emulator.
//! - [`run_in_terminal`]: all of it on the process's terminal, restored on every way out.
//!
//! Headless use (tests, benches): build a [`Tui`], give [`Tui::run`] a
//! `Terminal<TestBackend>` and a stream of crossterm events.

mod app;
mod composer;
mod diff_view;
pub mod keymap;
mod markdown;
mod pane;
pub mod state;
mod terminal;
pub mod ui;
mod wrap;

use std::future::Future;

pub use app::{
    DEFAULT_FRAME_INTERVAL, ExitReason, PROCESS_QUEUE_DELTAS, Tui, TuiError, TuiOptions,
};
pub use composer::Composer;
pub use markdown::RenderCache;
pub use pane::{PaneSource, TermPane};
pub use terminal::{TerminalGuard, restore, restore_without_waiting};

/// Runs the TUI on this process's terminal (stdin and stdout) until the user quits or
/// `shutdown` resolves. The terminal is restored before this returns, and on a panic; the
/// caller closes the client.
pub async fn run_in_terminal<F>(
    client: tandem_client::Client,
    options: TuiOptions,
    shutdown: F,
) -> Result<ExitReason, TuiError>
where
    F: Future<Output = ()>,
{
    let guard = TerminalGuard::enter().map_err(TuiError::Terminal)?;
    let backend = ratatui::backend::CrosstermBackend::new(std::io::stdout());
    let mut terminal = ratatui::Terminal::new(backend).map_err(TuiError::Terminal)?;
    let tui = Tui::new(client, options);
    let result = tui
        .run(&mut terminal, crossterm::event::EventStream::new(), async {
            tokio::select! {
                () = shutdown => {}
                // A task of the app panicked: the hook restored the terminal, the app stops.
                () = terminal::panicked() => {}
            }
        })
        .await;
    drop(terminal);
    drop(guard);
    if terminal::has_panicked() {
        return Err(TuiError::Panicked);
    }
    result
}

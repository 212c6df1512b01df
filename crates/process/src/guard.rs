//! The server side of the watchdog helper (see [`crate::helper::watchdog`]): one per process,
//! because what it guards against is this process dying.
//!
//! The first child started after a helper program was enabled starts the watchdog; every
//! process group and session a [`super::ProcessManager`] starts is then registered with it,
//! and forgotten once it has no members left. Every child also gets [`MARKER_ENV`] with this
//! process's token appended, which is how the watchdog finds children that left their group.
//! Without a helper program there is no watchdog, which is logged once at info level: children
//! then die on every orderly shutdown but survive a `SIGKILL` of the server.

use std::collections::HashSet;
use std::io::{ErrorKind, Write as _};
use std::os::unix::process::CommandExt as _;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::{Mutex, MutexGuard};

use rand::Rng as _;

use super::group::ProcessScope;
use crate::helper::watchdog::{self, MARKER_ENV, Message, ScopeKind};
use crate::program::HelperProgram;

/// The process-wide guard.
static GUARD: Mutex<GuardState> = Mutex::new(GuardState {
    helper: None,
    no_helper_logged: false,
    start_failure_logged: false,
    marker: None,
    running: None,
    watched: None,
});

#[derive(Debug)]
struct GuardState {
    /// The program re-executed as the watchdog; `None` until enabled.
    helper: Option<HelperProgram>,
    /// Whether the absence of a helper was logged already.
    no_helper_logged: bool,
    /// Whether a failed start was logged at error level already (later ones go to debug, as
    /// the start is retried with every child).
    start_failure_logged: bool,
    /// This process's token and the marker value its children get, made on first use.
    marker: Option<Marker>,
    /// The watchdog, once started (and until it is found dead).
    running: Option<Running>,
    /// Every registered scope, re-sent to a watchdog that had to be restarted.
    watched: Option<HashSet<(ScopeKind, i32)>>,
}

#[derive(Debug)]
struct Marker {
    token: String,
    /// What children get in [`MARKER_ENV`]: the inherited chain, then `token`.
    value: String,
}

#[derive(Debug)]
struct Running {
    child: Child,
    /// The write end of the watchdog's stdin: close-on-exec (as every descriptor std opens)
    /// and non-blocking, so that a stalled watchdog can never hold up a spawn.
    pipe: ChildStdin,
}

fn lock() -> MutexGuard<'static, GuardState> {
    // Every update leaves the state usable, so a panic elsewhere is no reason to stop guarding.
    GUARD
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Makes `helper` this process's watchdog program (see [`crate::helper::watchdog`]): from
/// the next child any [`crate::ProcessManager`] starts, everything they start is killed when
/// this process is gone, however it died; the watchdog starts with the first child.
/// tandem-server's `TandemServer::new` calls it with its `ServerOptions::helper_program`; call
/// it yourself only when you run a `ProcessManager` without a `TandemServer`. The first
/// program enabled in a process wins.
pub fn enable_watchdog(helper: &HelperProgram) {
    let mut state = lock();
    match &state.helper {
        None => state.helper = Some(helper.clone()),
        Some(current) if current != helper => tracing::debug!(
            current = %current.path().display(),
            ignored = %helper.path().display(),
            "a watchdog helper is already enabled for this process"
        ),
        Some(_) => {}
    }
}

/// Prepares for a child about to start: makes sure the watchdog runs, and returns the value
/// of [`MARKER_ENV`] the child must get; `None` without a helper program.
pub(crate) fn prepare_child() -> Option<String> {
    let mut state = lock();
    let Some(helper) = state.helper.clone() else {
        if !state.no_helper_logged {
            state.no_helper_logged = true;
            tracing::info!(
                "no helper program named (ServerOptions::with_helper_program): no watchdog; \
                 children are killed on orderly shutdown but outlive a SIGKILL of this process"
            );
        }
        return None;
    };
    let marker = state.marker.get_or_insert_with(new_marker);
    let value = marker.value.clone();
    if !state.is_running() {
        state.start(&helper);
    }
    Some(value)
}

/// Registers `scope` with the watchdog, if one runs.
pub(crate) fn watch(scope: ProcessScope) {
    let (kind, id) = key(scope);
    let mut state = lock();
    if state.helper.is_none() {
        return;
    }
    state
        .watched
        .get_or_insert_with(HashSet::new)
        .insert((kind, id));
    state.send(Message::Watch(kind, id));
}

/// Tells the watchdog that `scope` has no members left, so its id is never killed again.
pub(crate) fn forget(scope: ProcessScope) {
    let (kind, id) = key(scope);
    let mut state = lock();
    let was_watched = state
        .watched
        .as_mut()
        .is_some_and(|watched| watched.remove(&(kind, id)));
    if was_watched {
        state.send(Message::Forget(kind, id));
    }
}

fn key(scope: ProcessScope) -> (ScopeKind, i32) {
    let kind = if scope.session {
        ScopeKind::Session
    } else {
        ScopeKind::Group
    };
    (kind, scope.leader.as_raw())
}

/// A fresh token (128 random bits in hex) and the marker value built on the inherited one.
fn new_marker() -> Marker {
    let token = format!("{:032x}", rand::rng().random::<u128>());
    let value = match std::env::var(MARKER_ENV) {
        Ok(inherited) if !inherited.is_empty() => format!("{inherited}:{token}"),
        _ => token.clone(),
    };
    Marker { token, value }
}

impl GuardState {
    /// Whether the watchdog was started and has not exited.
    fn is_running(&mut self) -> bool {
        let Some(running) = self.running.as_mut() else {
            return false;
        };
        match running.child.try_wait() {
            Ok(None) => true,
            Ok(Some(status)) => {
                tracing::error!(%status, "the watchdog helper exited; starting a new one");
                self.running = None;
                false
            }
            Err(error) => {
                tracing::error!(%error, "cannot check the watchdog helper; starting a new one");
                self.running = None;
                false
            }
        }
    }

    /// Starts the watchdog and tells it every scope registered so far. A failure is logged:
    /// the children then run unguarded, which is no reason to refuse them.
    fn start(&mut self, helper: &HelperProgram) {
        let Some(marker) = &self.marker else {
            return;
        };
        let mut command = helper.command(watchdog::SUBCOMMAND, [&marker.token]);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            // Holds no directory busy, and sits in a group of its own so that a signal to
            // this process's group (a closed terminal, Ctrl-C) does not reach it first.
            .current_dir("/")
            .process_group(0)
            // It needs no environment, and without one it carries no marker: the watchdog of
            // an outer tandem (which this process may be a child of) then leaves it alive to
            // do its own sweep, and scans for this server's children do not count it.
            .env_clear();
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(error) => {
                if std::mem::replace(&mut self.start_failure_logged, true) {
                    tracing::debug!(helper = %helper.path().display(), %error, "the watchdog helper still cannot start");
                } else {
                    tracing::error!(
                        helper = %helper.path().display(),
                        %error,
                        "cannot start the watchdog helper; children will outlive a SIGKILL of \
                         this process until it starts (retried with every child; check that \
                         the helper program exists and is executable)"
                    );
                }
                return;
            }
        };
        let Some(pipe) = child.stdin.take() else {
            tracing::error!("the watchdog helper has no stdin pipe");
            let _ = child.kill();
            let _ = child.wait();
            return;
        };
        if let Err(error) = rustix::io::ioctl_fionbio(&pipe, true) {
            tracing::warn!(%error, "cannot make the watchdog pipe non-blocking");
        }
        tracing::debug!(pid = child.id(), "watchdog helper started");
        self.running = Some(Running { child, pipe });
        let watched: Vec<(ScopeKind, i32)> = self.watched.iter().flatten().copied().collect();
        for (kind, id) in watched {
            self.send(Message::Watch(kind, id));
        }
    }

    /// Writes one message to the watchdog. A full pipe drops it (the marker still finds the
    /// scope's members); a broken one means the watchdog is gone and is restarted at the next
    /// child.
    fn send(&mut self, message: Message) {
        let Some(running) = self.running.as_mut() else {
            return;
        };
        let line = message.encode();
        // One line is far below PIPE_BUF, so the write is atomic: all or nothing.
        match running.pipe.write(line.as_bytes()) {
            Ok(written) if written == line.len() => {}
            Ok(written) => tracing::warn!(written, ?message, "short write to the watchdog"),
            Err(error) if error.kind() == ErrorKind::WouldBlock => {
                tracing::warn!(
                    ?message,
                    "the watchdog is not reading; scope not registered"
                )
            }
            Err(error) => {
                tracing::error!(%error, ?message, "the watchdog is gone; it restarts with the next child");
                let mut dead = self.running.take();
                if let Some(running) = dead.as_mut() {
                    let _ = running.child.kill();
                    let _ = running.child.wait();
                }
            }
        }
    }
}

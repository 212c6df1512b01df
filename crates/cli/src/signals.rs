//! The signals that end a tandem session hosted by this process (`app-server`, `run`, `chat`):
//! SIGTERM (a service manager), SIGINT (Ctrl-C where the command does not take it itself) and
//! SIGHUP (the terminal or ssh session closed). Without a handler SIGHUP kills the process at
//! once, before running turns are stored and the processes it started are killed; with one,
//! every command shuts its host down the same bounded way.

use std::future::Future;

use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::task::JoinHandle;

/// Handlers for SIGTERM, SIGINT and SIGHUP, installed together.
pub(crate) struct ShutdownSignals {
    terminate: Signal,
    interrupt: Option<Signal>,
    hangup: Signal,
}

impl ShutdownSignals {
    /// Installs handlers for all three: from now on none of them kills the process.
    pub(crate) fn install() -> std::io::Result<Self> {
        Ok(Self {
            terminate: signal(SignalKind::terminate())?,
            interrupt: Some(signal(SignalKind::interrupt())?),
            hangup: signal(SignalKind::hangup())?,
        })
    }

    /// Handlers for SIGTERM and SIGHUP only, for commands that give Ctrl-C a meaning of their
    /// own (interrupting a turn).
    pub(crate) fn install_without_interrupt() -> std::io::Result<Self> {
        Ok(Self {
            terminate: signal(SignalKind::terminate())?,
            interrupt: None,
            hangup: signal(SignalKind::hangup())?,
        })
    }

    /// Runs `session` (`run`'s or `chat`'s) on a task of its own until it ends or a signal
    /// comes. Its writes to stdout and stderr block while a reader stalls, and they must not
    /// hold the wait for a signal too. On a signal the shutdown deadline of `command` is armed
    /// and `stopping` is said without waiting for stderr (the session may hold it, blocked);
    /// the returned task is then the caller's to abort once its client is closed.
    pub(crate) async fn run_session<T: Send + 'static>(
        &mut self,
        command: &'static str,
        stopping: &str,
        session: impl Future<Output = T> + Send + 'static,
    ) -> (Result<T, ShutdownSignal>, JoinHandle<T>) {
        let mut running = tokio::spawn(session);
        let ended = tokio::select! {
            joined = &mut running => {
                Ok(joined.unwrap_or_else(|error| std::panic::resume_unwind(error.into_panic())))
            }
            signal = self.recv() => {
                crate::shutdown_deadline::arm(command, crate::shutdown_deadline::SESSION);
                crate::stderr_without_waiting::say(&format!("\ntandem: {signal}: {stopping}\n"));
                Err(signal)
            }
        };
        (ended, running)
    }

    /// Waits for the next of the signals.
    pub(crate) async fn recv(&mut self) -> ShutdownSignal {
        let interrupt = async {
            match &mut self.interrupt {
                Some(interrupt) => interrupt.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = self.terminate.recv() => ShutdownSignal::Terminate,
            _ = interrupt => ShutdownSignal::Interrupt,
            _ = self.hangup.recv() => ShutdownSignal::Hangup,
        }
    }
}

/// Which signal ended the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShutdownSignal {
    Terminate,
    Interrupt,
    Hangup,
}

impl ShutdownSignal {
    /// The signal's name, for messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Terminate => "SIGTERM",
            Self::Interrupt => "SIGINT",
            Self::Hangup => "SIGHUP",
        }
    }

    /// 128 + the signal's number: what a shell reports for a command the signal ended, for
    /// commands (`run`, `chat`) whose exit code tells how the session ended.
    pub(crate) fn exit_code(self) -> i32 {
        128 + match self {
            Self::Terminate => 15,
            Self::Interrupt => 2,
            Self::Hangup => 1,
        }
    }
}

impl std::fmt::Display for ShutdownSignal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

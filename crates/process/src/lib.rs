//! Tandem's processes: the `process/*` and `command/exec` machinery (docs/protocol.md section
//! 8) — spawning children over pipes or a PTY, streaming their output under its budgets,
//! keeping each PTY's present screen — with the OS sandbox that restricts them ([`sandbox`]:
//! Landlock, seccomp) and the helper re-exec ([`helper`]: the watchdog that kills what the
//! server started when it dies, the sandbox launcher). It knows nothing of threads or stores,
//! and runs under any host or none.
//!
//! Start from [`ProcessManager`] (one per client connection): it talks to the outside only
//! through a [`ProcessEventSink`], whose `await` is the backpressure signal. Each output stream
//! keeps at most [`DELTAS_IN_FLIGHT`] deltas ([`BYTES_IN_FLIGHT`] bytes) handed over and not yet
//! delivered, and stops reading its pipe once [`READ_AHEAD_LIMIT`] bytes wait behind them, so
//! a stalled client throttles the child instead of growing server memory. Control requests never await the sink, so they answer even while it is stalled
//! forever.
//!
//! ```
//! use std::sync::Arc;
//! use tandem_process::{ProcessEventSink, ProcessManager};
//! use tandem_protocol::{
//!     ProcessExitedNotification, ProcessOutputDeltaNotification, ProcessSpawnParams,
//! };
//! use tokio::sync::mpsc;
//!
//! /// Hands each process's exit (with its output, for a spawn that does not stream) to a
//! /// channel.
//! struct Exits(mpsc::UnboundedSender<ProcessExitedNotification>);
//!
//! #[async_trait::async_trait]
//! impl ProcessEventSink for Exits {
//!     async fn output_delta(&self, _delta: ProcessOutputDeltaNotification) {
//!         // Only a streaming spawn sends deltas.
//!     }
//!     async fn exited(&self, exited: ProcessExitedNotification) {
//!         let _ = self.0.send(exited);
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let (sink, mut exits) = mpsc::unbounded_channel();
//! let params = ProcessSpawnParams {
//!     process_handle: "greeting".to_owned(),
//!     command: vec!["echo".to_owned(), "hello".to_owned()],
//!     cwd: Some(std::env::temp_dir().display().to_string()),
//!     ..ProcessSpawnParams::default()
//! };
//! let manager = ProcessManager::new();
//! let spawned = manager.spawn(params, Arc::new(Exits(sink))).await?;
//! // A server sends the `process/spawn` reply here, then lets the process report.
//! spawned.start_streaming();
//! let exited = exits.recv().await.expect("the process exits");
//! assert_eq!((exited.exit_code, exited.stdout.as_str()), (0, "hello\n"));
//! # Ok(())
//! # }
//! ```
//!
//! Files: `error` holds every error text, `plan` validates spawn params, `launch` wires pipes
//! or a PTY, `group` kills what a child started, `guard` registers it with the watchdog that
//! kills it if this process dies (see [`crate::helper::watchdog`]), `stream` is the output
//! pump, `manager` owns the handle table and the control requests, `supervise` waits for exit
//! and sends `process/exited`, `exec` maps `command/exec` onto all of it, `screen` keeps the
//! present screen of each PTY child for `process/screen`; `sandbox` resolves and applies the
//! OS sandbox, `helper` holds the jobs of the re-executed binary.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tandem_protocol::{ProcessExitedNotification, ProcessOutputDeltaNotification, PtySize};

pub mod helper;
mod program;
pub mod sandbox;

mod error;
mod exec;
pub(crate) mod group;
pub(crate) mod guard;
mod guarded;
mod launch;
mod manager;
mod plan;
mod screen;
mod stream;
mod supervise;

#[cfg(test)]
mod tests;

pub use exec::ExecRequest;
pub use guard::enable_watchdog;
pub use guarded::GuardedGroup;
pub use manager::{ProcessManager, SpawnedProcess, StdinWrite};
pub use screen::PtyScreen;

/// Post-exit budget for each stream to reach EOF (descendants may hold the pipe open). Time
/// spent waiting for the consumer to accept a delta is not counted.
pub const DRAIN_BUDGET: Duration = Duration::from_millis(2000);

/// Timeout applied when `timeoutMs` is omitted (`null` means none).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(10_000);

/// The exit code reported for a child killed by its timeout.
pub const TIMEOUT_EXIT_CODE: i32 = 124;

/// Added to the signal number of a child killed by a signal (`SIGKILL` reports 137).
pub const SIGNAL_EXIT_CODE_BASE: i32 = 128;

/// Per-stream output cap applied when `outputBytesCap` is omitted (`null` means none).
pub const DEFAULT_OUTPUT_BYTES_CAP: u64 = 1024 * 1024;

/// Default of the server-wide bound on the output kept in memory for one process, stdout and
/// stderr together (config key `process_output_max_bytes`; see
/// [`ProcessManager::with_kept_output_max`]).
pub const DEFAULT_KEPT_OUTPUT_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// Most bytes merged into one `process/outputDelta`.
pub const DELTA_MERGE_BYTES: usize = 64 * 1024;

/// Most bytes a stream reads ahead while its delta waits for the consumer; past this the pump
/// stops reading so that the child blocks on its own pipe.
pub const READ_AHEAD_LIMIT: usize = 4 * 1024 * 1024;

/// Most bytes one read takes from a child's pipe (a Linux pipe holds 64 KiB by default): reads
/// go straight into chunks of this size, each of which becomes one delta, so it equals
/// [`DELTA_MERGE_BYTES`].
pub const READ_CHUNK_BYTES: usize = DELTA_MERGE_BYTES;

/// Most deltas of one output stream handed to the consumer and not yet delivered (the credit
/// window). More than one lets the pump read the next chunk while the consumer takes the
/// previous ones, instead of one round trip per delta; see [`ProcessEventSink::queue_output_delta`].
pub const DELTAS_IN_FLIGHT: usize = 16;

/// Most bytes of one output stream handed to the consumer and not yet delivered: a stream
/// holds at most this plus [`READ_AHEAD_LIMIT`] (plus its pipe) for a stalled consumer.
pub const BYTES_IN_FLIGHT: usize = DELTAS_IN_FLIGHT * DELTA_MERGE_BYTES;

/// Most delivered deltas a stream counts on its sink keeping
/// ([`ProcessEventSink::deltas_retained`]) when it sizes its store of chunks to reuse; bounds
/// the handles a pump keeps (each only pins memory someone else pins too).
pub const RETAINED_DELTAS_MAX: usize = 1024;

/// What the child's output pipes are enlarged to (`F_SETPIPE_SZ`; Linux's default for an
/// unprivileged process may go up to 1 MiB, `/proc/sys/fs/pipe-max-size`), for at most 16
/// pipes open at once server-wide (the kernel charges pipe buffers to the user): the child then
/// writes on while the pump hands a chunk over, and each read finds a whole chunk waiting.
/// A refusal leaves the pipe at its default size.
pub const PIPE_BYTES: usize = 1024 * 1024;

/// Terminal size used when a `tty` spawn omits `size` (the classic VT100 geometry).
pub const DEFAULT_PTY_SIZE: PtySize = PtySize { rows: 24, cols: 80 };

/// How long [`ProcessManager::kill_all`] waits for killed children to be reaped.
pub const KILL_ALL_REAP_TIMEOUT: Duration = Duration::from_millis(2000);

/// The byte sent to a PTY for `closeStdin`: the terminal's end-of-file character (Ctrl-D).
/// The master cannot be closed without also losing the child's output.
pub const PTY_EOF_BYTE: u8 = 0x04;

/// Receives the notifications of the processes a [`ProcessManager`] runs.
///
/// The host implements this over its outgoing sender. A method returns once the message was
/// handed to the consumer (or the consumer is gone), so waiting here is how backpressure
/// reaches the child. A stream's pump hands over one delta at a time, in order; a sink that
/// can tell "queued in order" apart from "delivered" overrides
/// [`Self::queue_output_delta`] (and [`Self::queue_screen_delta`]) to let up to
/// [`DELTAS_IN_FLIGHT`] deltas ([`BYTES_IN_FLIGHT`] bytes) of a stream be in flight at once.
#[async_trait::async_trait]
pub trait ProcessEventSink: Send + Sync + 'static {
    /// Hands one delta to the consumer; resolves once it was delivered (or the consumer is gone).
    /// Waiting here is how backpressure reaches the child.
    async fn output_delta(&self, delta: ProcessOutputDeltaNotification);
    /// Hands the exit notification to the consumer; resolves once delivered (or consumer gone).
    async fn exited(&self, exited: ProcessExitedNotification);

    /// [`Self::output_delta`] for a PTY process: runs the bytes through the process's emulated
    /// `screen` as they are handed over, so that the screen reflects exactly the output sent.
    /// A sink that lets clients attach late overrides it to feed and queue under
    /// `PtyScreen::order`.
    async fn screen_delta(&self, delta: ProcessOutputDeltaNotification, screen: Arc<PtyScreen>) {
        screen.feed(&delta.delta);
        self.output_delta(delta).await;
    }

    /// Hands one delta to the consumer in order and returns what resolves once it was
    /// delivered. The pump calls this for one delta at a time and keeps at most
    /// [`DELTAS_IN_FLIGHT`] returned deliveries ([`BYTES_IN_FLIGHT`] bytes) pending, so
    /// returning before delivery is what lets a stream have more than one delta in flight;
    /// resolving only once the delta is queued ahead of any later one is what keeps them in
    /// order. By default it is [`Self::output_delta`] with nothing left to wait for: one delta
    /// in flight.
    async fn queue_output_delta(&self, delta: ProcessOutputDeltaNotification) -> DeltaDelivery {
        self.output_delta(delta).await;
        DeltaDelivery::delivered()
    }

    /// [`Self::queue_output_delta`] for a PTY process (see [`Self::screen_delta`]). By default
    /// it is [`Self::screen_delta`] with nothing left to wait for.
    async fn queue_screen_delta(
        &self,
        delta: ProcessOutputDeltaNotification,
        screen: Arc<PtyScreen>,
    ) -> DeltaDelivery {
        self.screen_delta(delta, screen).await;
        DeltaDelivery::delivered()
    }

    /// The most deltas of one stream this sink lets be in flight (clamped to 1 ..=
    /// [`DELTAS_IN_FLIGHT`]). A sink whose deliveries share a bounded queue with other
    /// producers keeps this to a fraction of that queue, so that a stalled consumer's output
    /// never takes all of it. By default [`DELTAS_IN_FLIGHT`].
    fn deltas_in_flight(&self) -> usize {
        DELTAS_IN_FLIGHT
    }

    /// How many of a stream's newest whole deltas this sink may go on holding after their
    /// delivery (a replay window keeps them; at most [`RETAINED_DELTAS_MAX`] count). The pump
    /// reads into a chunk again once nobody holds it, so it keeps handles to that many chunks
    /// plus its window: with fewer, the chunk it could reuse next is always still held, and
    /// every delta costs a fresh allocation. It never reads into a chunk someone holds. By
    /// default 0.
    fn deltas_retained(&self) -> usize {
        0
    }

    /// [`Self::exited`], plus `release`, which frees the process handle. A sink that can run
    /// code at the very moment of hand-over runs `release` there, so that a request the
    /// consumer sends in reaction to the notification finds the handle already free (protocol:
    /// a handle is released once its `process/exited` was sent). By default it is released
    /// once `exited` returns.
    async fn exited_then(&self, exited: ProcessExitedNotification, release: HandleRelease) {
        self.exited(exited).await;
        release.run();
    }
}

/// What resolves once a delta queued by [`ProcessEventSink::queue_output_delta`] was
/// delivered (or the consumer is gone).
pub struct DeltaDelivery(Option<Pin<Box<dyn Future<Output = ()> + Send>>>);

impl DeltaDelivery {
    /// A delivery that already happened.
    pub fn delivered() -> Self {
        Self(None)
    }

    /// A delivery that happens when `delivered` resolves.
    pub fn pending(delivered: impl Future<Output = ()> + Send + 'static) -> Self {
        Self(Some(Box::pin(delivered)))
    }

    /// Whether nothing is left to wait for.
    pub(crate) fn is_done(&self) -> bool {
        self.0.is_none()
    }

    /// Whether the delivery happened, looked at without asking to be woken: the pump checks
    /// its window this way while it reads, so a delivery wakes it only when it waits for one
    /// (see `stream::InFlight::settle`).
    pub(crate) fn poll_done(&mut self) -> bool {
        let Some(delivery) = self.0.as_mut() else {
            return true;
        };
        let mut look = std::task::Context::from_waker(std::task::Waker::noop());
        if delivery.as_mut().poll(&mut look).is_ready() {
            self.0 = None;
        }
        self.0.is_none()
    }

    /// Waits for the delivery. Cancel safe: what is left to wait for stays in `self`.
    pub async fn wait(&mut self) {
        if let Some(delivery) = self.0.as_mut() {
            delivery.as_mut().await;
            self.0 = None;
        }
    }
}

impl std::fmt::Debug for DeltaDelivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_none() {
            "DeltaDelivery(delivered)"
        } else {
            "DeltaDelivery(pending)"
        })
    }
}

/// Frees one finished process's handle; see [`ProcessEventSink::exited_then`]. Dropping it
/// without running it frees the handle too.
pub struct HandleRelease(Option<Box<dyn FnOnce() + Send>>);

impl HandleRelease {
    /// A release that runs `release` (a sink that sends `process/exited` outside
    /// [`ProcessEventSink::exited_then`] passes one that does nothing).
    pub fn new(release: impl FnOnce() + Send + 'static) -> Self {
        Self(Some(Box::new(release)))
    }

    /// Frees the handle now.
    pub fn run(mut self) {
        if let Some(release) = self.0.take() {
            release();
        }
    }
}

impl Drop for HandleRelease {
    fn drop(&mut self) {
        if let Some(release) = self.0.take() {
            release();
        }
    }
}

impl std::fmt::Debug for HandleRelease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HandleRelease")
    }
}

//! A websocket connection's writer in two tasks, as stdio's is in two threads: the connection's
//! writer task picks and encodes messages, and a task of its own puts the encoded frames on the
//! socket. While the socket takes one delta's bytes, the next delta is encoded (issue 31: one
//! task doing both made websocket process output 0.77x of stdio's).
//!
//! Between the two, at most [`FRAMES_BEHIND`] frames and [`BYTES_BEHIND`] bytes, as behind the
//! stdio writer: a frame's bytes stay charged until the socket task has handed them to the
//! websocket layer. What the slow-consumer rules see does not change (docs/host.md):
//! - a full hand-off makes the writer wait in [`FrameSink::send`], and the writer flushes
//!   whenever nothing else is queued, waiting in [`FrameSink::flush`] until the socket task has
//!   flushed everything before it; so whenever a byte is owed the writer is waiting on a write,
//!   where its stall watch (bytes the socket accepted, for the grace period) applies as before;
//! - a close waits for what is handed off to leave, within the close frame's own time limit,
//!   and a stalled peer's close abandons it at once (the socket is full).

use std::io;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::{mpsc, oneshot, watch};

use super::connection::{CloseReason, FrameSink};
use crate::byte_budget::ByteBudget;

/// Most frames handed to the socket task and not yet written.
const FRAMES_BEHIND: usize = 16;

/// Most bytes handed to the socket task and not yet written; a frame larger than this still
/// goes, alone.
const BYTES_BEHIND: usize = 4 * 1024 * 1024;

/// What the writer hands the socket task, in order.
enum Command {
    Frame(Vec<u8>),
    Part {
        part: Vec<u8>,
        first: bool,
        last: bool,
    },
    /// Flush, then say so.
    Flush(oneshot::Sender<()>),
}

/// A [`FrameSink`] that hands frames to a task writing them to `S`.
pub(crate) struct SplitWriterSink {
    commands: Option<mpsc::Sender<Command>>,
    bytes: Arc<ByteBudget>,
    closing: watch::Sender<Option<CloseReason>>,
    finished: Option<tokio::task::JoinHandle<()>>,
}

impl SplitWriterSink {
    /// Starts the socket task over `sink`. `close_limit` bounds how long a close (other than a
    /// stalled peer's) may take to write what was handed off and the close itself.
    pub(crate) fn spawn<S: FrameSink + 'static>(sink: S, close_limit: Duration) -> Self {
        let (commands, queued) = mpsc::channel(FRAMES_BEHIND);
        let (closing, close) = watch::channel(None);
        let bytes = Arc::new(ByteBudget::new(BYTES_BEHIND));
        let finished = tokio::spawn(write_frames(
            sink,
            queued,
            close,
            Arc::clone(&bytes),
            close_limit,
        ));
        Self {
            commands: Some(commands),
            bytes,
            closing,
            finished: Some(finished),
        }
    }

    fn stopped() -> io::Error {
        io::Error::new(io::ErrorKind::BrokenPipe, "the socket writer has stopped")
    }

    /// Hands `command` (of `size` bytes) over once the bytes handed off before leave room.
    async fn hand_over(&mut self, command: Command, size: usize) -> io::Result<()> {
        let commands = self.commands.as_ref().ok_or_else(Self::stopped)?;
        self.bytes.room_for(size).await;
        self.bytes.charge(size);
        commands.send(command).await.map_err(|_| {
            self.bytes.release(size);
            Self::stopped()
        })
    }
}

#[async_trait]
impl FrameSink for SplitWriterSink {
    async fn send(&mut self, frame: &mut Vec<u8>) -> io::Result<()> {
        let frame = std::mem::take(frame);
        let size = frame.len();
        self.hand_over(Command::Frame(frame), size).await
    }

    async fn send_part(&mut self, part: &mut Vec<u8>, first: bool, last: bool) -> io::Result<()> {
        let part = std::mem::take(part);
        let size = part.len();
        self.hand_over(Command::Part { part, first, last }, size)
            .await
    }

    async fn flush(&mut self) -> io::Result<()> {
        let (flushed, done) = oneshot::channel();
        self.hand_over(Command::Flush(flushed), 0).await?;
        // The socket task drops the acknowledgement when a write failed.
        done.await.map_err(|_| Self::stopped())
    }

    async fn close(&mut self, reason: CloseReason) {
        self.closing.send_replace(Some(reason));
        self.commands = None;
        if let Some(finished) = self.finished.take() {
            let _ = finished.await;
        }
    }
}

/// The socket task: writes what is handed over, in order, until the queue ends (the writer
/// closed or went away) and then closes the socket if a close was asked for. A stalled peer's
/// close interrupts the write in progress and abandons the rest; any other close lets the
/// queue drain for at most `close_limit`. A failed write drops the queue, so that the writer's
/// next send or flush fails, as a failed write of its own would have.
async fn write_frames<S: FrameSink>(
    mut sink: S,
    mut queued: mpsc::Receiver<Command>,
    mut close: watch::Receiver<Option<CloseReason>>,
    bytes: Arc<ByteBudget>,
    close_limit: Duration,
) {
    let mut deadline: Option<tokio::time::Instant> = None;
    // A second receiver, so that "any close" and "a stalled close" are awaited side by side.
    let mut any_close = close.clone();
    loop {
        let next = tokio::select! {
            biased;
            () = stalled(&mut close) => {
                sink.close(CloseReason::Stalled).await;
                return;
            }
            () = sleep_until(deadline) => break,
            () = closing(&mut any_close), if deadline.is_none() => {
                close_when_idle(&mut deadline, close_limit);
                continue;
            }
            next = queued.recv() => next,
        };
        let Some(command) = next else { break };
        let written = tokio::select! {
            biased;
            () = stalled(&mut close) => {
                sink.close(CloseReason::Stalled).await;
                return;
            }
            () = sleep_until(deadline) => break,
            written = execute(&mut sink, command, &bytes) => written,
        };
        if let Err(error) = written {
            tracing::debug!(%error, "writing to the connection failed");
            // Nothing more is written: a sender waiting for room must not wait forever.
            bytes.release(usize::MAX);
            drop(queued);
            let reason = close
                .wait_for(Option::is_some)
                .await
                .ok()
                .and_then(|reason| *reason);
            if let Some(reason) = reason {
                sink.close(reason).await;
            }
            return;
        }
    }
    let reason = *close.borrow();
    if let Some(reason) = reason {
        sink.close(reason).await;
    }
}

/// Starts the close's time limit, if it is not running yet.
fn close_when_idle(deadline: &mut Option<tokio::time::Instant>, limit: Duration) {
    deadline.get_or_insert_with(|| tokio::time::Instant::now() + limit);
}

/// Resolves once a stalled peer's close is asked for (never, once the writer is gone without).
async fn stalled(close: &mut watch::Receiver<Option<CloseReason>>) {
    let asked = close
        .wait_for(|reason| matches!(reason, Some(CloseReason::Stalled)))
        .await
        .is_ok();
    if !asked {
        std::future::pending::<()>().await;
    }
}

/// Resolves once any close is asked for (never, once the writer is gone without one).
async fn closing(close: &mut watch::Receiver<Option<CloseReason>>) {
    if close.wait_for(Option::is_some).await.is_err() {
        std::future::pending::<()>().await;
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// Writes one command, releasing its bytes once the websocket layer has them.
async fn execute<S: FrameSink>(
    sink: &mut S,
    command: Command,
    bytes: &ByteBudget,
) -> io::Result<()> {
    match command {
        Command::Frame(mut frame) => {
            let size = frame.len();
            let written = sink.send(&mut frame).await;
            bytes.release(size);
            written
        }
        Command::Part {
            mut part,
            first,
            last,
        } => {
            let size = part.len();
            let written = sink.send_part(&mut part, first, last).await;
            bytes.release(size);
            written
        }
        Command::Flush(flushed) => {
            sink.flush().await?;
            let _ = flushed.send(());
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use tokio::sync::Semaphore;

    /// Records what it is given; each write first takes a permit, so a test decides when the
    /// "socket" takes bytes.
    #[derive(Clone)]
    struct GatedSink {
        log: Arc<Mutex<Vec<String>>>,
        permits: Arc<Semaphore>,
    }

    impl GatedSink {
        fn new() -> Self {
            Self {
                log: Arc::default(),
                permits: Arc::new(Semaphore::new(0)),
            }
        }

        fn log(&self) -> Vec<String> {
            self.log.lock().unwrap().clone()
        }

        async fn gate(&self) {
            self.permits.acquire().await.unwrap().forget();
        }
    }

    #[async_trait]
    impl FrameSink for GatedSink {
        async fn send(&mut self, frame: &mut Vec<u8>) -> io::Result<()> {
            self.gate().await;
            let text = String::from_utf8(std::mem::take(frame)).unwrap();
            self.log.lock().unwrap().push(text);
            Ok(())
        }

        async fn send_part(
            &mut self,
            part: &mut Vec<u8>,
            first: bool,
            last: bool,
        ) -> io::Result<()> {
            self.gate().await;
            let text = String::from_utf8(std::mem::take(part)).unwrap();
            self.log
                .lock()
                .unwrap()
                .push(format!("part {text} {first} {last}"));
            Ok(())
        }

        async fn flush(&mut self) -> io::Result<()> {
            self.gate().await;
            self.log.lock().unwrap().push("flush".to_owned());
            Ok(())
        }

        async fn close(&mut self, reason: CloseReason) {
            self.log.lock().unwrap().push(format!("close {reason:?}"));
        }
    }

    fn now_or_never<F: std::future::Future>(future: F) -> Option<F::Output> {
        futures::FutureExt::now_or_never(future)
    }

    #[tokio::test(start_paused = true)]
    async fn frames_leave_in_order_and_a_flush_waits_for_the_socket() {
        let socket = GatedSink::new();
        let mut sink = SplitWriterSink::spawn(socket.clone(), Duration::from_secs(1));
        for text in ["a", "b"] {
            let mut frame = text.as_bytes().to_vec();
            // Handed off at once, while the socket takes nothing.
            now_or_never(sink.send(&mut frame)).unwrap().unwrap();
            assert!(frame.is_empty(), "the frame moved to the socket task");
        }
        let mut part = b"c".to_vec();
        now_or_never(sink.send_part(&mut part, true, true))
            .unwrap()
            .unwrap();
        let flushed = {
            let mut flush = Box::pin(sink.flush());
            // The flush waits for the socket: a stall watch on the writer still sees it.
            for _ in 0..3 {
                tokio::task::yield_now().await;
                assert!(now_or_never(flush.as_mut()).is_none());
            }
            socket.permits.add_permits(4);
            tokio::time::timeout(Duration::from_secs(5), flush).await
        };
        flushed.expect("the flush completes").unwrap();
        assert_eq!(socket.log(), ["a", "b", "part c true true", "flush"]);
        sink.close(CloseReason::Finished).await;
        assert_eq!(socket.log().last().unwrap(), "close Finished");
    }

    #[tokio::test(start_paused = true)]
    async fn the_hand_off_is_bounded_in_frames() {
        let socket = GatedSink::new();
        let mut sink = SplitWriterSink::spawn(socket.clone(), Duration::from_secs(1));
        let mut sent = 0;
        loop {
            let mut frame = b"x".to_vec();
            let send = tokio::time::timeout(Duration::from_secs(1), sink.send(&mut frame)).await;
            if send.is_err() {
                break;
            }
            sent += 1;
            assert!(sent <= FRAMES_BEHIND + 1, "the hand-off did not fill");
        }
        // The queue, plus the one frame the socket task holds while it waits on the socket.
        assert_eq!(sent, FRAMES_BEHIND + 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_stalled_close_abandons_what_is_handed_off_and_another_close_writes_it() {
        let socket = GatedSink::new();
        let mut sink = SplitWriterSink::spawn(socket.clone(), Duration::from_secs(1));
        let mut frame = b"owed".to_vec();
        now_or_never(sink.send(&mut frame)).unwrap().unwrap();
        sink.close(CloseReason::Stalled).await;
        assert_eq!(socket.log(), ["close Stalled"]);

        let socket = GatedSink::new();
        let mut sink = SplitWriterSink::spawn(socket.clone(), Duration::from_secs(1));
        let mut frame = b"owed".to_vec();
        now_or_never(sink.send(&mut frame)).unwrap().unwrap();
        socket.permits.add_permits(1);
        sink.close(CloseReason::ShuttingDown).await;
        assert_eq!(socket.log(), ["owed", "close ShuttingDown"]);

        // A socket that takes nothing holds a close no longer than its limit.
        let socket = GatedSink::new();
        let mut sink = SplitWriterSink::spawn(socket.clone(), Duration::from_secs(1));
        let mut frame = b"never".to_vec();
        now_or_never(sink.send(&mut frame)).unwrap().unwrap();
        tokio::time::timeout(Duration::from_secs(5), sink.close(CloseReason::Finished))
            .await
            .expect("the close is bounded");
        assert_eq!(socket.log(), ["close Finished"]);
    }
}

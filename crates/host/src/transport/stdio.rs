//! The stdio transport: one client on a byte stream pair, one JSON object per line in each
//! direction. This is how clients launch an app-server as a child process.
//!
//! Reading happens on a dedicated thread (a blocking read of stdin must never hold a runtime
//! worker), which splits lines with a length limit: a longer line is answered with -32600 and
//! skipped, and the connection stays open. Invalid UTF-8 is a parse error of that line only.
//! One writer task encodes each message and hands it, with its newline, to the output (a
//! message of 1 MiB or more in parts of one line, `transport::parts`). On the
//! process's stdout ([`serve`]) that is a dedicated thread too, which writes whatever lines are
//! queued in one go and flushes when the queue is empty: `tokio::io::stdout()` would send every
//! write and every flush through the blocking pool and wait for it, two thread handoffs per
//! message. The end of the input is the end of the session: [`serve`] returns, and the caller
//! shuts the host down.

use std::io::{self, BufRead, BufReader, IoSlice, Read, Write};
use std::os::fd::AsFd as _;
use std::sync::Arc;

use async_trait::async_trait;
use tandem_protocol::JSONRPCErrorError;

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

use super::connection::{CloseReason, FrameSink, error_for};
use super::{TransportHost, WriterPolicy};
use crate::byte_budget::ByteBudget;

/// Default [`StdioOptions::max_line_bytes`]: 64 MiB.
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// Lines read ahead of the connection: the reader thread blocks once this many wait.
const LINES_AHEAD: usize = 16;

/// Lines queued for the stdout thread: the writer task waits once this many wait, which is how
/// a client that stops reading holds the producers back (with at most this many lines, e.g.
/// 64 KiB deltas, in memory).
const LINES_BEHIND: usize = 16;

/// Bytes of the lines queued for the stdout thread: with multi-megabyte messages (a turn's
/// large input echoed back) [`LINES_BEHIND`] alone would not bound the memory. A line larger
/// than this still goes, alone.
const BYTES_BEHIND: usize = 4 * 1024 * 1024;

/// Lines the stdout thread writes with one `writev` at most: a burst of small answers (64 in
/// flight) leaves in few writes. The lines stay charged to [`BYTES_BEHIND`] until written.
const LINES_PER_WRITE: usize = 64;

/// Written line buffers kept for reuse: the writer task takes one back per line, so a few
/// cover a steady stream.
const SPARE_LINES: usize = 4;

/// The writer's encoding buffer keeps at most this capacity between lines, so one huge message
/// does not pin its size for the rest of the session.
const KEPT_FRAME_CAPACITY: usize = 256 * 1024;

/// How long the end of input waits for the requests already read to be answered.
const IN_FLIGHT_FINISH: std::time::Duration = std::time::Duration::from_secs(1);

/// How long the end of input waits for the writer to flush what is still owed.
const WRITER_FINISH: std::time::Duration = std::time::Duration::from_secs(1);

/// Settings of the stdio transport.
#[derive(Debug, Clone)]
pub struct StdioOptions {
    /// Longest accepted line, in bytes, without its newline. Default 64 MiB.
    pub max_line_bytes: usize,
}

impl Default for StdioOptions {
    fn default() -> Self {
        Self {
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
        }
    }
}

/// Serves one client on this process's stdin and stdout until stdin ends or the host stops.
pub async fn serve(host: &TransportHost, options: StdioOptions) -> io::Result<()> {
    // A descriptor of its own on stdout, written without `Stdout`'s lock and line buffering
    // (which would search every line for its last newline and write it out at once): the
    // thread batches lines itself and writes each batch with one `writev`.
    let stdout = std::fs::File::from(io::stdout().as_fd().try_clone_to_owned()?);
    let output = ThreadLineSink::spawn(stdout)?;
    serve_lines(host, io::stdin(), output, options).await
}

/// Serves one client that writes lines to `input` and reads lines from `output`, until
/// `input` ends or the host stops. `input` is read on a thread of its own.
pub async fn serve_io<R, W>(
    host: &TransportHost,
    input: R,
    output: W,
    options: StdioOptions,
) -> io::Result<()>
where
    R: Read + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_lines(host, input, LineSink { output }, options).await
}

async fn serve_lines<R, S>(
    host: &TransportHost,
    input: R,
    output: S,
    options: StdioOptions,
) -> io::Result<()>
where
    R: Read + Send + 'static,
    S: FrameSink + 'static,
{
    // A single connection: a full writer queue holds the producers back (the backpressure
    // chain of docs/host.md) instead of closing the session.
    let connection = host
        .open_connection(WriterPolicy::Backpressure, host.options.channel_capacity)
        .await?;
    let writer = host.spawn_connection_task(connection.outbound.run(output));
    let lines = spawn_reader(input, options.max_line_bytes)?;
    let stop = host.stopping();
    let inbound = connection.inbound;
    let mut lines = lines;
    loop {
        let line = tokio::select! {
            biased;
            () = stop.cancelled() => break,
            line = lines.recv() => line,
        };
        let work = async {
            match line {
                Some(Line::Frame(frame)) => inbound.frame(&frame).await,
                Some(Line::TooLong) => {
                    let error = JSONRPCErrorError::invalid_request(format!(
                        "Invalid request: line exceeds the limit of {} bytes",
                        options.max_line_bytes
                    ));
                    inbound.answer(error_for(None, error)).await;
                }
                Some(Line::Failed(error)) => {
                    tracing::warn!(%error, "reading stdin failed; ending the session");
                    return false;
                }
                None => return false,
            }
            true
        };
        // Handing a frame over may wait for room; shutdown must still be able to end it.
        let go_on = tokio::select! {
            biased;
            () = stop.cancelled() => false,
            go_on = work => go_on,
        };
        if !go_on {
            break;
        }
    }
    if !stop.is_cancelled() {
        inbound.finish_in_flight(IN_FLIGHT_FINISH).await;
    }
    inbound.close().await;
    // The writer finishes once the processor has let go of the connection (answers still
    // queued, the exits of processes it killed); a client that no longer reads must not hold
    // the session open, so this wait is bounded.
    let _ = tokio::time::timeout(WRITER_FINISH, writer).await;
    Ok(())
}

/// What the reader thread hands over.
enum Line {
    /// One line, without its newline (and without a `\r` before it).
    Frame(Vec<u8>),
    /// A line longer than the limit; its bytes were skipped.
    TooLong,
    /// Reading failed; nothing more will come.
    Failed(io::Error),
}

fn spawn_reader<R: Read + Send + 'static>(
    input: R,
    max_line_bytes: usize,
) -> io::Result<mpsc::Receiver<Line>> {
    let (tx, rx) = mpsc::channel(LINES_AHEAD);
    std::thread::Builder::new()
        .name("tandem-stdin".into())
        .spawn(move || {
            let mut reader = BufReader::with_capacity(64 * 1024, input);
            loop {
                let line = match read_line(&mut reader, max_line_bytes) {
                    Ok(Some(line)) => line,
                    Ok(None) => return,
                    Err(error) => Line::Failed(error),
                };
                let failed = matches!(line, Line::Failed(_));
                // The session is gone when nobody receives any more.
                if tx.blocking_send(line).is_err() || failed {
                    return;
                }
            }
        })?;
    Ok(rx)
}

/// Reads the next non-empty line, or `None` at end of input. A line over `max` bytes is read
/// to its end and reported as [`Line::TooLong`] without keeping its bytes.
fn read_line(reader: &mut impl BufRead, max: usize) -> io::Result<Option<Line>> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let buffer = match reader.fill_buf() {
            Ok(buffer) => buffer,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        if buffer.is_empty() {
            // End of input; a last line without a newline still counts.
            return Ok(finish(line, too_long));
        }
        let (chunk, found_newline) = match buffer.iter().position(|byte| *byte == b'\n') {
            Some(end) => (&buffer[..end], true),
            None => (buffer, false),
        };
        if !too_long {
            if line.len() + chunk.len() > max {
                too_long = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = chunk.len() + usize::from(found_newline);
        reader.consume(used);
        if found_newline {
            match finish(std::mem::take(&mut line), too_long) {
                Some(line) => return Ok(Some(line)),
                // A blank line: keep reading.
                None => too_long = false,
            }
        }
    }
}

fn finish(mut line: Vec<u8>, too_long: bool) -> Option<Line> {
    if too_long {
        return Some(Line::TooLong);
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    Some(Line::Frame(line))
}

/// Writes frames as lines; the writer flushes after each burst.
struct LineSink<W> {
    output: W,
}

#[async_trait]
impl<W: AsyncWrite + Unpin + Send> FrameSink for LineSink<W> {
    async fn send(&mut self, frame: &mut Vec<u8>) -> io::Result<()> {
        frame.push(b'\n');
        self.output.write_all(frame).await
    }

    async fn send_part(&mut self, part: &mut Vec<u8>, _first: bool, last: bool) -> io::Result<()> {
        if last {
            part.push(b'\n');
        }
        self.output.write_all(part).await
    }

    async fn flush(&mut self) -> io::Result<()> {
        self.output.flush().await
    }

    async fn close(&mut self, _reason: CloseReason) {
        let _ = self.output.flush().await;
    }
}

/// Hands lines to a thread that writes them to a blocking writer (the process's stdout).
struct ThreadLineSink {
    /// `None` once closed.
    lines: Option<mpsc::Sender<Vec<u8>>>,
    /// The bytes of the queued lines; the thread releases each line once written.
    bytes: Arc<ByteBudget>,
    /// Line buffers the thread has written, for the writer task to encode into again.
    spent: Arc<SpareLines>,
    /// Fires when the thread has written and flushed everything and stopped.
    finished: Option<oneshot::Receiver<()>>,
}

/// Written line buffers on their way back to the writer task: a stream of 64 KiB deltas then
/// costs no allocation per line. Holds at most [`SPARE_LINES`] buffers of at most
/// [`KEPT_FRAME_CAPACITY`] each (1 MiB idle at worst); a buffer that does not fit is freed.
#[derive(Default)]
struct SpareLines {
    buffers: std::sync::Mutex<Vec<Vec<u8>>>,
}

impl SpareLines {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Vec<u8>>> {
        self.buffers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn give_back(&self, mut line: Vec<u8>) {
        if line.capacity() > KEPT_FRAME_CAPACITY {
            return;
        }
        line.clear();
        let mut buffers = self.lock();
        if buffers.len() < SPARE_LINES {
            buffers.push(line);
        }
    }

    /// A spare buffer, or a new one of `capacity`.
    fn take(&self, capacity: usize) -> Vec<u8> {
        self.lock()
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(capacity))
    }
}

impl ThreadLineSink {
    fn spawn<W: Write + Send + 'static>(output: W) -> io::Result<Self> {
        let (lines, mut queued) = mpsc::channel::<Vec<u8>>(LINES_BEHIND);
        let (done, finished) = oneshot::channel();
        let bytes = Arc::new(ByteBudget::new(BYTES_BEHIND));
        let spent = Arc::new(SpareLines::default());
        let (written, returned) = (bytes.clone(), spent.clone());
        std::thread::Builder::new()
            .name("tandem-stdout".into())
            .spawn(move || {
                let mut output = output;
                if let Err(error) = write_lines(&mut queued, &mut output, &written, &returned) {
                    tracing::debug!(%error, "writing to stdout failed");
                }
                // Nothing more is written: a sender waiting for room must not wait forever.
                written.release(usize::MAX);
                let _ = done.send(());
            })?;
        Ok(Self {
            lines: Some(lines),
            bytes,
            spent,
            finished: Some(finished),
        })
    }
}

/// Writes the queued lines, as many as are waiting (up to [`LINES_PER_WRITE`]) in one vectored
/// write, flushing whenever the queue runs empty, until the sink closes or a write fails (the
/// thread then drops the queue, so the next `send` fails). A line's bytes stay charged until
/// it is written.
fn write_lines(
    queued: &mut mpsc::Receiver<Vec<u8>>,
    output: &mut impl Write,
    bytes: &ByteBudget,
    spent: &SpareLines,
) -> io::Result<()> {
    let mut batch: Vec<Vec<u8>> = Vec::with_capacity(LINES_PER_WRITE);
    while let Some(line) = queued.blocking_recv() {
        batch.push(line);
        while batch.len() < LINES_PER_WRITE
            && let Ok(line) = queued.try_recv()
        {
            batch.push(line);
        }
        write_all_vectored(output, &batch)?;
        for line in batch.drain(..) {
            bytes.release(line.len());
            spent.give_back(line);
        }
        if queued.is_empty() {
            output.flush()?;
        }
    }
    output.flush()
}

/// Writes every byte of `lines` (at most [`LINES_PER_WRITE`] of them), in order, with as few
/// vectored writes as the output takes.
fn write_all_vectored(output: &mut impl Write, lines: &[Vec<u8>]) -> io::Result<()> {
    let mut all = [IoSlice::new(&[]); LINES_PER_WRITE];
    let count = lines.len().min(LINES_PER_WRITE);
    for (slice, line) in all.iter_mut().zip(lines) {
        *slice = IoSlice::new(line);
    }
    let mut slices = &mut all[..count];
    // Skips empty lines at the front (there are none: every line ends with its newline).
    IoSlice::advance_slices(&mut slices, 0);
    while !slices.is_empty() {
        match output.write_vectored(slices) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(written) => IoSlice::advance_slices(&mut slices, written),
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

impl ThreadLineSink {
    /// Hands `line` to the thread once the bytes queued before leave room for them.
    async fn queue(&mut self, line: Vec<u8>) -> io::Result<()> {
        let stopped = || io::Error::new(io::ErrorKind::BrokenPipe, "the stdout writer has stopped");
        let lines = self.lines.as_ref().ok_or_else(stopped)?;
        let size = line.len();
        self.bytes.room_for(size).await;
        self.bytes.charge(size);
        lines.send(line).await.map_err(|_| {
            self.bytes.release(size);
            stopped()
        })
    }
}

#[async_trait]
impl FrameSink for ThreadLineSink {
    async fn send(&mut self, frame: &mut Vec<u8>) -> io::Result<()> {
        frame.push(b'\n');
        // The line moves to the thread; the writer task encodes the next one into a buffer of
        // the same size (up to a limit).
        let capacity = frame.capacity().min(KEPT_FRAME_CAPACITY);
        let line = std::mem::replace(frame, self.spent.take(capacity));
        self.queue(line).await
    }

    async fn send_part(&mut self, part: &mut Vec<u8>, _first: bool, last: bool) -> io::Result<()> {
        // A part goes to the thread like a line (the thread writes bytes, not lines), charged
        // to the same byte bound: a large message passes through it a part at a time.
        if last {
            part.push(b'\n');
        }
        self.queue(std::mem::take(part)).await
    }

    async fn flush(&mut self) -> io::Result<()> {
        // The thread flushes by itself whenever its queue runs empty.
        Ok(())
    }

    async fn close(&mut self, _reason: CloseReason) {
        // The thread writes what is queued, flushes and stops.
        self.lines = None;
        if let Some(finished) = self.finished.take() {
            let _ = finished.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], max: usize) -> Vec<String> {
        let mut reader = BufReader::with_capacity(4, input);
        let mut out = Vec::new();
        while let Some(line) = read_line(&mut reader, max).unwrap() {
            out.push(match line {
                Line::Frame(bytes) => String::from_utf8(bytes).unwrap(),
                Line::TooLong => "<too long>".to_owned(),
                Line::Failed(error) => panic!("{error}"),
            });
        }
        out
    }

    #[test]
    fn splits_lines_skips_blanks_and_strips_carriage_returns() {
        assert_eq!(
            lines(b"{\"a\":1}\r\n\n  \n{\"b\":2}\n{\"c\":3}", 100),
            ["{\"a\":1}", "{\"b\":2}", "{\"c\":3}"]
        );
    }

    #[test]
    fn a_line_over_the_limit_is_reported_once_and_the_next_one_is_read() {
        let input = b"0123456789abcdef\nshort\n0123456789abcdef";
        assert_eq!(lines(input, 8), ["<too long>", "short", "<too long>"]);
        // Exactly at the limit is accepted.
        assert_eq!(lines(b"12345678\n", 8), ["12345678"]);
    }

    const LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

    async fn send(sink: &mut ThreadLineSink, text: &str) -> io::Result<()> {
        let mut frame = text.as_bytes().to_vec();
        tandem_test_support::within(
            LIMIT,
            "the stdout queue takes a line",
            sink.send(&mut frame),
        )
        .await
    }

    #[tokio::test]
    async fn a_line_reaches_the_output_without_waiting_for_more() {
        let (reader, writer) = io::pipe().unwrap();
        let mut sink = ThreadLineSink::spawn(writer).unwrap();
        send(&mut sink, r#"{"id":1,"result":{}}"#).await.unwrap();
        // Read on a thread: the line must arrive while the sink stays open.
        let line = tokio::task::spawn_blocking(move || {
            let mut line = String::new();
            BufReader::new(reader).read_line(&mut line).map(|_| line)
        });
        let line = tandem_test_support::within(LIMIT, "the line is flushed", line).await;
        assert_eq!(line.unwrap().unwrap(), "{\"id\":1,\"result\":{}}\n");
        sink.close(CloseReason::ShuttingDown).await;
    }

    #[tokio::test]
    async fn lines_arrive_in_order_and_close_writes_everything_queued() {
        let (mut reader, writer) = io::pipe().unwrap();
        let mut sink = ThreadLineSink::spawn(writer).unwrap();
        let everything = std::thread::spawn(move || {
            let mut text = String::new();
            reader.read_to_string(&mut text).map(|_| text)
        });
        let expected: Vec<String> = (0..1000).map(|n| format!("{{\"n\":{n}}}")).collect();
        for line in &expected {
            send(&mut sink, line).await.unwrap();
        }
        tandem_test_support::within(
            LIMIT,
            "close flushes",
            sink.close(CloseReason::ShuttingDown),
        )
        .await;
        // The thread dropped the pipe's write end once done: the reader saw the end.
        let text = everything.join().unwrap().unwrap();
        assert_eq!(text.lines().collect::<Vec<_>>(), expected);
        assert!(text.ends_with('\n'));
    }

    #[tokio::test]
    async fn a_failed_write_makes_later_sends_fail() {
        let (reader, writer) = io::pipe().unwrap();
        drop(reader);
        let mut sink = ThreadLineSink::spawn(writer).unwrap();
        // The first lines may be queued before the thread finds the pipe broken; after that
        // every send fails.
        let failed = tandem_test_support::within(LIMIT, "a send fails", async {
            loop {
                if let Err(error) = send(&mut sink, "{}").await {
                    return error;
                }
                tokio::task::yield_now().await;
            }
        })
        .await;
        assert_eq!(failed.kind(), io::ErrorKind::BrokenPipe);
        sink.close(CloseReason::ShuttingDown).await;
    }

    #[tokio::test]
    async fn lines_queued_for_stdout_are_bounded_in_bytes() {
        // Nobody reads: the thread blocks on its first write once the pipe and its buffer fill.
        let (reader, writer) = io::pipe().unwrap();
        let mut sink = ThreadLineSink::spawn(writer).unwrap();
        let line = "x".repeat(1024 * 1024);
        let mut queued = 0;
        loop {
            let mut frame = line.as_bytes().to_vec();
            let sent =
                tokio::time::timeout(std::time::Duration::from_millis(500), sink.send(&mut frame))
                    .await;
            match sent {
                Ok(result) => {
                    result.unwrap();
                    queued += 1;
                }
                // Held back: the bytes behind the blocked thread reached their bound.
                Err(_) => break,
            }
            assert!(queued <= LINES_BEHIND, "{queued} lines of 1 MiB queued");
        }
        let bound = BYTES_BEHIND / line.len() + 1;
        assert!(
            queued <= bound,
            "{queued} lines of 1 MiB queued, at most {bound} expected"
        );
        // Reading lets everything through; closing flushes it.
        let drained = std::thread::spawn(move || {
            let mut reader = reader;
            io::copy(&mut reader, &mut io::sink())
        });
        sink.close(CloseReason::ShuttingDown).await;
        let bytes = drained.join().unwrap().unwrap();
        assert_eq!(bytes, (queued as u64) * (line.len() as u64 + 1));
    }

    #[tokio::test]
    async fn a_line_larger_than_the_byte_bound_still_goes() {
        let (mut reader, writer) = io::pipe().unwrap();
        let mut sink = ThreadLineSink::spawn(writer).unwrap();
        let everything = std::thread::spawn(move || {
            let mut text = Vec::new();
            reader.read_to_end(&mut text).map(|_| text.len())
        });
        let huge = "y".repeat(BYTES_BEHIND * 2);
        for _ in 0..2 {
            send(&mut sink, &huge).await.unwrap();
        }
        sink.close(CloseReason::ShuttingDown).await;
        assert_eq!(everything.join().unwrap().unwrap(), 2 * (huge.len() + 1));
    }
}

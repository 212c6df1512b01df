//! Whether a connection's peer is taking what it is sent. A websocket connection that takes no
//! bytes for its grace period is closed (docs/host.md, "Wire hosts"); what counts is bytes
//! leaving, not messages leaving the writer queue: a writer can sit inside one large socket
//! write with its queue under every limit, and a peer that reads slowly through a 64 MiB
//! message is not stalled.
//!
//! [`WriteProgress`] is advanced by the socket itself ([`CountingIo`]) each time the kernel
//! accepts bytes from it; [`stalled`] is the connection writer's watchdog while it waits on a
//! write.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

/// When a connection last moved bytes towards its peer.
#[derive(Debug)]
pub(crate) struct WriteProgress {
    /// What `last` counts from.
    origin: Instant,
    /// Nanoseconds from `origin` to the last progress.
    last: AtomicU64,
}

impl Default for WriteProgress {
    fn default() -> Self {
        Self {
            origin: Instant::now(),
            last: AtomicU64::new(0),
        }
    }
}

impl WriteProgress {
    /// Records that bytes moved now.
    pub(crate) fn advance(&self) {
        let nanos = u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.last.fetch_max(nanos, Ordering::Relaxed);
    }

    /// When bytes last moved (the creation time if they never did).
    fn last(&self) -> Instant {
        self.origin + Duration::from_nanos(self.last.load(Ordering::Relaxed))
    }
}

/// Resolves once no bytes moved for `grace`, counted from the later of now (when the writer
/// starts waiting) and the last progress: a writer that waits on a peer reading slowly through
/// a large write is not stalled while bytes keep going.
pub(crate) async fn stalled(progress: &WriteProgress, grace: Duration) {
    let waiting_since = Instant::now();
    loop {
        let deadline = progress.last().max(waiting_since) + grace;
        if Instant::now() >= deadline {
            return;
        }
        tokio::time::sleep_until(deadline).await;
    }
}

/// A socket whose writes advance a [`WriteProgress`] by what the kernel accepted, which stops
/// once the peer's receive window and our send buffer are full.
#[derive(Debug)]
#[cfg_attr(not(feature = "websocket"), allow(dead_code))]
pub(crate) struct CountingIo<T> {
    inner: T,
    progress: Arc<WriteProgress>,
}

#[cfg_attr(not(feature = "websocket"), allow(dead_code))]
impl<T> CountingIo<T> {
    /// Wraps `inner`; its writes advance `progress`.
    pub(crate) fn new(inner: T, progress: Arc<WriteProgress>) -> Self {
        Self { inner, progress }
    }

    /// What this socket's writes advance.
    pub(crate) fn progress(&self) -> &Arc<WriteProgress> {
        &self.progress
    }

    fn counted(&self, written: Poll<io::Result<usize>>) -> Poll<io::Result<usize>> {
        if let Poll::Ready(Ok(bytes)) = &written
            && *bytes > 0
        {
            self.progress.advance();
        }
        written
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for CountingIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for CountingIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.counted(written)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.counted(written)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt as _;

    #[tokio::test(start_paused = true)]
    async fn the_grace_counts_from_the_last_progress() {
        let progress = WriteProgress::default();
        let grace = Duration::from_secs(10);
        let started = Instant::now();
        let watch = stalled(&progress, grace);
        tokio::pin!(watch);
        // Progress at 6 s moves the deadline to 16 s.
        tokio::select! {
            () = &mut watch => panic!("stalled while bytes moved"),
            () = tokio::time::sleep(Duration::from_secs(6)) => progress.advance(),
        }
        watch.await;
        assert_eq!(started.elapsed(), Duration::from_secs(16));
    }

    #[tokio::test(start_paused = true)]
    async fn progress_before_the_wait_does_not_shorten_it() {
        let progress = WriteProgress::default();
        progress.advance();
        tokio::time::sleep(Duration::from_secs(60)).await;
        let started = Instant::now();
        stalled(&progress, Duration::from_secs(10)).await;
        assert_eq!(started.elapsed(), Duration::from_secs(10));
    }

    #[tokio::test(start_paused = true)]
    async fn accepted_writes_advance_and_refused_ones_do_not() {
        let progress = Arc::new(WriteProgress::default());
        // Room for 4 bytes, then the "socket" is full: the peer does not read.
        let (ours, _theirs) = tokio::io::duplex(4);
        let mut io = CountingIo::new(ours, progress.clone());
        tokio::time::sleep(Duration::from_secs(1)).await;
        io.write_all(b"abcd").await.unwrap();
        assert_eq!(progress.last(), Instant::now());
        let accepted_at = Instant::now();
        let full = tokio::time::timeout(Duration::from_secs(5), io.write_all(b"e")).await;
        assert!(full.is_err(), "the write waits for a reader");
        assert_eq!(progress.last(), accepted_at);
    }
}

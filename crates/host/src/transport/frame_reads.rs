//! The websocket's read side without a large message's buffer kept for the connection's life.
//!
//! tungstenite reads frames into one `BytesMut` and hands a frame's payload out as a slice of
//! it, without a copy. For a frame of N bytes it reserves N more bytes on top of what its last
//! read already brought in (the first bytes of the payload, and possibly of the next frame), so
//! after the frame is split off, the buffer's remainder still lies in the N-byte allocation; and
//! once the payload is dropped, the next reservation reclaims that whole allocation for reuse.
//! Either way a 48 MiB request leaves 48 MiB resident until the connection ends: the whole turn
//! it started pays for it.
//!
//! [`FrameReads`] sits between the socket and tungstenite and never hands out bytes past the end
//! of the frame header or payload being read: tungstenite then reserves exactly the payload, and
//! nothing remains of the allocation once the payload is split off. [`HeaderReads`] counts the
//! reads that start a new frame: tungstenite makes the next frame's first reservation just
//! before such a read, so the reader keeps its last large payload alive until the count moves
//! (then that reservation cannot reclaim the payload's allocation and takes a small one), and
//! drops it after: the N bytes are freed as soon as the request is decoded.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Bytes read from the socket at a time while looking for a frame's header: a small request
/// (header and payload) usually comes in one read.
const HEADER_READ_BYTES: usize = 16 * 1024;

/// Counts the reads at a frame boundary (see the module's doc).
#[derive(Debug, Default)]
pub(crate) struct HeaderReads(AtomicU64);

impl HeaderReads {
    /// How many reads started a new frame so far.
    pub(crate) fn count(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A socket whose reads stop at each websocket frame's header and payload boundaries.
pub(crate) struct FrameReads<T> {
    inner: T,
    /// Bytes read from the socket and not handed out yet: `buffer[start..]`.
    buffer: Vec<u8>,
    start: usize,
    /// Bytes of the current frame's header still to hand out, then its payload's.
    header_left: usize,
    payload_after_header: u64,
    payload_left: u64,
    header_reads: Arc<HeaderReads>,
}

impl<T> FrameReads<T> {
    /// Wraps `inner`, a server's socket (its peer masks every frame).
    pub(crate) fn new(inner: T, header_reads: Arc<HeaderReads>) -> Self {
        Self {
            inner,
            buffer: Vec::new(),
            start: 0,
            header_left: 0,
            payload_after_header: 0,
            payload_left: 0,
            header_reads,
        }
    }

    fn buffered(&self) -> &[u8] {
        &self.buffer[self.start..]
    }

    /// The length of the header at the front of the buffer and its payload's, once enough of
    /// it is buffered (RFC 6455 section 5.2).
    fn parse_header(&self) -> Option<(usize, u64)> {
        let bytes = self.buffered();
        let second = *bytes.get(1)?;
        let mask = if second & 0x80 != 0 { 4 } else { 0 };
        let (extended, length) = match second & 0x7f {
            126 => (
                2,
                u64::from(u16::from_be_bytes(bytes.get(2..4)?.try_into().ok()?)),
            ),
            127 => (8, u64::from_be_bytes(bytes.get(2..10)?.try_into().ok()?)),
            short => (0, u64::from(short)),
        };
        let header = 2 + extended + mask;
        (bytes.len() >= header).then_some((header, length))
    }

    /// Hands out up to `limit` buffered bytes into `buf`; how many.
    fn hand_out(&mut self, buf: &mut ReadBuf<'_>, limit: u64) -> usize {
        let available = self.buffered().len();
        let count = usize::try_from(limit)
            .unwrap_or(usize::MAX)
            .min(available)
            .min(buf.remaining());
        buf.put_slice(&self.buffer[self.start..self.start + count]);
        self.start += count;
        if self.start == self.buffer.len() {
            self.start = 0;
            self.buffer.clear();
        }
        count
    }
}

impl<T: AsyncRead + Unpin> FrameReads<T> {
    /// Reads more of the socket into the buffer; `Ok(0)` at its end.
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        if self.start > 0 {
            self.buffer.drain(..self.start);
            self.start = 0;
        }
        let old = self.buffer.len();
        self.buffer.resize(old + HEADER_READ_BYTES, 0);
        let mut read = ReadBuf::new(&mut self.buffer[old..]);
        let polled = Pin::new(&mut self.inner).poll_read(cx, &mut read);
        let filled = read.filled().len();
        self.buffer.truncate(old + filled);
        ready!(polled)?;
        Poll::Ready(Ok(filled))
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for FrameReads<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        if this.header_left > 0 {
            if this.buffered().is_empty() && ready!(this.poll_fill(cx))? == 0 {
                return Poll::Ready(Ok(()));
            }
            let given = this.hand_out(buf, this.header_left as u64);
            this.header_left -= given;
            if this.header_left == 0 {
                this.payload_left = this.payload_after_header;
            }
            return Poll::Ready(Ok(()));
        }
        if this.payload_left > 0 {
            if this.buffered().is_empty() {
                // Straight into the reader's buffer: a large payload is not copied twice.
                let limit = usize::try_from(this.payload_left)
                    .unwrap_or(usize::MAX)
                    .min(buf.remaining());
                let slice = buf.initialize_unfilled_to(limit);
                let mut read = ReadBuf::new(slice);
                ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
                let filled = read.filled().len();
                buf.advance(filled);
                this.payload_left -= filled as u64;
                return Poll::Ready(Ok(()));
            }
            let given = this.hand_out(buf, this.payload_left);
            this.payload_left -= given as u64;
            return Poll::Ready(Ok(()));
        }
        // A new frame: the reader made its reservation for it just before this read.
        this.header_reads.0.fetch_add(1, Ordering::Relaxed);
        loop {
            if let Some((header, payload)) = this.parse_header() {
                this.header_left = header;
                this.payload_after_header = payload;
                let given = this.hand_out(buf, header as u64);
                this.header_left -= given;
                if this.header_left == 0 {
                    this.payload_left = payload;
                }
                return Poll::Ready(Ok(()));
            }
            if ready!(this.poll_fill(cx))? == 0 {
                // The end of the stream inside a header: hand over what there is, then the end.
                this.hand_out(buf, u64::MAX);
                return Poll::Ready(Ok(()));
            }
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for FrameReads<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
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
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    /// A masked client frame (the mask is all zero: the payload goes as is).
    fn frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![0x80 | opcode];
        match payload.len() {
            short @ 0..=125 => out.push(0x80 | short as u8),
            medium @ 126..=0xffff => {
                out.push(0x80 | 126);
                out.extend_from_slice(&(medium as u16).to_be_bytes());
            }
            long => {
                out.push(0x80 | 127);
                out.extend_from_slice(&(long as u64).to_be_bytes());
            }
        }
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(payload);
        out
    }

    #[tokio::test]
    async fn reads_stop_at_every_header_and_payload_boundary() {
        let frames = [
            frame(1, b"small"),
            frame(1, &vec![b'x'; 70_000]),
            frame(9, b""),
            frame(2, &vec![b'y'; 300]),
        ];
        let mut wire = Vec::new();
        for frame in &frames {
            wire.extend_from_slice(frame);
        }
        let (mut client, server) = tokio::io::duplex(1 << 20);
        client.write_all(&wire).await.unwrap();
        drop(client);
        let reads = Arc::new(HeaderReads::default());
        let mut socket = FrameReads::new(server, reads.clone());
        // The boundaries every read must respect: the end of each header and of each payload.
        let mut boundaries = Vec::new();
        let mut at = 0;
        for frame in &frames {
            let header = if frame.len() - 6 <= 125 {
                6
            } else if frame.len() - 8 <= 0xffff {
                8
            } else {
                14
            };
            boundaries.push(at + header);
            at += frame.len();
            boundaries.push(at);
        }
        let mut got = Vec::new();
        let mut buffer = vec![0; 1 << 20];
        loop {
            let count = socket.read(&mut buffer).await.unwrap();
            if count == 0 {
                break;
            }
            let end = got.len() + count;
            assert!(
                !boundaries.iter().any(|b| *b > got.len() && *b < end),
                "a read from {} to {end} crosses a boundary",
                got.len()
            );
            got.extend_from_slice(&buffer[..count]);
        }
        assert_eq!(got, wire);
        // One read at each of the four frames' starts, and one at the end.
        assert_eq!(reads.count(), 5);
    }
}

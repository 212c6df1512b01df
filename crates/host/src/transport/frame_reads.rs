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
//! of a frame's header or payload that is not wholly buffered: tungstenite then reserves exactly
//! the payload, and nothing remains of the allocation once the payload is split off. A frame
//! that is wholly buffered (at most [`READ_BYTES`], since that is all a read brings in) is
//! handed out whole, together with the whole frames after it, in one read: pipelined requests
//! then cost one of tungstenite's reads for the lot, not two each (issue 32; tungstenite zeroes
//! the room it offers on every read). [`HeaderReads`] counts the reads that start a new frame:
//! tungstenite makes the next frame's first reservation just before such a read, so the reader
//! keeps its last large payload alive until the count moves (then that reservation cannot
//! reclaim the payload's allocation and takes a small one), and drops it after: the N bytes are
//! freed as soon as the request is decoded.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tungstenite::protocol::frame::FrameHeader;

/// Bytes read from the socket at a time while looking for a frame's header: a small request
/// (header and payload), or a burst of them, usually comes in one read. The websocket layer's
/// read buffer is this size too (`websocket::socket_config`): it zeroes the room it offers on
/// every read, so a larger one costs more on each small message than it saves on large ones.
pub(crate) const READ_BYTES: usize = 16 * 1024;

/// Counts the reads at a frame boundary (see the module's doc).
#[derive(Debug, Default)]
pub(crate) struct HeaderReads(AtomicU64);

impl HeaderReads {
    /// How many reads started a new frame so far.
    pub(crate) fn count(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// What the front of the buffered bytes holds.
enum Front {
    /// A whole frame header: its length and its payload's.
    Header(usize, u64),
    /// The start of a header; more bytes are needed.
    Partial,
    /// Bytes no frame starts with (a reserved opcode): tungstenite is handed them as they are,
    /// and fails the connection with its own protocol error.
    Invalid,
}

/// Reads the frame header at the front of `bytes` (RFC 6455 section 5.2) with tungstenite's own
/// parser, so that these reads cut frames exactly where tungstenite's reader will.
fn front(bytes: &[u8]) -> Front {
    let mut cursor = io::Cursor::new(bytes);
    match FrameHeader::parse(&mut cursor) {
        Ok(Some((_, payload))) => match usize::try_from(cursor.position()) {
            Ok(header) => Front::Header(header, payload),
            Err(_) => Front::Invalid,
        },
        Ok(None) => Front::Partial,
        Err(_) => Front::Invalid,
    }
}

/// How many bytes at the front of `bytes` are whole frames (headers and payloads), at most
/// `room`.
fn whole_frames(bytes: &[u8], room: usize) -> usize {
    let mut at = 0;
    while let Front::Header(header, payload) = front(&bytes[at..]) {
        let end = usize::try_from(payload)
            .ok()
            .and_then(|payload| at.checked_add(header)?.checked_add(payload));
        match end {
            Some(end) if end <= bytes.len() && end <= room => at = end,
            _ => break,
        }
    }
    at
}

/// A socket whose reads stop at each websocket frame's header and payload boundaries, unless
/// the frames are wholly buffered.
pub(crate) struct FrameReads<T> {
    inner: T,
    /// Bytes read from the socket and not handed out yet: `buffer[start..end]`. Allocated (and
    /// zeroed) once; reads go into it as it is.
    buffer: Box<[u8]>,
    start: usize,
    end: usize,
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
            buffer: vec![0; READ_BYTES].into_boxed_slice(),
            start: 0,
            end: 0,
            header_left: 0,
            payload_after_header: 0,
            payload_left: 0,
            header_reads,
        }
    }

    fn buffered(&self) -> &[u8] {
        &self.buffer[self.start..self.end]
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
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        count
    }
}

impl<T: AsyncRead + Unpin> FrameReads<T> {
    /// Reads more of the socket into the buffer; `Ok(0)` at its end. Called only while a
    /// header is incomplete, so the buffer always has room.
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        if self.start > 0 {
            self.buffer.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        debug_assert!(self.end < self.buffer.len(), "a header fits the buffer");
        let mut read = ReadBuf::new(&mut self.buffer[self.end..]);
        ready!(Pin::new(&mut self.inner).poll_read(cx, &mut read))?;
        let filled = read.filled().len();
        self.end += filled;
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
            let (header, payload) = match front(this.buffered()) {
                Front::Header(header, payload) => (header, payload),
                Front::Invalid => {
                    this.hand_out(buf, u64::MAX);
                    return Poll::Ready(Ok(()));
                }
                Front::Partial => {
                    if ready!(this.poll_fill(cx))? == 0 {
                        // The end of the stream inside a header: hand over what there is, then
                        // the end.
                        this.hand_out(buf, u64::MAX);
                        return Poll::Ready(Ok(()));
                    }
                    continue;
                }
            };
            // Whole frames go out together: several small requests, one read.
            let whole = whole_frames(this.buffered(), buf.remaining());
            if whole > 0 {
                this.hand_out(buf, whole as u64);
                return Poll::Ready(Ok(()));
            }
            this.header_left = header;
            this.payload_after_header = payload;
            let given = this.hand_out(buf, header as u64);
            this.header_left -= given;
            if this.header_left == 0 {
                this.payload_left = payload;
            }
            return Poll::Ready(Ok(()));
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
    use std::time::Duration;
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

    /// Reads `socket` to its end, `room` bytes at most at a time; every read's bytes.
    async fn reads(socket: &mut FrameReads<tokio::io::DuplexStream>, room: usize) -> Vec<Vec<u8>> {
        let mut reads = Vec::new();
        let mut buffer = vec![0; room];
        loop {
            let count = socket.read(&mut buffer).await.unwrap();
            if count == 0 {
                return reads;
            }
            reads.push(buffer[..count].to_vec());
        }
    }

    async fn frame_reads_of(
        wire: &[u8],
    ) -> (FrameReads<tokio::io::DuplexStream>, Arc<HeaderReads>) {
        let (mut client, server) = tokio::io::duplex(1 << 20);
        client.write_all(wire).await.unwrap();
        drop(client);
        let reads = Arc::new(HeaderReads::default());
        (FrameReads::new(server, reads.clone()), reads)
    }

    #[tokio::test]
    async fn a_frame_not_wholly_buffered_is_read_header_first_then_payload() {
        let frames = [
            frame(1, b"small"),
            frame(1, &vec![b'x'; 70_000]),
            frame(9, b""),
            frame(2, &vec![b'y'; 300]),
        ];
        let wire = frames.concat();
        let (mut socket, header_reads) = frame_reads_of(&wire).await;
        // Where each frame starts and its header ends.
        let mut starts = Vec::new();
        let mut header_ends = Vec::new();
        let mut at = 0;
        for frame in &frames {
            let Front::Header(header, _) = front(frame) else {
                panic!("a whole frame")
            };
            starts.push(at);
            header_ends.push(at + header);
            at += frame.len();
        }
        starts.push(at);
        let got = tokio::time::timeout(Duration::from_secs(10), reads(&mut socket, 1 << 20))
            .await
            .unwrap();
        assert_eq!(got.concat(), wire);
        let mut offset = 0;
        let mut spans = Vec::new();
        for read in &got {
            spans.push((offset, offset + read.len()));
            offset += read.len();
        }
        // The large frame (more than a read brings in) never shares a read: its header comes
        // alone, then its payload, which no read passes.
        let large = (starts[1], header_ends[1], starts[2]);
        assert!(spans.contains(&(large.0, large.1)), "{spans:?}");
        for &(from, to) in &spans {
            assert!(
                to <= large.0
                    || from >= large.2
                    || (from >= large.1 && to <= large.2)
                    || (from, to) == (large.0, large.1),
                "the read {from}..{to} crosses a boundary of the large frame"
            );
        }
        // The small frames went whole: the first alone (the large one follows it), the last two
        // together.
        assert!(spans.contains(&(starts[0], starts[1])), "{spans:?}");
        assert!(spans.contains(&(starts[2], starts[4])), "{spans:?}");
        // Reads at frame starts: the first frame, the large header, the last two, the end.
        assert_eq!(header_reads.count(), 4);
    }

    #[tokio::test]
    async fn bytes_no_frame_starts_with_are_handed_out_as_they_are() {
        // Opcode 3 is reserved: no header, however many bytes follow.
        let mut wire = frame(3, b"hello");
        wire.extend(frame(1, b"after"));
        let (mut socket, _) = frame_reads_of(&wire).await;
        let got = tokio::time::timeout(Duration::from_secs(10), reads(&mut socket, 1 << 20))
            .await
            .unwrap();
        assert_eq!(got.concat(), wire);
    }

    #[tokio::test]
    async fn pipelined_small_frames_come_whole_in_one_read() {
        let frames: Vec<Vec<u8>> = (0..64)
            .map(|n| {
                frame(
                    1,
                    format!("{{\"id\":{n},\"method\":\"thread/loaded/list\"}}").as_bytes(),
                )
            })
            .collect();
        let wire = frames.concat();
        assert!(wire.len() < READ_BYTES);
        let (mut socket, header_reads) = frame_reads_of(&wire).await;
        let got = tokio::time::timeout(Duration::from_secs(10), reads(&mut socket, READ_BYTES))
            .await
            .unwrap();
        assert_eq!(got.len(), 1, "all 64 in one read");
        assert_eq!(got[0], wire);
        assert_eq!(header_reads.count(), 2, "one read of frames and the end");

        // With room for two and a half frames, a read takes the two whole ones.
        let (mut socket, _) = frame_reads_of(&wire).await;
        let room = frames[0].len() + frames[1].len() + frames[2].len() / 2;
        let got = tokio::time::timeout(Duration::from_secs(10), reads(&mut socket, room))
            .await
            .unwrap();
        assert_eq!(got.concat(), wire);
        assert_eq!(got[0], [frames[0].clone(), frames[1].clone()].concat());
    }
}

//! Large data frames written to the socket as they are, around tungstenite's write buffer.
//!
//! tungstenite copies every frame it sends into its write buffer before the socket gets it. For
//! a small answer that copy is what lets a burst leave in one write; for a process's output
//! delta (about 87 KiB encoded) it is one more pass over every byte, which the stdio transport
//! does not make (its writer thread writes the encoded line as it is). So a large frame's header
//! and payload go to the socket in vectored writes, once everything tungstenite holds has been
//! written (the websocket transport's `SocketHalf::write_large_frame`). The parts of a message
//! too large to encode whole (256 KiB each) are such frames too.
//!
//! tungstenite also writes on its own: the pong that answers a ping, while the connection's
//! reader reads. A pong written into the middle of a raw frame would corrupt the stream, so the
//! socket under tungstenite is a [`GatedWrites`]: while a raw frame is partly written, its
//! [`WriteGate`] is held and tungstenite's writes wait (tungstenite takes that as a full
//! socket, keeps the pong and sends it on its next write or read); the frame's end opens the
//! gate and wakes them. A raw frame abandoned part-way (the connection is being closed: a
//! stalled peer, a shutdown) leaves the stream unframed, so from then on the gate refuses
//! tungstenite's writes with an error (its close frame would land inside the cut-off frame); the
//! socket is still shut down.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use futures::task::AtomicWaker;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tungstenite::protocol::frame::FrameHeader;
use tungstenite::protocol::frame::coding::{Data, OpCode};

/// Payloads at least this long are written raw; shorter ones are gathered by tungstenite's
/// write buffer with the frames around them.
pub(crate) const RAW_FRAME_BYTES: usize = 32 * 1024;

/// Held while a raw frame is partly written: tungstenite's own writes wait for it.
#[derive(Debug, Default)]
pub(crate) struct WriteGate {
    held: AtomicBool,
    /// A raw frame was abandoned part-way: nothing more may be written.
    torn: AtomicBool,
    waiting: AtomicWaker,
}

impl WriteGate {
    fn hold(&self) {
        self.held.store(true, Ordering::Release);
    }

    fn open(&self) {
        self.held.store(false, Ordering::Release);
        self.waiting.wake();
    }

    /// Pending (and woken when the gate opens) while it is held; an error once a raw frame
    /// was cut off.
    fn poll_open(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.held.load(Ordering::Acquire) {
            self.waiting.register(cx.waker());
            // Opened between the first look and the registration: nothing would wake us.
            if self.held.load(Ordering::Acquire) {
                return Poll::Pending;
            }
        }
        if self.torn.load(Ordering::Acquire) {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "a large frame was cut off part-way; the connection is closing and can take no \
                 more frames",
            )));
        }
        Poll::Ready(Ok(()))
    }
}

/// Holds the gate until dropped, when a raw frame's write ends, finished or not. Dropped with
/// part of the frame written (the write abandoned by a close), it tears the gate too.
pub(crate) struct GateHeld<'a> {
    gate: &'a WriteGate,
    partly_written: bool,
}

impl<'a> GateHeld<'a> {
    pub(crate) fn hold(gate: &'a WriteGate) -> Self {
        gate.hold();
        Self {
            gate,
            partly_written: false,
        }
    }

    /// Records the frame's progress: some of it written, or all.
    pub(crate) fn wrote(&mut self, whole: bool) {
        self.partly_written = !whole;
    }
}

impl Drop for GateHeld<'_> {
    fn drop(&mut self) {
        if self.partly_written {
            self.gate.torn.store(true, Ordering::Release);
        }
        self.gate.open();
    }
}

/// The socket under tungstenite: reads pass through; writes wait while the gate is held.
pub(crate) struct GatedWrites<T> {
    inner: T,
    gate: Arc<WriteGate>,
}

impl<T> GatedWrites<T> {
    pub(crate) fn new(inner: T, gate: Arc<WriteGate>) -> Self {
        Self { inner, gate }
    }
}

impl<T: AsyncWrite + Unpin> GatedWrites<T> {
    /// Writes past the gate: what the holder of the gate writes.
    pub(crate) fn poll_write_raw(
        &mut self,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for GatedWrites<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for GatedWrites<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        std::task::ready!(self.gate.poll_open(cx))?;
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        std::task::ready!(self.gate.poll_open(cx))?;
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        std::task::ready!(self.gate.poll_open(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    /// Waits for a frame being written, but shuts down even after a cut-off one: shutting the
    /// socket adds no bytes to it.
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let _torn = std::task::ready!(self.gate.poll_open(cx));
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// The header of an unmasked text frame of `payload` bytes (a server's frames are never masked),
/// by tungstenite's own formatter: the bytes and their length. A whole message is one frame,
/// `first` and `last`; a message in parts (RFC 6455 section 5.4) starts with a text frame
/// without FIN and goes on in continuation frames, the last with FIN.
pub(crate) fn text_frame_header(payload: usize, first: bool, last: bool) -> ([u8; 14], usize) {
    let header = FrameHeader {
        is_final: last,
        opcode: if first {
            OpCode::Data(Data::Text)
        } else {
            OpCode::Data(Data::Continue)
        },
        mask: None,
        ..FrameHeader::default()
    };
    let mut bytes = io::Cursor::new([0u8; 14]);
    header
        .format(payload as u64, &mut bytes)
        .expect("a frame header fits in 14 bytes");
    let used = usize::try_from(bytes.position()).expect("at most 14");
    (bytes.into_inner(), used)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::poll_fn;
    use tokio::io::AsyncWriteExt as _;

    #[test]
    fn headers_read_back_as_unmasked_text_frames_of_their_length_and_place() {
        let places = [
            (true, true, OpCode::Data(Data::Text)),
            (true, false, OpCode::Data(Data::Text)),
            (false, false, OpCode::Data(Data::Continue)),
            (false, true, OpCode::Data(Data::Continue)),
        ];
        for length in [0, 125, 126, 65_535, 65_536, RAW_FRAME_BYTES, 48 << 20] {
            for (first, last, opcode) in places {
                let (header, used) = text_frame_header(length, first, last);
                let mut cursor = io::Cursor::new(&header[..used]);
                let (parsed, payload) = FrameHeader::parse(&mut cursor)
                    .expect("a valid header")
                    .expect("a whole header");
                assert_eq!(cursor.position(), used as u64, "length {length}");
                assert_eq!(payload, length as u64);
                assert_eq!(parsed.is_final, last);
                assert_eq!(parsed.opcode, opcode);
                assert_eq!(parsed.mask, None);
            }
        }
    }

    /// A raw frame abandoned part-way tears the gate: tungstenite's next write (a close frame)
    /// fails instead of landing inside it, and the socket can still be shut. One written whole
    /// leaves the gate open.
    #[tokio::test]
    async fn a_frame_cut_off_part_way_refuses_later_writes_and_a_whole_one_does_not() {
        let gate = Arc::new(WriteGate::default());
        let (socket, _peer) = tokio::io::duplex(64);
        let mut io = GatedWrites::new(socket, gate.clone());

        let mut held = GateHeld::hold(&gate);
        let written = poll_fn(|cx| io.poll_write_raw(cx, &[IoSlice::new(&[1; 16])]))
            .await
            .unwrap();
        held.wrote(written == 16);
        drop(held);
        io.write_all(b"after a whole frame").await.unwrap();

        let mut held = GateHeld::hold(&gate);
        let written = poll_fn(|cx| io.poll_write_raw(cx, &[IoSlice::new(&[2; 8])]))
            .await
            .unwrap();
        assert_eq!(written, 8);
        // The frame had 100 bytes: the write is abandoned after 8.
        held.wrote(false);
        drop(held);
        let refused = io.write_all(b"close").await.unwrap_err();
        assert_eq!(refused.kind(), io::ErrorKind::BrokenPipe);
        io.shutdown().await.unwrap();
    }
}

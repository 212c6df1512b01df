//! Large data frames written to the socket as they are, around tungstenite's write buffer.
//!
//! tungstenite copies every frame it sends into its write buffer before the socket gets it. For
//! a small answer that copy is what lets a burst leave in one write; for a process's output
//! delta (about 87 KiB encoded) it is one more pass over every byte, which the stdio transport
//! does not make (its writer thread writes the encoded line as it is). So a large frame's header
//! and payload go to the socket in vectored writes, once everything tungstenite holds has been
//! written ([`write_large_frame`]).
//!
//! tungstenite also writes on its own: the pong that answers a ping, while the connection's
//! reader reads. A pong written into the middle of a raw frame would corrupt the stream, so the
//! socket under tungstenite is a [`GatedWrites`]: while a raw frame is partly written, its
//! [`WriteGate`] is held and tungstenite's writes wait (tungstenite takes that as a full
//! socket, keeps the pong and sends it on its next write or read); the frame's end opens the
//! gate and wakes them.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use futures::task::AtomicWaker;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Payloads at least this long are written raw; shorter ones are gathered by tungstenite's
/// write buffer with the frames around them.
pub(crate) const RAW_FRAME_BYTES: usize = 32 * 1024;

/// Held while a raw frame is partly written: tungstenite's own writes wait for it.
#[derive(Debug, Default)]
pub(crate) struct WriteGate {
    held: AtomicBool,
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

    /// Pending (and woken when the gate opens) while it is held.
    fn poll_open(&self, cx: &mut Context<'_>) -> Poll<()> {
        if !self.held.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        self.waiting.register(cx.waker());
        // Opened between the first look and the registration: nothing would wake us.
        if self.held.load(Ordering::Acquire) {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    }
}

/// Holds the gate until dropped: when a raw frame's write ends, finished or not (a write
/// dropped mid-frame by a close leaves a socket that is being closed, and tungstenite must not
/// wait on it forever after).
pub(crate) struct GateHeld<'a>(&'a WriteGate);

impl<'a> GateHeld<'a> {
    pub(crate) fn hold(gate: &'a WriteGate) -> Self {
        gate.hold();
        Self(gate)
    }
}

impl Drop for GateHeld<'_> {
    fn drop(&mut self) {
        self.0.open();
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
        std::task::ready!(self.gate.poll_open(cx));
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        std::task::ready!(self.gate.poll_open(cx));
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        std::task::ready!(self.gate.poll_open(cx));
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        std::task::ready!(self.gate.poll_open(cx));
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// The header of an unmasked final text frame of `payload` bytes (RFC 6455 section 5.2): a
/// server's frames are never masked.
pub(crate) fn text_frame_header(payload: usize) -> ([u8; 10], usize) {
    let mut header = [0u8; 10];
    header[0] = 0x81;
    let used = if payload < 126 {
        header[1] = payload as u8;
        2
    } else if let Ok(short) = u16::try_from(payload) {
        header[1] = 126;
        header[2..4].copy_from_slice(&short.to_be_bytes());
        4
    } else {
        header[1] = 127;
        header[2..10].copy_from_slice(&(payload as u64).to_be_bytes());
        10
    };
    (header, used)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tungstenite::protocol::frame::FrameHeader;
    use tungstenite::protocol::frame::coding::{Data, OpCode};

    #[test]
    fn headers_read_back_as_final_unmasked_text_frames_of_their_length() {
        for length in [0, 125, 126, 65_535, 65_536, RAW_FRAME_BYTES, 48 << 20] {
            let (header, used) = text_frame_header(length);
            let mut cursor = io::Cursor::new(&header[..used]);
            let (parsed, payload) = FrameHeader::parse(&mut cursor)
                .expect("a valid header")
                .expect("a whole header");
            assert_eq!(cursor.position(), used as u64, "length {length}");
            assert_eq!(payload, length as u64);
            assert!(parsed.is_final);
            assert_eq!(parsed.opcode, OpCode::Data(Data::Text));
            assert_eq!(parsed.mask, None);
        }
    }
}

//! The raw proxy's bridge: the websocket protocol's bytes both ways, untouched, while each
//! direction is watched for a close frame.
//!
//! A byte bridge alone cannot tell a client's ordinary close (its close frame, the server's
//! echo, the end of the socket) from a server that went away under a connected client (a
//! daemon stopped, restarted or killed): both end the socket. The reference's proxy keeps
//! running in the second case until its client writes into the dead socket. Watching the frame
//! headers (never the payloads, which pass in bulk) tells them apart, so the user reads on
//! stderr that the server went away, and the client sees its stdout end at once.

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::UnixStream;
use tokio_tungstenite::tungstenite;
use tungstenite::protocol::frame::FrameHeader;
use tungstenite::protocol::frame::coding::{Control, OpCode};

use super::{DRAIN_LIMIT, ProxyError};

/// Why a connection that ended with no close frame ended, for the user.
pub(super) const UNCLOSED_END: &str =
    "the connection ended without a close frame: it stopped or was killed";
/// Bytes copied per read, each way.
const CHUNK: usize = 64 * 1024;

/// Bridges stdio and `stream` until the client is done, or the server goes away without the
/// client having closed (then [`ProxyError::ServerGone`]).
pub(super) async fn bridge(stream: UnixStream, socket: &Path) -> Result<(), ProxyError> {
    let (mut from_server, mut to_server) = stream.into_split();
    let client_closed = AtomicBool::new(false);

    let to_stdout = async {
        let mut stdout = tokio::io::stdout();
        let mut buffer = vec![0u8; CHUNK];
        let mut watch = CloseWatch::default();
        loop {
            let read = match from_server.read(&mut buffer).await {
                Ok(0) => break,
                Ok(read) => read,
                Err(error) => return Err(ServerSide::Broken(error.to_string())),
            };
            watch.feed(&buffer[..read]);
            stdout
                .write_all(&buffer[..read])
                .await
                .map_err(ServerSide::Stdout)?;
            stdout.flush().await.map_err(ServerSide::Stdout)?;
        }
        Ok(watch.close)
    };

    let from_stdin = async {
        let mut stdin = tokio::io::stdin();
        let mut buffer = vec![0u8; CHUNK];
        let mut watch = CloseWatch::default();
        loop {
            let read = stdin.read(&mut buffer).await?;
            if read == 0 {
                break;
            }
            watch.feed(&buffer[..read]);
            if watch.close.is_some() {
                client_closed.store(true, Ordering::SeqCst);
            }
            if let Err(error) = to_server.write_all(&buffer[..read]).await {
                return Err(ProxyError::ServerGone {
                    socket: socket.to_owned(),
                    why: format!("writing to it failed: {error}"),
                    unanswered: None,
                });
            }
        }
        // The end of stdin reaches the server as the end of its input; its answer (the echo
        // of a close) still reaches stdout below.
        let _ = to_server.shutdown().await;
        Ok::<(), ProxyError>(())
    };

    tokio::pin!(to_stdout);
    tokio::select! {
        ended = &mut to_stdout => {
            let gone = |why: String| ProxyError::ServerGone {
                socket: socket.to_owned(),
                why,
                unanswered: None,
            };
            match ended {
                // The server's side of a close the client began.
                Ok(_) if client_closed.load(Ordering::SeqCst) => Ok(()),
                Ok(Some(code)) => Err(gone(describe_close(code))),
                Ok(None) => Err(gone(UNCLOSED_END.to_owned())),
                Err(ServerSide::Broken(error)) => Err(gone(format!("the connection broke: {error}"))),
                Err(ServerSide::Stdout(error)) => Err(ProxyError::ClientGone(error)),
            }
        }
        read = from_stdin => {
            read?;
            // Bounded like the line mode's drain: a server that never ends the connection
            // after the client's end keeps nobody waiting.
            match tokio::time::timeout(DRAIN_LIMIT, to_stdout).await {
                Ok(Err(ServerSide::Stdout(error))) => Err(ProxyError::ClientGone(error)),
                _ => Ok(()),
            }
        }
    }
}

/// What ended the copy from the server to stdout.
enum ServerSide {
    /// Reading the socket failed.
    Broken(String),
    /// Writing to stdout failed: the client is gone.
    Stdout(std::io::Error),
}

/// Why a server's close frame ended the connection, for the user.
pub(super) fn describe_close(code: Option<u16>) -> String {
    match code {
        Some(1001) => "it is shutting down (close 1001, going away)".to_owned(),
        Some(code) => format!("it closed the connection (close {code})"),
        None => "it closed the connection".to_owned(),
    }
}

/// Where a [`CloseWatch`] is in the byte stream.
#[derive(Debug)]
enum Phase {
    /// Still in the HTTP upgrade, this many bytes of its closing `\r\n\r\n` matched.
    Http { matched: usize },
    /// In a frame header, whose bytes so far are in `header`.
    Header,
    /// In a frame's payload, `left` bytes of it still to come; `close` when it is a close
    /// frame, whose first two payload bytes (the status code) are kept.
    Payload { left: u64, close: bool },
    /// Past bytes no frame starts with: nothing more is watched.
    Unreadable,
}

/// Follows one direction of a websocket connection (the HTTP upgrade, then frames) far enough
/// to see a close frame and its status code.
#[derive(Debug)]
struct CloseWatch {
    phase: Phase,
    header: Vec<u8>,
    close_payload: Vec<u8>,
    /// Set at the first close frame: its status code, if it carried one.
    close: Option<Option<u16>>,
}

impl Default for CloseWatch {
    fn default() -> Self {
        Self {
            phase: Phase::Http { matched: 0 },
            header: Vec::with_capacity(14),
            close_payload: Vec::with_capacity(2),
            close: None,
        }
    }
}

impl CloseWatch {
    /// Takes the next bytes of the stream.
    fn feed(&mut self, mut bytes: &[u8]) {
        const END_OF_HEAD: &[u8; 4] = b"\r\n\r\n";
        while !bytes.is_empty() && self.close.is_none() {
            match &mut self.phase {
                Phase::Http { matched } => {
                    let byte = bytes[0];
                    bytes = &bytes[1..];
                    *matched = if byte == END_OF_HEAD[*matched] {
                        *matched + 1
                    } else if byte == b'\r' {
                        1
                    } else {
                        0
                    };
                    if *matched == END_OF_HEAD.len() {
                        self.phase = Phase::Header;
                    }
                }
                Phase::Header => {
                    self.header.push(bytes[0]);
                    bytes = &bytes[1..];
                    let parsed = match parse_header(&self.header) {
                        Ok(parsed) => parsed,
                        Err(error) => {
                            // Not the websocket protocol: the bytes still pass, unwatched.
                            tracing::debug!(%error, "the proxied stream is not websocket frames");
                            self.phase = Phase::Unreadable;
                            continue;
                        }
                    };
                    if let Some((length, close)) = parsed {
                        self.header.clear();
                        if length == 0 {
                            if close {
                                self.close = Some(None);
                            }
                        } else {
                            self.close_payload.clear();
                            self.phase = Phase::Payload {
                                left: length,
                                close,
                            };
                        }
                    }
                }
                Phase::Unreadable => return,
                Phase::Payload { left, close } => {
                    let take =
                        usize::try_from(*left).map_or(bytes.len(), |left| left.min(bytes.len()));
                    if *close {
                        let want = 2usize.saturating_sub(self.close_payload.len()).min(take);
                        self.close_payload.extend_from_slice(&bytes[..want]);
                    }
                    bytes = &bytes[take..];
                    *left -= take as u64;
                    if *left == 0 {
                        if *close {
                            self.close = Some(
                                <[u8; 2]>::try_from(self.close_payload.as_slice())
                                    .ok()
                                    .map(u16::from_be_bytes),
                            );
                        }
                        self.phase = Phase::Header;
                    }
                }
            }
        }
    }
}

/// What the front of `header` holds: a whole frame header (its payload's length and whether it
/// is a close frame), or `Ok(None)` while bytes are missing; an error for bytes no frame starts
/// with. tungstenite's parser, so that the watch reads frames as the peers' websocket layers do.
fn parse_header(header: &[u8]) -> tungstenite::Result<Option<(u64, bool)>> {
    let parsed = FrameHeader::parse(&mut io::Cursor::new(header))?;
    Ok(parsed.map(|(header, length)| {
        (
            length,
            matches!(header.opcode, OpCode::Control(Control::Close)),
        )
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The websocket opcode of a close frame (RFC 6455, 5.5.1).
    const CLOSE_OPCODE: u8 = 0x8;

    fn frame(opcode: u8, payload: &[u8], masked: bool) -> Vec<u8> {
        let mut bytes = vec![0x80 | opcode];
        let mask_bit = if masked { 0x80 } else { 0 };
        match payload.len() {
            len @ 0..=125 => bytes.push(mask_bit | len as u8),
            len @ 126..=0xffff => {
                bytes.push(mask_bit | 126);
                bytes.extend_from_slice(&(len as u16).to_be_bytes());
            }
            len => {
                bytes.push(mask_bit | 127);
                bytes.extend_from_slice(&(len as u64).to_be_bytes());
            }
        }
        if masked {
            // A zero mask leaves the payload as it is, which is all the watch needs.
            bytes.extend_from_slice(&[0; 4]);
        }
        bytes.extend_from_slice(payload);
        bytes
    }

    fn stream(frames: &[Vec<u8>]) -> Vec<u8> {
        let mut bytes = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n".to_vec();
        for frame in frames {
            bytes.extend_from_slice(frame);
        }
        bytes
    }

    /// Feeds `bytes` in pieces of `step` and returns what the watch saw.
    fn watch(bytes: &[u8], step: usize) -> Option<Option<u16>> {
        let mut watch = CloseWatch::default();
        for piece in bytes.chunks(step) {
            watch.feed(piece);
        }
        watch.close
    }

    #[test]
    fn a_close_is_seen_after_frames_of_every_length_however_the_bytes_are_cut() {
        let bytes = stream(&[
            frame(0x1, b"{\"id\":1}", false),
            // A payload that holds the bytes of a close frame must not be taken for one.
            frame(
                0x2,
                &frame(CLOSE_OPCODE, &1001u16.to_be_bytes(), false).repeat(100),
                false,
            ),
            frame(0x2, &vec![0x88; 70_000], false),
            frame(CLOSE_OPCODE, &1001u16.to_be_bytes(), false),
        ]);
        for step in [1, 2, 3, 7, 125, 4096, bytes.len()] {
            assert_eq!(watch(&bytes, step), Some(Some(1001)), "pieces of {step}");
        }
    }

    #[test]
    fn a_clients_masked_close_and_an_empty_close_are_seen() {
        let masked = stream(&[
            frame(0x1, b"{}", true),
            frame(CLOSE_OPCODE, &1000u16.to_be_bytes(), true),
        ]);
        assert_eq!(watch(&masked, 5), Some(Some(1000)));
        assert_eq!(
            watch(&stream(&[frame(CLOSE_OPCODE, b"", false)]), 1),
            Some(None)
        );
    }

    #[test]
    fn after_bytes_no_frame_starts_with_nothing_is_watched() {
        // Opcode 3 is reserved; a close after it is not read as one.
        let bytes = stream(&[
            frame(0x3, b"", false),
            frame(CLOSE_OPCODE, &1000u16.to_be_bytes(), false),
        ]);
        assert_eq!(watch(&bytes, 1), None);
    }

    #[test]
    fn no_close_means_none() {
        let bytes = stream(&[frame(0x1, b"{\"id\":1}", false), frame(0x9, b"", false)]);
        assert_eq!(watch(&bytes, 3), None);
        // Still in the upgrade: nothing is a frame yet.
        assert_eq!(watch(b"HTTP/1.1 101 Switching\r\n\x88\x00", 1), None);
    }
}

//! A watch on one direction of a websocket byte stream that sees its close frame: for a bridge
//! that passes the protocol's bytes untouched (`tandem app-server proxy`) and still has to tell a
//! peer's close from a connection that just ended.
//!
//! It follows the HTTP upgrade's head, then the frame headers (parsed by tungstenite, as the
//! peers' websocket layers parse them), and skips every payload by its length, except a close
//! frame's first two bytes (its status code). Bytes that no frame starts with end the watch;
//! they still pass the bridge.

use std::io;

use tungstenite::protocol::frame::FrameHeader;
use tungstenite::protocol::frame::coding::{Control, OpCode};

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
/// to see a close frame and its status code, reading headers only: payloads are skipped by
/// their length, never parsed.
#[derive(Debug)]
pub struct CloseWatch {
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
    /// The first close frame seen so far: `Some(code)` once one passed (`code` is `None` when
    /// it carried no status code), `None` before.
    pub fn close(&self) -> Option<Option<u16>> {
        self.close
    }

    /// Takes the next bytes of the stream, in order, cut anywhere.
    pub fn feed(&mut self, mut bytes: &[u8]) {
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
        watch.close()
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

//! Large messages leave in parts: a message whose estimated JSON size reaches
//! [`PARTED_MESSAGE_BYTES`] is serialized on a blocking thread straight into parts of
//! [`PART_BYTES`], handed one by one through a queue of [`PARTS_AHEAD`] to the connection's
//! writer, which writes each as it comes (a websocket fragment, or a piece of a stdio line).
//! The encoded message is never whole in memory: a `turn/completed` that carries a 48 MiB
//! input and its 48 MiB answer costs at most `(PARTS_AHEAD + 2) * PART_BYTES` of encoding on
//! its way out, instead of a 96 MiB buffer and the transport's copy of it (docs/host.md, "Wire
//! hosts"; docs/performance.md, "One copy of a payload").
//!
//! Small messages keep the writer's fast path (encoded into one reused buffer on the writer's
//! own task): a thread handoff per message would cost more than the copy it saves.

use std::io;

use tandem_protocol::wire::{self, EncodeError, ServerMessage};
use tokio::sync::mpsc;

/// Messages estimated at least this large (the size the writer queue's byte budget charged)
/// are encoded in parts. 1 MiB: far above every message of an ordinary session (deltas,
/// replies), far below the multi-megabyte inputs whose copies the memory bound is about.
pub(crate) const PARTED_MESSAGE_BYTES: usize = 1024 * 1024;

/// Size of each part (the last one may be shorter). 256 KiB: large enough that a part costs
/// one socket write of useful size, small enough that the parts in flight stay a few MiB.
pub(crate) const PART_BYTES: usize = 256 * 1024;

/// Parts encoded ahead of the writer: the encoding thread waits once this many are queued,
/// so a peer that reads slowly holds the encoding back instead of letting it pile up.
pub(crate) const PARTS_AHEAD: usize = 2;

/// What the encoding thread hands the writer.
#[derive(Debug)]
pub(crate) enum Part {
    /// A part of the message; more follow.
    More(Vec<u8>),
    /// The last part (possibly empty): the message is complete.
    Last(Vec<u8>),
    /// Encoding failed; what was handed over before is not a whole message.
    Failed(EncodeError),
}

/// Starts encoding `message` in parts of `part_bytes` on a blocking thread, and returns the
/// queue the parts arrive on, in order. Dropping the queue stops the encoding at its next
/// part (the writer gave up on the connection).
pub(crate) fn encode(message: ServerMessage, part_bytes: usize) -> mpsc::Receiver<Part> {
    let (parts, queue) = mpsc::channel(PARTS_AHEAD);
    tokio::task::spawn_blocking(move || {
        let mut writer = PartWriter {
            parts,
            part: Vec::with_capacity(part_bytes),
            part_bytes,
        };
        match wire::write_server_message(&message, &mut writer) {
            Ok(()) => {
                let last = std::mem::take(&mut writer.part);
                let _ = writer.parts.blocking_send(Part::Last(last));
            }
            // The writer is gone: nobody to tell.
            Err(_) if writer.parts.is_closed() => {}
            Err(error) => {
                let _ = writer.parts.blocking_send(Part::Failed(error));
            }
        }
        // The message (and the payloads it shares with others) is released here, on the
        // blocking thread, once its last byte is encoded.
        drop(message);
    });
    queue
}

/// An `io::Write` that cuts what serde writes into parts of a fixed size and queues each one
/// as soon as it is full.
struct PartWriter {
    parts: mpsc::Sender<Part>,
    part: Vec<u8>,
    part_bytes: usize,
}

impl io::Write for PartWriter {
    fn write(&mut self, mut bytes: &[u8]) -> io::Result<usize> {
        let written = bytes.len();
        while !bytes.is_empty() {
            let room = self.part_bytes - self.part.len();
            let (now, later) = bytes.split_at(room.min(bytes.len()));
            self.part.extend_from_slice(now);
            bytes = later;
            if self.part.len() == self.part_bytes {
                let full = std::mem::replace(&mut self.part, Vec::with_capacity(self.part_bytes));
                self.parts.blocking_send(Part::More(full)).map_err(|_| {
                    io::Error::new(io::ErrorKind::BrokenPipe, "the connection's writer is gone")
                })?;
            }
        }
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tandem_protocol::RequestId;

    fn big_response(text_bytes: usize) -> ServerMessage {
        ServerMessage::Response {
            id: RequestId::Integer(7),
            result: json!({"text": "a\"b\n".repeat(text_bytes / 4)}),
        }
    }

    async fn collect(mut queue: mpsc::Receiver<Part>) -> (Vec<u8>, usize, usize) {
        let (mut all, mut largest, mut count) = (Vec::new(), 0, 0);
        loop {
            match queue
                .recv()
                .await
                .expect("the encoding ends with its last part")
            {
                Part::More(part) => {
                    assert_eq!(part.len(), 1000, "every part but the last is full");
                    largest = largest.max(part.capacity());
                    count += 1;
                    all.extend_from_slice(&part);
                }
                Part::Last(part) => {
                    assert!(part.len() <= 1000);
                    largest = largest.max(part.capacity());
                    all.extend_from_slice(&part);
                    return (all, largest, count + 1);
                }
                Part::Failed(error) => panic!("{error}"),
            }
        }
    }

    #[tokio::test]
    async fn the_parts_are_the_encoded_message_and_none_is_larger_than_a_part() {
        let message = big_response(100_000);
        let mut whole = Vec::new();
        wire::encode_server_message(&message, &mut whole).unwrap();
        let (parted, largest, count) = collect(encode(message, 1000)).await;
        assert_eq!(parted, whole, "byte for byte the same JSON");
        assert!(largest <= 1000, "a part of {largest} bytes");
        // An exact multiple of the part size ends with an empty last part.
        let full = whole.len().div_ceil(1000);
        assert!((full..=full + 1).contains(&count), "{count} parts");
    }

    #[tokio::test]
    async fn a_dropped_queue_stops_the_encoding() {
        let message = big_response(1_000_000);
        let mut queue = encode(message, 1000);
        assert!(matches!(queue.recv().await, Some(Part::More(_))));
        drop(queue);
        // Nothing to observe but that this returns: the thread's next send fails and it ends.
    }
}

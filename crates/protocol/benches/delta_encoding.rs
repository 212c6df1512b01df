//! `cargo bench -p tandem-protocol --bench delta_encoding [-- VARIANT [DELTAS]]`: what putting
//! one 64 KiB `process/outputDelta` on the wire costs the server, path by path, in one run.
//!
//! - `wire`: `wire::encode_server_message`, the dedicated output delta path (SIMD base64
//!   straight into the frame), plus the constant-time size the router charges for it;
//! - `generic`: the same message through the generic serde path (`bytes_base64::serialize`,
//!   SIMD base64 in 3 KiB pieces, every piece scanned for escapes by serde_json);
//! - `before`: what issue 16 found: the router's size estimate base64-encoded the delta once
//!   to count it, and the writer encoded it again with the scalar `base64` crate into a
//!   string that serde_json then scanned for escapes and copied;
//! - `decode`: the client's side, `wire::decode_server_message` of the encoded line.
//!
//! Times are medians of five rounds and shown as ratios to `wire` from the same run; on a
//! loaded machine compare instruction counts instead:
//! `valgrind --tool=callgrind target/release/deps/delta_encoding-* before 50` (and `wire`,
//! `none` for the setup alone): per delta, (total - none) / 250 (5 rounds of 50).

use std::hint::black_box;
use std::time::Instant;

use base64::Engine as _;
use serde::ser::{Serialize, SerializeStruct, Serializer};
use tandem_protocol::wire::{ServerMessage, decode_server_message, encode_server_message};
use tandem_protocol::{
    Bytes, ProcessOutputDeltaNotification, ProcessOutputStream, ServerNotification, bytes_base64,
};

const DELTA_BYTES: usize = 64 * 1024;
const EMITTED_AT_MS: i64 = 1_767_225_600_000;

/// `{method, params, emittedAtMs}` with any params.
struct Envelope<P>(P);

impl<P: Serialize> Serialize for Envelope<P> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut envelope = serializer.serialize_struct("Notification", 3)?;
        envelope.serialize_field("method", "process/outputDelta")?;
        envelope.serialize_field("params", &self.0)?;
        envelope.serialize_field("emittedAtMs", &EMITTED_AT_MS)?;
        envelope.end()
    }
}

/// The params as they were encoded before issue 16: one scalar base64 string per delta.
struct ScalarParams<'a>(&'a ProcessOutputDeltaNotification);

impl Serialize for ScalarParams<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let delta = self.0;
        let mut params = serializer.serialize_struct("ProcessOutputDeltaNotification", 4)?;
        params.serialize_field("processHandle", &delta.process_handle)?;
        params.serialize_field("stream", &delta.stream)?;
        let text = base64::engine::general_purpose::STANDARD.encode(&delta.delta);
        params.serialize_field("deltaBase64", &text)?;
        params.serialize_field("capReached", &delta.cap_reached)?;
        params.end()
    }
}

fn main() {
    let mut args = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with("--"));
    let only = args.next();
    let deltas: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(2_000);
    let delta = ProcessOutputDeltaNotification {
        process_handle: "wire-bench".to_owned(),
        stream: ProcessOutputStream::Stdout,
        delta: Bytes::from(vec![0u8; DELTA_BYTES]),
        cap_reached: false,
    };
    let message = ServerMessage::Notification {
        notification: ServerNotification::ProcessOutputDelta(delta.clone()),
        emitted_at_ms: Some(EMITTED_AT_MS),
        cursor: None,
    };
    let mut line = Vec::new();
    encode_server_message(&message, &mut line).expect("a delta encodes");
    // Every path writes the same bytes.
    let generic = serde_json::to_vec(&Envelope(&delta)).expect("serde encodes");
    let before = serde_json::to_vec(&Envelope(ScalarParams(&delta))).expect("serde encodes");
    assert_eq!(generic, line);
    assert_eq!(before, line);

    type Path<'a> = Box<dyn Fn(&mut Vec<u8>) -> usize + 'a>;
    let paths: Vec<(&str, Path<'_>)> = vec![
        (
            "wire",
            Box::new(|out| {
                encode_server_message(&message, out).expect("a delta encodes");
                bytes_base64::encoded_len(delta.delta.len())
            }),
        ),
        (
            "generic",
            Box::new(|out| {
                serde_json::to_writer(&mut *out, &Envelope(&delta)).expect("serde encodes");
                0
            }),
        ),
        (
            "before",
            Box::new(|out| {
                let counted = base64::engine::general_purpose::STANDARD
                    .encode(&delta.delta)
                    .len();
                serde_json::to_writer(&mut *out, &Envelope(ScalarParams(&delta)))
                    .expect("serde encodes");
                counted
            }),
        ),
        (
            "decode",
            Box::new(|_| match decode_server_message(&line) {
                Ok(_) => 1,
                Err(error) => panic!("{error}"),
            }),
        ),
    ];
    let mut medians = Vec::new();
    for (name, path) in &paths {
        if only.as_deref().is_some_and(|only| only != *name) {
            continue;
        }
        let mut rounds = Vec::new();
        let mut out = Vec::with_capacity(2 * line.len());
        for _ in 0..5 {
            let began = Instant::now();
            for _ in 0..deltas {
                out.clear();
                black_box(path(&mut out));
                black_box(&out);
            }
            rounds.push(began.elapsed().as_secs_f64() / deltas as f64);
        }
        rounds.sort_by(f64::total_cmp);
        medians.push((*name, rounds[2]));
    }
    println!("one 64 KiB process/outputDelta, median of 5 rounds of {deltas}:");
    let wire = medians
        .iter()
        .find_map(|(name, seconds)| (*name == "wire").then_some(*seconds));
    for (name, seconds) in &medians {
        let ratio = wire.map_or(String::new(), |wire| {
            format!("{:>7.2}x wire", seconds / wire)
        });
        println!(
            "  {name:<8} {:>9.2} us/delta {:>8.0} MB/s of output {ratio}",
            seconds * 1e6,
            DELTA_BYTES as f64 / seconds / 1e6
        );
    }
}

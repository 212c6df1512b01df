//! Client processes (`process/*`, experimental): streamed stdin and output, a PTY resized and
//! killed, and 8 MiB of output to a client that stops reading for two seconds.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};

use super::*;
use crate::session::{Session, Transport};

/// How long the slow client stops reading.
const READ_PAUSE: Duration = Duration::from_secs(2);

/// 8 MiB of `seq` output: every line differs, so a lost, repeated or reordered chunk shows.
const BIG_OUTPUT_BYTES: usize = 8 * 1024 * 1024;
const BIG_OUTPUT_LINES: u32 = 1_200_000;

fn base64(bytes: &[u8]) -> String {
    BASE64.encode(bytes)
}

/// The `process/exited` a streamed process ends with.
fn exited(handle: &str, exit_code: i32) -> Value {
    note(
        "process/exited",
        json!({
            "processHandle": handle, "exitCode": exit_code, "stdout": "", "stderr": "",
            "stdoutCapReached": false, "stderrCapReached": false, "outputDrainTimedOut": false,
        }),
    )
}

/// Reads `process/outputDelta`s of `handle` on `stream` until `expected.len()` bytes have
/// arrived, and checks that they are exactly `expected`. Any other message fails the test.
async fn expect_output(s: &mut Session, handle: &str, stream: &str, expected: &[u8]) {
    let mut output = Vec::new();
    while output.len() < expected.len() {
        let delta = s.expect("process/outputDelta").await;
        let params = &delta["params"];
        if params["processHandle"] != handle || params["stream"] != stream {
            s.fail(format!("expected {stream} of {handle}, got {delta}"));
        }
        if params["capReached"] != false {
            s.fail(format!("no cap was requested, got {delta}"));
        }
        let chunk = params["deltaBase64"]
            .as_str()
            .and_then(|text| BASE64.decode(text).ok())
            .unwrap_or_else(|| s.fail(format!("deltaBase64 is not base64: {delta}")));
        output.extend_from_slice(&chunk);
    }
    if output != expected {
        s.fail(format!(
            "{handle} {stream}: got {:?}, expected {:?}",
            String::from_utf8_lossy(&output),
            String::from_utf8_lossy(expected)
        ));
    }
}

/// A piped process fed through stdin until closed, then a PTY process that reports its size,
/// is resized, reads a line and is killed.
pub(crate) async fn streamed_process_with_stdin_resize_kill_and_exit(transport: Transport) {
    let mut s = Session::open(transport).await;
    s.initialize(true).await;

    // Pipes: `cat` echoes what stdin carries and exits 0 at EOF.
    expect_result(
        &mut s,
        "process/spawn",
        json!({
            "processHandle": "cat", "command": ["cat"], "cwd": "<home>",
            "streamStdin": true, "streamStdoutStderr": true,
        }),
        json!({}),
    )
    .await;
    for chunk in ["first line\n", "second "] {
        expect_result(
            &mut s,
            "process/writeStdin",
            json!({"processHandle": "cat", "deltaBase64": base64(chunk.as_bytes())}),
            json!({}),
        )
        .await;
    }
    expect_result(
        &mut s,
        "process/writeStdin",
        json!({"processHandle": "cat", "deltaBase64": base64(b"line\n"), "closeStdin": true}),
        json!({}),
    )
    .await;
    expect_output(&mut s, "cat", "stdout", b"first line\nsecond line\n").await;
    expect_sequence(&mut s, &[exited("cat", 0)]).await;
    expect_error(
        &mut s,
        "process/writeStdin",
        json!({"processHandle": "cat", "deltaBase64": base64(b"late")}),
        -32600,
        "no active process for process handle \"cat\"",
    )
    .await;

    // A PTY: the terminal echoes input, lines end in CR LF, and `stty size` shows the
    // window size before and after the resize.
    let script = "stty size; read line; stty size; echo \"got:$line\"; exec sleep 30";
    expect_result(
        &mut s,
        "process/spawn",
        json!({
            "processHandle": "tty", "command": ["sh", "-c", script], "cwd": "<home>",
            "tty": true, "size": {"rows": 24, "cols": 80},
        }),
        json!({}),
    )
    .await;
    expect_output(&mut s, "tty", "stdout", b"24 80\r\n").await;
    expect_result(
        &mut s,
        "process/resizePty",
        json!({"processHandle": "tty", "size": {"rows": 30, "cols": 100}}),
        json!({}),
    )
    .await;
    expect_result(
        &mut s,
        "process/writeStdin",
        json!({"processHandle": "tty", "deltaBase64": base64(b"hello\n")}),
        json!({}),
    )
    .await;
    expect_output(&mut s, "tty", "stdout", b"hello\r\n30 100\r\ngot:hello\r\n").await;
    expect_result(
        &mut s,
        "process/kill",
        json!({"processHandle": "tty"}),
        json!({}),
    )
    .await;
    expect_sequence(&mut s, &[exited("tty", 137)]).await;
    expect_error(
        &mut s,
        "process/kill",
        json!({"processHandle": "tty"}),
        -32600,
        "no active process for process handle \"tty\"",
    )
    .await;
    // A released handle can be used again.
    expect_result(
        &mut s,
        "process/spawn",
        json!({"processHandle": "tty", "command": ["true"], "cwd": "<home>"}),
        json!({}),
    )
    .await;
    expect_sequence(
        &mut s,
        &[note(
            "process/exited",
            json!({
                "processHandle": "tty", "exitCode": 0, "stdout": "", "stderr": "",
                "stdoutCapReached": false, "stderrCapReached": false,
                "outputDrainTimedOut": false,
            }),
        )],
    )
    .await;
    s.close().await;
}

/// The bytes `seq 1 BIG_OUTPUT_LINES | head -c BIG_OUTPUT_BYTES` prints.
fn big_output() -> Vec<u8> {
    let mut text = Vec::with_capacity(BIG_OUTPUT_BYTES + 16);
    let mut line = 1u32;
    while text.len() < BIG_OUTPUT_BYTES {
        text.extend_from_slice(format!("{line}\n").as_bytes());
        line += 1;
    }
    assert!(line <= BIG_OUTPUT_LINES, "seq prints enough lines");
    text.truncate(BIG_OUTPUT_BYTES);
    text
}

/// A process prints 8 MiB while the client stops reading for two seconds: backpressure holds
/// the child, every byte still arrives, and `process/exited` comes after the last delta.
pub(crate) async fn paused_reader_still_gets_every_byte(transport: Transport) {
    let mut s = Session::open(transport).await;
    s.initialize(true).await;
    let script = format!("seq 1 {BIG_OUTPUT_LINES} | head -c {BIG_OUTPUT_BYTES}");
    expect_result(
        &mut s,
        "process/spawn",
        json!({
            "processHandle": "big", "command": ["sh", "-c", script], "cwd": "<home>",
            "streamStdoutStderr": true, "outputBytesCap": null, "timeoutMs": null,
        }),
        json!({}),
    )
    .await;
    s.pause();
    tokio::time::sleep(READ_PAUSE).await;
    s.resume();
    expect_output(&mut s, "big", "stdout", &big_output()).await;
    expect_sequence(&mut s, &[exited("big", 0)]).await;
    s.close().await;
}

//! Client processes (`process/*`, experimental) through `ProcessHandle`: streamed stdin and
//! output, a PTY resized and killed, and 8 MiB of output to a consumer that pauses for two
//! seconds.

use std::time::Duration;

use serde_json::{Value, json};
use tandem_client::{Overflow, ProcessEvent, ProcessHandle};
use tandem_protocol::{ProcessOutputStream, ProcessSpawnParams};

use crate::harness::{Backend, Harness};

/// How long the slow consumer stops reading.
const READ_PAUSE: Duration = Duration::from_secs(2);

/// 8 MiB of `seq` output: every line differs, so a lost, repeated or reordered chunk shows.
const BIG_OUTPUT_BYTES: usize = 8 * 1024 * 1024;
const BIG_OUTPUT_LINES: u32 = 1_200_000;

/// The `process/exited` of a streamed process.
fn exited(handle: &str, exit_code: i32) -> Value {
    json!({
        "processHandle": handle, "exitCode": exit_code, "stdout": "", "stderr": "",
        "stdoutCapReached": false, "stderrCapReached": false, "outputDrainTimedOut": false,
    })
}

/// Reads output of `process` until `expected.len()` bytes of stdout have arrived, and checks
/// that they are exactly `expected`. Anything else (stderr, a cap, the exit) fails the test.
async fn expect_output(h: &Harness, process: &mut ProcessHandle, expected: &[u8]) {
    let mut output = Vec::new();
    while output.len() < expected.len() {
        match h.within("process output", process.next_event()).await {
            Some(Ok(ProcessEvent::Output {
                stream: ProcessOutputStream::Stdout,
                bytes,
                cap_reached: false,
            })) => output.extend_from_slice(&bytes),
            other => h.fail(format!(
                "expected stdout of {}, got {other:?}",
                process.handle()
            )),
        }
    }
    if output != expected {
        h.fail(format!(
            "{}: got {:?}, expected {:?}",
            process.handle(),
            String::from_utf8_lossy(&output),
            String::from_utf8_lossy(expected)
        ));
    }
}

/// The next event of `process` must be its exit, as `expected`; nothing follows it.
async fn expect_exit(h: &Harness, process: &mut ProcessHandle, expected: Value) {
    match h.within("the exit", process.next_event()).await {
        Some(Ok(ProcessEvent::Exited(exited))) => {
            h.expect_json("process/exited", &exited, expected);
        }
        other => h.fail(format!("expected the exit, got {other:?}")),
    }
    if let Some(more) = h.within("after the exit", process.next_event()).await {
        h.fail(format!("nothing follows the exit, got {more:?}"));
    }
}

/// A piped process fed through stdin until closed, then a PTY process that reports its size,
/// is resized, reads a line and is killed; its handle is then free to use again.
pub(crate) async fn streamed_process_with_stdin_resize_kill_and_exit(backend: Backend) {
    let h = Harness::open(backend).await;
    let home = h.home();

    // Pipes: `cat` echoes what stdin carries and exits 0 at EOF.
    let params = ProcessSpawnParams::new("cat", ["cat"], &home)
        .stream_stdin()
        .streaming();
    let mut cat = h.call("spawning cat", h.client.spawn_process(params)).await;
    for chunk in ["first line\n", "second "] {
        h.call("writing stdin", cat.write_stdin(chunk.as_bytes().to_vec()))
            .await;
    }
    h.call("writing stdin", cat.write_stdin(&b"line\n"[..]))
        .await;
    h.call("closing stdin", cat.close_stdin()).await;
    expect_output(&h, &mut cat, b"first line\nsecond line\n").await;
    expect_exit(&h, &mut cat, exited("cat", 0)).await;
    h.expect_server_error(
        "writing to an exited process",
        cat.write_stdin(&b"late"[..]),
        -32600,
        "no active process for process handle \"cat\"",
    )
    .await;

    // A PTY: the terminal echoes input, lines end in CR LF, and `stty size` shows the window
    // size before and after the resize.
    let script = "stty size; read line; stty size; echo \"got:$line\"; exec sleep 30";
    let params = ProcessSpawnParams::new("tty", ["sh", "-c", script], &home)
        .tty()
        .size(24, 80);
    let mut tty = h
        .call("spawning the PTY", h.client.spawn_process(params))
        .await;
    expect_output(&h, &mut tty, b"24 80\r\n").await;
    h.call("resizing", tty.resize(30, 100)).await;
    h.call("writing a line", tty.write_stdin(&b"hello\n"[..]))
        .await;
    expect_output(&h, &mut tty, b"hello\r\n30 100\r\ngot:hello\r\n").await;
    h.call("killing", tty.kill()).await;
    expect_exit(&h, &mut tty, exited("tty", 137)).await;
    h.expect_server_error(
        "killing it again",
        tty.kill(),
        -32600,
        "no active process for process handle \"tty\"",
    )
    .await;
    drop(tty);

    // A released handle can be used again.
    let again = h
        .call(
            "spawning under the released handle",
            h.client
                .spawn_process(ProcessSpawnParams::new("tty", ["true"], &home)),
        )
        .await;
    let exit = h.call("its exit", again.wait_exited()).await;
    h.expect_json("its exit", &exit, exited("tty", 0));
    h.close().await;
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

/// A process prints 8 MiB while its lossless handle is not read for two seconds:
/// backpressure holds the child, every byte still arrives, and the exit comes after the last
/// delta.
pub(crate) async fn paused_reader_still_gets_every_byte(backend: Backend) {
    let h = Harness::open(backend).await;
    let script = format!("seq 1 {BIG_OUTPUT_LINES} | head -c {BIG_OUTPUT_BYTES}");
    let params = ProcessSpawnParams::new("big", ["sh", "-c", &script], h.home())
        .streaming()
        .unlimited_output()
        .no_timeout();
    let big = h
        .call(
            "spawning",
            h.client
                .spawn_process_with(params, None, Overflow::Lossless),
        )
        .await;
    tokio::time::sleep(READ_PAUSE).await;
    // Every byte before the exit, or an error: `collect_output` ends at `process/exited`.
    let output = match h.within("the output", big.collect_output()).await {
        Ok(output) => output,
        Err(error) => h.fail(format!("a lossless handle lost output: {error}")),
    };
    if output.stdout != big_output() || !output.stderr.is_empty() {
        h.fail(format!(
            "{} bytes of stdout and {} of stderr, not the {BIG_OUTPUT_BYTES} expected",
            output.stdout.len(),
            output.stderr.len()
        ));
    }
    h.expect_json("process/exited", &output.exited, exited("big", 0));
    h.close().await;
}

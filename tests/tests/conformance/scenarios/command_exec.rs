//! `command/exec` (docs/protocol.md section 8a), stable, so every scenario initializes without
//! `experimentalApi`: the buffered form with its defaults, caps, timeout and errors; the
//! streamed form with stdin, a PTY resized and terminated, and the result after the output.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};

use super::*;
use crate::session::{Session, Transport};

fn base64(bytes: &[u8]) -> String {
    BASE64.encode(bytes)
}

/// Reads `command/exec/outputDelta`s of `process_id` on `stream` until `expected.len()` bytes
/// arrived, checks they are exactly `expected`, and that only the last may carry `capReached`
/// (`cap_reached` says whether it must).
///
/// Over the wire any other message fails the test: in particular the result of `request` (the
/// `command/exec` itself) may not come before its output. In-process, replies and events are
/// separate channels (the deltas are already queued when the result resolves), so the result
/// may be read first there; it is returned then.
async fn expect_exec_output(
    s: &mut Session,
    request: i64,
    process_id: &str,
    stream: &str,
    expected: &[u8],
    cap_reached: bool,
) -> Option<Value> {
    let mut output = Vec::new();
    let mut last_cap = false;
    let mut early_result = None;
    while output.len() < expected.len() {
        let message = s.next("command/exec/outputDelta").await;
        if message["method"] != "command/exec/outputDelta" {
            let is_our_result = message.get("method").is_none() && message["id"] == request;
            if is_our_result && s.transport() == Transport::InProcess && early_result.is_none() {
                early_result = Some(message);
                continue;
            }
            s.fail(format!("expected command/exec/outputDelta, got {message}"));
        }
        let params = &message["params"];
        if params["processId"] != process_id || params["stream"] != stream {
            s.fail(format!("expected {stream} of {process_id}, got {message}"));
        }
        let chunk = params["deltaBase64"]
            .as_str()
            .and_then(|text| BASE64.decode(text).ok())
            .unwrap_or_else(|| s.fail(format!("deltaBase64 is not base64: {message}")));
        output.extend_from_slice(&chunk);
        last_cap = params["capReached"] == true;
        if last_cap && output.len() < expected.len() {
            s.fail(format!("capReached before the last delta: {message}"));
        }
    }
    if output != expected {
        s.fail(format!(
            "{process_id} {stream}: got {:?}, expected {:?}",
            String::from_utf8_lossy(&output),
            String::from_utf8_lossy(expected)
        ));
    }
    if last_cap != cap_reached {
        s.fail(format!(
            "{process_id}: capReached {last_cap}, expected {cap_reached}"
        ));
    }
    early_result
}

/// Checks the result of the `command/exec` `request`, read early by [`expect_exec_output`]
/// or now.
async fn expect_exec_result(s: &mut Session, request: i64, early: Option<Value>, expected: Value) {
    let reply = match early {
        Some(reply) => reply,
        None => s.reply(request).await,
    };
    assert_json(s, &reply, &json!({"id": request, "result": expected}));
}

/// The `command/exec` result.
fn exec_result(exit_code: i32, stdout: &str, stderr: &str) -> Value {
    json!({"exitCode": exit_code, "stdout": stdout, "stderr": stderr})
}

/// The buffered form: output, exit code, cwd, env, cap, timeout, and every validation error.
pub(crate) async fn command_exec_buffered(transport: Transport) {
    let mut s = Session::open(transport).await;
    s.initialize(false).await;

    expect_result(
        &mut s,
        "command/exec",
        json!({"command": ["sh", "-c", "echo out; echo err >&2; exit 3"]}),
        exec_result(3, "out\n", "err\n"),
    )
    .await;
    expect_result(
        &mut s,
        "command/exec",
        json!({
            "command": ["sh", "-c", "pwd; echo \"$FOO ${HOME-unset}\""], "cwd": "<home>",
            "env": {"FOO": "bar", "HOME": null},
        }),
        exec_result(0, "<home>\nbar unset\n", ""),
    )
    .await;
    // Per-stream cap: the rest is read and dropped, the child is not blocked.
    expect_result(
        &mut s,
        "command/exec",
        json!({
            "command": ["sh", "-c", "printf abcdefgh; printf 12345678 >&2"],
            "outputBytesCap": 3,
        }),
        exec_result(0, "abc", "123"),
    )
    .await;
    expect_result(
        &mut s,
        "command/exec",
        json!({"command": ["sh", "-c", "echo before; exec sleep 30"], "timeoutMs": 300}),
        exec_result(124, "before\n", ""),
    )
    .await;
    // `null` means the server default, and a buffered command may name itself.
    expect_result(
        &mut s,
        "command/exec",
        json!({
            "command": ["echo", "named"], "processId": "named", "timeoutMs": null,
            "outputBytesCap": null, "tty": null, "disableTimeout": true,
        }),
        exec_result(0, "named\n", ""),
    )
    .await;

    let invalid_request = -32600;
    let invalid_params = -32602;
    let errors: &[(Value, i64, &str)] = &[
        (
            json!({"command": []}),
            invalid_request,
            "command must not be empty",
        ),
        (
            json!({"command": ["true"], "timeoutMs": 5, "disableTimeout": true}),
            invalid_params,
            "command/exec cannot set both timeoutMs and disableTimeout",
        ),
        (
            json!({"command": ["true"], "outputBytesCap": 5, "disableOutputCap": true}),
            invalid_params,
            "command/exec cannot set both outputBytesCap and disableOutputCap",
        ),
        (
            json!({"command": ["true"], "streamStdoutStderr": true}),
            invalid_request,
            "command/exec tty or streaming requires a client-supplied processId",
        ),
        (
            json!({"command": ["true"], "tty": true}),
            invalid_request,
            "command/exec tty or streaming requires a client-supplied processId",
        ),
        (
            json!({"command": ["true"], "size": {"rows": 5, "cols": 5}}),
            invalid_params,
            "command/exec size requires tty: true",
        ),
        (
            json!({"command": ["true"], "processId": "p", "tty": true,
                   "size": {"rows": 0, "cols": 5}}),
            invalid_params,
            "command/exec size rows and cols must be greater than 0",
        ),
        (
            json!({"command": ["true"], "timeoutMs": -5}),
            invalid_params,
            "command/exec timeoutMs must be non-negative, got -5",
        ),
        (
            json!({"command": ["true"], "cwd": "no-such-dir"}),
            -32603,
            "failed to spawn command: No such file or directory (os error 2)",
        ),
    ];
    for (params, code, message) in errors {
        expect_error(&mut s, "command/exec", params.clone(), *code, message).await;
    }
    for (method, params) in [
        ("command/exec/terminate", json!({"processId": "nope"})),
        (
            "command/exec/write",
            json!({"processId": "nope", "closeStdin": true}),
        ),
        (
            "command/exec/resize",
            json!({"processId": "nope", "size": {"rows": 5, "cols": 5}}),
        ),
    ] {
        expect_error(
            &mut s,
            method,
            params,
            invalid_request,
            "no active command/exec for process id \"nope\"",
        )
        .await;
    }
    expect_error(
        &mut s,
        "command/exec/write",
        json!({"processId": "nope"}),
        invalid_params,
        "command/exec/write requires deltaBase64 or closeStdin",
    )
    .await;
    s.close().await;
}

/// The streamed form: stdin through `command/exec/write` and a capped stream on pipes, then a
/// PTY that reports its size, is resized, reads a line and is terminated. Each result follows
/// the last delta of its command; a running id is refused and released by the result.
pub(crate) async fn command_exec_streamed(transport: Transport) {
    let mut s = Session::open(transport).await;
    s.initialize(false).await;

    // Pipes: `cat` echoes stdin; the id is taken while it runs.
    let cat = s
        .request(
            "command/exec",
            json!({"command": ["cat"], "processId": "cat", "streamStdin": true,
                   "streamStdoutStderr": true}),
        )
        .await;
    expect_error(
        &mut s,
        "command/exec",
        json!({"command": ["true"], "processId": "cat"}),
        -32600,
        "duplicate active command/exec process id: \"cat\"",
    )
    .await;
    for (chunk, close) in [("first line\n", false), ("second line\n", true)] {
        expect_result(
            &mut s,
            "command/exec/write",
            json!({"processId": "cat", "deltaBase64": base64(chunk.as_bytes()),
                   "closeStdin": close}),
            json!({}),
        )
        .await;
    }
    let early = expect_exec_output(
        &mut s,
        cat,
        "cat",
        "stdout",
        b"first line\nsecond line\n",
        false,
    )
    .await;
    expect_exec_result(&mut s, cat, early, exec_result(0, "", "")).await;

    // A streamed cap: the last delta says so, and the child still exits normally.
    let capped = s
        .request(
            "command/exec",
            json!({"command": ["sh", "-c", "printf abcdefgh"], "processId": "cat",
                   "streamStdoutStderr": true, "outputBytesCap": 3}),
        )
        .await;
    let early = expect_exec_output(&mut s, capped, "cat", "stdout", b"abc", true).await;
    expect_exec_result(&mut s, capped, early, exec_result(0, "", "")).await;

    // Stdin not streamed, resize of a pipe child.
    let sleeper = s
        .request(
            "command/exec",
            json!({"command": ["sleep", "30"], "processId": "sleeper"}),
        )
        .await;
    expect_error(
        &mut s,
        "command/exec/write",
        json!({"processId": "sleeper", "deltaBase64": base64(b"x")}),
        -32600,
        "stdin streaming is not enabled for this command/exec",
    )
    .await;
    expect_error(
        &mut s,
        "command/exec/resize",
        json!({"processId": "sleeper", "size": {"rows": 5, "cols": 5}}),
        -32600,
        "failed to resize PTY: process is not attached to a PTY",
    )
    .await;
    expect_result(
        &mut s,
        "command/exec/terminate",
        json!({"processId": "sleeper"}),
        json!({}),
    )
    .await;
    expect_exec_result(&mut s, sleeper, None, exec_result(137, "", "")).await;

    // A PTY: `stty size` before and after the resize, a line echoed, then terminate.
    let script = "stty size; read line; stty size; echo \"got:$line\"; exec sleep 30";
    let tty = s
        .request(
            "command/exec",
            json!({"command": ["sh", "-c", script], "processId": "tty", "tty": true,
                   "size": {"rows": 24, "cols": 80}}),
        )
        .await;
    expect_exec_output(&mut s, tty, "tty", "stdout", b"24 80\r\n", false).await;
    expect_result(
        &mut s,
        "command/exec/resize",
        json!({"processId": "tty", "size": {"rows": 30, "cols": 100}}),
        json!({}),
    )
    .await;
    expect_result(
        &mut s,
        "command/exec/write",
        json!({"processId": "tty", "deltaBase64": base64(b"hello\n")}),
        json!({}),
    )
    .await;
    expect_exec_output(
        &mut s,
        tty,
        "tty",
        "stdout",
        b"hello\r\n30 100\r\ngot:hello\r\n",
        false,
    )
    .await;
    expect_result(
        &mut s,
        "command/exec/terminate",
        json!({"processId": "tty"}),
        json!({}),
    )
    .await;
    expect_exec_result(&mut s, tty, None, exec_result(137, "", "")).await;
    expect_error(
        &mut s,
        "command/exec/terminate",
        json!({"processId": "tty"}),
        -32600,
        "no active command/exec for process id \"tty\"",
    )
    .await;
    s.close().await;
}

//! Acceptance 9: every error row of docs/protocol.md section 8, and the experimental gate.

use super::*;

// ---------------------------------------------------------------------------------------------
// Acceptance 9: every error row of docs/protocol.md section 8
// ---------------------------------------------------------------------------------------------

// Acceptance 9
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawn_validation_errors_have_the_exact_code_and_message() {
    let mut handle = start(DEFAULT_IN_PROCESS_CHANNEL_CAPACITY).await;
    let marker = Marker::new("validation");
    let spawn = |params: ProcessSpawnParams| call(&handle, spawn_request(params));
    use error_codes::{INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST};

    assert_error(
        spawn(marker.params("h", &[])).await,
        INVALID_REQUEST,
        "command must not be empty",
    );
    assert_error(
        spawn(marker.params("", &["true"])).await,
        INVALID_REQUEST,
        "processHandle must not be empty",
    );
    let mut params = marker.params("h", &["true"]);
    params.cwd = None;
    assert_error(
        spawn(params).await,
        INVALID_REQUEST,
        "process/spawn requires an absolute cwd",
    );
    let mut params = marker.params("h", &["true"]);
    params.cwd = Some("relative/dir".into());
    assert_error(
        spawn(params).await,
        INVALID_REQUEST,
        "process/spawn cwd must be an absolute path, got \"relative/dir\"",
    );
    let mut params = marker.params("h", &["true"]);
    params.size = Some(PtySize { rows: 10, cols: 10 });
    assert_error(
        spawn(params).await,
        INVALID_PARAMS,
        "process/spawn size requires tty: true",
    );
    for (rows, cols) in [(0, 10), (10, 0)] {
        let mut params = marker.params("h", &["true"]);
        params.tty = Some(true);
        params.size = Some(PtySize { rows, cols });
        assert_error(
            spawn(params).await,
            INVALID_PARAMS,
            "process size rows and cols must be greater than 0",
        );
    }
    let mut params = marker.params("h", &["true"]);
    params.timeout_ms = Some(Some(-5));
    assert_error(
        spawn(params).await,
        INVALID_PARAMS,
        "process/spawn timeoutMs must be non-negative, got -5",
    );
    assert_error(
        spawn(marker.params("h", &["/nonexistent/tandem-no-such-binary"])).await,
        INTERNAL_ERROR,
        "failed to spawn process: No such file or directory (os error 2)",
    );

    // A running handle cannot be reused; once its process/exited was sent, it can.
    let mut params = marker.params("dup", &["sleep", "30"]);
    params.timeout_ms = Some(None);
    spawn_ok(&handle, params).await;
    assert_error(
        spawn(marker.params("dup", &["true"])).await,
        INVALID_REQUEST,
        "duplicate active process handle: \"dup\"",
    );
    assert_eq!(call(&handle, kill_request("dup")).await, Ok(json!({})));
    let mut events = Events::default();
    events.read_exits(&mut handle, &["dup"], PROMPT).await;
    assert_eq!(events.run("dup").exited().exit_code, 137);
    // The handle is released right after its exit notification was handed over.
    within(PROMPT, "handle released", async {
        loop {
            let reply = call(
                &handle,
                spawn_request(marker.params("dup", &["echo", "again"])),
            );
            match reply.await {
                Ok(_) => break,
                Err(error) if error.message == "duplicate active process handle: \"dup\"" => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                Err(error) => panic!("unexpected error {error:?}"),
            }
        }
    })
    .await;
    let mut events = Events::default();
    events.read_exits(&mut handle, &["dup"], PROMPT).await;
    assert_eq!(events.run("dup").stdout_text(), "again\n");
    within(PROMPT, "shutdown", handle.shutdown()).await.unwrap();
}

// Acceptance 9
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_errors_have_the_exact_code_and_message() {
    use error_codes::{INVALID_PARAMS, INVALID_REQUEST};
    let mut handle = start(DEFAULT_IN_PROCESS_CHANNEL_CAPACITY).await;
    let marker = Marker::new("control");
    let unknown = "no active process for process handle \"ghost\"";
    assert_error(
        call(&handle, kill_request("ghost")).await,
        INVALID_REQUEST,
        unknown,
    );
    assert_error(
        call(&handle, write_request("ghost", Some(b"x"), None)).await,
        INVALID_REQUEST,
        unknown,
    );
    assert_error(
        call(&handle, resize_request("ghost", 10, 10)).await,
        INVALID_REQUEST,
        unknown,
    );
    assert_error(
        call(&handle, resize_request("ghost", 10, 0)).await,
        INVALID_PARAMS,
        "process size rows and cols must be greater than 0",
    );
    assert_error(
        call(&handle, write_request("ghost", None, None)).await,
        INVALID_PARAMS,
        "process/writeStdin requires deltaBase64 or closeStdin",
    );
    // Typed in-process requests carry bytes; bad base64 can only arrive on a wire, where the
    // request fails to decode with the bad value's code, before it reaches any processor.
    let bad = JSONRPCRequest {
        id: next_id(),
        method: "process/writeStdin".into(),
        params: Some(json!({"processHandle": "ghost", "deltaBase64": "not base64!"})),
    };
    let decode_error = base64_decode_error("not base64!");
    assert_error(
        ClientRequest::try_from(bad).map(|_| json!({})),
        INVALID_PARAMS,
        &format!("invalid deltaBase64: {decode_error}"),
    );

    // stdin not streamed; resize of a pipe process.
    let mut params = marker.params("pipes", &["sleep", "30"]);
    params.timeout_ms = Some(None);
    spawn_ok(&handle, params).await;
    assert_error(
        call(&handle, write_request("pipes", Some(b"x"), None)).await,
        INVALID_REQUEST,
        "stdin streaming is not enabled for this process",
    );
    assert_error(
        call(&handle, resize_request("pipes", 10, 10)).await,
        INVALID_REQUEST,
        "failed to resize PTY: process is not attached to a PTY",
    );

    // A closed stdin of a running child: writing fails, closing again answers {}.
    let mut params = marker.params("closed", &["sh", "-c", "exec 0<&-; sleep 30"]);
    params.stream_stdin = Some(true);
    params.timeout_ms = Some(None);
    spawn_ok(&handle, params).await;
    let close = || write_request("closed", None, Some(true));
    assert_eq!(call(&handle, close()).await, Ok(json!({})));
    assert_error(
        call(&handle, write_request("closed", Some(b"x"), None)).await,
        INVALID_REQUEST,
        "stdin is already closed",
    );
    assert_eq!(call(&handle, close()).await, Ok(json!({})));

    // A handle whose process/exited was already sent is unknown again.
    let mut params = marker.params("short", &["true"]);
    params.stream_stdin = Some(true);
    spawn_ok(&handle, params).await;
    assert_eq!(call(&handle, kill_request("pipes")).await, Ok(json!({})));
    assert_eq!(call(&handle, kill_request("closed")).await, Ok(json!({})));
    let mut events = Events::default();
    events
        .read_exits(&mut handle, &["pipes", "closed", "short"], PROMPT)
        .await;
    assert_eq!(events.run("pipes").exited().exit_code, 137);
    let gone = "no active process for process handle \"short\"";
    // Released right after the exit notification was handed over, which may trail the event.
    within(PROMPT, "short released", async {
        while call(&handle, kill_request("short")).await
            != Err(JSONRPCErrorError::invalid_request(gone))
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert_error(
        call(&handle, write_request("short", None, Some(true))).await,
        INVALID_REQUEST,
        gone,
    );
    assert_error(
        call(&handle, resize_request("short", 5, 5)).await,
        INVALID_REQUEST,
        gone,
    );
    within(PROMPT, "shutdown", handle.shutdown()).await.unwrap();
}

// Acceptance 9
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exited_but_undelivered_answers_no_longer_running_for_every_control_request() {
    // Capacity 1 and 256 KiB of output: the exit notification cannot be handed over while
    // nobody reads, so the child is reaped but its handle still active.
    let mut handle = start(1).await;
    let marker = Marker::new("undelivered");
    let mut params = marker.params("short", &["head", "-c", "262144", "/dev/zero"]);
    params.stream_stdin = Some(true);
    spawn_ok(&handle, params).await;
    eventually(PROMPT, "the child is gone", || {
        marker.live_pids().is_empty()
    })
    .await;
    let gone = "process \"short\" is no longer running";
    // The child may be gone from /proc a moment before the server has reaped it.
    within(PROMPT, "reaped", async {
        while call(&handle, kill_request("short")).await.is_ok() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert_error(
        call(&handle, kill_request("short")).await,
        error_codes::INVALID_REQUEST,
        gone,
    );
    assert_error(
        call(&handle, write_request("short", Some(b"x"), None)).await,
        error_codes::INVALID_REQUEST,
        gone,
    );
    assert_error(
        call(&handle, resize_request("short", 5, 5)).await,
        error_codes::INVALID_REQUEST,
        gone,
    );
    assert_error(
        call(&handle, spawn_request(marker.params("short", &["true"]))).await,
        error_codes::INVALID_REQUEST,
        "duplicate active process handle: \"short\"",
    );
    let mut events = Events::default();
    events.read_exits(&mut handle, &["short"], PROMPT).await;
    assert_eq!(events.run("short").stdout.len(), 256 * KIB);
    within(PROMPT, "shutdown", handle.shutdown()).await.unwrap();
}

// Acceptance 9 (section 3 gate for the experimental process methods)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn process_methods_require_the_experimental_api() {
    let mut handle = within(PROMPT, "start", in_process::start(start_args(8, false)))
        .await
        .unwrap();
    let marker = Marker::new("gate");
    let requests = [
        spawn_request(marker.params("p", &["true"])),
        write_request("p", None, Some(true)),
        kill_request("p"),
        resize_request("p", 1, 1),
    ];
    for request in requests {
        let method = request.method().to_owned();
        assert_error(
            call(&handle, request).await,
            error_codes::INVALID_REQUEST,
            &format!("{method} requires experimentalApi capability"),
        );
    }
    assert!(marker.live_pids().is_empty());
    within(PROMPT, "shutdown", handle.shutdown()).await.unwrap();
}

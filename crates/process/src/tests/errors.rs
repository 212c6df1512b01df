//! The errors of spawn and of the control requests, with their exact texts and codes, and a
//! handle's life after its process exited: `is no longer running` until its `process/exited`
//! was delivered, then free for reuse.

use super::*;
use crate::ExecRequest;
use tandem_protocol::{CommandExecParams, CommandExecTerminateParams, CommandExecWriteParams};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawn_validation_errors_have_exact_text_and_codes() {
    let manager = ProcessManager::new();
    let sink: Arc<dyn ProcessEventSink> = TestSink::open();
    let spawn = |params: ProcessSpawnParams| manager.spawn(params, Arc::clone(&sink));

    assert_error(
        spawn(spawn_params("h", &[])).await,
        INVALID_REQUEST,
        "command must not be empty",
    );
    assert_error(
        spawn(spawn_params("", &["true"])).await,
        INVALID_REQUEST,
        "processHandle must not be empty",
    );
    let mut params = spawn_params("h", &["true"]);
    params.cwd = None;
    assert_eq!(spawn(params).await.unwrap_err().code, INVALID_REQUEST);
    let mut params = spawn_params("h", &["true"]);
    params.cwd = Some("relative/dir".to_owned());
    assert_eq!(spawn(params).await.unwrap_err().code, INVALID_REQUEST);
    let mut params = spawn_params("h", &["true"]);
    params.size = Some(PtySize { rows: 10, cols: 10 });
    assert_error(
        spawn(params).await,
        INVALID_PARAMS,
        "process/spawn size requires tty: true",
    );
    let mut params = spawn_params("h", &["true"]);
    params.tty = Some(true);
    params.size = Some(PtySize { rows: 0, cols: 10 });
    assert_error(
        spawn(params).await,
        INVALID_PARAMS,
        "process size rows and cols must be greater than 0",
    );
    let mut params = spawn_params("h", &["true"]);
    params.timeout_ms = Some(Some(-5));
    assert_error(
        spawn(params).await,
        INVALID_PARAMS,
        "process/spawn timeoutMs must be non-negative, got -5",
    );
    // The largest timeout is accepted (and must not overflow the clock).
    let mut params = spawn_params("huge-timeout", &["true"]);
    params.timeout_ms = Some(Some(i64::MAX));
    spawn(params)
        .await
        .expect("i64::MAX timeout")
        .start_streaming();

    let error = spawn(spawn_params("h", &["/nonexistent/tandem-no-such-binary"]))
        .await
        .unwrap_err();
    assert_eq!(error.code, INTERNAL_ERROR);
    assert!(
        error.message.starts_with("failed to spawn process: "),
        "{}",
        error.message
    );

    let first = spawn(spawn_params("dup", &["sleep", "30"])).await.unwrap();
    assert_error(
        spawn(spawn_params("dup", &["true"])).await,
        INVALID_REQUEST,
        "duplicate active process handle: \"dup\"",
    );
    first.start_streaming();
    within(PROMPT, "kill_all", manager.kill_all()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_errors_have_exact_text_and_codes() {
    let manager = ProcessManager::new();
    let sink = TestSink::open();

    assert_error(
        manager.kill(kill_params("ghost")).await,
        INVALID_REQUEST,
        "no active process for process handle \"ghost\"",
    );
    assert_error(
        manager
            .write_stdin(write_params("ghost", Some(b"x"), None))
            .await,
        INVALID_REQUEST,
        "no active process for process handle \"ghost\"",
    );
    assert_error(
        manager.resize_pty(resize_params("ghost", 10, 10)).await,
        INVALID_REQUEST,
        "no active process for process handle \"ghost\"",
    );
    assert_error(
        manager.resize_pty(resize_params("ghost", 10, 0)).await,
        INVALID_PARAMS,
        "process size rows and cols must be greater than 0",
    );
    assert_error(
        manager.write_stdin(write_params("ghost", None, None)).await,
        INVALID_PARAMS,
        "process/writeStdin requires deltaBase64 or closeStdin",
    );

    // A streamed stdin: write, close, then writing again fails and closing again is fine.
    let mut params = streaming("cat", &["cat"]);
    params.stream_stdin = Some(true);
    start(&manager, params, &sink).await;
    manager
        .write_stdin(write_params("cat", Some(b"abc"), None))
        .await
        .unwrap();
    manager
        .write_stdin(write_params("cat", None, Some(true)))
        .await
        .unwrap();
    let second = manager
        .write_stdin(write_params("cat", Some(b"more"), None))
        .await;
    // `cat` may already have exited on EOF; either answer is a correct refusal.
    let error = second.unwrap_err();
    assert_eq!(error.code, INVALID_REQUEST);
    assert!(
        error.message == "stdin is already closed"
            || error.message == "process \"cat\" is no longer running",
        "{}",
        error.message
    );
    let exited = wait_exited(&sink, PROMPT).await;
    assert_eq!(exited.exit_code, 0);
    assert_eq!(sink.output(ProcessOutputStream::Stdout), b"abc");

    // Stdin closed on a process that is still running.
    let sink = TestSink::open();
    let mut params = streaming("closed", &["sh", "-c", "exec 0<&-; sleep 30"]);
    params.stream_stdin = Some(true);
    start(&manager, params, &sink).await;
    manager
        .write_stdin(write_params("closed", None, Some(true)))
        .await
        .unwrap();
    assert_error(
        manager
            .write_stdin(write_params("closed", Some(b"x"), None))
            .await,
        INVALID_REQUEST,
        "stdin is already closed",
    );
    manager
        .write_stdin(write_params("closed", None, Some(true)))
        .await
        .expect("closing again answers {}");
    manager.kill(kill_params("closed")).await.unwrap();
    assert_eq!(wait_exited(&sink, PROMPT).await.exit_code, 137);
    sink.assert_invariants();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exited_but_undelivered_is_no_longer_running_then_handle_is_reusable() {
    let manager = ProcessManager::new();
    let sink = TestSink::stalled();
    let mut params = streaming("short", &["true"]);
    params.stream_stdin = Some(true);
    start(&manager, params, &sink).await;
    eventually(PROMPT, "exit reaches the sink", || {
        sink.exit_calls.load(Ordering::SeqCst) == 1
    })
    .await;

    let gone = "process \"short\" is no longer running";
    assert_error(
        manager.kill(kill_params("short")).await,
        INVALID_REQUEST,
        gone,
    );
    assert_error(
        manager
            .write_stdin(write_params("short", Some(b"x"), None))
            .await,
        INVALID_REQUEST,
        gone,
    );
    assert_error(
        manager.resize_pty(resize_params("short", 5, 5)).await,
        INVALID_REQUEST,
        gone,
    );
    let dyn_sink: Arc<dyn ProcessEventSink> = sink.clone();
    assert_error(
        manager.spawn(streaming("short", &["true"]), dyn_sink).await,
        INVALID_REQUEST,
        "duplicate active process handle: \"short\"",
    );

    sink.release();
    wait_exited(&sink, PROMPT).await;
    eventually(PROMPT, "handle released", || {
        kill_says_unknown(&manager, "short")
    })
    .await;
    assert_error(
        manager.kill(kill_params("short")).await,
        INVALID_REQUEST,
        "no active process for process handle \"short\"",
    );

    let sink = TestSink::open();
    start(&manager, streaming("short", &["echo", "again"]), &sink).await;
    assert_eq!(wait_exited(&sink, PROMPT).await.exit_code, 0);
    assert_eq!(sink.output(ProcessOutputStream::Stdout), b"again\n");
}

/// A server answers each stdin write on a task of its own, which a later `process/kill` can
/// overtake. The write found its process when its request was read, so it is answered for
/// that process (`is no longer running`), even once the handle was released, and not
/// `no active process`, which would say the client wrote to a handle that never was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_overtaken_by_a_kill_says_its_process_is_no_longer_running() {
    let manager = ProcessManager::new();
    let sink = TestSink::open();
    let mut params = streaming("overtaken", &["sleep", "600"]);
    params.stream_stdin = Some(true);
    start(&manager, params, &sink).await;
    let write = manager
        .stdin_write(write_params("overtaken", Some(b"x"), None))
        .expect("found while running");
    let exec_params: CommandExecParams = serde_json::from_value(serde_json::json!({
        "command": ["sleep", "600"], "processId": "overtaken-exec", "streamStdin": true,
    }))
    .expect("command/exec params");
    let exec = ExecRequest::new(exec_params, &std::env::temp_dir()).expect("a valid command/exec");
    let exec_sink = TestSink::open();
    exec.start(&manager, exec_sink.clone())
        .expect("started")
        .start_streaming();
    let exec_write = manager
        .exec_stdin_write(CommandExecWriteParams {
            process_id: "overtaken-exec".to_owned(),
            delta: Some(Bytes::from_static(b"x")),
            close_stdin: false,
        })
        .expect("found while running");

    manager.kill(kill_params("overtaken")).await.unwrap();
    assert_eq!(wait_exited(&sink, PROMPT).await.exit_code, 137);
    eventually(PROMPT, "handle released", || {
        kill_says_unknown(&manager, "overtaken")
    })
    .await;
    assert_error(
        within(PROMPT, "the overtaken write", write.write()).await,
        INVALID_REQUEST,
        "process \"overtaken\" is no longer running",
    );

    // The same for `command/exec/write`, in that request's words.
    manager
        .exec_terminate(CommandExecTerminateParams {
            process_id: "overtaken-exec".to_owned(),
        })
        .unwrap();
    wait_exited(&exec_sink, PROMPT).await;
    // The reference forgets an exited command/exec child, so its words are these.
    assert_error(
        within(PROMPT, "the overtaken exec write", exec_write.write()).await,
        INVALID_REQUEST,
        "no active command/exec for process id \"overtaken-exec\"",
    );
}

//! Acceptance 5 to 8: the output cap, the timeout, the PTY and the environment.

use super::*;

// ---------------------------------------------------------------------------------------------
// Acceptance 5 and 6: cap and timeout
// ---------------------------------------------------------------------------------------------

// Acceptance 5
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cap_delivers_exactly_1_mib_of_10_mib_and_the_child_exits_0() {
    let mut handle = start(DEFAULT_IN_PROCESS_CHANNEL_CAPACITY).await;
    let marker = Marker::new("cap");
    let mut params = marker.params("capped", &["head", "-c", "10485760", "/dev/zero"]);
    params.output_bytes_cap = Some(Some(MIB as u64));
    spawn_ok(&handle, params).await;
    let mut events = Events::default();
    events.read_exits(&mut handle, &["capped"], PROMPT).await;
    let run = events.run("capped");
    assert_eq!(run.stdout.len(), MIB);
    let (last, rest) = run.deltas.split_last().expect("deltas");
    assert!(last.cap_reached, "the last delta carries capReached");
    assert!(rest.iter().all(|delta| !delta.cap_reached));
    let exited = run.exited();
    assert_eq!(exited.exit_code, 0, "the child was never blocked");
    assert!(exited.stdout_cap_reached);
    assert!(!exited.stderr_cap_reached);
    assert!(!exited.output_drain_timed_out, "output complete");
    within(PROMPT, "shutdown", handle.shutdown()).await.unwrap();
}

// Acceptance 6
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_of_200_ms_reports_124_within_2_s_and_the_group_is_gone() {
    let mut handle = start(DEFAULT_IN_PROCESS_CHANNEL_CAPACITY).await;
    let marker = Marker::new("timeout");
    let mut params = marker.params("sleepy", &["sleep", "30"]);
    params.timeout_ms = Some(Some(200));
    let began = Instant::now();
    spawn_ok(&handle, params).await;
    let mut events = Events::default();
    events
        .read_exits(&mut handle, &["sleepy"], Duration::from_secs(2))
        .await;
    assert!(began.elapsed() < Duration::from_secs(2));
    assert_eq!(events.run("sleepy").exited().exit_code, 124);
    // Every member of the child's group carries the marker; none is left.
    eventually(Duration::from_secs(2), "group gone", || {
        marker.live_pids().is_empty()
    })
    .await;
    within(PROMPT, "shutdown", handle.shutdown()).await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// Acceptance 7 and 8: PTY and environment
// ---------------------------------------------------------------------------------------------

/// The PTY output as lines, with a leading `$ ` prompt removed (typed-ahead input makes the
/// prompt precede a command's output on the same line).
fn pty_lines(events: &Events, handle: &str) -> Vec<String> {
    events
        .runs
        .get(handle)
        .map(|run| run.stdout_text())
        .unwrap_or_default()
        .split(['\r', '\n'])
        .map(|line| line.strip_prefix("$ ").unwrap_or(line).to_owned())
        .collect()
}

// Acceptance 7
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pty_shell_echoes_input_resizes_and_ends_on_close_stdin() {
    let mut handle = start(DEFAULT_IN_PROCESS_CHANNEL_CAPACITY).await;
    let marker = Marker::new("pty");
    let mut params = marker.params("shell", &["sh"]);
    params.tty = Some(true);
    params.timeout_ms = Some(None);
    params
        .env
        .get_or_insert_default()
        .insert("PS1".into(), Some("$ ".into()));
    spawn_ok(&handle, params).await;
    let mut events = Events::default();

    let written = call(&handle, write_request("shell", Some(b"echo hi\n"), None)).await;
    assert_eq!(written, Ok(json!({})));
    // The terminal echoes the typed line too; the command's own output is the line "hi".
    events
        .read_until(&mut handle, PROMPT, "hi", None, |events| {
            pty_lines(events, "shell").iter().any(|line| line == "hi")
        })
        .await;

    assert_eq!(
        call(&handle, resize_request("shell", 40, 100)).await,
        Ok(json!({}))
    );
    let written = call(&handle, write_request("shell", Some(b"stty size\n"), None)).await;
    assert_eq!(written, Ok(json!({})));
    events
        .read_until(&mut handle, PROMPT, "stty size", None, |events| {
            pty_lines(events, "shell")
                .iter()
                .any(|line| line == "40 100")
        })
        .await;

    let closed = call(&handle, write_request("shell", None, Some(true))).await;
    assert_eq!(closed, Ok(json!({})));
    events.read_exits(&mut handle, &["shell"], PROMPT).await;
    let run = events.run("shell");
    assert_eq!(run.exited().exit_code, 0);
    assert!(run.stderr.is_empty(), "PTY output is streamed as stdout");
    within(PROMPT, "shutdown", handle.shutdown()).await.unwrap();
}

// Acceptance 8
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn env_null_removes_a_variable_and_a_new_one_is_present() {
    let removed = ["CARGO_MANIFEST_DIR", "HOME", "PATH"]
        .into_iter()
        .find(|name| std::env::var_os(name).is_some())
        .expect("some inherited variable to remove");
    let mut handle = start(DEFAULT_IN_PROCESS_CHANNEL_CAPACITY).await;
    let marker = Marker::new("env");
    let script = format!("echo \"new=$TANDEM_NEW_VAR\"; echo \"removed=${{{removed}-unset}}\"");
    let mut params = marker.params("env", &["/bin/sh", "-c", &script]);
    let env = params.env.get_or_insert_default();
    env.insert("TANDEM_NEW_VAR".into(), Some("hello".into()));
    env.insert(removed.into(), None);
    spawn_ok(&handle, params).await;
    let mut events = Events::default();
    events.read_exits(&mut handle, &["env"], PROMPT).await;
    let run = events.run("env");
    assert_eq!(run.exited().exit_code, 0);
    assert_eq!(run.stdout_text(), "new=hello\nremoved=unset\n");
    within(PROMPT, "shutdown", handle.shutdown()).await.unwrap();
}

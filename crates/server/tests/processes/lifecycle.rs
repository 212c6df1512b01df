//! Beyond the numbered points: stdin ordering, shutdown, initialize, unimplemented methods.

use super::*;

// ---------------------------------------------------------------------------------------------
// Beyond the numbered points: stdin ordering, shutdown, initialize, unimplemented methods
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdin_writes_keep_their_order_and_a_blocked_write_blocks_no_other_request() {
    let mut handle = start(DEFAULT_IN_PROCESS_CHANNEL_CAPACITY).await;
    let marker = Marker::new("stdin");
    // A child that reads one byte, says so, and never reads again: a 1 MiB write to it fills
    // its pipe and waits; "got" shows that the write has started.
    let mut params = marker.params(
        "deaf",
        &["sh", "-c", "head -c 1 >/dev/null; echo got; exec sleep 30"],
    );
    params.stream_stdin = Some(true);
    params.timeout_ms = Some(None);
    spawn_ok(&handle, params).await;
    let big = vec![b'x'; MIB];
    let blocked = tokio::spawn(send(
        handle.sender(),
        write_request("deaf", Some(&big), None),
    ));
    let mut events = Events::default();
    events
        .read_until(&mut handle, PROMPT, "got", None, |events| {
            events
                .runs
                .get("deaf")
                .is_some_and(|run| run.stdout == b"got\n")
        })
        .await;

    // Meanwhile another child gets many small writes, all queued at once and applied in order.
    let mut params = marker.params("cat", &["cat"]);
    params.stream_stdin = Some(true);
    spawn_ok(&handle, params).await;
    let lines: Vec<String> = (0..50).map(|n| format!("line {n}\n")).collect();
    let sender = handle.sender();
    // `request` enqueues at once, so the processor receives the writes in this order.
    let replies: Vec<_> = lines
        .iter()
        .map(|line| sender.request(write_request("cat", Some(line.as_bytes()), None)))
        .collect();
    for reply in replies {
        let reply = within(PROMPT, "write", reply).await.expect("queued");
        assert_eq!(reply, Ok(json!({})));
    }
    let closed = call(&handle, write_request("cat", None, Some(true))).await;
    assert_eq!(closed, Ok(json!({})));
    events.read_exits(&mut handle, &["cat"], PROMPT).await;
    assert_eq!(events.run("cat").stdout_text(), lines.concat());

    assert!(
        !blocked.is_finished(),
        "the write to a deaf child is still waiting"
    );
    assert_eq!(call(&handle, kill_request("deaf")).await, Ok(json!({})));
    assert_error(
        within(PROMPT, "blocked write", blocked).await.unwrap(),
        error_codes::INVALID_REQUEST,
        "process \"deaf\" is no longer running",
    );
    events.read_exits(&mut handle, &["deaf"], PROMPT).await;
    within(PROMPT, "shutdown", handle.shutdown()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_kills_every_process_and_descendant_even_with_a_stalled_consumer() {
    let mut handle = start(2).await;
    let marker = Marker::new("shutdown");
    for name in ["a", "b"] {
        let mut params = marker.params(name, &["sh", "-c", "yes & sleep 30 & wait"]);
        params.timeout_ms = Some(None);
        params.output_bytes_cap = Some(None);
        spawn_ok(&handle, params).await;
    }
    eventually(PROMPT, "children running", || {
        marker.live_named("sleep").len() == 2 && marker.live_named("yes").len() == 2
    })
    .await;
    let began = Instant::now();
    within(PROMPT, "shutdown", handle.shutdown()).await.unwrap();
    assert!(began.elapsed() < PROMPT);
    eventually(Duration::from_secs(3), "nothing outlives the host", || {
        marker.live_pids().is_empty()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_client_handle_closes_the_connection_and_kills_its_processes() {
    let handle = start(DEFAULT_IN_PROCESS_CHANNEL_CAPACITY).await;
    let marker = Marker::new("dropped");
    let mut params = marker.params("orphan", &["sh", "-c", "sleep 30 & sleep 30"]);
    params.timeout_ms = Some(None);
    spawn_ok(&handle, params).await;
    eventually(PROMPT, "children running", || {
        marker.live_named("sleep").len() == 2
    })
    .await;
    drop(handle);
    eventually(PROMPT, "nothing outlives the connection", || {
        marker.live_pids().is_empty()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_names_server_and_client_and_creates_the_home() {
    let home = test_home().join(format!("init-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    let options = ServerOptions::new(&home).unwrap();
    let server: Arc<Mutex<Option<Arc<TandemServer>>>> = Arc::default();
    let slot = Arc::clone(&server);
    let args = InProcessStartArgs::new(
        move |outgoing| {
            let server = Arc::new(TandemServer::new(outgoing, options));
            *slot.lock().unwrap() = Some(Arc::clone(&server));
            server as Arc<dyn MessageProcessor>
        },
        initialize_params(true),
    );
    let mut handle = within(PROMPT, "start", in_process::start(args))
        .await
        .unwrap();
    assert!(home.is_dir(), "initialize created the home");

    // The host keeps the initialize result to itself; ask the same server directly.
    let server = server.lock().unwrap().clone().unwrap();
    let params = initialize_params(true);
    let response = server
        .initialize(ConnectionId(7), &params, &ConnectionSessionState::default())
        .await
        .unwrap();
    assert_eq!(response.server_info.name, "tandem");
    // Clients gate features on `serverInfo.version`: the protocol revision, not Tandem's.
    assert_eq!(
        response.server_info.version,
        tandem_protocol::UPSTREAM_PROTOCOL_VERSION
    );
    assert_eq!(response.tandem_version, env!("CARGO_PKG_VERSION"));
    assert_eq!(response.codex_home, response.tandem_home);
    assert!(
        response.user_agent.starts_with(&format!(
            "tandem/{} (tandem {};",
            tandem_protocol::UPSTREAM_PROTOCOL_VERSION,
            env!("CARGO_PKG_VERSION")
        )),
        "{}",
        response.user_agent
    );
    let client = format!("{}/{}", params.client_info.name, params.client_info.version);
    assert!(
        response.user_agent.contains(&client),
        "{}",
        response.user_agent
    );
    assert_eq!(response.platform_family, "unix");
    assert_eq!(response.platform_os, std::env::consts::OS);
    assert_eq!(PathBuf::from(&response.tandem_home), home);
    within(PROMPT, "shutdown", handle.shutdown()).await.unwrap();
    let _ = std::fs::remove_dir_all(&home);
}

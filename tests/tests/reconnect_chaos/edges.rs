//! The edges of reconnecting, one at a time, through a proxy the test freezes (the server's
//! bytes are dropped, as on a network path gone dark) and then cuts: a request lost in flight
//! fails as "maybe sent" only when it carries an idempotency key, and the retry of a keyed
//! `start_turn` continues the stream of the lost one; a cursor older than the replay window is
//! an explicit gap the turn handle resyncs from; a process handle sees every byte its process
//! wrote exactly once, and its exit, across several cuts (the server keeps a closed
//! connection's processes for a new one to resume); the connection state is reported to a
//! watcher.

use std::time::Duration;

use serde_json::json;
use tandem_client::{
    Client, ClientError, ConnectionState, ProcessEvent, Transport, TurnEvent, WebSocketTarget,
};
use tandem_protocol::{ProcessSpawnParams, ThreadNameSetParams, TurnStartParams, TurnStatus};

use crate::proxy::{CutPlan, Proxy, Upstream};
use crate::{client_options, script, websocket_server_with};

/// How long a step that waits on the server may take.
const LIMIT: Duration = Duration::from_secs(30);

/// Server bytes between two cuts in the process test: a few dozen deltas each.
const PROCESS_CUT_BYTES: std::ops::RangeInclusive<u64> = 1_500..=4_000;

/// The cut seed of the process test (`TANDEM_CHAOS_SEED` overrides it, as for the script).
fn env_seed() -> u64 {
    crate::env_u64("TANDEM_CHAOS_SEED", 0x9_0C5E)
}

/// Waits until the frozen proxy has dropped some of the server's bytes: the server answered
/// (or acted on) what was sent last.
async fn until_dropped(proxy: &Proxy) {
    tokio::time::timeout(LIMIT, async {
        while proxy.dropped() == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the server sent something while the proxy was frozen");
}

/// A client through a fresh proxy to a fresh websocket server started with `args`.
async fn setup(
    args: &[&str],
) -> (
    tempfile::TempDir,
    tandem_test_support::binary::ServerProcess,
    std::net::SocketAddr,
    Proxy,
    Client,
) {
    let home = tempfile::tempdir().expect("a home");
    let (server, address) = websocket_server_with(home.path(), args).await;
    let proxy = Proxy::start(Upstream::Tcp(address), None).await;
    let target = WebSocketTarget::new(proxy.url.clone());
    let client = Client::start(Transport::WebSocket(target), client_options())
        .await
        .expect("a client");
    (home, server, address, proxy, client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_lost_in_flight_and_a_keyed_retry_that_sees_the_whole_turn() {
    let (_home, mut server, _, proxy, client) = setup(&[]).await;
    let mut states = client.connection_state();
    let thread = script::start_thread(&client, "edges", 0).await;

    // An unkeyed mutation whose reply is lost: the outcome is unknown.
    proxy.freeze();
    let rename = {
        let client = client.clone();
        let params = ThreadNameSetParams {
            thread_id: thread.clone(),
            name: "renamed".into(),
        };
        tokio::spawn(async move { client.set_thread_name(params).await })
    };
    until_dropped(&proxy).await;
    proxy.cut();
    let error = tokio::time::timeout(LIMIT, rename)
        .await
        .expect("the rename ends")
        .expect("the task")
        .expect_err("its reply was lost");
    assert!(
        matches!(error, ClientError::Disconnected { sent: true, .. }) && !error.is_retry_safe(),
        "{error:?}"
    );
    assert!(error.to_string().contains("outcome unknown"), "{error}");

    // A keyed `turn/start` whose reply is lost: maybe sent, safe to retry.
    let mut params = TurnStartParams::text(&thread, "hello\n/sh printf 'kept\\n'\ngoodbye");
    params.client_user_message_id = Some("edges-keyed".into());
    client.connect().await.expect("back");
    proxy.freeze();
    let first = {
        let (client, params) = (client.clone(), params.clone());
        tokio::spawn(async move { client.start_turn(params).await })
    };
    until_dropped(&proxy).await;
    proxy.cut();
    let error = tokio::time::timeout(LIMIT, first)
        .await
        .expect("the start ends")
        .expect("the task")
        .expect_err("its reply was lost");
    assert!(
        matches!(error, ClientError::MaybeSent { .. }) && error.is_retry_safe(),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("maybe sent, safe to retry"),
        "{error}"
    );
    let handle = script::retrying("turn/start", false, || client.start_turn(params.clone())).await;
    let mut handle = handle;
    let mut started = 0;
    let mut text = String::new();
    let mut approvals = 0;
    let mut kinds = Vec::new();
    let end = tokio::time::timeout(LIMIT, async {
        while let Some(event) = handle.next_event().await {
            let event = event.expect("the stream stays whole");
            kinds.push(format!("{event:?}").chars().take(60).collect::<String>());
            match event {
                TurnEvent::Started(_) => started += 1,
                TurnEvent::AgentText { delta, .. } => text.push_str(&delta),
                TurnEvent::Approval(request) => {
                    approvals += 1;
                    request.accept().await.expect("accepted");
                }
                TurnEvent::Gap { .. } => panic!("no gap: the window holds the turn"),
                TurnEvent::Completed(turn) => return turn,
                _ => {}
            }
        }
        panic!("the stream ended before the turn")
    })
    .await
    .expect("the turn ends");
    assert_eq!(end.status, TurnStatus::Completed);
    assert_eq!(
        (started, approvals),
        (1, 1),
        "the turn's events, each once: {kinds:#?}"
    );
    assert_eq!(
        text,
        handle.text().replace('\n', ""),
        "every delta of the turn, once"
    );
    let stored = script::stored_turns(&client, &thread).await;
    assert_eq!(stored.len(), 1, "the retry started no second turn");
    let stats = client.reconnect_stats();
    assert!(
        stats.reconnects >= 2 && stats.replayed_events > 0,
        "{stats:?}"
    );

    // A watcher saw the comebacks.
    let mut seen_reconnected = false;
    while states.has_changed().unwrap_or(false) {
        seen_reconnected |= matches!(
            *states.borrow_and_update(),
            ConnectionState::Reconnected { .. }
        );
    }
    assert!(
        seen_reconnected || matches!(*states.borrow(), ConnectionState::Reconnected { .. }),
        "the state reports the reconnect: {:?}",
        *states.borrow()
    );
    client.close().await;
    assert_eq!(*client.connection_state().borrow(), ConnectionState::Closed);
    server
        .terminate_within(LIMIT)
        .await
        .expect("the server stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cursor_older_than_the_window_is_an_explicit_gap_and_the_handle_resyncs() {
    let (home, mut server, address, proxy, client) = setup(&["--replay-window-events", "2"]).await;
    let thread = script::start_thread(&client, "gap", 0).await;
    // A watcher that does not go through the proxy tells when the turn has ended.
    let watcher = Client::start(
        Transport::WebSocket(WebSocketTarget::new(format!("ws://{address}"))),
        client_options(),
    )
    .await
    .expect("a watcher");
    let params: TurnStartParams = serde_json::from_value(json!({
        "threadId": thread,
        "input": [{"type": "text", "text": "/sleep 200\nhello while away"}],
        "approvalPolicy": "never",
    }))
    .expect("params");
    let mut handle = client.start_turn(params).await.expect("started");
    proxy.freeze();
    tokio::time::timeout(LIMIT, async {
        loop {
            let turns = script::stored_turns(&watcher, &thread).await;
            if turns
                .first()
                .is_some_and(|turn| turn.status != TurnStatus::InProgress)
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the turn ends on the server");
    proxy.cut();
    let mut events = Vec::new();
    let end = tokio::time::timeout(LIMIT, async {
        while let Some(event) = handle.next_event().await {
            let event = event.expect("the stream stays whole");
            if let TurnEvent::Completed(turn) = &event {
                return turn.clone();
            }
            events.push(event);
        }
        panic!("the stream ended before the turn")
    })
    .await
    .expect("the turn ends on the handle");
    let gap = events
        .iter()
        .position(|event| matches!(event, TurnEvent::Gap { snapshot: Some(_) }))
        .unwrap_or_else(|| panic!("an explicit gap with the snapshot: {events:?}"));
    assert!(
        events[gap + 1..].iter().any(|event| matches!(
            event,
            TurnEvent::ItemCompleted(tandem_protocol::ThreadItem::AgentMessage { text, .. })
                if text.contains("hello while away")
        )),
        "the agent message missed in the gap comes from the snapshot: {events:?}"
    );
    assert_eq!(end.status, TurnStatus::Completed);
    assert!(handle.text().contains("hello while away"));
    assert_eq!(client.reconnect_stats().gaps, 1);
    client.close().await;
    watcher.close().await;
    server
        .terminate_within(LIMIT)
        .await
        .expect("the server stops");
    drop(home);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_handle_sees_every_byte_once_and_its_exit_across_cuts() {
    // Cuts after a seeded number of the server's bytes: several fall while the process writes.
    let home = tempfile::tempdir().expect("a home");
    let (mut server, address) = websocket_server_with(home.path(), &[]).await;
    let proxy = Proxy::start(
        Upstream::Tcp(address),
        Some(CutPlan::seeded(env_seed(), PROCESS_CUT_BYTES)),
    )
    .await;
    let target = WebSocketTarget::new(proxy.url.clone());
    let client = Client::start(Transport::WebSocket(target), client_options())
        .await
        .expect("a client");
    let lines = 150;
    let script = format!(
        "i=1; while [ $i -le {lines} ]; do printf 'line %04d of the known sequence\\n' $i; \
         i=$((i+1)); sleep 0.002; done; exit 7"
    );
    let expected: String = (1..=lines)
        .map(|i| format!("line {i:04} of the known sequence\n"))
        .collect();
    let params: ProcessSpawnParams = serde_json::from_value(json!({
        "command": ["sh", "-c", script],
        "processHandle": "writer",
        "cwd": std::env::temp_dir(),
        "streamStdoutStderr": true,
        "timeoutMs": null,
        "outputBytesCap": null,
    }))
    .expect("params");
    // Before the first cut: the cut budget is larger than the handshake and this answer.
    let mut process = client.spawn_process(params).await.expect("spawned");
    let mut seen = Vec::new();
    let exited = tokio::time::timeout(Duration::from_secs(120), async {
        loop {
            match process.next_event().await {
                Some(Ok(ProcessEvent::Output { bytes, .. })) => seen.extend_from_slice(&bytes),
                Some(Ok(ProcessEvent::Exited(exited))) => return exited,
                Some(Ok(ProcessEvent::Gap)) => {
                    panic!("a gap: the window should hold the missed output")
                }
                other => panic!("the handle must not end before the exit: {other:?}"),
            }
        }
    })
    .await
    .expect("the exit arrives");
    let cuts = proxy.cuts();
    println!("process across cuts: {cuts} cuts, {} bytes", seen.len());
    assert!(
        cuts >= 3,
        "the test must cut while the process writes, cut {cuts} times"
    );
    assert_eq!(
        String::from_utf8(seen).expect("text"),
        expected,
        "every byte exactly once, in order"
    );
    assert_eq!(exited.exit_code, 7);
    client.close().await;
    server
        .terminate_within(LIMIT)
        .await
        .expect("the server stops");
    drop(home);
}

//! Issue 17, points 1, 2 and 6 through the in-process host: a consumer replaced in the middle
//! of a turn resumes from its last cursor and gets exactly the events it missed (deltas and
//! command output included, none twice); a cursor from before a restart is answered with a gap
//! and the stored thread; a consumer that never reads leaves the replay window within its
//! bounds by the window's own accounting.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tandem_host::in_process::{self, InProcessServerEvent, InProcessStartArgs};
use tandem_host::{
    InProcessClientHandle, MessageProcessor, OutgoingMessageSender, ReplayWindowLimits,
};
use tandem_protocol::client_methods::{ThreadRead, ThreadResume, ThreadStart, TurnStart};
use tandem_protocol::{
    ClientRequest, EventCursor, RequestId, RequestMethod, ServerNotification, ThreadItem,
    TurnStatus,
};
use tandem_server::{ServerConfig, ServerOptions, TandemServer};
use tandem_test_support::initialize_params;
use tokio::time::timeout;

/// Upper bound for anything that should happen promptly.
const PROMPT: Duration = Duration::from_secs(20);

fn options(home: &Path) -> ServerOptions {
    ServerOptions::load(
        ServerConfig::builder()
            .tandem_home(home)
            // Commands run unsandboxed in-process without a helper program; these tests are
            // about events, not the sandbox.
            .config_override("sandbox_mode", "danger-full-access".into()),
    )
    .expect("options load")
}

/// Starts a host with `limits`; the host's outgoing sender is handed back too, for the
/// window's own accounting.
async fn start(
    home: &Path,
    limits: ReplayWindowLimits,
) -> (InProcessClientHandle, OutgoingMessageSender) {
    let options = options(home);
    let (sender_tx, sender_rx) = std::sync::mpsc::channel();
    let mut args = InProcessStartArgs::new(
        move |outgoing| {
            sender_tx.send(outgoing.clone()).expect("the test waits");
            Arc::new(TandemServer::new(outgoing, options)) as Arc<dyn MessageProcessor>
        },
        initialize_params(true),
    );
    args.replay_window = limits;
    let handle = within("start", in_process::start(args))
        .await
        .expect("host starts");
    (handle, sender_rx.recv().expect("the factory ran"))
}

async fn within<F: std::future::Future>(what: &str, future: F) -> F::Output {
    match timeout(PROMPT, future).await {
        Ok(output) => output,
        Err(_) => panic!("timed out after {PROMPT:?}: {what}"),
    }
}

fn request<M: RequestMethod<Request = ClientRequest>>(params: Value) -> ClientRequest {
    static NEXT: AtomicI64 = AtomicI64::new(1);
    let params: M::Params = serde_json::from_value(params).expect("params decode");
    M::into_request(
        RequestId::Integer(NEXT.fetch_add(1, Ordering::Relaxed)),
        params,
    )
}

async fn call<M: RequestMethod<Request = ClientRequest>>(
    handle: &InProcessClientHandle,
    params: Value,
) -> Value {
    within(M::METHOD, handle.request(request::<M>(params)))
        .await
        .expect("the host replies")
        .unwrap_or_else(|error| panic!("{} failed: {error:?}", M::METHOD))
}

/// Starts a thread and a turn with `input`; returns the thread id.
async fn thread_with_turn(handle: &InProcessClientHandle, input: &str) -> String {
    let started = call::<ThreadStart>(handle, json!({"approvalPolicy": "never"})).await;
    let thread_id = started["thread"]["id"].as_str().expect("an id").to_owned();
    call::<TurnStart>(
        handle,
        json!({"threadId": thread_id, "input": [{"type": "text", "text": input}]}),
    )
    .await;
    thread_id
}

/// The next notification with its cursor (`Lagged` fails the test: these consumers keep up).
async fn next_note(handle: &mut InProcessClientHandle) -> (ServerNotification, EventCursor) {
    loop {
        match within("an event", handle.next_event_with_cursor()).await {
            Some((InProcessServerEvent::ServerNotification(note), Some(cursor))) => {
                return (note, cursor);
            }
            // thread/started is a broadcast, not part of the thread's stream.
            Some((InProcessServerEvent::ServerNotification(note), None))
                if note.method() == "thread/started" => {}
            other => panic!("expected a thread notification with a cursor, got {other:?}"),
        }
    }
}

/// Waits (by `thread/read`, not events) until the thread's last turn is no longer running.
async fn wait_for_turn_end(handle: &InProcessClientHandle, thread_id: &str) -> Value {
    within("the turn's end", async {
        loop {
            let read =
                call::<ThreadRead>(handle, json!({"threadId": thread_id, "includeTurns": true}))
                    .await;
            let turns = read["thread"]["turns"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if turns
                .last()
                .is_some_and(|turn| turn["status"] != json!("inProgress"))
            {
                return read["thread"].clone();
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
}

/// What a client rebuilds from a turn's events: the agent's text and the command's output,
/// each concatenated from its deltas.
#[derive(Debug, Default, PartialEq)]
struct Transcript {
    agent_text: String,
    command_output: String,
}

impl Transcript {
    fn apply(&mut self, note: &ServerNotification) {
        match note {
            ServerNotification::AgentMessageDelta(delta) => self.agent_text.push_str(&delta.delta),
            ServerNotification::CommandExecutionOutputDelta(delta) => {
                self.command_output.push_str(&delta.delta);
            }
            _ => {}
        }
    }
}

/// The same transcript from the stored turn.
fn stored_transcript(thread: &Value) -> Transcript {
    let turn: tandem_protocol::Turn =
        serde_json::from_value(thread["turns"][0].clone()).expect("a turn");
    let mut transcript = Transcript::default();
    for item in &turn.items {
        match item {
            ThreadItem::AgentMessage { text, .. } => transcript.agent_text.push_str(text),
            ThreadItem::CommandExecution {
                aggregated_output, ..
            } => transcript
                .command_output
                .push_str(aggregated_output.as_deref().unwrap_or_default()),
            _ => {}
        }
    }
    transcript
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_consumer_resumes_with_exactly_the_missed_events() {
    let home = tempfile::tempdir().expect("a home");
    let (mut handle, _) = start(home.path(), ReplayWindowLimits::default()).await;
    let input = "hello there, this is streamed\n/sh printf 'one\\n'; sleep 0.2; printf 'two\\n'";
    let thread_id = thread_with_turn(&handle, input).await;

    // The first consumer reads until the first agent delta, then goes away.
    let mut transcript = Transcript::default();
    let mut seen = Vec::new();
    loop {
        let (note, cursor) = next_note(&mut handle).await;
        transcript.apply(&note);
        let first_delta = note.method() == "item/agentMessage/delta";
        seen.push(cursor);
        if first_delta {
            break;
        }
    }
    let last_seen = seen.last().cloned().expect("events were read");
    within("reattach", handle.reattach_events())
        .await
        .expect("the consumer is replaced");
    let stored = wait_for_turn_end(&handle, &thread_id).await;

    // The new consumer resumes from the last cursor it saw; the replay arrives before the
    // reply, so it reads while waiting. The turn's last events may still be on their way when
    // the store already shows it ended: those follow live, right after the replay.
    let resume = handle.request(request::<ThreadResume>(
        json!({"threadId": thread_id, "cursor": last_seen, "excludeTurns": true}),
    ));
    tokio::pin!(resume);
    let mut replayed = Vec::new();
    let mut reply = None;
    let mut completed = false;
    while reply.is_none() || !completed {
        tokio::select! {
            // Events first: the replay is queued before the reply is sent, so by the time the
            // reply is ready every replayed event is ready too, and an unbiased select could
            // take the reply while some of them still wait to be read.
            biased;
            event = within("the rest of the turn", handle.next_event_with_cursor()) => match event {
                Some((InProcessServerEvent::ServerNotification(note), Some(cursor))) => {
                    completed |= note.method() == "turn/completed";
                    replayed.push((note, cursor));
                }
                other => panic!("unexpected event during the replay: {other:?}"),
            },
            answer = &mut resume, if reply.is_none() => {
                reply = Some((answer.expect("the host replies").expect("resumed"), replayed.len()));
            }
        }
    }
    let (reply, before_reply) = reply.expect("replied");
    assert_eq!(reply["gap"], json!(false), "{reply}");
    assert_eq!(reply["replayed"], json!(before_reply), "{reply}");
    assert!(
        before_reply > 0,
        "the first consumer missed events: {reply}"
    );
    // No gap and no duplicate, replayed then live: the cursors go on one by one from the last
    // one seen.
    for (offset, (_, cursor)) in replayed.iter().enumerate() {
        assert_eq!(cursor.epoch, last_seen.epoch);
        assert_eq!(cursor.seq, last_seen.seq + 1 + offset as u64, "{cursor:?}");
    }
    for (note, _) in &replayed {
        transcript.apply(note);
    }
    let from_store = stored_transcript(&stored);
    assert_eq!(transcript, from_store);
    assert!(
        from_store.agent_text.contains("hello there") && from_store.command_output == "one\ntwo\n"
    );
    handle.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cursor_from_before_a_restart_is_a_gap_with_the_stored_thread() {
    let home = tempfile::tempdir().expect("a home");
    let (mut handle, _) = start(home.path(), ReplayWindowLimits::default()).await;
    let thread_id = thread_with_turn(&handle, "remember me").await;
    let last = loop {
        let (note, cursor) = next_note(&mut handle).await;
        if note.method() == "turn/completed" {
            break cursor;
        }
    };
    handle.shutdown().await.expect("shutdown");

    let (handle, _) = start(home.path(), ReplayWindowLimits::default()).await;
    let reply = call::<ThreadResume>(
        &handle,
        json!({"threadId": thread_id, "cursor": last, "excludeTurns": true}),
    )
    .await;
    assert_eq!(reply["gap"], json!(true), "{reply}");
    assert_eq!(reply["replayed"], json!(null));
    assert_ne!(
        reply["cursor"]["epoch"],
        json!(last.epoch),
        "a new server, a new epoch"
    );
    let turn: tandem_protocol::Turn =
        serde_json::from_value(reply["thread"]["turns"][0].clone()).expect("the stored turn");
    assert_eq!(turn.status, TurnStatus::Completed);
    assert!(
        turn.items.iter().any(|item| matches!(item,
            ThreadItem::AgentMessage { text, .. } if text.contains("remember me"))),
        "the snapshot holds what the client missed: {turn:?}"
    );
    let mut handle = handle;
    handle.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_window_stays_within_its_bounds_while_the_consumer_never_reads() {
    let home = tempfile::tempdir().expect("a home");
    let limits = ReplayWindowLimits {
        max_events: 10_000,
        max_bytes: 256 * 1024,
    };
    let (mut handle, outgoing) = start(home.path(), limits).await;
    // About 2 MB of command output, streamed as deltas nobody reads.
    let input = "/sh head -c 2000000 /dev/zero | tr '\\0' x";
    let thread_id = thread_with_turn(&handle, input).await;
    let mut samples = 0;
    let stats = within("the window to evict", async {
        loop {
            if let Some(stats) = outgoing.replay_window_stats(&thread_id).await {
                samples += 1;
                // Strict: an event larger than the window is not kept at all (docs/host.md).
                assert!(stats.bytes <= limits.max_bytes, "over the bound: {stats:?}");
                assert!(
                    stats.events <= limits.max_events,
                    "over the bound: {stats:?}"
                );
                if stats.evicted >= 20 {
                    return stats;
                }
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await;
    assert!(samples > 1, "{samples} samples, {stats:?}");
    // The full event queue (and anything parked in it) goes with the old consumer.
    within("reattach", handle.reattach_events())
        .await
        .expect("the consumer is replaced");
    // What fell out of the window is a gap now, never a partial replay.
    let oldest = EventCursor {
        epoch: outgoing_epoch(&mut handle, &thread_id).await,
        seq: 1,
    };
    let reply = call::<ThreadResume>(
        &handle,
        json!({"threadId": thread_id, "cursor": oldest, "excludeTurns": true}),
    )
    .await;
    assert_eq!(reply["gap"], json!(true), "{reply}");
    handle.shutdown().await.expect("shutdown");
}

/// The epoch of this host, from a resume without a cursor (which replays nothing).
async fn outgoing_epoch(handle: &mut InProcessClientHandle, thread_id: &str) -> String {
    let reply =
        call::<ThreadResume>(handle, json!({"threadId": thread_id, "excludeTurns": true})).await;
    assert_eq!(reply["gap"], json!(null), "no cursor, no gap flag: {reply}");
    reply["cursor"]["epoch"]
        .as_str()
        .expect("an epoch")
        .to_owned()
}

/// recon: `thread/start` and `thread/fork` answer the caller's cursor, so a consumer that lost
/// its connection before the thread's first event resumes from it without a gap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_start_and_fork_answers_carry_a_cursor_to_resume_from() {
    let home = tempfile::tempdir().expect("a home");
    let (mut handle, _) = start(home.path(), ReplayWindowLimits::default()).await;
    let started = call::<ThreadStart>(&handle, json!({"approvalPolicy": "never"})).await;
    let thread_id = started["thread"]["id"].as_str().expect("an id").to_owned();
    let from: EventCursor =
        serde_json::from_value(started["cursor"].clone()).expect("thread/start answers a cursor");
    // The consumer goes away before reading anything of the thread.
    within("reattach", handle.reattach_events())
        .await
        .expect("the consumer is replaced");
    call::<TurnStart>(
        &handle,
        json!({"threadId": thread_id, "input": [{"type": "text", "text": "hello"}]}),
    )
    .await;
    wait_for_turn_end(&handle, &thread_id).await;
    within("reattach", handle.reattach_events())
        .await
        .expect("the consumer is replaced again");
    let resumed = call::<ThreadResume>(
        &handle,
        json!({"threadId": thread_id, "cursor": from, "excludeTurns": true}),
    )
    .await;
    assert_eq!(resumed["gap"], json!(false), "{resumed}");
    let replayed = resumed["replayed"].as_u64().expect("a count");
    let mut methods = Vec::new();
    for _ in 0..replayed {
        methods.push(next_note(&mut handle).await.0.method().to_owned());
    }
    assert!(
        methods.first().map(String::as_str) == Some("thread/status/changed")
            && methods.iter().any(|method| method == "turn/started")
            && methods.last().map(String::as_str) == Some("turn/completed"),
        "the whole first turn is replayed: {methods:?}"
    );

    let forked = call::<tandem_protocol::client_methods::ThreadFork>(
        &handle,
        json!({"threadId": thread_id}),
    )
    .await;
    let fork_cursor: EventCursor =
        serde_json::from_value(forked["cursor"].clone()).expect("thread/fork answers a cursor");
    assert_eq!(fork_cursor.epoch, from.epoch);
}

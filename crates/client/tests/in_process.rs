//! tandem-client over the in-process host: replies that never wait on event consumption,
//! independent subscriptions, timeouts and error classification, turn and process handles,
//! and the least-privilege server-request handler.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tandem_client::{
    Client, ClientError, ClientOptions, Event, Overflow, ProcessEvent, RequestOptions,
    SubscriptionError, SubscriptionFilter, SubscriptionOptions, Transport, TurnEvent,
};
use tandem_host::{
    ConnectionId, ConnectionSessionState, DeliveryPolicy, MessageProcessor, OutgoingMessageSender,
    RequestContext,
};
use tandem_protocol::{
    ClientRequest, CommandExecutionStatus, InitializeParams, InitializeResponse, JSONRPCErrorError,
    ProcessSpawnParams, RequestId, ServerNotification, ThreadItem, ThreadLoadedListParams,
    ThreadStartParams, TurnStartParams, TurnStatus,
};
use tandem_server::{ServerOptions, TandemServer};
use tandem_test_support::{TestProcessor, within};
use tokio::sync::Notify;

const LIMIT: Duration = Duration::from_secs(60);
const SIXTY_FOUR_MIB: usize = 64 * 1024 * 1024;

fn home() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp home")
}

async fn reference_client(home: &tempfile::TempDir, options: ClientOptions) -> Client {
    let mut server = ServerOptions::new(home.path()).expect("server options");
    // In-process without a helper program the sandbox cannot be applied, and commands under
    // the default read-only policy would be refused; this test is not about the sandbox
    // (crates/cli/tests/sandbox.rs is).
    server.config.sandbox = tandem_protocol::SandboxPolicy::DangerFullAccess;
    Client::start(Transport::InProcess(server), options)
        .await
        .expect("client starts")
}

async fn test_client(processor: TestProcessor, options: ClientOptions) -> Client {
    let start = processor.start_args(true);
    Client::start(Transport::Processor(start.processor), options)
        .await
        .expect("client starts")
}

fn custom(method: &str, params: &Value) -> (String, Value) {
    (method.to_owned(), params.clone())
}

/// The reference server plus `test/flood`, which answers at once and then sends `count`
/// `test/flooded` notifications from a task of its own.
struct FloodingServer {
    inner: TandemServer,
    outgoing: OutgoingMessageSender,
}

#[async_trait]
impl MessageProcessor for FloodingServer {
    async fn initialize(
        &self,
        connection: ConnectionId,
        params: &InitializeParams,
        session: &ConnectionSessionState,
    ) -> Result<InitializeResponse, JSONRPCErrorError> {
        self.inner.initialize(connection, params, session).await
    }

    fn handles_custom_method(&self, method: &str) -> bool {
        method == "test/flood"
    }

    async fn process_request(&self, request: ClientRequest, context: RequestContext) {
        let ClientRequest::Custom { params, .. } = &request else {
            return self.inner.process_request(request, context).await;
        };
        let count = params["count"].as_u64().unwrap_or(0);
        let outgoing = self.outgoing.clone();
        tokio::spawn(async move {
            outgoing
                .send_response(context.id.clone(), json!({"count": count}))
                .await;
            for n in 0..count {
                let note = ServerNotification::Custom {
                    method: "test/flooded".into(),
                    params: json!({"n": n}),
                };
                outgoing
                    .send_notification(context.id.connection_id, note)
                    .await;
            }
        });
    }

    async fn connection_closed(&self, connection: ConnectionId) {
        self.inner.connection_closed(connection).await;
    }

    async fn shutdown(&self) {
        self.inner.shutdown().await;
    }
}

fn head_command(bytes: usize) -> ProcessSpawnParams {
    let cwd = std::env::current_dir().expect("cwd").display().to_string();
    ProcessSpawnParams::new(
        format!("head-{bytes}"),
        ["head", "-c", &bytes.to_string(), "/dev/zero"],
        cwd,
    )
    .streaming()
    .unlimited_output()
    .no_timeout()
}

/// Acceptance 2, first point: a client that reads no events at all still gets every reply
/// while 10 000 guaranteed notifications and 64 MiB of process output flow.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_resolve_while_nobody_reads_events() {
    let home = home();
    let server = ServerOptions::new(home.path()).expect("server options");
    let options =
        ClientOptions::new().delivery_policy(DeliveryPolicy::default().guarantee("test/flooded"));
    let client = Client::start(
        Transport::processor(move |outgoing| {
            Arc::new(FloodingServer {
                inner: TandemServer::new(outgoing.clone(), server),
                outgoing,
            }) as Arc<dyn MessageProcessor>
        }),
        options,
    )
    .await
    .expect("client starts");

    // Subscribed and never read: without the worker, these would park the host's queue.
    let everything = client.subscribe(SubscriptionOptions::new(SubscriptionFilter::All));
    let process = within(
        LIMIT,
        "spawn",
        client.spawn_process(head_command(SIXTY_FOUR_MIB)),
    )
    .await
    .expect("spawned");
    let flood = within(
        LIMIT,
        "flood",
        client.request("test/flood", json!({"count": 10_000})),
    )
    .await
    .expect("flood answered");
    assert_eq!(flood, json!({"count": 10_000}));

    for _ in 0..200 {
        within(
            LIMIT,
            "a reply while events flow",
            client.list_loaded_threads(ThreadLoadedListParams::new()),
        )
        .await
        .expect("reply");
    }
    let exited = within(LIMIT, "the process exits", process.wait_exited())
        .await
        .expect("exit recorded");
    assert_eq!(exited.exit_code, 0);
    for _ in 0..10 {
        within(
            LIMIT,
            "a reply after the flow",
            client.list_loaded_threads(ThreadLoadedListParams::new()),
        )
        .await
        .expect("reply");
    }
    drop(everything);
    client.close().await;
}

/// Acceptance 2, second point: a process subscription receives every byte or ends with a loss
/// error that names the count; lossless always receives every byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn process_output_is_complete_or_reported_lost() {
    let home = home();
    let client = reference_client(&home, ClientOptions::new()).await;

    // Never read until the process is done: the queue of 128 deltas cannot hold 64 MiB.
    let unread = within(
        LIMIT,
        "spawn",
        client.spawn_process(head_command(SIXTY_FOUR_MIB)),
    )
    .await
    .expect("spawned");
    let lossless = within(
        LIMIT,
        "spawn",
        client.spawn_process_with(
            ProcessSpawnParams {
                process_handle: "lossless".into(),
                ..head_command(SIXTY_FOUR_MIB)
            },
            Some(4),
            Overflow::Lossless,
        ),
    )
    .await
    .expect("spawned");
    let read = within(
        LIMIT,
        "spawn",
        client.spawn_process(ProcessSpawnParams {
            process_handle: "read".into(),
            ..head_command(SIXTY_FOUR_MIB)
        }),
    )
    .await
    .expect("spawned");

    let lossless_output = within(LIMIT, "lossless output", lossless.collect_output()).await;
    let lossless_output = lossless_output.expect("a lossless subscription loses nothing");
    assert_eq!(lossless_output.stdout.len(), SIXTY_FOUR_MIB);
    assert_eq!(lossless_output.exited.exit_code, 0);

    match within(LIMIT, "read output", read.collect_output()).await {
        Ok(output) => assert_eq!(output.stdout.len(), SIXTY_FOUR_MIB, "never silently short"),
        Err(SubscriptionError::Overflowed { lost, method }) => {
            assert!(lost > 0);
            assert_eq!(method, "process/outputDelta");
        }
        Err(other) => panic!("unexpected end: {other}"),
    }

    match within(LIMIT, "unread output", unread.collect_output()).await {
        Err(SubscriptionError::Overflowed { lost, method }) => {
            assert!(lost > 0, "the loss is counted");
            assert_eq!(method, "process/outputDelta");
        }
        other => panic!("an unread 64 MiB stream must overflow its queue, got {other:?}"),
    }
    client.close().await;
}

/// Acceptance 3: timeouts are sent and unsafe; a closed client's requests are unsent and safe.
#[tokio::test(start_paused = true)]
async fn timeouts_and_closed_clients_are_classified() {
    let processor = TestProcessor::builder().on("test/never", |_call| async move {});
    let options = ClientOptions::new().request_timeout(Some(Duration::from_millis(200)));
    let client = test_client(processor, options).await;

    let (method, params) = custom("test/never", &json!({}));
    let error = client
        .request(&method, params)
        .await
        .expect_err("no answer");
    assert!(
        matches!(&error, ClientError::TimedOut { sent: true, after, .. } if *after == Duration::from_millis(200)),
        "{error:?}"
    );
    assert!(error.was_sent());
    assert!(!error.is_retry_safe());

    // A per-request timeout overrides the client's.
    let error = client
        .request_with(
            "test/never",
            json!({}),
            RequestOptions::new().timeout(Some(Duration::from_millis(50))),
        )
        .await
        .expect_err("no answer");
    assert!(
        matches!(error, ClientError::TimedOut { after, .. } if after == Duration::from_millis(50))
    );

    client.close().await;
    let error = client
        .list_loaded_threads(ThreadLoadedListParams::new())
        .await
        .expect_err("closed");
    assert!(matches!(error, ClientError::Closed { .. }), "{error:?}");
    assert!(!error.was_sent());
    assert!(error.is_retry_safe());
}

/// Timeouts are per request: a short one sent while a long one is pending fires first, on
/// time, and the long one still fires on time.
#[tokio::test(start_paused = true)]
async fn a_short_timeout_behind_a_long_one_fires_first() {
    let processor = TestProcessor::builder().on("test/never", |_call| async move {});
    let options = ClientOptions::new().request_timeout(Some(Duration::from_secs(10)));
    let client = test_client(processor, options).await;
    let started = tokio::time::Instant::now();
    let long = tokio::spawn({
        let client = client.clone();
        async move { client.request("test/never", json!({})).await }
    });
    tokio::time::sleep(Duration::from_millis(1)).await;
    let short = client
        .request_with(
            "test/never",
            json!({}),
            RequestOptions::new().timeout(Some(Duration::from_millis(100))),
        )
        .await
        .expect_err("no answer");
    assert!(
        matches!(short, ClientError::TimedOut { after, sent: true, .. } if after == Duration::from_millis(100)),
        "{short:?}"
    );
    assert_eq!(started.elapsed(), Duration::from_millis(101));
    let long = long.await.expect("no panic").expect_err("no answer");
    assert!(
        matches!(long, ClientError::TimedOut { after, sent: true, .. } if after == Duration::from_secs(10)),
        "{long:?}"
    );
    assert_eq!(started.elapsed(), Duration::from_secs(10));
    client.close().await;
}

/// Acceptance 5: a subscription that is never read ends with a loss error after its bound;
/// another subscription on the same client receives everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_are_independent() {
    const TICKS: u64 = 1000;
    let processor = TestProcessor::builder().on("test/burst", |call| async move {
        let outgoing = call.outgoing.clone();
        let connection = call.context.id.connection_id;
        call.reply(json!({})).await;
        tokio::spawn(async move {
            for n in 0..TICKS {
                let note = ServerNotification::Custom {
                    method: "test/tick".into(),
                    params: json!({"n": n}),
                };
                outgoing.send_notification(connection, note).await;
            }
            for method in ["test/done", "test/after"] {
                let note = ServerNotification::Custom {
                    method: method.into(),
                    params: json!({}),
                };
                outgoing.send_notification(connection, note).await;
            }
        });
    });
    // Host queues larger than the whole burst: whatever is lost here is lost by a subscription.
    let options = ClientOptions::new()
        .channel_capacity(4096)
        .delivery_policy(DeliveryPolicy::default().guarantee("test/done"));
    let client = test_client(processor, options).await;

    let mut stalled =
        client.subscribe(SubscriptionOptions::new(SubscriptionFilter::All).capacity(8));
    let mut reader =
        client.subscribe(SubscriptionOptions::new(SubscriptionFilter::All).capacity(2048));
    client
        .request("test/burst", json!({}))
        .await
        .expect("burst started");

    let mut ticks = Vec::new();
    loop {
        match within(LIMIT, "the reading subscription", reader.next()).await {
            Some(Ok(Event::Notification(ServerNotification::Custom { method, params }))) => {
                match method.as_str() {
                    "test/tick" => ticks.push(params["n"].as_u64().expect("n")),
                    "test/done" => {}
                    // Routed after `test/done` reached every subscription: only now may the
                    // stalled one be read without racing the router.
                    _ => break,
                }
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(
        ticks,
        (0..TICKS).collect::<Vec<_>>(),
        "everything, in order"
    );

    let mut seen = 0;
    let error = loop {
        match within(LIMIT, "the stalled subscription", stalled.next()).await {
            Some(Ok(Event::Notification(_))) => seen += 1,
            Some(Err(error)) => break error,
            other => panic!("unexpected {other:?} after {seen}"),
        }
    };
    assert_eq!(seen, 8, "the queue's bound");
    assert_eq!(
        error,
        SubscriptionError::Overflowed {
            lost: TICKS - 8 + 1,
            method: "test/done".into()
        }
    );
    assert!(stalled.next().await.is_none());
    client.close().await;
}

/// A `Lagged` from the host reaches every subscription.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_lag_reaches_every_subscription() {
    const TICKS: u64 = 200;
    let processor = TestProcessor::builder().on("test/burst", |call| async move {
        let outgoing = call.outgoing.clone();
        let connection = call.context.id.connection_id;
        call.reply(json!({})).await;
        tokio::spawn(async move {
            for n in 0..TICKS {
                let note = ServerNotification::Custom {
                    method: "test/tick".into(),
                    params: json!({"n": n}),
                };
                outgoing.send_notification(connection, note).await;
            }
        });
    });
    // A lossless subscription of capacity 1 that is not read stops the worker, so the host's
    // event queue (capacity 2) fills and the host skips best-effort notifications.
    let client = test_client(processor, ClientOptions::new().channel_capacity(2)).await;
    let mut blocker = client.subscribe(
        SubscriptionOptions::new(SubscriptionFilter::All)
            .capacity(1)
            .lossless(),
    );
    let mut roomy =
        client.subscribe(SubscriptionOptions::new(SubscriptionFilter::All).capacity(1000));
    client
        .request("test/burst", json!({}))
        .await
        .expect("burst started");

    // Count what each subscription accounts for: ticks seen plus skipped.
    async fn account(subscription: &mut tandem_client::Subscription) -> (u64, u64) {
        let (mut ticks, mut skipped) = (0, 0);
        while ticks + skipped < TICKS {
            match within(LIMIT, "events", subscription.next()).await {
                Some(Ok(Event::Notification(_))) => ticks += 1,
                Some(Ok(Event::Lagged { skipped: n })) => skipped += n,
                other => panic!("unexpected {other:?}"),
            }
        }
        (ticks, skipped)
    }
    let (blocker_ticks, blocker_skipped) = account(&mut blocker).await;
    let (roomy_ticks, roomy_skipped) = account(&mut roomy).await;
    assert!(blocker_skipped > 0, "the host lagged");
    assert_eq!(blocker_ticks + blocker_skipped, TICKS);
    assert_eq!(roomy_skipped, blocker_skipped, "the same lag reached both");
    assert_eq!(roomy_ticks, blocker_ticks);
    client.close().await;
}

/// -32001 is safe to retry, and `retry_overloaded` retries it with backoff.
#[tokio::test(start_paused = true)]
async fn overloaded_requests_are_retried_on_request() {
    let gate = Arc::new(Notify::new());
    let processor = TestProcessor::builder()
        .on("test/block", {
            let gate = gate.clone();
            move |call| {
                let gate = gate.clone();
                async move {
                    // Holds the processor task, so the processor queue fills behind it.
                    gate.notified().await;
                    call.reply(json!({"blocked": true})).await;
                }
            }
        })
        .on("test/echo", |call| async move {
            let params = call.params();
            call.reply(params).await;
        });
    let client = test_client(processor, ClientOptions::new().channel_capacity(1)).await;

    let blocked = tokio::spawn({
        let client = client.clone();
        async move { client.request("test/block", json!({})).await }
    });
    tokio::time::sleep(Duration::from_millis(10)).await;
    let queued = tokio::spawn({
        let client = client.clone();
        async move { client.request("test/echo", json!({"n": 1})).await }
    });
    tokio::time::sleep(Duration::from_millis(10)).await;

    let error = client
        .request("test/echo", json!({"n": 2}))
        .await
        .expect_err("the processor queue is full");
    assert!(error.is_overloaded(), "{error:?}");
    assert!(error.was_sent() && error.is_retry_safe());

    let retried = tokio::spawn({
        let client = client.clone();
        async move {
            client
                .request_with(
                    "test/echo",
                    json!({"n": 3}),
                    RequestOptions::new().retry_overloaded(20),
                )
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    gate.notify_one();
    assert_eq!(blocked.await.unwrap().unwrap(), json!({"blocked": true}));
    assert_eq!(queued.await.unwrap().unwrap(), json!({"n": 1}));
    assert_eq!(retried.await.unwrap().unwrap(), json!({"n": 3}));
    client.close().await;
}

/// Acceptance 6: the default handler declines the approval of a turn nobody watches, and the
/// turn still completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_handler_declines_and_the_turn_completes() {
    let home = home();
    let client = reference_client(&home, ClientOptions::new()).await;
    let thread = client
        .start_thread(ThreadStartParams::new().ephemeral(true))
        .await
        .expect("thread")
        .thread;
    let turn = client
        .start_turn(TurnStartParams::text(&thread.id, "/sh echo never-run"))
        .await
        .expect("turn");
    let done = within(LIMIT, "turn completes", turn.wait_completed())
        .await
        .expect("completed");
    assert_eq!(done.status, TurnStatus::Completed);
    let command = done
        .items
        .iter()
        .find_map(|item| match item {
            ThreadItem::CommandExecution { status, .. } => Some(*status),
            _ => None,
        })
        .expect("a command item");
    assert_eq!(command, CommandExecutionStatus::Declined);
    client.close().await;
}

/// A turn handle streams typed events; an approval accepted through it runs the command; the
/// handle's text is the streamed text and then the completed turn's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turn_handles_stream_typed_events_and_take_approvals() {
    let home = home();
    let client = reference_client(&home, ClientOptions::new()).await;
    let thread = client
        .start_thread(ThreadStartParams::new().ephemeral(true))
        .await
        .expect("thread")
        .thread;

    let mut turn = client
        .start_turn(TurnStartParams::text(&thread.id, "hello"))
        .await
        .expect("turn");
    let mut streamed = String::new();
    let mut started = false;
    let completed = loop {
        match within(LIMIT, "turn events", turn.next_event()).await {
            Some(Ok(TurnEvent::Started(_))) => started = true,
            Some(Ok(TurnEvent::AgentText { delta, .. })) => streamed.push_str(&delta),
            Some(Ok(TurnEvent::Completed(done))) => break done,
            Some(Ok(_)) => {}
            other => panic!("unexpected {other:?}"),
        }
    };
    assert!(started);
    assert_eq!(streamed, "You said: \"hello\"");
    assert_eq!(turn.text(), streamed);
    assert_eq!(completed.status, TurnStatus::Completed);
    assert!(
        turn.next_event().await.is_none(),
        "nothing after completion"
    );

    let mut turn = client
        .start_turn(TurnStartParams::text(&thread.id, "/sh echo hi"))
        .await
        .expect("turn");
    let mut output = String::new();
    let mut approval_id = None;
    loop {
        match within(LIMIT, "turn events", turn.next_event()).await {
            Some(Ok(TurnEvent::Approval(request))) => {
                assert_eq!(request.command(), "echo hi");
                approval_id = Some(request.id().clone());
                request.accept().await.expect("accepted");
            }
            Some(Ok(TurnEvent::CommandOutput { delta, .. })) => output.push_str(&delta),
            Some(Ok(TurnEvent::Completed(done))) => {
                assert_eq!(done.status, TurnStatus::Completed);
                break;
            }
            Some(Ok(_)) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(output, "hi\n");

    // Answering again, or answering an id that never existed, is an error the caller sees.
    let again = client
        .respond_to_server_request(
            approval_id.expect("an approval"),
            Ok(json!({"decision": "accept"})),
        )
        .await
        .expect_err("already answered");
    assert!(
        matches!(again, ClientError::ServerRequestNotPending { .. }),
        "{again:?}"
    );
    let unknown = client
        .respond_to_server_request(RequestId::Integer(9_999), Ok(json!({})))
        .await
        .expect_err("unknown");
    assert!(matches!(
        unknown,
        ClientError::ServerRequestNotPending { .. }
    ));
    client.close().await;
}

/// A turn interrupted through its handle completes as interrupted; `call` and raw `request`
/// reach the same methods; raw params that do not decode are refused with -32600.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupts_typed_calls_and_raw_requests() {
    let home = home();
    let client = reference_client(&home, ClientOptions::new()).await;
    let thread = client
        .start_thread(ThreadStartParams::new().ephemeral(true))
        .await
        .expect("thread")
        .thread;
    let turn = client
        .start_turn(TurnStartParams::text(&thread.id, "/sleep 60000"))
        .await
        .expect("turn");
    within(LIMIT, "interrupt", turn.interrupt())
        .await
        .expect("interrupted");
    let done = within(LIMIT, "completion", turn.wait_completed())
        .await
        .expect("completed");
    assert_eq!(done.status, TurnStatus::Interrupted);

    let typed = client
        .call::<tandem_protocol::client_methods::ThreadLoadedList>(ThreadLoadedListParams::new())
        .await
        .expect("typed");
    let raw = client
        .request("thread/loaded/list", json!({}))
        .await
        .expect("raw");
    assert_eq!(serde_json::to_value(&typed).unwrap(), raw);

    // Params that do not decode get the answer a wire server's transport gives them.
    let error = client
        .request("thread/read", json!({"threadId": 7}))
        .await
        .expect_err("does not decode");
    let rejected = error.server_error().expect("a server error");
    assert_eq!(
        (rejected.code, rejected.message.as_str()),
        (
            -32600,
            "Invalid request: invalid type: integer `7`, expected a string"
        )
    );
    assert!(!error.is_retry_safe());

    let error = client
        .request("thread/read", json!({"threadId": "no-such-thread"}))
        .await
        .expect_err("unknown thread");
    assert!(error.server_error().is_some() && !error.is_retry_safe());
    client.close().await;
}

/// Process handles: stdin, exit, and the bytes per stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn process_handles_write_stdin_and_collect_output() {
    let home = home();
    let client = reference_client(&home, ClientOptions::new()).await;
    let cwd = std::env::current_dir().unwrap().display().to_string();
    let mut process = client
        .spawn_process(
            ProcessSpawnParams::new("cat", ["sh", "-c", "cat; echo done >&2"], cwd)
                .streaming()
                .stream_stdin(),
        )
        .await
        .expect("spawned");
    process.write_stdin(&b"ping\n"[..]).await.expect("written");
    let first = within(LIMIT, "echoed", process.next_event()).await;
    assert_eq!(
        first.unwrap().unwrap(),
        ProcessEvent::Output {
            stream: tandem_protocol::ProcessOutputStream::Stdout,
            bytes: tandem_protocol::Bytes::from_static(b"ping\n"),
            cap_reached: false,
        }
    );
    process.close_stdin().await.expect("closed");
    let output = within(LIMIT, "output", process.collect_output())
        .await
        .expect("complete");
    assert_eq!(output.stderr, b"done\n");
    assert_eq!(output.exited.exit_code, 0);
    client.close().await;
}

//! Acceptance tests of the in-process host (issue 2): handshake, queues, lanes, delivery
//! classes, filtering and bounded shutdown, all through the public API.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::FutureExt;
use serde_json::{Value, json};
use tandem_host::in_process::{self, InProcessServerEvent};
use tandem_host::{ConnectionId, DeliveryPolicy};
use tandem_protocol::{
    ClientRequest, JSONRPCErrorError, ProcessExitedNotification, ProcessKillParams, RequestId,
    ServerNotification, error_codes,
};
use tandem_test_support::{
    TestProcessor, custom_request, event_method, expect_no_event, initialize_params,
    read_until_method, request_when_room, request_with_retry,
};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio::time::{Instant, timeout};

const PATIENCE: Duration = Duration::from_secs(10);

fn custom_note(method: &str, params: Value) -> ServerNotification {
    ServerNotification::Custom {
        method: method.to_owned(),
        params,
    }
}

fn echo() -> TestProcessor {
    TestProcessor::builder().on("echo", |call| async move {
        let params = call.params();
        call.reply(params).await;
    })
}

async fn alive_tasks() -> usize {
    // Let finished tasks be reaped before counting.
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

// Acceptance 1
#[tokio::test(start_paused = true)]
async fn start_performs_handshake_and_typed_request_succeeds() {
    let processor = echo().on("config/read", |call| async move {
        call.reply(
            json!({"config": {"thread_unload_delay_secs": 60}, "origins": {}, "layers": null}),
        )
        .await;
    });
    let mut handle = processor.start_default().await.unwrap();
    let typed = ClientRequest::ConfigRead {
        request_id: RequestId::Integer(1),
        params: Default::default(),
    };
    let reply = handle.request(typed).await.unwrap().unwrap();
    assert_eq!(reply["config"]["thread_unload_delay_secs"], 60);
    // A second initialize is refused by the host, not the processor.
    let again = ClientRequest::Initialize {
        request_id: RequestId::Integer(2),
        params: initialize_params(false),
    };
    let error = handle.request(again).await.unwrap().unwrap_err();
    assert_eq!(
        (error.code, error.message.as_str()),
        (error_codes::INVALID_REQUEST, "Already initialized")
    );
    handle.shutdown().await.unwrap();
}

// Acceptance 1
#[tokio::test(start_paused = true)]
async fn rejected_initialize_returns_invalid_data_and_leaves_no_task() {
    let before = alive_tasks().await;
    let shut_down = Arc::new(AtomicBool::new(false));
    let flag = shut_down.clone();
    let processor = TestProcessor::builder()
        .reject_initialize(JSONRPCErrorError::invalid_request("unsupported client"))
        .on_shutdown(move || {
            let flag = flag.clone();
            async move { flag.store(true, Ordering::SeqCst) }
        });
    let err = processor.start_default().await.unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    assert!(err.to_string().contains("unsupported client"), "{err}");
    assert!(shut_down.load(Ordering::SeqCst), "processor shutdown ran");
    assert_eq!(alive_tasks().await, before, "no host task left running");
}

// Acceptance 2
#[tokio::test(start_paused = true)]
async fn capacity_zero_is_clamped_to_one_and_requests_succeed() {
    let mut args = echo().start_args(false);
    args.channel_capacity = 0;
    let mut handle = in_process::start(args).await.unwrap();
    for id in 0..20 {
        let reply = request_with_retry(
            &handle,
            custom_request(id, "echo", json!({"n": id})),
            PATIENCE,
        )
        .await
        .unwrap();
        assert_eq!(reply, Ok(json!({"n": id})));
    }
    handle.shutdown().await.unwrap();
}

// Acceptance 3
#[tokio::test(start_paused = true)]
async fn duplicate_in_flight_id_is_refused_and_first_is_unaffected() {
    let gate = Arc::new(Notify::new());
    let release = gate.clone();
    let processor = TestProcessor::builder().on("slow", move |call| {
        let gate = gate.clone();
        async move {
            tokio::spawn(async move {
                gate.notified().await;
                call.reply(json!("first")).await;
            });
        }
    });
    let mut handle = processor.start_default().await.unwrap();
    let first = handle.request(custom_request(7, "slow", json!({})));
    let second = handle.request(custom_request(7, "slow", json!({})));
    let error = timeout(PATIENCE, second)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code, error_codes::INVALID_REQUEST);
    assert_eq!(error.message, "duplicate request id: 7");
    release.notify_one();
    assert_eq!(
        timeout(PATIENCE, first).await.unwrap().unwrap(),
        Ok(json!("first"))
    );
    handle.shutdown().await.unwrap();
}

// Acceptance 3
#[tokio::test(start_paused = true)]
async fn full_processor_queue_answers_overloaded() {
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let gate = Arc::new(Notify::new());
    let release = gate.clone();
    let processor = echo().on("block", move |call| {
        let gate = gate.clone();
        let started = started_tx.clone();
        async move {
            // Blocks the processor task itself.
            let _ = started.send(());
            gate.notified().await;
            call.reply(json!("unblocked")).await;
        }
    });
    let mut args = processor.start_args(false);
    args.channel_capacity = 2;
    let mut handle = in_process::start(args).await.unwrap();
    let blocked = handle.request(custom_request(1, "block", json!({})));
    timeout(PATIENCE, started.recv()).await.unwrap().unwrap();
    let queued_a = handle.request(custom_request(2, "echo", json!(2)));
    let queued_b = handle.request(custom_request(3, "echo", json!(3)));
    let overflow = request_when_room(&handle, custom_request(4, "echo", json!(4)), PATIENCE)
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(
        (overflow.code, overflow.message.as_str()),
        (error_codes::OVERLOADED, "request queue is full")
    );
    release.notify_one();
    assert_eq!(
        timeout(PATIENCE, blocked).await.unwrap().unwrap(),
        Ok(json!("unblocked"))
    );
    assert_eq!(
        timeout(PATIENCE, queued_a).await.unwrap().unwrap(),
        Ok(json!(2))
    );
    assert_eq!(
        timeout(PATIENCE, queued_b).await.unwrap().unwrap(),
        Ok(json!(3))
    );
    handle.shutdown().await.unwrap();
}

// Acceptance 3
#[tokio::test(start_paused = true)]
async fn full_client_queue_is_would_block_and_shut_down_host_is_broken_pipe() {
    let mut args = echo().start_args(false);
    args.channel_capacity = 2;
    let mut handle = in_process::start(args).await.unwrap();
    // A round trip first, so that `initialized` has left the client queue.
    handle
        .request(custom_request(0, "echo", json!(0)))
        .await
        .unwrap()
        .unwrap();
    // Nothing yields between these calls, so the runtime cannot drain the client queue.
    let a = handle.request(custom_request(1, "echo", json!(1)));
    let b = handle.request(custom_request(2, "echo", json!(2)));
    let c = handle.request(custom_request(3, "echo", json!(3)));
    // `try_request` says so at once, without a poll.
    let refused = handle
        .sender()
        .try_request(custom_request(9, "echo", json!(9)));
    assert_eq!(
        refused.map(|_| ()).unwrap_err().kind(),
        io::ErrorKind::WouldBlock
    );
    assert_eq!(c.await.unwrap_err().kind(), io::ErrorKind::WouldBlock);
    assert_eq!(a.await.unwrap(), Ok(json!(1)));
    assert_eq!(b.await.unwrap(), Ok(json!(2)));
    let accepted = handle
        .sender()
        .try_request(custom_request(10, "echo", json!(10)))
        .expect("room again");
    assert_eq!(accepted.await.unwrap(), Ok(json!(10)));

    let sender = handle.sender();
    handle.shutdown().await.unwrap();
    let err = sender
        .request(custom_request(4, "echo", json!(4)))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
    let refused = sender.try_request(custom_request(11, "echo", json!(11)));
    assert_eq!(
        refused.map(|_| ()).unwrap_err().kind(),
        io::ErrorKind::BrokenPipe
    );
    assert_eq!(
        sender
            .notify(tandem_protocol::ClientNotification::Custom {
                method: "x".into(),
                params: json!({})
            })
            .unwrap_err()
            .kind(),
        io::ErrorKind::BrokenPipe
    );
}

// Acceptance 4
#[tokio::test(start_paused = true)]
async fn dropping_request_future_cancels_processor_token() {
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let (cancelled_tx, mut cancelled) = mpsc::unbounded_channel();
    let processor = TestProcessor::builder().on("wait", move |call| {
        let started = started_tx.clone();
        let cancelled = cancelled_tx.clone();
        async move {
            tokio::spawn(async move {
                let _ = started.send(());
                call.context.cancel.cancelled().await;
                let _ = cancelled.send(call.context.id.request_id.clone());
            });
        }
    });
    let mut handle = processor.start_default().await.unwrap();
    let request = handle.request(custom_request(5, "wait", json!({})));
    let mut request = Box::pin(request);
    assert!((&mut request).now_or_never().is_none());
    timeout(PATIENCE, started.recv()).await.unwrap().unwrap();
    drop(request);
    let id = timeout(PATIENCE, cancelled.recv()).await.unwrap().unwrap();
    assert_eq!(id, RequestId::Integer(5));
    // The id is free again once its caller is gone.
    let processor_reuse = handle.request(custom_request(5, "wait", json!({})));
    timeout(PATIENCE, started.recv()).await.unwrap().unwrap();
    drop(processor_reuse);
    handle.shutdown().await.unwrap();
}

// Acceptance 5
#[tokio::test(start_paused = true)]
async fn server_request_meeting_full_or_closed_event_queue_fails_back() {
    let (outcome_tx, mut outcome) = mpsc::unbounded_channel();
    let processor = TestProcessor::builder().on("ask", move |call| {
        let outcome = outcome_tx.clone();
        async move {
            // Fill the event queue (capacity 2) with notifications nobody reads.
            for n in 0..2 {
                let note = custom_note("test/filler", json!(n));
                call.outgoing
                    .send_notification(call.context.id.connection_id, note)
                    .await;
            }
            let answer = call
                .outgoing
                .send_custom_request(call.context.id.connection_id, "test/question", json!({}))
                .await;
            let _ = outcome.send(answer.await);
            call.reply(json!({})).await;
        }
    });
    let mut args = processor.start_args(false);
    args.channel_capacity = 2;
    let handle = in_process::start(args).await.unwrap();
    handle
        .request(custom_request(1, "ask", json!({})))
        .await
        .unwrap()
        .unwrap();
    let error = timeout(PATIENCE, outcome.recv())
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert_eq!(
        (error.code, error.message.as_str()),
        (error_codes::OVERLOADED, "server request queue is full")
    );

    // Now the consumer goes away while a sender keeps the host running.
    let sender = handle.sender();
    drop(handle);
    sender
        .request(custom_request(2, "ask", json!({})))
        .await
        .unwrap()
        .unwrap();
    let error = timeout(PATIENCE, outcome.recv())
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code, error_codes::INTERNAL_ERROR);
}

// Acceptance 5
#[tokio::test(start_paused = true)]
async fn server_request_answers_bypass_a_full_processor_queue() {
    let processor = echo().on("ask", |call| async move {
        // Awaited on the processor task: nothing else is processed until the client answers.
        let answer = call
            .outgoing
            .send_custom_request(
                call.context.id.connection_id,
                "test/question",
                call.params(),
            )
            .await;
        match answer.await {
            Ok(value) => call.reply(json!({"answer": value})).await,
            Err(error) => call.reply(json!({"error": error.message})).await,
        }
    });
    let mut args = processor.start_args(false);
    args.channel_capacity = 2;
    let mut handle = in_process::start(args).await.unwrap();

    for (id, respond) in [(1, true), (10, false)] {
        let ask = handle.request(custom_request(id, "ask", json!({})));
        let event = read_until_method(&mut handle, "test/question", PATIENCE)
            .await
            .unwrap();
        let InProcessServerEvent::ServerRequest(question) = event else {
            panic!("{event:?}")
        };
        // Fill the processor queue behind the blocked request and prove it is full.
        let queued = [
            handle.request(custom_request(id + 1, "echo", json!(1))),
            handle.request(custom_request(id + 2, "echo", json!(2))),
        ];
        let full = request_when_room(&handle, custom_request(id + 3, "echo", json!(3)), PATIENCE)
            .await
            .unwrap()
            .unwrap_err();
        assert_eq!(full.code, error_codes::OVERLOADED);
        let expected = if respond {
            handle
                .respond_to_server_request(question.id().clone(), json!("yes"))
                .unwrap();
            json!({"answer": "yes"})
        } else {
            handle
                .fail_server_request(question.id().clone(), JSONRPCErrorError::internal("no"))
                .unwrap();
            json!({"error": "no"})
        };
        assert_eq!(timeout(PATIENCE, ask).await.unwrap().unwrap(), Ok(expected));
        for reply in queued {
            assert!(timeout(PATIENCE, reply).await.unwrap().unwrap().is_ok());
        }
    }
    handle.shutdown().await.unwrap();
}

// Acceptance 6
#[tokio::test(start_paused = true)]
async fn guaranteed_notifications_survive_a_randomly_pausing_consumer() {
    const N: u64 = 10_000;
    let processor = TestProcessor::builder().on("burst", |call| async move {
        let outgoing = call.outgoing.clone();
        let connection = call.context.id.connection_id;
        tokio::spawn(async move {
            for seq in 0..N {
                outgoing
                    .send_notification(connection, custom_note("test/guaranteed", json!(seq)))
                    .await;
                outgoing
                    .send_notification(connection, custom_note("test/bestEffort", json!(seq)))
                    .await;
            }
            outgoing
                .send_notification(connection, custom_note("test/done", json!({})))
                .await;
        });
        call.reply(json!({})).await;
    });
    let mut args = processor.start_args(false);
    args.channel_capacity = 2;
    args.delivery_policy = DeliveryPolicy::default()
        .guarantee("test/guaranteed")
        .guarantee("test/done");
    let mut handle = in_process::start(args).await.unwrap();
    // The reply may queue behind guaranteed notifications, so it is awaited after draining.
    let burst = handle.request(custom_request(1, "burst", json!({})));

    let mut rng = rand::rng();
    let (mut guaranteed, mut best_effort, mut skipped) = (Vec::new(), Vec::new(), 0u64);
    let consume = async {
        while let Some(event) = handle.next_event().await {
            match event {
                InProcessServerEvent::Lagged { skipped: n } => skipped += n,
                InProcessServerEvent::ServerNotification(ServerNotification::Custom {
                    method,
                    params,
                }) => match method.as_str() {
                    "test/guaranteed" => guaranteed.push(params.as_u64().unwrap()),
                    "test/bestEffort" => best_effort.push(params.as_u64().unwrap()),
                    "test/done" => return,
                    other => panic!("unexpected {other}"),
                },
                other => panic!("unexpected {other:?}"),
            }
            if rand::Rng::random_ratio(&mut rng, 1, 50) {
                let pause = rand::Rng::random_range(&mut rng, 1..2_000);
                tokio::time::sleep(Duration::from_micros(pause)).await;
            } else if rand::Rng::random_ratio(&mut rng, 1, 5) {
                tokio::task::yield_now().await;
            }
        }
        panic!("event stream ended early");
    };
    timeout(Duration::from_secs(600), consume).await.unwrap();
    assert_eq!(
        guaranteed,
        (0..N).collect::<Vec<_>>(),
        "every guaranteed one, in order"
    );
    assert!(
        best_effort.windows(2).all(|w| w[0] < w[1]),
        "best effort in order"
    );
    assert_eq!(
        best_effort.len() as u64 + skipped,
        N,
        "delivered + skipped accounts for all"
    );
    assert!(
        skipped > 0,
        "the consumer was slow enough to lag at least once"
    );
    timeout(PATIENCE, burst).await.unwrap().unwrap().unwrap();
    handle.shutdown().await.unwrap();
}

// Acceptance 7
#[tokio::test(start_paused = true)]
async fn process_control_reply_passes_a_parked_notification_but_ordinary_reply_waits() {
    let (flooded_tx, mut flooded) = mpsc::unbounded_channel();
    let processor = TestProcessor::builder()
        .on("flood", move |call| {
            let flooded = flooded_tx.clone();
            async move {
                let outgoing = call.outgoing.clone();
                let connection = call.context.id.connection_id;
                tokio::spawn(async move {
                    for n in 0..3 {
                        outgoing.send_notification(connection, exited_note(n)).await;
                    }
                    let _ = flooded.send(());
                });
            }
        })
        .on(
            "process/kill",
            |call| async move { call.reply(json!({})).await },
        )
        .on(
            "plain",
            |call| async move { call.reply(json!("plain")).await },
        );
    let mut args = processor.start_args(true);
    args.channel_capacity = 2;
    let mut handle = in_process::start(args).await.unwrap();
    let _flood = handle.request(custom_request(1, "flood", json!({})));
    timeout(PATIENCE, flooded.recv()).await.unwrap().unwrap();

    // Two guaranteed notifications fill the queue, the third is parked; the ordinary reply
    // is queued behind it.
    let plain = handle.request(custom_request(2, "plain", json!({})));
    let mut plain = Box::pin(plain);
    let kill = ClientRequest::ProcessKill {
        request_id: RequestId::Integer(3),
        params: ProcessKillParams {
            process_handle: "download".into(),
        },
    };
    let reply = timeout(PATIENCE, handle.request(kill))
        .await
        .expect("kill answers promptly");
    assert_eq!(reply.unwrap(), Ok(json!({})));
    assert!(
        timeout(Duration::from_secs(1), &mut plain).await.is_err(),
        "ordinary reply must stay behind the parked notification"
    );
    // Draining one event lets the parked notification in, and then the reply through.
    let first = handle.next_event().await.unwrap();
    assert_eq!(event_method(&first), "process/exited");
    assert_eq!(
        timeout(PATIENCE, plain).await.unwrap().unwrap(),
        Ok(json!("plain"))
    );
    for n in 1..3 {
        let event = handle.next_event().await.unwrap();
        let InProcessServerEvent::ServerNotification(ServerNotification::ProcessExited(exited)) =
            event
        else {
            panic!("{event:?}")
        };
        assert_eq!(exited.exit_code, n);
    }
    handle.shutdown().await.unwrap();
}

fn exited_note(exit_code: i32) -> ServerNotification {
    ServerNotification::ProcessExited(ProcessExitedNotification {
        process_handle: "download".into(),
        exit_code,
        stdout: String::new(),
        stdout_cap_reached: false,
        stderr: String::new(),
        stderr_cap_reached: false,
        output_drain_timed_out: false,
    })
}

// Acceptance 8
#[tokio::test(start_paused = true)]
async fn reply_is_resolved_before_a_waited_notification_arrives() {
    let (acked_tx, mut acked) = mpsc::unbounded_channel();
    let processor = TestProcessor::builder().on("attach", move |call| {
        let acked = acked_tx.clone();
        async move {
            call.reply(json!({"outcome": "created"})).await;
            let delivered = call
                .outgoing
                .send_notification_and_wait(
                    call.context.id.connection_id,
                    custom_note("test/updated", json!({})),
                )
                .await;
            let _ = acked.send(delivered);
        }
    });
    let mut handle = processor.start_default().await.unwrap();
    let mut reply = Box::pin(handle.request(custom_request(1, "attach", json!({}))));
    let event = read_until_method(&mut handle, "test/updated", PATIENCE)
        .await
        .unwrap();
    assert_eq!(event_method(&event), "test/updated");
    let resolved = (&mut reply)
        .now_or_never()
        .expect("reply already resolved when the notification arrives");
    assert_eq!(resolved.unwrap(), Ok(json!({"outcome": "created"})));
    assert!(
        timeout(PATIENCE, acked.recv()).await.unwrap().unwrap(),
        "processor saw delivery"
    );
    handle.shutdown().await.unwrap();
}

// Acceptance 9
#[tokio::test(start_paused = true)]
async fn opted_out_and_experimental_notifications_are_never_delivered() {
    let processor = TestProcessor::builder().on("emit", |call| async move {
        let connection = call.context.id.connection_id;
        let out = &call.outgoing;
        out.send_notification(connection, custom_note("test/optedOut", json!({})))
            .await;
        out.broadcast_notification(custom_note("test/optedOut", json!({})))
            .await;
        out.send_notification(connection, exited_note(0)).await;
        let question = out
            .send_custom_request(connection, "test/question", json!({}))
            .await;
        out.send_notification(connection, custom_note("test/visible", json!({})))
            .await;
        call.reply(json!({"question": question.id()})).await;
    });
    let mut args = processor.start_args(false);
    args.initialize
        .capabilities
        .as_mut()
        .unwrap()
        .opt_out_notification_methods = Some(vec!["test/optedOut".into()]);
    let mut handle = in_process::start(args).await.unwrap();
    let reply = handle
        .request(custom_request(1, "emit", json!({})))
        .await
        .unwrap()
        .unwrap();
    let first = handle.next_event().await.unwrap();
    let InProcessServerEvent::ServerRequest(question) = &first else {
        panic!("{first:?}")
    };
    assert_eq!(json!(question.id()), reply["question"]);
    let second = handle.next_event().await.unwrap();
    assert_eq!(event_method(&second), "test/visible");
    let rest = expect_no_event(&mut handle, "test/optedOut", Duration::from_secs(1))
        .await
        .unwrap();
    assert!(rest.is_empty(), "nothing else arrives: {rest:?}");
    handle.shutdown().await.unwrap();
}

// Acceptance 10
#[tokio::test(start_paused = true)]
async fn router_stops_without_waiting_for_a_retained_sender() {
    let processor = TestProcessor::builder().on("detach", |call| async move {
        let retained = call.outgoing.clone();
        tokio::spawn(async move {
            let _keep_alive = retained;
            std::future::pending::<()>().await;
        });
        call.reply(json!({})).await;
    });
    let mut handle = processor.start_default().await.unwrap();
    handle
        .request(custom_request(1, "detach", json!({})))
        .await
        .unwrap()
        .unwrap();
    let started = Instant::now();
    handle.shutdown().await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "no stage timed out: {:?}",
        started.elapsed()
    );
}

// Acceptance 10
#[tokio::test(start_paused = true)]
async fn a_runtime_acknowledging_after_34_seconds_is_waited_for() {
    let finished = Arc::new(AtomicBool::new(false));
    let flag = finished.clone();
    let processor = echo().on_shutdown(move || {
        let flag = flag.clone();
        async move {
            tokio::time::sleep(Duration::from_secs(34)).await;
            flag.store(true, Ordering::SeqCst);
        }
    });
    let mut args = processor.start_args(false);
    args.shutdown_stage_timeout = Duration::from_secs(60);
    let mut handle = in_process::start(args).await.unwrap();
    let started = Instant::now();
    handle
        .shutdown()
        .await
        .expect("acknowledged within the 35 s ack timeout");
    assert!(
        finished.load(Ordering::SeqCst),
        "processor shutdown ran to completion"
    );
    assert!(started.elapsed() >= Duration::from_secs(34));
}

// Acceptance 10
#[tokio::test(start_paused = true)]
async fn shutdown_with_full_queues_completes_within_budget_and_fails_pending() {
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let processor = TestProcessor::builder()
        .on("block", move |_call| {
            let started = started_tx.clone();
            async move {
                let _ = started.send(());
                std::future::pending::<()>().await
            }
        })
        .on("flood", |call| async move {
            let outgoing = call.outgoing.clone();
            let connection = call.context.id.connection_id;
            tokio::spawn(async move {
                for n in 0..10 {
                    outgoing.send_notification(connection, exited_note(n)).await;
                }
            });
            call.reply(json!({})).await;
        });
    let mut args = processor.start_args(true);
    args.channel_capacity = 2;
    let (ack, stage) = (args.shutdown_ack_timeout, args.shutdown_stage_timeout);
    let mut handle = in_process::start(args).await.unwrap();
    // Event queue: full, with a guaranteed notification parked behind it.
    handle
        .request(custom_request(1, "flood", json!({})))
        .await
        .unwrap()
        .unwrap();
    // Processor task: blocked forever on request 2; requests 3 and 4 fill its queue.
    let mut in_flight = vec![handle.request(custom_request(2, "block", json!({})))];
    timeout(PATIENCE, started.recv()).await.unwrap().unwrap();
    in_flight.push(handle.request(custom_request(3, "block", json!({}))));
    in_flight.push(handle.request(custom_request(4, "block", json!({}))));
    let full = request_when_room(&handle, custom_request(5, "block", json!({})), PATIENCE)
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(
        full.code,
        error_codes::OVERLOADED,
        "processor queue is full"
    );
    // Client queue: full (nothing yields between these calls).
    let queued = [
        handle.request(custom_request(6, "block", json!({}))),
        handle.request(custom_request(7, "block", json!({}))),
    ];
    let refused = handle.request(custom_request(8, "block", json!({})));
    assert_eq!(refused.await.unwrap_err().kind(), io::ErrorKind::WouldBlock);

    let started = Instant::now();
    handle.shutdown().await.unwrap();
    assert!(
        started.elapsed() <= ack + stage,
        "took {:?}",
        started.elapsed()
    );
    for request in in_flight {
        let error = timeout(PATIENCE, request)
            .await
            .unwrap()
            .unwrap()
            .unwrap_err();
        assert_eq!(
            (error.code, error.message.as_str()),
            (
                error_codes::INTERNAL_ERROR,
                "in-process runtime is shutting down"
            )
        );
    }
    for request in queued {
        // Still behind a full processor queue when the runtime read them, or failed by
        // shutdown: either way answered, never left hanging.
        let error = timeout(PATIENCE, request)
            .await
            .unwrap()
            .unwrap()
            .unwrap_err();
        assert!(
            [error_codes::OVERLOADED, error_codes::INTERNAL_ERROR].contains(&error.code),
            "{error:?}"
        );
    }
    assert!(handle.next_event().await.is_none());
}

// Acceptance 10
#[tokio::test(start_paused = true)]
async fn processor_whose_shutdown_never_returns_is_aborted_within_stage_timeout() {
    let processor = echo().on_shutdown(std::future::pending::<()>);
    let args = processor.start_args(false);
    let stage = args.shutdown_stage_timeout;
    let mut handle = in_process::start(args).await.unwrap();
    let started = Instant::now();
    handle.shutdown().await.unwrap();
    let elapsed = started.elapsed();
    assert!(
        elapsed >= stage && elapsed < stage + Duration::from_secs(1),
        "took {elapsed:?}"
    );
    assert!(handle.next_event().await.is_none());
    // A second shutdown is a no-op.
    handle.shutdown().await.unwrap();
}

// Acceptance 10
#[tokio::test(start_paused = true)]
async fn pending_server_requests_resolve_with_internal_error_on_shutdown() {
    let (outcome_tx, outcome) = oneshot::channel();
    let outcome_tx = Arc::new(std::sync::Mutex::new(Some(outcome_tx)));
    let processor = TestProcessor::builder().on("ask", move |call| {
        let outcome_tx = outcome_tx.clone();
        async move {
            let answer = call
                .outgoing
                .send_custom_request(ConnectionId::IN_PROCESS, "test/question", json!({}))
                .await;
            tokio::spawn(async move {
                let result = answer.await;
                if let Some(tx) = outcome_tx.lock().unwrap().take() {
                    let _ = tx.send(result);
                }
            });
            call.reply(json!({})).await;
        }
    });
    let mut handle = processor.start_default().await.unwrap();
    handle
        .request(custom_request(1, "ask", json!({})))
        .await
        .unwrap()
        .unwrap();
    read_until_method(&mut handle, "test/question", PATIENCE)
        .await
        .unwrap();
    handle.shutdown().await.unwrap();
    let error = timeout(PATIENCE, outcome)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert_eq!(
        (error.code, error.message.as_str()),
        (
            error_codes::INTERNAL_ERROR,
            "in-process runtime is shutting down"
        )
    );
}

// Acceptance 11
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_tasks_issue_ten_thousand_requests_and_replies_match() {
    const TOTAL: i64 = 10_000;
    const TASKS: i64 = 64;
    let mut handle = echo().start_default().await.unwrap();
    let mut tasks = Vec::new();
    for task in 0..TASKS {
        let sender = handle.sender();
        tasks.push(tokio::spawn(async move {
            let mut matched = 0;
            for id in (task..TOTAL).step_by(TASKS as usize) {
                loop {
                    match sender
                        .request(custom_request(id, "echo", json!({"id": id})))
                        .await
                    {
                        Ok(Ok(reply)) => {
                            assert_eq!(reply, json!({"id": id}));
                            matched += 1;
                            break;
                        }
                        Ok(Err(error)) if error.code == error_codes::OVERLOADED => {}
                        Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
                        other => panic!("request {id}: {other:?}"),
                    }
                    tokio::task::yield_now().await;
                }
            }
            matched
        }));
    }
    let mut matched = 0;
    for task in tasks {
        matched += timeout(Duration::from_secs(60), task)
            .await
            .unwrap()
            .unwrap();
    }
    assert_eq!(matched, TOTAL);
    handle.shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn handle_exposes_the_initialize_result() {
    let mut handle = echo().start_default().await.unwrap();
    let expected = tandem_test_support::initialize_response();
    assert_eq!(handle.initialize_response(), &expected);
    handle.shutdown().await.unwrap();
}

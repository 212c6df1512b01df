//! End to end through every crate: one in-process connection to the real server runs a turn
//! whose agent executes a command while the client streams a process of its own, and shutdown
//! leaves nothing running.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tandem_host::in_process::{self, InProcessServerEvent, InProcessStartArgs};
use tandem_host::{InProcessClientHandle, MessageProcessor};
use tandem_protocol::{
    ClientRequest, ProcessOutputStream, RequestId, RequestMethod, ServerNotification, ThreadItem,
    TurnStatus, client_methods,
};
use tandem_server::{ServerConfig, ServerOptions, TandemServer};
use tandem_test_support::{event_method, initialize_params};
use tokio::time::timeout;

const PATIENCE: Duration = Duration::from_secs(20);

fn request<M: RequestMethod<Request = ClientRequest>>(
    id: i64,
    params: serde_json::Value,
) -> ClientRequest {
    M::into_request(
        RequestId::Integer(id),
        serde_json::from_value(params).expect("params"),
    )
}

async fn call(handle: &InProcessClientHandle, request: ClientRequest) -> serde_json::Value {
    let method = request.method().to_owned();
    timeout(PATIENCE, handle.request(request))
        .await
        .unwrap_or_else(|_| panic!("{method} answers"))
        .expect("host running")
        .unwrap_or_else(|error| panic!("{method} failed: {error:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_and_a_client_process_share_one_connection() {
    let home = tempfile::tempdir().expect("temp home");
    let mut options =
        ServerOptions::load(ServerConfig::builder().tandem_home(home.path())).expect("options");
    // In-process without a helper program the sandbox cannot be applied, and commands under
    // the default read-only policy would be refused; this test is not about the sandbox
    // (crates/cli/tests/sandbox.rs is).
    options.config.sandbox = tandem_protocol::SandboxPolicy::DangerFullAccess;
    let mut handle = in_process::start(InProcessStartArgs::new(
        move |outgoing| Arc::new(TandemServer::new(outgoing, options)) as Arc<dyn MessageProcessor>,
        initialize_params(true),
    ))
    .await
    .expect("host starts");
    let tandem_home = handle.initialize_response().tandem_home.clone();
    assert_eq!(
        std::path::Path::new(&tandem_home),
        home.path().canonicalize().unwrap()
    );

    let started = call(
        &handle,
        request::<client_methods::ThreadStart>(1, json!({"approvalPolicy": "never"})),
    )
    .await;
    let thread_id = started["thread"]["id"]
        .as_str()
        .expect("thread id")
        .to_owned();
    let cwd = home.path().display().to_string();
    call(
        &handle,
        request::<client_methods::ProcessSpawn>(
            2,
            json!({
                "processHandle": "side", "command": ["sh", "-c", "sleep 0.2; echo from-process"],
                "cwd": cwd, "streamStdoutStderr": true,
            }),
        ),
    )
    .await;
    call(
        &handle,
        request::<client_methods::TurnStart>(
            3,
            json!({"threadId": thread_id, "input": [
                {"type": "text", "text": "/sh echo from-turn\nhello there"}
            ]}),
        ),
    )
    .await;

    let (mut process_output, mut exit_code, mut turn) = (Vec::new(), None, None);
    while exit_code.is_none() || turn.is_none() {
        let event = timeout(PATIENCE, handle.next_event())
            .await
            .expect("events keep coming")
            .expect("host running");
        let InProcessServerEvent::ServerNotification(notification) = event else {
            assert!(
                matches!(event, InProcessServerEvent::Lagged { .. }),
                "{}",
                event_method(&event)
            );
            continue;
        };
        match notification {
            ServerNotification::ProcessOutputDelta(delta) => {
                assert_eq!(delta.stream, ProcessOutputStream::Stdout);
                process_output.extend_from_slice(&delta.delta);
            }
            ServerNotification::ProcessExited(exited) => exit_code = Some(exited.exit_code),
            ServerNotification::TurnCompleted(completed) => turn = Some(completed.turn),
            _ => {}
        }
    }
    assert_eq!(String::from_utf8(process_output).unwrap(), "from-process\n");
    assert_eq!(exit_code, Some(0));
    let turn = turn.unwrap();
    assert_eq!(turn.status, TurnStatus::Completed);
    let command_output = turn.items.iter().find_map(|item| match item {
        ThreadItem::CommandExecution {
            aggregated_output,
            exit_code,
            ..
        } => Some((aggregated_output.clone(), *exit_code)),
        _ => None,
    });
    assert_eq!(command_output, Some((Some("from-turn\n".into()), Some(0))));
    let quoted = turn.items.iter().any(|item| {
        matches!(item, ThreadItem::AgentMessage { text, .. } if text.contains("hello there"))
    });
    assert!(quoted, "the agent quoted the text line: {:?}", turn.items);

    timeout(PATIENCE, handle.shutdown())
        .await
        .expect("bounded")
        .expect("clean shutdown");
    assert!(handle.next_event().await.is_none());
}

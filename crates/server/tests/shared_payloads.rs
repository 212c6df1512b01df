//! Issue 27, point 1: a turn's payloads are allocated once and shared. Through the in-process
//! host (no serialization on the way), every copy of the user's input the turn reports (the
//! user message of `item/started`, `item/completed` and `turn/completed`) is one allocation,
//! and so is the agent's answer, each of its deltas a slice of it.
//!
//! The texts are compared by address (`str::as_ptr`), which any string type has: the test
//! reads the same against a server that copies them, and fails there.

use std::sync::Arc;
use std::time::Duration;

use tandem_host::MessageProcessor;
use tandem_host::in_process::{self, InProcessServerEvent, InProcessStartArgs};
use tandem_protocol::{
    ClientRequest, RequestId, ServerNotification, ThreadItem, ThreadStartParams, TurnStartParams,
    TurnStatus, UserInput,
};
use tandem_server::store::InMemoryThreadStore;
use tandem_server::{ServerConfig, ServerOptions, TandemServer};
use tandem_test_support::initialize_params;
use tokio::time::timeout;

const PROMPT: Duration = Duration::from_secs(10);

/// Where a text's bytes are, and how many.
type Span = (usize, usize);

fn span(text: &str) -> Span {
    (text.as_ptr() as usize, text.len())
}

/// The span of the only text input of a user message.
fn user_text(item: &ThreadItem) -> Option<Span> {
    match item {
        ThreadItem::UserMessage { content, .. } => match &content[..] {
            [UserInput::Text { text }] => Some(span(text.as_str())),
            _ => None,
        },
        _ => None,
    }
}

fn agent_text(item: &ThreadItem) -> Option<Span> {
    match item {
        ThreadItem::AgentMessage { text, .. } => Some(span(text.as_str())),
        _ => None,
    }
}

#[tokio::test(start_paused = true)]
async fn a_turns_texts_are_allocated_once_and_shared_by_every_notification() {
    let home = tempfile::tempdir().expect("temp home");
    let options = ServerOptions::load(ServerConfig::builder().tandem_home(home.path()))
        .expect("options")
        .with_store(Arc::new(InMemoryThreadStore::new()));
    let mut handle = in_process::start(InProcessStartArgs::new(
        move |outgoing| Arc::new(TandemServer::new(outgoing, options)) as Arc<dyn MessageProcessor>,
        initialize_params(true),
    ))
    .await
    .expect("host");
    let sender = handle.sender();
    let reply = sender
        .request(ClientRequest::ThreadStart {
            request_id: RequestId::Integer(1),
            params: ThreadStartParams::new(),
        })
        .await
        .expect("host")
        .expect("thread/start");
    let thread_id = reply["thread"]["id"]
        .as_str()
        .expect("thread id")
        .to_owned();
    sender
        .request(ClientRequest::TurnStart {
            request_id: RequestId::Integer(2),
            params: TurnStartParams::text(&thread_id, "a question worth quoting".to_owned()),
        })
        .await
        .expect("host")
        .expect("turn/start");

    // The notifications are kept until the end: a text freed early could have its address
    // reused by the next copy, and compare equal by chance.
    let mut notes = Vec::new();
    timeout(PROMPT, async {
        loop {
            let Some(InProcessServerEvent::ServerNotification(note)) = handle.next_event().await
            else {
                continue;
            };
            let done = matches!(note, ServerNotification::TurnCompleted(_));
            notes.push(note);
            if done {
                return;
            }
        }
    })
    .await
    .expect("turn/completed");

    let mut user_copies = Vec::new();
    let mut answers = Vec::new();
    let mut deltas = Vec::new();
    let mut completed = None;
    for note in &notes {
        match note {
            ServerNotification::ItemStarted(started) => {
                user_copies.extend(user_text(&started.item));
            }
            ServerNotification::ItemCompleted(done) => {
                user_copies.extend(user_text(&done.item));
                answers.extend(agent_text(&done.item));
            }
            ServerNotification::AgentMessageDelta(delta) => deltas.push(span(delta.delta.as_str())),
            ServerNotification::TurnCompleted(done) => completed = Some(&done.turn),
            _ => {}
        }
    }
    let completed = completed.expect("turn/completed");
    assert_eq!(completed.status, TurnStatus::Completed);
    user_copies.extend(completed.items.iter().filter_map(user_text));
    answers.extend(completed.items.iter().filter_map(agent_text));

    assert_eq!(
        user_copies.len(),
        3,
        "item/started, item/completed, turn/completed"
    );
    assert!(
        user_copies.iter().all(|copy| *copy == user_copies[0]),
        "the input was copied: {user_copies:?}"
    );
    assert_eq!(answers.len(), 2, "item/completed and turn/completed");
    assert_eq!(answers[0], answers[1], "the answer was copied");
    let (start, len) = answers[0];
    assert!(deltas.len() >= 2, "streamed in several deltas: {deltas:?}");
    let mut next = start;
    for (at, delta_len) in &deltas {
        assert_eq!(
            *at, next,
            "each delta is the next slice of the answer, not a copy: {deltas:?} of {answers:?}"
        );
        next += delta_len;
    }
    assert_eq!(next, start + len, "the deltas cover the answer");
    handle.shutdown().await.expect("shutdown");
}

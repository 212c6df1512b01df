//! Issue 27, point 1: a turn's payloads are allocated once and shared. Through the in-process
//! host (no serialization on the way), the text a client sends is the very allocation every
//! copy of the turn holds: the user message of `item/started` and `item/completed`, the one in
//! `turn/completed`; the agent's answer is one allocation too, each of its deltas a slice of it.

use std::sync::Arc;
use std::time::Duration;

use tandem_host::MessageProcessor;
use tandem_host::in_process::{self, InProcessServerEvent, InProcessStartArgs};
use tandem_protocol::{
    ClientRequest, RequestId, ServerNotification, SharedText, ThreadItem, ThreadStartParams,
    TurnStartParams, TurnStatus, UserInput,
};
use tandem_server::store::InMemoryThreadStore;
use tandem_server::{ServerConfig, ServerOptions, TandemServer};
use tandem_test_support::initialize_params;
use tokio::time::timeout;

const PROMPT: Duration = Duration::from_secs(10);

/// The text of the only text input of a user message.
fn user_text(item: &ThreadItem) -> Option<&SharedText> {
    match item {
        ThreadItem::UserMessage { content, .. } => match &content[..] {
            [UserInput::Text { text }] => Some(text),
            _ => None,
        },
        _ => None,
    }
}

fn agent_text(item: &ThreadItem) -> Option<&SharedText> {
    match item {
        ThreadItem::AgentMessage { text, .. } => Some(text),
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

    let sent = SharedText::from("a question worth quoting".to_owned());
    sender
        .request(ClientRequest::TurnStart {
            request_id: RequestId::Integer(2),
            params: TurnStartParams::text(&thread_id, sent.clone()),
        })
        .await
        .expect("host")
        .expect("turn/start");

    let mut user_copies = Vec::new();
    let mut answer: Option<SharedText> = None;
    let mut deltas = Vec::new();
    let completed = timeout(PROMPT, async {
        loop {
            let Some(InProcessServerEvent::ServerNotification(note)) = handle.next_event().await
            else {
                continue;
            };
            match note {
                ServerNotification::ItemStarted(started) => {
                    user_copies.extend(user_text(&started.item).cloned());
                }
                ServerNotification::ItemCompleted(done) => {
                    user_copies.extend(user_text(&done.item).cloned());
                    if let Some(text) = agent_text(&done.item) {
                        answer = Some(text.clone());
                    }
                }
                ServerNotification::AgentMessageDelta(delta) => deltas.push(delta.delta),
                ServerNotification::TurnCompleted(done) => return done.turn,
                _ => {}
            }
        }
    })
    .await
    .expect("turn/completed");

    assert_eq!(completed.status, TurnStatus::Completed);
    assert_eq!(user_copies.len(), 2, "item/started and item/completed");
    user_copies.extend(completed.items.iter().filter_map(user_text).cloned());
    assert_eq!(user_copies.len(), 3, "and turn/completed");
    for copy in &user_copies {
        assert!(
            SharedText::ptr_eq(copy, &sent),
            "the input was copied: {copy:?}"
        );
    }

    let answer = answer.expect("the agent's message completed");
    assert_eq!(answer, "You said: \"a question worth quoting\"");
    let in_turn = completed
        .items
        .iter()
        .find_map(agent_text)
        .expect("the agent's message in turn/completed");
    assert!(SharedText::ptr_eq(in_turn, &answer));
    assert!(deltas.len() >= 2, "streamed in several deltas: {deltas:?}");
    assert_eq!(deltas.concat(), answer.as_str());
    for delta in &deltas {
        assert!(
            SharedText::ptr_eq(delta, &answer),
            "a delta was copied: {delta:?}"
        );
    }
    handle.shutdown().await.expect("shutdown");
}

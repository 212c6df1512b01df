//! `thread/compact/start` with a model (issue 15): the model agent asks the model for a
//! summary without streaming it to the client, the compaction turn reports a
//! `contextCompaction` item and `thread/compacted`, and later turns (also after a restart)
//! send the summary instead of the turns it replaced.

mod agent_support;

use agent_support::*;
use serde_json::{Value, json};
use tandem_host::in_process::InProcessServerEvent;
use tandem_protocol::client_methods::{ThreadCompactStart, ThreadResume};
use tandem_protocol::{ServerNotification, ThreadItem, TurnStatus};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

async fn mount_answers(server: &MockServer, answers: Vec<String>) {
    for answer in answers {
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(
                ResponseTemplate::new(200)
                    .insert_header("content-type", "text/event-stream")
                    .set_body_string(answer),
            )
            .up_to_n_times(1)
            .mount(server)
            .await;
    }
}

async fn request_bodies(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .expect("recording on")
        .iter()
        .map(|request| request.body_json::<Value>().expect("JSON body"))
        .collect()
}

fn pair(role: &str, text: &str) -> (String, String) {
    (role.to_owned(), text.to_owned())
}

#[tokio::test]
async fn later_turns_send_the_model_summary_instead_of_the_history_also_after_a_restart() {
    let server = MockServer::start().await;
    mount_answers(
        &server,
        vec![
            text_answer("first answer"),
            text_answer("SUMMARY: the user asked a first question"),
            text_answer("second answer"),
            text_answer("third answer"),
        ],
    )
    .await;
    let base_url = format!("{}/v1", server.uri());
    let home = home();
    let mut handle = start(options_at(home.path(), &base_url, &[])).await;
    let thread = start_thread(&handle, json!({})).await;
    start_turn(&handle, &thread, "first question").await;
    let first = drive_turn(&mut handle, &Answers::default()).await;
    assert_eq!(first.turn.status, TurnStatus::Completed);

    let reply = call::<ThreadCompactStart>(&handle, json!({"threadId": thread})).await;
    assert_eq!(serde_json::to_value(reply).expect("encodes"), json!({}));
    let compaction = drive_turn(&mut handle, &Answers::default()).await;
    assert_eq!(compaction.turn.status, TurnStatus::Completed);
    assert_eq!(
        compaction.turn.items,
        vec![ThreadItem::ContextCompaction {
            id: format!("{}-compaction", compaction.turn.id)
        }]
    );
    // The summary is the model's, but it is not an agent message of the turn.
    assert_eq!(compaction.streamed_text(), "");
    let compacted: Vec<_> = compaction
        .events
        .iter()
        .filter_map(|event| match event {
            InProcessServerEvent::ServerNotification(ServerNotification::ThreadCompacted(note)) => {
                Some(note.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(compacted.len(), 1);
    assert_eq!(compacted[0].thread_id, thread);
    assert_eq!(compacted[0].turn_id, compaction.turn.id);

    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    let summarize = &bodies[1];
    assert!(
        summarize.get("tools").is_none(),
        "a compaction offers no tools: {summarize}"
    );
    let asked = roles_and_texts(summarize);
    assert_eq!(asked[1], pair("user", "first question"));
    assert_eq!(asked[2], pair("assistant", "first answer"));
    assert_eq!(asked[3].0, "user");
    assert!(
        asked[3].1.starts_with("Summarize the conversation"),
        "{asked:?}"
    );

    start_turn(&handle, &thread, "second question").await;
    let second = drive_turn(&mut handle, &Answers::default()).await;
    assert_eq!(second.turn.status, TurnStatus::Completed);
    let bodies = request_bodies(&server).await;
    let sent = roles_and_texts(&bodies[2]);
    assert_eq!(
        sent[1..],
        [
            pair("user", "SUMMARY: the user asked a first question"),
            pair("user", "second question"),
        ]
    );
    shutdown(handle).await;

    // The summary is durable: a new host on the same home still sends it.
    let mut handle = start(options_at(home.path(), &base_url, &[])).await;
    call::<ThreadResume>(&handle, json!({"threadId": thread})).await;
    start_turn(&handle, &thread, "third question").await;
    let third = drive_turn(&mut handle, &Answers::default()).await;
    assert_eq!(third.turn.status, TurnStatus::Completed);
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 4);
    let sent = roles_and_texts(&bodies[3]);
    assert_eq!(
        sent[1..],
        [
            pair("user", "SUMMARY: the user asked a first question"),
            pair("user", "second question"),
            pair("assistant", "second answer"),
            pair("user", "third question"),
        ]
    );
    shutdown(handle).await;
}

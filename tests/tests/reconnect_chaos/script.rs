//! The workload both chaos tests run through tandem-client: threads started with an
//! idempotency key, turns started with a `clientUserMessageId`, each turn streaming agent text,
//! asking for one approval and running a command whose output streams in two pieces; and the
//! transcript each turn's handle saw, normalized so that two runs of the same script compare
//! byte for byte (item ids become ordinals, run times go).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tandem_client::{Client, ClientError, TurnEvent};
use tandem_protocol::{
    ThreadItem, ThreadReadParams, ThreadStartParams, Turn, TurnStartParams, TurnStatus,
};

/// How long one turn may take from `start_turn` to its end, reconnects included.
const TURN_LIMIT: Duration = Duration::from_secs(60);
/// How many times a request that is safe to retry is sent again.
const RETRIES: usize = 100;

/// The input of turn `n`: text streamed back, an approved command with two pieces of output,
/// more text.
pub(crate) fn turn_input(n: usize) -> String {
    format!(
        "hello from turn {n}\n/sh printf 'out-{n}-a\\n'; sleep 0.05; printf 'out-{n}-b\\n'\ngoodbye from turn {n}"
    )
}

/// Sends a request until it gets an answer, while its error says a retry is safe (or, for a
/// request that changes nothing, `read_only`, while the connection was lost).
pub(crate) async fn retrying<T, F, Fut>(what: &str, read_only: bool, mut send: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, ClientError>>,
{
    for _ in 0..RETRIES {
        match send().await {
            Ok(value) => return value,
            Err(error)
                if error.is_retry_safe()
                    || read_only && matches!(error, ClientError::Disconnected { .. }) =>
            {
                tracing_free_log(&format!("{what}: retrying after: {error}"));
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(error) => panic!("{what} failed in a way that is not safe to retry: {error}"),
        }
    }
    panic!("{what}: still failing after {RETRIES} retries");
}

fn tracing_free_log(line: &str) {
    if std::env::var_os("TANDEM_CHAOS_VERBOSE").is_some() {
        eprintln!("{line}");
    }
}

/// Starts thread `index` (approvals asked for every command), retried with its key.
pub(crate) async fn start_thread(client: &Client, run: &str, index: usize) -> String {
    let params: ThreadStartParams = serde_json::from_value(json!({
        "approvalPolicy": "on-request",
        "idempotencyKey": format!("{run}-thread-{index}"),
    }))
    .expect("thread/start params");
    retrying("thread/start", false, || {
        client.start_thread(params.clone())
    })
    .await
    .thread
    .id
}

/// What one turn's handle saw.
#[derive(Debug, Default, Clone)]
pub(crate) struct Seen {
    /// The normalized transcript (deltas of one item concatenated).
    pub(crate) transcript: Vec<String>,
    /// The ids of the items the handle saw complete, in order.
    pub(crate) completed_items: Vec<String>,
    pub(crate) gaps: usize,
    pub(crate) approvals: usize,
    pub(crate) final_turn: Option<Turn>,
}

impl Seen {
    /// Appends `text` to the last entry if it continues the same delta stream, else starts
    /// an entry.
    fn delta(&mut self, key: String, text: &str) {
        match self.transcript.last_mut() {
            Some(last) if last.starts_with(&key) => last.push_str(text),
            _ => self.transcript.push(format!("{key}{text}")),
        }
    }
}

/// Item ids in the order a handle first met them, so two runs name them alike.
#[derive(Default)]
struct Ordinals(HashMap<String, usize>);

impl Ordinals {
    fn of(&mut self, id: &str) -> usize {
        let next = self.0.len();
        *self.0.entry(id.to_owned()).or_insert(next)
    }
}

/// An item without what differs between runs: its id (replaced by its ordinal), run time,
/// process id.
fn normalized(item: &ThreadItem, ordinals: &mut Ordinals) -> String {
    let ordinal = ordinals.of(item.id());
    let mut value = serde_json::to_value(item).expect("items serialize");
    if let Value::Object(members) = &mut value {
        for member in ["id", "durationMs", "processId"] {
            members.remove(member);
        }
    }
    format!("item#{ordinal} {value}")
}

/// What a turn's handle hooks into: called with each event before it is recorded, so a test
/// can act (kill the server) at a chosen point; `true` if it did, and then an approval it was
/// called with is left unanswered.
pub(crate) type Hook = Arc<dyn Fn(&TurnEvent) -> bool + Send + Sync>;

/// Runs turn `n` on `thread` and records what its handle saw. Approvals are accepted, except
/// one the hook acted on.
pub(crate) async fn run_turn(
    client: &Client,
    run: &str,
    thread: &str,
    n: usize,
    hook: Option<Hook>,
    events: &AtomicU64,
) -> Seen {
    let mut params = TurnStartParams::text(thread, turn_input(n));
    params.client_user_message_id = Some(format!("{run}-turn-{n}"));
    let mut handle = retrying("turn/start", false, || client.start_turn(params.clone())).await;
    let mut seen = Seen::default();
    let mut ordinals = Ordinals::default();
    let read = async {
        while let Some(event) = handle.next_event().await {
            let event = event
                .unwrap_or_else(|error| panic!("turn {n}: the handle's stream failed: {error}"));
            events.fetch_add(1, Ordering::SeqCst);
            let acted = hook.as_ref().is_some_and(|hook| hook(&event));
            match event {
                TurnEvent::Started(_) => seen.transcript.push("turn started".into()),
                TurnEvent::AgentText { item_id, delta } => {
                    let key = format!("text item#{}: ", ordinals.of(&item_id));
                    seen.delta(key, &delta);
                }
                TurnEvent::CommandOutput { item_id, delta } => {
                    let key = format!("output item#{}: ", ordinals.of(&item_id));
                    seen.delta(key, &delta);
                }
                TurnEvent::ItemStarted(item) => {
                    let line = format!("started {}", normalized(&item, &mut ordinals));
                    seen.transcript.push(line);
                }
                TurnEvent::ItemCompleted(item) => {
                    seen.completed_items.push(item.id().to_owned());
                    let line = format!("completed {}", normalized(&item, &mut ordinals));
                    seen.transcript.push(line);
                }
                TurnEvent::Approval(request) => {
                    seen.approvals += 1;
                    seen.transcript
                        .push(format!("approval {}", request.command()));
                    if acted {
                        // The server was killed on this approval: nobody answers it.
                        drop(request);
                        continue;
                    }
                    if let Err(error) = request.accept().await {
                        panic!("turn {n}: accepting the approval failed: {error}");
                    }
                }
                TurnEvent::Gap { .. } => {
                    seen.gaps += 1;
                    seen.transcript.push("GAP".into());
                }
                TurnEvent::Lagged { skipped } => seen.transcript.push(format!("LAGGED {skipped}")),
                TurnEvent::Completed(turn) => {
                    seen.transcript
                        .push(format!("turn ended {:?}", turn.status));
                    seen.final_turn = Some(turn);
                }
                TurnEvent::Question(_)
                | TurnEvent::ToolCall(_)
                | TurnEvent::FileChangeApproval(_)
                | TurnEvent::OtherRequest(_) => {
                    panic!("turn {n}: a request the script never causes")
                }
                TurnEvent::RequestResolved(_)
                | TurnEvent::Status(_)
                | TurnEvent::Error(_)
                | TurnEvent::Other(_) => {}
            }
        }
    };
    tokio::time::timeout(TURN_LIMIT, read)
        .await
        .unwrap_or_else(|_| panic!("turn {n} did not end within {TURN_LIMIT:?}: {seen:?}"));
    seen
}

/// The stored turns of `thread`.
pub(crate) async fn stored_turns(client: &Client, thread: &str) -> Vec<Turn> {
    let params: ThreadReadParams =
        serde_json::from_value(json!({"threadId": thread, "includeTurns": true}))
            .expect("thread/read params");
    retrying("thread/read", true, || client.read_thread(params.clone()))
        .await
        .thread
        .turns
}

/// The `clientId` of a turn's user message: the key it was started with.
pub(crate) fn turn_key(turn: &Turn) -> Option<String> {
    turn.items.iter().find_map(|item| {
        let value = serde_json::to_value(item).ok()?;
        (value["type"] == "userMessage")
            .then(|| value["clientId"].as_str().map(str::to_owned))
            .flatten()
    })
}

/// Whether a stored turn ran its command to completion (its approval was not lost).
pub(crate) fn command_ran(turn: &Turn) -> bool {
    turn.status == TurnStatus::Completed
        && turn.items.iter().any(|item| {
            matches!(
                item,
                ThreadItem::CommandExecution {
                    exit_code: Some(0),
                    ..
                }
            )
        })
}

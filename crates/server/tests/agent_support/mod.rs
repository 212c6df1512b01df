//! Shared harness of the `agent_*` tests: a server whose model provider is a mock started by
//! the test (loopback only), configured through `config_override` exactly as the CLI's `-c`
//! options do, and helpers that drive a turn to its end while answering server requests.
//!
//! These tests run on real time: the agent talks to real sockets, and a paused clock would
//! fire the stream idle timeout while a socket read waits.

#![allow(dead_code, unreachable_pub)]

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tandem_host::in_process::{self, InProcessServerEvent, InProcessStartArgs};
use tandem_host::{InProcessClientHandle, MessageProcessor, RequestResult};
use tandem_protocol::client_methods::{ThreadStart, TurnStart};
use tandem_protocol::{
    ClientRequest, CommandExecutionApprovalDecision, ErrorNotification, FileChangeApprovalDecision,
    RequestId, RequestMethod, ServerNotification, ServerRequest, Turn,
};
use tandem_server::config::toml;
use tandem_server::store::InMemoryThreadStore;
use tandem_server::{ServerConfig, ServerOptions, TandemServer};
use tandem_test_support::{initialize_params, within};

/// Upper bound for anything that should happen promptly (retries with backoff included).
pub const PROMPT: Duration = Duration::from_secs(20);

/// The model name the tests configure.
pub const MODEL: &str = "mock-model";

/// A fresh home; the returned guard removes it.
pub fn home() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp home")
}

/// Options whose provider `mock` is at `base_url`, selected with `-c`-style overrides, plus
/// `extra` overrides (e.g. `model_providers.mock.stream_max_retries`).
pub fn options_at(home: &Path, base_url: &str, extra: &[(&str, toml::Value)]) -> ServerOptions {
    let mut builder = ServerConfig::builder()
        .tandem_home(home)
        .config_override("model_provider", "mock".into())
        .config_override("model_providers.mock.base_url", base_url.into())
        .config_override("model", MODEL.into())
        // In-process without a helper program the sandbox cannot be applied, and commands
        // under the default read-only policy would be refused; these tests are not about the
        // sandbox (crates/cli/tests/sandbox.rs is).
        .config_override("sandbox_mode", "danger-full-access".into());
    for (key, value) in extra {
        builder = builder.config_override(key, value.clone());
    }
    ServerOptions::load(builder).expect("options load")
}

/// [`options_at`] with an in-memory thread store.
pub fn memory_options(home: &Path, base_url: &str, extra: &[(&str, toml::Value)]) -> ServerOptions {
    options_at(home, base_url, extra).with_store(Arc::new(InMemoryThreadStore::new()))
}

pub async fn start(options: ServerOptions) -> InProcessClientHandle {
    let args = InProcessStartArgs::new(
        move |outgoing| Arc::new(TandemServer::new(outgoing, options)) as Arc<dyn MessageProcessor>,
        initialize_params(true),
    );
    within(PROMPT, "host starts", in_process::start(args))
        .await
        .expect("host starts")
}

pub async fn shutdown(mut handle: InProcessClientHandle) {
    within(PROMPT, "shutdown", handle.shutdown())
        .await
        .expect("clean shutdown");
}

fn next_id() -> RequestId {
    static NEXT: AtomicI64 = AtomicI64::new(1);
    RequestId::Integer(NEXT.fetch_add(1, Ordering::Relaxed))
}

pub fn request<M: RequestMethod<Request = ClientRequest>>(params: Value) -> ClientRequest {
    let params: M::Params = serde_json::from_value(params).expect("params decode");
    M::into_request(next_id(), params)
}

pub async fn try_call<M: RequestMethod<Request = ClientRequest>>(
    handle: &InProcessClientHandle,
    params: Value,
) -> RequestResult {
    within(PROMPT, M::METHOD, handle.request(request::<M>(params)))
        .await
        .expect("host answers")
}

pub async fn call<M: RequestMethod<Request = ClientRequest>>(
    handle: &InProcessClientHandle,
    params: Value,
) -> M::Response {
    let value = try_call::<M>(handle, params)
        .await
        .unwrap_or_else(|error| panic!("{} failed: {error:?}", M::METHOD));
    serde_json::from_value(value).expect("reply decodes")
}

/// Starts a thread with `params` merged over `approvalPolicy: never`.
pub async fn start_thread(handle: &InProcessClientHandle, params: Value) -> String {
    let mut merged = json!({"approvalPolicy": "never"});
    if let (Some(target), Value::Object(extra)) = (merged.as_object_mut(), params) {
        target.extend(extra);
    }
    call::<ThreadStart>(handle, merged).await.thread.id
}

pub async fn start_turn(handle: &InProcessClientHandle, thread_id: &str, text: &str) -> String {
    call::<TurnStart>(
        handle,
        json!({"threadId": thread_id, "input": [{"type": "text", "text": text}]}),
    )
    .await
    .turn
    .id
}

/// Answers `item/tool/call` for a tool name and its arguments.
pub type ToolAnswer = Arc<dyn Fn(&str, &Value) -> Value + Send + Sync>;

/// How [`drive_turn`] answers the server requests of a turn.
#[derive(Clone)]
pub struct Answers {
    /// The decision for every command approval.
    pub approval: CommandExecutionApprovalDecision,
    /// The reply to `item/tool/call`, given the tool name and arguments.
    pub tool: ToolAnswer,
    /// The decision for every file change approval.
    pub file_change: FileChangeApprovalDecision,
}

impl Default for Answers {
    fn default() -> Self {
        Self {
            approval: CommandExecutionApprovalDecision::Accept,
            tool: Arc::new(|tool, _| {
                json!({"contentItems": [{"type": "inputText", "text": format!("{tool} ok")}],
                       "success": true})
            }),
            file_change: FileChangeApprovalDecision::Accept,
        }
    }
}

/// Everything a turn sent, up to and including its `turn/completed`.
pub struct TurnRecord {
    pub events: Vec<InProcessServerEvent>,
    pub turn: Turn,
}

impl TurnRecord {
    /// The `error` notifications, in order.
    pub fn errors(&self) -> Vec<ErrorNotification> {
        self.events
            .iter()
            .filter_map(|event| match event {
                InProcessServerEvent::ServerNotification(ServerNotification::Error(error)) => {
                    Some(error.clone())
                }
                _ => None,
            })
            .collect()
    }

    /// The text of every `item/agentMessage/delta`, concatenated.
    pub fn streamed_text(&self) -> String {
        self.events
            .iter()
            .filter_map(|event| match event {
                InProcessServerEvent::ServerNotification(
                    ServerNotification::AgentMessageDelta(delta),
                ) => Some(delta.delta.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The methods of the server requests, in order.
    pub fn server_requests(&self) -> Vec<ServerRequest> {
        self.events
            .iter()
            .filter_map(|event| match event {
                InProcessServerEvent::ServerRequest(request) => Some(request.clone()),
                _ => None,
            })
            .collect()
    }
}

/// Reads events until `turn/completed`, answering server requests with `answers`.
pub async fn drive_turn(handle: &mut InProcessClientHandle, answers: &Answers) -> TurnRecord {
    let mut events = Vec::new();
    let turn = within(PROMPT, "turn/completed", async {
        loop {
            let event = handle.next_event().await.expect("event stream open");
            if let InProcessServerEvent::ServerRequest(request) = &event {
                let reply = match request {
                    ServerRequest::CommandExecutionRequestApproval { .. } => {
                        json!({"decision": answers.approval})
                    }
                    ServerRequest::ToolCall { params, .. } => {
                        (answers.tool)(&params.tool, &params.arguments)
                    }
                    ServerRequest::ToolRequestUserInput { .. } => {
                        json!({"answers": {"q": {"answers": ["yes"]}}})
                    }
                    ServerRequest::FileChangeRequestApproval { .. } => {
                        json!({"decision": answers.file_change})
                    }
                    other => panic!("unexpected server request {other:?}"),
                };
                handle
                    .respond_to_server_request(request.id().clone(), reply)
                    .expect("answer delivered");
            }
            let done = match &event {
                InProcessServerEvent::ServerNotification(ServerNotification::TurnCompleted(
                    done,
                )) => Some(done.turn.clone()),
                _ => None,
            };
            events.push(event);
            if let Some(turn) = done {
                return turn;
            }
        }
    })
    .await;
    TurnRecord { events, turn }
}

// ---------------------------------------------------------------------------------------------
// Chat Completions stream bodies
// ---------------------------------------------------------------------------------------------

/// `data: ...` lines for `chunks`, then `data: [DONE]`.
pub fn sse(chunks: &[Value]) -> String {
    let mut body: String = chunks
        .iter()
        .map(|chunk| format!("data: {chunk}\n\n"))
        .collect();
    body.push_str("data: [DONE]\n\n");
    body
}

pub fn text_chunk(text: &str) -> Value {
    json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})
}

/// A tool-call fragment; `None` leaves the member out, as some servers do.
pub fn call_chunk(
    index: Option<u32>,
    id: Option<&str>,
    name: Option<&str>,
    arguments: &str,
) -> Value {
    let mut call = json!({"function": {"arguments": arguments}});
    if let Some(index) = index {
        call["index"] = json!(index);
    }
    if let Some(id) = id {
        call["id"] = json!(id);
        call["type"] = json!("function");
    }
    if let Some(name) = name {
        call["function"]["name"] = json!(name);
    }
    json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
}

pub fn finish_chunk(reason: &str) -> Value {
    json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
}

/// A whole answer that says `text`.
pub fn text_answer(text: &str) -> String {
    sse(&[text_chunk(text), finish_chunk("stop")])
}

/// A whole answer that calls `shell` with `command` (id `id`).
pub fn shell_answer(id: &str, command: &str) -> String {
    let arguments = json!({ "command": command }).to_string();
    sse(&[
        call_chunk(Some(0), Some(id), Some("shell"), &arguments),
        finish_chunk("tool_calls"),
    ])
}

/// The `messages` of a recorded Chat Completions request body.
pub fn messages(body: &Value) -> Vec<Value> {
    body["messages"].as_array().expect("messages").clone()
}

/// The `(role, content)` of every message, with content `null` as "".
pub fn roles_and_texts(body: &Value) -> Vec<(String, String)> {
    messages(body)
        .iter()
        .map(|message| {
            (
                message["role"].as_str().unwrap_or_default().to_owned(),
                message["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

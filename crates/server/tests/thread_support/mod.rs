//! Shared harness of the `threads` and `thread_turns` tests: a `TandemServer` in the
//! in-process host on a fresh home (in memory or SQLite), typed calls, and readers of its
//! events, every wait under a timeout.

#![allow(dead_code, unreachable_pub, unused_imports)]

pub(crate) use std::future::Future;
pub(crate) use std::path::Path;
pub(crate) use std::sync::Arc;
pub(crate) use std::sync::atomic::{AtomicI64, Ordering};
pub(crate) use std::time::Duration;

pub(crate) use serde_json::{Value, json};
pub(crate) use tandem_host::in_process::{self, InProcessServerEvent, InProcessStartArgs};
pub(crate) use tandem_host::{InProcessClientHandle, MessageProcessor, RequestResult};
pub(crate) use tandem_protocol::client_methods::{
    ConfigRead, ThreadAttachmentAdd, ThreadAttachmentRemove, ThreadLoadedList, ThreadRead,
    ThreadResume, ThreadStart, ThreadUnsubscribe, TurnInterrupt, TurnStart, TurnSteer,
};
pub(crate) use tandem_protocol::{
    ClientRequest, RequestId, RequestMethod, ServerNotification, ServerRequest, SessionSource,
    ThreadActiveFlag, ThreadItem, ThreadStatus, ThreadUnsubscribeStatus, TurnStatus, error_codes,
};
pub(crate) use tandem_server::store::InMemoryThreadStore;
pub(crate) use tandem_server::{ServerConfig, ServerOptions, TandemServer};
pub(crate) use tandem_test_support::{
    event_method, expect_no_event, initialize_params, read_until_method,
};
pub(crate) use tokio::time::timeout;

/// Upper bound for anything that should happen promptly.
pub(crate) const PROMPT: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

/// A fresh home; the returned guard removes it.
pub(crate) fn home() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp home")
}

/// Options for `home` with the unload delay `delay_secs`; `memory` replaces SQLite.
pub(crate) fn options(home: &Path, delay_secs: u64, memory: bool) -> ServerOptions {
    let options = ServerOptions::load(
        ServerConfig::builder()
            .tandem_home(home)
            .thread_unload_delay_secs(delay_secs)
            // In-process without a helper program the sandbox cannot be applied, and commands
            // under the default read-only policy would be refused; these tests are not about
            // the sandbox (crates/cli/tests/sandbox.rs is).
            .config_override("sandbox_mode", "danger-full-access".into()),
    )
    .expect("options load");
    if memory {
        options.with_store(Arc::new(InMemoryThreadStore::new()))
    } else {
        options
    }
}

pub(crate) fn start_args(options: ServerOptions) -> InProcessStartArgs {
    InProcessStartArgs::new(
        move |outgoing| Arc::new(TandemServer::new(outgoing, options)) as Arc<dyn MessageProcessor>,
        initialize_params(true),
    )
}

pub(crate) async fn start(options: ServerOptions) -> InProcessClientHandle {
    within("start", in_process::start(start_args(options)))
        .await
        .expect("host starts")
}

pub(crate) async fn within<F: Future>(what: &str, future: F) -> F::Output {
    match timeout(PROMPT, future).await {
        Ok(output) => output,
        Err(_) => panic!("timed out after {PROMPT:?}: {what}"),
    }
}

pub(crate) fn next_id() -> RequestId {
    static NEXT: AtomicI64 = AtomicI64::new(1);
    RequestId::Integer(NEXT.fetch_add(1, Ordering::Relaxed))
}

pub(crate) fn request<M: RequestMethod<Request = ClientRequest>>(params: Value) -> ClientRequest {
    let params: M::Params = serde_json::from_value(params).expect("params decode");
    M::into_request(next_id(), params)
}

/// Sends an `M` request and waits for its reply.
pub(crate) async fn try_call<M: RequestMethod<Request = ClientRequest>>(
    handle: &InProcessClientHandle,
    params: Value,
) -> RequestResult {
    let reply = handle.request(request::<M>(params));
    within(M::METHOD, reply).await.expect("host answers")
}

/// Sends an `M` request and decodes its successful reply.
pub(crate) async fn call<M: RequestMethod<Request = ClientRequest>>(
    handle: &InProcessClientHandle,
    params: Value,
) -> M::Response {
    let value = try_call::<M>(handle, params)
        .await
        .unwrap_or_else(|error| panic!("{} failed: {error:?}", M::METHOD));
    serde_json::from_value(value).expect("reply decodes")
}

pub(crate) async fn until(
    handle: &mut InProcessClientHandle,
    method: &str,
) -> InProcessServerEvent {
    read_until_method(handle, method, PROMPT)
        .await
        .unwrap_or_else(|error| panic!("{error:?}"))
}

pub(crate) async fn quiet(handle: &mut InProcessClientHandle, method: &str, window: Duration) {
    if let Err(error) = expect_no_event(handle, method, window).await {
        panic!("{error:?}");
    }
}

pub(crate) fn notification(event: InProcessServerEvent) -> ServerNotification {
    match event {
        InProcessServerEvent::ServerNotification(note) => note,
        other => panic!("expected a notification, got {other:?}"),
    }
}

pub(crate) fn server_request(event: InProcessServerEvent) -> ServerRequest {
    match event {
        InProcessServerEvent::ServerRequest(request) => request,
        other => panic!("expected a server request, got {other:?}"),
    }
}

pub(crate) async fn start_thread(handle: &InProcessClientHandle, params: Value) -> String {
    call::<ThreadStart>(handle, params).await.thread.id
}

pub(crate) async fn start_turn(
    handle: &InProcessClientHandle,
    thread_id: &str,
    text: &str,
) -> String {
    call::<TurnStart>(
        handle,
        json!({"threadId": thread_id, "input": [{"type": "text", "text": text}]}),
    )
    .await
    .turn
    .id
}

pub(crate) async fn turn_completed(handle: &mut InProcessClientHandle) -> tandem_protocol::Turn {
    match notification(until(handle, "turn/completed").await) {
        ServerNotification::TurnCompleted(done) => done.turn,
        other => panic!("{other:?}"),
    }
}

pub(crate) async fn unsubscribe(
    handle: &InProcessClientHandle,
    thread_id: &str,
) -> ThreadUnsubscribeStatus {
    call::<ThreadUnsubscribe>(handle, json!({"threadId": thread_id}))
        .await
        .status
}

pub(crate) async fn loaded(handle: &InProcessClientHandle) -> Vec<String> {
    call::<ThreadLoadedList>(handle, json!({})).await.data
}

pub(crate) fn lookup_tool() -> Value {
    json!([{"type": "function", "name": "lookup", "description": "looks up", "inputSchema": {}}])
}

pub(crate) async fn shutdown(mut handle: InProcessClientHandle) {
    within("shutdown", handle.shutdown())
        .await
        .expect("clean shutdown");
}

// ---------------------------------------------------------------------------------------------
// Acceptance 1, 4: idle unload after unsubscribe
// ---------------------------------------------------------------------------------------------

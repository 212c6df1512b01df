//! Server requests: the typed objects an embedder answers ([`ApprovalRequest`],
//! [`FileChangeApprovalRequest`], [`UserInputRequest`], [`ToolCallRequest`],
//! [`OtherServerRequest`]), the
//! [`ServerRequestHandler`] trait for the ones no turn handle takes, and its least-privilege
//! default.
//!
//! Each object is answered at most once by construction (the answer methods take `self`), and
//! one that is dropped unanswered is answered with the least-privilege default, so a forgotten
//! request never wedges a turn and never approves anything.

use std::fmt;
use std::sync::Weak;

use async_trait::async_trait;
use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::Value;
use tandem_protocol::{
    CommandExecutionApprovalDecision, CommandExecutionRequestApprovalParams,
    CommandExecutionRequestApprovalResponse, FileChangeApprovalDecision,
    FileChangeRequestApprovalParams, FileChangeRequestApprovalResponse, JSONRPCErrorError,
    RequestId, ServerRequest, SharedText, ToolCallParams, ToolCallResponse,
    ToolRequestUserInputParams, ToolRequestUserInputResponse, UserInputQuestion,
};

use crate::error::ClientError;

/// A server request, typed, with the means to answer it.
#[derive(Debug)]
pub enum ServerRequestEvent {
    /// `item/commandExecution/requestApproval`: may this command run?
    Approval(ApprovalRequest),
    /// `item/fileChange/requestApproval`: may these file changes be written?
    FileChangeApproval(FileChangeApprovalRequest),
    /// `item/tool/requestUserInput`: questions for the user.
    UserInput(UserInputRequest),
    /// `item/tool/call`: a call of a dynamic tool the client registered.
    ToolCall(ToolCallRequest),
    /// A server request this crate does not type.
    Other(OtherServerRequest),
}

impl ServerRequestEvent {
    pub(crate) fn new(request: ServerRequest, responder: Responder) -> Self {
        match request {
            ServerRequest::CommandExecutionRequestApproval { params, .. } => {
                Self::Approval(ApprovalRequest { params, responder })
            }
            ServerRequest::ToolRequestUserInput { params, .. } => {
                Self::UserInput(UserInputRequest { params, responder })
            }
            ServerRequest::ToolCall { params, .. } => {
                Self::ToolCall(ToolCallRequest { params, responder })
            }
            ServerRequest::FileChangeRequestApproval { params, .. } => {
                Self::FileChangeApproval(FileChangeApprovalRequest { params, responder })
            }
            // mcp30: untyped here; the fallback declines it.
            ServerRequest::McpServerElicitationRequest { params, .. } => {
                Self::Other(OtherServerRequest {
                    method: <tandem_protocol::server_methods::McpServerElicitationRequest as
                        tandem_protocol::RequestMethod>::METHOD
                        .to_owned(),
                    params: serialized(&params),
                    responder,
                })
            }
            ServerRequest::Custom { method, params, .. } => Self::Other(OtherServerRequest {
                method,
                params,
                responder,
            }),
        }
    }

    /// The server request's id.
    pub fn id(&self) -> &RequestId {
        &self.responder().id
    }

    /// The wire method.
    pub fn method(&self) -> &str {
        match self {
            Self::Approval(_) => "item/commandExecution/requestApproval",
            Self::FileChangeApproval(_) => "item/fileChange/requestApproval",
            Self::UserInput(_) => "item/tool/requestUserInput",
            Self::ToolCall(_) => "item/tool/call",
            Self::Other(request) => &request.method,
        }
    }

    fn responder(&self) -> &Responder {
        match self {
            Self::Approval(request) => &request.responder,
            Self::FileChangeApproval(request) => &request.responder,
            Self::UserInput(request) => &request.responder,
            Self::ToolCall(request) => &request.responder,
            Self::Other(request) => &request.responder,
        }
    }
}

/// Where the answers to server requests go: the client's core, which owns the pending requests
/// and the connection. A trait here, so that this module never reaches into the core.
pub(crate) trait AnswerServerRequests: Send + Sync {
    /// Answers pending server request `id` with `result`.
    fn answer(
        &self,
        id: RequestId,
        result: Result<Value, JSONRPCErrorError>,
    ) -> BoxFuture<'_, Result<(), ClientError>>;
}

/// Sends the one answer of one server request, or its least-privilege fallback when dropped.
pub(crate) struct Responder {
    pub(crate) id: RequestId,
    pub(crate) shared: Weak<dyn AnswerServerRequests>,
    /// What to answer if nobody does.
    pub(crate) fallback: Option<Result<Value, JSONRPCErrorError>>,
}

impl fmt::Debug for Responder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Responder")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Responder {
    async fn send(mut self, result: Result<Value, JSONRPCErrorError>) -> Result<(), ClientError> {
        self.fallback = None;
        let shared = self
            .shared
            .upgrade()
            .ok_or_else(|| ClientError::ServerRequestNotPending {
                id: self.id.clone(),
            })?;
        shared.answer(self.id.clone(), result).await
    }

    async fn reply<T: Serialize>(self, result: &T) -> Result<(), ClientError> {
        let value = serde_json::to_value(result).expect("protocol results always serialize");
        self.send(Ok(value)).await
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        let Some(fallback) = self.fallback.take() else {
            return;
        };
        let (Some(shared), Ok(runtime)) =
            (self.shared.upgrade(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        let id = self.id.clone();
        tracing::debug!(%id, "server request dropped unanswered; sending the least-privilege answer");
        runtime.spawn(async move {
            // Already answered or resolved by the server: nothing to do.
            let _ = shared.answer(id, fallback).await;
        });
    }
}

fn serialized<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("protocol results always serialize")
}

/// The least-privilege answer for each kind of server request.
pub(crate) fn fallback_answer(request: &ServerRequest) -> Result<Value, JSONRPCErrorError> {
    match request {
        ServerRequest::CommandExecutionRequestApproval { .. } => Ok(serialized(
            &CommandExecutionRequestApprovalResponse::decline(),
        )),
        ServerRequest::ToolRequestUserInput { .. } => {
            Ok(serialized(&ToolRequestUserInputResponse::no_answers()))
        }
        ServerRequest::ToolCall { params, .. } => Ok(serialized(&ToolCallResponse::failure(
            no_tool_handler(&params.tool),
        ))),
        ServerRequest::FileChangeRequestApproval { .. } => {
            Ok(serialized(&FileChangeRequestApprovalResponse {
                decision: FileChangeApprovalDecision::Decline,
            }))
        }
        ServerRequest::McpServerElicitationRequest { .. } => Ok(serialized(
            &tandem_protocol::McpServerElicitationRequestResponse::decline(),
        )),
        ServerRequest::Custom { method, .. } => Err(JSONRPCErrorError::method_not_found(method)),
    }
}

fn no_tool_handler(tool: &str) -> String {
    format!(
        "the client has no handler for the tool `{tool}`: install a ServerRequestHandler with \
         ClientOptions::server_request_handler"
    )
}

/// `item/commandExecution/requestApproval`.
#[derive(Debug)]
pub struct ApprovalRequest {
    params: CommandExecutionRequestApprovalParams,
    responder: Responder,
}

impl ApprovalRequest {
    /// The request's params: the command, its working directory, the reason.
    pub fn params(&self) -> &CommandExecutionRequestApprovalParams {
        &self.params
    }

    /// The command, shell-quoted.
    pub fn command(&self) -> &str {
        &self.params.command
    }

    /// The server request's id.
    pub fn id(&self) -> &RequestId {
        &self.responder.id
    }

    /// Runs the command.
    pub async fn accept(self) -> Result<(), ClientError> {
        self.decide(CommandExecutionApprovalDecision::Accept).await
    }

    /// Does not run the command; the turn goes on.
    pub async fn decline(self) -> Result<(), ClientError> {
        self.decide(CommandExecutionApprovalDecision::Decline).await
    }

    /// Answers with `decision`.
    pub async fn decide(
        self,
        decision: CommandExecutionApprovalDecision,
    ) -> Result<(), ClientError> {
        self.responder
            .reply(&CommandExecutionRequestApprovalResponse { decision })
            .await
    }
}

/// `item/fileChange/requestApproval`: the changes are those of the `fileChange` item
/// [`FileChangeRequestApprovalParams::item_id`], reported by `item/started` just before.
#[derive(Debug)]
pub struct FileChangeApprovalRequest {
    params: FileChangeRequestApprovalParams,
    responder: Responder,
}

impl FileChangeApprovalRequest {
    /// The request's params: the item, why approval is needed.
    pub fn params(&self) -> &FileChangeRequestApprovalParams {
        &self.params
    }

    /// The id of the `fileChange` item whose changes are asked about.
    pub fn item_id(&self) -> &str {
        &self.params.item_id
    }

    /// The server request's id.
    pub fn id(&self) -> &RequestId {
        &self.responder.id
    }

    /// Writes the changes.
    pub async fn accept(self) -> Result<(), ClientError> {
        self.decide(FileChangeApprovalDecision::Accept).await
    }

    /// Does not write the changes; the turn goes on.
    pub async fn decline(self) -> Result<(), ClientError> {
        self.decide(FileChangeApprovalDecision::Decline).await
    }

    /// Answers with `decision`.
    pub async fn decide(self, decision: FileChangeApprovalDecision) -> Result<(), ClientError> {
        self.responder
            .reply(&FileChangeRequestApprovalResponse { decision })
            .await
    }
}

/// `item/tool/requestUserInput`.
#[derive(Debug)]
pub struct UserInputRequest {
    params: ToolRequestUserInputParams,
    responder: Responder,
}

impl UserInputRequest {
    /// The request's params.
    pub fn params(&self) -> &ToolRequestUserInputParams {
        &self.params
    }

    /// The questions.
    pub fn questions(&self) -> &[UserInputQuestion] {
        &self.params.questions
    }

    /// The server request's id.
    pub fn id(&self) -> &RequestId {
        &self.responder.id
    }

    /// Answers with `response` (build it with [`ToolRequestUserInputResponse::with_answer`]).
    pub async fn answer(self, response: ToolRequestUserInputResponse) -> Result<(), ClientError> {
        self.responder.reply(&response).await
    }

    /// Answers every question with the same `text`: the common case of one question.
    pub async fn answer_all(self, text: impl Into<String>) -> Result<(), ClientError> {
        let text = text.into();
        let response = self.params.questions.iter().fold(
            ToolRequestUserInputResponse::no_answers(),
            |response, question| response.with_answer(&question.id, [text.clone()]),
        );
        self.answer(response).await
    }

    /// Answers no question.
    pub async fn no_answers(self) -> Result<(), ClientError> {
        self.answer(ToolRequestUserInputResponse::no_answers())
            .await
    }
}

/// `item/tool/call`.
#[derive(Debug)]
pub struct ToolCallRequest {
    params: ToolCallParams,
    responder: Responder,
}

impl ToolCallRequest {
    /// The request's params: tool, namespace, arguments.
    pub fn params(&self) -> &ToolCallParams {
        &self.params
    }

    /// The server request's id.
    pub fn id(&self) -> &RequestId {
        &self.responder.id
    }

    /// Answers with `response` ([`ToolCallResponse::text`] or [`ToolCallResponse::failure`]).
    pub async fn reply(self, response: ToolCallResponse) -> Result<(), ClientError> {
        self.responder.reply(&response).await
    }

    /// Fails the call; `message` tells the model why. The turn goes on.
    pub async fn fail(self, message: impl Into<SharedText>) -> Result<(), ClientError> {
        self.reply(ToolCallResponse::failure(message)).await
    }
}

/// A server request this crate does not type.
#[derive(Debug)]
pub struct OtherServerRequest {
    method: String,
    params: Value,
    responder: Responder,
}

impl OtherServerRequest {
    /// The method.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The params, as sent.
    pub fn params(&self) -> &Value {
        &self.params
    }

    /// The server request's id.
    pub fn id(&self) -> &RequestId {
        &self.responder.id
    }

    /// Answers with `result`.
    pub async fn reply(self, result: Value) -> Result<(), ClientError> {
        self.responder.send(Ok(result)).await
    }

    /// Answers with an error.
    pub async fn fail(self, error: JSONRPCErrorError) -> Result<(), ClientError> {
        self.responder.send(Err(error)).await
    }
}

/// Answers the server requests that no turn handle takes. Every method has a least-privilege
/// default, so an implementation overrides only what it handles. Each request runs on a task
/// of its own, concurrently with event delivery and with other requests.
///
/// ```
/// use async_trait::async_trait;
/// use tandem_client::{ApprovalRequest, ServerRequestHandler};
///
/// /// Approves `ls` and nothing else.
/// struct ApproveLs;
///
/// #[async_trait]
/// impl ServerRequestHandler for ApproveLs {
///     async fn approval(&self, request: ApprovalRequest) {
///         let answer = if request.command() == "ls" {
///             request.accept().await
///         } else {
///             request.decline().await
///         };
///         if let Err(error) = answer {
///             eprintln!("{error}");
///         }
///     }
/// }
/// ```
#[async_trait]
pub trait ServerRequestHandler: Send + Sync + 'static {
    /// A command approval. Default: declined.
    async fn approval(&self, request: ApprovalRequest) {
        report(request.decline().await);
    }

    /// A file change approval. Default: declined.
    async fn file_change_approval(&self, request: FileChangeApprovalRequest) {
        report(request.decline().await);
    }

    /// Questions for the user. Default: answered with no answers.
    async fn user_input(&self, request: UserInputRequest) {
        report(request.no_answers().await);
    }

    /// A dynamic tool call. Default: failed, telling the model that no handler is installed.
    async fn tool_call(&self, request: ToolCallRequest) {
        let message = no_tool_handler(&request.params.tool);
        report(request.fail(message).await);
    }

    /// Any other server request. Default: -32601 method not found.
    async fn other(&self, request: OtherServerRequest) {
        let error = JSONRPCErrorError::method_not_found(&request.method);
        report(request.fail(error).await);
    }
}

/// Logs a failed default answer: the request was resolved some other way meanwhile (an
/// interrupted turn, a lost connection), so there is nobody to tell.
fn report(result: Result<(), ClientError>) {
    if let Err(error) = result {
        tracing::debug!(%error, "default answer to a server request not delivered");
    }
}

/// The least-privilege handler: declines approvals (of commands and of file changes), answers questions with no answers, fails
/// tool calls with an error naming the missing handler, and answers anything else -32601. An
/// unattended client therefore never wedges a turn and never approves anything.
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultServerRequestHandler;

impl ServerRequestHandler for DefaultServerRequestHandler {}

/// Hands `event` to the method of `handler` for its kind.
pub(crate) async fn dispatch(handler: &dyn ServerRequestHandler, event: ServerRequestEvent) {
    match event {
        ServerRequestEvent::Approval(request) => handler.approval(request).await,
        ServerRequestEvent::FileChangeApproval(request) => {
            handler.file_change_approval(request).await;
        }
        ServerRequestEvent::UserInput(request) => handler.user_input(request).await,
        ServerRequestEvent::ToolCall(request) => handler.tool_call(request).await,
        ServerRequestEvent::Other(request) => handler.other(request).await,
    }
}

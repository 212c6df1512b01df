//! The wire codec: one stdio line or websocket frame to a typed message and back
//! (docs/protocol.md sections 1 and 2), so that every transport reads the same JSON, answers
//! malformed input with the same error, and writes the same bytes.
//!
//! Decoding never panics, whatever the bytes. It parses the frame once, classifies it by the
//! members present (`method` with `id` is a request, `method` alone a notification, then
//! `error`, then `result`) and hands the parts to the typed conversions of [`crate::messages`],
//! so the method tables exist once. What cannot become a message is a [`DecodeError`]: either
//! the error the peer must be sent, or a reason to log and move on:
//!
//! | frame | outcome |
//! |---|---|
//! | not JSON (invalid UTF-8 included) | `Reply` -32700 `Parse error: ...`, id `null` |
//! | JSON, but not an object, or an object with none of `method`, `result`, `error` | `Reply` -32600, with the object's `id` if it is an integer or a string, else `null` |
//! | request whose `id` is not an integer or a string | `Reply` -32600, id `null` |
//! | request with another `jsonrpc` than `"2.0"`, a non-string `method`, or params that do not decode | `Reply` -32600 with its id (-32602 for bad base64, as `ClientRequest::try_from` says) |
//! | notification that does not decode, or with another `jsonrpc` | `Ignore` |
//! | response or error without an integer or string id, or with a malformed `error` | `Ignore` (a server's error may have a `null` id) |
//!
//! Absent `jsonrpc`, absent or `null` params, and unknown members are accepted everywhere.
//!
//! Encoding serializes the typed params by reference straight into the caller's buffer, with
//! no intermediate `serde_json::Value` or string. Output deltas (`process/outputDelta`,
//! `command/exec/outputDelta`) take a dedicated path that writes the same bytes the serde path
//! would, with the base64 encoded once, by SIMD, straight into `out`. Output omits `jsonrpc` and carries no trailing newline;
//! framing belongs to the transport.

use std::io::Write as _;

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use crate::error_codes::PARSE_ERROR;
use crate::jsonrpc::JSONRPC_VERSION;
use crate::{
    ClientNotification, ClientRequest, JSONRPCError, JSONRPCErrorError, JSONRPCNotification,
    JSONRPCRequest, ProcessOutputStream, RequestId, ServerNotification, ServerRequest,
};

/// What a server reads from a client (and a client writes).
#[derive(Debug, Clone, PartialEq)]
pub enum ClientMessage {
    /// A request the server must answer.
    Request(ClientRequest),
    /// A one-way notification.
    Notification(ClientNotification),
    /// The client's result for a server request.
    Response {
        /// The id of the server request this answers.
        id: RequestId,
        /// The result, as sent.
        result: Value,
    },
    /// The client's error answer to a server request.
    Error {
        /// The id of the server request this answers.
        id: RequestId,
        /// What went wrong.
        error: JSONRPCErrorError,
    },
}

/// What a client reads from a server (and a server writes).
#[derive(Debug, Clone, PartialEq)]
pub enum ServerMessage {
    /// A request the client must answer.
    Request(ServerRequest),
    /// `emitted_at_ms` is the top-level `emittedAtMs` member (unix ms); `None` omits it.
    Notification {
        /// The typed notification.
        notification: ServerNotification,
        /// When the server emitted it, unix milliseconds.
        emitted_at_ms: Option<i64>,
        /// s-seq: the top-level `cursor` member: its place in its thread's event stream
        /// (notifications a thread's subscribers receive); `None` omits it.
        cursor: Option<crate::EventCursor>,
    },
    /// The server's result for a client request.
    Response {
        /// The id of the client request this answers.
        id: RequestId,
        /// The result object.
        result: Value,
    },
    /// `id` is `None` (JSON `null`) only when the request could not be read.
    Error {
        /// The id of the client request this answers, if it could be read.
        id: Option<RequestId>,
        /// What went wrong.
        error: JSONRPCErrorError,
    },
}

impl From<JSONRPCError> for ServerMessage {
    /// The message that sends `error` to the client, e.g. a [`DecodeError::Reply`].
    fn from(error: JSONRPCError) -> Self {
        Self::Error {
            id: error.id,
            error: error.error,
        }
    }
}

/// Why one line/frame did not decode into a message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DecodeError {
    /// The peer must be answered with exactly this error message, then reading goes on.
    ///
    /// From [`decode_server_message`] the id is always present: a client answers only server
    /// requests, so whatever it could not attribute to one is [`DecodeError::Ignore`] instead.
    #[error("undecodable message, to be answered with {}", .0.error)]
    Reply(JSONRPCError),
    /// Not answerable (a malformed notification, a response without a usable id, ...):
    /// log it and go on. The string says what was wrong, for the log line.
    #[error("undecodable message, ignored: {0}")]
    Ignore(String),
}

/// Why a message could not be encoded (practically: a `Custom` value serde_json rejects).
#[derive(Debug, thiserror::Error)]
#[error("cannot encode {what}: {source}")]
pub struct EncodeError {
    what: String,
    source: serde_json::Error,
}

impl EncodeError {
    /// Which message failed, e.g. ``request 7 (`tandem/ext`)``.
    pub fn what(&self) -> &str {
        &self.what
    }
}

/// Decodes one frame a client sent.
///
/// A request whose params do not decode is [`DecodeError::Reply`] with its own id and the
/// error of `ClientRequest::try_from`; the module docs list every other case.
pub fn decode_client_message(frame: &[u8]) -> Result<ClientMessage, DecodeError> {
    match classify(frame)? {
        Frame::Request(request) => decode_request(request).map(ClientMessage::Request),
        Frame::Notification(notification) => {
            decode_notification(notification).map(ClientMessage::Notification)
        }
        Frame::Response { id, result } => Ok(ClientMessage::Response { id, result }),
        Frame::Error {
            id: Some(id),
            error,
        } => Ok(ClientMessage::Error { id, error }),
        // A client reply with a null id names no server request: nothing can resolve.
        Frame::Error { id: None, error } => Err(DecodeError::Ignore(format!(
            "error reply without an id (nothing to resolve): {error}"
        ))),
    }
}

/// Decodes one frame a server sent.
///
/// Follows the same rules as [`decode_client_message`], except that a reply the client cannot
/// address to a server request (a parse error, a request with an unreadable id) is
/// [`DecodeError::Ignore`].
pub fn decode_server_message(frame: &[u8]) -> Result<ServerMessage, DecodeError> {
    let decoded = match classify(frame) {
        Ok(frame) => frame,
        Err(DecodeError::Reply(JSONRPCError { id: None, error })) => {
            return Err(DecodeError::Ignore(error.message));
        }
        Err(other) => return Err(other),
    };
    match decoded {
        Frame::Request(request) => decode_request(request).map(ServerMessage::Request),
        Frame::Notification(mut notification) => {
            let emitted_at_ms = match notification.emitted_at_ms.take() {
                None | Some(Value::Null) => None,
                Some(Value::Number(ms)) if ms.is_i64() => ms.as_i64(),
                Some(other) => {
                    return Err(DecodeError::Ignore(format!(
                        "`{}` notification: `emittedAtMs` must be an integer, got {}",
                        notification.method,
                        describe(&other)
                    )));
                }
            };
            // A cursor that does not decode is dropped rather than the notification: the
            // event itself is still good, and a client without a cursor resyncs explicitly.
            let cursor = notification
                .cursor
                .take()
                .and_then(|cursor| serde_json::from_value(cursor).ok());
            decode_notification(notification).map(|notification| ServerMessage::Notification {
                notification,
                emitted_at_ms,
                cursor,
            })
        }
        Frame::Response { id, result } => Ok(ServerMessage::Response { id, result }),
        Frame::Error { id, error } => Ok(ServerMessage::Error { id, error }),
    }
}

/// Appends the JSON of `message` to `out`: no trailing newline (framing is the transport's).
///
/// On failure `out` is left as it was.
pub fn encode_client_message(
    message: &ClientMessage,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    match message {
        ClientMessage::Request(request) => write_json(
            out,
            &RequestOut {
                id: request.id(),
                method: request.method(),
                params: ParamsOf(request),
            },
            || describe_request(request.id(), request.method()),
        ),
        ClientMessage::Notification(notification) => write_json(
            out,
            &NotificationOut {
                method: notification.method(),
                params: ParamsOf(notification),
                emitted_at_ms: None,
                cursor: None,
            },
            || format!("notification `{}`", notification.method()),
        ),
        ClientMessage::Response { id, result } => write_response(out, id, result),
        ClientMessage::Error { id, error } => write_error(out, Some(id), error),
    }
}

/// Appends the JSON of a request whose params are sent exactly as given, not typed first: what
/// a client writes for a raw request (its params may be of a newer protocol, or deliberately
/// malformed), leaving the server to judge them. No trailing newline; `params: None` is
/// written as `null`, which servers read as `{}`.
///
/// On failure `out` is left as it was.
pub fn encode_raw_request(request: &JSONRPCRequest, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    write_json(
        out,
        &RequestOut {
            id: &request.id,
            method: &request.method,
            params: &request.params,
        },
        || describe_request(&request.id, &request.method),
    )
}

/// Appends the JSON of `message` to `out`: no trailing newline (framing is the transport's).
///
/// On failure `out` is left as it was.
pub fn encode_server_message(
    message: &ServerMessage,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    if let Some((delta, emitted_at_ms, cursor)) = output_delta(message) {
        return write_output_delta(out, delta, emitted_at_ms, cursor);
    }
    let start = out.len();
    write_server_message(message, &mut *out).inspect_err(|_| out.truncate(start))
}

/// The parts of `message` if it is an output delta, which is written by hand (its bytes as
/// base64 without an intermediate string) rather than through serde.
fn output_delta(
    message: &ServerMessage,
) -> Option<(OutputDelta<'_>, Option<i64>, Option<&crate::EventCursor>)> {
    let ServerMessage::Notification {
        notification,
        emitted_at_ms,
        cursor,
    } = message
    else {
        return None;
    };
    let delta = match notification {
        ServerNotification::ProcessOutputDelta(delta) => OutputDelta {
            method: "process/outputDelta",
            id_member: "processHandle",
            id: &delta.process_handle,
            stream: delta.stream,
            bytes: &delta.delta,
            cap_reached: delta.cap_reached,
        },
        ServerNotification::CommandExecOutputDelta(delta) => OutputDelta {
            method: "command/exec/outputDelta",
            id_member: "processId",
            id: &delta.process_id,
            stream: delta.stream,
            bytes: &delta.delta,
            cap_reached: delta.cap_reached,
        },
        _ => return None,
    };
    Some((delta, *emitted_at_ms, cursor.as_ref()))
}

/// Writes the JSON of `message` to `out` as serde produces it, without building the whole
/// message in memory first: what a transport uses for a message of many megabytes, which it
/// hands on in bounded parts. The bytes are exactly those of [`encode_server_message`].
///
/// On failure part of the message may already have been written: the caller decides what the
/// peer makes of it (a transport closes the connection).
pub fn write_server_message<W: std::io::Write>(
    message: &ServerMessage,
    mut out: W,
) -> Result<(), EncodeError> {
    if output_delta(message).is_some() {
        // Small (one read of a process's output): encoded whole, then copied out.
        let mut buffer = Vec::new();
        encode_server_message(message, &mut buffer)?;
        return out.write_all(&buffer).map_err(|error| EncodeError {
            what: "an output delta".to_owned(),
            source: serde_json::Error::io(error),
        });
    }
    match message {
        ServerMessage::Request(request) => to_writer(
            out,
            &RequestOut {
                id: request.id(),
                method: request.method(),
                params: ParamsOf(request),
            },
            || describe_request(request.id(), request.method()),
        ),
        ServerMessage::Notification {
            notification,
            emitted_at_ms,
            cursor,
        } => to_writer(
            out,
            &NotificationOut {
                method: notification.method(),
                params: ParamsOf(notification),
                emitted_at_ms: *emitted_at_ms,
                cursor: cursor.as_ref(),
            },
            || format!("notification `{}`", notification.method()),
        ),
        ServerMessage::Response { id, result } => {
            to_writer(out, &ResponseOut { id, result }, || {
                format!("response to {}", describe_id(id))
            })
        }
        ServerMessage::Error { id, error } => to_writer(
            out,
            &ErrorOut {
                id: id.as_ref(),
                error,
            },
            || match id {
                Some(id) => format!("error reply to {}", describe_id(id)),
                None => "error reply without an id".to_owned(),
            },
        ),
    }
}

/// Serializes `message` into `out` as it goes (see [`write_server_message`]).
fn to_writer<W: std::io::Write, T: Serialize>(
    out: W,
    message: &T,
    what: impl FnOnce() -> String,
) -> Result<(), EncodeError> {
    serde_json::to_writer(out, message).map_err(|source| EncodeError {
        what: what(),
        source,
    })
}

// ---------------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------------

/// A frame sorted by shape, before its params are typed. Both directions share this step.
enum Frame {
    Request(JSONRPCRequest),
    /// `emitted_at_ms` holds the raw `emittedAtMs` member: only server notifications read it.
    Notification(RawNotification),
    Response {
        id: RequestId,
        result: Value,
    },
    /// `id` is `None` for a `null` or missing id.
    Error {
        id: Option<RequestId>,
        error: JSONRPCErrorError,
    },
}

struct RawNotification {
    method: String,
    params: Option<Value>,
    emitted_at_ms: Option<Value>,
    cursor: Option<Value>,
}

fn classify(frame: &[u8]) -> Result<Frame, DecodeError> {
    // Parsing into a `Value` first (rather than straight into a map) tells "not JSON" (-32700)
    // apart from "JSON, but not a message object" (-32600). The members are then moved out of
    // the map, never copied.
    let value: Value = serde_json::from_slice(frame).map_err(|error| {
        reply(
            None,
            JSONRPCErrorError::new(PARSE_ERROR, format!("Parse error: {error}")),
        )
    })?;
    let mut object = match value {
        Value::Object(object) => object,
        other => {
            return Err(reply(
                None,
                invalid_request(format!(
                    "expected a JSON-RPC message object, got {}",
                    describe(&other)
                )),
            ));
        }
    };
    let bad_version = match object.remove("jsonrpc") {
        Some(Value::String(version)) if version == JSONRPC_VERSION => None,
        None => None,
        Some(other) => Some(format!(
            "unsupported jsonrpc version {other}, expected \"{JSONRPC_VERSION}\" or none"
        )),
    };
    let id = object.remove("id");

    if let Some(method) = object.remove("method") {
        return match id {
            Some(id) => classify_request(id, method, bad_version, &mut object),
            None => classify_notification(method, bad_version, &mut object),
        };
    }
    if let Some(error) = object.remove("error") {
        return classify_error(id, error, bad_version);
    }
    if let Some(result) = object.remove("result") {
        let Some(id) = id.and_then(|id| request_id(id).ok()) else {
            return Err(DecodeError::Ignore(
                "response without an integer or string id (nothing to resolve)".to_owned(),
            ));
        };
        if let Some(problem) = bad_version {
            return Err(DecodeError::Ignore(format!(
                "response to {}: {problem}",
                describe_id(&id)
            )));
        }
        return Ok(Frame::Response { id, result });
    }
    // No member says what this is. If it carries a readable id it is most likely a request
    // that lost its method: answering with that id lets the sender's pending call resolve.
    Err(reply(
        id.and_then(|id| request_id(id).ok()),
        invalid_request(bad_version.unwrap_or_else(|| {
            "expected a JSON-RPC message object with `method`, `result` or `error`".to_owned()
        })),
    ))
}

fn classify_request(
    id: Value,
    method: Value,
    bad_version: Option<String>,
    object: &mut Map<String, Value>,
) -> Result<Frame, DecodeError> {
    let id = match request_id(id) {
        Ok(id) => id,
        Err(other) => {
            return Err(reply(
                None,
                invalid_request(format!(
                    "`id` must be an integer or a string, got {}",
                    describe(&other)
                )),
            ));
        }
    };
    if let Some(problem) = bad_version {
        return Err(reply(Some(id), invalid_request(problem)));
    }
    let method = match method {
        Value::String(method) => method,
        other => {
            return Err(reply(
                Some(id),
                invalid_request(format!(
                    "`method` must be a string, got {}",
                    describe(&other)
                )),
            ));
        }
    };
    Ok(Frame::Request(JSONRPCRequest {
        id,
        method,
        params: object.remove("params"),
    }))
}

fn classify_notification(
    method: Value,
    bad_version: Option<String>,
    object: &mut Map<String, Value>,
) -> Result<Frame, DecodeError> {
    let method = match method {
        Value::String(method) => method,
        other => {
            return Err(DecodeError::Ignore(format!(
                "notification `method` must be a string, got {}",
                describe(&other)
            )));
        }
    };
    if let Some(problem) = bad_version {
        return Err(DecodeError::Ignore(format!(
            "`{method}` notification: {problem}"
        )));
    }
    Ok(Frame::Notification(RawNotification {
        method,
        params: object.remove("params"),
        emitted_at_ms: object.remove("emittedAtMs"),
        cursor: object.remove("cursor"),
    }))
}

fn classify_error(
    id: Option<Value>,
    error: Value,
    bad_version: Option<String>,
) -> Result<Frame, DecodeError> {
    let id = match id {
        None | Some(Value::Null) => None,
        Some(id) => match request_id(id) {
            Ok(id) => Some(id),
            Err(other) => {
                return Err(DecodeError::Ignore(format!(
                    "error reply whose id is {}, not an integer, a string or null",
                    describe(&other)
                )));
            }
        },
    };
    let about = || match &id {
        Some(id) => format!("error reply to {}", describe_id(id)),
        None => "error reply without an id".to_owned(),
    };
    if let Some(problem) = bad_version {
        return Err(DecodeError::Ignore(format!("{}: {problem}", about())));
    }
    let error = serde_json::from_value::<JSONRPCErrorError>(error).map_err(|problem| {
        DecodeError::Ignore(format!("{}: malformed `error` member: {problem}", about()))
    })?;
    Ok(Frame::Error { id, error })
}

/// Types a request's params through the enum's own `TryFrom`; a failure is answered with the
/// request's id.
fn decode_request<R>(request: JSONRPCRequest) -> Result<R, DecodeError>
where
    R: TryFrom<JSONRPCRequest, Error = JSONRPCErrorError>,
{
    let id = request.id.clone();
    R::try_from(request).map_err(|error| reply(Some(id), error))
}

/// Types a notification's params; a failure is only logged, since nobody awaits an answer.
fn decode_notification<N>(notification: RawNotification) -> Result<N, DecodeError>
where
    N: TryFrom<JSONRPCNotification, Error = JSONRPCErrorError>,
{
    let RawNotification { method, params, .. } = notification;
    let wire = JSONRPCNotification {
        method,
        params,
        emitted_at_ms: None,
    };
    // The conversion consumes the method and its error does not name it; the log line must.
    let method_for_log = wire.method.clone();
    N::try_from(wire).map_err(|error| {
        DecodeError::Ignore(format!(
            "malformed `{method_for_log}` notification: {}",
            error.message
        ))
    })
}

/// A request id as docs/protocol.md defines it: an `i64` or a string. Anything else is unreadable
/// and handed back for the error message.
fn request_id(value: Value) -> Result<RequestId, Value> {
    match value {
        Value::Number(number) => match number.as_i64() {
            Some(number) => Ok(RequestId::Integer(number)),
            None => Err(Value::Number(number)),
        },
        Value::String(text) => Ok(RequestId::String(text)),
        other => Err(other),
    }
}

fn reply(id: Option<RequestId>, error: JSONRPCErrorError) -> DecodeError {
    DecodeError::Reply(JSONRPCError { id, error })
}

/// -32600 with the `Invalid request: ` prefix that the typed conversions use too.
fn invalid_request(detail: String) -> JSONRPCErrorError {
    JSONRPCErrorError::invalid_request(format!("Invalid request: {detail}"))
}

/// Names a value's JSON type for an error message, without echoing a payload of any size.
fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(flag) => format!("the boolean {flag}"),
        Value::Number(number) => format!("the number {number}"),
        Value::String(_) => "a string".to_owned(),
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    }
}

// ---------------------------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------------------------

/// `{id, method, params}`.
#[derive(Serialize)]
struct RequestOut<'a, P> {
    id: &'a RequestId,
    method: &'a str,
    params: P,
}

/// `{method, params, emittedAtMs?, cursor?}`.
#[derive(Serialize)]
struct NotificationOut<'a, P> {
    method: &'a str,
    params: P,
    #[serde(rename = "emittedAtMs", skip_serializing_if = "Option::is_none")]
    emitted_at_ms: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cursor: Option<&'a crate::EventCursor>,
}

/// `{id, result}`.
#[derive(Serialize)]
struct ResponseOut<'a> {
    id: &'a RequestId,
    result: &'a Value,
}

/// `{id, error}`; `id` is `null` when `None`.
#[derive(Serialize)]
struct ErrorOut<'a> {
    id: Option<&'a RequestId>,
    error: &'a JSONRPCErrorError,
}

/// The typed params of a message, serialized by reference through its `serialize_params`.
struct ParamsOf<'a, T>(&'a T);

macro_rules! params_of {
    ($($message:ty),*) => {
        $(
            impl Serialize for ParamsOf<'_, $message> {
                fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                    self.0.serialize_params(serializer)
                }
            }
        )*
    };
}

params_of!(
    ClientRequest,
    ServerRequest,
    ClientNotification,
    ServerNotification
);

fn write_response(out: &mut Vec<u8>, id: &RequestId, result: &Value) -> Result<(), EncodeError> {
    write_json(out, &ResponseOut { id, result }, || {
        format!("response to {}", describe_id(id))
    })
}

fn write_error(
    out: &mut Vec<u8>,
    id: Option<&RequestId>,
    error: &JSONRPCErrorError,
) -> Result<(), EncodeError> {
    write_json(out, &ErrorOut { id, error }, || match id {
        Some(id) => format!("error reply to {}", describe_id(id)),
        None => "error reply without an id".to_owned(),
    })
}

/// Serializes `message` onto the end of `out`, removing any partial output on failure so the
/// transport never writes half a message.
fn write_json<T: Serialize>(
    out: &mut Vec<u8>,
    message: &T,
    what: impl FnOnce() -> String,
) -> Result<(), EncodeError> {
    let start = out.len();
    serde_json::to_writer(&mut *out, message).map_err(|source| {
        out.truncate(start);
        EncodeError {
            what: what(),
            source,
        }
    })
}

/// The parts of an output delta notification (`process/outputDelta`,
/// `command/exec/outputDelta`): the two differ only in their method and id member.
struct OutputDelta<'a> {
    method: &'static str,
    id_member: &'static str,
    id: &'a str,
    stream: ProcessOutputStream,
    bytes: &'a [u8],
    cap_reached: bool,
}

/// Writes an output delta exactly as the serde path would (members in declaration order, the
/// same escaping), with the base64 encoded straight into `out`: a 64 KiB delta is the one
/// message where the generic path's cost (encoding into pieces, then scanning every base64
/// character for something to escape, which base64 never has) showed in the profile.
fn write_output_delta(
    out: &mut Vec<u8>,
    delta: OutputDelta<'_>,
    emitted_at_ms: Option<i64>,
    cursor: Option<&crate::EventCursor>,
) -> Result<(), EncodeError> {
    let start = out.len();
    out.reserve(delta.id.len() + crate::bytes_base64::encoded_len(delta.bytes.len()) + 160);
    out.extend_from_slice(b"{\"method\":\"");
    out.extend_from_slice(delta.method.as_bytes());
    out.extend_from_slice(b"\",\"params\":{\"");
    out.extend_from_slice(delta.id_member.as_bytes());
    out.extend_from_slice(b"\":");
    // The id is the client's text: the serializer escapes it.
    if let Err(source) = serde_json::to_writer(&mut *out, delta.id) {
        out.truncate(start);
        return Err(EncodeError {
            what: format!("notification `{}`", delta.method),
            source,
        });
    }
    out.extend_from_slice(match delta.stream {
        ProcessOutputStream::Stdout => b",\"stream\":\"stdout\",\"deltaBase64\":\"",
        ProcessOutputStream::Stderr => b",\"stream\":\"stderr\",\"deltaBase64\":\"",
    });
    crate::bytes_base64::encode_into(delta.bytes, out);
    out.extend_from_slice(match delta.cap_reached {
        true => b"\",\"capReached\":true}",
        false => b"\",\"capReached\":false}",
    });
    if let Some(ms) = emitted_at_ms {
        out.extend_from_slice(b",\"emittedAtMs\":");
        // Into the buffer directly: writing to a `Vec` cannot fail.
        let _ = write!(out, "{ms}");
    }
    if let Some(cursor) = cursor {
        out.extend_from_slice(b",\"cursor\":");
        if let Err(source) = serde_json::to_writer(&mut *out, cursor) {
            out.truncate(start);
            return Err(EncodeError {
                what: format!("notification `{}`", delta.method),
                source,
            });
        }
    }
    out.push(b'}');
    Ok(())
}

fn describe_request(id: &RequestId, method: &str) -> String {
    format!("request {} (`{method}`)", describe_id(id))
}

/// `7` or `"seven"`: integer and string ids stay distinguishable in messages.
fn describe_id(id: &RequestId) -> String {
    match id {
        RequestId::Integer(number) => number.to_string(),
        RequestId::String(text) => format!("{text:?}"),
    }
}

//! The JSON-RPC 2.0 envelope as Tandem puts it on the wire (docs/protocol.md section 1).
//!
//! Every transport (stdio lines, websocket frames) and the typed layer in
//! [`crate::messages`] convert through these four shapes, so the envelope rules
//! (optional `jsonrpc` member, `null` params as `{}`, integer-or-string ids) live in one place.

use std::fmt;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// The `jsonrpc` member accepted on input; output omits it.
pub const JSONRPC_VERSION: &str = "2.0";

/// A request id: an `i64` or a string. `1` and `"1"` are different ids.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(untagged)]
pub enum RequestId {
    /// A numeric id.
    Integer(i64),
    /// A string id.
    String(String),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Integer(n) => write!(f, "{n}"),
            RequestId::String(s) => f.write_str(s),
        }
    }
}

impl From<i64> for RequestId {
    fn from(value: i64) -> Self {
        RequestId::Integer(value)
    }
}

impl From<&str> for RequestId {
    fn from(value: &str) -> Self {
        RequestId::String(value.to_owned())
    }
}

impl From<String> for RequestId {
    fn from(value: String) -> Self {
        RequestId::String(value)
    }
}

/// `{id, method, params?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
pub struct JSONRPCRequest {
    /// Correlates the response with this request.
    pub id: RequestId,
    /// The method name, e.g. `thread/start`.
    pub method: String,
    /// Method parameters; omitted and `null` both mean `{}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
}

/// `{method, params?}`; server notifications also carry `emittedAtMs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
pub struct JSONRPCNotification {
    /// The notification method, e.g. `turn/completed`.
    pub method: String,
    /// Notification parameters; omitted and `null` both mean `{}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
    /// Unix milliseconds at which the server emitted the notification (server to client only).
    #[serde(
        default,
        rename = "emittedAtMs",
        skip_serializing_if = "Option::is_none"
    )]
    pub emitted_at_ms: Option<i64>,
}

/// `{id, result}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
pub struct JSONRPCResponse {
    /// The id of the request this answers.
    pub id: RequestId,
    /// The method's result object.
    pub result: Value,
}

/// `{id, error: {code, message, data?}}`; `id` is `null` only for a parse error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
pub struct JSONRPCError {
    /// The id of the request this answers, or `None` when the request could not be read.
    pub id: Option<RequestId>,
    /// What went wrong.
    pub error: JSONRPCErrorError,
}

/// The `error` member of an error response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[error("JSON-RPC error {code}: {message}")]
pub struct JSONRPCErrorError {
    /// One of the codes in [`crate::error_codes`].
    pub code: i64,
    /// A human-readable explanation.
    pub message: String,
    /// Optional structured detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl JSONRPCErrorError {
    /// An error with `code` and `message` and no data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// -32600: an invalid request (bad shape, undecodable params, failed precondition).
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(crate::error_codes::INVALID_REQUEST, message)
    }

    /// -32601: `method not found: <method>`.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            crate::error_codes::METHOD_NOT_FOUND,
            format!("method not found: {method}"),
        )
    }

    /// -32602: a parameter has a bad value.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(crate::error_codes::INVALID_PARAMS, message)
    }

    /// -32603: an internal error.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(crate::error_codes::INTERNAL_ERROR, message)
    }

    /// -32001: a bounded queue is full; the caller may retry later.
    pub fn overloaded(message: impl Into<String>) -> Self {
        Self::new(crate::error_codes::OVERLOADED, message)
    }
}

/// Any one message on the wire.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(untagged)]
pub enum JSONRPCMessage {
    /// A request expecting a response.
    Request(JSONRPCRequest),
    /// A one-way notification.
    Notification(JSONRPCNotification),
    /// A successful response.
    Response(JSONRPCResponse),
    /// An error response.
    Error(JSONRPCError),
}

impl<'de> Deserialize<'de> for JSONRPCMessage {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Classify by which members are present rather than by trial decoding, so that a
        // malformed request reports what is wrong with it instead of "matched no variant".
        let mut object = Map::<String, Value>::deserialize(deserializer)?;
        if let Some(version) = object.remove("jsonrpc")
            && version != Value::String(JSONRPC_VERSION.to_owned())
        {
            return Err(D::Error::custom(format!(
                "unsupported jsonrpc version {version}"
            )));
        }
        let value = Value::Object(object);
        let has = |key: &str| value.get(key).is_some();
        let message = if has("method") && has("id") {
            JSONRPCMessage::Request(serde_json::from_value(value).map_err(D::Error::custom)?)
        } else if has("method") {
            JSONRPCMessage::Notification(serde_json::from_value(value).map_err(D::Error::custom)?)
        } else if has("error") {
            JSONRPCMessage::Error(serde_json::from_value(value).map_err(D::Error::custom)?)
        } else if has("result") && has("id") {
            JSONRPCMessage::Response(serde_json::from_value(value).map_err(D::Error::custom)?)
        } else {
            return Err(D::Error::custom(
                "not a JSON-RPC message: expected `method`, `result` or `error`",
            ));
        };
        Ok(message)
    }
}

/// Treats an omitted or `null` params member as `{}`, as docs/protocol.md section 1 requires.
pub fn params_or_empty(params: Option<Value>) -> Value {
    match params {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(value) => value,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_keep_integer_and_string_apart() {
        let a: RequestId = serde_json::from_value(json!(1)).unwrap();
        let b: RequestId = serde_json::from_value(json!("1")).unwrap();
        assert_eq!(a, RequestId::Integer(1));
        assert_eq!(b, RequestId::String("1".into()));
        assert_ne!(a, b);
    }

    #[test]
    fn classifies_each_shape_and_accepts_jsonrpc_member() {
        let request: JSONRPCMessage =
            serde_json::from_value(json!({"jsonrpc": "2.0", "id": 3, "method": "a"})).unwrap();
        assert!(matches!(request, JSONRPCMessage::Request(r) if r.params.is_none()));
        let notification: JSONRPCMessage =
            serde_json::from_value(json!({"method": "n", "params": null})).unwrap();
        assert!(matches!(notification, JSONRPCMessage::Notification(_)));
        let response: JSONRPCMessage =
            serde_json::from_value(json!({"id": "x", "result": {}})).unwrap();
        assert!(matches!(response, JSONRPCMessage::Response(_)));
        let error: JSONRPCMessage = serde_json::from_value(
            json!({"id": null, "error": {"code": -32700, "message": "Parse error: x"}}),
        )
        .unwrap();
        assert!(matches!(error, JSONRPCMessage::Error(e) if e.id.is_none()));
    }

    #[test]
    fn rejects_wrong_version_and_unknown_shapes() {
        let err =
            serde_json::from_value::<JSONRPCMessage>(json!({"jsonrpc": "1.0", "method": "a"}))
                .unwrap_err();
        assert!(err.to_string().contains("unsupported jsonrpc version"));
        assert!(serde_json::from_value::<JSONRPCMessage>(json!({"id": 1})).is_err());
    }

    #[test]
    fn output_omits_jsonrpc_and_absent_params() {
        let text = serde_json::to_string(&JSONRPCMessage::Request(JSONRPCRequest {
            id: 7.into(),
            method: "m".into(),
            params: None,
        }))
        .unwrap();
        assert_eq!(text, r#"{"id":7,"method":"m"}"#);
    }
}

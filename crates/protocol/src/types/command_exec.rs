//! The `command/exec` methods and notification (docs/protocol.md section 8a): a standalone
//! command outside any thread, in the reference app-server's shapes, so that clients written
//! for it run unchanged. The server runs them on the same machinery as `process/*`.

#[allow(unused_imports)]
use super::*;

/// `command/exec` params.
///
/// Boolean switches accept `null` as `false`, and `outputBytesCap` / `timeoutMs` accept `null`
/// as "the server default", as the reference does.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct CommandExecParams {
    /// Program and arguments; an empty vector is refused.
    pub command: Vec<String>,
    /// Client-chosen, connection-scoped id; required for `tty`, `streamStdin`,
    /// `streamStdoutStderr` and the follow-up `command/exec/*` requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_id: Option<String>,
    /// Run under a PTY; implies `streamStdin` and `streamStdoutStderr`.
    #[serde(default, with = "null_as_default", skip_serializing_if = "is_false")]
    #[cfg_attr(feature = "schema", schemars(with = "bool"), ts(as = "Option<bool>"))]
    pub tty: bool,
    /// Accept `command/exec/write`.
    #[serde(default, with = "null_as_default", skip_serializing_if = "is_false")]
    #[cfg_attr(feature = "schema", schemars(with = "bool"), ts(as = "Option<bool>"))]
    pub stream_stdin: bool,
    /// Stream output as `command/exec/outputDelta` instead of returning it in the result.
    #[serde(default, with = "null_as_default", skip_serializing_if = "is_false")]
    #[cfg_attr(feature = "schema", schemars(with = "bool"), ts(as = "Option<bool>"))]
    pub stream_stdout_stderr: bool,
    /// Per-stream cap in bytes; omitted or `null` = the server default (1 MiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_bytes_cap: Option<u64>,
    /// No output cap (cannot be combined with `outputBytesCap`).
    #[serde(default, with = "null_as_default", skip_serializing_if = "is_false")]
    #[cfg_attr(feature = "schema", schemars(with = "bool"), ts(as = "Option<bool>"))]
    pub disable_output_cap: bool,
    /// Timeout in milliseconds; omitted or `null` = the server default (10 000 ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<i64>,
    /// No timeout (cannot be combined with `timeoutMs`).
    #[serde(default, with = "null_as_default", skip_serializing_if = "is_false")]
    #[cfg_attr(feature = "schema", schemars(with = "bool"), ts(as = "Option<bool>"))]
    pub disable_timeout: bool,
    /// Working directory; omitted = the server's, relative = relative to the server's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Variables merged over the server's environment; `null` removes one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, Option<String>>>,
    /// Initial PTY size (requires `tty`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<PtySize>,
    /// The sandbox the command runs under; omitted = the configured one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_policy: Option<SandboxPolicy>,
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// `command/exec` result, sent once the process exited and after every
/// `command/exec/outputDelta` of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct CommandExecResponse {
    /// Exit code; 128 + N for signal N (137 after `command/exec/terminate`); 124 on timeout.
    pub exit_code: i32,
    /// Captured stdout, lossily decoded as UTF-8; empty when streamed.
    pub stdout: String,
    /// Captured stderr, lossily decoded as UTF-8; empty when streamed.
    pub stderr: String,
}

/// `command/exec/outputDelta` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct CommandExecOutputDeltaNotification {
    /// The client's `processId`.
    pub process_id: String,
    /// The stream (`stdout` carries all PTY output).
    pub stream: ProcessOutputStream,
    /// The bytes; `deltaBase64` on the wire.
    #[serde(rename = "deltaBase64", with = "crate::bytes_base64")]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "String", extend("contentEncoding" = "base64")),
        ts(type = "string")
    )]
    pub delta: Bytes,
    /// This delta reached the stream's cap: later output of the stream was dropped.
    pub cap_reached: bool,
}

/// `command/exec/write` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct CommandExecWriteParams {
    /// The client's `processId`.
    pub process_id: String,
    /// Bytes to write; `deltaBase64` on the wire.
    #[serde(
        rename = "deltaBase64",
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::bytes_base64::option"
    )]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<String>", extend("contentEncoding" = "base64")),
        ts(as = "Option<String>")
    )]
    pub delta: Option<Bytes>,
    /// Close stdin after writing.
    #[serde(default, with = "null_as_default", skip_serializing_if = "is_false")]
    #[cfg_attr(feature = "schema", schemars(with = "bool"), ts(as = "Option<bool>"))]
    pub close_stdin: bool,
}

/// `command/exec/terminate` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct CommandExecTerminateParams {
    /// The client's `processId`.
    pub process_id: String,
}

/// `command/exec/resize` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct CommandExecResizeParams {
    /// The client's `processId`.
    pub process_id: String,
    /// The new size.
    pub size: PtySize,
}

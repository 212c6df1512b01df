//! The `process/*` methods and notifications (docs/protocol.md section 8): spawn, stdin, kill,
//! resize, output deltas (bytes in-process, base64 on the wire) and the exit report.

#[allow(unused_imports)]
use super::*;

/// A PTY size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
pub struct PtySize {
    /// Rows (greater than 0).
    pub rows: u16,
    /// Columns (greater than 0).
    pub cols: u16,
}

/// `process/spawn` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ProcessSpawnParams {
    /// Caller-chosen handle naming the process in later requests and notifications.
    pub process_handle: String,
    /// Program and arguments.
    pub command: Vec<String>,
    /// Absolute working directory. Optional in the type so that a missing `cwd` reaches the
    /// server's own check (-32600) rather than failing as undecodable params.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Run under a PTY; implies `streamStdin` and `streamStdoutStderr`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tty: Option<bool>,
    /// Accept `process/writeStdin`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_stdin: Option<bool>,
    /// Stream output as `process/outputDelta` instead of returning it in `process/exited`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_stdout_stderr: Option<bool>,
    /// Per-stream cap: omitted = 1 MiB, `null` = none.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "three_state")]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<Option<u64>>"),
        ts(as = "Option<u64>")
    )]
    pub output_bytes_cap: Option<Option<u64>>,
    /// Timeout: omitted = 10 000 ms, `null` = none.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "three_state")]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<Option<i64>>"),
        ts(as = "Option<i64>")
    )]
    pub timeout_ms: Option<Option<i64>>,
    /// Variables merged over the server's environment; `null` removes one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, Option<String>>>,
    /// Initial PTY size (requires `tty`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<PtySize>,
}

/// `process/writeStdin` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ProcessWriteStdinParams {
    /// The process.
    pub process_handle: String,
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close_stdin: Option<bool>,
}

/// `process/kill` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ProcessKillParams {
    /// The process.
    pub process_handle: String,
}

/// procre: `process/resume` params (experimental): take over a process of a connection that
/// closed (or this one) and receive its notifications again, replaying those after `cursor`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ProcessResumeParams {
    /// The `processSession` of the `initialize` result of the connection that spawned the
    /// process (or resumed it last).
    pub process_session: String,
    /// The process.
    pub process_handle: String,
    /// The `cursor` of the last `process/outputDelta` or `process/exited` of this process the
    /// client saw; omitted when it saw none, which replays everything still in the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<crate::EventCursor>,
}

/// procre: `process/resume` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ProcessResumeResponse {
    /// `true` when some notifications after `cursor` are no longer in the process's replay
    /// window (or `cursor` is from another server instance): nothing was replayed and the
    /// process's output between `cursor` and this answer is missing.
    pub gap: bool,
    /// Notifications replayed (sent before this result).
    pub replayed: u64,
    /// Where the process's stream stands: every later notification reaches this connection.
    pub cursor: crate::EventCursor,
}

/// `process/resizePty` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ProcessResizePtyParams {
    /// The process.
    pub process_handle: String,
    /// The new size.
    pub size: PtySize,
}

// tui: the present screen of a PTY process (`process/screen`, experimental).
/// `process/screen` params (experimental): the present screen of a running PTY process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ProcessScreenParams {
    /// The process (spawned with `tty: true`).
    pub process_handle: String,
}

/// The `process/screen` result: the screen the server's terminal emulator shows now, after
/// every output byte read so far.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ProcessScreenResponse {
    /// The emulated screen's size: the PTY's, within the server's bound.
    pub size: PtySize,
    /// The cursor's row, from 0.
    pub cursor_row: u16,
    /// The cursor's column, from 0.
    pub cursor_col: u16,
    /// The screen's text: one line per row, trailing blanks trimmed.
    pub text: String,
    /// Escape sequences that draw the screen (text, colours, attributes, cursor) on a terminal
    /// of `size`, whatever it showed before.
    pub formatted: String,
    /// How many output bytes the screen reflects.
    pub output_bytes: u64,
}

// attach19: a client attaches to a running PTY process it did not spawn.
/// `process/share` params (experimental): hand out a read-only attach token for one of this
/// connection's running PTY processes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ProcessShareParams {
    /// The process (spawned by this connection, or resumed by it, with `tty: true`).
    pub process_handle: String,
}

/// The `process/share` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ProcessShareResponse {
    /// What another client names, with the handle, in `process/attach`: it lets the holder
    /// watch this run of the process (its screen and output), nothing more. The same token
    /// for every `process/share` of the run; it stops working when the process exits.
    pub attach_token: String,
}

/// `process/attach` params (experimental): watch a running PTY process another connection
/// spawned: its present screen at once, then its output live.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ProcessAttachParams {
    /// The process, by its owner's handle.
    pub process_handle: String,
    /// The owner's `process/share` answer for it.
    pub attach_token: String,
}

/// The `process/attach` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ProcessAttachResponse {
    /// The screen now: exactly the process's output up to `cursor` run through the server's
    /// emulator. Every later `process/outputDelta` and `process/exited` of the process reaches
    /// this connection (cursors above `cursor`), so drawing the screen and then applying them
    /// shows what the owner's terminal shows.
    pub screen: ProcessScreenResponse,
    /// Where the process's stream stood when the screen was taken.
    pub cursor: crate::EventCursor,
}

/// Which output stream a delta belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub enum ProcessOutputStream {
    /// Standard output (and all PTY output).
    Stdout,
    /// Standard error.
    Stderr,
}

/// `process/outputDelta` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ProcessOutputDeltaNotification {
    /// The process.
    pub process_handle: String,
    /// The stream.
    pub stream: ProcessOutputStream,
    /// The bytes; `deltaBase64` on the wire. In-process they are the chunk read from the pipe,
    /// shared, never encoded.
    #[serde(rename = "deltaBase64", with = "crate::bytes_base64")]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "String", extend("contentEncoding" = "base64")),
        ts(type = "string")
    )]
    pub delta: Bytes,
    /// This delta reached the stream's cap.
    pub cap_reached: bool,
}

/// `process/exited` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ProcessExitedNotification {
    /// The process.
    pub process_handle: String,
    /// Exit code; 128 + N for signal N; 124 on timeout.
    pub exit_code: i32,
    /// Captured stdout (empty when streamed).
    pub stdout: String,
    /// stdout reached its cap.
    pub stdout_cap_reached: bool,
    /// Captured stderr (empty when streamed).
    pub stderr: String,
    /// stderr reached its cap.
    pub stderr_cap_reached: bool,
    /// A stream did not reach EOF within the drain budget. Absent or `null` on input means
    /// `false`.
    #[serde(default, with = "null_as_default")]
    #[cfg_attr(feature = "schema", schemars(with = "bool"), ts(as = "bool"))]
    pub output_drain_timed_out: bool,
}

//! Typed messages for every method of protocol.md: the request and notification enums in both
//! directions, and which of them are experimental. The types themselves live in
//! [`crate::types`]; this module only binds method names to them.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::JSONRPCErrorError;
use crate::types::*;

/// Decodes params into `T`, mapping a failure to -32600 ``Invalid request: <serde message>``.
pub(crate) fn decode_params<T: DeserializeOwned>(params: Value) -> Result<T, JSONRPCErrorError> {
    serde_json::from_value(params)
        .map_err(|err| JSONRPCErrorError::invalid_request(format!("Invalid request: {err}")))
}

/// Ties a method name to its params, its result and the enum that carries it. Each method has a
/// marker type implementing this in [`client_methods`] or [`server_methods`].
pub trait RequestMethod {
    /// The wire method name.
    const METHOD: &'static str;
    /// The params type.
    type Params: serde::Serialize + DeserializeOwned + Send + 'static;
    /// The result type.
    type Response: serde::Serialize + DeserializeOwned + Send + 'static;
    /// The request enum this method belongs to.
    type Request;
    /// Wraps `params` into the request enum.
    fn into_request(request_id: crate::RequestId, params: Self::Params) -> Self::Request;
}

request_enum! {
    /// A request from client to server.
    ClientRequest, markers = client_methods;
    /// `initialize`: the handshake.
    Initialize => "initialize" (InitializeParams) -> InitializeResponse;
    /// `config/read`: the effective server configuration.
    ConfigRead => "config/read" (ConfigReadParams) -> ConfigReadResponse;
    /// `process/spawn` (experimental).
    ProcessSpawn => "process/spawn" (ProcessSpawnParams) -> EmptyResponse;
    /// `process/writeStdin` (experimental).
    ProcessWriteStdin => "process/writeStdin" (ProcessWriteStdinParams) -> EmptyResponse;
    /// `process/kill` (experimental).
    ProcessKill => "process/kill" (ProcessKillParams) -> EmptyResponse;
    /// `process/resizePty` (experimental).
    ProcessResizePty => "process/resizePty" (ProcessResizePtyParams) -> EmptyResponse;
}

notification_enum! {
    /// A notification from client to server.
    ClientNotification;
    /// `initialized`: sent after the `initialize` response.
    Initialized => "initialized" (EmptyParams);
}

notification_enum! {
    /// A notification from server to client.
    ServerNotification;
    /// `process/outputDelta` (experimental, guaranteed in-process).
    ProcessOutputDelta => "process/outputDelta" (ProcessOutputDeltaNotification);
    /// `process/exited` (experimental, guaranteed in-process).
    ProcessExited => "process/exited" (ProcessExitedNotification);
}

/// Client methods that require the `experimentalApi` capability.
pub const EXPERIMENTAL_CLIENT_METHODS: &[&str] = &[
    "process/spawn",
    "process/writeStdin",
    "process/kill",
    "process/resizePty",
];

/// Server notifications that are only sent to clients with the `experimentalApi` capability.
pub const EXPERIMENTAL_NOTIFICATION_METHODS: &[&str] = &["process/outputDelta", "process/exited"];

/// Notifications that the in-process host delivers with the guaranteed class by default
/// (protocol.md section 6); every other notification is best effort.
pub const DEFAULT_GUARANTEED_NOTIFICATION_METHODS: &[&str] = &[
    "process/outputDelta",
    "process/exited",
    "turn/completed",
    "thread/attachment/updated",
];

/// Client methods whose replies must not wait behind events: process control.
pub const PROCESS_CONTROL_METHODS: &[&str] = &[
    "process/spawn",
    "process/writeStdin",
    "process/kill",
    "process/resizePty",
];

impl ClientRequest {
    /// Why this request needs the `experimentalApi` capability, if it does: the method name for
    /// an experimental method, or `<method>.<field>` for an experimental field in use.
    pub fn experimental_reason(&self) -> Option<String> {
        let method = self.method();
        if EXPERIMENTAL_CLIENT_METHODS.contains(&method) {
            return Some(method.to_owned());
        }
        self.experimental_field_in_use()
            .map(|field| format!("{method}.{field}"))
    }

    /// The first experimental field of a stable method that this request sets.
    fn experimental_field_in_use(&self) -> Option<&'static str> {
        None
    }

    /// Whether the reply to this request is a process control reply (see
    /// [`PROCESS_CONTROL_METHODS`]).
    pub fn is_process_control(&self) -> bool {
        PROCESS_CONTROL_METHODS.contains(&self.method())
    }
}

/// Whether a server notification method is experimental.
pub fn is_experimental_notification(method: &str) -> bool {
    EXPERIMENTAL_NOTIFICATION_METHODS.contains(&method)
}

//! In-process Tandem servers on a cassette (feature `cassette`): a front end's tests run real
//! agent turns answered from a recording of a real model, offline and the same every time,
//! and re-record them when [`MODE_ENV`] says so (docs/cassettes.md).
//!
//! ```no_run
//! use tandem_test_support::cassette::CassetteServer;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // Replays tests/cassettes/hello.jsonl, or records it with TANDEM_CASSETTE_MODE=record
//! // (then the provider must be reachable: here the built-in `openai`, with OPENAI_API_KEY).
//! let mut server = CassetteServer::builder("tests/cassettes/hello.jsonl")
//!     .provider("openai")
//!     .model("gpt-4.1-mini")
//!     .start()
//!     .await?;
//! // `server.handle` is an in-process client: thread/start, turn/start, read events...
//! server.shutdown().await?;
//! # Ok(())
//! # }
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tandem_host::in_process::{self, InProcessServerEvent, InProcessStartArgs};
use tandem_host::{InProcessClientHandle, MessageProcessor};
use tandem_protocol::client_methods::{ThreadStart, TurnStart};
use tandem_protocol::{RequestId, RequestMethod, ServerNotification};
use tandem_server::agent::CassetteMode;
use tandem_server::config::toml;
use tandem_server::{ServerConfig, ServerOptions, ServerOptionsError, TandemServer};

use crate::initialize_params;

/// The environment variable that picks the mode: `record`, `record-missing`, `replay` or
/// `live`; unset or empty means `replay`.
pub const MODE_ENV: &str = "TANDEM_CASSETTE_MODE";

/// Why a cassette server did not start.
#[derive(Debug, thiserror::Error)]
pub enum CassetteServerError {
    /// [`MODE_ENV`] holds something else than a mode.
    #[error(
        "{MODE_ENV}={0:?} is not a cassette mode: use record, record-missing, replay or live \
         (or leave it unset to replay)"
    )]
    BadMode(String),
    /// The configuration or the cassette is not usable (the message says what to do).
    #[error(transparent)]
    Options(#[from] ServerOptionsError),
    /// The server's home could not be created.
    #[error("cannot create a home for the test server at {path}: {source}")]
    Home {
        /// The home's path.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The in-process host did not start.
    #[error("the in-process server did not start: {0}")]
    Start(#[source] std::io::Error),
    /// A request of [`CassetteServer::start_thread`] or [`CassetteServer::run_turn`] failed.
    #[error("{method} failed: {message}")]
    Request {
        /// The method.
        method: &'static str,
        /// The server's error, or what went wrong.
        message: String,
    },
    /// The turn asked the client something [`CassetteServer::run_turn`] does not answer
    /// (an approval under another policy, a dynamic tool call, a question): drive such turns
    /// through [`CassetteServer::handle`] yourself.
    #[error("the turn sent server request {0}, which run_turn does not answer")]
    ServerRequest(String),
    /// The turn did not complete in time.
    #[error("the turn did not complete within {0:?}")]
    TurnTimeout(Duration),
}

/// How long [`CassetteServer::run_turn`] waits for a turn: a recording talks to a real model.
pub const TURN_LIMIT: Duration = Duration::from_secs(300);

/// Builds a [`CassetteServer`].
#[derive(Debug, Clone)]
pub struct CassetteServerBuilder {
    cassette: PathBuf,
    provider: String,
    model: Option<String>,
    mode: Option<CassetteMode>,
    overrides: Vec<(String, toml::Value)>,
}

impl CassetteServerBuilder {
    /// The provider whose answers are recorded and replayed (default `openai`); it must be
    /// configured (built in, or with [`Self::config_override`]s).
    pub fn provider(mut self, name: impl Into<String>) -> Self {
        self.provider = name.into();
        self
    }

    /// The model of the threads.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Uses `mode` whatever [`MODE_ENV`] says.
    pub fn mode(mut self, mode: CassetteMode) -> Self {
        self.mode = Some(mode);
        self
    }

    /// Sets a config key as `-c key=value` does (`model_providers.local.base_url`, ...).
    pub fn config_override(mut self, key: &str, value: impl Into<toml::Value>) -> Self {
        self.overrides.push((key.to_owned(), value.into()));
        self
    }

    /// The mode the server will run in: the one set with [`Self::mode`], else [`MODE_ENV`]'s,
    /// else replay.
    pub fn resolved_mode(&self) -> Result<CassetteMode, CassetteServerError> {
        if let Some(mode) = self.mode {
            return Ok(mode);
        }
        match std::env::var(MODE_ENV) {
            Err(_) => Ok(CassetteMode::Replay),
            Ok(text) if text.trim().is_empty() => Ok(CassetteMode::Replay),
            Ok(text) => CassetteMode::parse(text.trim()).ok_or(CassetteServerError::BadMode(text)),
        }
    }

    /// Starts the server in a fresh home (removed when the server is dropped) and completes
    /// the `initialize` handshake. Opening the cassette reads it (and, when recording, locks
    /// it), so a missing or damaged cassette fails here with what to do about it.
    pub async fn start(self) -> Result<CassetteServer, CassetteServerError> {
        let mode = self.resolved_mode()?;
        let home = TempHome::new()?;
        let provider = self.provider.clone();
        let mut builder = ServerConfig::builder()
            .tandem_home(home.path())
            .config_override("model_provider", provider.as_str().into());
        if let Some(model) = &self.model {
            builder = builder.config_override("model", model.as_str().into());
        }
        for (key, value) in self.overrides {
            builder = builder.config_override(&key, value);
        }
        builder = builder
            .config_override(
                &format!("model_providers.\"{provider}\".cassette"),
                self.cassette.display().to_string().into(),
            )
            .config_override(
                &format!("model_providers.\"{provider}\".cassette_mode"),
                mode.as_str().into(),
            );
        let options = tokio::task::spawn_blocking(move || ServerOptions::load(builder))
            .await
            .map_err(|error| CassetteServerError::Start(std::io::Error::other(error)))??;
        let args = InProcessStartArgs::new(
            move |outgoing| {
                Arc::new(TandemServer::new(outgoing, options)) as Arc<dyn MessageProcessor>
            },
            initialize_params(true),
        );
        let handle = in_process::start(args)
            .await
            .map_err(CassetteServerError::Start)?;
        Ok(CassetteServer {
            handle,
            mode,
            cassette: self.cassette,
            _home: home,
        })
    }
}

/// An in-process Tandem server whose provider runs on a cassette.
pub struct CassetteServer {
    /// The client handle: requests, events, server-request answers.
    pub handle: InProcessClientHandle,
    mode: CassetteMode,
    cassette: PathBuf,
    _home: TempHome,
}

impl std::fmt::Debug for CassetteServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CassetteServer")
            .field("mode", &self.mode)
            .field("cassette", &self.cassette)
            .finish_non_exhaustive()
    }
}

impl CassetteServer {
    /// A builder for a server on the cassette at `path` (relative to the working directory,
    /// which is the package's directory under `cargo test`).
    pub fn builder(path: impl Into<PathBuf>) -> CassetteServerBuilder {
        CassetteServerBuilder {
            cassette: path.into(),
            provider: "openai".to_owned(),
            model: None,
            mode: None,
            overrides: Vec::new(),
        }
    }

    /// The mode it runs in.
    pub fn mode(&self) -> CassetteMode {
        self.mode
    }

    /// The cassette's path.
    pub fn cassette(&self) -> &Path {
        &self.cassette
    }

    /// Shuts the host down.
    pub async fn shutdown(&mut self) -> std::io::Result<()> {
        self.handle.shutdown().await
    }

    /// Starts a thread with `params` (a `thread/start` object) over `approvalPolicy: never`
    /// and returns its id.
    pub async fn start_thread(&mut self, params: Value) -> Result<String, CassetteServerError> {
        let mut merged = json!({"approvalPolicy": "never"});
        if let (Some(target), Value::Object(extra)) = (merged.as_object_mut(), params) {
            target.extend(extra);
        }
        let result = self.call::<ThreadStart>(merged).await?;
        Ok(result.thread.id)
    }

    /// Runs one turn of `prompt` on `thread_id` and returns every event up to and including
    /// its `turn/completed`.
    pub async fn run_turn(
        &mut self,
        thread_id: &str,
        prompt: &str,
    ) -> Result<Vec<InProcessServerEvent>, CassetteServerError> {
        self.call::<TurnStart>(json!({
            "threadId": thread_id,
            "input": [{"type": "text", "text": prompt}],
        }))
        .await?;
        let events = async {
            let mut events = Vec::new();
            loop {
                let event =
                    self.handle
                        .next_event()
                        .await
                        .ok_or_else(|| CassetteServerError::Request {
                            method: TurnStart::METHOD,
                            message: "the server stopped during the turn".to_owned(),
                        })?;
                if let InProcessServerEvent::ServerRequest(request) = &event {
                    return Err(CassetteServerError::ServerRequest(
                        request.method().to_owned(),
                    ));
                }
                let done = matches!(
                    &event,
                    InProcessServerEvent::ServerNotification(ServerNotification::TurnCompleted(_))
                );
                events.push(event);
                if done {
                    return Ok(events);
                }
            }
        };
        tokio::time::timeout(TURN_LIMIT, events)
            .await
            .map_err(|_| CassetteServerError::TurnTimeout(TURN_LIMIT))?
    }

    async fn call<M>(&mut self, params: Value) -> Result<M::Response, CassetteServerError>
    where
        M: RequestMethod<Request = tandem_protocol::ClientRequest>,
    {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let failed = |message: String| CassetteServerError::Request {
            method: M::METHOD,
            message,
        };
        let params: M::Params =
            serde_json::from_value(params).map_err(|error| failed(error.to_string()))?;
        let id = RequestId::Integer(
            i64::try_from(NEXT.fetch_add(1, Ordering::Relaxed)).unwrap_or(i64::MAX),
        );
        let result = self
            .handle
            .request(M::into_request(id, params))
            .await
            .map_err(|error| failed(error.to_string()))?
            .map_err(|error| failed(error.message))?;
        serde_json::from_value(result).map_err(|error| failed(error.to_string()))
    }
}

/// The text of every agent message delta in `events`, concatenated: what the agent said.
pub fn agent_text(events: &[InProcessServerEvent]) -> String {
    events
        .iter()
        .filter_map(|event| match event {
            InProcessServerEvent::ServerNotification(ServerNotification::AgentMessageDelta(
                delta,
            )) => Some(delta.delta.as_str()),
            _ => None,
        })
        .collect()
}

/// A home directory under the system's temporary directory, removed when dropped.
#[derive(Debug)]
struct TempHome(PathBuf);

impl TempHome {
    fn new() -> Result<Self, CassetteServerError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!(
            "tandem-cassette-home-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&path).map_err(|source| CassetteServerError::Home {
            path: path.clone(),
            source,
        })?;
        Ok(Self(path))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempHome {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

//! [`OpenAiCompatibleAgent`]: turns driven by any OpenAI-compatible endpoint (OpenAI itself,
//! Ollama, llama.cpp's `llama-server`, vLLM, LM Studio), streamed over Chat Completions or the
//! Responses API, with the tools `shell`, `ask_user` and the thread's dynamic tools.
//!
//! Each model request is rebuilt from the conversation as it stands (the thread's history,
//! this turn's items, then what the live turn added), so a request is only ever resent when
//! nothing ran since it was built: tools run after the answer that asked for them has fully
//! arrived. Retries are decided here, in the agent loop, so that each one is announced to the
//! client (`error` with `willRetry: true`) and can be interrupted.
//!
//! The model's reasoning streams as `reasoning` items while the answer arrives, and the
//! reasoning of one request is sent back with the next request of the same turn where the
//! wire carries it (`reasoning`).
//!
//! Files: `chat` and `responses` hold the two wires, `tool_calls` the assembly of streamed
//! calls, `transcript` the conversation, `images` the image input, `tools` the tools, `retry`
//! the retry policy, `reasoning` the reasoning items of an answer, `patch_stream` a patch's
//! progress while the model writes it, `transport` the seam every request passes (to the
//! network, or to a cassette).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use eventsource_stream::Eventsource;
use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tandem_protocol::{TokenUsageBreakdown, Turn, UserInput};

use crate::cassette::{Cassette, CassetteError};
use crate::providers::{ModelProviderConfig, WireApi};
use crate::{Agent, AgentError, StreamingMessage, TurnDriver};

mod apply_patch;
mod chat;
mod images;
mod patch_stream;
// reason29: reasoning items.
mod reasoning;
mod responses;
pub(crate) mod retry;
mod tool_calls;
mod tools;
pub use tools::user_shell_report;
// mcp30: the bound of what the model sees of a result, shared with MCP results.
pub(crate) use tools::{MAX_OUTPUT_BYTES, truncate_middle};
mod transcript;
pub(crate) mod transport;
mod usage;

use images::UserPart;
use patch_stream::PatchStreams;
use reasoning::{ReasoningEvent, ReasoningStream};
use retry::{AttemptError, RequestContext};
use tool_calls::ToolCall;
use transcript::{Conversation, Entry, ReasoningOutput};

/// Why an [`OpenAiCompatibleAgent`] could not be built.
#[derive(Debug, thiserror::Error)]
pub enum AgentBuildError {
    /// The HTTP client could not be set up (its TLS backend failed to initialize).
    #[error("cannot set up the HTTP client for model provider {provider}: {source}")]
    HttpClient {
        /// The provider's id.
        provider: String,
        /// The client's error.
        #[source]
        source: reqwest::Error,
    },
    /// The provider's cassette cannot be used (missing, damaged, recorded against another
    /// provider, or being recorded by another server).
    #[error("model provider {provider}: {source}")]
    Cassette {
        /// The provider's id.
        provider: String,
        /// What is wrong with the cassette (boxed: it is large, and rare).
        #[source]
        source: Box<CassetteError>,
    },
}

/// An [`Agent`] backed by an OpenAI-compatible HTTP endpoint, configured by one
/// `[model_providers.<name>]` entry. The model is the turn's ([`TurnDriver::model`]).
///
/// ```no_run
/// use std::sync::Arc;
/// use tandem_agent::{Agent, ModelProviderConfig, OpenAiCompatibleAgent};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let provider = ModelProviderConfig::new("llama", "http://127.0.0.1:8080/v1");
/// let agent: Arc<dyn Agent> = Arc::new(OpenAiCompatibleAgent::new(provider)?);
/// // tandem-server runs it: `ServerOptions::from_env()?.with_agent(agent)`.
/// # let _ = agent;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiCompatibleAgent {
    provider: ModelProviderConfig,
    client: reqwest::Client,
    /// The provider's cassette, unless it runs live.
    cassette: Option<Arc<Cassette>>,
}

/// Where the text of an answer goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TextSink {
    /// Streamed to the client as an agent message as it arrives (a turn's answer).
    Client,
    /// Only collected into [`Reply::text`] (a compaction summary, which the driver reports as
    /// its own item).
    Collected,
}

/// One complete answer of the model.
#[derive(Debug)]
struct Reply {
    text: String,
    calls: Vec<ToolCall>,
    /// The `apply_patch` calls whose progress was shown: their position in `calls` and the
    /// `fileChange` item id the progress announced.
    patch_items: HashMap<usize, String>,
    /// The reasoning of the answer, as the next request carries it back.
    reasoning: Vec<ReasoningOutput>,
    /// What the request cost, if the stream said.
    usage: Option<TokenUsageBreakdown>,
}

/// What one server-sent event contributed; an event contributes none, one or several.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decoded {
    /// Answer text, to stream to the client now.
    Text(String),
    /// The answer is complete.
    Done,
    /// Reasoning, to stream to the client now as a `reasoning` item.
    Reasoning(ReasoningEvent),
    /// A fragment of an `apply_patch` call's arguments, to show the patch's progress.
    PatchInput {
        /// The call's position among the answer's tool calls.
        call: usize,
        /// The fragment: JSON arguments, or the free-form tool's input when `raw`.
        fragment: String,
        /// Whether it is the free-form tool's input.
        raw: bool,
    },
}

/// Turns the events of one streamed answer into text, reasoning and tool calls; one per wire.
pub(crate) trait StreamDecoder: Send {
    /// Decodes the event named `event` (empty when the line was absent) with `data`, in the
    /// order the pieces happened (empty for lifecycle, usage and tool-call fragments).
    fn decode(&mut self, event: &str, data: &str) -> Result<Vec<Decoded>, AttemptError>;
    /// The token usage the stream reported, if it did.
    fn usage(&self) -> Option<TokenUsageBreakdown>;
    /// The tool calls the answer asked for, in order.
    fn finish(self: Box<Self>) -> Vec<ToolCall>;
}

impl OpenAiCompatibleAgent {
    /// An agent for `provider`; the API key is read from its `env_key` variable at each
    /// request. A provider with a cassette ([`ModelProviderConfig::cassette`]) opens it here
    /// (blocking: it reads the file, and locks it when recording).
    pub fn new(provider: ModelProviderConfig) -> Result<Self, AgentBuildError> {
        let mut headers = HeaderMap::new();
        for (name, value) in &provider.http_headers {
            // Validated at config load; a hand-built config with a bad header skips it.
            match (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            ) {
                (Ok(name), Ok(value)) => {
                    headers.insert(name, value);
                }
                _ => tracing::warn!(header = %name, "skipping an invalid provider header"),
            }
        }
        let client = reqwest::Client::builder()
            .user_agent(concat!("tandem/", env!("CARGO_PKG_VERSION")))
            .default_headers(headers)
            .build()
            .map_err(|source| AgentBuildError::HttpClient {
                provider: provider.id.clone(),
                source,
            })?;
        let cassette = Cassette::open(&provider).map_err(|source| AgentBuildError::Cassette {
            provider: provider.id.clone(),
            source: Box::new(source),
        })?;
        Ok(Self {
            provider,
            client,
            cassette,
        })
    }

    /// The provider this agent talks to.
    pub fn provider(&self) -> &ModelProviderConfig {
        &self.provider
    }

    /// The endpoint under the base URL.
    fn endpoint(&self) -> &'static str {
        match self.provider.wire_api {
            WireApi::Chat => "chat/completions",
            WireApi::Responses => "responses",
        }
    }

    /// One model request, retried as the provider's settings allow.
    async fn request(
        &self,
        model: &str,
        conversation: &Conversation,
        sink: TextSink,
        driver: &mut TurnDriver,
    ) -> Result<Reply, AgentError> {
        let mut body = match self.provider.wire_api {
            WireApi::Chat => chat::request_body(model, conversation),
            WireApi::Responses => responses::request_body(model, conversation),
        };
        reasoning::add_settings(self.provider.wire_api, &conversation.reasoning, &mut body);
        let body = Bytes::from(body.to_string());
        let max = self.provider.stream_max_retries;
        let mut retries = 0;
        loop {
            match self.attempt(model, body.clone(), sink, driver).await {
                Ok(reply) => return Ok(reply),
                Err(AttemptError::Interrupted) => return Err(AgentError::Interrupted),
                Err(AttemptError::Fatal(message)) => return Err(AgentError::Failed(message)),
                Err(AttemptError::Retryable {
                    message,
                    retry_after,
                }) => {
                    if retries >= max {
                        return Err(AgentError::Failed(format!(
                            "{message}; gave up after {max} retries (stream_max_retries of \
                             provider {})",
                            self.provider.id
                        )));
                    }
                    retries += 1;
                    let wait = retry_after.unwrap_or_else(|| retry::backoff(retries));
                    tracing::info!(
                        provider = %self.provider.id, retry = retries, ?wait, %message,
                        "model request failed; retrying"
                    );
                    driver
                        .report_retry(&format!("Reconnecting... {retries}/{max}"), Some(message))
                        .await;
                    driver.or_interrupted(tokio::time::sleep(wait)).await?;
                }
            }
        }
    }

    /// One attempt: send, check the status, stream the answer's text to the client as it
    /// arrives, and collect its tool calls. Interruption drops the request (and with it the
    /// connection) at once.
    async fn attempt(
        &self,
        model: &str,
        body: Bytes,
        sink: TextSink,
        driver: &mut TurnDriver,
    ) -> Result<Reply, AttemptError> {
        let endpoint = self.endpoint();
        let url = format!("{}/{endpoint}", self.provider.base_url);
        let key = self
            .provider
            .env_key
            .as_deref()
            .and_then(|name| std::env::var(name).ok())
            .filter(|key| !key.is_empty());
        let cwd = driver.cwd().to_owned();
        let exchange = transport::Exchange {
            url: &url,
            endpoint,
            body,
            key: key.as_deref(),
            cwd: Some(&cwd),
        };
        let idle = self.provider.stream_idle_timeout;
        let sending = async {
            match &self.cassette {
                Some(cassette) => cassette.send(&self.client, exchange).await,
                None => transport::send_live(&self.client, &exchange).await,
            }
        };
        let sent = driver
            .or_interrupted(tokio::time::timeout(idle, sending))
            .await
            .map_err(|_| AttemptError::Interrupted)?;
        let response = match sent {
            Err(_) => {
                return Err(AttemptError::retryable(format!(
                    "no response from {url} within {}",
                    describe(idle)
                )));
            }
            Ok(Err(error)) => return Err(error),
            Ok(Ok(response)) => response,
        };
        let status = response.status;
        if !status.is_success() {
            let headers = response.headers;
            let text = driver
                .or_interrupted(tokio::time::timeout(
                    idle,
                    transport::body_text(response.body),
                ))
                .await
                .map_err(|_| AttemptError::Interrupted)?
                .ok()
                .flatten()
                .unwrap_or_default();
            let context = RequestContext {
                provider: &self.provider.id,
                model,
                url: &url,
                env_key: self.provider.env_key.as_deref(),
                key_present: key.is_some(),
            };
            return Err(retry::classify_status(status, &headers, &text, &context));
        }

        let mut events = response.body.eventsource();
        let mut decoder: Box<dyn StreamDecoder> = match self.provider.wire_api {
            WireApi::Chat => Box::<chat::ChatDecoder>::default(),
            WireApi::Responses => Box::<responses::ResponsesDecoder>::default(),
        };
        let mut message: Option<StreamingMessage> = None;
        let mut thinking = ReasoningStream::default();
        let mut patches = PatchStreams::default();
        let mut collected = String::new();
        let outcome = 'stream: loop {
            let next = match driver
                .or_interrupted(tokio::time::timeout(idle, events.next()))
                .await
            {
                Ok(next) => next,
                Err(_) => break Err(AttemptError::Interrupted),
            };
            let event = match next {
                Err(_) => {
                    break Err(AttemptError::retryable(format!(
                        "the stream stalled: no event for {}",
                        describe(idle)
                    )));
                }
                Ok(None) => {
                    break Err(AttemptError::retryable(
                        "the stream ended before the answer was complete",
                    ));
                }
                Ok(Some(Err(error))) => {
                    break Err(AttemptError::retryable(format!(
                        "the stream broke: {}",
                        error_chain(&error)
                    )));
                }
                Ok(Some(Ok(event))) => event,
            };
            let decoded = match decoder.decode(&event.event, &event.data) {
                Err(error) => break Err(error),
                Ok(decoded) => decoded,
            };
            for piece in decoded {
                match piece {
                    Decoded::Done => break 'stream Ok(()),
                    Decoded::Reasoning(event) => {
                        if thinking.handle(event, sink, driver).await.is_err() {
                            break 'stream Err(AttemptError::Interrupted);
                        }
                    }
                    Decoded::PatchInput {
                        call,
                        fragment,
                        raw,
                    } => patches.push(call, &fragment, raw, driver).await,
                    Decoded::Text(text) if sink == TextSink::Collected => {
                        collected.push_str(&text);
                    }
                    Decoded::Text(text) => {
                        // Text ends any reasoning still open: the answer follows it.
                        thinking.finish(driver).await;
                        let streaming = match &mut message {
                            Some(streaming) => streaming,
                            None => match driver.begin_agent_message().await {
                                Ok(started) => message.insert(started),
                                Err(_) => break 'stream Err(AttemptError::Interrupted),
                            },
                        };
                        if driver.agent_message_delta(streaming, &text).await.is_err() {
                            break 'stream Err(AttemptError::Interrupted);
                        }
                    }
                }
            }
        };
        // The connection goes first: an interrupted turn must not keep it open while the
        // message item completes.
        drop(events);
        thinking.finish(driver).await;
        let text = match &message {
            Some(message) => message.text().to_owned(),
            None => collected,
        };
        if let Some(message) = message {
            driver.complete_agent_message(message).await;
        }
        outcome?;
        patches.finish(driver).await;
        let usage = decoder.usage();
        let calls = decoder.finish();
        let patch_items = (0..calls.len())
            .filter_map(|position| Some((position, patches.item_id(position)?.to_owned())))
            .collect();
        Ok(Reply {
            text,
            reasoning: thinking.into_outputs(),
            usage,
            calls,
            patch_items,
        })
    }
}

#[async_trait]
impl Agent for OpenAiCompatibleAgent {
    async fn run_turn(
        &self,
        history: &[Turn],
        _input: Vec<UserInput>,
        driver: &mut TurnDriver,
    ) -> Result<(), AgentError> {
        let model = self.model_of(driver)?;
        // The input is already this turn's first item (and, when the turn hands over input
        // that arrived late, so is everything the turn did before).
        let mut entries = transcript::replay_history(history);
        transcript::replay_items(&driver.items(), &mut entries);
        let mut conversation = Conversation {
            instructions: transcript::instructions(driver.cwd()),
            entries,
            tools: transcript::function_tools(driver.tools(), driver.mcp_tools()),
            reasoning: driver.reasoning_settings(),
        };
        loop {
            let steered = driver.take_steered_input().await?;
            if !steered.is_empty() {
                conversation.entries.push(transcript::user_entry(&steered));
            }
            conversation.resolve_local_images().await;
            let reply = self
                .request(&model, &conversation, TextSink::Client, driver)
                .await?;
            if let Some(usage) = reply.usage {
                driver.report_token_usage(usage).await;
            }
            let calls = reply.calls.clone();
            let mut patch_items = reply.patch_items;
            conversation
                .entries
                .extend(reply.reasoning.into_iter().map(Entry::Reasoning));
            conversation.entries.push(Entry::Assistant {
                text: reply.text,
                calls: reply.calls,
            });
            if calls.is_empty() {
                let steered = driver.take_steered_input().await?;
                if steered.is_empty() {
                    return Ok(());
                }
                conversation.entries.push(transcript::user_entry(&steered));
                continue;
            }
            for (position, call) in calls.iter().enumerate() {
                let output = tools::run(call, patch_items.remove(&position), driver).await?;
                conversation.entries.push(Entry::ToolResult {
                    call_id: call.id.clone(),
                    output,
                });
            }
        }
    }

    async fn compact(
        &self,
        history: &[Turn],
        driver: &mut TurnDriver,
    ) -> Result<String, AgentError> {
        self.summarize(history, driver).await
    }
}

impl OpenAiCompatibleAgent {
    /// The model of `driver`'s turn, or the error that says how to choose one.
    fn model_of(&self, driver: &TurnDriver) -> Result<String, AgentError> {
        driver.model().map(str::to_owned).ok_or_else(|| {
            AgentError::Failed(format!(
                "no model selected for provider {id}: set model in config.toml, pass \
                 -c model=NAME, or give thread/start or turn/start a model",
                id = self.provider.id
            ))
        })
    }

    /// Asks the model for a summary of `history` (no tools offered, nothing streamed to the
    /// client): the compaction of `thread/compact/start`.
    async fn summarize(
        &self,
        history: &[Turn],
        driver: &mut TurnDriver,
    ) -> Result<String, AgentError> {
        let model = self.model_of(driver)?;
        let mut entries = transcript::replay_history(history);
        entries.push(Entry::User(vec![UserPart::Text(
            transcript::COMPACT_PROMPT.into(),
        )]));
        let conversation = Conversation {
            instructions: transcript::COMPACT_INSTRUCTIONS.to_owned(),
            entries,
            tools: Vec::new(),
            reasoning: driver.reasoning_settings(),
        };
        let reply = self
            .request(&model, &conversation, TextSink::Collected, driver)
            .await?;
        let summary = reply.text.trim();
        if summary.is_empty() {
            return Err(AgentError::Failed(format!(
                "model {model} of provider {} returned an empty summary; compact again or \
                 choose another model",
                self.provider.id
            )));
        }
        Ok(summary.to_owned())
    }
}

fn describe(duration: Duration) -> String {
    if duration.subsec_millis() == 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{} ms", duration.as_millis())
    }
}

/// An error and its sources, joined: reqwest's own message rarely says what failed.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// A request that got no response: retried (connect errors, resets), unless the request
/// itself could not be built.
fn send_error(url: &str, error: &reqwest::Error) -> AttemptError {
    if error.is_builder() {
        return AttemptError::Fatal(format!(
            "cannot build a request for {url}: {}; check the provider's base_url",
            error_chain(error)
        ));
    }
    let what = if error.is_connect() {
        "cannot connect to"
    } else {
        "no response from"
    };
    AttemptError::retryable(format!("{what} {url}: {}", error_chain(error)))
}

//! An MCP test server written with rmcp's server side, for the MCP client's tests (issue 30):
//! served over stdio by the `tandem-mcp-test-server` binary, and over streamable HTTP by the
//! same binary (`--http`) or in process ([`serve_http`]).
//!
//! Its tools: `echo {text}` answers the text (and `{"echo": text}` as structured content);
//! `slow {steps, delay_ms}` reports `steps` progress notifications ("step i/n"), one per
//! `delay_ms`, then answers `done`; `fail` answers a tool error; `huge {bytes}` answers a text
//! of that many bytes; `crash` exits the process mid-call (stdio and `--http` only: in process
//! it answers a tool error); `never_answer` never answers (it notes a cancellation in the
//! event log); `flood {count}` sends `count` progress notifications as fast as it can, then
//! answers `flooded`; `malformed {line}` writes `line` (by default a log line; broken JSON
//! such as `{"jsonrpc":` tests the client's check) to stdout (stdio only), then never answers;
//! `env {name}` answers a variable of its environment, or `unset`; `elicit {message, url}` asks
//! the client for `{answer: string}` (`elicitation/create`, a form), or with `url` to open that
//! URL (URL mode, elicitation id `test-elicitation`), and answers `accepted {"answer": ...}`
//! (`accepted null` for a URL), `declined` or `cancelled`, or a tool error when the request
//! itself failed or the client did not declare URL elicitation.
//! Resources: `test://greeting` (text) and the template `test://echo/{text}`.
//!
//! The event log (`--log FILE`, or [`TestMcpServer::with_log`]) gets one line per event worth
//! checking from outside: `called TOOL`, `cancelled TOOL`.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    Resource, ResourceContents, ResourceTemplate, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};

/// What `crash` does: exit the process (a real server), or answer an error (in process,
/// where exiting would end the test).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashMode {
    /// `std::process::exit(3)`.
    Exit,
    /// A tool error saying that crashing is not possible here.
    Refuse,
}

/// The test server's handler.
#[derive(Debug, Clone)]
pub struct TestMcpServer {
    crash: CrashMode,
    log: Option<Arc<PathBuf>>,
}

impl TestMcpServer {
    /// A server whose `crash` tool does as `crash` says.
    pub fn new(crash: CrashMode) -> Self {
        Self { crash, log: None }
    }

    /// Appends an event line to `path` for each call and cancellation.
    pub fn with_log(mut self, path: PathBuf) -> Self {
        self.log = Some(Arc::new(path));
        self
    }

    fn note(&self, event: &str) {
        if let Some(path) = &self.log
            && let Ok(mut file) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path.as_path())
        {
            let _ = writeln!(file, "{event}");
        }
    }

    /// The tools it offers.
    pub fn tools() -> Vec<Tool> {
        let schema = |properties: Value| -> Arc<rmcp::model::JsonObject> {
            let Value::Object(object) = json!({"type": "object", "properties": properties}) else {
                unreachable!("a json object literal")
            };
            Arc::new(object)
        };
        vec![
            Tool::new(
                "echo",
                "Answers its text",
                schema(json!({"text": {"type": "string"}})),
            ),
            Tool::new(
                "slow",
                "Reports progress, then answers",
                schema(json!({"steps": {"type": "integer"}, "delay_ms": {"type": "integer"}})),
            ),
            Tool::new("fail", "Answers a tool error", schema(json!({}))),
            Tool::new(
                "huge",
                "Answers a text of the given size",
                schema(json!({"bytes": {"type": "integer"}})),
            ),
            Tool::new("crash", "Exits the server mid-call", schema(json!({}))),
            Tool::new("never_answer", "Never answers", schema(json!({}))),
            Tool::new(
                "flood",
                "Sends many progress notifications",
                schema(json!({"count": {"type": "integer"}})),
            ),
            Tool::new(
                "env",
                "Answers the value of an environment variable, or `unset`",
                schema(json!({"name": {"type": "string"}})),
            ),
            Tool::new(
                "elicit",
                "Asks the user for an answer (an MCP elicitation), then answers what it got",
                schema(json!({"message": {"type": "string"}, "url": {"type": "string"}})),
            ),
            Tool::new(
                "malformed",
                "Writes a line that is not JSON-RPC (`line`, by default a log line)",
                schema(json!({"line": {"type": "string"}})),
            ),
        ]
    }

    async fn run_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let name = request.name.to_string();
        self.note(&format!("called {name}"));
        let arguments = request.arguments.unwrap_or_default();
        let number = |key: &str, default: u64| {
            arguments
                .get(key)
                .and_then(Value::as_u64)
                .unwrap_or(default)
        };
        let progress_token = context.meta.get_progress_token();
        match name.as_str() {
            "echo" => {
                let text = arguments
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let mut result = CallToolResult::success(vec![ContentBlock::text(text.clone())]);
                result.structured_content = Some(json!({"echo": text}));
                Ok(result)
            }
            "slow" | "flood" => {
                let (steps, delay) = if name == "slow" {
                    (
                        number("steps", 3),
                        Duration::from_millis(number("delay_ms", 50)),
                    )
                } else {
                    (number("count", 1000), Duration::ZERO)
                };
                for step in 1..=steps {
                    if !delay.is_zero() {
                        tokio::select! {
                            () = context.ct.cancelled() => {
                                self.note(&format!("cancelled {name}"));
                                return Err(ErrorData::internal_error("cancelled", None));
                            }
                            () = tokio::time::sleep(delay) => {}
                        }
                    }
                    if let Some(token) = &progress_token {
                        let mut progress =
                            ProgressNotificationParam::new(token.clone(), step as f64);
                        progress.total = Some(steps as f64);
                        progress.message = Some(format!("step {step}/{steps}"));
                        let _ = context.peer.notify_progress(progress).await;
                    }
                }
                let answer = if name == "slow" { "done" } else { "flooded" };
                Ok(CallToolResult::success(vec![ContentBlock::text(answer)]))
            }
            "env" => {
                let variable = arguments
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let value = std::env::var(variable).unwrap_or_else(|_| "unset".to_owned());
                Ok(CallToolResult::success(vec![ContentBlock::text(value)]))
            }
            "elicit" => {
                let message = arguments
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("What is your answer?");
                let url = arguments.get("url").and_then(Value::as_str);
                // As the protocol asks of a server: URL mode only to a client that said it
                // takes it.
                let takes_urls = context.peer.peer_info().is_some_and(|info| {
                    info.capabilities
                        .elicitation
                        .as_ref()
                        .is_some_and(|elicitation| elicitation.url.is_some())
                });
                if url.is_some() && !takes_urls {
                    return Ok(CallToolResult::error(vec![ContentBlock::text(
                        "the client does not take URL elicitations",
                    )]));
                }
                let request = match url {
                    Some(url) => json!({
                        "mode": "url",
                        "message": message,
                        "url": url,
                        "elicitationId": "test-elicitation",
                    }),
                    None => json!({
                        "mode": "form",
                        "message": message,
                        "requestedSchema": {"type": "object",
                                            "properties": {"answer": {"type": "string"}},
                                            "required": ["answer"]},
                    }),
                };
                let request: rmcp::model::ElicitRequestParams = serde_json::from_value(request)
                    .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
                let text = match context.peer.create_elicitation(request).await {
                    Ok(result) => match result.action {
                        rmcp::model::ElicitationAction::Accept => {
                            format!("accepted {}", result.content.unwrap_or(Value::Null))
                        }
                        rmcp::model::ElicitationAction::Decline => "declined".to_owned(),
                        rmcp::model::ElicitationAction::Cancel => "cancelled".to_owned(),
                        other => format!("answered {other:?}"),
                    },
                    Err(error) => {
                        return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                            "elicitation failed: {error}"
                        ))]));
                    }
                };
                Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
            }
            "fail" => Ok(CallToolResult::error(vec![ContentBlock::text(
                "it failed, as asked",
            )])),
            "huge" => {
                let bytes = usize::try_from(number("bytes", 1024 * 1024)).unwrap_or(usize::MAX);
                Ok(CallToolResult::success(vec![ContentBlock::text(
                    "x".repeat(bytes),
                )]))
            }
            "crash" => match self.crash {
                CrashMode::Exit => std::process::exit(3),
                CrashMode::Refuse => Ok(CallToolResult::error(vec![ContentBlock::text(
                    "this server runs in process and cannot crash",
                )])),
            },
            "never_answer" | "malformed" => {
                if name == "malformed" {
                    let line = arguments
                        .get("line")
                        .and_then(Value::as_str)
                        .unwrap_or("this is not json-rpc");
                    let mut stdout = std::io::stdout();
                    let _ = stdout.write_all(format!("{line}\n").as_bytes());
                    let _ = stdout.flush();
                }
                context.ct.cancelled().await;
                self.note(&format!("cancelled {name}"));
                Err(ErrorData::internal_error("cancelled", None))
            }
            other => Err(ErrorData::invalid_params(
                format!("no tool named {other}"),
                None,
            )),
        }
    }
}

impl rmcp::ServerHandler for TestMcpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(rmcp::model::Implementation::new(
            "tandem-mcp-test-server",
            env!("CARGO_PKG_VERSION"),
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(Self::tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.run_tool(request, context)
            .await
            .map(CallToolResponse::Complete)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let mut greeting = Resource::new("test://greeting", "greeting");
        greeting.mime_type = Some("text/plain".to_owned());
        Ok(ListResourcesResult::with_all_items(vec![greeting]))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new("test://echo/{text}", "echo"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let text = if request.uri == "test://greeting" {
            "hello from the test server".to_owned()
        } else if let Some(text) = request.uri.strip_prefix("test://echo/") {
            text.to_owned()
        } else {
            return Err(ErrorData::resource_not_found(
                format!("no resource {}", request.uri),
                None,
            ));
        };
        Ok(ReadResourceResult::new(vec![ResourceContents::text(text, request.uri)]).into())
    }
}

/// Serves `server` over this process's stdin and stdout until the client goes.
pub async fn serve_stdio(server: TestMcpServer) -> std::io::Result<()> {
    use rmcp::ServiceExt as _;
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(std::io::Error::other)?;
    let _ = running.waiting().await;
    Ok(())
}

/// A streamable HTTP test server on a loopback port; stops when dropped.
#[derive(Debug)]
pub struct HttpMcpServer {
    /// The MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    stop: tokio_util::sync::CancellationToken,
}

impl Drop for HttpMcpServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Serves `server` over streamable HTTP on `127.0.0.1:port` (0: any free port).
pub async fn serve_http(server: TestMcpServer, port: u16) -> std::io::Result<HttpMcpServer> {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    };
    let stop = tokio_util::sync::CancellationToken::new();
    let mut config = StreamableHttpServerConfig::default();
    config.cancellation_token = stop.child_token();
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    let shutdown = stop.clone();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(async move { shutdown.cancelled().await })
            .await;
    });
    Ok(HttpMcpServer { url, stop })
}

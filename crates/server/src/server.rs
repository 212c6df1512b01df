//! [`TandemServer`]: the reference [`MessageProcessor`]. It owns the connection-level glue
//! between the host and the host-independent [`crate::process`] machinery: one
//! [`ProcessManager`] per connection, whose events it delivers through the host's outgoing
//! sender, and whose processes die with the connection or the host. Thread, turn and
//! `config/read` requests go to the thread service (`crate::threads`), which spawns them;
//! `fs/*` requests to the file service (`fs`), which runs each connection's in order and ends
//! its watches when it closes.
//!
//! The processor task must stay free to answer `process/kill` while a client is not reading
//! events (docs/protocol.md section 8), so nothing here awaits anything on that task that waits on
//! the client: stdin writes and ordinary (non reply-lane) replies run on tasks of their own.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use tandem_host::{
    ConnectionId, ConnectionRequestId, ConnectionSessionState, MessageProcessor,
    OutgoingMessageSender, RequestContext,
};
use tandem_protocol::{
    ClientRequest, EmptyResponse, InitializeParams, InitializeResponse, JSONRPCErrorError,
    ProcessSpawnParams, ProcessWriteStdinParams, ServerInfo, UPSTREAM_PROTOCOL_VERSION,
};
use tokio::sync::oneshot;
use tokio::task::JoinSet;

use crate::config::ServerConfig;
use crate::options::ServerOptions;
use crate::process::{ProcessManager, StdinWrite};
use crate::threads::ThreadService;

mod command_exec;
// fs29: the `fs/*` API.
mod fs;
// search29: `fuzzyFileSearch`.
pub mod fuzzy_search;
// mcp30: MCP servers.
pub mod mcp;
mod process_attach;
mod process_session;

use process_session::ProcessSession;

pub use fs::{DEBOUNCE as FS_WATCH_DEBOUNCE, FsError, MAX_CHANGED_PATHS as FS_MAX_CHANGED_PATHS};

/// The server name reported in `serverInfo` and `userAgent`.
pub const SERVER_NAME: &str = "tandem";

/// Tandem's own version (defined at the crate root, which every module may use).
pub use crate::SERVER_VERSION;

/// The reference Tandem server: processes (docs/protocol.md section 8), threads and turns
/// (sections 4 to 7 and 9) and `config/read`. Every protocol method is implemented.
///
/// ```no_run
/// use std::sync::Arc;
/// use tandem_host::MessageProcessor;
/// use tandem_host::in_process::{self, InProcessStartArgs};
/// use tandem_protocol::{ClientInfo, InitializeCapabilities, InitializeParams};
/// use tandem_server::{ServerOptions, TandemServer};
///
/// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
/// let options = ServerOptions::from_env()?;
/// let initialize = InitializeParams {
///     client_info: ClientInfo { name: "docs".into(), title: None, version: "1".into() },
///     capabilities: Some(InitializeCapabilities {
///         experimental_api: true,
///         opt_out_notification_methods: None,
///     }),
/// };
/// let mut handle = in_process::start(InProcessStartArgs::new(
///     |outgoing| Arc::new(TandemServer::new(outgoing, options)) as Arc<dyn MessageProcessor>,
///     initialize,
/// ))
/// .await?;
/// handle.shutdown().await?;
/// # Ok(())
/// # }
/// ```
pub struct TandemServer {
    outgoing: OutgoingMessageSender,
    options: ServerOptions,
    connections: Mutex<HashMap<ConnectionId, Arc<ConnectionProcesses>>>,
    /// procre: process sessions of closed connections within their grace, by token.
    detached: Arc<Mutex<HashMap<String, Arc<ProcessSession>>>>,
    threads: Arc<ThreadService>,
    /// fs29: the `fs/*` requests and watches of every connection.
    fs: fs::FsService,
    /// search29: the `fuzzyFileSearch` requests of every connection.
    search: fuzzy_search::FuzzySearchService,
    /// mcp30: the configured MCP servers, started in the background with the server.
    mcp: mcp::McpService,
}

impl std::fmt::Debug for TandemServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TandemServer")
            .field("options", &self.options)
            .field("connections", &self.lock().keys().collect::<Vec<_>>())
            .finish()
    }
}

/// The processes of one connection and what their requests need.
struct ConnectionProcesses {
    /// The `process/spawn` processes: a session that may outlive the connection and be
    /// taken over by another (`process/resume`).
    session: Mutex<Arc<ProcessSession>>,
    /// The `command/exec` children: a table of their own, so that a `processId` never
    /// collides with a `process/spawn` handle.
    exec: ProcessManager,
    exec_stdin_order: Mutex<StdinOrder>,
}

/// Keeps `process/writeStdin` requests for one handle in arrival order although each runs on a
/// task of its own: every write waits for the one queued before it for the same handle.
#[derive(Default)]
struct StdinOrder {
    next_ticket: u64,
    /// Per handle, the ticket and completion signal of its most recently queued write.
    tails: HashMap<String, (u64, oneshot::Receiver<()>)>,
}

/// The configuration the MCP servers start from: without any server when the options say
/// not to start them (`tandem exec`).
fn mcp_config(options: &ServerOptions) -> std::borrow::Cow<'_, ServerConfig> {
    if options.start_mcp_servers {
        std::borrow::Cow::Borrowed(&options.config)
    } else {
        let mut config = options.config.clone();
        config.mcp_servers.clear();
        std::borrow::Cow::Owned(config)
    }
}

impl TandemServer {
    /// A server that emits through `outgoing` (the sender the host hands its processor
    /// factory).
    pub fn new(outgoing: OutgoingMessageSender, options: ServerOptions) -> Self {
        if let Some(helper) = &options.helper_program {
            crate::helper::enable_watchdog(helper);
        }
        let mcp = mcp::McpService::start(outgoing.clone(), &mcp_config(&options));
        let threads = Arc::new(ThreadService::new(
            outgoing.clone(),
            options.config.clone(),
            options.store.clone(),
            Arc::clone(&options.agent),
            options.sandboxing(),
            crate::turn::RUNNER,
            mcp.manager().clone(),
        ));
        Self {
            mcp,
            fs: fs::FsService::new(outgoing.clone()),
            search: fuzzy_search::FuzzySearchService::new(outgoing.clone()),
            outgoing,
            options,
            connections: Mutex::new(HashMap::new()),
            detached: Arc::new(Mutex::new(HashMap::new())),
            threads,
        }
    }

    /// The thread service, for the threads module's own tests.
    #[cfg(test)]
    pub(crate) fn thread_service(&self) -> &Arc<ThreadService> {
        &self.threads
    }

    /// The options the server was built with.
    pub fn options(&self) -> &ServerOptions {
        &self.options
    }

    /// The server's MCP servers (issue 30): their states, tools and calls.
    pub fn mcp(&self) -> &tandem_mcp::McpManager {
        self.mcp.manager()
    }

    /// How many `fs/watch` watches `connection` has running (0 once it closed).
    pub fn fs_watch_count(&self, connection: ConnectionId) -> usize {
        self.fs.watch_count(connection)
    }

    /// How many `fs/watch` watches are running, over every connection.
    pub fn fs_watch_total(&self) -> usize {
        self.fs.watch_total()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<ConnectionId, Arc<ConnectionProcesses>>> {
        // Every update is a single insert or remove, so a panic elsewhere cannot leave the map
        // inconsistent: keep serving instead of propagating the poison.
        self.connections
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The processes of `connection`, created on its first process request.
    fn processes(&self, connection: ConnectionId) -> Arc<ConnectionProcesses> {
        let mut connections = self.lock();
        let entry = connections.entry(connection).or_insert_with(|| {
            Arc::new(ConnectionProcesses {
                // The effective value: a config write applies it to connections from then on.
                session: Mutex::new(ProcessSession::new(
                    self.outgoing.clone(),
                    ProcessManager::new()
                        .with_kept_output_max(self.threads.config().process_output_max_bytes),
                )),
                exec: ProcessManager::new()
                    .with_kept_output_max(self.options.config.process_output_max_bytes),
                exec_stdin_order: Mutex::new(StdinOrder::default()),
            })
        });
        Arc::clone(entry)
    }

    async fn reply(&self, id: ConnectionRequestId, result: Result<(), JSONRPCErrorError>) {
        let answer = result.map(|()| EmptyResponse {});
        self.outgoing.send_result(id, answer).await;
    }

    async fn spawn_process(&self, params: ProcessSpawnParams, context: RequestContext) {
        let connection = context.id.connection_id;
        let session = self.processes(connection).session();
        let sink = Arc::clone(&session.sink);
        let handle = params.process_handle.clone();
        match session.manager.spawn(params, sink).await {
            Ok(spawned) => {
                // The process's notifications are a stream of their own, numbered and kept
                // for a resume; attached before any of them can be sent.
                if let Some(previous) = session.forget_previous(&handle) {
                    self.outgoing.close_stream(&previous).await;
                }
                let stream = session.stream(&handle);
                match self.outgoing.attach_stream(&stream, connection, None).await {
                    Some(attachment) => session.started(&handle, attachment.cursor),
                    // The host is stopping: the process dies with it.
                    None => return,
                }
                // The reply takes the reply lane (the host marked the id), which the runtime
                // drains first; output is released only after it, as section 4 requires.
                self.outgoing
                    .send_response(context.id, EmptyResponse {})
                    .await;
                spawned.start_streaming();
            }
            Err(error) => self.outgoing.send_error(context.id, error).await,
        }
    }

    /// Queues the write behind earlier writes to the same handle and answers when it is done,
    /// on a task of its own: a child that does not read its stdin can hold a write forever.
    fn write_stdin(&self, params: ProcessWriteStdinParams, context: RequestContext) {
        let handle = params.process_handle.clone();
        let write = self
            .processes(context.id.connection_id)
            .session()
            .manager
            .stdin_write(params);
        self.queue_stdin_write(StdinTable::Process, handle, context, write);
    }

    /// Does `write` once every earlier write to `handle` of `table` is done, on a task of its
    /// own, and answers `context` with its result. `write` found its process when its request
    /// was read (or failed to), so a later request cannot overtake it in that.
    fn queue_stdin_write(
        &self,
        table: StdinTable,
        handle: String,
        context: RequestContext,
        write: Result<StdinWrite, JSONRPCErrorError>,
    ) {
        let processes = self.processes(context.id.connection_id);
        let (done, done_signal) = oneshot::channel::<()>();
        let (ticket, previous) = processes.with_stdin_order(table, |order| {
            let ticket = order.next_ticket;
            order.next_ticket += 1;
            let previous = order.tails.insert(handle.clone(), (ticket, done_signal));
            (ticket, previous.map(|(_, signal)| signal))
        });
        let outgoing = self.outgoing.clone();
        tokio::spawn(async move {
            if let Some(previous) = previous {
                // Resolves when the previous write finished or its task went away.
                let _ = previous.await;
            }
            let result = match write {
                Ok(write) => write.write().await,
                Err(error) => Err(error),
            };
            drop(done);
            processes.forget_stdin_tail(table, &handle, ticket);
            let answer = result.map(|()| EmptyResponse {});
            outgoing.send_result(context.id, answer).await;
        });
    }

    /// Answers -32601 for a method this server does not know. The answer
    /// takes the ordinary lane, which waits while a guaranteed notification is parked, so it
    /// is sent from a task of its own: the processor must still reach a later `process/kill`.
    fn method_not_found(&self, method: &str, context: RequestContext) {
        let outgoing = self.outgoing.clone();
        let error = JSONRPCErrorError::method_not_found(method);
        tokio::spawn(async move { outgoing.send_error(context.id, error).await });
    }
}

/// Which handle table a stdin write is ordered in.
#[derive(Debug, Clone, Copy)]
enum StdinTable {
    /// `process/writeStdin`.
    Process,
    /// `command/exec/write`.
    Exec,
}

impl ConnectionProcesses {
    /// The connection's current process session.
    fn session(&self) -> Arc<ProcessSession> {
        Arc::clone(
            &self
                .session
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        )
    }

    /// Runs `f` on the stdin order of `table`.
    fn with_stdin_order<T>(&self, table: StdinTable, f: impl FnOnce(&mut StdinOrder) -> T) -> T {
        let session;
        let order = match table {
            StdinTable::Process => {
                session = self.session();
                &session.stdin_order
            }
            StdinTable::Exec => &self.exec_stdin_order,
        };
        f(&mut order
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()))
    }

    /// Drops the ordering entry of `handle` if `ticket` is still its last write, so that the
    /// table does not grow with every handle ever written to.
    fn forget_stdin_tail(&self, table: StdinTable, handle: &str, ticket: u64) {
        self.with_stdin_order(table, |order| {
            if order
                .tails
                .get(handle)
                .is_some_and(|(last, _)| *last == ticket)
            {
                order.tails.remove(handle);
            }
        });
    }
}

#[async_trait]
impl MessageProcessor for TandemServer {
    async fn initialize(
        &self,
        connection: ConnectionId,
        params: &InitializeParams,
        _session: &ConnectionSessionState,
    ) -> Result<InitializeResponse, JSONRPCErrorError> {
        // The home was created when the configuration was loaded.
        let home = &self.options.config.tandem_home;
        let client = &params.client_info;
        tracing::debug!(%connection, client = %client.name, "initialize");
        // Only for clients that may use `process/*` (experimental): the result stays the
        // reference's for everyone else.
        let experimental = params
            .capabilities
            .as_ref()
            .is_some_and(|capabilities| capabilities.experimental_api);
        let process_session = experimental.then(|| self.processes(connection).session().token());
        Ok(InitializeResponse {
            // `<name>/<version>` first: clients without `serverInfo` split the version from it.
            user_agent: format!(
                "{SERVER_NAME}/{UPSTREAM_PROTOCOL_VERSION} ({SERVER_NAME} {SERVER_VERSION}; {} {}; {}) {}/{}",
                std::env::consts::OS,
                std::env::consts::ARCH,
                std::env::consts::FAMILY,
                client.name,
                client.version,
            ),
            platform_family: std::env::consts::FAMILY.to_owned(),
            platform_os: std::env::consts::OS.to_owned(),
            tandem_home: home.display().to_string(),
            codex_home: home.display().to_string(),
            server_info: ServerInfo {
                name: SERVER_NAME.to_owned(),
                version: UPSTREAM_PROTOCOL_VERSION.to_owned(),
            },
            tandem_version: SERVER_VERSION.to_owned(),
            process_session,
        })
    }

    async fn process_request(&self, request: ClientRequest, context: RequestContext) {
        if fs::is_fs_request(&request) {
            // The effective configuration: a config write turns the API off from then on.
            let config = self.threads.config();
            let settings = fs::FsSettings {
                enabled: config.fs_api,
                read_max_bytes: config.fs_read_max_bytes,
            };
            self.fs.handle(request, context, settings);
            return;
        }
        match request {
            ClientRequest::McpServerStatusList { params, .. } => {
                let request = mcp::McpRequest::StatusList(params);
                self.mcp.handle(request, context, Arc::clone(&self.threads));
            }
            ClientRequest::McpServerToolCall { params, .. } => {
                let request = mcp::McpRequest::ToolCall(params);
                self.mcp.handle(request, context, Arc::clone(&self.threads));
            }
            ClientRequest::McpServerResourceRead { params, .. } => {
                let request = mcp::McpRequest::ResourceRead(params);
                self.mcp.handle(request, context, Arc::clone(&self.threads));
            }
            ClientRequest::McpServerReload { .. } => {
                let request = mcp::McpRequest::Reload;
                self.mcp.handle(request, context, Arc::clone(&self.threads));
            }
            ClientRequest::FuzzyFileSearch { params, .. } => {
                // The effective configuration: a config write turns it off from then on.
                let enabled = self.threads.config().file_search_api;
                self.search.handle(params, context, enabled);
            }
            ClientRequest::ProcessSpawn { params, .. } => {
                self.spawn_process(params, context).await;
            }
            ClientRequest::ProcessWriteStdin { params, .. } => self.write_stdin(params, context),
            ClientRequest::ProcessKill { params, .. } => {
                let processes = self.processes(context.id.connection_id);
                let result = processes.session().manager.kill(params).await;
                self.reply(context.id, result).await;
            }
            ClientRequest::ProcessResizePty { params, .. } => {
                let processes = self.processes(context.id.connection_id);
                let result = processes.session().manager.resize_pty(params).await;
                self.reply(context.id, result).await;
            }
            ClientRequest::ProcessScreen { params, .. } => {
                let processes = self.processes(context.id.connection_id);
                let screen = processes.session().manager.screen(params).await;
                self.outgoing.send_result(context.id, screen).await;
            }
            ClientRequest::ProcessResume { params, .. } => self.resume_process(params, context),
            // attach19:
            ClientRequest::ProcessShare { params, .. } => {
                self.share_process(params, context).await;
            }
            ClientRequest::ProcessAttach { params, .. } => self.attach_process(params, context),
            ClientRequest::CommandExec { params, .. } => self.command_exec(params, context),
            ClientRequest::CommandExecWrite { params, .. } => {
                self.command_exec_write(params, context);
            }
            ClientRequest::CommandExecTerminate { params, .. } => {
                let processes = self.processes(context.id.connection_id);
                let result = processes.exec.exec_terminate(params);
                self.reply(context.id, result).await;
            }
            ClientRequest::CommandExecResize { params, .. } => {
                let processes = self.processes(context.id.connection_id);
                let result = processes.exec.exec_resize(params);
                self.reply(context.id, result).await;
            }
            other => {
                // Custom methods never get here (the host answers them, since this server
                // claims none), so whatever the thread service declines is unknown.
                if let Some((other, context)) = self.threads.handle(other, context) {
                    self.method_not_found(other.method(), context);
                }
            }
        }
    }

    async fn connection_closed(&self, connection: ConnectionId) {
        self.threads.connection_closed(connection);
        self.fs.connection_closed(connection);
        self.search.connection_closed(connection);
        let processes = self.lock().remove(&connection);
        if let Some(processes) = processes {
            tracing::debug!(%connection, "connection closed; killing its command/exec processes");
            processes.exec.kill_all().await;
            self.detach_session(processes.session()).await;
        }
    }

    async fn shutdown(&self) {
        // Interrupt every turn first: each then stores its interrupted state and queues its
        // turn/completed, which is what is waited for below before the store is checkpointed.
        let turns = self.threads.shutdown();
        self.fs.shutdown();
        self.mcp.shutdown();
        let all: Vec<Arc<ConnectionProcesses>> = self.lock().drain().map(|(_, p)| p).collect();
        let detached: Vec<Arc<ProcessSession>> = self
            .detached
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .drain()
            .map(|(_, session)| session)
            .collect();
        // Concurrently, so that every connection's processes and every turn's commands are
        // signalled at once and the reap waits overlap within the host's shutdown stage.
        let mut kills = JoinSet::new();
        for processes in all {
            let exec = processes.exec.clone();
            let session = processes.session();
            let outgoing = self.outgoing.clone();
            kills.spawn(async move { session.end(&outgoing).await });
            kills.spawn(async move { exec.kill_all().await });
        }
        for session in detached {
            let outgoing = self.outgoing.clone();
            kills.spawn(async move { session.end(&outgoing).await });
        }
        for (commands, ended) in turns {
            kills.spawn(async move { commands.kill_all().await });
            kills.spawn(async move { ended.cancelled().await });
        }
        while kills.join_next().await.is_some() {}
        // Every turn recorded its end: the writer leases go back, so that another server can
        // take the threads at once rather than after the TTL (docs/scaling.md).
        self.threads.release_all_leases().await;
        // Only now is every turn's last write queued, so the checkpoint leaves the database
        // file complete on its own (docs/reliability.md).
        self.threads.checkpoint().await;
    }
}

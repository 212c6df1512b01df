//! `tandem exec`: runs one command through an in-process Tandem host and its `process/*` API,
//! relaying the command's output live and exiting with its exit code.
//!
//! This is a client of the protocol like any other: it starts `TandemServer` in-process, sends
//! `process/spawn` with streaming on, writes each `process/outputDelta` to its own stdout or
//! stderr as it arrives, and turns Ctrl-C into `process/kill`. Everything that can wait on the
//! user (signals, stdin, window resizes) runs on a task of its own, so the output relay never
//! stalls behind them. All of it runs on one thread (a current-thread runtime): a delta goes
//! from the command's pipe to tandem's stdout without crossing threads, and [`output`] makes
//! sure no write ever holds that thread.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use clap::Args;
use tandem_host::in_process::{self, InProcessServerEvent, InProcessStartArgs};
use tandem_host::{InProcessClientHandle, InProcessClientSender, MessageProcessor, RequestResult};
use tandem_protocol::error_codes::{INTERNAL_ERROR, OVERLOADED};
use tandem_protocol::{
    ClientInfo, ClientRequest, InitializeCapabilities, InitializeParams, JSONRPCErrorError,
    ProcessKillParams, ProcessOutputStream, ProcessResizePtyParams, ProcessSpawnParams,
    ProcessWriteStdinParams, RequestId, ServerNotification, SessionSource,
};
use tandem_server::TandemServer;
use tokio::io::AsyncReadExt as _;
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::task::JoinSet;

use crate::settings::{GlobalOptions, SettingsError};
use crate::terminal::{self, RawMode};

mod output;

use output::{OutputStream, Own};

/// The process handle of the one command `exec` runs.
const HANDLE: &str = "exec";

/// Most bytes forwarded from stdin in one `process/writeStdin`.
const STDIN_CHUNK_BYTES: usize = 64 * 1024;

/// Reported when tandem's own stdout or stderr was closed (as for a process killed by SIGPIPE).
const OUTPUT_CLOSED_EXIT_CODE: i32 = 141;

/// Reported when the command could not be started (as shells do for a missing command).
const SPAWN_FAILED_EXIT_CODE: i32 = 127;

/// Reported for a usage error found after parsing (clap uses the same code for its own).
const USAGE_EXIT_CODE: i32 = 2;

/// Reported when a second interrupt makes tandem give up waiting (128 + SIGINT).
const INTERRUPTED_EXIT_CODE: i32 = 130;

const AFTER_HELP: &str = "\
Input:
  Without --stdin or --tty the command's stdin is empty (/dev/null), so tandem never reads a
  terminal it was not asked to. With --stdin, tandem's stdin is forwarded until end of file;
  with --tty it is forwarded too (and a terminal on stdin is put in raw mode meanwhile).

Process group:
  The command runs in a process group of its own. Ctrl-C (or SIGTERM, SIGHUP) kills that whole
  group, and when tandem exits, however it exits (kill -9 included), a watchdog process kills
  whatever the command left running: its group, and every process that inherited tandem's
  TANDEM_SUPERVISOR variable, even one that left the group with setsid.
  Under --tty, Ctrl-C is a keystroke for the command's terminal: the command gets SIGINT from
  it and decides (most exit 130); SIGTERM and SIGHUP of tandem still kill the group (137).

Exit status:
  N     the command's exit code; 128+N if a signal N killed it
  124   --timeout expired (the command's process group was killed)
  137   Ctrl-C (without --tty), SIGTERM or SIGHUP killed the command
  141   tandem's own stdout or stderr was closed early, or could not be written (a full
        disk: the reason is on stderr); the command was killed
  127   the command could not be started
  130   a second interrupt: tandem exits without waiting for the command's last output
  2     usage error
  1     any other failure of tandem itself

Output cap:
  When --cap cuts a stream, tandem says so on stderr after the command exits.

Environment:
  TANDEM_HOME  the server's home directory, an absolute path (default: $XDG_DATA_HOME/tandem
               or $HOME/.local/share/tandem); exec reads its config.toml if there is one and
               never creates it
  TANDEM_LOG   a tracing filter (e.g. debug) for tandem's own logs on stderr; off by default

Example:
  tandem exec --timeout 60000 -- cargo test --workspace";

/// The options and command of `tandem exec` (its help text is on `Command::Exec`).
#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct ExecArgs {
    /// Run the command under a pseudo-terminal. Its output (stdout and stderr merged, as on a
    /// terminal) goes to tandem's stdout; tandem's stdin is forwarded to it, and the window size
    /// follows tandem's terminal.
    #[arg(long)]
    tty: bool,

    /// Forward tandem's stdin to the command until end of file (without this the command's
    /// stdin is empty).
    #[arg(long)]
    stdin: bool,

    /// Deliver at most BYTES of each output stream; the rest is read and discarded, so the
    /// command never blocks on it. `none` delivers everything.
    #[arg(long, value_name = "BYTES|none", default_value = "none", value_parser = parse_cap)]
    cap: Limit,

    /// Kill the command's process group after MS milliseconds and exit with 124. `none` waits
    /// for ever.
    #[arg(long, value_name = "MS|none", default_value = "none", value_parser = parse_timeout)]
    timeout: Limit,

    /// Run the command in DIR (default: the current directory).
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,

    /// The command and its arguments; put them after `--` if an argument starts with `-`.
    // No `allow_hyphen_values`: a mistyped tandem flag is a usage error, not a command.
    #[arg(value_name = "CMD", required = true, num_args = 1.., trailing_var_arg = true)]
    command: Vec<String>,
}

/// A limit given as a number or `none`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limit(Option<u64>);

fn parse_limit(text: &str, unit: &str) -> Result<Limit, String> {
    if text.eq_ignore_ascii_case("none") {
        return Ok(Limit(None));
    }
    text.parse::<u64>()
        .map(|value| Limit(Some(value)))
        .map_err(|_| format!("expected a whole number of {unit} or `none`, got `{text}`"))
}

fn parse_cap(text: &str) -> Result<Limit, String> {
    parse_limit(text, "bytes")
}

fn parse_timeout(text: &str) -> Result<Limit, String> {
    let limit = parse_limit(text, "milliseconds")?;
    // The protocol carries timeouts as i64.
    match limit.0 {
        Some(ms) if i64::try_from(ms).is_err() => {
            Err(format!("{ms} ms is too long; the most is {}", i64::MAX))
        }
        _ => Ok(limit),
    }
}

/// Why `tandem exec` could not run the command to completion.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ExecError {
    /// The server's home, config file or a `-c` override is invalid.
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// The working directory could not be determined.
    #[error("cannot determine the current directory: {0}; pass --cwd DIR")]
    CurrentDir(io::Error),
    /// `--cwd` does not name a directory.
    #[error("--cwd {}: not a directory", .0.display())]
    NotADirectory(PathBuf),
    /// The protocol carries paths as strings.
    #[error("--cwd {}: the path is not valid UTF-8; use a directory with a UTF-8 path", .0.display())]
    NonUtf8Cwd(PathBuf),
    /// The in-process host did not start.
    #[error("cannot start the in-process Tandem host: {0}")]
    StartHost(io::Error),
    /// `--tty` was asked for but the terminal could not be switched to raw mode.
    #[error("cannot put the terminal into raw mode: {0}; run without --tty")]
    Terminal(io::Error),
    /// The signal handlers that turn Ctrl-C into `process/kill` could not be installed.
    #[error("cannot listen for Ctrl-C, SIGTERM and SIGHUP: {0}")]
    Signals(io::Error),
    /// The server refused `process/spawn`; the command (its first word) is named.
    #[error("cannot run `{program}`: {}", error.message)]
    Spawn {
        /// The command's program.
        program: String,
        /// The server's answer.
        error: JSONRPCErrorError,
    },
    /// The host went away while the command was running.
    #[error("the in-process Tandem host stopped before the command exited")]
    HostStopped,
}

impl ExecError {
    fn exit_code(&self) -> i32 {
        match self {
            Self::NotADirectory(_) | Self::NonUtf8Cwd(_) => USAGE_EXIT_CODE,
            Self::Spawn { error, .. } if error.code == INTERNAL_ERROR => SPAWN_FAILED_EXIT_CODE,
            _ => 1,
        }
    }
}

/// Runs `tandem exec` and returns the process exit code; errors are reported on stderr.
pub(crate) async fn run(args: ExecArgs, global: GlobalOptions) -> i32 {
    global.warn_unknown_features();
    match execute(args, global).await {
        Ok(code) => code,
        Err(error) => {
            say_last(format!("tandem: {error}\n")).await;
            error.exit_code()
        }
    }
}

/// Writes tandem's last message to its stderr as the command's output is written (never
/// holding the one thread), waiting for a reader until a signal says to stop waiting: with the
/// handlers installed (a command failed to start) SIGTERM no longer ends tandem by itself, so
/// a blocking write to a stderr nobody reads would hang it.
async fn say_last(message: String) {
    let stderr = OutputStream::new(Own::Stderr);
    let write = stderr.write_all(vec![Bytes::from(message)]);
    match KillSignals::install() {
        Ok(mut signals) => {
            tokio::select! {
                _ = write => {}
                () = signals.recv() => {}
            }
        }
        Err(error) => {
            tracing::debug!(%error, "no signal handlers for the last message");
            let _ = write.await;
        }
    }
}

async fn execute(args: ExecArgs, global: GlobalOptions) -> Result<i32, ExecError> {
    let cwd = working_dir(args.cwd.as_deref())?;
    // The home is never used by exec (no thread requests): it is not created, so exec works
    // under a TANDEM_HOME it could not create. Provider settings do not matter here either.
    let (options, _provider_warnings) = global.load_options(false)?;
    // It runs one process: the configured MCP servers would be spawned for nothing.
    let options = options.without_mcp_servers();
    let mut start = InProcessStartArgs::new(
        move |outgoing| Arc::new(TandemServer::new(outgoing, options)) as Arc<dyn MessageProcessor>,
        initialize_params(),
    );
    start.session_source = SessionSource::Exec;
    let mut handle = in_process::start(start)
        .await
        .map_err(ExecError::StartHost)?;
    let outcome = drive(&mut handle, args, cwd).await;
    // Shutting down kills whatever the command left running (descendants holding no pipe).
    crate::shutdown_deadline::arm("exec", crate::shutdown_deadline::EXEC);
    if let Err(error) = handle.shutdown().await {
        tracing::warn!(%error, "in-process host did not shut down cleanly");
    }
    outcome
}

/// The absolute working directory for the command, checked to be a directory.
fn working_dir(requested: Option<&Path>) -> Result<String, ExecError> {
    let current = std::env::current_dir().map_err(ExecError::CurrentDir)?;
    let dir = match requested {
        Some(dir) => current.join(dir),
        None => current,
    };
    if !dir.is_dir() {
        return Err(ExecError::NotADirectory(dir));
    }
    dir.to_str()
        .map(str::to_owned)
        .ok_or(ExecError::NonUtf8Cwd(dir))
}

fn initialize_params() -> InitializeParams {
    InitializeParams {
        client_info: ClientInfo {
            name: "tandem-cli".into(),
            title: Some("tandem exec".into()),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        capabilities: Some(InitializeCapabilities {
            // The process API is experimental (docs/protocol.md section 4).
            experimental_api: true,
            opt_out_notification_methods: None,
        }),
    }
}

/// Spawns the command, starts the helper tasks and relays output until the command exits.
async fn drive(
    handle: &mut InProcessClientHandle,
    args: ExecArgs,
    cwd: String,
) -> Result<i32, ExecError> {
    let client = Client::new(handle.sender());
    let forward_stdin = args.stdin || args.tty;
    let program = args.command.first().cloned().unwrap_or_default();
    let params = ProcessSpawnParams {
        process_handle: HANDLE.into(),
        command: args.command,
        cwd: Some(cwd),
        tty: Some(args.tty),
        stream_stdin: Some(forward_stdin),
        stream_stdout_stderr: Some(true),
        // Explicit `null`s: no cap and no timeout unless asked (the protocol's defaults are
        // 1 MiB and 10 s, which would surprise a user of a command runner).
        output_bytes_cap: Some(args.cap.0),
        timeout_ms: Some(
            args.timeout
                .0
                .map(|ms| i64::try_from(ms).unwrap_or(i64::MAX)),
        ),
        env: None,
        size: args.tty.then(terminal::window_size).flatten(),
    };
    let signals = KillSignals::install().map_err(ExecError::Signals)?;
    // Raw mode first, so that no keystroke typed after the command starts is line-buffered.
    let raw_mode = if args.tty {
        RawMode::enable().map_err(ExecError::Terminal)?
    } else {
        None
    };
    client
        .call(|request_id| ClientRequest::ProcessSpawn { request_id, params })
        .await?
        .map_err(|error| ExecError::Spawn { program, error })?;

    // Dropping the set aborts these tasks once the command has exited.
    let mut helpers = JoinSet::new();
    // Until tandem returns: its closing notices wait for a reader of stderr, and a second
    // signal must still end that wait.
    let mut signal_watch = JoinSet::new();
    signal_watch.spawn(kill_on_signals(signals, client.clone()));
    if forward_stdin {
        helpers.spawn(relay_stdin(client.clone()));
    }
    if args.tty {
        helpers.spawn(relay_resizes(client.clone()));
    }
    let outcome = relay_output(handle, &client).await;
    drop(helpers);
    // Restore the terminal before anything else is printed.
    drop(raw_mode);
    let exit = outcome?;
    let mut notices = Vec::new();
    for (stream, capped) in [
        ("stdout", exit.stdout_capped),
        ("stderr", exit.stderr_capped),
    ] {
        if let (true, Some(cap)) = (capped, args.cap.0) {
            // On a terminal the notice would otherwise continue the command's last line.
            let newline = if exit.ended_line { "" } else { "\n" };
            notices.push(format!(
                "{newline}tandem: the command's {stream} was cut at --cap {cap} bytes; the rest \
                 was discarded\n"
            ));
        }
    }
    if exit.drain_timed_out {
        notices.push(
            "tandem: stopped reading the command's output 2 s after it exited: a process it \
             started in the background still holds its stdout or stderr open\n"
                .to_owned(),
        );
    }
    if !notices.is_empty() {
        // Written as the command's output is, never holding the thread (`output`).
        let batch = notices.into_iter().map(Bytes::from).collect();
        let _ = OutputStream::new(Own::Stderr).write_all(batch).await;
    }
    drop(signal_watch);
    Ok(exit.code)
}

/// How the relay ended.
struct Exit {
    code: i32,
    drain_timed_out: bool,
    /// Whether `--cap` cut each stream.
    stdout_capped: bool,
    stderr_capped: bool,
    /// Whether the last output written (either stream) ended a line.
    ended_line: bool,
}

/// Most deltas gathered into one vectored write (far below `IOV_MAX`).
const DELTAS_PER_WRITE: usize = 64;

/// Writes each delta to stdout or stderr as it arrives until `process/exited`, straight to the
/// descriptor ([`OutputStream`]): no buffer to flush, and the deltas of one stream already
/// waiting go in one vectored write. If tandem's own output is closed, the command is killed, as it would be by
/// SIGPIPE without tandem in between.
async fn relay_output(
    handle: &mut InProcessClientHandle,
    client: &Client,
) -> Result<Exit, ExecError> {
    // The writes never hold the runtime's thread (`output`): a stalled reader of our stdout
    // backpressures the command, and Ctrl-C, SIGTERM and `--timeout` still run.
    let stdout = OutputStream::new(Own::Stdout);
    let stderr = OutputStream::new(Own::Stderr);
    let mut output_closed = false;
    let mut ended_line = true;
    let mut batch: Vec<Bytes> = Vec::with_capacity(DELTAS_PER_WRITE);
    // An event taken while gathering a batch, handled next.
    let mut taken: Option<InProcessServerEvent> = None;
    loop {
        let event = match taken.take() {
            Some(event) => event,
            None => handle.next_event().await.ok_or(ExecError::HostStopped)?,
        };
        match event {
            InProcessServerEvent::ServerNotification(ServerNotification::ProcessOutputDelta(
                delta,
            )) if delta.process_handle == HANDLE => {
                if output_closed {
                    continue;
                }
                let stream = delta.stream;
                batch.push(delta.delta);
                // The deltas of the same stream that are already waiting join this write.
                while batch.len() < DELTAS_PER_WRITE {
                    match futures::FutureExt::now_or_never(handle.next_event()) {
                        Some(Some(InProcessServerEvent::ServerNotification(
                            ServerNotification::ProcessOutputDelta(more),
                        ))) if more.process_handle == HANDLE && more.stream == stream => {
                            batch.push(more.delta);
                        }
                        Some(Some(other)) => {
                            taken = Some(other);
                            break;
                        }
                        // Nothing waiting, or the host stopped (the next wait says so).
                        Some(None) | None => break,
                    }
                }
                if let Some(last) = batch.iter().rev().find_map(|bytes| bytes.last()) {
                    ended_line = *last == b'\n';
                }
                // The bytes are the chunks the pump read from the command's pipe.
                let output = match stream {
                    ProcessOutputStream::Stdout => &stdout,
                    ProcessOutputStream::Stderr => &stderr,
                };
                let written;
                (batch, written) = output.write_all(batch).await;
                if let Err(error) = written {
                    output_closed = true;
                    client.kill().await;
                    // A reader that went away is the SIGPIPE case: quiet, as without tandem. Any
                    // other failure (a full disk) is the user's to know, told through the same
                    // non-blocking stderr (a stalled reader of it must not hold the thread
                    // either); if stderr is the stream that failed, this fails too.
                    if error.kind() == io::ErrorKind::BrokenPipe {
                        tracing::debug!(%error, ?stream, "output closed; killed the command");
                    } else {
                        let name = match stream {
                            ProcessOutputStream::Stdout => "stdout",
                            ProcessOutputStream::Stderr => "stderr",
                        };
                        let message = format!(
                            "tandem: writing the command's {name} failed: {error}; the command \
                             was killed\n"
                        );
                        let _ = stderr.write_all(vec![Bytes::from(message)]).await;
                    }
                }
            }
            InProcessServerEvent::ServerNotification(ServerNotification::ProcessExited(exited))
                if exited.process_handle == HANDLE =>
            {
                let code = if output_closed {
                    OUTPUT_CLOSED_EXIT_CODE
                } else {
                    exited.exit_code
                };
                return Ok(Exit {
                    code,
                    drain_timed_out: exited.output_drain_timed_out,
                    stdout_capped: exited.stdout_cap_reached,
                    stderr_capped: exited.stderr_cap_reached,
                    ended_line,
                });
            }
            other => tracing::debug!(?other, "event ignored"),
        }
    }
}

/// The signals that kill the command: Ctrl-C (SIGINT), SIGTERM and SIGHUP.
struct KillSignals {
    interrupt: Signal,
    terminate: Signal,
    hangup: Signal,
}

impl KillSignals {
    /// Installs the handlers. Done before the command is spawned: from then on these signals
    /// no longer end tandem itself, which would leave the command running.
    fn install() -> io::Result<Self> {
        Ok(Self {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
            hangup: signal(SignalKind::hangup())?,
        })
    }

    async fn recv(&mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
            _ = self.hangup.recv() => {}
        }
    }
}

/// Kills the command on each of `signals`; its exit (137) then ends the relay. A second signal
/// exits at once, for a host that no longer answers.
async fn kill_on_signals(mut signals: KillSignals, client: Client) {
    signals.recv().await;
    client.kill().await;
    signals.recv().await;
    // Not a blocking write: a reader of stderr that stalled must not hold this exit.
    crate::stderr_without_waiting::say(
        "tandem: interrupted again; exiting without waiting for the command\n",
    );
    std::process::exit(INTERRUPTED_EXIT_CODE);
}

/// Forwards tandem's stdin to the command, one write at a time (each waits for the child to
/// take it), then closes the command's stdin at end of file.
async fn relay_stdin(client: Client) {
    let mut stdin = tokio::io::stdin();
    let mut buf = vec![0u8; STDIN_CHUNK_BYTES];
    loop {
        let n = match stdin.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => n,
            Err(error) => {
                tracing::warn!(%error, "reading stdin failed; closing the command's stdin");
                break;
            }
        };
        let delta = Bytes::copy_from_slice(&buf[..n]);
        let written = client
            .call(|request_id| ClientRequest::ProcessWriteStdin {
                request_id,
                params: ProcessWriteStdinParams {
                    process_handle: HANDLE.into(),
                    delta: Some(delta),
                    close_stdin: None,
                },
            })
            .await;
        match written {
            Ok(Ok(_)) => {}
            // The command exited or closed its stdin: nothing more to forward.
            Ok(Err(error)) => {
                tracing::debug!(message = %error.message, "stdin no longer accepted");
                return;
            }
            Err(_) => return,
        }
    }
    let _ = client
        .call(|request_id| ClientRequest::ProcessWriteStdin {
            request_id,
            params: ProcessWriteStdinParams {
                process_handle: HANDLE.into(),
                delta: None,
                close_stdin: Some(true),
            },
        })
        .await;
}

/// Applies tandem's window size to the command's terminal whenever it changes.
async fn relay_resizes(client: Client) {
    let Ok(mut resized) = signal(SignalKind::window_change()) else {
        tracing::warn!("cannot listen for window size changes");
        return;
    };
    while resized.recv().await.is_some() {
        let Some(size) = terminal::window_size() else {
            continue;
        };
        let _ = client
            .call(|request_id| ClientRequest::ProcessResizePty {
                request_id,
                params: ProcessResizePtyParams {
                    process_handle: HANDLE.into(),
                    size,
                },
            })
            .await;
    }
}

/// Sends requests to the host from any task, with fresh ids.
#[derive(Clone)]
struct Client {
    sender: InProcessClientSender,
    next_id: Arc<AtomicI64>,
}

impl Client {
    fn new(sender: InProcessClientSender) -> Self {
        Self {
            sender,
            next_id: Arc::new(AtomicI64::new(1)),
        }
    }

    /// Sends the request `build` makes with a fresh id, retrying while a host queue is full
    /// (both the client queue's `WouldBlock` and the processor queue's -32001 mean "later").
    async fn call(
        &self,
        build: impl FnOnce(RequestId) -> ClientRequest,
    ) -> Result<RequestResult, ExecError> {
        let request = build(RequestId::Integer(
            self.next_id.fetch_add(1, Ordering::Relaxed),
        ));
        loop {
            match self.sender.request(request.clone()).await {
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => return Err(ExecError::HostStopped),
                Ok(Err(error)) if error.code == OVERLOADED => {}
                Ok(result) => return Ok(result),
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// `process/kill`; a command that already exited makes this a no-op.
    async fn kill(&self) {
        let result = self
            .call(|request_id| ClientRequest::ProcessKill {
                request_id,
                params: ProcessKillParams {
                    process_handle: HANDLE.into(),
                },
            })
            .await;
        if let Ok(Err(error)) = result {
            tracing::debug!(message = %error.message, "kill refused");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_parse_numbers_and_none() {
        assert_eq!(parse_cap("none"), Ok(Limit(None)));
        assert_eq!(parse_cap("NONE"), Ok(Limit(None)));
        assert_eq!(parse_cap("1048576"), Ok(Limit(Some(1_048_576))));
        assert!(
            parse_cap("1M")
                .unwrap_err()
                .contains("whole number of bytes")
        );
        assert!(parse_cap("-1").is_err());
        assert_eq!(parse_timeout("100"), Ok(Limit(Some(100))));
        let too_long = (i64::MAX as u64 + 1).to_string();
        assert!(parse_timeout(&too_long).unwrap_err().contains("too long"));
    }

    #[test]
    fn spawn_failures_exit_127_and_other_errors_1() {
        let spawn = ExecError::Spawn {
            program: "nope".into(),
            error: JSONRPCErrorError::internal("failed to spawn process: x"),
        };
        assert_eq!(spawn.exit_code(), 127);
        assert_eq!(
            spawn.to_string(),
            "cannot run `nope`: failed to spawn process: x"
        );
        let refused = ExecError::Spawn {
            program: "x".into(),
            error: JSONRPCErrorError::invalid_request("bad"),
        };
        assert_eq!(refused.exit_code(), 1);
        assert_eq!(ExecError::NotADirectory("/x".into()).exit_code(), 2);
        assert_eq!(ExecError::HostStopped.exit_code(), 1);
    }
}

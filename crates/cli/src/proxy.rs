//! `tandem app-server proxy [--lines] [--sock PATH]`: a client's stdio bridged to a server's
//! unix socket (by default this home's daemon, started when none runs), so that every window
//! shares one server.
//!
//! - Raw (the reference's `codex app-server proxy`): bytes both ways, untouched; the client
//!   speaks the websocket protocol (an HTTP upgrade, then frames) over the proxy's stdio.
//! - `--lines`: the stdio transport's JSON lines on stdio, one websocket text frame per line on
//!   the socket, so a client written to launch `tandem app-server` as a child (every PyPI
//!   client) shares the daemon unchanged. It keeps the stdio transport's rules: a line over
//!   the size limit is answered with -32600 and skipped, and at the end of stdin the requests
//!   already read are answered (for at most 1 s) before the connection closes.
//!
//! In both forms, a server that goes away under a connected client (a daemon stopped,
//! restarted or killed) ends the proxy at once with exit status 1 and a message on stderr that
//! says so, rather than leaving the client on a silent pipe.

mod raw;

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use futures::{SinkExt as _, StreamExt as _};
use tandem_host::transport::unix_socket;
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::UnixStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use crate::daemon::{DaemonPaths, StartArgs, start_daemon};
use crate::settings::GlobalOptions;

/// How long, after the end of stdin, the requests already sent may take to be answered (the
/// stdio transport's rule).
const DRAIN_LIMIT: Duration = Duration::from_secs(1);

/// Options of `tandem app-server proxy`.
#[derive(Debug, Args)]
pub(crate) struct ProxyArgs {
    /// Speak the stdio transport's JSON lines on stdin/stdout instead of passing the
    /// websocket protocol's bytes through.
    #[arg(long)]
    lines: bool,
    /// The socket to connect to (default: this TANDEM_HOME's daemon, started if none runs).
    #[arg(long, value_name = "SOCKET_PATH")]
    sock: Option<PathBuf>,
    /// Largest line accepted on stdin with --lines, in bytes (the server's own limit, 64 MiB
    /// by default, still applies to what passes).
    #[arg(long, value_name = "BYTES", default_value_t = tandem_host::transport::stdio::DEFAULT_MAX_LINE_BYTES)]
    max_message_bytes: usize,
}

/// Why the proxy stopped; each message says what to do.
#[derive(Debug, thiserror::Error)]
enum ProxyError {
    #[error("{0}")]
    Daemon(#[from] crate::daemon::DaemonError),
    #[error("cannot connect to {socket}: {source} (is a server listening there?)")]
    Connect {
        socket: PathBuf,
        source: std::io::Error,
    },
    #[error("the websocket upgrade on {socket} failed: {reason}")]
    Upgrade { socket: PathBuf, reason: String },
    /// Stdin or stdout failed: every plain I/O error of the proxy is on its client's side (the
    /// socket's errors are [`ProxyError::ServerGone`] and [`ProxyError::Closed`]).
    #[error(
        "the client's side failed ({0}): the program that started the proxy closed its stdin or \
         stdout, or went away; nothing is wrong with the server"
    )]
    ClientGone(#[from] std::io::Error),
    #[error("the server closed the connection: {0}")]
    Closed(String),
    #[error(
        "the server at {socket} went away: {why}{}; start the client again (without --sock the \
         proxy starts a daemon when none runs)",
        unanswered.filter(|count| *count > 0).map(|count| format!(", with {count} request(s) unanswered")).unwrap_or_default()
    )]
    ServerGone {
        socket: PathBuf,
        why: String,
        /// Requests the line mode had sent and not seen answered.
        unanswered: Option<usize>,
    },
}

pub(crate) async fn run(args: ProxyArgs, global: GlobalOptions) -> i32 {
    match proxy(args, global).await {
        Ok(()) => 0,
        Err(error) => {
            eprintln!("tandem app-server proxy: {error}");
            1
        }
    }
}

async fn proxy(args: ProxyArgs, global: GlobalOptions) -> Result<(), ProxyError> {
    let (socket_path, stream) = connect(&args, &global).await?;
    if args.lines {
        lines(stream, &socket_path, args.max_message_bytes).await
    } else {
        raw::bridge(stream, &socket_path).await
    }
}

/// Connects to `--sock`, or to the home's daemon, starting it when nothing answers.
async fn connect(
    args: &ProxyArgs,
    global: &GlobalOptions,
) -> Result<(PathBuf, UnixStream), ProxyError> {
    let attempt = |path: PathBuf| async move {
        let address = unix_socket::connect_path(&path)?;
        UnixStream::connect(address).await
    };
    if let Some(path) = &args.sock {
        let stream = attempt(path.clone())
            .await
            .map_err(|source| ProxyError::Connect {
                socket: path.clone(),
                source,
            })?;
        return Ok((path.clone(), stream));
    }
    let paths = DaemonPaths::resolve(global)?;
    if let Ok(stream) = attempt(paths.socket.clone()).await {
        return Ok((paths.socket, stream));
    }
    start_daemon(&paths, global, &StartArgs::default()).await?;
    let stream = attempt(paths.socket.clone())
        .await
        .map_err(|source| ProxyError::Connect {
            socket: paths.socket.clone(),
            source,
        })?;
    Ok((paths.socket, stream))
}

/// The line mode: JSON lines on stdio, websocket text frames on the socket.
async fn lines(
    stream: UnixStream,
    socket_path: &std::path::Path,
    max_line_bytes: usize,
) -> Result<(), ProxyError> {
    let config = WebSocketConfig::default()
        .max_message_size(Some(max_line_bytes.max(1)))
        .max_frame_size(Some(max_line_bytes.max(1)));
    let (socket, _) =
        tokio_tungstenite::client_async_with_config("ws://localhost/", stream, Some(config))
            .await
            .map_err(|error| ProxyError::Upgrade {
                socket: socket_path.to_owned(),
                reason: error.to_string(),
            })?;
    let (mut sink, mut frames) = socket.split();
    // Requests sent and not yet answered, by id, for the drain at the end of stdin.
    let pending = std::sync::Arc::new(std::sync::Mutex::new(HashSet::<String>::new()));
    let (answers_tx, mut answers_rx) = tokio::sync::mpsc::channel::<String>(16);

    let writer_pending = pending.clone();
    let gone_pending = pending.clone();
    let gone = |why: String| ProxyError::ServerGone {
        socket: socket_path.to_owned(),
        why,
        unanswered: Some(gone_pending.lock().unwrap_or_else(|p| p.into_inner()).len()),
    };
    let to_stdout = async move {
        let mut stdout = tokio::io::stdout();
        loop {
            tokio::select! {
                frame = frames.next() => {
                    let text = match frame {
                        Some(Ok(Message::Text(text))) => text.to_string(),
                        Some(Ok(Message::Binary(bytes))) => String::from_utf8_lossy(&bytes).into_owned(),
                        // Before the end of stdin the client has not closed: whatever ends the
                        // connection here is the server going away (a daemon that shuts down
                        // says so with 1001). After it, the select below takes it as the end.
                        Some(Ok(Message::Close(frame))) => {
                            return Err(gone(raw::describe_close(frame.map(|frame| u16::from(frame.code)))));
                        }
                        Some(Ok(_)) => continue,
                        Some(Err(error)) if !ended_unclosed(&error) => {
                            return Err(gone(format!("the connection broke: {error}")));
                        }
                        Some(Err(_)) | None => return Err(gone(raw::UNCLOSED_END.to_owned())),
                    };
                    if let Some(id) = answered_id(&text) {
                        writer_pending.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
                    }
                    stdout.write_all(text.as_bytes()).await?;
                    stdout.write_all(b"\n").await?;
                    stdout.flush().await?;
                }
                Some(answer) = answers_rx.recv() => {
                    stdout.write_all(answer.as_bytes()).await?;
                    stdout.write_all(b"\n").await?;
                    stdout.flush().await?;
                }
            }
        }
    };

    let from_stdin = async move {
        let mut stdin = BufReader::new(tokio::io::stdin());
        let mut line = Vec::new();
        loop {
            line.clear();
            let read = (&mut stdin)
                .take(u64::try_from(max_line_bytes).unwrap_or(u64::MAX) + 1)
                .read_until(b'\n', &mut line)
                .await?;
            if read == 0 {
                break;
            }
            if !line.ends_with(b"\n") && line.len() > max_line_bytes {
                // Over the limit: answered as the stdio transport answers it, and the rest of
                // the line skipped.
                skip_line(&mut stdin).await?;
                let _ = answers_tx
                    .send(format!(
                        r#"{{"id":null,"error":{{"code":-32600,"message":"message too large: over {max_line_bytes} bytes"}}}}"#
                    ))
                    .await;
                continue;
            }
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end_matches(['\n', '\r']);
            if text.trim().is_empty() {
                continue;
            }
            if let Some(id) = request_id(text) {
                pending.lock().unwrap_or_else(|p| p.into_inner()).insert(id);
            }
            sink.send(Message::text(text.to_owned()))
                .await
                .map_err(|error| ProxyError::Closed(error.to_string()))?;
        }
        // The end of stdin: what was asked is answered (for at most DRAIN_LIMIT), then the
        // connection closes as a client's would.
        let drained = tokio::time::timeout(DRAIN_LIMIT, async {
            while !pending.lock().unwrap_or_else(|p| p.into_inner()).is_empty() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await;
        if drained.is_err() {
            tracing::info!("requests still unanswered {DRAIN_LIMIT:?} after the end of stdin");
        }
        let _ = sink.close().await;
        Ok::<(), ProxyError>(())
    };

    tokio::pin!(to_stdout);
    tokio::select! {
        written = &mut to_stdout => written,
        read = from_stdin => {
            read?;
            // The close handshake's answer ends the stream; bounded like the drain. Once the
            // client is done, a server that resets instead of answering the close (the
            // reference does) has lost nothing.
            match tokio::time::timeout(DRAIN_LIMIT, to_stdout).await {
                Ok(Err(ProxyError::Closed(reason) | ProxyError::ServerGone { why: reason, .. })) => {
                    tracing::debug!(%reason, "the server ended the connection after the client's end");
                    Ok(())
                }
                Ok(written) => written,
                Err(_) => Ok(()),
            }
        }
    }
}

/// Whether `error` is the end of a connection whose server sent no close frame.
fn ended_unclosed(error: &tokio_tungstenite::tungstenite::Error) -> bool {
    use tokio_tungstenite::tungstenite::Error;
    use tokio_tungstenite::tungstenite::error::ProtocolError;
    match error {
        Error::Protocol(ProtocolError::ResetWithoutClosingHandshake) => true,
        Error::Io(error) => matches!(
            error.kind(),
            std::io::ErrorKind::ConnectionReset
                | std::io::ErrorKind::BrokenPipe
                | std::io::ErrorKind::UnexpectedEof
        ),
        _ => false,
    }
}

/// Reads and drops the rest of a line.
async fn skip_line(stdin: &mut BufReader<tokio::io::Stdin>) -> std::io::Result<()> {
    loop {
        let buffer = stdin.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(());
        }
        match buffer.iter().position(|byte| *byte == b'\n') {
            Some(end) => {
                stdin.consume(end + 1);
                return Ok(());
            }
            None => {
                let all = buffer.len();
                stdin.consume(all);
            }
        }
    }
}

/// The fields of a message that tell a request from an answer.
#[derive(serde::Deserialize)]
struct Envelope {
    id: Option<serde_json::Value>,
    method: Option<serde::de::IgnoredAny>,
    result: Option<serde::de::IgnoredAny>,
    error: Option<serde::de::IgnoredAny>,
}

/// The id of a client request (a message with `method` and `id`).
fn request_id(text: &str) -> Option<String> {
    let envelope: Envelope = serde_json::from_str(text).ok()?;
    envelope.method.as_ref()?;
    envelope.id.map(|id| id.to_string())
}

/// The id a server answer (a message with `id` and `result` or `error`, no `method`) answers.
fn answered_id(text: &str) -> Option<String> {
    let envelope: Envelope = serde_json::from_str(text).ok()?;
    if envelope.method.is_some() || (envelope.result.is_none() && envelope.error.is_none()) {
        return None;
    }
    envelope.id.map(|id| id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_answers_are_told_apart() {
        assert_eq!(
            request_id(r#"{"id":7,"method":"thread/start","params":{}}"#),
            Some("7".into())
        );
        assert_eq!(request_id(r#"{"method":"initialized"}"#), None);
        assert_eq!(request_id(r#"{"id":7,"result":{}}"#), None);
        assert_eq!(
            answered_id(r#"{"id":"a","result":{}}"#),
            Some("\"a\"".into())
        );
        assert_eq!(
            answered_id(r#"{"id":3,"error":{"code":-32600,"message":"x"}}"#),
            Some("3".into())
        );
        // A server request carries an id and a method: not an answer.
        assert_eq!(
            answered_id(r#"{"id":0,"method":"item/commandExecution/requestApproval"}"#),
            None
        );
    }
}

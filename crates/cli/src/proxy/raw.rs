//! The raw proxy's bridge: the websocket protocol's bytes both ways, untouched, while each
//! direction is watched for a close frame.
//!
//! A byte bridge alone cannot tell a client's ordinary close (its close frame, the server's
//! echo, the end of the socket) from a server that went away under a connected client (a
//! daemon stopped, restarted or killed): both end the socket. The reference's proxy keeps
//! running in the second case until its client writes into the dead socket. Watching the frame
//! headers (never the payloads, which pass in bulk) tells them apart, so the user reads on
//! stderr that the server went away, and the client sees its stdout end at once.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use tandem_host::transport::close_watch::CloseWatch;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::UnixStream;

use super::{DRAIN_LIMIT, ProxyError};

/// Why a connection that ended with no close frame ended, for the user.
pub(super) const UNCLOSED_END: &str =
    "the connection ended without a close frame: it stopped or was killed";
/// Bytes copied per read, each way.
const CHUNK: usize = 64 * 1024;

/// Bridges stdio and `stream` until the client is done, or the server goes away without the
/// client having closed (then [`ProxyError::ServerGone`]).
pub(super) async fn bridge(stream: UnixStream, socket: &Path) -> Result<(), ProxyError> {
    let (mut from_server, mut to_server) = stream.into_split();
    let client_closed = AtomicBool::new(false);

    let to_stdout = async {
        let mut stdout = tokio::io::stdout();
        let mut buffer = vec![0u8; CHUNK];
        let mut watch = CloseWatch::default();
        loop {
            let read = match from_server.read(&mut buffer).await {
                Ok(0) => break,
                Ok(read) => read,
                Err(error) => return Err(ServerSide::Broken(error.to_string())),
            };
            watch.feed(&buffer[..read]);
            stdout
                .write_all(&buffer[..read])
                .await
                .map_err(ServerSide::Stdout)?;
            stdout.flush().await.map_err(ServerSide::Stdout)?;
        }
        Ok(watch.close())
    };

    let from_stdin = async {
        let mut stdin = tokio::io::stdin();
        let mut buffer = vec![0u8; CHUNK];
        let mut watch = CloseWatch::default();
        loop {
            let read = stdin.read(&mut buffer).await?;
            if read == 0 {
                break;
            }
            watch.feed(&buffer[..read]);
            if watch.close().is_some() {
                client_closed.store(true, Ordering::SeqCst);
            }
            if let Err(error) = to_server.write_all(&buffer[..read]).await {
                return Err(ProxyError::ServerGone {
                    socket: socket.to_owned(),
                    why: format!("writing to it failed: {error}"),
                    unanswered: None,
                });
            }
        }
        // The end of stdin reaches the server as the end of its input; its answer (the echo
        // of a close) still reaches stdout below.
        let _ = to_server.shutdown().await;
        Ok::<(), ProxyError>(())
    };

    tokio::pin!(to_stdout);
    tokio::select! {
        ended = &mut to_stdout => {
            let gone = |why: String| ProxyError::ServerGone {
                socket: socket.to_owned(),
                why,
                unanswered: None,
            };
            match ended {
                // The server's side of a close the client began.
                Ok(_) if client_closed.load(Ordering::SeqCst) => Ok(()),
                Ok(Some(code)) => Err(gone(describe_close(code))),
                Ok(None) => Err(gone(UNCLOSED_END.to_owned())),
                Err(ServerSide::Broken(error)) => Err(gone(format!("the connection broke: {error}"))),
                Err(ServerSide::Stdout(error)) => Err(ProxyError::ClientGone(error)),
            }
        }
        read = from_stdin => {
            read?;
            // Bounded like the line mode's drain: a server that never ends the connection
            // after the client's end keeps nobody waiting.
            match tokio::time::timeout(DRAIN_LIMIT, to_stdout).await {
                Ok(Err(ServerSide::Stdout(error))) => Err(ProxyError::ClientGone(error)),
                _ => Ok(()),
            }
        }
    }
}

/// What ended the copy from the server to stdout.
enum ServerSide {
    /// Reading the socket failed.
    Broken(String),
    /// Writing to stdout failed: the client is gone.
    Stdout(std::io::Error),
}

/// Why a server's close frame ended the connection, for the user.
pub(super) fn describe_close(code: Option<u16>) -> String {
    match code {
        Some(1001) => "it is shutting down (close 1001, going away)".to_owned(),
        Some(code) => format!("it closed the connection (close {code})"),
        None => "it closed the connection".to_owned(),
    }
}

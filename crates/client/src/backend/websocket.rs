//! The websocket transport: connects to `ws://` URLs, or to a unix socket (`unix://PATH`,
//! the same protocol over a local socket), with an optional bearer token; moves one JSON
//! object per text frame, and closes with a close frame.

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, StreamExt};
use tokio::net::{TcpStream, UnixStream};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::http::header::AUTHORIZATION;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_util::either::Either;

use crate::token_file::{TokenFileError, read_token_file};

/// Default [`WebSocketTarget::max_message_bytes`]: the server's own default.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// How long a close frame may take to go out before the connection is dropped.
const CLOSE_FRAME_TIMEOUT: Duration = Duration::from_secs(2);

type Stream = WebSocketStream<Either<TcpStream, UnixStream>>;

/// The URL scheme of a unix socket target.
const UNIX_SCHEME: &str = "unix://";

/// The request URL of an upgrade over a unix socket: the socket is the address, so the host
/// is a placeholder, as the reference's clients send it.
const UNIX_REQUEST_URL: &str = "ws://localhost/";

/// A websocket server to connect to: its URL (`ws://HOST:PORT`, or `unix://PATH` for a server
/// listening on a unix socket) and, if it checks one, the bearer token sent as
/// `Authorization: Bearer <token>` at the upgrade.
///
/// ```
/// use tandem_client::WebSocketTarget;
///
/// let target = WebSocketTarget::new("ws://127.0.0.1:4500").token("s3cret");
/// assert_eq!(target.url(), "ws://127.0.0.1:4500");
/// let local = WebSocketTarget::unix("/run/user/1000/tandem.sock");
/// assert_eq!(local.url(), "unix:///run/user/1000/tandem.sock");
/// ```
#[derive(Clone)]
pub struct WebSocketTarget {
    url: String,
    token: Option<String>,
    max_message_bytes: usize,
}

impl std::fmt::Debug for WebSocketTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebSocketTarget")
            .field("url", &self.url)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("max_message_bytes", &self.max_message_bytes)
            .finish()
    }
}

impl WebSocketTarget {
    /// The server at `url` (`ws://HOST:PORT` with any path, or `unix://PATH`), without a
    /// token.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            token: None,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
        }
    }

    /// The server listening on the unix socket at `path` (`tandem app-server --listen
    /// unix://PATH`, or the reference's). A path longer than a socket address holds is
    /// followed through the link the server left there.
    pub fn unix(path: impl AsRef<Path>) -> Self {
        Self::new(format!("{UNIX_SCHEME}{}", path.as_ref().display()))
    }

    /// The unix socket path, for a `unix://` target.
    fn unix_path(&self) -> Option<PathBuf> {
        self.url.strip_prefix(UNIX_SCHEME).map(PathBuf::from)
    }

    /// Sends `token` as the bearer token.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Reads the bearer token from `path` (surrounding whitespace trimmed). A file that
    /// users other than its owner may access is refused ([`crate::read_token_file`]).
    pub fn token_file(self, path: impl AsRef<Path>) -> Result<Self, TokenFileError> {
        Ok(self.token(read_token_file(path)?))
    }

    /// The largest message accepted from the server. Default 64 MiB.
    pub fn max_message_bytes(mut self, bytes: usize) -> Self {
        self.max_message_bytes = bytes.max(1);
        self
    }

    /// The URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Connects: the socket's two halves (the link layer wraps them into a `Link`).
    pub(crate) async fn connect(&self) -> Result<(WebSocketSink, WebSocketSource), String> {
        let unix = self.unix_path();
        let request_url = if unix.is_some() {
            UNIX_REQUEST_URL
        } else {
            self.url.as_str()
        };
        let mut request = request_url
            .into_client_request()
            .map_err(|error| format!("invalid websocket URL {:?}: {error}", self.url))?;
        if let Some(token) = &self.token {
            let value = HeaderValue::from_str(&format!("Bearer {token}"))
                .map_err(|_| "the token contains characters not allowed in a header".to_owned())?;
            request.headers_mut().insert(AUTHORIZATION, value);
        }
        let config = WebSocketConfig::default()
            .max_message_size(Some(self.max_message_bytes))
            .max_frame_size(Some(self.max_message_bytes));
        let socket = match unix {
            Some(path) => Either::Right(self.connect_unix(&path).await?),
            None => Either::Left(self.connect_tcp(&request).await?),
        };
        let (stream, _response) =
            tokio_tungstenite::client_async_with_config(request, socket, Some(config))
                .await
                .map_err(|error| describe_connect_error(&self.url, error))?;
        let (sink, source) = stream.split();
        Ok((WebSocketSink { sink }, WebSocketSource { source }))
    }

    async fn connect_tcp(
        &self,
        request: &tungstenite::handshake::client::Request,
    ) -> Result<TcpStream, String> {
        let uri = request.uri();
        if uri.scheme_str() != Some("ws") {
            return Err(format!(
                "unsupported URL {}: expected ws://HOST:PORT or unix://PATH",
                self.url
            ));
        }
        let host = uri
            .host()
            .ok_or_else(|| format!("the URL {} names no host", self.url))?;
        // `[::1]` in a URL is `::1` to the resolver.
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let port = uri.port_u16().unwrap_or(80);
        let socket = TcpStream::connect((host, port))
            .await
            .map_err(|error| format!("cannot connect to {}: {error}", self.url))?;
        // Each frame is a whole message; with Nagle's algorithm a request sent right after
        // another waits for the server's delayed ACK (~40 ms).
        socket
            .set_nodelay(true)
            .map_err(|error| format!("cannot set TCP_NODELAY: {error}"))?;
        Ok(socket)
    }

    async fn connect_unix(&self, path: &Path) -> Result<UnixStream, String> {
        if !path.is_absolute() {
            return Err(format!(
                "{} names no absolute socket path: expected unix:///PATH",
                self.url
            ));
        }
        let address = tandem_host::transport::unix_socket::connect_path(path)
            .map_err(|error| format!("cannot connect to {}: {error}", self.url))?;
        UnixStream::connect(&address)
            .await
            .map_err(|error| format!("cannot connect to {}: {error}", self.url))
    }
}

fn describe_connect_error(url: &str, error: tungstenite::Error) -> String {
    match error {
        tungstenite::Error::Http(response) => {
            let body = response
                .body()
                .as_deref()
                .map(String::from_utf8_lossy)
                .unwrap_or_default();
            let hint = if response.status() == 401 {
                " (check the token: --token-file, or WebSocketTarget::token)"
            } else {
                ""
            };
            format!(
                "the server at {url} refused the websocket upgrade: {}{hint} {}",
                response.status(),
                body.trim()
            )
        }
        other => format!("cannot connect to {url}: {other}"),
    }
}

/// The sending half.
pub(crate) struct WebSocketSink {
    sink: SplitSink<Stream, Message>,
}

impl WebSocketSink {
    pub(crate) async fn write(&mut self, frame: Vec<u8>) -> Result<(), String> {
        let text = String::from_utf8(frame)
            .map_err(|_| "the encoder produced invalid UTF-8".to_owned())?;
        self.sink
            .send(Message::text(text))
            .await
            .map_err(|error| error.to_string())
    }

    pub(crate) async fn finish(mut self) {
        let _ = tokio::time::timeout(CLOSE_FRAME_TIMEOUT, self.sink.close()).await;
    }
}

/// The receiving half.
pub(crate) struct WebSocketSource {
    source: SplitStream<Stream>,
}

impl WebSocketSource {
    pub(crate) async fn next(&mut self) -> Result<Vec<u8>, String> {
        loop {
            match self.source.next().await {
                Some(Ok(Message::Text(text))) => return Ok(text.as_bytes().to_vec()),
                Some(Ok(Message::Binary(bytes))) => return Ok(bytes.to_vec()),
                // Pings are answered by tungstenite itself.
                Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => continue,
                Some(Ok(Message::Close(frame))) => {
                    return Err(match frame {
                        Some(frame) => format!(
                            "the server closed the websocket: {} {}",
                            u16::from(frame.code),
                            frame.reason
                        ),
                        None => "the server closed the websocket".into(),
                    });
                }
                Some(Err(error)) => return Err(format!("the websocket failed: {error}")),
                None => return Err("the websocket ended".into()),
            }
        }
    }
}

/// Nothing beyond the streams: the writer's close frame is the whole shutdown.
pub(crate) struct WebSocketLink;

impl WebSocketLink {
    pub(crate) async fn shut_down(&self, _step: Duration) {}
}

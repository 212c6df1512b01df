//! Plain HTTP/1.1 requests to the websocket server, for what a websocket client library hides:
//! the status and body of the health routes and of refused upgrades.

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::{PROMPT, within};

/// A response: status code and body.
#[derive(Debug)]
pub(crate) struct Response {
    pub(crate) status: u16,
    pub(crate) body: String,
}

/// `GET path` with `headers`, on a connection of its own that the server closes after the
/// response.
pub(crate) async fn get(address: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Response {
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    let raw = within(PROMPT, "an HTTP response", async {
        let mut stream = TcpStream::connect(address).await?;
        stream.write_all(request.as_bytes()).await?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await?;
        std::io::Result::Ok(raw)
    })
    .await
    .expect("HTTP exchange");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("not an HTTP response: {text:?}"));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status in {head:?}"));
    Response {
        status,
        body: body.to_owned(),
    }
}

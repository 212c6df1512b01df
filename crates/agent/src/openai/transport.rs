//! The one place every model request passes: an [`Exchange`] goes to the provider
//! ([`send_live`]) or to the provider's cassette (`crate::cassette`, which calls [`send_live`]
//! when it records), and comes back as a [`ModelResponse`], a response head and a body stream.
//! Everything above it (status classification, event decoding, retries) is the same for both,
//! so a replayed answer goes through the agent exactly as a live one did.

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap};

use super::retry::AttemptError;
use super::{error_chain, send_error};

/// A body chunk that could not be read: the whole error chain as one message, so that a
/// recorded error reads exactly like the live one did.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct BodyError(pub(crate) String);

/// The body of a response, chunk by chunk.
pub(crate) type BodyStream = BoxStream<'static, Result<Bytes, BodyError>>;

/// A response head and its body.
pub(crate) struct ModelResponse {
    /// The status.
    pub(crate) status: StatusCode,
    /// The headers.
    pub(crate) headers: HeaderMap,
    /// The body.
    pub(crate) body: BodyStream,
}

/// One model request.
#[derive(Debug, Clone)]
pub(crate) struct Exchange<'a> {
    /// The full URL.
    pub(crate) url: &'a str,
    /// The endpoint under the base URL (`chat/completions`, `responses`).
    pub(crate) endpoint: &'static str,
    /// The JSON body.
    pub(crate) body: Bytes,
    /// The API key, if one is sent.
    pub(crate) key: Option<&'a str>,
    /// The thread's working directory, which a cassette normalizes out of the request.
    pub(crate) cwd: Option<&'a str>,
}

/// Sends `exchange` to the provider.
pub(crate) async fn send_live(
    client: &reqwest::Client,
    exchange: &Exchange<'_>,
) -> Result<ModelResponse, AttemptError> {
    let mut request = client
        .post(exchange.url)
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, "text/event-stream")
        .body(exchange.body.clone());
    if let Some(key) = exchange.key {
        request = request.bearer_auth(key);
    }
    let response = request
        .send()
        .await
        .map_err(|error| send_error(exchange.url, &error))?;
    Ok(ModelResponse {
        status: response.status(),
        headers: response.headers().clone(),
        body: response
            .bytes_stream()
            .map(|chunk| chunk.map_err(|error| BodyError(error_chain(&error))))
            .boxed(),
    })
}

/// The whole body as text; `None` if it broke.
pub(crate) async fn body_text(mut body: BodyStream) -> Option<String> {
    let mut bytes = Vec::new();
    while let Some(chunk) = body.next().await {
        bytes.extend_from_slice(&chunk.ok()?);
    }
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

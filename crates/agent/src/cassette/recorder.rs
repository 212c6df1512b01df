//! Recording a live exchange: the request goes to the provider, the response is relayed to the
//! agent unchanged while its events are noted with their timing, and the exchange is written
//! once the body has ended, broken, or been dropped by the agent (whichever comes first).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use reqwest::header::{CONTENT_TYPE, HeaderMap};
use serde_json::Value;
use tokio::time::Instant;

use super::Cassette;
use super::format::{Entry, HttpResponse, RecordedEvent, RecordedResponse, StreamEnd};
use crate::openai::retry::AttemptError;
use crate::openai::transport::{self, BodyError, BodyStream, Exchange, ModelResponse};

/// The response headers a cassette keeps: the ones the agent reads. Others are dropped.
const KEPT_HEADERS: &[&str] = &["content-type", "retry-after", "retry-after-ms"];

/// Sends `exchange` to the provider and returns its response, recording it as it is read.
pub(super) async fn record(
    cassette: &Arc<Cassette>,
    client: &reqwest::Client,
    exchange: Exchange<'_>,
    digest: String,
    request: Value,
) -> Result<ModelResponse, AttemptError> {
    let mut pending = Pending {
        cassette: Arc::clone(cassette),
        secrets: cassette.secrets_with(exchange.key),
        digest,
        endpoint: exchange.endpoint,
        request,
        started: Instant::now(),
        written: false,
    };
    match transport::send_live(client, &exchange).await {
        Err(error) => {
            let (retryable, message) = match &error {
                AttemptError::Retryable { message, .. } => (true, message.clone()),
                AttemptError::Fatal(message) => (false, message.clone()),
                AttemptError::Interrupted => return Err(error),
            };
            pending.write(RecordedResponse::Failed { retryable, message });
            Err(error)
        }
        Ok(response) => {
            let after_ms = millis(pending.started.elapsed());
            let headers = KEPT_HEADERS
                .iter()
                .filter_map(|name| {
                    let value = response.headers.get(*name)?.to_str().ok()?;
                    Some(((*name).to_owned(), value.to_owned()))
                })
                .collect();
            let sse = response.status.is_success() && is_event_stream(&response.headers);
            let body = RecordingBody {
                inner: response.body,
                pending: Some(pending),
                head: HttpResponse {
                    status: response.status.as_u16(),
                    after_ms,
                    headers,
                    events: sse.then(Vec::new),
                    body: None,
                    end: StreamEnd::Eof,
                },
                splitter: EventSplitter::default(),
                raw: Vec::new(),
            };
            Ok(ModelResponse {
                status: response.status,
                headers: response.headers,
                body: body.boxed(),
            })
        }
    }
}

fn is_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.to_ascii_lowercase().contains("text/event-stream"))
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// An exchange not yet written. Dropped unwritten (the agent gave up waiting for the response
/// head), it is written as [`RecordedResponse::NoResponse`].
struct Pending {
    cassette: Arc<Cassette>,
    secrets: Vec<String>,
    digest: String,
    endpoint: &'static str,
    request: Value,
    started: Instant,
    written: bool,
}

impl Pending {
    fn write(&mut self, response: RecordedResponse) {
        if std::mem::replace(&mut self.written, true) {
            return;
        }
        let entry = Entry {
            digest: self.digest.clone(),
            endpoint: self.endpoint.to_owned(),
            request: std::mem::take(&mut self.request),
            response,
        };
        self.cassette.commit(entry, &self.secrets);
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.write(RecordedResponse::NoResponse);
    }
}

/// A response body relayed to the agent and noted for the cassette.
struct RecordingBody {
    inner: BodyStream,
    /// `None` once written.
    pending: Option<Pending>,
    head: HttpResponse,
    splitter: EventSplitter,
    /// The body so far, when it is not an event stream.
    raw: Vec<u8>,
}

impl RecordingBody {
    fn note(&mut self, chunk: &[u8]) {
        let Some(pending) = &self.pending else {
            return;
        };
        match &mut self.head.events {
            Some(events) => {
                let t_ms = millis(pending.started.elapsed());
                self.splitter.push(chunk, t_ms, events);
            }
            None => self.raw.extend_from_slice(chunk),
        }
    }

    fn finish(&mut self, end: StreamEnd) {
        let Some(mut pending) = self.pending.take() else {
            return;
        };
        let mut head = self.head.clone();
        if head.events.is_none() {
            head.body = Some(String::from_utf8_lossy(&self.raw).into_owned());
        }
        head.end = end;
        pending.write(RecordedResponse::Http(head));
    }
}

impl Stream for RecordingBody {
    type Item = Result<Bytes, BodyError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = self.inner.poll_next_unpin(cx);
        match &polled {
            Poll::Ready(Some(Ok(chunk))) => self.note(chunk),
            Poll::Ready(Some(Err(error))) => self.finish(StreamEnd::Error {
                message: error.0.clone(),
            }),
            Poll::Ready(None) => self.finish(StreamEnd::Eof),
            Poll::Pending => {}
        }
        polled
    }
}

impl Drop for RecordingBody {
    fn drop(&mut self) {
        self.finish(StreamEnd::Dropped);
    }
}

/// Splits a server-sent event stream into events as its chunks arrive, the way the agent's
/// parser reads it: lines end at `\n` (a `\r` before it is dropped), `:` lines are comments,
/// `data:` lines join with `\n`, a blank line ends the event. `id:` and `retry:` are not kept:
/// the agent does not use them.
#[derive(Debug, Default)]
struct EventSplitter {
    buffer: Vec<u8>,
    event: String,
    data: Option<String>,
    /// Whether the event being read has any field yet.
    started: bool,
}

impl EventSplitter {
    fn push(&mut self, chunk: &[u8], t_ms: u64, events: &mut Vec<RecordedEvent>) {
        self.buffer.extend_from_slice(chunk);
        while let Some(end) = self.buffer.iter().position(|byte| *byte == b'\n') {
            let mut line: Vec<u8> = self.buffer.drain(..=end).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            let line = String::from_utf8_lossy(&line).into_owned();
            self.line(&line, t_ms, events);
        }
    }

    fn line(&mut self, line: &str, t_ms: u64, events: &mut Vec<RecordedEvent>) {
        if line.is_empty() {
            if std::mem::take(&mut self.started) {
                let data = self.data.take();
                let json = data
                    .as_deref()
                    .and_then(|data| serde_json::from_str::<Value>(data).ok())
                    .filter(|value| value.is_object() || value.is_array());
                events.push(RecordedEvent {
                    t_ms,
                    event: std::mem::take(&mut self.event),
                    data: if json.is_some() { None } else { data },
                    json,
                });
            }
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => {
                self.event = value.to_owned();
                self.started = true;
            }
            "data" => {
                match &mut self.data {
                    Some(data) => {
                        data.push('\n');
                        data.push_str(value);
                    }
                    None => self.data = Some(value.to_owned()),
                }
                self.started = true;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_chunks_keep_their_fields_and_time() {
        let mut splitter = EventSplitter::default();
        let mut events = Vec::new();
        splitter.push(
            b": keep-alive\n\nevent: response.created\r\nda",
            5,
            &mut events,
        );
        assert!(events.is_empty());
        splitter.push(
            b"ta: {\"a\":1}\n\ndata: one\ndata: two\n\ndata: [DONE]\n\n",
            9,
            &mut events,
        );
        assert_eq!(
            events,
            vec![
                RecordedEvent {
                    t_ms: 9,
                    event: "response.created".into(),
                    json: Some(serde_json::json!({"a": 1})),
                    data: None
                },
                RecordedEvent {
                    t_ms: 9,
                    event: String::new(),
                    json: None,
                    data: Some("one\ntwo".into())
                },
                RecordedEvent {
                    t_ms: 9,
                    event: String::new(),
                    json: None,
                    data: Some("[DONE]".into())
                },
            ]
        );
    }
}

//! Answers from a cassette: a recorded exchange becomes a response the agent reads exactly as
//! it read the live one (the same status, headers, events and ending), and a request with no
//! recording becomes an error that says how it differs from the nearest recording.

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::{self, BoxStream};
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use tokio::time::Instant;

use super::format::{Entry, RecordedEvent, RecordedResponse, StreamEnd};
use super::{Cassette, CassetteTiming, canonical};
use crate::openai::retry::AttemptError;
use crate::openai::transport::{BodyError, ModelResponse};

/// The response `entry` recorded, paced as `timing` says.
pub(super) async fn respond(
    entry: &Entry,
    timing: CassetteTiming,
) -> Result<ModelResponse, AttemptError> {
    let http = match &entry.response {
        RecordedResponse::Failed { retryable, message } => {
            return Err(if *retryable {
                AttemptError::retryable(message.clone())
            } else {
                AttemptError::Fatal(message.clone())
            });
        }
        // The live run gave up waiting; so will this one (its timeout or interruption).
        RecordedResponse::NoResponse => return futures::future::pending().await,
        RecordedResponse::Http(http) => http,
    };
    let started = Instant::now();
    let paced = timing == CassetteTiming::Recorded;
    if paced {
        tokio::time::sleep_until(started + Duration::from_millis(http.after_ms)).await;
    }
    let status = StatusCode::from_u16(http.status).map_err(|_| {
        AttemptError::Fatal(format!(
            "the cassette holds an invalid HTTP status {}; record it again",
            http.status
        ))
    })?;
    let mut headers = HeaderMap::new();
    for (name, value) in &http.headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            headers.insert(name, value);
        }
    }
    let chunks: Vec<(u64, Bytes)> = match (&http.events, &http.body) {
        (Some(events), _) => events
            .iter()
            .map(|event| (event.t_ms, Bytes::from(sse_text(event))))
            .collect(),
        (None, Some(body)) => vec![(http.after_ms, Bytes::from(body.clone()))],
        (None, None) => Vec::new(),
    };
    let end: BoxStream<'static, Result<Bytes, BodyError>> = match &http.end {
        StreamEnd::Eof => stream::empty().boxed(),
        StreamEnd::Error { message } => {
            stream::once(std::future::ready(Err(BodyError(message.clone())))).boxed()
        }
        // The live agent stopped reading here; nothing more ever comes.
        StreamEnd::Dropped => stream::pending().boxed(),
    };
    let body = stream::iter(chunks)
        .then(move |(t_ms, chunk)| async move {
            if paced {
                tokio::time::sleep_until(started + Duration::from_millis(t_ms)).await;
            }
            Ok(chunk)
        })
        .chain(end)
        .boxed();
    Ok(ModelResponse {
        status,
        headers,
        body,
    })
}

/// The wire text of a recorded event.
fn sse_text(event: &RecordedEvent) -> String {
    let mut text = String::new();
    if !event.event.is_empty() {
        text.push_str("event: ");
        text.push_str(&event.event);
        text.push('\n');
    }
    let data = match (&event.json, &event.data) {
        (Some(json), _) => Some(json.to_string()),
        (None, data) => data.clone(),
    };
    if let Some(data) = data {
        for line in data.split('\n') {
            text.push_str("data: ");
            text.push_str(line);
            text.push('\n');
        }
    }
    text.push('\n');
    text
}

/// Why `canonical` has no recording left in `cassette`: every recording of it used, no
/// recording for its model, or where it first differs from the nearest recording.
pub(super) fn miss_message(
    cassette: &Cassette,
    entries: &[std::sync::Arc<Entry>],
    same_digest: Option<&Vec<usize>>,
    canonical: &Value,
) -> String {
    let path = cassette.path().display();
    let hint = "record what is missing with cassette_mode = \"record-missing\" (or \
                --cassette-mode record-missing)";
    if let Some(recorded) = same_digest {
        return format!(
            "cassette {path} has {} recording(s) of this request and replay has used them all \
             (this run asks the model more often than the recording did); {hint}",
            recorded.len()
        );
    }
    if entries.is_empty() {
        return format!("cassette {path} holds no recordings; {hint}");
    }
    let model = canonical.get("model").cloned().unwrap_or(Value::Null);
    let mut models: Vec<String> = entries
        .iter()
        .filter_map(|entry| entry.request.get("model"))
        .map(Value::to_string)
        .collect();
    models.sort();
    models.dedup();
    if !models.contains(&model.to_string()) {
        return format!(
            "cassette {path} holds no recording for model {model}: it was recorded with model \
             {}; run with that model, or record a new cassette",
            models.join(", ")
        );
    }
    let nearest = entries
        .iter()
        .enumerate()
        .filter_map(|(index, entry)| {
            canonical::first_difference(&entry.request, canonical).map(|found| (index, found))
        })
        .max_by_key(|(index, found)| (found.equal_before, std::cmp::Reverse(*index)));
    match nearest {
        Some((index, found)) => format!(
            "no recording in cassette {path} matches this request; the nearest (exchange {}, \
             line {} of the file) differs first at {}: recorded {}, requested {}; {hint}",
            index + 1,
            index + 2,
            found.path,
            found.recorded,
            found.requested
        ),
        None => format!("no recording in cassette {path} matches this request; {hint}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cassette::format::HttpResponse;

    fn entry() -> Entry {
        let event = |t_ms, data: &str| RecordedEvent {
            t_ms,
            event: String::new(),
            json: None,
            data: Some(data.to_owned()),
        };
        Entry {
            digest: String::new(),
            endpoint: "chat/completions".into(),
            request: Value::Null,
            response: RecordedResponse::Http(HttpResponse {
                status: 200,
                after_ms: 200,
                headers: Default::default(),
                events: Some(vec![
                    event(250, "a"),
                    event(900, "b"),
                    event(1_400, "[DONE]"),
                ]),
                body: None,
                end: StreamEnd::Eof,
            }),
        }
    }

    /// Reads the whole response and returns, per chunk, when it arrived after the request
    /// (on the paused test clock, which only moves when every task waits on a timer).
    async fn arrivals(timing: CassetteTiming) -> (Duration, Vec<Duration>) {
        let started = Instant::now();
        let response = respond(&entry(), timing).await.expect("a response");
        let head = started.elapsed();
        let chunks: Vec<Duration> = response
            .body
            .map(|chunk| {
                chunk.expect("a chunk");
                started.elapsed()
            })
            .collect()
            .await;
        (head, chunks)
    }

    #[tokio::test(start_paused = true)]
    async fn recorded_timing_paces_the_head_and_each_event_as_recorded() {
        let (head, chunks) = arrivals(CassetteTiming::Recorded).await;
        assert_eq!(head, Duration::from_millis(200));
        assert_eq!(
            chunks,
            [250, 900, 1_400].map(Duration::from_millis).to_vec()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn skipped_timing_answers_at_once() {
        let (head, chunks) = arrivals(CassetteTiming::Skip).await;
        assert_eq!(head, Duration::ZERO);
        assert_eq!(chunks, vec![Duration::ZERO; 3]);
    }
}

//! Which failures of a model request are worth another attempt, and how long to wait first.
//! The decisions live here, in the agent loop's terms, rather than in the HTTP client: a
//! retry must be visible to the user (`error` with `willRetry: true`) and interruptible.

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::Value;

/// The longest wait a server's `Retry-After` may ask for.
pub(crate) const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// The first backoff step; each further retry doubles it.
const BACKOFF_BASE: Duration = Duration::from_millis(200);

/// Doubling stops here, so a large `stream_max_retries` cannot overflow the delay.
const BACKOFF_MAX_DOUBLINGS: u32 = 8;

/// How one attempt at a model request ended, when it did not produce an answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AttemptError {
    /// Worth another attempt: a 429, 5xx, 408 or 409, a connect error, or a stream that
    /// broke, ended early or stalled.
    Retryable {
        /// What went wrong, for the `error` notification and the final failure.
        message: String,
        /// The wait the server asked for (`Retry-After`, `retry-after-ms`), capped.
        retry_after: Option<Duration>,
    },
    /// Final: the turn fails with this message.
    Fatal(String),
    /// The turn was interrupted while the request was in flight.
    Interrupted,
}

impl AttemptError {
    pub(crate) fn retryable(message: impl Into<String>) -> Self {
        Self::Retryable {
            message: message.into(),
            retry_after: None,
        }
    }
}

/// The wait before retry number `retry` (1-based): 200 ms·2ⁿ⁻¹ with ±10 % jitter, so that
/// clients failing together do not come back together.
pub(crate) fn backoff(retry: u32) -> Duration {
    let doublings = retry.saturating_sub(1).min(BACKOFF_MAX_DOUBLINGS);
    let base = BACKOFF_BASE * 2u32.pow(doublings);
    base.mul_f64(rand::random_range(0.9..1.1))
}

/// The wait a response asks for: `retry-after-ms` (OpenAI's, in milliseconds), else
/// `Retry-After` in seconds; capped at [`MAX_RETRY_AFTER`]. HTTP dates are not honoured (the
/// backoff applies instead).
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| {
        headers
            .get(name)?
            .to_str()
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|value| value.is_finite() && *value >= 0.0)
    };
    let wait = number("retry-after-ms")
        .map(|millis| Duration::from_secs_f64(millis.min(1e9) / 1000.0))
        .or_else(|| number("retry-after").map(|secs| Duration::from_secs_f64(secs.min(1e6))))?;
    Some(wait.min(MAX_RETRY_AFTER))
}

/// The `error` object of an OpenAI-style error body, leniently: `{"error": {...}}`,
/// `{"error": "text"}`, or a bare `{message, code}`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ApiError {
    pub(crate) message: Option<String>,
    pub(crate) code: Option<String>,
    pub(crate) kind: Option<String>,
}

impl ApiError {
    /// Reads an error out of `value`; `None` when it holds none.
    pub(crate) fn from_value(value: &Value) -> Option<Self> {
        let error = match value.get("error") {
            Some(Value::Null) | None => return None,
            Some(error) => error,
        };
        Some(match error {
            Value::String(message) => Self {
                message: Some(message.clone()),
                ..Self::default()
            },
            Value::Object(fields) => {
                let text = |key: &str| match fields.get(key) {
                    Some(Value::String(text)) => Some(text.clone()),
                    Some(Value::Number(number)) => Some(number.to_string()),
                    _ => None,
                };
                Self {
                    message: text("message"),
                    code: text("code"),
                    kind: text("type"),
                }
            }
            other => Self {
                message: Some(other.to_string()),
                ..Self::default()
            },
        })
    }

    /// Parses a response body; a body that is not JSON becomes the message itself.
    pub(crate) fn from_body(body: &str) -> Self {
        serde_json::from_str::<Value>(body)
            .ok()
            .and_then(|value| Self::from_value(&value))
            .unwrap_or_else(|| Self {
                message: Some(body.trim().chars().take(500).collect())
                    .filter(|text: &String| !text.is_empty()),
                ..Self::default()
            })
    }

    fn is(&self, code: &str) -> bool {
        self.code.as_deref() == Some(code) || self.kind.as_deref() == Some(code)
    }

    fn detail(&self) -> String {
        match (&self.message, &self.code) {
            (Some(message), Some(code)) => format!("{message} ({code})"),
            (Some(message), None) => message.clone(),
            (None, Some(code)) => code.clone(),
            (None, None) => "no details given".to_owned(),
        }
    }

    /// The message for an error event inside a 200 stream, which is never retried.
    pub(crate) fn stream_failure(&self) -> String {
        format!("the model provider reported an error: {}", self.detail())
    }
}

/// What the agent knows about the request, for messages a user can act on.
pub(crate) struct RequestContext<'a> {
    pub(crate) provider: &'a str,
    pub(crate) model: &'a str,
    pub(crate) url: &'a str,
    pub(crate) env_key: Option<&'a str>,
    pub(crate) key_present: bool,
}

impl RequestContext<'_> {
    fn key_hint(&self) -> String {
        match self.env_key {
            Some(name) if self.key_present => format!("check {name}"),
            Some(name) => format!("check {name}: it is not set"),
            None => format!(
                "provider {} sends no API key; set env_key in [model_providers.{}] to the \
                 variable that holds one",
                self.provider, self.provider
            ),
        }
    }
}

/// Classifies a non-success response.
pub(crate) fn classify_status(
    status: StatusCode,
    headers: &HeaderMap,
    body: &str,
    context: &RequestContext<'_>,
) -> AttemptError {
    let error = ApiError::from_body(body);
    let code = status.as_u16();
    if error.is("insufficient_quota") {
        return AttemptError::Fatal(format!(
            "the {} account has no quota left (HTTP {code}, insufficient_quota): check its plan \
             and billing",
            context.provider
        ));
    }
    match code {
        429 => AttemptError::Retryable {
            message: format!("rate limited (HTTP 429): {}", error.detail()),
            retry_after: retry_after(headers),
        },
        408 | 409 | 500..=599 => AttemptError::Retryable {
            message: format!("HTTP {code} from {}: {}", context.provider, error.detail()),
            retry_after: retry_after(headers),
        },
        400 if error.is("context_length_exceeded") => AttemptError::Fatal(format!(
            "the conversation is too long for model {} (HTTP 400, context_length_exceeded): \
             start a new thread or fork this one from an earlier turn",
            context.model
        )),
        401 => AttemptError::Fatal(format!(
            "{} rejected the API key (HTTP 401: {}): {}",
            context.provider,
            error.detail(),
            context.key_hint()
        )),
        403 => AttemptError::Fatal(format!(
            "{} refused the request (HTTP 403: {}): {} and whether it may use model {}",
            context.provider,
            error.detail(),
            context.key_hint(),
            context.model
        )),
        404 => AttemptError::Fatal(format!(
            "{} answered HTTP 404 for {} ({}): check the model name {} and the provider's \
             base_url",
            context.provider,
            context.url,
            error.detail(),
            context.model
        )),
        _ => AttemptError::Fatal(format!(
            "{} rejected the request (HTTP {code}): {}",
            context.provider,
            error.detail()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn context() -> RequestContext<'static> {
        RequestContext {
            provider: "openai",
            model: "m",
            url: "http://x/v1/chat/completions",
            env_key: Some("OPENAI_API_KEY"),
            key_present: false,
        }
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn retry_after_prefers_milliseconds_and_is_capped() {
        assert_eq!(
            retry_after(&headers(&[("retry-after-ms", "250"), ("retry-after", "9")])),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "2")])),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "3600")])),
            Some(MAX_RETRY_AFTER)
        );
        assert_eq!(
            retry_after(&headers(&[(
                "retry-after",
                "Wed, 21 Oct 2015 07:28:00 GMT"
            )])),
            None
        );
        assert_eq!(retry_after(&HeaderMap::new()), None);
    }

    #[test]
    fn backoff_doubles_with_jitter_and_stops_doubling() {
        for (retry, base) in [(1, 200), (2, 400), (3, 800)] {
            let wait = backoff(retry).as_millis();
            assert!(
                (base * 9 / 10..=base * 11 / 10).contains(&wait),
                "{retry}: {wait}"
            );
        }
        assert!(backoff(1000) <= BACKOFF_BASE * 2u32.pow(BACKOFF_MAX_DOUBLINGS) * 2);
    }

    #[test]
    fn statuses_are_classified() {
        let none = HeaderMap::new();
        let retry = |code: u16| {
            matches!(
                classify_status(StatusCode::from_u16(code).unwrap(), &none, "", &context()),
                AttemptError::Retryable { .. }
            )
        };
        for code in [429, 500, 502, 503, 408, 409] {
            assert!(retry(code), "{code}");
        }
        for code in [400, 401, 403, 404, 422] {
            assert!(!retry(code), "{code}");
        }
        let quota = r#"{"error": {"message": "out", "type": "insufficient_quota"}}"#;
        assert!(matches!(
            classify_status(StatusCode::TOO_MANY_REQUESTS, &none, quota, &context()),
            AttemptError::Fatal(message) if message.contains("insufficient_quota")
        ));
        let AttemptError::Fatal(message) =
            classify_status(StatusCode::UNAUTHORIZED, &none, "nope", &context())
        else {
            panic!("401 is final");
        };
        assert!(
            message.contains("check OPENAI_API_KEY: it is not set"),
            "{message}"
        );
    }

    #[test]
    fn error_bodies_are_read_leniently() {
        assert_eq!(
            ApiError::from_body(r#"{"error": {"message": "m", "code": 42}}"#),
            ApiError {
                message: Some("m".into()),
                code: Some("42".into()),
                kind: None
            }
        );
        assert_eq!(
            ApiError::from_body(r#"{"error": "plain"}"#)
                .message
                .as_deref(),
            Some("plain")
        );
        assert_eq!(
            ApiError::from_body("<html>bad gateway</html>")
                .message
                .as_deref(),
            Some("<html>bad gateway</html>")
        );
        assert_eq!(
            ApiError::from_value(&serde_json::json!({"error": null})),
            None
        );
    }
}

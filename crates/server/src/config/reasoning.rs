//! The `model_reasoning_effort` and `model_reasoning_summary` keys: what the model is asked of
//! its reasoning (issue 29, point 4). Read at the start of each turn, so a config write applies
//! to the next turn; sent to the provider as each wire takes them (docs/protocol.md,
//! "Reasoning").

use serde_json::{Map, Value};
use tandem_agent::{REASONING_EFFORTS, REASONING_SUMMARIES, ReasoningSettings};

use super::ConfigError;
use super::layers::Layered;

/// Config key of the reasoning effort (`none`, `minimal`, `low`, `medium`, `high`, `xhigh`).
pub const MODEL_REASONING_EFFORT_KEY: &str = "model_reasoning_effort";

/// Config key of the reasoning summary (`auto`, `concise`, `detailed`, `none`).
pub const MODEL_REASONING_SUMMARY_KEY: &str = "model_reasoning_summary";

/// Reads and checks both keys of `layered`; a key no layer set is `None`.
pub(super) fn parse_reasoning(layered: &Layered) -> Result<ReasoningSettings, ConfigError> {
    let read = |key: &str, accepted: &[&str]| -> Result<Option<String>, ConfigError> {
        match layered.table.get(key) {
            None => Ok(None),
            Some(toml::Value::String(value)) if accepted.contains(&value.as_str()) => {
                Ok(Some(value.clone()))
            }
            Some(other) => Err(ConfigError::InvalidValue {
                key: key.to_owned(),
                value: other.to_string(),
                origin: layered.origin_of(key).to_string(),
                reason: format!(
                    "expected one of {} (or leave the key out to send none)",
                    accepted
                        .iter()
                        .map(|value| format!("\"{value}\""))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }),
        }
    };
    Ok(ReasoningSettings {
        effort: read(MODEL_REASONING_EFFORT_KEY, REASONING_EFFORTS)?,
        summary: read(MODEL_REASONING_SUMMARY_KEY, REASONING_SUMMARIES)?,
    })
}

/// The reasoning settings of a thread: its own overrides (`turn/start`'s `effort` and
/// `summary`, or the keys in `thread/start`'s `config`), each falling back to `default`.
pub(crate) fn thread_reasoning(
    thread_config: &Map<String, Value>,
    default: &ReasoningSettings,
) -> ReasoningSettings {
    let own = |key: &str, accepted: &[&str]| {
        thread_config
            .get(key)
            .and_then(Value::as_str)
            .filter(|value| accepted.contains(value))
            .map(str::to_owned)
    };
    ReasoningSettings {
        effort: own(MODEL_REASONING_EFFORT_KEY, REASONING_EFFORTS)
            .or_else(|| default.effort.clone()),
        summary: own(MODEL_REASONING_SUMMARY_KEY, REASONING_SUMMARIES)
            .or_else(|| default.summary.clone()),
    }
}

/// Why a `turn/start` reasoning override is refused.
#[derive(Debug, thiserror::Error)]
#[error(
    "{member} `{value}` is not one of {accepted}; send one of them, or null for the server's default"
)]
pub(crate) struct BadReasoningOverride {
    member: &'static str,
    value: String,
    accepted: String,
}

/// Records `turn/start`'s `effort` and `summary` in a thread's `config` overrides: omitted
/// (`None`) keeps the thread's, `Some(None)` returns it to the server's default.
pub(crate) fn set_thread_reasoning(
    thread_config: &mut Map<String, Value>,
    effort: Option<Option<&str>>,
    summary: Option<Option<&str>>,
) -> Result<(), BadReasoningOverride> {
    for (member, key, accepted, value) in [
        (
            "effort",
            MODEL_REASONING_EFFORT_KEY,
            REASONING_EFFORTS,
            effort,
        ),
        (
            "summary",
            MODEL_REASONING_SUMMARY_KEY,
            REASONING_SUMMARIES,
            summary,
        ),
    ] {
        match value {
            None => {}
            Some(None) => {
                thread_config.remove(key);
            }
            Some(Some(value)) if accepted.contains(&value) => {
                thread_config.insert(key.to_owned(), Value::from(value));
            }
            Some(Some(value)) => {
                return Err(BadReasoningOverride {
                    member,
                    value: value.to_owned(),
                    accepted: accepted
                        .iter()
                        .map(|value| format!("\"{value}\""))
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
        }
    }
    Ok(())
}

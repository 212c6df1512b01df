//! The `model_reasoning_effort` and `model_reasoning_summary` keys: what the model is asked of
//! its reasoning (issue 29, point 4). Read at the start of each turn, so a config write applies
//! to the next turn; sent to the provider as each wire takes them (docs/protocol.md,
//! "Reasoning").

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

//! Plans and reasoning on the agent's side (issue 29): the model's reasoning settings a turn
//! runs with ([`ReasoningSettings`], from the `model_reasoning_effort` and
//! `model_reasoning_summary` config keys), the piece of reasoning a runtime streams
//! ([`ReasoningDelta`]), a `reasoning` item being streamed ([`StreamingReasoning`]), and the
//! [`TurnDriver`] methods that set the plan and stream reasoning. Apart from `driver` so that
//! the turn's core interface stays small.

use tandem_protocol::{ThreadItem, TurnPlanStep};

use crate::{AgentError, TurnDriver};

/// The reasoning efforts `model_reasoning_effort` accepts (what OpenAI's reasoning models
/// take; other servers take a subset).
pub const REASONING_EFFORTS: &[&str] = &["none", "minimal", "low", "medium", "high", "xhigh"];

/// The summaries `model_reasoning_summary` accepts; `none` asks for no summary.
pub const REASONING_SUMMARIES: &[&str] = &["auto", "concise", "detailed", "none"];

/// What a turn asks of the model's reasoning: the `model_reasoning_effort` and
/// `model_reasoning_summary` config keys, validated against [`REASONING_EFFORTS`] and
/// [`REASONING_SUMMARIES`]. `None` sends nothing and leaves the provider's default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReasoningSettings {
    /// How hard the model should think.
    pub effort: Option<String>,
    /// What summary of its reasoning to stream (`none`: no summary).
    pub summary: Option<String>,
}

impl ReasoningSettings {
    /// Whether either key is set: the turn runs a reasoning model on purpose.
    pub fn is_set(&self) -> bool {
        self.effort.is_some() || self.summary.is_some()
    }
}

/// A piece of a `reasoning` item, as [`TurnRuntime::reasoning_delta`](crate::TurnRuntime)
/// sends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReasoningDelta {
    /// Part `summary_index` of the summary starts (`item/reasoning/summaryPartAdded`).
    SummaryPartAdded {
        /// The part's index.
        summary_index: usize,
    },
    /// Text of summary part `summary_index` (`item/reasoning/summaryTextDelta`).
    SummaryText {
        /// The part's index.
        summary_index: usize,
        /// The text to append.
        delta: String,
    },
    /// Reasoning text of part `content_index` (`item/reasoning/textDelta`).
    Text {
        /// The part's index.
        content_index: usize,
        /// The text to append.
        delta: String,
    },
}

/// A `reasoning` item being streamed: begun by [`TurnDriver::begin_reasoning`], fed by
/// [`TurnDriver::reasoning_delta`] and finished by [`TurnDriver::complete_reasoning`].
#[derive(Debug)]
#[must_use = "a reasoning item must be completed, or its item never completes"]
pub struct StreamingReasoning {
    id: String,
    summary: Vec<String>,
    content: Vec<String>,
}

impl StreamingReasoning {
    /// The id of the `reasoning` item.
    pub fn item_id(&self) -> &str {
        &self.id
    }

    /// The summary parts streamed so far.
    pub fn summary(&self) -> &[String] {
        &self.summary
    }

    /// The reasoning text parts streamed so far.
    pub fn content(&self) -> &[String] {
        &self.content
    }

    fn item(&self) -> ThreadItem {
        ThreadItem::Reasoning {
            id: self.id.clone(),
            summary: self.summary.clone(),
            content: self.content.clone(),
        }
    }

    /// Records `delta` into the parts; `false` when it adds nothing to send.
    fn record(&mut self, delta: &ReasoningDelta) -> bool {
        fn part(parts: &mut Vec<String>, index: usize) -> &mut String {
            if parts.len() <= index {
                parts.resize(index + 1, String::new());
            }
            &mut parts[index]
        }
        match delta {
            ReasoningDelta::SummaryPartAdded { summary_index } => {
                part(&mut self.summary, *summary_index);
                true
            }
            ReasoningDelta::SummaryText {
                summary_index,
                delta,
            } => {
                part(&mut self.summary, *summary_index).push_str(delta);
                !delta.is_empty()
            }
            ReasoningDelta::Text {
                content_index,
                delta,
            } => {
                part(&mut self.content, *content_index).push_str(delta);
                !delta.is_empty()
            }
        }
    }
}

impl TurnDriver {
    /// The reasoning settings of this turn (`model_reasoning_effort`,
    /// `model_reasoning_summary`), read when the turn started.
    pub fn reasoning_settings(&self) -> ReasoningSettings {
        self.runtime().reasoning_settings()
    }

    /// Sets the turn's plan: `turn/plan/updated` with `explanation` and every step. The plan
    /// is a notification, not an item: it is not stored.
    pub async fn update_plan(
        &mut self,
        explanation: Option<String>,
        plan: Vec<TurnPlanStep>,
    ) -> Result<(), AgentError> {
        if self.is_interrupted() {
            return Err(AgentError::Interrupted);
        }
        self.runtime().plan_updated(explanation, plan).await;
        Ok(())
    }

    /// Starts a `reasoning` item (`item/started` with empty `summary` and `content`); feed it
    /// with [`TurnDriver::reasoning_delta`] and finish it with
    /// [`TurnDriver::complete_reasoning`].
    pub async fn begin_reasoning(&mut self) -> Result<StreamingReasoning, AgentError> {
        if self.is_interrupted() {
            return Err(AgentError::Interrupted);
        }
        let reasoning = StreamingReasoning {
            id: self.runtime().new_item_id(),
            summary: Vec::new(),
            content: Vec::new(),
        };
        self.runtime_dyn_mut().item_started(&reasoning.item()).await;
        Ok(reasoning)
    }

    /// Sends `delta` of `reasoning` at once. Fails with [`AgentError::Interrupted`], sending
    /// nothing, once the turn is interrupted; the item should still be completed.
    pub async fn reasoning_delta(
        &mut self,
        reasoning: &mut StreamingReasoning,
        delta: ReasoningDelta,
    ) -> Result<(), AgentError> {
        if self.is_interrupted() {
            return Err(AgentError::Interrupted);
        }
        if reasoning.record(&delta) {
            self.runtime().reasoning_delta(&reasoning.id, delta).await;
        }
        Ok(())
    }

    /// Completes `reasoning` (stored, then `item/completed`). `summary` and `content`, when
    /// given, replace what was streamed: the provider's final item is authoritative. Works
    /// after an interruption too.
    pub async fn complete_reasoning(
        &mut self,
        mut reasoning: StreamingReasoning,
        summary: Option<Vec<String>>,
        content: Option<Vec<String>>,
    ) {
        if let Some(summary) = summary {
            reasoning.summary = summary;
        }
        if let Some(content) = content {
            reasoning.content = content;
        }
        let item = reasoning.item();
        self.runtime_dyn_mut().item_completed(item).await;
    }
}

/// The arguments of the `update_plan` tool (and of the scripted agent's `/plan`):
/// `{explanation?, plan: [{step, status}]}`, status `pending`, `in_progress` or `completed`.
#[derive(Debug, serde::Deserialize)]
struct UpdatePlanArguments {
    #[serde(default)]
    explanation: Option<String>,
    plan: Vec<PlanItemArgument>,
}

#[derive(Debug, serde::Deserialize)]
struct PlanItemArgument {
    step: String,
    status: PlanStatusArgument,
}

#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
enum PlanStatusArgument {
    Pending,
    InProgress,
    Completed,
}

/// Parses `update_plan` arguments into the explanation and the protocol's steps.
pub(crate) fn parse_update_plan(
    arguments: &str,
) -> Result<(Option<String>, Vec<TurnPlanStep>), serde_json::Error> {
    use tandem_protocol::TurnPlanStepStatus;
    let parsed: UpdatePlanArguments = serde_json::from_str(arguments)?;
    let plan = parsed
        .plan
        .into_iter()
        .map(|item| TurnPlanStep {
            step: item.step,
            status: match item.status {
                PlanStatusArgument::Pending => TurnPlanStepStatus::Pending,
                PlanStatusArgument::InProgress => TurnPlanStepStatus::InProgress,
                PlanStatusArgument::Completed => TurnPlanStepStatus::Completed,
            },
        })
        .collect();
    Ok((parsed.explanation.filter(|text| !text.is_empty()), plan))
}

#[cfg(test)]
mod tests {
    use tandem_protocol::TurnPlanStepStatus;

    use super::*;

    #[test]
    fn plan_arguments_take_the_tool_spelling_of_statuses() {
        let (explanation, plan) = parse_update_plan(
            r#"{"explanation":"why","plan":[{"step":"a","status":"completed"},
                {"step":"b","status":"in_progress"},{"step":"c","status":"pending"}]}"#,
        )
        .expect("parses");
        assert_eq!(explanation.as_deref(), Some("why"));
        let statuses: Vec<TurnPlanStepStatus> = plan.iter().map(|step| step.status).collect();
        assert_eq!(
            statuses,
            vec![
                TurnPlanStepStatus::Completed,
                TurnPlanStepStatus::InProgress,
                TurnPlanStepStatus::Pending
            ]
        );
        assert!(parse_update_plan(r#"{"plan":[{"step":"a","status":"inProgress"}]}"#).is_err());
        assert!(parse_update_plan(r#"{"explanation":"no plan"}"#).is_err());
    }

    #[test]
    fn streamed_parts_grow_to_the_index_they_name() {
        let mut reasoning = StreamingReasoning {
            id: "r".into(),
            summary: Vec::new(),
            content: Vec::new(),
        };
        assert!(reasoning.record(&ReasoningDelta::SummaryPartAdded { summary_index: 0 }));
        assert!(reasoning.record(&ReasoningDelta::SummaryText {
            summary_index: 1,
            delta: "b".into()
        }));
        assert!(!reasoning.record(&ReasoningDelta::Text {
            content_index: 0,
            delta: String::new()
        }));
        assert_eq!(reasoning.summary(), ["", "b"]);
        assert_eq!(reasoning.content(), [""]);
    }
}

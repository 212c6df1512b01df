//! Plans and reasoning (issue 29, points 3 and 4): `turn/plan/updated`, the agent's checklist
//! as the `update_plan` tool sets it, and the notifications that stream a `reasoning` item
//! (`item/reasoning/summaryPartAdded`, `item/reasoning/summaryTextDelta`,
//! `item/reasoning/textDelta`). The item itself is [`ThreadItem::Reasoning`].

#[allow(unused_imports)]
use super::*;

/// The status of one step of a plan (`turn/plan/updated`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub enum TurnPlanStepStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

/// One step of a plan: `{step, status}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct TurnPlanStep {
    /// What the step does.
    pub step: String,
    /// Where it stands.
    pub status: TurnPlanStepStatus,
}

/// `turn/plan/updated` params: the whole plan as the agent last set it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct TurnPlanUpdatedNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// Why the plan changed, if the agent said.
    pub explanation: Option<String>,
    /// Every step, in order.
    pub plan: Vec<TurnPlanStep>,
}

/// `item/reasoning/summaryPartAdded` params: a new part of a reasoning item's summary starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ReasoningSummaryPartAddedNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The `reasoning` item.
    pub item_id: String,
    /// The index of the part in the item's `summary`.
    pub summary_index: i64,
}

/// `item/reasoning/summaryTextDelta` params: text of one part of a reasoning summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ReasoningSummaryTextDeltaNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The `reasoning` item.
    pub item_id: String,
    /// Text to append.
    pub delta: String,
    /// The index of the part in the item's `summary`.
    pub summary_index: i64,
}

/// `item/reasoning/textDelta` params: the model's own reasoning text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ReasoningTextDeltaNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The `reasoning` item.
    pub item_id: String,
    /// Text to append.
    pub delta: String,
    /// The index of the part in the item's `content`.
    pub content_index: i64,
}

//! What the agent's plan and reasoning send (issue 29, points 3 and 4): `turn/plan/updated`
//! for the `update_plan` tool, and the `item/reasoning/*` deltas of a `reasoning` item. The
//! item itself starts and completes through the runtime's item methods, so it is stored
//! before its `item/completed` like every other item; the plan is a notification only (the
//! reference keeps no plan item either).

use tandem_protocol::{
    ReasoningSummaryPartAddedNotification, ReasoningSummaryTextDeltaNotification,
    ReasoningTextDeltaNotification, ServerNotification, TurnPlanStep, TurnPlanUpdatedNotification,
};

use crate::agent::ReasoningDelta;

use super::TurnRun;

/// A part index as the wire's `i64` (no stream has that many parts).
fn wire_index(index: usize) -> i64 {
    i64::try_from(index).unwrap_or(i64::MAX)
}

impl TurnRun {
    /// Sends `turn/plan/updated` with the whole plan.
    pub(super) async fn plan_updated(&self, explanation: Option<String>, plan: Vec<TurnPlanStep>) {
        self.notify(ServerNotification::TurnPlanUpdated(
            TurnPlanUpdatedNotification {
                thread_id: self.thread.id.clone(),
                turn_id: self.turn_id.clone(),
                explanation,
                plan,
            },
        ))
        .await;
    }

    /// Sends the notification of `delta` of reasoning item `item_id`.
    pub(super) async fn reasoning_delta(&self, item_id: &str, delta: ReasoningDelta) {
        let thread_id = self.thread.id.clone();
        let turn_id = self.turn_id.clone();
        let item_id = item_id.to_owned();
        let note = match delta {
            ReasoningDelta::SummaryPartAdded { summary_index } => {
                ServerNotification::ReasoningSummaryPartAdded(
                    ReasoningSummaryPartAddedNotification {
                        thread_id,
                        turn_id,
                        item_id,
                        summary_index: wire_index(summary_index),
                    },
                )
            }
            ReasoningDelta::SummaryText {
                summary_index,
                delta,
            } => ServerNotification::ReasoningSummaryTextDelta(
                ReasoningSummaryTextDeltaNotification {
                    thread_id,
                    turn_id,
                    item_id,
                    delta,
                    summary_index: wire_index(summary_index),
                },
            ),
            ReasoningDelta::Text {
                content_index,
                delta,
            } => ServerNotification::ReasoningTextDelta(ReasoningTextDeltaNotification {
                thread_id,
                turn_id,
                item_id,
                delta,
                content_index: wire_index(content_index),
            }),
        };
        self.notify(note).await;
    }
}

//! The coding agent's notifications applied to the transcript (issue 29, point 8): the turn's
//! plan (`turn/plan/updated`, one [`Entry::Plan`] per turn replaced by each update) and the
//! deltas of a reasoning item (`item/reasoning/summaryPartAdded`,
//! `item/reasoning/summaryTextDelta`, `item/reasoning/textDelta`), which grow its
//! [`Entry::Reasoning`] until `item/completed` replaces it with the final item.

use tandem_protocol::ServerNotification;

use super::{AppState, Entry};

impl AppState {
    /// Applies a notification of the running turn that is not one of the client's typed
    /// events; the ones the transcript does not show are ignored.
    pub(super) fn agent_notification(&mut self, note: ServerNotification) {
        match note {
            ServerNotification::TurnPlanUpdated(update) => {
                let entry = Entry::Plan {
                    turn_id: update.turn_id.clone(),
                    explanation: update.explanation,
                    steps: update.plan,
                };
                let shown = self.transcript.iter().rposition(
                    |entry| matches!(entry, Entry::Plan { turn_id, .. } if *turn_id == update.turn_id),
                );
                match shown {
                    Some(index) => self.transcript[index] = entry,
                    None => self.push_entry(entry),
                }
            }
            ServerNotification::ReasoningSummaryPartAdded(part) => {
                if let Some((summary, _)) = self.reasoning(&part.item_id) {
                    let index = usize::try_from(part.summary_index).unwrap_or(usize::MAX);
                    // Parts are added in order; a part already there (a replay) is kept.
                    while summary.len() <= index && summary.len() < MAX_PARTS {
                        summary.push(String::new());
                    }
                }
            }
            ServerNotification::ReasoningSummaryTextDelta(delta) => {
                if let Some((summary, _)) = self.reasoning(&delta.item_id) {
                    append(summary, delta.summary_index, &delta.delta);
                }
            }
            ServerNotification::ReasoningTextDelta(delta) => {
                if let Some((_, content)) = self.reasoning(&delta.item_id) {
                    append(content, delta.content_index, &delta.delta);
                }
            }
            _ => {}
        }
    }

    /// The summary and content of reasoning item `item_id`, added to the transcript if it is
    /// not there yet (a delta that arrives before `item/started` after a reconnect).
    fn reasoning(&mut self, item_id: &str) -> Option<(&mut Vec<String>, &mut Vec<String>)> {
        let index = match self.position(item_id) {
            Some(index) => index,
            None => {
                self.push_entry(Entry::Reasoning {
                    item_id: item_id.to_owned(),
                    summary: Vec::new(),
                    content: Vec::new(),
                });
                self.transcript.len() - 1
            }
        };
        match &mut self.transcript[index] {
            Entry::Reasoning {
                summary, content, ..
            } => Some((summary, content)),
            _ => None,
        }
    }

    /// Shows reasoning in full, or folds it again.
    pub fn toggle_reasoning(&mut self) {
        self.reasoning_expanded = !self.reasoning_expanded;
    }
}

/// The most parts a reasoning entry keeps apart; a delta with a larger index goes to the last
/// (an index is the server's word, and must not make the state allocate without bound).
const MAX_PARTS: usize = 256;

/// Appends `delta` to part `index` of `parts`, creating the parts up to it.
fn append(parts: &mut Vec<String>, index: i64, delta: &str) {
    let index = usize::try_from(index).unwrap_or(0).min(MAX_PARTS - 1);
    while parts.len() <= index {
        parts.push(String::new());
    }
    parts[index].push_str(delta);
}

#[cfg(test)]
mod tests {
    use tandem_client::TurnEvent;
    use tandem_protocol::{
        ReasoningSummaryPartAddedNotification, ReasoningSummaryTextDeltaNotification,
        ReasoningTextDeltaNotification, TurnPlanStep, TurnPlanStepStatus,
        TurnPlanUpdatedNotification,
    };

    use super::*;
    use crate::state::Limits;

    fn plan(status: TurnPlanStepStatus) -> TurnEvent {
        TurnEvent::Other(ServerNotification::TurnPlanUpdated(
            TurnPlanUpdatedNotification {
                thread_id: "th".into(),
                turn_id: "t1".into(),
                explanation: None,
                plan: vec![TurnPlanStep {
                    step: "fix".into(),
                    status,
                }],
            },
        ))
    }

    #[test]
    fn one_plan_per_turn_is_replaced_by_each_update() {
        let mut state = AppState::new("in-process", None, Limits::default());
        state.apply_turn_event(plan(TurnPlanStepStatus::InProgress));
        state.notice("between");
        state.apply_turn_event(plan(TurnPlanStepStatus::Completed));
        let plans: Vec<&Entry> = state
            .transcript
            .iter()
            .filter(|entry| matches!(entry, Entry::Plan { .. }))
            .collect();
        assert_eq!(
            plans,
            [&Entry::Plan {
                turn_id: "t1".into(),
                explanation: None,
                steps: vec![TurnPlanStep {
                    step: "fix".into(),
                    status: TurnPlanStepStatus::Completed
                }],
            }]
        );
        assert!(matches!(state.transcript.front(), Some(Entry::Plan { .. })));
    }

    fn text_delta(content_index: i64, delta: &str) -> TurnEvent {
        TurnEvent::Other(ServerNotification::ReasoningTextDelta(
            ReasoningTextDeltaNotification {
                thread_id: "th".into(),
                turn_id: "t1".into(),
                item_id: "r1".into(),
                delta: delta.into(),
                content_index,
            },
        ))
    }

    #[test]
    fn reasoning_deltas_grow_their_entry() {
        let mut state = AppState::new("in-process", None, Limits::default());
        state.apply_turn_event(TurnEvent::Other(
            ServerNotification::ReasoningSummaryPartAdded(ReasoningSummaryPartAddedNotification {
                thread_id: "th".into(),
                turn_id: "t1".into(),
                item_id: "r1".into(),
                summary_index: 0,
            }),
        ));
        for delta in ["weigh ", "it"] {
            state.apply_turn_event(TurnEvent::Other(
                ServerNotification::ReasoningSummaryTextDelta(
                    ReasoningSummaryTextDeltaNotification {
                        thread_id: "th".into(),
                        turn_id: "t1".into(),
                        item_id: "r1".into(),
                        delta: delta.into(),
                        summary_index: 0,
                    },
                ),
            ));
        }
        state.apply_turn_event(text_delta(0, "all of it"));
        assert_eq!(
            state.transcript.back(),
            Some(&Entry::Reasoning {
                item_id: "r1".into(),
                summary: vec!["weigh it".into()],
                content: vec!["all of it".into()],
            })
        );
        // A hostile index is bounded.
        state.apply_turn_event(text_delta(1_000_000_000, "x"));
        let Some(Entry::Reasoning { content, .. }) = state.transcript.back() else {
            panic!("a reasoning entry");
        };
        assert_eq!(content.len(), MAX_PARTS);
    }
}

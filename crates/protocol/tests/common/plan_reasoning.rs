//! Samples of the plan and reasoning notifications and of the `reasoning` item (issue 29).

use tandem_protocol::*;

use super::{THREAD_ID, TURN_ID, s};

pub(crate) fn reasoning_item() -> ThreadItem {
    ThreadItem::Reasoning {
        id: s("rs-1"),
        summary: vec![s("Reading the failing test."), s("Then the fix.")],
        content: vec![s("The test expects 3.")],
    }
}

pub(crate) fn turn_plan_updated() -> ServerNotification {
    ServerNotification::TurnPlanUpdated(TurnPlanUpdatedNotification {
        thread_id: s(THREAD_ID),
        turn_id: s(TURN_ID),
        explanation: Some(s("Found the cause.")),
        plan: vec![
            TurnPlanStep {
                step: s("Reproduce"),
                status: TurnPlanStepStatus::Completed,
            },
            TurnPlanStep {
                step: s("Fix"),
                status: TurnPlanStepStatus::InProgress,
            },
            TurnPlanStep {
                step: s("Test"),
                status: TurnPlanStepStatus::Pending,
            },
        ],
    })
}

pub(crate) fn reasoning_summary_part_added() -> ServerNotification {
    ServerNotification::ReasoningSummaryPartAdded(ReasoningSummaryPartAddedNotification {
        thread_id: s(THREAD_ID),
        turn_id: s(TURN_ID),
        item_id: s("rs-1"),
        summary_index: 1,
    })
}

pub(crate) fn reasoning_summary_text_delta() -> ServerNotification {
    ServerNotification::ReasoningSummaryTextDelta(ReasoningSummaryTextDeltaNotification {
        thread_id: s(THREAD_ID),
        turn_id: s(TURN_ID),
        item_id: s("rs-1"),
        delta: s("Then "),
        summary_index: 1,
    })
}

pub(crate) fn reasoning_text_delta() -> ServerNotification {
    ServerNotification::ReasoningTextDelta(ReasoningTextDeltaNotification {
        thread_id: s(THREAD_ID),
        turn_id: s(TURN_ID),
        item_id: s("rs-1"),
        delta: s("The test "),
        content_index: 0,
    })
}

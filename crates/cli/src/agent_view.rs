//! [`AgentView`]: what `tandem run` and `tandem chat` remember to show a coding agent's turn
//! (issue 29, point 8): the changes of each `fileChange` item from its start (its approval
//! request names only the item, so the diff shown with the question comes from here), which
//! diffs were already shown, and the plan last printed, so that an update can replace it on a
//! terminal. The text itself comes from [`crate::render`].

use std::collections::HashMap;

use tandem_protocol::{FileUpdateChange, ThreadItem, TurnPlanUpdatedNotification};

use crate::render;

/// Where a turn's file changes, plan and reasoning stand, for one front end's output.
#[derive(Debug)]
pub(crate) struct AgentView {
    /// Whether to colour the lines.
    colour: bool,
    /// Whether reasoning is shown in full instead of folded to one line.
    pub(crate) full_reasoning: bool,
    /// The changes of each `fileChange` item started whose diff has not been shown yet.
    pending_diffs: HashMap<String, Vec<FileUpdateChange>>,
    /// The rows the last plan took, and the output mark it ended at (see [`Self::plan`]).
    last_plan: Option<(u64, usize)>,
}

impl AgentView {
    /// A view whose lines are coloured if `colour`.
    pub(crate) fn new(colour: bool) -> Self {
        Self {
            colour,
            full_reasoning: false,
            pending_diffs: HashMap::new(),
            last_plan: None,
        }
    }

    /// An item started: a file change's diff is kept for its approval or completion.
    pub(crate) fn item_started(&mut self, item: &ThreadItem) {
        if let ThreadItem::FileChange { id, changes, .. } = item
            && !changes.is_empty()
        {
            self.pending_diffs.insert(id.clone(), changes.clone());
        }
    }

    /// The diff to show with the approval request of item `item_id` (empty if it was shown or
    /// never reported).
    pub(crate) fn approval_diff(&mut self, item_id: &str) -> Vec<String> {
        self.pending_diffs
            .remove(item_id)
            .map(|changes| render::file_change_lines(&changes, self.colour))
            .unwrap_or_default()
    }

    /// The lines that show a completed item: a file change's diff (unless its approval showed
    /// it) and outcome, or a reasoning item folded (or in full, with
    /// [`Self::full_reasoning`]). Other items show nothing here.
    pub(crate) fn item_completed(&mut self, item: &ThreadItem) -> Vec<String> {
        match item {
            ThreadItem::FileChange {
                id,
                changes,
                status,
            } => {
                let mut lines = match self.pending_diffs.remove(id) {
                    Some(_) => render::file_change_lines(changes, self.colour),
                    None => Vec::new(),
                };
                lines.extend(render::file_change_outcome(changes, *status));
                lines
            }
            ThreadItem::Reasoning {
                summary, content, ..
            } => {
                if self.full_reasoning {
                    render::reasoning_full(summary, content, self.colour)
                } else {
                    render::reasoning_folded(summary, content, self.colour)
                        .into_iter()
                        .collect()
                }
            }
            _ => Vec::new(),
        }
    }

    /// The text that shows `update`'s plan as a checklist, one line each, newline-ended.
    /// `mark` counts what the output has written so far; when it is where the last plan
    /// ended and the output is a terminal of `size` (columns, rows; `None`: not a terminal)
    /// that still shows all of that plan, the text starts by erasing it, so the checklist
    /// updates in place; otherwise it is printed anew.
    /// Tell [`Self::plan_written`] the mark after writing it.
    pub(crate) fn plan(
        &mut self,
        update: &TurnPlanUpdatedNotification,
        mark: u64,
        size: Option<(usize, usize)>,
    ) -> PlanText {
        let lines = render::plan_lines(update.explanation.as_deref(), &update.plan, self.colour);
        let erase = match (self.last_plan, size) {
            // The cursor cannot go above the screen's top: a taller plan is printed anew.
            (Some((at, rows)), Some((_, screen_rows))) if at == mark && rows < screen_rows => {
                render::erase_rows_above(rows)
            }
            _ => String::new(),
        };
        let rows = size.map(|(columns, _)| render::rows_on_screen(&lines, columns));
        PlanText {
            text: format!("{erase}{}\n", lines.join("\n")),
            rows,
        }
    }

    /// Something the output does not count was shown (the line editor echoing what the user
    /// typed, a new turn): the next plan is printed anew.
    pub(crate) fn forget_plan(&mut self) {
        self.last_plan = None;
    }

    /// The plan of [`Self::plan`] was written and the output's mark is now `mark`.
    pub(crate) fn plan_written(&mut self, text: &PlanText, mark: u64) {
        self.last_plan = text.rows.map(|rows| (mark, rows));
    }
}

/// A plan to print ([`AgentView::plan`]).
#[derive(Debug)]
pub(crate) struct PlanText {
    /// What to write.
    pub(crate) text: String,
    /// The rows it takes on the terminal, if it goes to one.
    rows: Option<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use tandem_protocol::{TurnPlanStep, TurnPlanStepStatus};

    fn update(status: TurnPlanStepStatus) -> TurnPlanUpdatedNotification {
        TurnPlanUpdatedNotification {
            thread_id: "th".into(),
            turn_id: "t".into(),
            explanation: None,
            plan: vec![TurnPlanStep {
                step: "fix it".into(),
                status,
            }],
        }
    }

    #[test]
    fn a_plan_replaces_the_last_one_only_when_nothing_came_between() {
        let mut view = AgentView::new(false);
        let first = view.plan(&update(TurnPlanStepStatus::Pending), 0, Some((80, 24)));
        assert_eq!(first.text, "plan:\n  [ ] fix it\n");
        view.plan_written(&first, 1);
        let second = view.plan(&update(TurnPlanStepStatus::InProgress), 1, Some((80, 24)));
        assert_eq!(second.text, "\r\x1b[2A\x1b[Jplan:\n  [~] fix it\n");
        view.plan_written(&second, 2);
        // Something else was written since: printed anew.
        let third = view.plan(&update(TurnPlanStepStatus::Completed), 3, Some((80, 24)));
        assert_eq!(third.text, "plan:\n  [x] fix it\n");
        // Taller than the screen: printed anew.
        let mut tall = AgentView::new(false);
        let text = tall.plan(&update(TurnPlanStepStatus::Pending), 0, Some((80, 2)));
        tall.plan_written(&text, 1);
        let again = tall.plan(&update(TurnPlanStepStatus::Pending), 1, Some((80, 2)));
        assert!(!again.text.contains('\x1b'));
        // Not a terminal: never erased.
        view.plan_written(&third, 4);
        let mut piped = AgentView::new(false);
        let text = piped.plan(&update(TurnPlanStepStatus::Pending), 0, None);
        piped.plan_written(&text, 1);
        let again = piped.plan(&update(TurnPlanStepStatus::Pending), 1, None);
        assert!(!again.text.contains('\x1b'));
    }

    #[test]
    fn a_diff_is_shown_once_with_its_approval_or_its_completion() {
        let item = |status: &str| -> ThreadItem {
            serde_json::from_value(serde_json::json!({
                "type": "fileChange", "id": "f1", "status": status,
                "changes": [{"path": "/w/a", "kind": {"type": "add"},
                             "diff": "diff --git a/a b/a\n@@ -0,0 +1 @@\n+x\n"}]
            }))
            .expect("an item")
        };
        let mut view = AgentView::new(false);
        view.item_started(&item("inProgress"));
        assert_eq!(view.approval_diff("f1")[0], "patch: add /w/a");
        assert_eq!(
            view.item_completed(&item("declined")),
            ["(patch declined; no file changed: /w/a)"]
        );
        view.item_started(&item("inProgress"));
        let lines = view.item_completed(&item("completed"));
        assert_eq!(lines.first().map(String::as_str), Some("patch: add /w/a"));
        assert_eq!(
            lines.last().map(String::as_str),
            Some("(patch applied: /w/a)")
        );
    }
}

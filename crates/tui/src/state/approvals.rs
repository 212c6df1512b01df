//! What the approval prompt and the question prompt show: [`ApprovalView`] (a command to run
//! or a file change to write) and [`QuestionView`]. The live request objects stay in the app,
//! keyed by [`ApprovalView::key`].

use tandem_protocol::{CommandExecutionRequestApprovalParams, FileChangeRequestApprovalParams};

/// An approval the user is asked for: a command, or a file change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalView {
    /// The key the app keeps the live request under (the request id).
    pub key: String,
    /// The `commandExecution` or `fileChange` item.
    pub item_id: String,
    /// What is asked for.
    pub subject: ApprovalSubject,
    /// Why the agent wants it (for a file change: why the server asks), if said.
    pub reason: Option<String>,
}

/// What an approval asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalSubject {
    /// Running a command.
    Command {
        /// The command.
        command: String,
        /// Its working directory.
        cwd: String,
    },
    /// Writing the changes of a `fileChange` item (its diff is in the transcript).
    FileChange {
        /// The files it changes.
        paths: Vec<String>,
    },
}

impl ApprovalView {
    /// The view of a command approval request kept under `key`.
    pub fn new(key: impl Into<String>, params: &CommandExecutionRequestApprovalParams) -> Self {
        Self {
            key: key.into(),
            item_id: params.item_id.clone(),
            subject: ApprovalSubject::Command {
                command: params.command.clone(),
                cwd: params.cwd.clone(),
            },
            reason: params.reason.clone(),
        }
    }

    /// The view of a file change approval request kept under `key`; `paths` are the files of
    /// its item (as the transcript has them).
    pub fn file_change(
        key: impl Into<String>,
        params: &FileChangeRequestApprovalParams,
        paths: Vec<String>,
    ) -> Self {
        Self {
            key: key.into(),
            item_id: params.item_id.clone(),
            subject: ApprovalSubject::FileChange { paths },
            reason: params.reason.clone(),
        }
    }

    /// The command, for a command approval.
    pub fn command(&self) -> Option<&str> {
        match &self.subject {
            ApprovalSubject::Command { command, .. } => Some(command),
            ApprovalSubject::FileChange { .. } => None,
        }
    }
}

/// Questions of the agent (`item/tool/requestUserInput`); the next submission answers them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuestionView {
    /// The key the app keeps the live request under.
    pub key: String,
    /// The questions' texts.
    pub questions: Vec<String>,
}

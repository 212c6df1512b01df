//! undo29: undoing a thread's last turn, files included, as `tandem chat` and `tandem tui`
//! offer it (`/undo`): `thread/rollback` of one turn with the Tandem extension
//! `restoreFiles: true` (docs/protocol.md, "Undoing file changes"), and the lines that tell a
//! person what became of the files. Kept here so that both front ends say the same.

use tandem_protocol::client_methods::ThreadRollback;
use tandem_protocol::{
    FileRestoreResult, ThreadRollbackParams, ThreadRollbackResponse, ThreadTurnsListParams,
};

use crate::client::Client;
use crate::error::ClientError;

impl Client {
    /// Drops the last turn of `thread_id` and puts back the files its patches changed, where
    /// nothing changed them since. `None` when the thread has no turn to undo.
    pub async fn undo_last_turn(
        &self,
        thread_id: &str,
    ) -> Result<Option<ThreadRollbackResponse>, ClientError> {
        let last = self
            .list_turns(ThreadTurnsListParams::new(thread_id).limit(1))
            .await?;
        if last.data.is_empty() {
            return Ok(None);
        }
        let params = ThreadRollbackParams {
            thread_id: thread_id.to_owned(),
            num_turns: 1,
            restore_files: Some(true),
        };
        self.call::<ThreadRollback>(params).await.map(Some)
    }
}

/// What an undo did, one line each: the files put back, then those left alone with why.
pub fn undo_report(result: &FileRestoreResult) -> Vec<String> {
    let restored = result.restored_files.as_deref().unwrap_or_default();
    let skipped = result.skipped_files.as_deref().unwrap_or_default();
    if restored.is_empty() && skipped.is_empty() {
        return vec!["(the last turn is undone; it changed no file through patches)".to_owned()];
    }
    let mut lines = vec!["(the last turn is undone)".to_owned()];
    lines.extend(restored.iter().map(|path| format!("restored {path}")));
    lines.extend(
        skipped
            .iter()
            .map(|file| format!("left alone {}: {}", file.path, file.reason)),
    );
    lines
}

#[cfg(test)]
mod tests {
    use tandem_protocol::SkippedFile;

    use super::*;

    #[test]
    fn the_report_names_each_file_and_why_one_was_left_alone() {
        let result = FileRestoreResult {
            restored_files: Some(vec!["/w/a.txt".into()]),
            skipped_files: Some(vec![SkippedFile {
                path: "/w/b.txt".into(),
                reason: "it changed on disk".into(),
            }]),
            unrestorable_turns: Some(Vec::new()),
        };
        assert_eq!(
            undo_report(&result),
            [
                "(the last turn is undone)",
                "restored /w/a.txt",
                "left alone /w/b.txt: it changed on disk"
            ]
        );
        assert_eq!(
            undo_report(&FileRestoreResult::default()),
            ["(the last turn is undone; it changed no file through patches)"]
        );
    }
}

//! undo29: `restoreFiles: true` on `thread/revert` and `thread/rollback` (a Tandem extension,
//! docs/protocol.md "Undoing file changes"): before the history is cut, the files the
//! reverted turns changed through patches are put back from the turns' stored checkpoints
//! (`crate::turn::restore_files` decides and writes), under the thread's sandbox as it is now.
//! Files go back before the turns are dropped, since the checkpoints go with them: a restore
//! that cannot write leaves the files and the history as they were.

use std::path::Path;
use std::sync::Arc;

use tandem_protocol::{FileRestoreResult, JSONRPCErrorError};

use crate::store::{self, ThreadRecord, ThreadStore};

use super::{ThreadService, store_error};

impl ThreadService {
    /// Restores the files of the stored turn `from_turn_id` and every later one of `record`'s
    /// thread, and says what became of each.
    pub(super) async fn restore_files(
        &self,
        record: &ThreadRecord,
        store: &Arc<dyn ThreadStore>,
        from_turn_id: &str,
    ) -> Result<FileRestoreResult, JSONRPCErrorError> {
        let checkpoints = store
            .file_checkpoints(&record.id, from_turn_id)
            .await
            .map_err(store_error)?;
        let policy = crate::config::sandbox::thread_policy(&record.config, &self.config().sandbox);
        let roots = self
            .sandboxing
            .writable_roots(&policy, Path::new(&record.cwd))
            .map_err(|error| {
                JSONRPCErrorError::invalid_request(format!(
                    "the files cannot be restored: the thread's sandbox cannot be worked out \
                     ({error}); no file was changed and the history was kept"
                ))
            })?;
        let thread_id = record.id.clone();
        let tag = format!("restore-{}", store::new_id());
        let result = tokio::task::spawn_blocking(move || {
            crate::turn::restore_files(&checkpoints, roots.as_ref(), &tag)
        })
        .await
        .map_err(|panic| {
            JSONRPCErrorError::internal(format!(
                "the task restoring the files died ({panic}); this is a bug, please report it"
            ))
        })?
        .map_err(|error| JSONRPCErrorError::internal(error.to_string()))?;
        tracing::info!(
            thread = %thread_id,
            restored = result.restored_files.as_ref().map_or(0, Vec::len),
            skipped = result.skipped_files.as_ref().map_or(0, Vec::len),
            "files restored"
        );
        Ok(result)
    }
}

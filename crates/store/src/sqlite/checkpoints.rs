//! File checkpoints on SQLite (schema version 5, [`crate::checkpoint`]): one row per turn that
//! changed files, the JSON of its [`FileCheckpoint`] beside the bytes of earlier content it
//! keeps, so that the per-thread bound is enforced without decoding every checkpoint.

use rusqlite::{Connection, OptionalExtension, params};

use super::SqliteThreadStore;
use super::statements::{require_thread, turn_seq};
use crate::checkpoint::{FileCheckpoint, over_budget};
use crate::codec::{decode, encode};
use crate::{StoreError, evicted_reason};

/// Schema version 5: file checkpoints. A checkpoint belongs to its turn, so reverting the
/// turn (or deleting the thread) drops it.
pub(super) const SCHEMA_V5: &str = "
CREATE TABLE file_checkpoints (
    thread_id  TEXT NOT NULL,
    turn_id    TEXT NOT NULL,
    kept_bytes INTEGER NOT NULL,
    checkpoint TEXT NOT NULL,           -- JSON of FileCheckpoint
    PRIMARY KEY (thread_id, turn_id),
    FOREIGN KEY (thread_id, turn_id) REFERENCES turns (thread_id, id) ON DELETE CASCADE
) STRICT;
";

impl SqliteThreadStore {
    /// See [`crate::ThreadStore::put_file_checkpoint`].
    pub(super) async fn put_checkpoint(
        &self,
        thread_id: &str,
        turn_id: &str,
        checkpoint: &FileCheckpoint,
        thread_max_bytes: u64,
    ) -> Result<(), StoreError> {
        let thread_id = thread_id.to_owned();
        let turn_id = turn_id.to_owned();
        let text = encode(checkpoint, "file checkpoint")?;
        let kept = i64::try_from(checkpoint.kept_bytes()).unwrap_or(i64::MAX);
        self.write_thread(thread_id.clone(), move |connection| {
            require_thread(connection, &thread_id)?;
            if turn_seq(connection, &thread_id, &turn_id)?.is_none() {
                return Err(StoreError::TurnNotFound { thread_id, turn_id });
            }
            connection
                .prepare_cached(
                    "INSERT INTO file_checkpoints (thread_id, turn_id, kept_bytes, checkpoint) \
                     VALUES (?1, ?2, ?3, ?4) ON CONFLICT (thread_id, turn_id) DO UPDATE \
                     SET kept_bytes = excluded.kept_bytes, checkpoint = excluded.checkpoint",
                )?
                .execute(params![thread_id, turn_id, kept, text])?;
            evict(connection, &thread_id, thread_max_bytes)
        })
        .await
    }

    /// See [`crate::ThreadStore::file_checkpoints`].
    pub(super) async fn checkpoints_from(
        &self,
        thread_id: &str,
        from_turn_id: &str,
    ) -> Result<Vec<(String, FileCheckpoint)>, StoreError> {
        let thread_id = thread_id.to_owned();
        let from_turn_id = from_turn_id.to_owned();
        self.run(move |connection| {
            let transaction = connection.transaction()?;
            require_thread(&transaction, &thread_id)?;
            let Some(seq) = turn_seq(&transaction, &thread_id, &from_turn_id)? else {
                return Err(StoreError::TurnNotFound {
                    thread_id,
                    turn_id: from_turn_id,
                });
            };
            let rows = transaction
                .prepare_cached(
                    "SELECT c.turn_id, c.checkpoint FROM file_checkpoints c \
                     JOIN turns t ON t.thread_id = c.thread_id AND t.id = c.turn_id \
                     WHERE c.thread_id = ?1 AND t.seq >= ?2 ORDER BY t.seq DESC",
                )?
                .query_map(params![thread_id, seq], |row| {
                    Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
                })?
                .collect::<Result<Vec<_>, _>>()?;
            rows.into_iter()
                .map(|(turn_id, text)| {
                    let checkpoint = decode(&text, || format!("the file checkpoint of {turn_id}"))?;
                    Ok((turn_id, checkpoint))
                })
                .collect()
        })
        .await
    }
}

/// Drops the contents of the thread's checkpoints past `thread_max_bytes` (oldest first).
fn evict(
    connection: &Connection,
    thread_id: &str,
    thread_max_bytes: u64,
) -> Result<(), StoreError> {
    let newest_first = connection
        .prepare_cached(
            "SELECT c.turn_id, c.kept_bytes FROM file_checkpoints c \
             JOIN turns t ON t.thread_id = c.thread_id AND t.id = c.turn_id \
             WHERE c.thread_id = ?1 AND c.kept_bytes > 0 ORDER BY t.seq DESC",
        )?
        .query_map([thread_id], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, i64>(1)?.max(0) as u64,
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    for turn_id in over_budget(&newest_first, thread_max_bytes) {
        let text: Option<String> = connection
            .prepare_cached(
                "SELECT checkpoint FROM file_checkpoints WHERE thread_id = ?1 AND turn_id = ?2",
            )?
            .query_row(params![thread_id, turn_id], |row| row.get(0))
            .optional()?;
        let Some(text) = text else { continue };
        let mut checkpoint: FileCheckpoint =
            decode(&text, || format!("the file checkpoint of {turn_id}"))?;
        checkpoint.drop_contents(evicted_reason(thread_max_bytes));
        connection
            .prepare_cached(
                "UPDATE file_checkpoints SET kept_bytes = 0, checkpoint = ?3 \
                 WHERE thread_id = ?1 AND turn_id = ?2",
            )?
            .execute(params![
                thread_id,
                turn_id,
                encode(&checkpoint, "file checkpoint")?
            ])?;
    }
    Ok(())
}

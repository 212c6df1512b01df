//! File checkpoints on PostgreSQL (migration 4, [`crate::checkpoint`]): the SQLite store's
//! rules, each operation one transaction (the write fenced by the thread's writer lease).

use tokio_postgres::types::ToSql;

use super::PostgresThreadStore;
use super::statements::{require_thread, turn_seq};
use crate::checkpoint::{FileCheckpoint, over_budget};
use crate::codec::{decode, encode};
use crate::{StoreError, evicted_reason};

impl PostgresThreadStore {
    /// See [`crate::ThreadStore::put_file_checkpoint`].
    pub(super) async fn put_checkpoint(
        &self,
        thread_id: &str,
        turn_id: &str,
        checkpoint: &FileCheckpoint,
        thread_max_bytes: u64,
    ) -> Result<(), StoreError> {
        let text = encode(checkpoint, "file checkpoint")?;
        let kept = i64::try_from(checkpoint.kept_bytes()).unwrap_or(i64::MAX);
        self.in_write(Some(thread_id), async |db| {
            require_thread(db, thread_id).await?;
            if turn_seq(db, thread_id, turn_id).await?.is_none() {
                return Err(StoreError::TurnNotFound {
                    thread_id: thread_id.to_owned(),
                    turn_id: turn_id.to_owned(),
                });
            }
            let params: [&(dyn ToSql + Sync); 4] = [&thread_id, &turn_id, &kept, &text];
            db.execute(
                "INSERT INTO file_checkpoints (thread_id, turn_id, kept_bytes, checkpoint) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (thread_id, turn_id) DO UPDATE \
                 SET kept_bytes = excluded.kept_bytes, checkpoint = excluded.checkpoint",
                &params,
            )
            .await?;
            let newest_first: Vec<(String, u64)> = db
                .query(
                    "SELECT c.turn_id, c.kept_bytes FROM file_checkpoints c \
                     JOIN turns t ON t.thread_id = c.thread_id AND t.id = c.turn_id \
                     WHERE c.thread_id = $1 AND c.kept_bytes > 0 ORDER BY t.seq DESC",
                    &[&thread_id],
                )
                .await?
                .iter()
                .map(|row| (row.get(0), row.get::<_, i64>(1).max(0) as u64))
                .collect();
            for dropped in over_budget(&newest_first, thread_max_bytes) {
                let Some(row) = db
                    .query_opt(
                        "SELECT checkpoint FROM file_checkpoints \
                         WHERE thread_id = $1 AND turn_id = $2",
                        &[&thread_id, &dropped],
                    )
                    .await?
                else {
                    continue;
                };
                let text: String = row.get(0);
                let mut old: FileCheckpoint =
                    decode(&text, || format!("the file checkpoint of {dropped}"))?;
                old.drop_contents(evicted_reason(thread_max_bytes));
                let text = encode(&old, "file checkpoint")?;
                db.execute(
                    "UPDATE file_checkpoints SET kept_bytes = 0, checkpoint = $3 \
                     WHERE thread_id = $1 AND turn_id = $2",
                    &[&thread_id, &dropped, &text],
                )
                .await?;
            }
            Ok(())
        })
        .await
    }

    /// See [`crate::ThreadStore::file_checkpoints`].
    pub(super) async fn checkpoints_from(
        &self,
        thread_id: &str,
        from_turn_id: &str,
    ) -> Result<Vec<(String, FileCheckpoint)>, StoreError> {
        self.in_read(async |db| {
            require_thread(db, thread_id).await?;
            let Some(seq) = turn_seq(db, thread_id, from_turn_id).await? else {
                return Err(StoreError::TurnNotFound {
                    thread_id: thread_id.to_owned(),
                    turn_id: from_turn_id.to_owned(),
                });
            };
            db.query(
                "SELECT c.turn_id, c.checkpoint FROM file_checkpoints c \
                 JOIN turns t ON t.thread_id = c.thread_id AND t.id = c.turn_id \
                 WHERE c.thread_id = $1 AND t.seq >= $2 ORDER BY t.seq DESC",
                &[&thread_id, &seq],
            )
            .await?
            .iter()
            .map(|row| {
                let turn_id: String = row.get(0);
                let text: String = row.get(1);
                let checkpoint = decode(&text, || format!("the file checkpoint of {turn_id}"))?;
                Ok((turn_id, checkpoint))
            })
            .collect()
        })
        .await
    }
}

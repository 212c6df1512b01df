//! [`ThreadStore`] for [`PostgresThreadStore`]: each operation one transaction of the
//! statements in `statements`.

use async_trait::async_trait;
use tandem_protocol::{
    SortDirection, ThreadAttachment, ThreadAttachmentAddOutcome, ThreadAttachmentAddResponse,
    ThreadItem, Turn, TurnItemsView,
};
use tokio_postgres::types::ToSql;

use super::super::lease::{LeaseRenewal, LeaseSettings};
use super::super::paging::{self, Anchor, ItemListQuery, ItemTimes, StoredItem};
use super::super::{
    Compaction, FileCheckpoint, IdempotencyRecord, Page, StoreError, ThreadListQuery, ThreadRecord,
    ThreadStore, ThreadUpdate, TurnEndUpdate, TurnListQuery, parse_thread_cursor, thread_cursor,
};
use super::PostgresThreadStore;
use crate::codec::{encode, encode_exact, encode_word, limit_plus_one};

use super::statements::*;

#[async_trait]
impl ThreadStore for PostgresThreadStore {
    async fn create_thread(
        &self,
        thread: &ThreadRecord,
        history: &[Turn],
    ) -> Result<(), StoreError> {
        self.in_write(Some(&thread.id), async |db| {
            insert_new_thread(db, thread, history).await
        })
        .await
    }

    async fn get_thread(&self, thread_id: &str) -> Result<Option<ThreadRecord>, StoreError> {
        self.on_connection(async |db| read_thread(db, thread_id).await)
            .await
    }

    async fn get_thread_with_turns(
        &self,
        thread_id: &str,
    ) -> Result<Option<(ThreadRecord, Vec<Turn>)>, StoreError> {
        self.in_read(async |db| {
            let Some(record) = read_thread(db, thread_id).await? else {
                return Ok(None);
            };
            let turns = read_turns(
                db,
                thread_id,
                None,
                SortDirection::Asc,
                None,
                TurnItemsView::Full,
            )
            .await?;
            Ok(Some((record, turns)))
        })
        .await
    }

    async fn update_thread(
        &self,
        thread_id: &str,
        update: &ThreadUpdate,
    ) -> Result<ThreadRecord, StoreError> {
        self.in_write(Some(thread_id), async |db| {
            update_record(db, thread_id, update).await
        })
        .await
    }

    async fn list_threads(
        &self,
        query: &ThreadListQuery,
    ) -> Result<Page<ThreadRecord>, StoreError> {
        let after = query
            .cursor
            .as_deref()
            .map(parse_thread_cursor)
            .transpose()?;
        let (comparison, order) = match query.direction {
            SortDirection::Asc => (">", "ASC"),
            SortDirection::Desc => ("<", "DESC"),
        };
        let mut sql = format!("SELECT {THREAD_COLUMNS} FROM threads WHERE TRUE");
        let mut values: Vec<Param> = Vec::new();
        if let Some((created_at, id)) = after {
            values.push(Box::new(created_at));
            values.push(Box::new(id));
            sql.push_str(&format!(
                " AND (created_at, id) {comparison} (${}, ${})",
                values.len() - 1,
                values.len()
            ));
        }
        for (column, accepted) in [("source_kind", &query.source_kinds), ("cwd", &query.cwds)] {
            if !accepted.is_empty() {
                values.push(Box::new(accepted.clone()));
                sql.push_str(&format!(" AND {column} = ANY(${})", values.len()));
            }
        }
        sql.push_str(if query.archived {
            " AND archived_at IS NOT NULL"
        } else {
            " AND archived_at IS NULL"
        });
        if let Some(term) = query.search_term() {
            // strpos is a case-sensitive substring test, like str::contains; a NULL name never
            // matches.
            values.push(Box::new(term.to_owned()));
            sql.push_str(&format!(" AND strpos(name, ${}) > 0", values.len()));
        }
        values.push(Box::new(limit_plus_one(query.limit)));
        sql.push_str(&format!(
            " ORDER BY created_at {order}, id {order} LIMIT ${}",
            values.len()
        ));
        let params: Vec<&(dyn ToSql + Sync)> =
            values.iter().map(|value| value.as_ref() as _).collect();
        let records = self
            .on_connection(async |db| {
                let statement = db.prepare_cached(&sql).await?;
                db.query(&statement, &params)
                    .await?
                    .iter()
                    .map(thread_from_row)
                    .collect::<Result<Vec<_>, _>>()
            })
            .await?;
        Ok(Page::from_candidates(records, query.limit, thread_cursor))
    }

    async fn delete_thread(&self, thread_id: &str) -> Result<bool, StoreError> {
        self.in_write(Some(thread_id), async |db| {
            // A deleted thread's keys go with it (the scope is the thread id).
            db.execute(
                "DELETE FROM idempotency_keys WHERE scope = $1",
                &[&thread_id],
            )
            .await?;
            Ok(db
                .execute("DELETE FROM threads WHERE id = $1", &[&thread_id])
                .await?
                > 0)
        })
        .await
    }

    async fn store_turn(
        &self,
        thread_id: &str,
        turn: &Turn,
        first_item_times: ItemTimes,
        update: &ThreadUpdate,
    ) -> Result<ThreadRecord, StoreError> {
        self.in_write(Some(thread_id), async |db| {
            let mut record = require_record(db, thread_id).await?;
            let seq = match turn_seq(db, thread_id, &turn.id).await? {
                Some(seq) => {
                    db.execute(
                        "DELETE FROM turns WHERE thread_id = $1 AND id = $2",
                        &[&thread_id, &turn.id],
                    )
                    .await?;
                    seq
                }
                None => {
                    let statement = db
                        .prepare_cached(
                            "SELECT COALESCE(MAX(seq), 0) + 1 FROM turns WHERE thread_id = $1",
                        )
                        .await?;
                    db.query_one(&statement, &[&thread_id]).await?.get(0)
                }
            };
            insert_turn(db, thread_id, seq, turn, first_item_times).await?;
            update.apply(&mut record);
            upsert_thread(db, &record).await?;
            Ok(record)
        })
        .await
    }

    async fn put_item(
        &self,
        thread_id: &str,
        turn_id: &str,
        index: usize,
        item: &ThreadItem,
        times: ItemTimes,
    ) -> Result<(), StoreError> {
        let index = i64::try_from(index).expect("a turn holds fewer than i64::MAX items");
        let item = encode_exact(item, "item")?;
        self.in_write(Some(thread_id), async |db| {
            store_item(db, thread_id, turn_id, index, &item, times).await
        })
        .await
    }

    async fn finish_turn(
        &self,
        thread_id: &str,
        turn: &Turn,
        last_item: Option<(usize, &ThreadItem, ItemTimes)>,
        end: &TurnEndUpdate,
    ) -> Result<(), StoreError> {
        let last_item = last_item
            .map(|(index, item, times)| {
                let index = i64::try_from(index).expect("a turn holds fewer than i64::MAX items");
                encode_exact(item, "item").map(|item| (index, item, times))
            })
            .transpose()?;
        let status = encode_word(&turn.status, "turn status")?;
        let items_view = encode_word(&turn.items_view, "turn itemsView")?;
        let error = turn
            .error
            .as_ref()
            .map(|error| encode(error, "turn error"))
            .transpose()?;
        let thread_status = encode(&end.status, "thread status")?;
        self.in_write(Some(thread_id), async |db| {
            if let Some((index, item, times)) = &last_item {
                store_item(db, thread_id, &turn.id, *index, item, *times).await?;
            }
            // Only the two columns the end changes: the row's preview stays where it is.
            let statement = db
                .prepare_cached("UPDATE threads SET status = $2, updated_at = $3 WHERE id = $1")
                .await?;
            let found = db
                .execute(&statement, &[&thread_id, &thread_status, &end.updated_at])
                .await?;
            if found == 0 {
                return Err(StoreError::ThreadNotFound(thread_id.to_owned()));
            }
            let statement = db
                .prepare_cached(
                    "UPDATE turns SET status = $3, items_view = $4, error = $5, \
                     started_at = $6, completed_at = $7, duration_ms = $8 \
                     WHERE thread_id = $1 AND id = $2",
                )
                .await?;
            let changed = db
                .execute(
                    &statement,
                    &[
                        &thread_id,
                        &turn.id,
                        &status,
                        &items_view,
                        &error,
                        &turn.started_at,
                        &turn.completed_at,
                        &turn.duration_ms,
                    ],
                )
                .await?;
            if changed == 0 {
                return Err(StoreError::TurnNotFound {
                    thread_id: thread_id.to_owned(),
                    turn_id: turn.id.clone(),
                });
            }
            Ok(())
        })
        .await
    }

    async fn list_turns(
        &self,
        thread_id: &str,
        query: &TurnListQuery,
    ) -> Result<Page<Turn>, StoreError> {
        let turns = self
            .in_read(async |db| {
                require_thread(db, thread_id).await?;
                let anchor = match &query.cursor {
                    None => None,
                    Some(cursor) => {
                        let anchor = paging::parse_turn_cursor(cursor)?;
                        let seq = turn_seq(db, thread_id, &anchor.position)
                            .await?
                            .ok_or_else(|| StoreError::InvalidCursor(cursor.clone()))?;
                        Some(Anchor {
                            position: seq,
                            inclusive: anchor.inclusive,
                        })
                    }
                };
                read_turns(
                    db,
                    thread_id,
                    anchor,
                    query.direction,
                    Some(limit_plus_one(query.limit)),
                    query.items_view,
                )
                .await
            })
            .await?;
        Ok(paging::turn_page(turns, query.limit))
    }

    async fn list_items(
        &self,
        thread_id: &str,
        query: &ItemListQuery,
    ) -> Result<Page<StoredItem>, StoreError> {
        let items = self
            .in_read(async |db| read_items(db, thread_id, query).await)
            .await?;
        Ok(paging::item_page(items, query.limit))
    }

    async fn add_attachment(
        &self,
        thread_id: &str,
        attachment: &ThreadAttachment,
    ) -> Result<ThreadAttachmentAddResponse, StoreError> {
        self.in_write(Some(thread_id), async |db| {
            require_thread(db, thread_id).await?;
            if let Some(existing) = find_attachment(
                db,
                thread_id,
                &attachment.attachment_type,
                &attachment.identity_key,
            )
            .await?
            {
                return Ok(ThreadAttachmentAddResponse {
                    outcome: ThreadAttachmentAddOutcome::Existing,
                    attachment: existing,
                });
            }
            db.execute(
                &format!(
                    "INSERT INTO attachments (thread_id, {ATTACHMENT_COLUMNS}) \
                     VALUES ($1, $2, $3, $4, $5, $6)"
                ),
                &[
                    &thread_id,
                    &attachment.id,
                    &attachment.attachment_type,
                    &attachment.identity_key,
                    &encode(&attachment.payload, "attachment payload")?,
                    &attachment.created_at,
                ],
            )
            .await?;
            Ok(ThreadAttachmentAddResponse {
                outcome: ThreadAttachmentAddOutcome::Created,
                attachment: attachment.clone(),
            })
        })
        .await
    }

    async fn remove_attachment(
        &self,
        thread_id: &str,
        attachment_type: &str,
        identity_key: &str,
    ) -> Result<Option<ThreadAttachment>, StoreError> {
        self.in_write(Some(thread_id), async |db| {
            require_thread(db, thread_id).await?;
            let removed = find_attachment(db, thread_id, attachment_type, identity_key).await?;
            if removed.is_some() {
                db.execute(
                    "DELETE FROM attachments \
                     WHERE thread_id = $1 AND attachment_type = $2 AND identity_key = $3",
                    &[&thread_id, &attachment_type, &identity_key],
                )
                .await?;
            }
            Ok(removed)
        })
        .await
    }

    async fn list_attachments(&self, thread_id: &str) -> Result<Vec<ThreadAttachment>, StoreError> {
        self.in_read(async |db| {
            require_thread(db, thread_id).await?;
            // `position` follows insertion, the order clients added them in.
            db.query(
                &format!(
                    "SELECT {ATTACHMENT_COLUMNS} FROM attachments \
                     WHERE thread_id = $1 ORDER BY position"
                ),
                &[&thread_id],
            )
            .await?
            .iter()
            .map(|row| attachment_from_row(row, thread_id))
            .collect()
        })
        .await
    }

    async fn truncate_turns(
        &self,
        thread_id: &str,
        turn_id: &str,
        update: &ThreadUpdate,
    ) -> Result<ThreadRecord, StoreError> {
        self.in_write(Some(thread_id), async |db| {
            let mut record = require_record(db, thread_id).await?;
            let Some(seq) = turn_seq(db, thread_id, turn_id).await? else {
                return Err(StoreError::TurnNotFound {
                    thread_id: thread_id.to_owned(),
                    turn_id: turn_id.to_owned(),
                });
            };
            db.execute(
                "DELETE FROM turns WHERE thread_id = $1 AND seq >= $2",
                &[&thread_id, &seq],
            )
            .await?;
            update.apply(&mut record);
            upsert_thread(db, &record).await?;
            Ok(record)
        })
        .await
    }

    async fn put_compaction(
        &self,
        thread_id: &str,
        turn_id: &str,
        summary: &str,
    ) -> Result<(), StoreError> {
        self.in_write(Some(thread_id), async |db| {
            require_thread(db, thread_id).await?;
            if turn_seq(db, thread_id, turn_id).await?.is_none() {
                return Err(StoreError::TurnNotFound {
                    thread_id: thread_id.to_owned(),
                    turn_id: turn_id.to_owned(),
                });
            }
            db.execute(
                "INSERT INTO compactions (thread_id, turn_id, summary) VALUES ($1, $2, $3) \
                 ON CONFLICT (thread_id, turn_id) DO UPDATE SET summary = excluded.summary",
                &[&thread_id, &turn_id, &summary],
            )
            .await?;
            Ok(())
        })
        .await
    }

    async fn latest_compaction(&self, thread_id: &str) -> Result<Option<Compaction>, StoreError> {
        self.in_read(async |db| {
            require_thread(db, thread_id).await?;
            let statement = db.prepare_cached(LATEST_COMPACTION).await?;
            Ok(db
                .query_opt(&statement, &[&thread_id])
                .await?
                .map(|row| Compaction {
                    turn_id: row.get(0),
                    summary: row.get(1),
                }))
        })
        .await
    }

    async fn put_file_checkpoint(
        &self,
        thread_id: &str,
        turn_id: &str,
        checkpoint: &FileCheckpoint,
        thread_max_bytes: u64,
    ) -> Result<(), StoreError> {
        self.put_checkpoint(thread_id, turn_id, checkpoint, thread_max_bytes)
            .await
    }

    async fn file_checkpoints(
        &self,
        thread_id: &str,
        from_turn_id: &str,
    ) -> Result<Vec<(String, FileCheckpoint)>, StoreError> {
        self.checkpoints_from(thread_id, from_turn_id).await
    }

    async fn claim_idempotency_key(
        &self,
        record: &IdempotencyRecord,
    ) -> Result<Option<IdempotencyRecord>, StoreError> {
        self.claim_key(record).await
    }

    async fn idempotency_key(
        &self,
        scope: &str,
        key: &str,
        now: i64,
    ) -> Result<Option<IdempotencyRecord>, StoreError> {
        self.read_key(scope, key, now).await
    }

    async fn release_idempotency_key(&self, scope: &str, key: &str) -> Result<(), StoreError> {
        self.release_key(scope, key).await
    }

    async fn acquire_lease(&self, thread_id: &str) -> Result<(), StoreError> {
        self.acquire(thread_id).await
    }

    async fn create_leased_thread(
        &self,
        thread: &ThreadRecord,
        history: &[Turn],
    ) -> Result<(), StoreError> {
        self.create_leased(thread, history).await
    }

    async fn release_lease(&self, thread_id: &str) -> Result<(), StoreError> {
        self.release(thread_id).await
    }

    async fn renew_leases(&self) -> Result<LeaseRenewal, StoreError> {
        self.renew().await
    }

    fn lost_leases(&self) -> Vec<String> {
        self.leases.after_failed_renewal()
    }

    fn retire_leases(&self) {
        self.leases.retire();
    }

    fn take_handoff_requests(&self) -> Option<tokio::sync::mpsc::Receiver<String>> {
        self.handoffs.take_requests()
    }

    async fn lease_released(&self, thread_id: &str, wait: std::time::Duration) {
        self.handoffs.released(thread_id, wait).await;
    }

    fn lease_settings(&self) -> Option<&LeaseSettings> {
        Some(&self.leases.settings)
    }
}

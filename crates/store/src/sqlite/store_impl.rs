//! [`ThreadStore`] for [`SqliteThreadStore`]: each method one transaction (reads) or one
//! queued write of the group commit.

use super::*;

#[async_trait]
impl ThreadStore for SqliteThreadStore {
    async fn create_thread(
        &self,
        thread: &ThreadRecord,
        history: &[Turn],
    ) -> Result<(), StoreError> {
        let thread = thread.clone();
        let history = history.to_vec();
        self.write_thread(thread.id.clone(), move |connection| {
            insert_new_thread(connection, &thread, &history)
        })
        .await
    }

    async fn get_thread(&self, thread_id: &str) -> Result<Option<ThreadRecord>, StoreError> {
        let thread_id = thread_id.to_owned();
        self.run(move |connection| read_thread(connection, &thread_id))
            .await
    }

    async fn get_thread_with_turns(
        &self,
        thread_id: &str,
    ) -> Result<Option<(ThreadRecord, Vec<Turn>)>, StoreError> {
        let thread_id = thread_id.to_owned();
        self.run(move |connection| {
            // One read transaction, so a commit from another process cannot land between the
            // record and its turns.
            let transaction = connection.transaction()?;
            let Some(record) = read_thread(&transaction, &thread_id)? else {
                return Ok(None);
            };
            let turns = read_turns(
                &transaction,
                &thread_id,
                None,
                SortDirection::Asc,
                -1,
                TurnItemsView::Full,
            )?;
            Ok(Some((record, turns)))
        })
        .await
    }

    async fn update_thread(
        &self,
        thread_id: &str,
        update: &ThreadUpdate,
    ) -> Result<ThreadRecord, StoreError> {
        let thread_id = thread_id.to_owned();
        let update = update.clone();
        self.write_thread(thread_id.clone(), move |connection| {
            let mut record = read_thread(connection, &thread_id)?
                .ok_or_else(|| StoreError::ThreadNotFound(thread_id.clone()))?;
            update.apply(&mut record);
            upsert_thread(connection, &record)?;
            Ok(record)
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
        let mut sql = format!("SELECT {THREAD_COLUMNS} FROM threads WHERE 1 = 1");
        let mut values: Vec<rusqlite::types::Value> = Vec::new();
        if let Some((created_at, id)) = after {
            // A cursor is a position, not a row: the thread it named may be gone since.
            sql.push_str(&format!(" AND (created_at, id) {comparison} (?, ?)"));
            values.extend([created_at.into(), id.into()]);
        }
        for (column, accepted) in [("source_kind", &query.source_kinds), ("cwd", &query.cwds)] {
            if !accepted.is_empty() {
                let placeholders = vec!["?"; accepted.len()].join(", ");
                sql.push_str(&format!(" AND {column} IN ({placeholders})"));
                values.extend(accepted.iter().cloned().map(Into::into));
            }
        }
        sql.push_str(if query.archived {
            " AND archived_at IS NOT NULL"
        } else {
            " AND archived_at IS NULL"
        });
        if let Some(term) = query.search_term() {
            // instr is a case-sensitive substring test, like str::contains; a NULL name never
            // matches.
            sql.push_str(" AND instr(name, ?) > 0");
            values.push(term.to_owned().into());
        }
        sql.push_str(&format!(" ORDER BY created_at {order}, id {order} LIMIT ?"));
        values.push(limit_plus_one(query.limit).into());

        let limit = query.limit;
        let records = self
            .run(move |connection| {
                let raw = connection
                    .prepare(&sql)?
                    .query_map(params_from_iter(values), RawThread::from_row)?
                    .collect::<Result<Vec<_>, _>>()?;
                raw.into_iter().map(RawThread::decode).collect()
            })
            .await?;
        Ok(Page::from_candidates(records, limit, thread_cursor))
    }

    async fn delete_thread(&self, thread_id: &str) -> Result<bool, StoreError> {
        let thread_id = thread_id.to_owned();
        self.write_thread(thread_id.clone(), move |connection| {
            // Turns, items and attachments go with it through ON DELETE CASCADE, in the same
            // transaction.
            let deleted = connection.execute("DELETE FROM threads WHERE id = ?1", [&thread_id])?;
            connection.execute(
                "DELETE FROM idempotency_keys WHERE scope = ?1",
                [&thread_id],
            )?;
            Ok(deleted > 0)
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
        let thread_id = thread_id.to_owned();
        let turn = turn.clone();
        let update = update.clone();
        self.write_thread(thread_id.clone(), move |connection| {
            let mut record = read_thread(connection, &thread_id)?
                .ok_or_else(|| StoreError::ThreadNotFound(thread_id.clone()))?;
            let seq = match turn_seq(connection, &thread_id, &turn.id)? {
                Some(seq) => {
                    // Replacing deletes the old items through the cascade; the turn keeps its
                    // place.
                    connection.execute(
                        "DELETE FROM turns WHERE thread_id = ?1 AND id = ?2",
                        params![thread_id, turn.id],
                    )?;
                    seq
                }
                None => connection.query_row(
                    "SELECT COALESCE(MAX(seq), 0) + 1 FROM turns WHERE thread_id = ?1",
                    [&thread_id],
                    |row| row.get(0),
                )?,
            };
            insert_turn(connection, &thread_id, seq, &turn, first_item_times)?;
            update.apply(&mut record);
            upsert_thread(connection, &record)?;
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
        let thread_id = thread_id.to_owned();
        let turn_id = turn_id.to_owned();
        let index = i64::try_from(index).expect("a turn holds fewer than i64::MAX items");
        // Encoded here, on the caller's task, so the writer only copies bytes.
        let item = encode_exact(item, "item")?;
        self.write_thread(thread_id.clone(), move |connection| {
            store_item(connection, thread_id, turn_id, index, item, times)
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
        let thread_id = thread_id.to_owned();
        let turn_id = turn.id.clone();
        // Encoded here, on the caller's task, as `put_item` does.
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
        let times = (turn.started_at, turn.completed_at, turn.duration_ms);
        let thread_status = encode(&end.status, "thread status")?;
        let updated_at = end.updated_at;
        self.write_thread(thread_id.clone(), move |connection| {
            if let Some((index, item, times)) = last_item {
                store_item(
                    connection,
                    thread_id.clone(),
                    turn_id.clone(),
                    index,
                    item,
                    times,
                )?;
            }
            // Only the two columns the end changes: the row's preview stays where it is.
            let found = connection
                .prepare_cached("UPDATE threads SET status = ?2, updated_at = ?3 WHERE id = ?1")?
                .execute(params![thread_id, thread_status, updated_at])?;
            if found == 0 {
                return Err(StoreError::ThreadNotFound(thread_id));
            }
            let changed = connection
                .prepare_cached(
                    "UPDATE turns SET status = ?3, items_view = ?4, error = ?5, \
                     started_at = ?6, completed_at = ?7, duration_ms = ?8 \
                     WHERE thread_id = ?1 AND id = ?2",
                )?
                .execute(params![
                    thread_id, turn_id, status, items_view, error, times.0, times.1, times.2
                ])?;
            if changed == 0 {
                return Err(StoreError::TurnNotFound { thread_id, turn_id });
            }
            Ok(())
        })
        .await
    }

    async fn checkpoint(&self) -> Result<(), StoreError> {
        let store = self.clone();
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || {
            // Writes queued before the checkpoint go into it.
            store.flush();
            let connection = lock(&store.connection);
            // (busy, log frames, checkpointed frames); busy means a reader in another process
            // kept part of the log, which stays valid and is checkpointed by a later writer.
            let (busy, log, done): (i64, i64, i64) = connection
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |row| {
                    Ok((row.get(0)?, row.get(1)?, row.get(2)?))
                })
                .map_err(|error| StoreError::from(error).at("write to", &path))?;
            if busy != 0 {
                tracing::warn!(
                    path = %path.display(),
                    log,
                    done,
                    "another process is reading the thread database; part of its log stays in the -wal file"
                );
            }
            Ok(())
        })
        .await?
    }

    async fn list_turns(
        &self,
        thread_id: &str,
        query: &TurnListQuery,
    ) -> Result<Page<Turn>, StoreError> {
        let thread_id = thread_id.to_owned();
        let query = query.clone();
        let limit = query.limit;
        let turns = self
            .run(move |connection| {
                let transaction = connection.transaction()?;
                require_thread(&transaction, &thread_id)?;
                let anchor = match &query.cursor {
                    None => None,
                    Some(cursor) => {
                        let anchor = paging::parse_turn_cursor(cursor)?;
                        let seq = turn_seq(&transaction, &thread_id, &anchor.position)?
                            .ok_or_else(|| StoreError::InvalidCursor(cursor.clone()))?;
                        Some(Anchor {
                            position: seq,
                            inclusive: anchor.inclusive,
                        })
                    }
                };
                read_turns(
                    &transaction,
                    &thread_id,
                    anchor,
                    query.direction,
                    limit_plus_one(query.limit),
                    query.items_view,
                )
            })
            .await?;
        Ok(paging::turn_page(turns, limit))
    }

    async fn list_items(
        &self,
        thread_id: &str,
        query: &ItemListQuery,
    ) -> Result<Page<StoredItem>, StoreError> {
        let thread_id = thread_id.to_owned();
        let query = query.clone();
        let limit = query.limit;
        let items = self
            .run(move |connection| {
                let transaction = connection.transaction()?;
                read_items(&transaction, &thread_id, &query)
            })
            .await?;
        Ok(paging::item_page(items, limit))
    }

    async fn add_attachment(
        &self,
        thread_id: &str,
        attachment: &ThreadAttachment,
    ) -> Result<ThreadAttachmentAddResponse, StoreError> {
        let thread_id = thread_id.to_owned();
        let attachment = attachment.clone();
        self.write_thread(thread_id.clone(), move |connection| {
            require_thread(connection, &thread_id)?;
            let existing = find_attachment(
                connection,
                &thread_id,
                &attachment.attachment_type,
                &attachment.identity_key,
            )?;
            if let Some(existing) = existing {
                return Ok(ThreadAttachmentAddResponse {
                    outcome: ThreadAttachmentAddOutcome::Existing,
                    attachment: existing,
                });
            }
            connection
                .prepare_cached(&format!(
                    "INSERT INTO attachments (thread_id, {ATTACHMENT_COLUMNS}) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
                ))?
                .execute(params![
                    thread_id,
                    attachment.id,
                    attachment.attachment_type,
                    attachment.identity_key,
                    encode(&attachment.payload, "attachment payload")?,
                    attachment.created_at,
                ])?;
            Ok(ThreadAttachmentAddResponse {
                outcome: ThreadAttachmentAddOutcome::Created,
                attachment,
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
        let thread_id = thread_id.to_owned();
        let attachment_type = attachment_type.to_owned();
        let identity_key = identity_key.to_owned();
        self.write_thread(thread_id.clone(), move |connection| {
            require_thread(connection, &thread_id)?;
            let removed = find_attachment(connection, &thread_id, &attachment_type, &identity_key)?;
            if removed.is_some() {
                connection.execute(
                    "DELETE FROM attachments \
                     WHERE thread_id = ?1 AND attachment_type = ?2 AND identity_key = ?3",
                    params![thread_id, attachment_type, identity_key],
                )?;
            }
            Ok(removed)
        })
        .await
    }

    async fn list_attachments(&self, thread_id: &str) -> Result<Vec<ThreadAttachment>, StoreError> {
        let thread_id = thread_id.to_owned();
        self.run(move |connection| {
            let transaction = connection.transaction()?;
            require_thread(&transaction, &thread_id)?;
            // rowid follows insertion, which is the order clients added them in.
            let rows = transaction
                .prepare_cached(&format!(
                    "SELECT {ATTACHMENT_COLUMNS} FROM attachments \
                     WHERE thread_id = ?1 ORDER BY rowid"
                ))?
                .query_map([&thread_id], attachment_from_row)?
                .collect::<Result<Vec<_>, _>>()?;
            rows.into_iter()
                .map(|row| decode_attachment(row, &thread_id))
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
        let thread_id = thread_id.to_owned();
        let turn_id = turn_id.to_owned();
        let update = update.clone();
        self.write_thread(thread_id.clone(), move |connection| {
            let mut record = read_thread(connection, &thread_id)?
                .ok_or_else(|| StoreError::ThreadNotFound(thread_id.clone()))?;
            let Some(seq) = turn_seq(connection, &thread_id, &turn_id)? else {
                return Err(StoreError::TurnNotFound { thread_id, turn_id });
            };
            // Items and compaction summaries go with their turns through the cascade.
            connection
                .prepare_cached("DELETE FROM turns WHERE thread_id = ?1 AND seq >= ?2")?
                .execute(params![thread_id, seq])?;
            update.apply(&mut record);
            upsert_thread(connection, &record)?;
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
        let thread_id = thread_id.to_owned();
        let turn_id = turn_id.to_owned();
        let summary = summary.to_owned();
        self.write_thread(thread_id.clone(), move |connection| {
            require_thread(connection, &thread_id)?;
            if turn_seq(connection, &thread_id, &turn_id)?.is_none() {
                return Err(StoreError::TurnNotFound { thread_id, turn_id });
            }
            connection
                .prepare_cached(
                    "INSERT INTO compactions (thread_id, turn_id, summary) VALUES (?1, ?2, ?3) \
                     ON CONFLICT (thread_id, turn_id) DO UPDATE SET summary = excluded.summary",
                )?
                .execute(params![thread_id, turn_id, summary])?;
            Ok(())
        })
        .await
    }

    async fn latest_compaction(&self, thread_id: &str) -> Result<Option<Compaction>, StoreError> {
        let thread_id = thread_id.to_owned();
        self.run(move |connection| {
            require_thread(connection, &thread_id)?;
            Ok(connection
                .prepare_cached(LATEST_COMPACTION)?
                .query_row([&thread_id], |row| {
                    Ok(Compaction {
                        turn_id: row.get(0)?,
                        summary: row.get(1)?,
                    })
                })
                .optional()?)
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

    // i-idem: idempotency keys.

    async fn claim_idempotency_key(
        &self,
        record: &IdempotencyRecord,
    ) -> Result<Option<IdempotencyRecord>, StoreError> {
        let record = record.clone();
        self.write(move |connection| {
            connection
                .prepare_cached("DELETE FROM idempotency_keys WHERE created_at < ?1")?
                .execute([record.created_at - KEY_MAX_AGE_SECS])?;
            let stored = connection
                .prepare_cached(
                    "SELECT method, fingerprint, result, created_at FROM idempotency_keys \
                     WHERE scope = ?1 AND key = ?2",
                )?
                .query_row(params![record.scope, record.key], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, String>(2)?,
                        row.get::<_, i64>(3)?,
                    ))
                })
                .optional()?;
            if let Some((method, fingerprint, result, created_at)) = stored {
                let result = decode(&result, || {
                    format!(
                        "the result remembered for key {} in {}",
                        record.key, record.scope
                    )
                })?;
                return Ok(Some(IdempotencyRecord {
                    method,
                    fingerprint,
                    result,
                    created_at,
                    ..record
                }));
            }
            // Room for one more: the scope's oldest keys beyond the bound go.
            connection
                .prepare_cached(
                    "DELETE FROM idempotency_keys WHERE scope = ?1 AND key IN \
                     (SELECT key FROM idempotency_keys WHERE scope = ?1 \
                      ORDER BY created_at DESC, rowid DESC LIMIT -1 OFFSET ?2)",
                )?
                .execute(params![record.scope, KEYS_PER_SCOPE as i64 - 1])?;
            connection
                .prepare_cached(
                    "INSERT INTO idempotency_keys \
                     (scope, key, method, fingerprint, result, created_at) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )?
                .execute(params![
                    record.scope,
                    record.key,
                    record.method,
                    record.fingerprint,
                    encode(&record.result, "idempotency result")?,
                    record.created_at,
                ])?;
            Ok(None)
        })
        .await
    }

    async fn idempotency_key(
        &self,
        scope: &str,
        key: &str,
        now: i64,
    ) -> Result<Option<IdempotencyRecord>, StoreError> {
        let (scope, key) = (scope.to_owned(), key.to_owned());
        self.run(move |connection| {
            let stored = connection
                .prepare_cached(
                    "SELECT method, fingerprint, result, created_at FROM idempotency_keys \
                     WHERE scope = ?1 AND key = ?2 AND created_at >= ?3",
                )?
                .query_row(params![scope, key, now - KEY_MAX_AGE_SECS], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, String>(2)?,
                        row.get::<_, i64>(3)?,
                    ))
                })
                .optional()?;
            let Some((method, fingerprint, result, created_at)) = stored else {
                return Ok(None);
            };
            let result = decode(&result, || {
                format!("the result remembered for key {key} in {scope}")
            })?;
            Ok(Some(IdempotencyRecord {
                scope,
                key,
                method,
                fingerprint,
                result,
                created_at,
            }))
        })
        .await
    }

    async fn release_idempotency_key(&self, scope: &str, key: &str) -> Result<(), StoreError> {
        let scope = scope.to_owned();
        let key = key.to_owned();
        self.write(move |connection| {
            connection
                .prepare_cached("DELETE FROM idempotency_keys WHERE scope = ?1 AND key = ?2")?
                .execute(params![scope, key])?;
            Ok(())
        })
        .await
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

    async fn renew_leases(&self) -> Result<crate::LeaseRenewal, StoreError> {
        self.renew().await
    }

    fn lost_leases(&self) -> Vec<String> {
        self.unreported_losses()
    }

    fn retire_leases(&self) {
        if let Some(leases) = &self.leases {
            leases.retire();
        }
    }

    fn lease_settings(&self) -> Option<&crate::LeaseSettings> {
        self.settings()
    }
}

//! The statements of each [`ThreadStore`] operation on PostgreSQL, run inside the
//! transactions of [`super::PostgresThreadStore`] (writes start with the lease check there).
//! They mirror the SQLite store's statements, with PostgreSQL's placeholders and types.

use async_trait::async_trait;
use deadpool_postgres::ClientWrapper;
use tandem_protocol::{
    SortDirection, ThreadAttachment, ThreadAttachmentAddOutcome, ThreadAttachmentAddResponse,
    ThreadItem, Turn, TurnItemsView,
};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::super::lease::{LeaseRenewal, LeaseSettings};
use super::super::paging::{self, Anchor, ItemListQuery, ItemPosition, ItemStart, StoredItem};
use super::super::sqlite::{
    RawThread, decode, decode_word, encode, encode_exact, encode_word, limit_plus_one,
    sql_comparison, sql_order,
};
use super::super::{
    Compaction, IdempotencyRecord, Page, StoreError, ThreadListQuery, ThreadRecord, ThreadStore,
    ThreadUpdate, TurnListQuery, parse_thread_cursor, source_kind, thread_cursor,
};
use super::PostgresThreadStore;

const THREAD_COLUMNS: &str = "id, name, preview, ephemeral, created_at, updated_at, status, \
     cwd, source, forked_from_id, model, model_provider, cli_version, approval_policy, \
     dynamic_tools, config, archived_at";

const TURN_COLUMNS: &str = "id, status, items_view, error, started_at, completed_at, duration_ms";

const ATTACHMENT_COLUMNS: &str = "id, attachment_type, identity_key, payload, created_at";

/// One statement parameter.
type Param = Box<dyn ToSql + Sync + Send>;

fn thread_from_row(row: &Row) -> Result<ThreadRecord, StoreError> {
    RawThread {
        id: row.get(0),
        name: row.get(1),
        preview: row.get(2),
        ephemeral: row.get(3),
        created_at: row.get(4),
        updated_at: row.get(5),
        status: row.get(6),
        cwd: row.get(7),
        source: row.get(8),
        forked_from_id: row.get(9),
        model: row.get(10),
        model_provider: row.get(11),
        cli_version: row.get(12),
        approval_policy: row.get(13),
        dynamic_tools: row.get(14),
        config: row.get(15),
        archived_at: row.get(16),
    }
    .decode()
}

async fn read_thread(
    db: &ClientWrapper,
    thread_id: &str,
) -> Result<Option<ThreadRecord>, StoreError> {
    let statement = db
        .prepare_cached(&format!(
            "SELECT {THREAD_COLUMNS} FROM threads WHERE id = $1"
        ))
        .await?;
    db.query_opt(&statement, &[&thread_id])
        .await?
        .map(|row| thread_from_row(&row))
        .transpose()
}

async fn require_record(db: &ClientWrapper, thread_id: &str) -> Result<ThreadRecord, StoreError> {
    read_thread(db, thread_id)
        .await?
        .ok_or_else(|| StoreError::ThreadNotFound(thread_id.to_owned()))
}

async fn require_thread(db: &ClientWrapper, thread_id: &str) -> Result<(), StoreError> {
    let statement = db
        .prepare_cached("SELECT 1 FROM threads WHERE id = $1")
        .await?;
    match db.query_opt(&statement, &[&thread_id]).await? {
        Some(_) => Ok(()),
        None => Err(StoreError::ThreadNotFound(thread_id.to_owned())),
    }
}

async fn turn_seq(
    db: &ClientWrapper,
    thread_id: &str,
    turn_id: &str,
) -> Result<Option<i64>, StoreError> {
    let statement = db
        .prepare_cached("SELECT seq FROM turns WHERE thread_id = $1 AND id = $2")
        .await?;
    Ok(db
        .query_opt(&statement, &[&thread_id, &turn_id])
        .await?
        .map(|row| row.get(0)))
}

/// Inserts the thread or overwrites every member of an existing one in place.
async fn upsert_thread(db: &ClientWrapper, record: &ThreadRecord) -> Result<(), StoreError> {
    let statement = db
        .prepare_cached(&format!(
            "INSERT INTO threads ({THREAD_COLUMNS}, source_kind) VALUES \
             ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18) \
             ON CONFLICT (id) DO UPDATE SET name = excluded.name, preview = excluded.preview, \
             ephemeral = excluded.ephemeral, created_at = excluded.created_at, \
             updated_at = excluded.updated_at, status = excluded.status, cwd = excluded.cwd, \
             source = excluded.source, forked_from_id = excluded.forked_from_id, \
             model = excluded.model, model_provider = excluded.model_provider, \
             cli_version = excluded.cli_version, approval_policy = excluded.approval_policy, \
             dynamic_tools = excluded.dynamic_tools, config = excluded.config, \
             archived_at = excluded.archived_at, source_kind = excluded.source_kind"
        ))
        .await?;
    db.execute(
        &statement,
        &[
            &record.id,
            &record.name,
            &record.preview.as_str(),
            &record.ephemeral,
            &record.created_at,
            &record.updated_at,
            &encode(&record.status, "thread status")?,
            &record.cwd,
            &encode(&record.source, "thread source")?,
            &record.forked_from_id,
            &record.model,
            &record.model_provider,
            &record.cli_version,
            &encode_word(&record.approval_policy, "approval policy")?,
            &encode(&record.dynamic_tools, "dynamic tools")?,
            &encode(&record.config, "thread config")?,
            &record.archived_at,
            &source_kind(&record.source),
        ],
    )
    .await?;
    Ok(())
}

async fn insert_turn(
    db: &ClientWrapper,
    thread_id: &str,
    seq: i64,
    turn: &Turn,
) -> Result<(), StoreError> {
    let statement = db
        .prepare_cached(&format!(
            "INSERT INTO turns (thread_id, seq, {TURN_COLUMNS}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
        ))
        .await?;
    db.execute(
        &statement,
        &[
            &thread_id,
            &seq,
            &turn.id,
            &encode_word(&turn.status, "turn status")?,
            &encode_word(&turn.items_view, "turn itemsView")?,
            &turn
                .error
                .as_ref()
                .map(|error| encode(error, "turn error"))
                .transpose()?,
            &turn.started_at,
            &turn.completed_at,
            &turn.duration_ms,
        ],
    )
    .await?;
    if turn.items.is_empty() {
        return Ok(());
    }
    let item_statement = db
        .prepare_cached("INSERT INTO items (thread_id, turn_id, idx, item) VALUES ($1, $2, $3, $4)")
        .await?;
    for (index, item) in turn.items.iter().enumerate() {
        let index = i64::try_from(index).expect("a turn holds fewer than i64::MAX items");
        db.execute(
            &item_statement,
            &[&thread_id, &turn.id, &index, &encode_exact(item, "item")?],
        )
        .await?;
    }
    Ok(())
}

/// Decodes a row selected with [`TURN_COLUMNS`] and loads as much of its items as `view` shows.
async fn load_turn(
    db: &ClientWrapper,
    thread_id: &str,
    row: &Row,
    view: TurnItemsView,
) -> Result<Turn, StoreError> {
    let id: String = row.get(0);
    let what = |member: &str| format!("{member} of turn {id} in thread {thread_id}");
    let items = if view == TurnItemsView::NotLoaded {
        Vec::new()
    } else {
        let statement = db
            .prepare_cached(
                "SELECT idx, item FROM items WHERE thread_id = $1 AND turn_id = $2 ORDER BY idx",
            )
            .await?;
        db.query(&statement, &[&thread_id, &id])
            .await?
            .iter()
            .map(|row| {
                let index: i64 = row.get(0);
                decode(row.get(1), || what(&format!("item {index}")))
            })
            .collect::<Result<Vec<ThreadItem>, StoreError>>()?
    };
    let error: Option<String> = row.get(3);
    let mut turn = Turn {
        items,
        status: decode_word(row.get(1), || what("status"))?,
        items_view: decode_word(row.get(2), || what("itemsView"))?,
        error: error
            .map(|error| decode(&error, || what("error")))
            .transpose()?,
        started_at: row.get(4),
        completed_at: row.get(5),
        duration_ms: row.get(6),
        id: id.clone(),
    };
    paging::apply_items_view(&mut turn, view);
    Ok(turn)
}

async fn read_turns(
    db: &ClientWrapper,
    thread_id: &str,
    anchor: Option<Anchor<i64>>,
    direction: SortDirection,
    limit: Option<i64>,
    view: TurnItemsView,
) -> Result<Vec<Turn>, StoreError> {
    let order = sql_order(direction);
    // `LIMIT NULL` is no limit.
    let rows = match anchor {
        None => {
            let statement = db
                .prepare_cached(&format!(
                    "SELECT {TURN_COLUMNS} FROM turns WHERE thread_id = $1 \
                     ORDER BY seq {order} LIMIT $2"
                ))
                .await?;
            db.query(&statement, &[&thread_id, &limit]).await?
        }
        Some(anchor) => {
            let comparison = sql_comparison(direction, anchor.inclusive);
            let statement = db
                .prepare_cached(&format!(
                    "SELECT {TURN_COLUMNS} FROM turns WHERE thread_id = $1 AND seq {comparison} $2 \
                     ORDER BY seq {order} LIMIT $3"
                ))
                .await?;
            db.query(&statement, &[&thread_id, &anchor.position, &limit])
                .await?
        }
    };
    let mut turns = Vec::with_capacity(rows.len());
    for row in &rows {
        turns.push(load_turn(db, thread_id, row, view).await?);
    }
    Ok(turns)
}

async fn read_items(
    db: &ClientWrapper,
    thread_id: &str,
    query: &ItemListQuery,
) -> Result<Vec<StoredItem>, StoreError> {
    require_thread(db, thread_id).await?;
    let scope = match &query.turn_id {
        None => None,
        Some(turn_id) => Some(turn_seq(db, thread_id, turn_id).await?.ok_or_else(|| {
            StoreError::TurnNotFound {
                thread_id: thread_id.to_owned(),
                turn_id: turn_id.clone(),
            }
        })?),
    };
    let anchor: Option<(i64, i64, bool)> = match &query.start {
        ItemStart::Beginning => None,
        ItemStart::Cursor(cursor) => {
            let anchor = paging::parse_item_cursor(cursor)?;
            let seq = turn_seq(db, thread_id, &anchor.position.turn_id)
                .await?
                .ok_or_else(|| StoreError::InvalidCursor(cursor.clone()))?;
            let index = i64::try_from(anchor.position.index)
                .map_err(|_| StoreError::InvalidCursor(cursor.clone()))?;
            Some((seq, index, anchor.inclusive))
        }
        ItemStart::AfterItem(item_id) => {
            let turn_id = query
                .turn_id
                .as_deref()
                .ok_or_else(|| StoreError::InvalidCursor(format!("item {item_id}")))?;
            let statement = db
                .prepare_cached(
                    "SELECT idx FROM items WHERE thread_id = $1 AND turn_id = $2 \
                     AND (item::jsonb ->> 'id') = $3 ORDER BY idx LIMIT 1",
                )
                .await?;
            let index: i64 = db
                .query_opt(&statement, &[&thread_id, &turn_id, item_id])
                .await?
                .map(|row| row.get(0))
                .ok_or_else(|| {
                    StoreError::InvalidCursor(format!("item {item_id} of turn {turn_id}"))
                })?;
            Some((
                scope.expect("a turn filter was resolved above"),
                index,
                false,
            ))
        }
    };
    let order = sql_order(query.direction);
    let mut sql = String::from(
        "SELECT t.id, i.idx, i.item FROM turns AS t \
         JOIN items AS i ON i.thread_id = t.thread_id AND i.turn_id = t.id \
         WHERE t.thread_id = $1",
    );
    let mut values: Vec<Param> = vec![Box::new(thread_id.to_owned())];
    if let Some(seq) = scope {
        values.push(Box::new(seq));
        sql.push_str(&format!(" AND t.seq = ${}", values.len()));
    }
    if let Some((seq, index, inclusive)) = anchor {
        let turn_bound = sql_comparison(query.direction, true);
        let item_bound = sql_comparison(query.direction, inclusive);
        values.push(Box::new(seq));
        let seq_at = values.len();
        values.push(Box::new(index));
        sql.push_str(&format!(
            " AND t.seq {turn_bound} ${seq_at} AND (t.seq <> ${seq_at} OR i.idx {item_bound} ${})",
            values.len()
        ));
    }
    values.push(Box::new(limit_plus_one(query.limit)));
    sql.push_str(&format!(
        " ORDER BY t.seq {order}, i.idx {order} LIMIT ${}",
        values.len()
    ));
    let statement = db.prepare_cached(&sql).await?;
    let params: Vec<&(dyn ToSql + Sync)> = values.iter().map(|value| value.as_ref() as _).collect();
    db.query(&statement, &params)
        .await?
        .iter()
        .map(|row| {
            let turn_id: String = row.get(0);
            let index: i64 = row.get(1);
            let item = decode(row.get(2), || {
                format!("item {index} of turn {turn_id} in thread {thread_id}")
            })?;
            Ok(StoredItem {
                position: ItemPosition {
                    turn_id,
                    index: usize::try_from(index).unwrap_or_default(),
                },
                item,
            })
        })
        .collect()
}

async fn find_attachment(
    db: &ClientWrapper,
    thread_id: &str,
    attachment_type: &str,
    identity_key: &str,
) -> Result<Option<ThreadAttachment>, StoreError> {
    let statement = db
        .prepare_cached(&format!(
            "SELECT {ATTACHMENT_COLUMNS} FROM attachments \
             WHERE thread_id = $1 AND attachment_type = $2 AND identity_key = $3"
        ))
        .await?;
    db.query_opt(&statement, &[&thread_id, &attachment_type, &identity_key])
        .await?
        .map(|row| attachment_from_row(&row, thread_id))
        .transpose()
}

fn attachment_from_row(row: &Row, thread_id: &str) -> Result<ThreadAttachment, StoreError> {
    let id: String = row.get(0);
    let payload = decode(row.get(3), || {
        format!("payload of attachment {id} in thread {thread_id}")
    })?;
    Ok(ThreadAttachment {
        attachment_type: row.get(1),
        identity_key: row.get(2),
        payload,
        created_at: row.get(4),
        id,
    })
}

/// Applies `update` to the stored record and writes it back.
async fn update_record(
    db: &ClientWrapper,
    thread_id: &str,
    update: &ThreadUpdate,
) -> Result<ThreadRecord, StoreError> {
    let mut record = require_record(db, thread_id).await?;
    update.apply(&mut record);
    upsert_thread(db, &record).await?;
    Ok(record)
}

#[async_trait]
impl ThreadStore for PostgresThreadStore {
    async fn create_thread(
        &self,
        thread: &ThreadRecord,
        history: &[Turn],
    ) -> Result<(), StoreError> {
        self.in_write(Some(&thread.id), async |db| {
            if read_thread(db, &thread.id).await?.is_some() {
                return Err(StoreError::ThreadExists(thread.id.clone()));
            }
            upsert_thread(db, thread).await?;
            for (seq, turn) in (1..).zip(history) {
                insert_turn(db, &thread.id, seq, turn).await?;
            }
            Ok(())
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

    async fn commit_turn(
        &self,
        thread_id: &str,
        turn: &Turn,
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
            insert_turn(db, thread_id, seq, turn).await?;
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
    ) -> Result<(), StoreError> {
        let index = i64::try_from(index).expect("a turn holds fewer than i64::MAX items");
        let item = encode_exact(item, "item")?;
        self.in_write(Some(thread_id), async |db| {
            if turn_seq(db, thread_id, turn_id).await?.is_none() {
                return Err(StoreError::TurnNotFound {
                    thread_id: thread_id.to_owned(),
                    turn_id: turn_id.to_owned(),
                });
            }
            let count = db
                .prepare_cached("SELECT COUNT(*) FROM items WHERE thread_id = $1 AND turn_id = $2")
                .await?;
            let count: i64 = db.query_one(&count, &[&thread_id, &turn_id]).await?.get(0);
            if index > count {
                return Err(StoreError::Unavailable(format!(
                    "item {index} of turn {turn_id} in thread {thread_id} would leave a gap \
                     after item {count}; this is a bug in the caller"
                )));
            }
            let statement = db
                .prepare_cached(
                    "INSERT INTO items (thread_id, turn_id, idx, item) VALUES ($1, $2, $3, $4) \
                     ON CONFLICT (thread_id, turn_id, idx) DO UPDATE SET item = excluded.item",
                )
                .await?;
            db.execute(&statement, &[&thread_id, &turn_id, &index, &item])
                .await?;
            Ok(())
        })
        .await
    }

    async fn finish_turn(
        &self,
        thread_id: &str,
        turn: &Turn,
        update: &ThreadUpdate,
    ) -> Result<ThreadRecord, StoreError> {
        let status = encode_word(&turn.status, "turn status")?;
        let items_view = encode_word(&turn.items_view, "turn itemsView")?;
        let error = turn
            .error
            .as_ref()
            .map(|error| encode(error, "turn error"))
            .transpose()?;
        self.in_write(Some(thread_id), async |db| {
            let mut record = require_record(db, thread_id).await?;
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
            update.apply(&mut record);
            upsert_thread(db, &record).await?;
            Ok(record)
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
            Ok(db
                .query_opt(
                    "SELECT c.turn_id, c.summary FROM compactions c \
                     JOIN turns t ON t.thread_id = c.thread_id AND t.id = c.turn_id \
                     WHERE c.thread_id = $1 ORDER BY t.seq DESC LIMIT 1",
                    &[&thread_id],
                )
                .await?
                .map(|row| Compaction {
                    turn_id: row.get(0),
                    summary: row.get(1),
                }))
        })
        .await
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

    fn lease_settings(&self) -> Option<&LeaseSettings> {
        Some(&self.leases.settings)
    }
}

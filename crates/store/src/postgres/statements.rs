//! The statements of each [`ThreadStore`](crate::ThreadStore) operation on PostgreSQL, run
//! inside the transactions of [`super::PostgresThreadStore`] (writes start with the lease
//! check there; the operations themselves are in `store_impl`). They mirror the SQLite store's
//! statements, with PostgreSQL's placeholders and types.

use deadpool_postgres::ClientWrapper;
use tandem_protocol::{SortDirection, ThreadAttachment, ThreadItem, Turn, TurnItemsView};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::super::paging::{
    self, Anchor, ItemListQuery, ItemPosition, ItemStart, ItemTimes, StoredItem,
};
use super::super::{StoreError, ThreadRecord, ThreadUpdate, source_kind};
use crate::codec::{
    RawThread, decode, decode_word, encode, encode_exact, encode_word, limit_plus_one,
    sql_comparison, sql_order,
};

pub(super) const THREAD_COLUMNS: &str = "id, name, preview, ephemeral, created_at, updated_at, status, \
     cwd, source, forked_from_id, model, model_provider, cli_version, approval_policy, \
     dynamic_tools, config, archived_at";

pub(super) const TURN_COLUMNS: &str =
    "id, status, items_view, error, started_at, completed_at, duration_ms";

pub(super) const ATTACHMENT_COLUMNS: &str =
    "id, attachment_type, identity_key, payload, created_at";

/// The newest compaction of thread `$1`, read on every cold resume. Driven from the thread's
/// compactions (one per compaction, few) to each one's turn by key. Written as a join ordered
/// by `t.seq`, its generic plan on tables not analyzed yet walked the thread's turns newest
/// first looking for one with a compaction: the whole history of a thread never compacted
/// (issue 31; `plan_tests` pins this one). Every compaction has its turn (a foreign key).
pub(super) const LATEST_COMPACTION: &str = "SELECT c.turn_id, c.summary FROM compactions c \
     WHERE c.thread_id = $1 \
     ORDER BY (SELECT t.seq FROM turns t WHERE t.thread_id = c.thread_id AND t.id = c.turn_id) \
     DESC NULLS LAST LIMIT 1";

/// The items of one turn, in order: `load_turn`, for every turn of a page.
pub(super) const TURN_ITEMS: &str =
    "SELECT idx, item FROM items WHERE thread_id = $1 AND turn_id = $2 ORDER BY idx";

/// The `seq` of turn `$2` of thread `$1`: how a cursor finds its place.
pub(super) const TURN_SEQ: &str = "SELECT seq FROM turns WHERE thread_id = $1 AND id = $2";

/// One statement parameter.
pub(super) type Param = Box<dyn ToSql + Sync + Send>;

pub(super) fn thread_from_row(row: &Row) -> Result<ThreadRecord, StoreError> {
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

pub(super) async fn read_thread(
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

pub(super) async fn require_record(
    db: &ClientWrapper,
    thread_id: &str,
) -> Result<ThreadRecord, StoreError> {
    read_thread(db, thread_id)
        .await?
        .ok_or_else(|| StoreError::ThreadNotFound(thread_id.to_owned()))
}

pub(super) async fn require_thread(db: &ClientWrapper, thread_id: &str) -> Result<(), StoreError> {
    let statement = db
        .prepare_cached("SELECT 1 FROM threads WHERE id = $1")
        .await?;
    match db.query_opt(&statement, &[&thread_id]).await? {
        Some(_) => Ok(()),
        None => Err(StoreError::ThreadNotFound(thread_id.to_owned())),
    }
}

/// Stores `item` (its JSON) with `times` as item `index` of the stored turn `turn_id`:
/// replaces the item at that index or appends it; an index past the end is the caller's bug.
pub(super) async fn store_item(
    db: &ClientWrapper,
    thread_id: &str,
    turn_id: &str,
    index: i64,
    item: &str,
    times: ItemTimes,
) -> Result<(), StoreError> {
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
            "item {index} of turn {turn_id} in thread {thread_id} would leave a gap after item \
             {count}; this is a bug in the caller"
        )));
    }
    let statement = db
        .prepare_cached(
            "INSERT INTO items (thread_id, turn_id, idx, item, started_at_ms, completed_at_ms) \
             VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (thread_id, turn_id, idx) DO UPDATE SET item = excluded.item, \
             started_at_ms = excluded.started_at_ms, completed_at_ms = excluded.completed_at_ms",
        )
        .await?;
    db.execute(
        &statement,
        &[
            &thread_id,
            &turn_id,
            &index,
            &item,
            &times.started_at_ms,
            &times.completed_at_ms,
        ],
    )
    .await?;
    Ok(())
}

/// The statement of an items page newest or oldest first: `$1` the thread, then `$2` the
/// turn's `seq` when `scoped` to one turn, then the anchor's `seq` and index when `anchor`
/// (whether the anchor is included), then the limit. The planner walks the turns through
/// `(thread_id, seq)` and each turn's items through the items key, stopping at the limit
/// (`plan_tests` pins it).
pub(super) fn items_page_sql(
    direction: SortDirection,
    scoped: bool,
    anchor: Option<bool>,
) -> String {
    let order = sql_order(direction);
    let mut sql = String::from(
        "SELECT t.id, i.idx, i.item, i.started_at_ms, i.completed_at_ms FROM turns AS t \
         JOIN items AS i ON i.thread_id = t.thread_id AND i.turn_id = t.id \
         WHERE t.thread_id = $1",
    );
    let mut next = 2;
    if scoped {
        sql.push_str(&format!(" AND t.seq = ${next}"));
        next += 1;
    }
    if let Some(inclusive) = anchor {
        let turn_bound = sql_comparison(direction, true);
        let item_bound = sql_comparison(direction, inclusive);
        sql.push_str(&format!(
            " AND t.seq {turn_bound} ${next} AND (t.seq <> ${next} OR i.idx {item_bound} ${})",
            next + 1
        ));
        next += 2;
    }
    sql.push_str(&format!(
        " ORDER BY t.seq {order}, i.idx {order} LIMIT ${next}"
    ));
    sql
}

/// Inserts the new `thread` with `history` as its turns; fails if the id is taken.
pub(super) async fn insert_new_thread(
    db: &ClientWrapper,
    thread: &ThreadRecord,
    history: &[Turn],
) -> Result<(), StoreError> {
    if read_thread(db, &thread.id).await?.is_some() {
        return Err(StoreError::ThreadExists(thread.id.clone()));
    }
    upsert_thread(db, thread).await?;
    for (seq, turn) in (1..).zip(history) {
        insert_turn(db, &thread.id, seq, turn, ItemTimes::default()).await?;
    }
    Ok(())
}

pub(super) async fn turn_seq(
    db: &ClientWrapper,
    thread_id: &str,
    turn_id: &str,
) -> Result<Option<i64>, StoreError> {
    let statement = db.prepare_cached(TURN_SEQ).await?;
    Ok(db
        .query_opt(&statement, &[&thread_id, &turn_id])
        .await?
        .map(|row| row.get(0)))
}

/// Inserts the thread or overwrites every member of an existing one in place.
pub(super) async fn upsert_thread(
    db: &ClientWrapper,
    record: &ThreadRecord,
) -> Result<(), StoreError> {
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

/// Inserts `turn` with its items as turn `seq`; its first item is recorded with
/// `first_item_times` (a started turn's input), the others with none.
pub(super) async fn insert_turn(
    db: &ClientWrapper,
    thread_id: &str,
    seq: i64,
    turn: &Turn,
    first_item_times: ItemTimes,
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
        .prepare_cached(
            "INSERT INTO items (thread_id, turn_id, idx, item, started_at_ms, completed_at_ms) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .await?;
    // A whole turn's items come without times (see `ItemTimes`), but for a started turn's
    // input.
    for (index, item) in turn.items.iter().enumerate() {
        let times = if index == 0 {
            first_item_times
        } else {
            ItemTimes::default()
        };
        let index = i64::try_from(index).expect("a turn holds fewer than i64::MAX items");
        db.execute(
            &item_statement,
            &[
                &thread_id,
                &turn.id,
                &index,
                &encode_exact(item, "item")?,
                &times.started_at_ms,
                &times.completed_at_ms,
            ],
        )
        .await?;
    }
    Ok(())
}

/// Decodes a row selected with [`TURN_COLUMNS`] and loads as much of its items as `view` shows.
pub(super) async fn load_turn(
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
        let statement = db.prepare_cached(TURN_ITEMS).await?;
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

/// The statement of a turns page: `$1` the thread, then `$2` the anchor's `seq` when
/// `anchor` (whether it is included), then the limit. Read through `(thread_id, seq)`,
/// stopping at the limit (`plan_tests` pins it).
pub(super) fn turns_page_sql(direction: SortDirection, anchor: Option<bool>) -> String {
    let order = sql_order(direction);
    match anchor {
        None => format!(
            "SELECT {TURN_COLUMNS} FROM turns WHERE thread_id = $1 ORDER BY seq {order} LIMIT $2"
        ),
        Some(inclusive) => {
            let comparison = sql_comparison(direction, inclusive);
            format!(
                "SELECT {TURN_COLUMNS} FROM turns WHERE thread_id = $1 AND seq {comparison} $2 \
                 ORDER BY seq {order} LIMIT $3"
            )
        }
    }
}

pub(super) async fn read_turns(
    db: &ClientWrapper,
    thread_id: &str,
    anchor: Option<Anchor<i64>>,
    direction: SortDirection,
    limit: Option<i64>,
    view: TurnItemsView,
) -> Result<Vec<Turn>, StoreError> {
    // `LIMIT NULL` is no limit.
    let sql = turns_page_sql(direction, anchor.as_ref().map(|anchor| anchor.inclusive));
    let statement = db.prepare_cached(&sql).await?;
    let rows = match anchor {
        None => db.query(&statement, &[&thread_id, &limit]).await?,
        Some(anchor) => {
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

pub(super) async fn read_items(
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
    let mut values: Vec<Param> = vec![Box::new(thread_id.to_owned())];
    if let Some(seq) = scope {
        values.push(Box::new(seq));
    }
    if let Some((seq, index, _)) = anchor {
        values.push(Box::new(seq));
        values.push(Box::new(index));
    }
    values.push(Box::new(limit_plus_one(query.limit)));
    let sql = items_page_sql(
        query.direction,
        scope.is_some(),
        anchor.map(|(_, _, inclusive)| inclusive),
    );
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
                times: ItemTimes {
                    started_at_ms: row.get(3),
                    completed_at_ms: row.get(4),
                },
            })
        })
        .collect()
}

pub(super) async fn find_attachment(
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

pub(super) fn attachment_from_row(
    row: &Row,
    thread_id: &str,
) -> Result<ThreadAttachment, StoreError> {
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
pub(super) async fn update_record(
    db: &ClientWrapper,
    thread_id: &str,
    update: &ThreadUpdate,
) -> Result<ThreadRecord, StoreError> {
    let mut record = require_record(db, thread_id).await?;
    update.apply(&mut record);
    upsert_thread(db, &record).await?;
    Ok(record)
}

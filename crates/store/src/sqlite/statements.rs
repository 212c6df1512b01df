//! The SQLite store's statements, each run inside the caller's transaction.

use super::*;

pub(super) fn read_thread(
    connection: &Connection,
    thread_id: &str,
) -> Result<Option<ThreadRecord>, StoreError> {
    connection
        .prepare_cached(&format!(
            "SELECT {THREAD_COLUMNS} FROM threads WHERE id = ?1"
        ))?
        .query_row([thread_id], RawThread::from_row)
        .optional()?
        .map(RawThread::decode)
        .transpose()
}

/// The position of the stored turn `turn_id` in its thread, if it is stored.
pub(super) fn turn_seq(
    connection: &Connection,
    thread_id: &str,
    turn_id: &str,
) -> Result<Option<i64>, StoreError> {
    Ok(connection
        .prepare_cached("SELECT seq FROM turns WHERE thread_id = ?1 AND id = ?2")?
        .query_row(params![thread_id, turn_id], |row| row.get(0))
        .optional()?)
}

pub(super) fn require_thread(connection: &Connection, thread_id: &str) -> Result<(), StoreError> {
    connection
        .prepare_cached("SELECT 1 FROM threads WHERE id = ?1")?
        .query_row([thread_id], |_| Ok(()))
        .optional()?
        .ok_or_else(|| StoreError::ThreadNotFound(thread_id.to_owned()))
}

/// Inserts the new `thread` with `history` as its turns; fails if the id is taken.
pub(super) fn insert_new_thread(
    connection: &Connection,
    thread: &ThreadRecord,
    history: &[Turn],
) -> Result<(), StoreError> {
    if read_thread(connection, &thread.id)?.is_some() {
        return Err(StoreError::ThreadExists(thread.id.clone()));
    }
    upsert_thread(connection, thread)?;
    for (seq, turn) in (1..).zip(history) {
        insert_turn(connection, &thread.id, seq, turn, ItemTimes::default())?;
    }
    Ok(())
}

/// Inserts the thread, or overwrites every member of an existing one in place (an
/// `INSERT OR REPLACE` would delete the row first and cascade to its turns).
pub(super) fn upsert_thread(
    connection: &Connection,
    record: &ThreadRecord,
) -> Result<(), StoreError> {
    let sql = format!(
        "INSERT INTO threads ({THREAD_COLUMNS}, source_kind) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, \
         ?18) \
         ON CONFLICT (id) DO UPDATE SET name = excluded.name, preview = excluded.preview, \
         ephemeral = excluded.ephemeral, created_at = excluded.created_at, \
         updated_at = excluded.updated_at, status = excluded.status, cwd = excluded.cwd, \
         source = excluded.source, forked_from_id = excluded.forked_from_id, \
         model = excluded.model, model_provider = excluded.model_provider, \
         cli_version = excluded.cli_version, approval_policy = excluded.approval_policy, \
         dynamic_tools = excluded.dynamic_tools, config = excluded.config, \
         archived_at = excluded.archived_at, source_kind = excluded.source_kind"
    );
    connection.prepare_cached(&sql)?.execute(params![
        record.id,
        record.name,
        record.preview.as_str(),
        record.ephemeral,
        record.created_at,
        record.updated_at,
        encode(&record.status, "thread status")?,
        record.cwd,
        encode(&record.source, "thread source")?,
        record.forked_from_id,
        record.model,
        record.model_provider,
        record.cli_version,
        encode_word(&record.approval_policy, "approval policy")?,
        encode(&record.dynamic_tools, "dynamic tools")?,
        encode(&record.config, "thread config")?,
        record.archived_at,
        source_kind(&record.source),
    ])?;
    Ok(())
}

/// Inserts `turn` with its items as turn `seq`; its first item is recorded with
/// `first_item_times` (a started turn's input), the others with none.
pub(super) fn insert_turn(
    connection: &Connection,
    thread_id: &str,
    seq: i64,
    turn: &Turn,
    first_item_times: ItemTimes,
) -> Result<(), StoreError> {
    connection
        .prepare_cached(&format!(
            "INSERT INTO turns (thread_id, seq, {TURN_COLUMNS}) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
        ))?
        .execute(params![
            thread_id,
            seq,
            turn.id,
            encode_word(&turn.status, "turn status")?,
            encode_word(&turn.items_view, "turn itemsView")?,
            turn.error
                .as_ref()
                .map(|error| encode(error, "turn error"))
                .transpose()?,
            turn.started_at,
            turn.completed_at,
            turn.duration_ms,
        ])?;
    let mut statement = connection.prepare_cached(
        "INSERT INTO items (thread_id, turn_id, idx, item, started_at_ms, completed_at_ms) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    // A whole turn's items come without times (see `ItemTimes`), but for a started turn's
    // input.
    for (index, item) in turn.items.iter().enumerate() {
        let times = if index == 0 {
            first_item_times
        } else {
            ItemTimes::default()
        };
        let index = i64::try_from(index).expect("a turn holds fewer than i64::MAX items");
        write_item(
            &mut statement,
            thread_id,
            &turn.id,
            index,
            encode_exact(item, "item")?,
            times,
        )?;
    }
    Ok(())
}

/// Runs `statement` (an insert of one `items` row: thread, turn, index, JSON, start and
/// completion times) for `item`, its JSON encoding. SQLite copies a bound text, so the
/// encoding is dropped as soon as it is bound, before the statement builds its row: a large
/// item (a turn's whole input) is then held twice while it is written, not three times.
pub(super) fn write_item(
    statement: &mut rusqlite::Statement<'_>,
    thread_id: &str,
    turn_id: &str,
    index: i64,
    item: String,
    times: ItemTimes,
) -> rusqlite::Result<usize> {
    statement.raw_bind_parameter(1, thread_id)?;
    statement.raw_bind_parameter(2, turn_id)?;
    statement.raw_bind_parameter(3, index)?;
    statement.raw_bind_parameter(4, item.as_str())?;
    drop(item);
    statement.raw_bind_parameter(5, times.started_at_ms)?;
    statement.raw_bind_parameter(6, times.completed_at_ms)?;
    statement.raw_execute()
}

/// Stores `item` (its JSON) with `times` as item `index` of the stored turn `turn_id`:
/// replaces the item at that index or appends it; an index past the end is the caller's bug.
pub(super) fn store_item(
    connection: &Connection,
    thread_id: String,
    turn_id: String,
    index: i64,
    item: String,
    times: ItemTimes,
) -> Result<(), StoreError> {
    if turn_seq(connection, &thread_id, &turn_id)?.is_none() {
        return Err(StoreError::TurnNotFound { thread_id, turn_id });
    }
    let count: i64 = connection
        .prepare_cached("SELECT COUNT(*) FROM items WHERE thread_id = ?1 AND turn_id = ?2")?
        .query_row(params![thread_id, turn_id], |row| row.get(0))?;
    if index > count {
        return Err(StoreError::Unavailable(format!(
            "item {index} of turn {turn_id} in thread {thread_id} would leave a gap after item \
             {count}; this is a bug in the caller"
        )));
    }
    let mut statement = connection.prepare_cached(
        "INSERT INTO items (thread_id, turn_id, idx, item, started_at_ms, completed_at_ms) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
         ON CONFLICT (thread_id, turn_id, idx) DO UPDATE SET item = excluded.item, \
         started_at_ms = excluded.started_at_ms, completed_at_ms = excluded.completed_at_ms",
    )?;
    write_item(&mut statement, &thread_id, &turn_id, index, item, times)?;
    Ok(())
}

/// The thread's turns past `anchor` (a `seq`, inclusive or not) in `direction`, at most
/// `limit` (negative: all of them), with their items cut to `view`. The range is read
/// through the `(thread_id, seq)` index, so a page costs its own length.
pub(super) fn read_turns(
    connection: &Connection,
    thread_id: &str,
    anchor: Option<Anchor<i64>>,
    direction: SortDirection,
    limit: i64,
    view: TurnItemsView,
) -> Result<Vec<Turn>, StoreError> {
    let order = sql_order(direction);
    let raw = match anchor {
        None => connection
            .prepare_cached(&format!(
                "SELECT {TURN_COLUMNS} FROM turns WHERE thread_id = ?1 \
                 ORDER BY seq {order} LIMIT ?2"
            ))?
            .query_map(params![thread_id, limit], RawTurn::from_row)?
            .collect::<Result<Vec<_>, _>>()?,
        Some(anchor) => {
            let comparison = sql_comparison(direction, anchor.inclusive);
            connection
                .prepare_cached(&format!(
                    "SELECT {TURN_COLUMNS} FROM turns WHERE thread_id = ?1 AND seq {comparison} ?2 \
                     ORDER BY seq {order} LIMIT ?3"
                ))?
                .query_map(
                    params![thread_id, anchor.position, limit],
                    RawTurn::from_row,
                )?
                .collect::<Result<Vec<_>, _>>()?
        }
    };
    raw.into_iter()
        .map(|turn| turn.load_view(connection, thread_id, view))
        .collect()
}

pub(super) fn find_attachment(
    connection: &Connection,
    thread_id: &str,
    attachment_type: &str,
    identity_key: &str,
) -> Result<Option<ThreadAttachment>, StoreError> {
    connection
        .prepare_cached(&format!(
            "SELECT {ATTACHMENT_COLUMNS} FROM attachments \
             WHERE thread_id = ?1 AND attachment_type = ?2 AND identity_key = ?3"
        ))?
        .query_row(
            params![thread_id, attachment_type, identity_key],
            attachment_from_row,
        )
        .optional()?
        .map(|row| decode_attachment(row, thread_id))
        .transpose()
}

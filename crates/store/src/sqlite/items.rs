//! One page of `thread/items/list` from the SQLite store (issue 16), walked turn by turn so
//! that a page costs its own length whatever the thread's.
//!
//! The page used to be one join of `turns` and `items` ordered by `(seq, idx)`. Without
//! statistics SQLite's planner drove that join from `items` (every item of the thread) and
//! sorted the result, so the newest item of a thread of 100 000 turns (the
//! `itemsBackwardsCursor` of every `thread/resume`) read all 200 000 of its items. Here the
//! order is spelled out instead: the anchor's turn from the anchor's index on, then the
//! following turns one by one through the `(thread_id, seq)` index, each turn's items
//! through the items key, until the page is full. No plan choice is left to the planner.

use rusqlite::{Connection, OptionalExtension, params};
use tandem_protocol::SortDirection;

use super::statements::{require_thread, turn_seq};
use crate::StoreError;
use crate::codec::{decode, limit_plus_one, sql_comparison, sql_order};
use crate::paging::{self, ItemListQuery, ItemPosition, ItemStart, ItemTimes, StoredItem};

/// Where a page starts inside a turn: the turn (its id and `seq`) and the item index,
/// inclusive or not.
struct ItemAnchor {
    turn_id: String,
    seq: i64,
    index: i64,
    inclusive: bool,
}

/// Reads one page of items (see [`crate::ThreadStore::list_items`]) inside the
/// caller's transaction: at most the page size plus one (which only says that another page
/// follows).
pub(super) fn read_items(
    connection: &Connection,
    thread_id: &str,
    query: &ItemListQuery,
) -> Result<Vec<StoredItem>, StoreError> {
    require_thread(connection, thread_id)?;
    let scope = match &query.turn_id {
        None => None,
        Some(turn_id) => Some(turn_seq(connection, thread_id, turn_id)?.ok_or_else(|| {
            StoreError::TurnNotFound {
                thread_id: thread_id.to_owned(),
                turn_id: turn_id.clone(),
            }
        })?),
    };
    let anchor = match &query.start {
        ItemStart::Beginning => None,
        ItemStart::Cursor(cursor) => {
            let anchor = paging::parse_item_cursor(cursor)?;
            let seq = turn_seq(connection, thread_id, &anchor.position.turn_id)?
                .ok_or_else(|| StoreError::InvalidCursor(cursor.clone()))?;
            let index = i64::try_from(anchor.position.index)
                .map_err(|_| StoreError::InvalidCursor(cursor.clone()))?;
            Some(ItemAnchor {
                turn_id: anchor.position.turn_id,
                seq,
                index,
                inclusive: anchor.inclusive,
            })
        }
        ItemStart::AfterItem(item_id) => {
            let turn_id = query
                .turn_id
                .as_deref()
                .ok_or_else(|| StoreError::InvalidCursor(format!("item {item_id}")))?;
            let index: i64 = connection
                .prepare_cached(
                    "SELECT idx FROM items WHERE thread_id = ?1 AND turn_id = ?2 \
                     AND json_extract(item, '$.id') = ?3 ORDER BY idx LIMIT 1",
                )?
                .query_row(params![thread_id, turn_id, item_id], |row| row.get(0))
                .optional()?
                .ok_or_else(|| {
                    StoreError::InvalidCursor(format!("item {item_id} of turn {turn_id}"))
                })?;
            Some(ItemAnchor {
                turn_id: turn_id.to_owned(),
                seq: scope.expect("a turn filter was resolved above"),
                index,
                inclusive: false,
            })
        }
    };
    let wanted = usize::try_from(limit_plus_one(query.limit)).unwrap_or(usize::MAX);
    let mut page = Vec::new();

    // The anchor's own turn, from the anchor on (when the turn filter allows that turn).
    if let Some(anchor) = &anchor
        && scope.is_none_or(|seq| seq == anchor.seq)
    {
        read_turn_items(
            connection,
            thread_id,
            &anchor.turn_id,
            Some((anchor.index, anchor.inclusive)),
            query.direction,
            wanted,
            &mut page,
        )?;
    }

    // Then whole turns strictly past the anchor's turn, within the turn filter.
    let (mut low, mut high) = scope.map_or((i64::MIN, i64::MAX), |seq| (seq, seq));
    if let Some(anchor) = &anchor {
        match query.direction {
            SortDirection::Asc => low = low.max(anchor.seq.saturating_add(1)),
            SortDirection::Desc => high = high.min(anchor.seq.saturating_sub(1)),
        }
    }
    if page.len() < wanted && low <= high {
        let mut turns = connection.prepare_cached(&format!(
            "SELECT id FROM turns WHERE thread_id = ?1 AND seq BETWEEN ?2 AND ?3 \
             ORDER BY seq {}",
            sql_order(query.direction)
        ))?;
        let mut rows = turns.query(params![thread_id, low, high])?;
        while page.len() < wanted
            && let Some(row) = rows.next()?
        {
            let turn_id: String = row.get(0)?;
            read_turn_items(
                connection,
                thread_id,
                &turn_id,
                None,
                query.direction,
                wanted,
                &mut page,
            )?;
        }
    }
    Ok(page)
}

/// Appends to `page`, until it holds `wanted` items, the items of turn `turn_id` in
/// `direction`, past `from` (an item index, inclusive or not) when given.
fn read_turn_items(
    connection: &Connection,
    thread_id: &str,
    turn_id: &str,
    from: Option<(i64, bool)>,
    direction: SortDirection,
    wanted: usize,
    page: &mut Vec<StoredItem>,
) -> Result<(), StoreError> {
    let room = i64::try_from(wanted.saturating_sub(page.len())).unwrap_or(i64::MAX);
    if room == 0 {
        return Ok(());
    }
    // A whole turn is the range past the index before its first item (or after its last).
    let (index, inclusive) = from.unwrap_or(match direction {
        SortDirection::Asc => (i64::MIN, true),
        SortDirection::Desc => (i64::MAX, true),
    });
    let mut statement = connection.prepare_cached(&format!(
        "SELECT idx, item, started_at_ms, completed_at_ms FROM items \
         WHERE thread_id = ?1 AND turn_id = ?2 AND idx {} ?3 ORDER BY idx {} LIMIT ?4",
        sql_comparison(direction, inclusive),
        sql_order(direction)
    ))?;
    let rows = statement.query_map(params![thread_id, turn_id, index, room], |row| {
        let times = ItemTimes {
            started_at_ms: row.get(2)?,
            completed_at_ms: row.get(3)?,
        };
        Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?, times))
    })?;
    for row in rows {
        let (index, item, times) = row?;
        let item = decode(&item, || {
            format!("item {index} of turn {turn_id} in thread {thread_id}")
        })?;
        page.push(StoredItem {
            position: ItemPosition {
                turn_id: turn_id.to_owned(),
                index: usize::try_from(index).unwrap_or_default(),
            },
            item,
            times,
        });
    }
    Ok(())
}

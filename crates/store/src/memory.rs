//! [`InMemoryThreadStore`]: threads that live only as long as the process, used for ephemeral
//! threads and as the reference implementation in tests.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use tandem_protocol::{
    SortDirection, ThreadAttachment, ThreadAttachmentAddOutcome, ThreadAttachmentAddResponse,
    ThreadItem, Turn,
};

use super::paging::{self, ItemListQuery, ItemPosition, ItemStart, ItemTimes, StoredItem};
use super::{
    Compaction, FileCheckpoint, IdempotencyRecord, Page, StoreError, ThreadListQuery, ThreadRecord,
    ThreadStore, ThreadUpdate, TurnEndUpdate, TurnListQuery, effective_limit, parse_thread_cursor,
    thread_cursor,
};

/// One thread and everything under it.
#[derive(Debug, Clone)]
struct Entry {
    record: ThreadRecord,
    /// In commit order.
    turns: Vec<Turn>,
    /// In insertion order.
    attachments: Vec<ThreadAttachment>,
    /// Compaction summaries by turn id, in the order they were stored.
    compactions: Vec<(String, String)>,
    /// File checkpoints by turn id, in the order they were first stored.
    checkpoints: Vec<(String, FileCheckpoint)>,
    /// The recorded times of items, by turn id and index; an item without an entry has none.
    item_times: HashMap<(String, usize), ItemTimes>,
    /// Turn id to position in `turns`, for paging: checked on every use and rebuilt when it
    /// no longer matches (turns appended or removed since), so no writer has to maintain it.
    positions: HashMap<String, usize>,
}

impl Entry {
    /// The position of turn `turn_id` in `turns`.
    fn turn_position(&mut self, turn_id: &str) -> Option<usize> {
        let valid = |position: usize, turns: &[Turn]| {
            turns.get(position).is_some_and(|turn| turn.id == turn_id)
        };
        if let Some(&position) = self.positions.get(turn_id)
            && valid(position, &self.turns)
        {
            return Some(position);
        }
        self.positions = self
            .turns
            .iter()
            .enumerate()
            .map(|(position, turn)| (turn.id.clone(), position))
            .collect();
        self.positions.get(turn_id).copied()
    }
}

/// A [`ThreadStore`] holding everything in memory.
///
/// Every operation runs under one short lock and never awaits while holding it, so the async
/// methods complete without yielding.
#[derive(Debug, Default)]
pub struct InMemoryThreadStore {
    threads: Mutex<HashMap<String, Entry>>,
    /// Idempotency keys; locked after `threads` when both are held.
    keys: Mutex<super::idempotency::KeyTable>,
}

impl InMemoryThreadStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        // Every mutation below is a single assignment or push after all checks passed, so a
        // panic in another holder cannot have left an entry half-updated.
        self.threads.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn entry_mut<'a>(
    threads: &'a mut HashMap<String, Entry>,
    thread_id: &str,
) -> Result<&'a mut Entry, StoreError> {
    threads
        .get_mut(thread_id)
        .ok_or_else(|| StoreError::ThreadNotFound(thread_id.to_owned()))
}

fn turn_mut<'a>(entry: &'a mut Entry, turn_id: &str) -> Result<&'a mut Turn, StoreError> {
    let thread_id = &entry.record.id;
    entry
        .turns
        .iter_mut()
        .find(|turn| turn.id == turn_id)
        .ok_or_else(|| StoreError::TurnNotFound {
            thread_id: thread_id.clone(),
            turn_id: turn_id.to_owned(),
        })
}

/// Appends `items` of `turn` to `candidates`, with their times from `times`, until it holds
/// `take`; whether it does.
fn collect_items<'a>(
    candidates: &mut Vec<StoredItem>,
    take: usize,
    turn: &Turn,
    items: impl Iterator<Item = (usize, &'a ThreadItem)>,
    times: &HashMap<(String, usize), ItemTimes>,
) -> bool {
    for (index, item) in items {
        if candidates.len() == take {
            break;
        }
        let position = ItemPosition {
            turn_id: turn.id.clone(),
            index,
        };
        let times = times
            .get(&(position.turn_id.clone(), index))
            .copied()
            .unwrap_or_default();
        candidates.push(StoredItem {
            position,
            item: item.clone(),
            times,
        });
    }
    candidates.len() == take
}

#[async_trait]
impl ThreadStore for InMemoryThreadStore {
    async fn create_thread(
        &self,
        thread: &ThreadRecord,
        history: &[Turn],
    ) -> Result<(), StoreError> {
        let mut threads = self.lock();
        if threads.contains_key(&thread.id) {
            return Err(StoreError::ThreadExists(thread.id.clone()));
        }
        threads.insert(
            thread.id.clone(),
            Entry {
                record: thread.clone(),
                turns: history.to_vec(),
                attachments: Vec::new(),
                compactions: Vec::new(),
                checkpoints: Vec::new(),
                item_times: HashMap::new(),
                positions: HashMap::new(),
            },
        );
        Ok(())
    }

    async fn get_thread(&self, thread_id: &str) -> Result<Option<ThreadRecord>, StoreError> {
        Ok(self.lock().get(thread_id).map(|entry| entry.record.clone()))
    }

    async fn get_thread_with_turns(
        &self,
        thread_id: &str,
    ) -> Result<Option<(ThreadRecord, Vec<Turn>)>, StoreError> {
        Ok(self
            .lock()
            .get(thread_id)
            .map(|entry| (entry.record.clone(), entry.turns.clone())))
    }

    async fn update_thread(
        &self,
        thread_id: &str,
        update: &ThreadUpdate,
    ) -> Result<ThreadRecord, StoreError> {
        let mut threads = self.lock();
        let entry = entry_mut(&mut threads, thread_id)?;
        update.apply(&mut entry.record);
        Ok(entry.record.clone())
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
        let threads = self.lock();
        let mut remaining: Vec<&ThreadRecord> = threads
            .values()
            .map(|entry| &entry.record)
            .filter(|record| query.matches(record))
            // A cursor is a position, not an entry: the thread it named may be gone since.
            .filter(|record| match (&after, query.direction) {
                (None, _) => true,
                (Some(after), SortDirection::Asc) => {
                    (record.created_at, &record.id) > (after.0, &after.1)
                }
                (Some(after), SortDirection::Desc) => {
                    (record.created_at, &record.id) < (after.0, &after.1)
                }
            })
            .collect();
        remaining.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        if query.direction == SortDirection::Desc {
            remaining.reverse();
        }
        Ok(Page::from_candidates(
            remaining
                .into_iter()
                .take(effective_limit(query.limit) + 1)
                .cloned()
                .collect(),
            query.limit,
            thread_cursor,
        ))
    }

    async fn delete_thread(&self, thread_id: &str) -> Result<bool, StoreError> {
        let mut threads = self.lock();
        self.keys
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drop_scope(thread_id);
        Ok(threads.remove(thread_id).is_some())
    }

    async fn store_turn(
        &self,
        thread_id: &str,
        turn: &Turn,
        first_item_times: ItemTimes,
        update: &ThreadUpdate,
    ) -> Result<ThreadRecord, StoreError> {
        let mut threads = self.lock();
        let entry = entry_mut(&mut threads, thread_id)?;
        match entry.turns.iter_mut().find(|stored| stored.id == turn.id) {
            Some(stored) => {
                *stored = turn.clone();
                // The replaced items' times go with them.
                entry
                    .item_times
                    .retain(|(turn_id, _), _| *turn_id != turn.id);
            }
            None => entry.turns.push(turn.clone()),
        }
        // A whole turn's items come without times (see `ItemTimes`), but for a started
        // turn's input.
        if !turn.items.is_empty() && first_item_times != ItemTimes::default() {
            entry
                .item_times
                .insert((turn.id.clone(), 0), first_item_times);
        }
        update.apply(&mut entry.record);
        Ok(entry.record.clone())
    }

    async fn put_item(
        &self,
        thread_id: &str,
        turn_id: &str,
        index: usize,
        item: &ThreadItem,
        times: ItemTimes,
    ) -> Result<(), StoreError> {
        let mut threads = self.lock();
        let entry = entry_mut(&mut threads, thread_id)?;
        let stored = turn_mut(entry, turn_id)?;
        let len = stored.items.len();
        match stored.items.get_mut(index) {
            Some(slot) => *slot = item.clone(),
            None if index == len => stored.items.push(item.clone()),
            None => return Err(gap(thread_id, turn_id, index, len)),
        }
        entry.item_times.insert((turn_id.to_owned(), index), times);
        Ok(())
    }

    async fn finish_turn(
        &self,
        thread_id: &str,
        turn: &Turn,
        last_item: Option<(usize, &ThreadItem, ItemTimes)>,
        end: &TurnEndUpdate,
    ) -> Result<(), StoreError> {
        let mut threads = self.lock();
        let entry = entry_mut(&mut threads, thread_id)?;
        let stored = turn_mut(entry, &turn.id)?;
        if let Some((index, item, times)) = last_item {
            // Checked before anything changes: all or nothing.
            if index > stored.items.len() {
                return Err(gap(thread_id, &turn.id, index, stored.items.len()));
            }
            match stored.items.get_mut(index) {
                Some(slot) => *slot = item.clone(),
                None => stored.items.push(item.clone()),
            }
            entry.item_times.insert((turn.id.clone(), index), times);
        }
        let stored = turn_mut(entry, &turn.id)?;
        stored.status = turn.status;
        stored.items_view = turn.items_view;
        stored.error = turn.error.clone();
        stored.started_at = turn.started_at;
        stored.completed_at = turn.completed_at;
        stored.duration_ms = turn.duration_ms;
        end.apply(&mut entry.record);
        Ok(())
    }

    async fn list_turns(
        &self,
        thread_id: &str,
        query: &TurnListQuery,
    ) -> Result<Page<Turn>, StoreError> {
        let mut threads = self.lock();
        let entry = entry_mut(&mut threads, thread_id)?;
        let anchor = match query.cursor.as_deref() {
            None => None,
            Some(cursor) => {
                let anchor = paging::parse_turn_cursor(cursor)?;
                let position = entry
                    .turn_position(&anchor.position)
                    .ok_or_else(|| StoreError::InvalidCursor(cursor.to_owned()))?;
                Some((position, anchor.inclusive))
            }
        };
        let take = effective_limit(query.limit) + 1;
        let len = entry.turns.len();
        let selected: Vec<&Turn> = match query.direction {
            SortDirection::Asc => {
                let start = anchor.map_or(0, |(position, inclusive)| {
                    position + usize::from(!inclusive)
                });
                entry.turns[start.min(len)..].iter().take(take).collect()
            }
            SortDirection::Desc => {
                let end = anchor.map_or(len, |(position, inclusive)| {
                    position + usize::from(inclusive)
                });
                entry.turns[..end.min(len)]
                    .iter()
                    .rev()
                    .take(take)
                    .collect()
            }
        };
        let candidates = selected
            .into_iter()
            .map(|turn| {
                let mut turn = turn.clone();
                paging::apply_items_view(&mut turn, query.items_view);
                turn
            })
            .collect();
        Ok(paging::turn_page(candidates, query.limit))
    }

    async fn list_items(
        &self,
        thread_id: &str,
        query: &ItemListQuery,
    ) -> Result<Page<StoredItem>, StoreError> {
        let mut threads = self.lock();
        let entry = entry_mut(&mut threads, thread_id)?;
        let scope = match &query.turn_id {
            None => None,
            Some(turn_id) => {
                Some(
                    entry
                        .turn_position(turn_id)
                        .ok_or_else(|| StoreError::TurnNotFound {
                            thread_id: thread_id.to_owned(),
                            turn_id: turn_id.clone(),
                        })?,
                )
            }
        };
        // (turn position, item index, inclusive) of the start.
        let anchor = match &query.start {
            ItemStart::Beginning => None,
            ItemStart::Cursor(cursor) => {
                let anchor = paging::parse_item_cursor(cursor)?;
                let position = entry
                    .turn_position(&anchor.position.turn_id)
                    .ok_or_else(|| StoreError::InvalidCursor(cursor.clone()))?;
                Some((position, anchor.position.index, anchor.inclusive))
            }
            ItemStart::AfterItem(item_id) => {
                let (Some(position), Some(turn_id)) = (scope, &query.turn_id) else {
                    return Err(StoreError::InvalidCursor(format!("item {item_id}")));
                };
                let index = entry.turns[position]
                    .items
                    .iter()
                    .position(|item| item.id() == item_id)
                    .ok_or_else(|| {
                        StoreError::InvalidCursor(format!("item {item_id} of turn {turn_id}"))
                    })?;
                Some((position, index, false))
            }
        };
        let take = effective_limit(query.limit) + 1;
        let (first, last) = match scope {
            Some(position) => (position, position + 1),
            None => (0, entry.turns.len()),
        };
        let mut candidates = Vec::new();
        match query.direction {
            SortDirection::Asc => {
                let start = anchor.map_or(first, |(position, _, _)| position.max(first));
                for position in start..last {
                    let turn = &entry.turns[position];
                    let skip = match anchor {
                        Some((at, index, inclusive)) if at == position => {
                            index + usize::from(!inclusive)
                        }
                        _ => 0,
                    };
                    let items = turn.items.iter().enumerate().skip(skip);
                    if collect_items(&mut candidates, take, turn, items, &entry.item_times) {
                        break;
                    }
                }
            }
            SortDirection::Desc => {
                let end = anchor.map_or(last, |(position, _, _)| (position + 1).min(last));
                for position in (first..end).rev() {
                    let turn = &entry.turns[position];
                    let keep = match anchor {
                        Some((at, index, inclusive)) if at == position => {
                            (index + usize::from(inclusive)).min(turn.items.len())
                        }
                        _ => turn.items.len(),
                    };
                    let items = turn.items[..keep].iter().enumerate().rev();
                    if collect_items(&mut candidates, take, turn, items, &entry.item_times) {
                        break;
                    }
                }
            }
        }
        Ok(paging::item_page(candidates, query.limit))
    }

    async fn add_attachment(
        &self,
        thread_id: &str,
        attachment: &ThreadAttachment,
    ) -> Result<ThreadAttachmentAddResponse, StoreError> {
        let mut threads = self.lock();
        let entry = entry_mut(&mut threads, thread_id)?;
        let existing = entry.attachments.iter().find(|stored| {
            stored.attachment_type == attachment.attachment_type
                && stored.identity_key == attachment.identity_key
        });
        if let Some(existing) = existing {
            return Ok(ThreadAttachmentAddResponse {
                outcome: ThreadAttachmentAddOutcome::Existing,
                attachment: existing.clone(),
            });
        }
        entry.attachments.push(attachment.clone());
        Ok(ThreadAttachmentAddResponse {
            outcome: ThreadAttachmentAddOutcome::Created,
            attachment: attachment.clone(),
        })
    }

    async fn remove_attachment(
        &self,
        thread_id: &str,
        attachment_type: &str,
        identity_key: &str,
    ) -> Result<Option<ThreadAttachment>, StoreError> {
        let mut threads = self.lock();
        let entry = entry_mut(&mut threads, thread_id)?;
        let position = entry.attachments.iter().position(|stored| {
            stored.attachment_type == attachment_type && stored.identity_key == identity_key
        });
        Ok(position.map(|index| entry.attachments.remove(index)))
    }

    async fn list_attachments(&self, thread_id: &str) -> Result<Vec<ThreadAttachment>, StoreError> {
        let threads = self.lock();
        let entry = threads
            .get(thread_id)
            .ok_or_else(|| StoreError::ThreadNotFound(thread_id.to_owned()))?;
        Ok(entry.attachments.clone())
    }

    async fn truncate_turns(
        &self,
        thread_id: &str,
        turn_id: &str,
        update: &ThreadUpdate,
    ) -> Result<ThreadRecord, StoreError> {
        let mut threads = self.lock();
        let entry = entry_mut(&mut threads, thread_id)?;
        let position = entry
            .turns
            .iter()
            .position(|turn| turn.id == turn_id)
            .ok_or_else(|| StoreError::TurnNotFound {
                thread_id: thread_id.to_owned(),
                turn_id: turn_id.to_owned(),
            })?;
        let removed: std::collections::HashSet<String> = entry.turns[position..]
            .iter()
            .map(|turn| turn.id.clone())
            .collect();
        entry
            .item_times
            .retain(|(turn_id, _), _| !removed.contains(turn_id));
        entry.turns.truncate(position);
        let kept = &entry.turns;
        entry
            .compactions
            .retain(|(turn, _)| kept.iter().any(|kept| &kept.id == turn));
        entry
            .checkpoints
            .retain(|(turn, _)| kept.iter().any(|kept| &kept.id == turn));
        update.apply(&mut entry.record);
        Ok(entry.record.clone())
    }

    async fn put_compaction(
        &self,
        thread_id: &str,
        turn_id: &str,
        summary: &str,
    ) -> Result<(), StoreError> {
        let mut threads = self.lock();
        let entry = entry_mut(&mut threads, thread_id)?;
        turn_mut(entry, turn_id)?;
        entry.compactions.retain(|(turn, _)| turn != turn_id);
        entry
            .compactions
            .push((turn_id.to_owned(), summary.to_owned()));
        Ok(())
    }

    async fn latest_compaction(&self, thread_id: &str) -> Result<Option<Compaction>, StoreError> {
        let threads = self.lock();
        let entry = threads
            .get(thread_id)
            .ok_or_else(|| StoreError::ThreadNotFound(thread_id.to_owned()))?;
        // Latest by turn order, like the SQLite store, not by when the summary was stored.
        Ok(entry
            .turns
            .iter()
            .rev()
            .find_map(|turn| {
                entry
                    .compactions
                    .iter()
                    .find(|(compacted, _)| compacted == &turn.id)
            })
            .map(|(turn_id, summary)| Compaction {
                turn_id: turn_id.clone(),
                summary: summary.clone(),
            }))
    }

    async fn put_file_checkpoint(
        &self,
        thread_id: &str,
        turn_id: &str,
        checkpoint: &FileCheckpoint,
        thread_max_bytes: u64,
    ) -> Result<(), StoreError> {
        let mut threads = self.lock();
        let entry = entry_mut(&mut threads, thread_id)?;
        turn_mut(entry, turn_id)?;
        match entry
            .checkpoints
            .iter_mut()
            .find(|(turn, _)| turn == turn_id)
        {
            Some((_, stored)) => *stored = checkpoint.clone(),
            None => entry
                .checkpoints
                .push((turn_id.to_owned(), checkpoint.clone())),
        }
        // Newest by turn order, like the durable stores.
        let newest_first: Vec<(String, u64)> = entry
            .turns
            .iter()
            .rev()
            .filter_map(|turn| {
                entry
                    .checkpoints
                    .iter()
                    .find(|(id, _)| *id == turn.id)
                    .map(|(id, stored)| (id.clone(), stored.kept_bytes()))
            })
            .collect();
        for dropped in crate::checkpoint::over_budget(&newest_first, thread_max_bytes) {
            if let Some((_, stored)) = entry.checkpoints.iter_mut().find(|(id, _)| *id == dropped) {
                stored.drop_contents(crate::evicted_reason(thread_max_bytes));
            }
        }
        Ok(())
    }

    async fn file_checkpoints(
        &self,
        thread_id: &str,
        from_turn_id: &str,
    ) -> Result<Vec<(String, FileCheckpoint)>, StoreError> {
        let mut threads = self.lock();
        let entry = entry_mut(&mut threads, thread_id)?;
        let position =
            entry
                .turn_position(from_turn_id)
                .ok_or_else(|| StoreError::TurnNotFound {
                    thread_id: thread_id.to_owned(),
                    turn_id: from_turn_id.to_owned(),
                })?;
        Ok(entry.turns[position..]
            .iter()
            .rev()
            .filter_map(|turn| {
                entry
                    .checkpoints
                    .iter()
                    .find(|(id, _)| *id == turn.id)
                    .cloned()
            })
            .collect())
    }

    // i-idem: idempotency keys.

    async fn claim_idempotency_key(
        &self,
        record: &IdempotencyRecord,
    ) -> Result<Option<IdempotencyRecord>, StoreError> {
        Ok(self
            .keys
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .claim(record))
    }

    async fn idempotency_key(
        &self,
        scope: &str,
        key: &str,
        now: i64,
    ) -> Result<Option<IdempotencyRecord>, StoreError> {
        Ok(self
            .keys
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(scope, key, now))
    }

    async fn release_idempotency_key(&self, scope: &str, key: &str) -> Result<(), StoreError> {
        self.keys
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .release(scope, key);
        Ok(())
    }
}

/// The error of an item stored past the end of its turn's items (a caller's bug).
fn gap(thread_id: &str, turn_id: &str, index: usize, len: usize) -> StoreError {
    StoreError::Unavailable(format!(
        "item {index} of turn {turn_id} in thread {thread_id} would leave a gap after item \
         {len}; this is a bug in the caller"
    ))
}

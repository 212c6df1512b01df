//! [`InMemoryThreadStore`]: threads that live only as long as the process, used for ephemeral
//! threads and as the reference implementation in tests.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use tandem_protocol::{
    SortDirection, ThreadAttachment, ThreadAttachmentAddOutcome, ThreadAttachmentAddResponse,
    ThreadItem, Turn,
};

use super::{
    Compaction, Page, StoreError, ThreadListQuery, ThreadRecord, ThreadStore, ThreadUpdate,
    TurnListQuery, effective_limit, parse_thread_cursor, thread_cursor,
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
}

/// A [`ThreadStore`] holding everything in memory.
///
/// Every operation runs under one short lock and never awaits while holding it, so the async
/// methods complete without yielding.
#[derive(Debug, Default)]
pub struct InMemoryThreadStore {
    threads: Mutex<HashMap<String, Entry>>,
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
        Ok(self.lock().remove(thread_id).is_some())
    }

    async fn commit_turn(
        &self,
        thread_id: &str,
        turn: &Turn,
        update: &ThreadUpdate,
    ) -> Result<ThreadRecord, StoreError> {
        let mut threads = self.lock();
        let entry = entry_mut(&mut threads, thread_id)?;
        match entry.turns.iter_mut().find(|stored| stored.id == turn.id) {
            Some(stored) => *stored = turn.clone(),
            None => entry.turns.push(turn.clone()),
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
    ) -> Result<(), StoreError> {
        let mut threads = self.lock();
        let stored = turn_mut(entry_mut(&mut threads, thread_id)?, turn_id)?;
        let len = stored.items.len();
        match stored.items.get_mut(index) {
            Some(slot) => *slot = item.clone(),
            None if index == len => stored.items.push(item.clone()),
            None => {
                return Err(StoreError::Unavailable(format!(
                    "item {index} of turn {turn_id} in thread {thread_id} would leave a gap \
                     after item {len}; this is a bug in the caller"
                )));
            }
        }
        Ok(())
    }

    async fn finish_turn(
        &self,
        thread_id: &str,
        turn: &Turn,
        update: &ThreadUpdate,
    ) -> Result<ThreadRecord, StoreError> {
        let mut threads = self.lock();
        let entry = entry_mut(&mut threads, thread_id)?;
        let stored = turn_mut(entry, &turn.id)?;
        stored.status = turn.status;
        stored.items_view = turn.items_view;
        stored.error = turn.error.clone();
        stored.started_at = turn.started_at;
        stored.completed_at = turn.completed_at;
        stored.duration_ms = turn.duration_ms;
        update.apply(&mut entry.record);
        Ok(entry.record.clone())
    }

    async fn list_turns(
        &self,
        thread_id: &str,
        query: &TurnListQuery,
    ) -> Result<Page<Turn>, StoreError> {
        let threads = self.lock();
        let entry = threads
            .get(thread_id)
            .ok_or_else(|| StoreError::ThreadNotFound(thread_id.to_owned()))?;
        let after = query
            .cursor
            .as_deref()
            .map(|cursor| {
                entry
                    .turns
                    .iter()
                    .position(|turn| turn.id == cursor)
                    .ok_or_else(|| StoreError::InvalidCursor(cursor.to_owned()))
            })
            .transpose()?;
        let remaining: Vec<&Turn> = match (query.direction, after) {
            (SortDirection::Asc, None) => entry.turns.iter().collect(),
            (SortDirection::Asc, Some(index)) => entry.turns[index + 1..].iter().collect(),
            (SortDirection::Desc, None) => entry.turns.iter().rev().collect(),
            (SortDirection::Desc, Some(index)) => entry.turns[..index].iter().rev().collect(),
        };
        Ok(Page::from_candidates(
            remaining
                .into_iter()
                .take(effective_limit(query.limit) + 1)
                .cloned()
                .collect(),
            query.limit,
            |turn| turn.id.clone(),
        ))
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
        entry.turns.truncate(position);
        let kept = &entry.turns;
        entry
            .compactions
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
}

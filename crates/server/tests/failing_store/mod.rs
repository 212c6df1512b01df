//! The store double of the durability tests: an in-memory store whose writes fail on
//! command (the Nth write, every write while "full", the first turn ends as an unreachable
//! database), so that every write of a session can be made to fail in turn.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use async_trait::async_trait;
use tandem_protocol::{ThreadAttachment, ThreadAttachmentAddResponse, ThreadItem, Turn};
use tandem_server::store::{
    IdempotencyRecord, InMemoryThreadStore, ItemListQuery, ItemTimes, Page, StoreError, StoredItem,
    ThreadListQuery, ThreadRecord, ThreadStore, ThreadUpdate, TurnEndUpdate, TurnListQuery,
};

/// Where the failing test double says it failed.
pub(crate) const FAKE_PATH: &str = "/fault-injection/threads.sqlite";

/// An in-memory store whose `fail_at`-th write (counting from 1) fails as a full disk would;
/// every other write goes through. Its first `unreachable_ends` turn ends fail as a database
/// that cannot be reached would (a PostgreSQL restart). While `full` is set, every write
/// fails (a disk that stays full until someone frees it).
pub(crate) struct FailingStore {
    /// Where the writes that go through land.
    pub(crate) inner: InMemoryThreadStore,
    /// Writes tried so far.
    pub(crate) writes: AtomicUsize,
    fail_at: usize,
    /// Turn ends still to fail as an unreachable database.
    pub(crate) unreachable_ends: AtomicUsize,
    /// Every write fails while set.
    pub(crate) full: AtomicBool,
}

impl FailingStore {
    /// A store whose `fail_at`-th write fails (`usize::MAX`: none).
    pub(crate) fn new(fail_at: usize) -> Self {
        Self {
            inner: InMemoryThreadStore::new(),
            writes: AtomicUsize::new(0),
            fail_at,
            unreachable_ends: AtomicUsize::new(0),
            full: AtomicBool::new(false),
        }
    }

    /// Counts a write; the error if it is the one to fail.
    fn write(&self) -> Result<(), StoreError> {
        let n = self.writes.fetch_add(1, Ordering::SeqCst) + 1;
        if n == self.fail_at || self.full.load(Ordering::SeqCst) {
            Err(StoreError::Unavailable(format!(
                "cannot write to the thread database {FAKE_PATH}: injected failure of write \
                 {n} (disk full); free space on the disk that holds it, then retry"
            )))
        } else {
            Ok(())
        }
    }
}

#[async_trait]
impl ThreadStore for FailingStore {
    async fn create_thread(
        &self,
        thread: &ThreadRecord,
        history: &[Turn],
    ) -> Result<(), StoreError> {
        self.write()?;
        self.inner.create_thread(thread, history).await
    }
    async fn get_thread(&self, thread_id: &str) -> Result<Option<ThreadRecord>, StoreError> {
        self.inner.get_thread(thread_id).await
    }
    async fn get_thread_with_turns(
        &self,
        thread_id: &str,
    ) -> Result<Option<(ThreadRecord, Vec<Turn>)>, StoreError> {
        self.inner.get_thread_with_turns(thread_id).await
    }
    async fn update_thread(
        &self,
        thread_id: &str,
        update: &ThreadUpdate,
    ) -> Result<ThreadRecord, StoreError> {
        self.write()?;
        self.inner.update_thread(thread_id, update).await
    }
    async fn list_threads(
        &self,
        query: &ThreadListQuery,
    ) -> Result<Page<ThreadRecord>, StoreError> {
        self.inner.list_threads(query).await
    }
    async fn delete_thread(&self, thread_id: &str) -> Result<bool, StoreError> {
        self.write()?;
        self.inner.delete_thread(thread_id).await
    }
    async fn store_turn(
        &self,
        thread_id: &str,
        turn: &Turn,
        first_item_times: ItemTimes,
        update: &ThreadUpdate,
    ) -> Result<ThreadRecord, StoreError> {
        self.write()?;
        self.inner
            .store_turn(thread_id, turn, first_item_times, update)
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
        self.write()?;
        self.inner
            .put_item(thread_id, turn_id, index, item, times)
            .await
    }
    async fn finish_turn(
        &self,
        thread_id: &str,
        turn: &Turn,
        last_item: Option<(usize, &ThreadItem, ItemTimes)>,
        end: &TurnEndUpdate,
    ) -> Result<(), StoreError> {
        // One write, as the real stores make it one commit.
        self.write()?;
        let unreachable =
            self.unreachable_ends
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
                    left.checked_sub(1)
                });
        if unreachable.is_ok() {
            return Err(StoreError::PostgresPool(
                "injected: the database system is starting up".to_owned(),
            ));
        }
        self.inner
            .finish_turn(thread_id, turn, last_item, end)
            .await
    }
    async fn list_turns(
        &self,
        thread_id: &str,
        query: &TurnListQuery,
    ) -> Result<Page<Turn>, StoreError> {
        self.inner.list_turns(thread_id, query).await
    }
    async fn list_items(
        &self,
        thread_id: &str,
        query: &ItemListQuery,
    ) -> Result<Page<StoredItem>, StoreError> {
        self.inner.list_items(thread_id, query).await
    }
    async fn add_attachment(
        &self,
        thread_id: &str,
        attachment: &ThreadAttachment,
    ) -> Result<ThreadAttachmentAddResponse, StoreError> {
        self.write()?;
        self.inner.add_attachment(thread_id, attachment).await
    }
    async fn remove_attachment(
        &self,
        thread_id: &str,
        attachment_type: &str,
        identity_key: &str,
    ) -> Result<Option<ThreadAttachment>, StoreError> {
        self.write()?;
        self.inner
            .remove_attachment(thread_id, attachment_type, identity_key)
            .await
    }
    async fn list_attachments(&self, thread_id: &str) -> Result<Vec<ThreadAttachment>, StoreError> {
        self.inner.list_attachments(thread_id).await
    }
    async fn truncate_turns(
        &self,
        thread_id: &str,
        turn_id: &str,
        update: &ThreadUpdate,
    ) -> Result<ThreadRecord, StoreError> {
        self.write()?;
        self.inner.truncate_turns(thread_id, turn_id, update).await
    }
    async fn put_compaction(
        &self,
        thread_id: &str,
        turn_id: &str,
        summary: &str,
    ) -> Result<(), StoreError> {
        self.write()?;
        self.inner.put_compaction(thread_id, turn_id, summary).await
    }
    async fn latest_compaction(
        &self,
        thread_id: &str,
    ) -> Result<Option<tandem_server::store::Compaction>, StoreError> {
        self.inner.latest_compaction(thread_id).await
    }

    async fn put_file_checkpoint(
        &self,
        thread_id: &str,
        turn_id: &str,
        checkpoint: &tandem_server::store::FileCheckpoint,
        thread_max_bytes: u64,
    ) -> Result<(), StoreError> {
        self.write()?;
        self.inner
            .put_file_checkpoint(thread_id, turn_id, checkpoint, thread_max_bytes)
            .await
    }
    async fn file_checkpoints(
        &self,
        thread_id: &str,
        from_turn_id: &str,
    ) -> Result<Vec<(String, tandem_server::store::FileCheckpoint)>, StoreError> {
        self.inner.file_checkpoints(thread_id, from_turn_id).await
    }

    // i-idem: idempotency keys; claims and releases are writes like any other.
    async fn claim_idempotency_key(
        &self,
        record: &IdempotencyRecord,
    ) -> Result<Option<IdempotencyRecord>, StoreError> {
        self.write()?;
        self.inner.claim_idempotency_key(record).await
    }
    async fn idempotency_key(
        &self,
        scope: &str,
        key: &str,
        now: i64,
    ) -> Result<Option<IdempotencyRecord>, StoreError> {
        self.inner.idempotency_key(scope, key, now).await
    }
    async fn release_idempotency_key(&self, scope: &str, key: &str) -> Result<(), StoreError> {
        self.write()?;
        self.inner.release_idempotency_key(scope, key).await
    }
}

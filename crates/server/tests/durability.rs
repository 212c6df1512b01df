//! Issue 13, server half: turns written as they happen, honest failures when the store cannot
//! write, and a shutdown that waits for the store. Driven through the in-process host.
//!
//! - a store test double that fails its Nth write, for every N of a scripted session: nothing
//!   the client is told is done may be missing from the store, and every failure reaches the
//!   client with the store's message;
//! - a real full filesystem and a read-only one (a tmpfs mounted by the test; skipped with a
//!   message where mounting is not permitted);
//! - shutdown with a turn running: the turn is stored `interrupted` and the WAL is empty.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tandem_host::in_process::{self, InProcessServerEvent, InProcessStartArgs};
use tandem_host::{InProcessClientHandle, MessageProcessor, RequestResult};
use tandem_protocol::client_methods::{ThreadResume, ThreadStart, TurnStart};
use tandem_protocol::{
    ClientRequest, RequestId, RequestMethod, ServerNotification, ThreadAttachment,
    ThreadAttachmentAddResponse, ThreadItem, Turn, TurnStatus, error_codes,
};
use tandem_server::store::{
    IdempotencyRecord, InMemoryThreadStore, ItemListQuery, Page, SqliteThreadStore, StoreError,
    StoredItem, ThreadListQuery, ThreadRecord, ThreadStore, ThreadUpdate, TurnListQuery,
};
use tandem_server::{ServerConfig, ServerOptions, TandemServer};
use tandem_test_support::initialize_params;
use tokio::time::timeout;

/// Upper bound for anything that should happen promptly.
const PROMPT: Duration = Duration::from_secs(20);

/// Where the failing test double says it failed.
const FAKE_PATH: &str = "/fault-injection/threads.sqlite";

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

fn options(home: &Path) -> ServerOptions {
    ServerOptions::load(
        ServerConfig::builder()
            .tandem_home(home)
            // In-process without a helper program the sandbox cannot be applied, and commands
            // under the default read-only policy would be refused; these tests are not about
            // the sandbox (crates/cli/tests/sandbox.rs is).
            .config_override("sandbox_mode", "danger-full-access".into()),
    )
    .expect("options load")
}

async fn start(options: ServerOptions) -> InProcessClientHandle {
    let args = InProcessStartArgs::new(
        move |outgoing| Arc::new(TandemServer::new(outgoing, options)) as Arc<dyn MessageProcessor>,
        initialize_params(true),
    );
    within("start", in_process::start(args))
        .await
        .expect("host starts")
}

async fn within<F: std::future::Future>(what: &str, future: F) -> F::Output {
    match timeout(PROMPT, future).await {
        Ok(output) => output,
        Err(_) => panic!("timed out after {PROMPT:?}: {what}"),
    }
}

fn request<M: RequestMethod<Request = ClientRequest>>(params: Value) -> ClientRequest {
    static NEXT: AtomicI64 = AtomicI64::new(1);
    let params: M::Params = serde_json::from_value(params).expect("params decode");
    M::into_request(
        RequestId::Integer(NEXT.fetch_add(1, Ordering::Relaxed)),
        params,
    )
}

async fn try_call<M: RequestMethod<Request = ClientRequest>>(
    handle: &InProcessClientHandle,
    params: Value,
) -> RequestResult {
    within(M::METHOD, handle.request(request::<M>(params)))
        .await
        .expect("host answers")
}

/// Every notification up to and including the `turn/completed` of `turn_id`.
async fn notes_until_turn_completed(
    handle: &mut InProcessClientHandle,
    turn_id: &str,
) -> Vec<ServerNotification> {
    let mut notes = Vec::new();
    loop {
        let event = within("turn/completed", handle.next_event())
            .await
            .expect("event stream open");
        if let InProcessServerEvent::ServerNotification(note) = event {
            let done =
                matches!(&note, ServerNotification::TurnCompleted(done) if done.turn.id == turn_id);
            notes.push(note);
            if done {
                return notes;
            }
        }
    }
}

async fn shutdown(mut handle: InProcessClientHandle) {
    within("shutdown", handle.shutdown())
        .await
        .expect("clean shutdown");
}

// ---------------------------------------------------------------------------------------------
// A store that fails its Nth write
// ---------------------------------------------------------------------------------------------

/// An in-memory store whose `fail_at`-th write (counting from 1) fails as a full disk would;
/// every other write goes through. Its first `unreachable_ends` turn ends fail as a database
/// that cannot be reached would (a PostgreSQL restart).
struct FailingStore {
    inner: InMemoryThreadStore,
    writes: AtomicUsize,
    fail_at: usize,
    unreachable_ends: AtomicUsize,
}

impl FailingStore {
    fn new(fail_at: usize) -> Self {
        Self {
            inner: InMemoryThreadStore::new(),
            writes: AtomicUsize::new(0),
            fail_at,
            unreachable_ends: AtomicUsize::new(0),
        }
    }

    /// Counts a write; the error if it is the one to fail.
    fn write(&self) -> Result<(), StoreError> {
        let n = self.writes.fetch_add(1, Ordering::SeqCst) + 1;
        if n == self.fail_at {
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
    async fn commit_turn(
        &self,
        thread_id: &str,
        turn: &Turn,
        update: &ThreadUpdate,
    ) -> Result<ThreadRecord, StoreError> {
        self.write()?;
        self.inner.commit_turn(thread_id, turn, update).await
    }
    async fn put_item(
        &self,
        thread_id: &str,
        turn_id: &str,
        index: usize,
        item: &ThreadItem,
    ) -> Result<(), StoreError> {
        self.write()?;
        self.inner.put_item(thread_id, turn_id, index, item).await
    }
    async fn finish_turn(
        &self,
        thread_id: &str,
        turn: &Turn,
        update: &ThreadUpdate,
    ) -> Result<ThreadRecord, StoreError> {
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
        self.inner.finish_turn(thread_id, turn, update).await
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

/// What one session against a [`FailingStore`] saw.
struct Session {
    thread_id: Option<String>,
    /// Per turn the server accepted: its id and every notification up to its end.
    turns: Vec<(String, Vec<ServerNotification>)>,
    /// The errors of refused requests.
    refusals: Vec<String>,
}

/// The inputs of the session's turns: a command, then a plain answer.
const TURNS: [&str; 2] = ["/sh echo stored", "hello"];

/// thread/start, then each of [`TURNS`], through a host over `store`.
async fn session(store: Arc<FailingStore>) -> Session {
    let home = tempfile::tempdir().expect("temp home");
    let mut handle = start(options(home.path()).with_store(store as Arc<dyn ThreadStore>)).await;
    let mut session = Session {
        thread_id: None,
        turns: Vec::new(),
        refusals: Vec::new(),
    };
    let refused = |error: tandem_protocol::JSONRPCErrorError| {
        assert_eq!(error.code, error_codes::INTERNAL_ERROR, "{error:?}");
        error.message
    };
    match try_call::<ThreadStart>(&handle, json!({"approvalPolicy": "never"})).await {
        Ok(reply) => session.thread_id = Some(reply["thread"]["id"].as_str().unwrap().to_owned()),
        Err(error) => {
            session.refusals.push(refused(error));
            shutdown(handle).await;
            return session;
        }
    }
    let thread_id = session.thread_id.clone().unwrap();
    for text in TURNS {
        let params = json!({"threadId": thread_id, "input": [{"type": "text", "text": text}]});
        match try_call::<TurnStart>(&handle, params).await {
            Ok(reply) => {
                let turn_id = reply["turn"]["id"].as_str().unwrap().to_owned();
                let notes = notes_until_turn_completed(&mut handle, &turn_id).await;
                session.turns.push((turn_id, notes));
            }
            Err(error) => session.refusals.push(refused(error)),
        }
    }
    shutdown(handle).await;
    session
}

/// For every N up to the number of writes of a clean session, a session whose Nth write
/// fails: a refused request answers -32603 with the store's message; an accepted turn that
/// met the failure ends `failed` after an `error` notification with that message; nothing
/// reported completed (item or turn) is missing from the store or different there; and the
/// store never says `completed` about a turn the client was told failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_failing_on_any_write_never_reports_unstored_work() {
    let clean = Arc::new(FailingStore::new(usize::MAX));
    let session_clean = session(Arc::clone(&clean)).await;
    assert!(session_clean.refusals.is_empty());
    let total = clean.writes.load(Ordering::SeqCst);
    // thread/start, and per turn at least its start, one item and its end.
    assert!(total > 3 * TURNS.len(), "{total} writes");
    let mut failed_turns = 0;
    for fail_at in 1..=total {
        let store = Arc::new(FailingStore::new(fail_at));
        let seen = session(Arc::clone(&store)).await;
        let injected =
            |message: &str| message.contains("injected failure") && message.contains(FAKE_PATH);
        let mut failures_reported = seen.refusals.len();
        assert!(
            seen.refusals.iter().all(|message| injected(message)),
            "{:?}",
            seen.refusals
        );
        let Some(thread_id) = seen.thread_id else {
            assert_eq!(fail_at, 1, "only the first write creates the thread");
            continue;
        };
        let (_, stored) = store
            .inner
            .get_thread_with_turns(&thread_id)
            .await
            .unwrap()
            .expect("the thread the client was given is stored");
        assert_eq!(
            stored.len(),
            seen.turns.len(),
            "write {fail_at}: every accepted turn is stored"
        );
        for ((turn_id, notes), stored) in seen.turns.iter().zip(&stored) {
            assert_eq!(&stored.id, turn_id);
            for note in notes {
                if let ServerNotification::ItemCompleted(done) = note {
                    assert!(
                        stored.items.contains(&done.item),
                        "write {fail_at}: item reported completed but not stored: {:?}",
                        done.item
                    );
                }
            }
            let Some(ServerNotification::TurnCompleted(end)) = notes.last() else {
                unreachable!()
            };
            match end.turn.status {
                TurnStatus::Completed => {
                    assert_eq!(stored.status, TurnStatus::Completed, "write {fail_at}");
                    assert_eq!(stored.items, end.turn.items, "write {fail_at}");
                }
                TurnStatus::Failed => {
                    failed_turns += 1;
                    failures_reported += 1;
                    let message = &end
                        .turn
                        .error
                        .as_ref()
                        .expect("failed turn has an error")
                        .message;
                    assert!(injected(message), "write {fail_at}: {message}");
                    assert!(
                        notes
                            .iter()
                            .any(|note| matches!(note, ServerNotification::Error(error)
                            if error.turn_id == *turn_id && injected(&error.error.message))),
                        "write {fail_at}: an error notification names the failure"
                    );
                    assert_ne!(stored.status, TurnStatus::Completed, "write {fail_at}");
                }
                other => panic!("write {fail_at}: turn ended {other:?}"),
            }
        }
        assert_eq!(
            failures_reported, 1,
            "write {fail_at}: the one failure is reported once"
        );
    }
    assert!(failed_turns > 0, "some failure hit a running turn");
    println!("{total} writes per session; each failed once; {failed_turns} turns ended failed");
}

/// A turn whose end the database cannot take for a while (a PostgreSQL restart): the server
/// writes the end again until it is taken, so the client is told what is stored. Before, both
/// attempts failed at once: the client was told `failed` while the store kept the turn
/// `inProgress`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_end_the_database_cannot_take_yet_is_stored_once_it_can() {
    let store = Arc::new(FailingStore::new(usize::MAX));
    store.unreachable_ends.store(3, Ordering::SeqCst);
    let seen = session(Arc::clone(&store)).await;
    assert!(seen.refusals.is_empty(), "{:?}", seen.refusals);
    assert_eq!(store.unreachable_ends.load(Ordering::SeqCst), 0);
    let thread_id = seen.thread_id.expect("thread");
    let (_, stored) = store
        .inner
        .get_thread_with_turns(&thread_id)
        .await
        .unwrap()
        .expect("stored");
    assert_eq!(stored.len(), TURNS.len());
    for ((turn_id, notes), stored) in seen.turns.iter().zip(&stored) {
        let Some(ServerNotification::TurnCompleted(end)) = notes.last() else {
            unreachable!()
        };
        assert_eq!(&stored.id, turn_id);
        assert_eq!(end.turn.status, TurnStatus::Completed, "{end:?}");
        assert_eq!(stored.status, TurnStatus::Completed, "{stored:?}");
        assert_eq!(stored.items, end.turn.items);
    }
}

// ---------------------------------------------------------------------------------------------
// Shutdown
// ---------------------------------------------------------------------------------------------

/// A `/sleep 60000` turn, then the host shuts down: the turn is stored `interrupted`, and the
/// WAL was checkpointed into the database file. Twenty times, as the bar asks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_stores_the_running_turn_and_checkpoints_the_log() {
    for round in 0..20 {
        let home = tempfile::tempdir().expect("temp home");
        let mut handle = start(options(home.path())).await;
        let thread = try_call::<ThreadStart>(&handle, json!({}))
            .await
            .expect("thread/start");
        let thread_id = thread["thread"]["id"].as_str().unwrap().to_owned();
        let params =
            json!({"threadId": thread_id, "input": [{"type": "text", "text": "/sleep 60000"}]});
        let turn = try_call::<TurnStart>(&handle, params)
            .await
            .expect("turn/start");
        let turn_id = turn["turn"]["id"].as_str().unwrap().to_owned();
        // The agent is running once the user's item is reported.
        loop {
            let event = within("item/completed", handle.next_event())
                .await
                .expect("events");
            if matches!(
                event,
                InProcessServerEvent::ServerNotification(ServerNotification::ItemCompleted(_))
            ) {
                break;
            }
        }
        shutdown(handle).await;

        let wal = home.path().join("threads.sqlite-wal");
        let wal_len = std::fs::metadata(&wal).map(|meta| meta.len()).unwrap_or(0);
        assert_eq!(wal_len, 0, "round {round}: the log was checkpointed");
        let store = SqliteThreadStore::open(home.path()).await.expect("reopen");
        let (_, turns) = store
            .get_thread_with_turns(&thread_id)
            .await
            .unwrap()
            .expect("thread stored");
        assert_eq!(turns.len(), 1, "round {round}");
        assert_eq!(turns[0].id, turn_id);
        assert_eq!(turns[0].status, TurnStatus::Interrupted, "round {round}");
        // Interrupted by the shutdown itself, not closed by recovery on this reopen.
        assert!(
            turns[0].error.is_none(),
            "round {round}: {:?}",
            turns[0].error
        );
        assert!(turns[0].completed_at.is_some());
    }
}

// ---------------------------------------------------------------------------------------------
// Real filesystems: full, read-only
// ---------------------------------------------------------------------------------------------

/// A tmpfs mounted for one test, unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (e.g. `2m`); `None`, with a printed reason, where the machine
    /// does not let this process mount.
    fn mount(size: &str, test: &str) -> Option<Self> {
        let dir = tempfile::tempdir().expect("mount point");
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        if mounted {
            Some(Self { dir })
        } else {
            println!("{test}: skipped, this process cannot mount a tmpfs (needs root)");
            None
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Remounts read-only (`ro`) or writable (`rw`).
    fn remount(&self, mode: &str) {
        let status = std::process::Command::new("mount")
            .args(["-o", &format!("remount,{mode}")])
            .arg(self.dir.path())
            .status()
            .expect("run mount");
        assert!(status.success(), "remount {mode}");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// Starts a thread in `home` and runs one turn to completion; returns the thread id.
async fn thread_with_a_completed_turn(handle: &mut InProcessClientHandle) -> String {
    let thread = try_call::<ThreadStart>(handle, json!({"approvalPolicy": "never"}))
        .await
        .expect("thread/start");
    let thread_id = thread["thread"]["id"].as_str().unwrap().to_owned();
    let params = json!({"threadId": thread_id, "input": [{"type": "text", "text": "first"}]});
    let turn = try_call::<TurnStart>(handle, params)
        .await
        .expect("turn/start");
    let notes = notes_until_turn_completed(handle, turn["turn"]["id"].as_str().unwrap()).await;
    let Some(ServerNotification::TurnCompleted(done)) = notes.last() else {
        unreachable!()
    };
    assert_eq!(done.turn.status, TurnStatus::Completed);
    thread_id
}

/// Starts a turn that the store cannot take. Either `turn/start` is refused with -32603, or
/// the turn ends `failed` after an `error` notification; both name `database`. Returns the
/// id of the accepted turn, if it was accepted.
async fn turn_the_store_cannot_take(
    handle: &mut InProcessClientHandle,
    thread_id: &str,
    database: &Path,
) -> Option<String> {
    let database = database.display().to_string();
    let params =
        json!({"threadId": thread_id, "input": [{"type": "text", "text": "/sh echo more"}]});
    match try_call::<TurnStart>(handle, params).await {
        Err(error) => {
            assert_eq!(error.code, error_codes::INTERNAL_ERROR, "{error:?}");
            assert!(error.message.contains(&database), "{}", error.message);
            println!("turn/start refused: {}", error.message);
            None
        }
        Ok(reply) => {
            let turn_id = reply["turn"]["id"].as_str().unwrap().to_owned();
            let notes = notes_until_turn_completed(handle, &turn_id).await;
            let Some(ServerNotification::TurnCompleted(done)) = notes.last() else {
                unreachable!()
            };
            assert_eq!(done.turn.status, TurnStatus::Failed, "{notes:?}");
            let error = notes
                .iter()
                .find_map(|note| match note {
                    ServerNotification::Error(error) if error.turn_id == turn_id => {
                        Some(error.error.message.clone())
                    }
                    _ => None,
                })
                .expect("an error notification");
            assert!(error.contains(&database), "{error}");
            println!("turn failed: {error}");
            Some(turn_id)
        }
    }
}

/// After the failure, what a restart reads agrees with what the client was told: the first
/// turn completed, the second (if it was accepted at all) not completed.
async fn restart_agrees(home: &Path, thread_id: &str, second: Option<&str>) {
    let store = SqliteThreadStore::open(home).await.expect("reopen");
    let (_, turns) = store
        .get_thread_with_turns(thread_id)
        .await
        .expect("read")
        .expect("thread stored");
    assert_eq!(turns[0].status, TurnStatus::Completed);
    match second {
        None => assert_eq!(turns.len(), 1, "{turns:?}"),
        Some(second) => {
            assert_eq!(turns.len(), 2, "{turns:?}");
            assert_eq!(turns[1].id, second);
            assert_ne!(turns[1].status, TurnStatus::Completed);
        }
    }
    drop(store);
    // And the thread takes a new turn once the store can write again.
    let mut handle = start(options(home)).await;
    try_call::<ThreadResume>(&handle, json!({"threadId": thread_id}))
        .await
        .expect("thread/resume");
    let params = json!({"threadId": thread_id, "input": [{"type": "text", "text": "again"}]});
    let turn = try_call::<TurnStart>(&handle, params)
        .await
        .expect("turn/start");
    let notes = notes_until_turn_completed(&mut handle, turn["turn"]["id"].as_str().unwrap()).await;
    assert!(
        matches!(notes.last(), Some(ServerNotification::TurnCompleted(done)) if done.turn.status == TurnStatus::Completed)
    );
    shutdown(handle).await;
}

/// The scenario: `TANDEM_HOME` on a 2 MiB tmpfs, filled after the first turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_fails_the_turn_and_a_restart_agrees() {
    let Some(disk) = Tmpfs::mount("2m", "a_full_disk_fails_the_turn_and_a_restart_agrees") else {
        return;
    };
    let home = disk.path().join("home");
    let database = home.join(SqliteThreadStore::FILE_NAME);
    let mut handle = start(options(&home)).await;
    let thread_id = thread_with_a_completed_turn(&mut handle).await;

    let filler = disk.path().join("filler");
    {
        use std::io::Write as _;
        let mut file = std::fs::File::create(&filler).expect("filler");
        let chunk = vec![0u8; 16 * 1024];
        while file.write_all(&chunk).is_ok() {}
        let _ = file.sync_all();
    }
    let second = turn_the_store_cannot_take(&mut handle, &thread_id, &database).await;
    shutdown(handle).await;

    std::fs::remove_file(&filler).expect("free the disk");
    restart_agrees(&home, &thread_id, second.as_deref()).await;
}

/// A store that became read-only, on a resumed thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_store_fails_the_turn_of_a_resumed_thread() {
    let Some(disk) = Tmpfs::mount(
        "16m",
        "a_read_only_store_fails_the_turn_of_a_resumed_thread",
    ) else {
        return;
    };
    let home = disk.path().join("home");
    let database = home.join(SqliteThreadStore::FILE_NAME);
    // On a runtime of its own, dropped at the end, so that no task of the server (an idle
    // unload countdown) keeps the database open.
    let first_home = home.clone();
    let thread_id = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async {
            let mut handle = start(options(&first_home)).await;
            let thread_id = thread_with_a_completed_turn(&mut handle).await;
            shutdown(handle).await;
            thread_id
        })
    })
    .join()
    .expect("first run");

    // Remounted while no file is open (a mounted filesystem with a file open for writing
    // cannot become read-only): the store became read-only between two runs.
    disk.remount("ro");
    let mut handle = start(options(&home)).await;
    let second = match try_call::<ThreadResume>(&handle, json!({"threadId": thread_id})).await {
        // Where SQLite cannot even open the file read-only, the resume itself is refused.
        Err(error) => {
            assert_eq!(error.code, error_codes::INTERNAL_ERROR, "{error:?}");
            assert!(
                error.message.contains(&database.display().to_string()),
                "{}",
                error.message
            );
            println!("thread/resume refused: {}", error.message);
            None
        }
        Ok(_) => turn_the_store_cannot_take(&mut handle, &thread_id, &database).await,
    };
    shutdown(handle).await;

    disk.remount("rw");
    restart_agrees(&home, &thread_id, second.as_deref()).await;
}

/// A running turn is in the store as it happens, but a fork takes only turns that ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_during_a_turn_copies_only_ended_turns() {
    let home = tempfile::tempdir().expect("temp home");
    let mut handle = start(options(home.path())).await;
    let thread_id = thread_with_a_completed_turn(&mut handle).await;
    let params =
        json!({"threadId": thread_id, "input": [{"type": "text", "text": "/sleep 60000"}]});
    try_call::<TurnStart>(&handle, params)
        .await
        .expect("turn/start");
    let fork = try_call::<tandem_protocol::client_methods::ThreadFork>(
        &handle,
        json!({"threadId": thread_id}),
    )
    .await
    .expect("thread/fork");
    let turns = fork["thread"]["turns"].as_array().expect("turns");
    assert_eq!(turns.len(), 1, "{turns:?}");
    assert_eq!(turns[0]["status"], "completed");
    shutdown(handle).await;
}

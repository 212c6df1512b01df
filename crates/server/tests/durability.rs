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
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tandem_host::in_process::{self, InProcessServerEvent, InProcessStartArgs};
use tandem_host::{InProcessClientHandle, MessageProcessor, RequestResult};
use tandem_protocol::client_methods::{ThreadResume, ThreadStart, TurnStart};
use tandem_protocol::{
    ClientRequest, RequestId, RequestMethod, ServerNotification, ThreadItem, Turn, TurnStatus,
    error_codes,
};
use tandem_server::store::{SqliteThreadStore, ThreadStore, close_unfinished_item};
use tandem_server::{ServerConfig, ServerOptions, TandemServer};
use tandem_test_support::initialize_params;
use tokio::time::timeout;

/// Upper bound for anything that should happen promptly.
const PROMPT: Duration = Duration::from_secs(20);

mod failing_store;

use failing_store::{FAKE_PATH, FailingStore};

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
    // thread/start, and per turn at least its start and its end (which may carry its last
    // item: issue 31).
    assert!(total > 2 * TURNS.len(), "{total} writes");
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
                    // The failure itself was stored (the one refused write was an earlier
                    // one, or the first attempt at the end)...
                    assert_eq!(stored.status, TurnStatus::Failed, "write {fail_at}");
                    // ...and `turn/completed` carried what the store holds, no more: an item
                    // whose write was refused is not in it (started items closed, as recovery
                    // closes them).
                    let mut held = stored.items.clone();
                    for item in &mut held {
                        close_unfinished_item(item);
                    }
                    assert_eq!(held, end.turn.items, "write {fail_at}");
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

/// The turn `turn_id` as `store` holds it.
async fn stored_turn(store: &FailingStore, thread_id: &str, turn_id: &str) -> Turn {
    let (_, turns) = store
        .inner
        .get_thread_with_turns(thread_id)
        .await
        .unwrap()
        .expect("thread stored");
    turns
        .into_iter()
        .find(|turn| turn.id == turn_id)
        .expect("turn stored")
}

/// A host over `store`, a thread, and a turn on it whose writes the store refuses from the
/// middle on: the turn waits on a question, the disk fills (`store.full`), the answer's
/// message is then refused. Returns the host, its home, the thread, the turn and the turn's
/// notifications up to its `turn/completed`; the disk is left full.
async fn turn_cut_by_a_full_disk(
    store: &Arc<FailingStore>,
) -> (
    InProcessClientHandle,
    tempfile::TempDir,
    String,
    String,
    Vec<ServerNotification>,
) {
    let home = tempfile::tempdir().expect("temp home");
    let options = options(home.path()).with_store(Arc::clone(store) as Arc<dyn ThreadStore>);
    let mut handle = start(options).await;
    let thread = try_call::<ThreadStart>(&handle, json!({"approvalPolicy": "never"}))
        .await
        .expect("thread/start");
    let thread_id = thread["thread"]["id"].as_str().unwrap().to_owned();
    let input = "/ask colour?\nafter";
    let params = json!({"threadId": thread_id, "input": [{"type": "text", "text": input}]});
    let reply = try_call::<TurnStart>(&handle, params)
        .await
        .expect("turn/start");
    let turn_id = reply["turn"]["id"].as_str().unwrap().to_owned();
    let question = loop {
        let event = within("the question", handle.next_event())
            .await
            .expect("event stream open");
        if let InProcessServerEvent::ServerRequest(request) = event {
            break request.id().clone();
        }
    };
    store.full.store(true, Ordering::SeqCst);
    handle
        .respond_to_server_request(question, json!({"answers": {"q": {"answers": ["blue"]}}}))
        .expect("answer sent");
    let notes = notes_until_turn_completed(&mut handle, &turn_id).await;
    let Some(ServerNotification::TurnCompleted(end)) = notes.last() else {
        unreachable!()
    };
    assert_eq!(end.turn.status, TurnStatus::Failed, "{notes:?}");
    (handle, home, thread_id, turn_id, notes)
}

/// A disk that stays full past a turn's end (issue 27): the turn stops at its first refused
/// write and the client is told `failed`, with a `turn/completed` that carries only what the
/// store took; the store, which refused that end too, does not keep saying `inProgress` while
/// the server lives: once the disk is freed the end is written in the background, and the
/// thread's next turn is stored after it. Before, the turn stayed `inProgress` in the store
/// until the server stopped, and `turn/completed` carried the refused agent message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_end_refused_by_a_full_disk_is_stored_once_it_is_freed() {
    let store = Arc::new(FailingStore::new(usize::MAX));
    let (mut handle, _home, thread_id, turn_id, notes) = turn_cut_by_a_full_disk(&store).await;
    let Some(ServerNotification::TurnCompleted(end)) = notes.last() else {
        unreachable!()
    };
    // The message whose write was refused was shown started, never completed, and is not in
    // `turn/completed`: only the stored user message is.
    assert!(
        notes.iter().any(|note| matches!(note,
            ServerNotification::ItemStarted(started)
                if matches!(started.item, ThreadItem::AgentMessage { .. }))),
        "{notes:?}"
    );
    assert!(
        end.turn
            .items
            .iter()
            .all(|item| matches!(item, ThreadItem::UserMessage { .. })),
        "{:?}",
        end.turn.items
    );
    let stored = stored_turn(&store, &thread_id, &turn_id).await;
    assert_eq!(
        stored.status,
        TurnStatus::InProgress,
        "the disk is still full"
    );
    assert_eq!(stored.items, end.turn.items);

    store.full.store(false, Ordering::SeqCst);
    within("the owed end stored", async {
        while stored_turn(&store, &thread_id, &turn_id).await.status != TurnStatus::Failed {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let stored = stored_turn(&store, &thread_id, &turn_id).await;
    assert_eq!(stored.error, end.turn.error);
    assert_eq!(stored.completed_at, end.turn.completed_at);

    // And the thread works again.
    let params = json!({"threadId": thread_id, "input": [{"type": "text", "text": "again"}]});
    let reply = try_call::<TurnStart>(&handle, params)
        .await
        .expect("turn/start");
    let next = reply["turn"]["id"].as_str().unwrap().to_owned();
    let notes = notes_until_turn_completed(&mut handle, &next).await;
    assert!(matches!(notes.last(),
        Some(ServerNotification::TurnCompleted(done)) if done.turn.status == TurnStatus::Completed));
    shutdown(handle).await;
}

/// The same full disk, then the thread's next `turn/start`: while the disk is still full it
/// is refused rather than stored behind a turn the store still calls running; once freed, the
/// owed end is stored before the new turn (so the store never holds two turns in progress).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_turn_is_stored_only_after_the_owed_end() {
    let store = Arc::new(FailingStore::new(usize::MAX));
    let (mut handle, _home, thread_id, turn_id, _) = turn_cut_by_a_full_disk(&store).await;
    let params = json!({"threadId": thread_id, "input": [{"type": "text", "text": "again"}]});
    let refused = try_call::<TurnStart>(&handle, params.clone())
        .await
        .expect_err("refused while the disk is full");
    assert_eq!(refused.code, error_codes::INTERNAL_ERROR, "{refused:?}");
    let (_, turns) = store
        .inner
        .get_thread_with_turns(&thread_id)
        .await
        .unwrap()
        .expect("stored");
    assert_eq!(turns.len(), 1, "{turns:?}");
    store.full.store(false, Ordering::SeqCst);
    let reply = try_call::<TurnStart>(&handle, params)
        .await
        .expect("turn/start");
    let next = reply["turn"]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        stored_turn(&store, &thread_id, &turn_id).await.status,
        TurnStatus::Failed
    );
    notes_until_turn_completed(&mut handle, &next).await;
    shutdown(handle).await;
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

//! The writer lease (issue 20) at the store level: two stores with different owners on one
//! database stand for two servers. Run against every store that keeps leases.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Map;
use tandem_protocol::{
    ApprovalPolicy, SessionSource, ThreadAttachment, ThreadItem, ThreadStatus, Turn, TurnItemsView,
    TurnStatus, UserInput,
};

use super::*;

/// Opens one more store on the pair's database with the given settings.
type Opener = Box<
    dyn Fn(LeaseSettings) -> Pin<Box<dyn Future<Output = Arc<dyn ThreadStore>> + Send>>
        + Send
        + Sync,
>;

/// Two servers' stores on one database, and a way to make every lease in it run out on the
/// database's clock (what a paused owner looks like to the others).
struct Pair {
    first: Arc<dyn ThreadStore>,
    second: Arc<dyn ThreadStore>,
    expire_all: Box<dyn Fn() + Send + Sync>,
    /// Opens another server's store, sharing the pair's home (and so its owners' lock files).
    open: Opener,
    /// Where the pair's owners keep their lock files.
    owners: PathBuf,
    _home: tempfile::TempDir,
}

async fn postgres_pair(ttl: Duration) -> Option<Pair> {
    let cluster = tandem_test_support::postgres::PostgresCluster::shared()?;
    let (database, url) = cluster.create_named_database();
    // The servers share a home, as two servers on one machine do, for their lock files.
    let home = tempfile::tempdir().expect("temp dir");
    let open: Opener = {
        let url = url.clone();
        Box::new(move |settings| {
            let url = url.clone();
            Box::pin(async move {
                Arc::new(
                    PostgresThreadStore::connect(&url, settings)
                        .await
                        .expect("connect"),
                ) as Arc<dyn ThreadStore>
            })
        })
    };
    let settings = |ttl| LeaseSettings::for_this_process(ttl).with_home(home.path());
    let first = open(settings(ttl)).await;
    let second = open(settings(ttl)).await;
    Some(Pair {
        first,
        second,
        expire_all: Box::new(move || {
            cluster
                .sql_in(
                    &database,
                    "UPDATE thread_leases SET expires_at = now() - interval '1 second'",
                )
                .expect("expire the leases");
        }),
        open,
        owners: home.path().join(OWNERS_DIR),
        _home: home,
    })
}

async fn sqlite_pair(ttl: Duration) -> Option<Pair> {
    let home = tempfile::tempdir().expect("temp dir");
    let open: Opener = {
        let home = home.path().to_owned();
        Box::new(move |settings| {
            let home = home.clone();
            Box::pin(async move {
                Arc::new(
                    SqliteThreadStore::open_with_leases(home, settings)
                        .await
                        .expect("open"),
                ) as Arc<dyn ThreadStore>
            })
        })
    };
    let first = open(LeaseSettings::for_this_process(ttl)).await;
    let second = open(LeaseSettings::for_this_process(ttl)).await;
    let path = home.path().join(SqliteThreadStore::FILE_NAME);
    Some(Pair {
        first,
        second,
        expire_all: Box::new(move || {
            let connection = rusqlite::Connection::open(&path).expect("open");
            connection
                .busy_timeout(Duration::from_secs(5))
                .expect("busy timeout");
            connection
                .execute("UPDATE thread_leases SET expires_at = 0", [])
                .expect("expire the leases");
        }),
        open,
        owners: home.path().join(OWNERS_DIR),
        _home: home,
    })
}

macro_rules! lease_suite {
    ($($case:ident),* $(,)?) => {
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    if let Some(pair) = super::postgres_pair(super::LONG).await {
                        super::$case(pair).await;
                    }
                }
            )*
        }
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    if let Some(pair) = super::sqlite_pair(super::LONG).await {
                        super::$case(pair).await;
                    }
                }
            )*
        }
    };
}

/// A TTL no test waits out: expiry is forced through the database.
const LONG: Duration = Duration::from_secs(60);

lease_suite!(
    a_leased_thread_refuses_the_other_writer_naming_the_owner,
    a_released_lease_is_taken_at_once_with_a_higher_epoch,
    a_write_after_a_takeover_is_refused_and_leaves_nothing,
    renewal_keeps_the_lease_and_reports_a_takeover_and_a_handoff_request,
    taking_over_closes_the_turn_the_previous_writer_left_running,
    a_dead_owners_lease_is_free_for_every_write_at_once,
    opening_the_store_releases_the_leases_of_dead_owners_and_removes_their_files,
);

fn record(id: &str) -> ThreadRecord {
    ThreadRecord {
        id: id.to_owned(),
        name: None,
        preview: Default::default(),
        ephemeral: false,
        created_at: 1_700_000_000,
        updated_at: 1_700_000_000,
        status: ThreadStatus::Idle,
        cwd: "/work".to_owned(),
        source: SessionSource::AppServer,
        forked_from_id: None,
        model: None,
        model_provider: "mock".to_owned(),
        cli_version: "0.1.0".to_owned(),
        approval_policy: ApprovalPolicy::Never,
        dynamic_tools: Vec::new(),
        config: Map::new(),
        archived_at: None,
    }
}

fn started_turn(id: &str) -> Turn {
    Turn {
        id: id.to_owned(),
        items: vec![ThreadItem::UserMessage {
            id: format!("{id}-user"),
            content: vec![UserInput::text("hello")],
            client_id: None,
        }],
        items_view: TurnItemsView::Full,
        status: TurnStatus::InProgress,
        error: None,
        started_at: Some(1_700_000_001),
        completed_at: None,
        duration_ms: None,
    }
}

fn renamed(name: &str) -> ThreadUpdate {
    ThreadUpdate {
        name: Some(Some(name.to_owned())),
        ..ThreadUpdate::default()
    }
}

fn owner_of(store: &dyn ThreadStore) -> String {
    store.lease_settings().expect("keeps leases").owner.clone()
}

async fn a_leased_thread_refuses_the_other_writer_naming_the_owner(pair: Pair) {
    let id = new_id();
    pair.first
        .create_thread(&record(&id), &[])
        .await
        .expect("create");
    pair.first.acquire_lease(&id).await.expect("first lease");
    match pair.second.acquire_lease(&id).await {
        Err(StoreError::LeaseHeld {
            thread_id,
            owner,
            expires_at_ms,
        }) => {
            assert_eq!(thread_id, id);
            assert_eq!(owner, owner_of(&*pair.first));
            assert!(expires_at_ms > 1_700_000_000_000, "{expires_at_ms}");
        }
        other => panic!("expected LeaseHeld, got {other:?}"),
    }
    let refused = pair.second.update_thread(&id, &renamed("theirs")).await;
    assert!(
        matches!(refused, Err(StoreError::LeaseHeld { .. })),
        "{refused:?}"
    );
    assert_eq!(
        refused.unwrap_err().to_string(),
        format!("thread {id} already has an active writer")
    );
    pair.first
        .update_thread(&id, &renamed("mine"))
        .await
        .expect("the owner writes");
    // Reads work from every server.
    let read = pair
        .second
        .get_thread(&id)
        .await
        .expect("read")
        .expect("found");
    assert_eq!(read.name.as_deref(), Some("mine"));
}

async fn a_released_lease_is_taken_at_once_with_a_higher_epoch(pair: Pair) {
    let id = new_id();
    pair.first
        .create_thread(&record(&id), &[])
        .await
        .expect("create");
    pair.first.acquire_lease(&id).await.expect("first lease");
    pair.first.release_lease(&id).await.expect("release");
    // No waiting for the TTL.
    pair.second.acquire_lease(&id).await.expect("second lease");
    pair.second
        .update_thread(&id, &renamed("second"))
        .await
        .expect("the new owner writes");
    let refused = pair.first.update_thread(&id, &renamed("first")).await;
    assert!(
        matches!(refused, Err(StoreError::LeaseHeld { .. })),
        "{refused:?}"
    );
    // And back: each grant's epoch is above the last, so the first server's old epoch can
    // never pass the fence again.
    pair.second.release_lease(&id).await.expect("release");
    pair.first.acquire_lease(&id).await.expect("first again");
    pair.first
        .update_thread(&id, &renamed("first again"))
        .await
        .expect("write");
}

async fn a_write_after_a_takeover_is_refused_and_leaves_nothing(pair: Pair) {
    let id = new_id();
    pair.first
        .create_thread(&record(&id), &[])
        .await
        .expect("create");
    pair.first.acquire_lease(&id).await.expect("first lease");
    let turn_id = new_id();
    pair.first
        .begin_turn(
            &id,
            &started_turn(&turn_id),
            ItemTimes::default(),
            &ThreadUpdate::default(),
        )
        .await
        .expect("begin turn");
    // The first server is "paused": its lease runs out on the database's clock while its own
    // clock (a 60 s TTL) still says it holds it.
    (pair.expire_all)();
    pair.second.acquire_lease(&id).await.expect("takeover");
    pair.second
        .update_thread(&id, &renamed("second"))
        .await
        .expect("the new owner writes");
    // The paused server wakes up and goes on with its turn: refused by the database.
    let item = ThreadItem::AgentMessage {
        id: "late".to_owned(),
        text: "written after losing the lease".to_owned().into(),
    };
    let refused = pair
        .first
        .put_item(&id, &turn_id, 1, &item, ItemTimes::default())
        .await;
    assert!(
        matches!(refused, Err(StoreError::Fenced(ref thread)) if *thread == id),
        "{refused:?}"
    );
    let refused = pair.first.update_thread(&id, &renamed("first")).await;
    assert!(matches!(refused, Err(StoreError::Fenced(_))), "{refused:?}");
    let (record, turns) = pair
        .second
        .get_thread_with_turns(&id)
        .await
        .expect("read")
        .expect("found");
    assert_eq!(record.name.as_deref(), Some("second"));
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0].items.len(), 1, "the late item is not stored");
    // The renewal round reports the loss once.
    let renewal = pair.first.renew_leases().await.expect("renew");
    assert_eq!(renewal.lost, vec![id.clone()]);
}

async fn renewal_keeps_the_lease_and_reports_a_takeover_and_a_handoff_request(pair: Pair) {
    let id = new_id();
    pair.first
        .create_thread(&record(&id), &[])
        .await
        .expect("create");
    pair.first.acquire_lease(&id).await.expect("first lease");
    let renewal = pair.first.renew_leases().await.expect("renew");
    assert_eq!(renewal, LeaseRenewal::default());
    // A refused acquire asks the owner to hand the thread over.
    assert!(pair.second.acquire_lease(&id).await.is_err());
    let renewal = pair.first.renew_leases().await.expect("renew");
    assert_eq!(renewal.handoff_requested, vec![id.clone()]);
    assert!(renewal.lost.is_empty());
    (pair.expire_all)();
    pair.second.acquire_lease(&id).await.expect("takeover");
    let renewal = pair.first.renew_leases().await.expect("renew");
    assert_eq!(renewal.lost, vec![id.clone()]);
    assert!(
        pair.first
            .renew_leases()
            .await
            .expect("renew")
            .lost
            .is_empty()
    );
}

async fn taking_over_closes_the_turn_the_previous_writer_left_running(pair: Pair) {
    let id = new_id();
    pair.first
        .create_thread(&record(&id), &[])
        .await
        .expect("create");
    pair.first.acquire_lease(&id).await.expect("first lease");
    let turn_id = new_id();
    pair.first
        .begin_turn(
            &id,
            &started_turn(&turn_id),
            ItemTimes::default(),
            &ThreadUpdate::default(),
        )
        .await
        .expect("begin turn");
    (pair.expire_all)();
    pair.second.acquire_lease(&id).await.expect("takeover");
    let (_, turns) = pair
        .second
        .get_thread_with_turns(&id)
        .await
        .expect("read")
        .expect("found");
    assert_eq!(turns[0].status, TurnStatus::Interrupted);
}

/// A server that held the leases of `threads` fresh threads, each with a turn left running,
/// and was killed: its lock file is left behind, unlocked. Its name carries this process's pid
/// and is listed as a live owner of this process, so a pid check would call it alive: only
/// the lock file can tell that it is gone. Returns the owner and the threads.
async fn crashed_owner(pair: &Pair, threads: usize) -> (String, Vec<String>) {
    let suffix: u32 = rand::random();
    let owner = format!(
        "{}/{}/{suffix:08x}",
        liveness::this_host(),
        std::process::id()
    );
    let settings = LeaseSettings {
        notify_handoffs: true,
        owner: owner.clone(),
        ttl: LONG,
        owner_dir: Some(pair.owners.clone()),
    };
    let store = (pair.open)(settings).await;
    let mut ids = Vec::new();
    for _ in 0..threads {
        let id = new_id();
        store
            .create_thread(&record(&id), &[])
            .await
            .expect("create");
        store.acquire_lease(&id).await.expect("lease");
        store
            .begin_turn(
                &id,
                &started_turn(&new_id()),
                ItemTimes::default(),
                &ThreadUpdate::default(),
            )
            .await
            .expect("begin turn");
        ids.push(id);
    }
    let file = liveness::lock_file_of(&pair.owners, &owner).expect("a lock file name");
    assert!(file.exists(), "a live owner has its lock file");
    drop(store);
    // The store goes once its last write task let go of it; its lock file goes with it.
    let gone = std::time::Instant::now() + Duration::from_secs(10);
    while file.exists() {
        assert!(std::time::Instant::now() < gone, "the lock file stays");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // What kill -9 leaves: the file, unlocked, and every lease live in the database.
    std::fs::write(&file, &owner).expect("leave the lock file behind");
    liveness::live_owners().insert(owner.clone());
    (owner, ids)
}

fn attachment() -> ThreadAttachment {
    ThreadAttachment {
        id: new_id(),
        attachment_type: "link".to_owned(),
        identity_key: "k".to_owned(),
        payload: serde_json::json!({"url": "https://example.com"}),
        created_at: 1_700_000_002,
    }
}

async fn turn_statuses(store: &dyn ThreadStore, id: &str) -> Vec<TurnStatus> {
    let (_, turns) = store
        .get_thread_with_turns(id)
        .await
        .expect("read")
        .expect("found");
    turns.iter().map(|turn| turn.status).collect()
}

/// Every kind of write on a thread the server does not lease goes through at once when the
/// lease's owner is gone, without waiting for the lease to run out (issue 27, point 3).
async fn a_dead_owners_lease_is_free_for_every_write_at_once(pair: Pair) {
    let (owner, ids) = crashed_owner(&pair, 6).await;
    let store = &pair.second;
    let renamed_ok = store
        .update_thread(&ids[0], &renamed("after the crash"))
        .await;
    assert!(renamed_ok.is_ok(), "rename: {renamed_ok:?}");
    let added = store.add_attachment(&ids[1], &attachment()).await;
    assert!(added.is_ok(), "attachment: {added:?}");
    let removed = store.remove_attachment(&ids[2], "link", "k").await;
    assert!(removed.is_ok(), "attachment removal: {removed:?}");
    let (_, turns) = store
        .get_thread_with_turns(&ids[3])
        .await
        .expect("read")
        .expect("found");
    let cut = store
        .truncate_turns(&ids[3], &turns[0].id, &ThreadUpdate::default())
        .await;
    assert!(cut.is_ok(), "revert: {cut:?}");
    let deleted = store.delete_thread(&ids[4]).await;
    assert!(matches!(deleted, Ok(true)), "delete: {deleted:?}");
    let taken = store.acquire_lease(&ids[5]).await;
    assert!(taken.is_ok(), "resume: {taken:?}");
    // The turns the dead server left running were closed when its leases were released.
    for id in [&ids[0], &ids[1], &ids[2], &ids[5]] {
        assert_eq!(
            turn_statuses(&**store, id).await,
            [TurnStatus::Interrupted],
            "{id}"
        );
    }
    // A live owner with its lock file still refuses the other writer.
    let live = new_id();
    pair.first
        .create_thread(&record(&live), &[])
        .await
        .expect("create");
    pair.first.acquire_lease(&live).await.expect("lease");
    let refused = store.update_thread(&live, &renamed("theirs")).await;
    assert!(
        matches!(refused, Err(StoreError::LeaseHeld { .. })),
        "{refused:?}"
    );
    liveness::live_owners().remove(&owner);
}

/// A store opening in a home where a dead server left its lock file releases that server's
/// leases and removes the file.
async fn opening_the_store_releases_the_leases_of_dead_owners_and_removes_their_files(pair: Pair) {
    let (owner, ids) = crashed_owner(&pair, 2).await;
    let file = liveness::lock_file_of(&pair.owners, &owner).expect("name");
    let third = (pair.open)(
        LeaseSettings::for_this_process(LONG).with_home(pair.owners.parent().expect("the home")),
    )
    .await;
    assert!(!file.exists(), "the dead owner's lock file is removed");
    // Without its file the owner's pid (this process's, listed live) would keep it alive:
    // the writes go through because its leases were released.
    for id in &ids {
        assert_eq!(turn_statuses(&*third, id).await, [TurnStatus::Interrupted]);
        pair.second
            .update_thread(id, &renamed("released"))
            .await
            .expect("the lease was released");
    }
    assert_only_live_files(&pair.owners, 3);
    liveness::live_owners().remove(&owner);
}

/// `owners` holds exactly `count` lock files.
fn assert_only_live_files(owners: &Path, count: usize) {
    let files: Vec<_> = std::fs::read_dir(owners)
        .expect("owners dir")
        .flatten()
        .map(|entry| entry.file_name())
        .collect();
    assert_eq!(files.len(), count, "{files:?}");
}

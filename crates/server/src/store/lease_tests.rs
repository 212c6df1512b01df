//! The writer lease (issue 20) at the store level: two stores with different owners on one
//! database stand for two servers. Run against every store that keeps leases.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Map;
use tandem_protocol::{
    ApprovalPolicy, SessionSource, ThreadItem, ThreadStatus, Turn, TurnItemsView, TurnStatus,
    UserInput,
};

use super::*;

/// Two servers' stores on one database, and a way to make every lease in it run out on the
/// database's clock (what a paused owner looks like to the others).
struct Pair {
    first: Arc<dyn ThreadStore>,
    second: Arc<dyn ThreadStore>,
    expire_all: Box<dyn Fn() + Send + Sync>,
    _home: Option<tempfile::TempDir>,
}

async fn postgres_pair(ttl: Duration) -> Option<Pair> {
    let cluster = tandem_test_support::postgres::PostgresCluster::shared()?;
    let (database, url) = cluster.create_named_database();
    let open = |ttl| PostgresThreadStore::connect(&url, LeaseSettings::for_this_process(ttl));
    let first = open(ttl).await.expect("connect");
    let second = open(ttl).await.expect("connect");
    Some(Pair {
        first: Arc::new(first),
        second: Arc::new(second),
        expire_all: Box::new(move || {
            cluster
                .sql_in(
                    &database,
                    "UPDATE thread_leases SET expires_at = now() - interval '1 second'",
                )
                .expect("expire the leases");
        }),
        _home: None,
    })
}

async fn sqlite_pair(ttl: Duration) -> Option<Pair> {
    let home = tempfile::tempdir().expect("temp dir");
    let open = |ttl| {
        SqliteThreadStore::open_with_leases(home.path(), LeaseSettings::for_this_process(ttl))
    };
    let first = open(ttl).await.expect("open");
    let second = open(ttl).await.expect("open");
    let path = home.path().join(SqliteThreadStore::FILE_NAME);
    Some(Pair {
        first: Arc::new(first),
        second: Arc::new(second),
        expire_all: Box::new(move || {
            let connection = rusqlite::Connection::open(&path).expect("open");
            connection
                .busy_timeout(Duration::from_secs(5))
                .expect("busy timeout");
            connection
                .execute("UPDATE thread_leases SET expires_at = 0", [])
                .expect("expire the leases");
        }),
        _home: Some(home),
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
        .begin_turn(&id, &started_turn(&turn_id), &ThreadUpdate::default())
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
    let refused = pair.first.put_item(&id, &turn_id, 1, &item).await;
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
        .begin_turn(&id, &started_turn(&turn_id), &ThreadUpdate::default())
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

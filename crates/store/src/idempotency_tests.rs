//! Idempotency keys (SQLite schema version 3, PostgreSQL migration 3), run against every
//! store (PostgreSQL where one is installed): claim and replay, release,
//! the age and per-scope bounds, deletion with the thread, plus their durability across a
//! SQLite reopen and the migration from version 2 (through 3 to 4).

use std::sync::Arc;

use serde_json::{Map, json};
use tandem_protocol::{ApprovalPolicy, SessionSource, ThreadStatus};

use super::*;

async fn stores() -> (Vec<Arc<dyn ThreadStore>>, tempfile::TempDir) {
    let home = tempfile::tempdir().expect("temp dir");
    let sqlite = SqliteThreadStore::open(home.path()).await.expect("open");
    let mut stores: Vec<Arc<dyn ThreadStore>> =
        vec![Arc::new(InMemoryThreadStore::new()), Arc::new(sqlite)];
    if let Some(postgres) = super::tests::postgres_store().await {
        stores.push(Arc::new(postgres));
    }
    (stores, home)
}

fn key(scope: &str, key: &str, created_at: i64) -> IdempotencyRecord {
    IdempotencyRecord {
        scope: scope.to_owned(),
        key: key.to_owned(),
        method: "turn/start".to_owned(),
        fingerprint: format!("fp-{key}"),
        result: json!({"turn": {"id": format!("turn-of-{key}")}}),
        created_at,
    }
}

fn thread(id: &str) -> ThreadRecord {
    ThreadRecord {
        id: id.to_owned(),
        name: None,
        preview: Default::default(),
        ephemeral: false,
        created_at: 1,
        updated_at: 1,
        status: ThreadStatus::Idle,
        cwd: "/work".to_owned(),
        source: SessionSource::AppServer,
        forked_from_id: None,
        model: None,
        model_provider: "tandem".to_owned(),
        cli_version: "0.0.0".to_owned(),
        approval_policy: ApprovalPolicy::Never,
        dynamic_tools: Vec::new(),
        archived_at: None,
        config: Map::new(),
    }
}

const NOW: i64 = 1_800_000_000;

#[tokio::test]
async fn a_claimed_key_answers_with_its_first_record() {
    let (stores, _home) = stores().await;
    for store in stores {
        let first = key("t", "k", NOW);
        assert_eq!(
            store.claim_idempotency_key(&first).await.expect("claim"),
            None
        );
        // A second claim, whatever it carries, writes nothing and gets the first record.
        let mut other = key("t", "k", NOW + 5);
        other.fingerprint = "different".to_owned();
        other.result = json!(null);
        assert_eq!(
            store.claim_idempotency_key(&other).await.expect("claim"),
            Some(first.clone())
        );
        assert_eq!(
            store
                .idempotency_key("t", "k", NOW + 10)
                .await
                .expect("read"),
            Some(first.clone())
        );
        // Keys are per scope.
        assert_eq!(
            store
                .claim_idempotency_key(&key("u", "k", NOW))
                .await
                .expect("claim"),
            None
        );
        assert_eq!(
            store.idempotency_key("t", "nope", NOW).await.expect("read"),
            None
        );
    }
}

#[tokio::test]
async fn a_released_key_can_be_claimed_again() {
    let (stores, _home) = stores().await;
    for store in stores {
        store
            .claim_idempotency_key(&key("t", "k", NOW))
            .await
            .expect("claim");
        store
            .release_idempotency_key("t", "k")
            .await
            .expect("release");
        store
            .release_idempotency_key("t", "unknown")
            .await
            .expect("no-op");
        let again = key("t", "k", NOW + 1);
        assert_eq!(
            store.claim_idempotency_key(&again).await.expect("claim"),
            None
        );
        assert_eq!(
            store
                .idempotency_key("t", "k", NOW + 1)
                .await
                .expect("read"),
            Some(again)
        );
    }
}

#[tokio::test]
async fn keys_older_than_the_window_are_forgotten() {
    let (stores, _home) = stores().await;
    for store in stores {
        let old = key("t", "k", NOW);
        store.claim_idempotency_key(&old).await.expect("claim");
        let later = NOW + KEY_MAX_AGE_SECS;
        assert_eq!(
            store.idempotency_key("t", "k", later).await.expect("read"),
            Some(old.clone()),
            "still inside the window"
        );
        assert_eq!(
            store
                .idempotency_key("t", "k", later + 1)
                .await
                .expect("read"),
            None
        );
        // Claiming past the window prunes the old key (of any scope) and takes the key anew.
        let fresh = key("t", "k", later + 1);
        assert_eq!(
            store.claim_idempotency_key(&fresh).await.expect("claim"),
            None
        );
        assert_eq!(
            store
                .idempotency_key("t", "k", later + 1)
                .await
                .expect("read"),
            Some(fresh)
        );
    }
}

#[tokio::test]
async fn a_scope_keeps_its_newest_keys_only() {
    let (stores, _home) = stores().await;
    for store in stores {
        // Claimed concurrently: the SQLite store commits them in a few group commits.
        let claims = (0..=KEYS_PER_SCOPE as i64).map(|n| {
            let store = Arc::clone(&store);
            async move {
                store
                    .claim_idempotency_key(&key("t", &format!("k{n}"), NOW + n))
                    .await
                    .expect("claim")
            }
        });
        for claimed in futures::future::join_all(claims).await {
            assert_eq!(claimed, None);
        }
        let newest = NOW + KEYS_PER_SCOPE as i64;
        assert_eq!(
            store
                .idempotency_key("t", "k0", newest)
                .await
                .expect("read"),
            None,
            "the oldest key made room"
        );
        for n in [1, KEYS_PER_SCOPE as i64] {
            assert!(
                store
                    .idempotency_key("t", &format!("k{n}"), newest)
                    .await
                    .expect("read")
                    .is_some(),
                "key {n} is kept"
            );
        }
    }
}

#[tokio::test]
async fn deleting_a_thread_forgets_its_keys() {
    let (stores, _home) = stores().await;
    for store in stores {
        store
            .create_thread(&thread("t"), &[])
            .await
            .expect("create");
        store
            .claim_idempotency_key(&key("t", "k", NOW))
            .await
            .expect("claim");
        store
            .claim_idempotency_key(&key(SERVER_SCOPE, "s", NOW))
            .await
            .expect("claim");
        assert!(store.delete_thread("t").await.expect("delete"));
        assert_eq!(
            store.idempotency_key("t", "k", NOW).await.expect("read"),
            None
        );
        assert!(
            store
                .idempotency_key(SERVER_SCOPE, "s", NOW)
                .await
                .expect("read")
                .is_some(),
            "other scopes keep theirs"
        );
    }
}

#[tokio::test]
async fn sqlite_keys_survive_a_reopen() {
    let home = tempfile::tempdir().expect("temp dir");
    let first = key("t", "k", NOW);
    {
        let store = SqliteThreadStore::open(home.path()).await.expect("open");
        store.claim_idempotency_key(&first).await.expect("claim");
    }
    let reopened = SqliteThreadStore::open(home.path()).await.expect("reopen");
    assert_eq!(
        reopened
            .claim_idempotency_key(&key("t", "k", NOW + 1))
            .await
            .expect("claim"),
        Some(first)
    );
}

#[tokio::test]
async fn sqlite_migrates_a_version_two_database() {
    let home = tempfile::tempdir().expect("temp dir");
    let path = home.path().join(SqliteThreadStore::FILE_NAME);
    {
        let store = SqliteThreadStore::open(home.path()).await.expect("create");
        store
            .create_thread(&thread("old"), &[])
            .await
            .expect("thread");
    }
    {
        // Back to what a version-2 build left.
        let connection = rusqlite::Connection::open(&path).expect("raw open");
        connection
            .execute_batch(
                "ALTER TABLE items DROP COLUMN started_at_ms; \
                 ALTER TABLE items DROP COLUMN completed_at_ms; \
                 DROP TABLE file_checkpoints; DROP TABLE idempotency_keys; DROP TABLE thread_leases; \
                 PRAGMA user_version = 2;",
            )
            .expect("version 2");
    }
    let store = SqliteThreadStore::open(home.path()).await.expect("migrate");
    let version: i64 = rusqlite::Connection::open(&path)
        .expect("raw open")
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .expect("user_version");
    // 2 -> 3 (idempotency keys) -> 4 (writer leases) -> 5 (file checkpoints) -> 6 (item
    // times).
    assert_eq!(version, 6);
    assert!(store.get_thread("old").await.expect("read").is_some());
    assert_eq!(
        store
            .claim_idempotency_key(&key("old", "k", NOW))
            .await
            .expect("claim"),
        None
    );
}

//! Archiving, compaction summaries and history truncation (schema version 2), run against both
//! stores, plus the SQLite migration from version 1 and the durability of each across a
//! reopen.

use std::sync::Arc;

use serde_json::Map;
use tandem_protocol::{
    ApprovalPolicy, SessionSource, ThreadItem, ThreadStatus, Turn, TurnItemsView, TurnStatus,
    UserInput,
};

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

fn record(id: &str, created_at: i64) -> ThreadRecord {
    ThreadRecord {
        id: id.to_owned(),
        name: None,
        preview: Default::default(),
        ephemeral: false,
        created_at,
        updated_at: created_at,
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

fn turn(id: &str) -> Turn {
    Turn {
        id: id.to_owned(),
        items: vec![ThreadItem::UserMessage {
            id: format!("{id}-input"),
            content: vec![UserInput::text(id)],
            client_id: None,
        }],
        items_view: TurnItemsView::Full,
        status: TurnStatus::Completed,
        error: None,
        started_at: Some(1),
        completed_at: Some(2),
        duration_ms: Some(1000),
    }
}

fn ids(turns: &[Turn]) -> Vec<&str> {
    turns.iter().map(|turn| turn.id.as_str()).collect()
}

async fn listed(store: &dyn ThreadStore, archived: bool) -> Vec<String> {
    let query = ThreadListQuery {
        archived,
        direction: SortDirection::Asc,
        ..ThreadListQuery::default()
    };
    let page = store.list_threads(&query).await.expect("list");
    page.data.into_iter().map(|record| record.id).collect()
}

async fn turns_of(store: &dyn ThreadStore, thread_id: &str) -> Vec<Turn> {
    store
        .get_thread_with_turns(thread_id)
        .await
        .expect("read")
        .expect("thread")
        .1
}

#[tokio::test]
async fn archived_threads_are_listed_only_when_asked_for() {
    let (stores, _home) = stores().await;
    for store in stores {
        store.create_thread(&record("a", 1), &[]).await.expect("a");
        store.create_thread(&record("b", 2), &[]).await.expect("b");
        let archive = ThreadUpdate {
            archived_at: Some(Some(50)),
            ..ThreadUpdate::default()
        };
        let archived = store.update_thread("a", &archive).await.expect("archive");
        assert_eq!(archived.archived_at, Some(50));
        assert_eq!(listed(store.as_ref(), false).await, ["b"]);
        assert_eq!(listed(store.as_ref(), true).await, ["a"]);
        // Another update leaves the flag alone.
        let renamed = ThreadUpdate {
            name: Some(Some("renamed".into())),
            ..ThreadUpdate::default()
        };
        let record = store.update_thread("a", &renamed).await.expect("rename");
        assert_eq!(record.archived_at, Some(50));
        let unarchive = ThreadUpdate {
            archived_at: Some(None),
            ..ThreadUpdate::default()
        };
        store
            .update_thread("a", &unarchive)
            .await
            .expect("unarchive");
        assert_eq!(listed(store.as_ref(), false).await, ["a", "b"]);
        assert!(listed(store.as_ref(), true).await.is_empty());
    }
}

#[tokio::test]
async fn truncating_drops_the_turn_every_later_one_and_their_summaries() {
    let (stores, _home) = stores().await;
    for store in stores {
        let history = [turn("t1"), turn("t2"), turn("t3")];
        store
            .create_thread(&record("x", 1), &history)
            .await
            .expect("create");
        store
            .put_compaction("x", "t1", "up to t1")
            .await
            .expect("c1");
        store
            .put_compaction("x", "t2", "up to t2")
            .await
            .expect("c2");
        assert_eq!(
            store.latest_compaction("x").await.expect("latest"),
            Some(Compaction {
                turn_id: "t2".into(),
                summary: "up to t2".into()
            })
        );
        let update = ThreadUpdate {
            updated_at: Some(99),
            ..ThreadUpdate::default()
        };
        let record = store.truncate_turns("x", "t2", &update).await.expect("cut");
        assert_eq!(record.updated_at, 99);
        assert_eq!(ids(&turns_of(store.as_ref(), "x").await), ["t1"]);
        // The summary of the dropped turn went with it; the earlier one is the latest again.
        assert_eq!(
            store.latest_compaction("x").await.expect("latest"),
            Some(Compaction {
                turn_id: "t1".into(),
                summary: "up to t1".into()
            })
        );
        // A turn stored after the cut takes the next place.
        store
            .commit_turn("x", &turn("t4"), &ThreadUpdate::default())
            .await
            .expect("t4");
        assert_eq!(ids(&turns_of(store.as_ref(), "x").await), ["t1", "t4"]);
        let gone = store
            .truncate_turns("x", "t2", &ThreadUpdate::default())
            .await
            .expect_err("gone");
        assert!(matches!(gone, StoreError::TurnNotFound { .. }), "{gone}");
        assert_eq!(ids(&turns_of(store.as_ref(), "x").await), ["t1", "t4"]);
    }
}

#[tokio::test]
async fn the_latest_summary_is_the_last_by_turn_order_and_needs_a_stored_turn() {
    let (stores, _home) = stores().await;
    for store in stores {
        let history = [turn("t1"), turn("t2"), turn("t3")];
        store
            .create_thread(&record("x", 1), &history)
            .await
            .expect("create");
        assert_eq!(store.latest_compaction("x").await.expect("none"), None);
        store.put_compaction("x", "t3", "late").await.expect("t3");
        store.put_compaction("x", "t1", "early").await.expect("t1");
        store
            .put_compaction("x", "t3", "late, again")
            .await
            .expect("t3 again");
        assert_eq!(
            store.latest_compaction("x").await.expect("latest"),
            Some(Compaction {
                turn_id: "t3".into(),
                summary: "late, again".into()
            })
        );
        let unknown = store
            .put_compaction("x", "nope", "s")
            .await
            .expect_err("unknown turn");
        assert!(
            matches!(unknown, StoreError::TurnNotFound { .. }),
            "{unknown}"
        );
        let missing = store
            .latest_compaction("missing")
            .await
            .expect_err("no thread");
        assert!(
            matches!(missing, StoreError::ThreadNotFound(_)),
            "{missing}"
        );
        store.delete_thread("x").await.expect("delete");
    }
}

#[tokio::test]
async fn sqlite_keeps_archive_summary_and_cut_across_a_reopen() {
    let home = tempfile::tempdir().expect("temp dir");
    {
        let store = SqliteThreadStore::open(home.path()).await.expect("open");
        let history = [turn("t1"), turn("t2"), turn("t3")];
        store
            .create_thread(&record("x", 1), &history)
            .await
            .expect("create");
        store
            .put_compaction("x", "t2", "summary")
            .await
            .expect("summary");
        store
            .truncate_turns("x", "t3", &ThreadUpdate::default())
            .await
            .expect("cut");
        let archive = ThreadUpdate {
            archived_at: Some(Some(7)),
            ..ThreadUpdate::default()
        };
        store.update_thread("x", &archive).await.expect("archive");
    }
    let store = SqliteThreadStore::open(home.path()).await.expect("reopen");
    let (record, turns) = store
        .get_thread_with_turns("x")
        .await
        .expect("read")
        .expect("thread");
    assert_eq!(record.archived_at, Some(7));
    assert_eq!(ids(&turns), ["t1", "t2"]);
    assert_eq!(
        store.latest_compaction("x").await.expect("latest"),
        Some(Compaction {
            turn_id: "t2".into(),
            summary: "summary".into()
        })
    );
}

#[tokio::test]
async fn sqlite_migrates_a_version_one_database() {
    let home = tempfile::tempdir().expect("temp dir");
    let path = home.path().join(SqliteThreadStore::FILE_NAME);
    {
        let connection = rusqlite::Connection::open(&path).expect("raw open");
        connection
            .execute_batch(super::sqlite::SCHEMA_V1)
            .expect("version 1 schema");
        connection
            .pragma_update(None, "user_version", 1)
            .expect("version 1");
        connection
            .execute(
                "INSERT INTO threads (id, name, preview, ephemeral, created_at, updated_at, \
                 status, cwd, source, source_kind, forked_from_id, model, model_provider, \
                 cli_version, approval_policy, dynamic_tools, config) VALUES ('old', NULL, \
                 'hi', 0, 1, 1, '{\"type\":\"idle\"}', '/work', '\"appServer\"', 'appServer', \
                 NULL, NULL, 'tandem', '0.0.0', 'never', '[]', '{}')",
                [],
            )
            .expect("a version 1 thread");
    }
    let store = SqliteThreadStore::open(home.path()).await.expect("migrate");
    let version: i64 = rusqlite::Connection::open(&path)
        .expect("raw open")
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .expect("user_version");
    // Version 1 -> 2 (archiving, compaction) -> 3 (idempotency keys) -> 4 (writer leases) ->
    // 5 (file checkpoints) -> 6 (item times) in one go.
    assert_eq!(version, 6);
    let unfinished_index: i64 = rusqlite::Connection::open(&path)
        .expect("raw open")
        .query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = 'turns_unfinished'",
            [],
            |row| row.get(0),
        )
        .expect("schema");
    assert_eq!(unfinished_index, 1, "the recovery index is added on open");
    let old = store.get_thread("old").await.expect("read").expect("kept");
    assert_eq!(old.preview, "hi");
    assert_eq!(old.archived_at, None);
    assert_eq!(listed(&store, false).await, ["old"]);
    store
        .commit_turn("old", &turn("t1"), &ThreadUpdate::default())
        .await
        .expect("turn");
    store
        .put_compaction("old", "t1", "s")
        .await
        .expect("summary");
}

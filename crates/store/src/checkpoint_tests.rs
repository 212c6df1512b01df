//! File checkpoints (schema version 5, PostgreSQL migration 4), run against every store:
//! stored per turn, read newest first from a turn on, replaced in place, bounded per thread
//! (the oldest turns' contents dropped and marked), gone with their turns, and kept across a
//! SQLite reopen.

use std::sync::Arc;

use tandem_protocol::{ThreadItem, Turn, TurnItemsView, TurnStatus, UserInput};

use super::test_fixtures::record;
use super::*;

async fn stores() -> (Vec<Arc<dyn ThreadStore>>, tempfile::TempDir) {
    let home = tempfile::tempdir().expect("temp dir");
    let sqlite = SqliteThreadStore::open(home.path()).await.expect("open");
    let mut stores: Vec<Arc<dyn ThreadStore>> =
        vec![Arc::new(InMemoryThreadStore::new()), Arc::new(sqlite)];
    if let Some(postgres) = super::test_fixtures::postgres_store().await {
        stores.push(Arc::new(postgres));
    }
    (stores, home)
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

/// A checkpoint of one file whose earlier content is `before`.
fn checkpoint(path: &str, before: Option<&str>, after: &str) -> FileCheckpoint {
    FileCheckpoint {
        files: vec![CheckpointFile {
            path: path.to_owned(),
            before: before.map(str::to_owned),
            after_digest: Some(after.to_owned()),
        }],
        not_restorable: None,
    }
}

fn turn_ids(checkpoints: &[(String, FileCheckpoint)]) -> Vec<&str> {
    checkpoints.iter().map(|(id, _)| id.as_str()).collect()
}

const ROOMY: u64 = 1 << 20;

#[tokio::test]
async fn checkpoints_are_read_newest_first_from_a_turn_and_go_with_their_turns() {
    let (stores, _home) = stores().await;
    for store in stores {
        let history = [turn("t1"), turn("t2"), turn("t3"), turn("t4")];
        store
            .create_thread(&record("x", 1), &history)
            .await
            .expect("create");
        let first = checkpoint("/w/a", Some("a0"), "d1");
        store
            .put_file_checkpoint("x", "t1", &first, ROOMY)
            .await
            .expect("t1");
        store
            .put_file_checkpoint("x", "t3", &checkpoint("/w/b", None, "d3"), ROOMY)
            .await
            .expect("t3");
        // A later patch of the same turn replaces its checkpoint.
        let replaced = checkpoint("/w/b", None, "d3-again");
        store
            .put_file_checkpoint("x", "t3", &replaced, ROOMY)
            .await
            .expect("t3 again");
        let all = store.file_checkpoints("x", "t1").await.expect("from t1");
        assert_eq!(turn_ids(&all), ["t3", "t1"], "t2 and t4 changed no file");
        assert_eq!(all[0].1, replaced);
        assert_eq!(all[1].1, first);
        let later = store.file_checkpoints("x", "t2").await.expect("from t2");
        assert_eq!(turn_ids(&later), ["t3"]);

        let unknown = store
            .put_file_checkpoint("x", "nope", &first, ROOMY)
            .await
            .expect_err("unknown turn");
        assert!(
            matches!(unknown, StoreError::TurnNotFound { .. }),
            "{unknown}"
        );
        let unknown = store
            .file_checkpoints("x", "nope")
            .await
            .expect_err("unknown turn");
        assert!(
            matches!(unknown, StoreError::TurnNotFound { .. }),
            "{unknown}"
        );

        store
            .truncate_turns("x", "t2", &ThreadUpdate::default())
            .await
            .expect("cut");
        // A turn stored after the cut has no checkpoint of the dropped t3.
        store
            .commit_turn("x", &turn("t3"), &ThreadUpdate::default())
            .await
            .expect("t3 anew");
        let kept = store.file_checkpoints("x", "t1").await.expect("after cut");
        assert_eq!(turn_ids(&kept), ["t1"]);
        store.delete_thread("x").await.expect("delete");
    }
}

#[tokio::test]
async fn past_the_thread_bound_the_oldest_turns_lose_their_contents_and_say_so() {
    let (stores, _home) = stores().await;
    for store in stores {
        let history = [turn("t1"), turn("t2"), turn("t3")];
        store
            .create_thread(&record("x", 1), &history)
            .await
            .expect("create");
        let bound = 10;
        for (turn_id, content) in [("t1", "aaaa"), ("t2", "bbbb"), ("t3", "cccc")] {
            store
                .put_file_checkpoint(
                    "x",
                    turn_id,
                    &checkpoint(&format!("/w/{turn_id}"), Some(content), "d"),
                    bound,
                )
                .await
                .expect("put");
        }
        let all = store.file_checkpoints("x", "t1").await.expect("read");
        assert_eq!(turn_ids(&all), ["t3", "t2", "t1"]);
        // t3 and t2 fit in 10 bytes; t1 no longer does.
        assert_eq!(all[0].1.files[0].before.as_deref(), Some("cccc"));
        assert_eq!(all[1].1.files[0].before.as_deref(), Some("bbbb"));
        assert_eq!(all[0].1.not_restorable, None);
        let oldest = &all[2].1;
        assert_eq!(oldest.files[0].path, "/w/t1", "the path is kept");
        assert_eq!(oldest.files[0].before, None);
        assert_eq!(oldest.not_restorable, Some(evicted_reason(bound)));
        store.delete_thread("x").await.expect("delete");
    }
}

#[tokio::test]
async fn sqlite_keeps_checkpoints_across_a_reopen() {
    let home = tempfile::tempdir().expect("temp dir");
    let stored = FileCheckpoint {
        files: vec![
            CheckpointFile {
                path: "/w/old.txt".into(),
                before: Some("line\n".into()),
                after_digest: None,
            },
            CheckpointFile {
                path: "/w/new.txt".into(),
                before: None,
                after_digest: Some("digest".into()),
            },
        ],
        not_restorable: None,
    };
    {
        let store = SqliteThreadStore::open(home.path()).await.expect("open");
        store
            .create_thread(&record("x", 1), &[turn("t1")])
            .await
            .expect("create");
        store
            .put_file_checkpoint("x", "t1", &stored, ROOMY)
            .await
            .expect("put");
    }
    let store = SqliteThreadStore::open(home.path()).await.expect("reopen");
    let read = store.file_checkpoints("x", "t1").await.expect("read");
    assert_eq!(read, vec![("t1".to_owned(), stored)]);
}

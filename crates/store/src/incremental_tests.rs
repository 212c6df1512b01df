//! The store methods a turn is written through as it happens (issue 13): `begin_turn`,
//! `put_item`, `finish_turn`, run against both stores; and, for SQLite, the group commit under
//! concurrent writers, recovery of turns a crash left running, and the shutdown checkpoint.

use std::sync::Arc;

use tandem_protocol::{
    ApprovalPolicy, CommandAction, CommandExecutionStatus, DynamicToolCallStatus, SessionSource,
    SharedText, ThreadItem, ThreadStatus, Turn, TurnError, TurnItemsView, TurnStatus, UserInput,
};

use super::*;

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
        model_provider: "tandem".to_owned(),
        cli_version: "0".to_owned(),
        approval_policy: ApprovalPolicy::Never,
        dynamic_tools: Vec::new(),
        config: serde_json::Map::new(),
        archived_at: None,
    }
}

fn user(n: usize) -> ThreadItem {
    ThreadItem::UserMessage {
        id: format!("user-{n}"),
        content: vec![UserInput::text(format!("request {n}"))],
        client_id: None,
    }
}

fn command(status: CommandExecutionStatus, output: Option<&str>) -> ThreadItem {
    ThreadItem::CommandExecution {
        id: "cmd".to_owned(),
        command: "make".to_owned(),
        cwd: "/work".to_owned(),
        status,
        command_actions: vec![CommandAction::Unknown {
            command: "make".to_owned(),
        }],
        process_id: None,
        exit_code: output.map(|_| 0),
        aggregated_output: output.map(SharedText::from),
        duration_ms: None,
        source: tandem_protocol::CommandExecutionSource::Agent,
    }
}

fn tool_call(status: DynamicToolCallStatus) -> ThreadItem {
    ThreadItem::DynamicToolCall {
        id: "tool".to_owned(),
        tool: "lookup".to_owned(),
        namespace: None,
        arguments: serde_json::json!({}),
        status,
        content_items: None,
        success: None,
        duration_ms: None,
    }
}

/// A turn as `turn/start` stores it: in progress, with the user's input.
fn started(id: &str, n: usize) -> Turn {
    Turn {
        id: id.to_owned(),
        items: vec![user(n)],
        items_view: TurnItemsView::Full,
        status: TurnStatus::InProgress,
        error: None,
        started_at: Some(1_700_000_010),
        completed_at: None,
        duration_ms: None,
    }
}

async fn turn_of(store: &dyn ThreadStore, thread_id: &str) -> Vec<Turn> {
    store
        .get_thread_with_turns(thread_id)
        .await
        .expect("read")
        .expect("stored")
        .1
}

async fn a_turn_is_written_as_it_happens(store: Arc<dyn ThreadStore>) {
    let thread = record(&new_id());
    store.create_thread(&thread, &[]).await.expect("create");
    let turn_id = new_id();
    let begun = store
        .begin_turn(
            &thread.id,
            &started(&turn_id, 1),
            INPUT_AT,
            &ThreadUpdate {
                preview: Some("request 1".to_owned().into()),
                ..ThreadUpdate::default()
            },
        )
        .await
        .expect("begin");
    assert_eq!(begun.preview, "request 1");
    assert_eq!(
        turn_of(&*store, &thread.id).await,
        vec![started(&turn_id, 1)]
    );

    // A started command is stored, then replaced in place by its completion.
    // Each with its times, which the completion replaces too.
    let running = command(CommandExecutionStatus::InProgress, None);
    let times = |started, completed| ItemTimes {
        started_at_ms: Some(started),
        completed_at_ms: completed,
    };
    store
        .put_item(&thread.id, &turn_id, 1, &running, times(100, None))
        .await
        .expect("put started");
    let done = command(CommandExecutionStatus::Completed, Some("built\n"));
    store
        .put_item(&thread.id, &turn_id, 1, &done, times(100, Some(200)))
        .await
        .expect("put completed");
    let message = ThreadItem::AgentMessage {
        id: "agent".to_owned(),
        text: "done".to_owned().into(),
    };
    store
        .put_item(&thread.id, &turn_id, 2, &message, times(150, Some(180)))
        .await
        .expect("put message");
    assert_eq!(
        turn_of(&*store, &thread.id).await[0].items,
        vec![user(1), done.clone(), message.clone()]
    );
    // The user's input has the times it was stored with. Read one item at a time through the
    // cursors, which start inside a turn.
    let listed = |direction, start| ItemListQuery {
        start,
        direction,
        limit: 1,
        ..ItemListQuery::default()
    };
    let mut seen = Vec::new();
    let mut start = ItemStart::Beginning;
    loop {
        let page = store
            .list_items(&thread.id, &listed(SortDirection::Asc, start))
            .await
            .expect("items");
        seen.extend(
            page.data
                .into_iter()
                .map(|stored| (stored.item, stored.times)),
        );
        match page.next_cursor {
            Some(cursor) => start = ItemStart::Cursor(cursor),
            None => break,
        }
    }
    assert_eq!(
        seen,
        vec![
            (user(1), INPUT_AT),
            (done.clone(), times(100, Some(200))),
            (message.clone(), times(150, Some(180))),
        ]
    );
    assert_eq!(
        newest_item_times(&*store, &thread.id).await,
        times(150, Some(180))
    );

    // A gap or an unknown turn is refused and changes nothing.
    assert!(
        store
            .put_item(&thread.id, &turn_id, 5, &message, ItemTimes::default())
            .await
            .is_err()
    );
    assert!(matches!(
        store
            .put_item(
                &thread.id,
                "no-such-turn",
                0,
                &message,
                ItemTimes::default()
            )
            .await,
        Err(StoreError::TurnNotFound { .. })
    ));

    let finished = Turn {
        // finish_turn ignores items: they are already stored.
        items: Vec::new(),
        status: TurnStatus::Failed,
        error: Some(TurnError {
            message: "model unavailable".to_owned(),
            additional_details: None,
        }),
        completed_at: Some(1_700_000_020),
        duration_ms: Some(10_000),
        ..started(&turn_id, 1)
    };
    let end = TurnEndUpdate {
        status: ThreadStatus::SystemError,
        updated_at: 1_700_000_020,
    };
    let before = store.get_thread(&thread.id).await.unwrap().expect("thread");
    // The last item goes with the end, with its times.
    let last = ThreadItem::AgentMessage {
        id: "last".to_owned(),
        text: "bye".to_owned().into(),
    };
    store
        .finish_turn(
            &thread.id,
            &finished,
            Some((3, &last, times(190, Some(210)))),
            &end,
        )
        .await
        .expect("finish");
    // The end changes the thread's status and update time, and nothing else.
    let mut expected = before;
    end.apply(&mut expected);
    assert_eq!(store.get_thread(&thread.id).await.unwrap(), Some(expected));
    assert_eq!(
        turn_of(&*store, &thread.id).await,
        vec![Turn {
            items: vec![user(1), done, message, last],
            ..finished.clone()
        }]
    );
    assert_eq!(
        newest_item_times(&*store, &thread.id).await,
        times(190, Some(210))
    );
    assert!(matches!(
        store
            .finish_turn(
                &thread.id,
                &Turn {
                    id: "no-such-turn".to_owned(),
                    ..finished.clone()
                },
                None,
                &end
            )
            .await,
        Err(StoreError::TurnNotFound { .. })
    ));
    assert!(matches!(
        store
            .finish_turn("no-such-thread", &finished, None, &end)
            .await,
        Err(StoreError::ThreadNotFound(_))
    ));
    store.checkpoint().await.expect("checkpoint");
}

/// Many turns written concurrently, with a failing write among them: each write is answered
/// with its own result, and the failing one takes nothing else down.
async fn concurrent_turn_writes_each_land(store: Arc<dyn ThreadStore>) {
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..24 {
        let store = Arc::clone(&store);
        tasks.spawn(async move {
            let thread = record(&new_id());
            store.create_thread(&thread, &[]).await.expect("create");
            let turn_id = new_id();
            store
                .begin_turn(
                    &thread.id,
                    &started(&turn_id, n),
                    ItemTimes::default(),
                    &ThreadUpdate::default(),
                )
                .await
                .expect("begin");
            let refused = store
                .put_item(
                    &thread.id,
                    "no-such-turn",
                    1,
                    &user(n),
                    ItemTimes::default(),
                )
                .await;
            assert!(matches!(refused, Err(StoreError::TurnNotFound { .. })));
            let message = ThreadItem::AgentMessage {
                id: format!("agent-{n}"),
                text: format!("answer {n}").into(),
            };
            store
                .put_item(&thread.id, &turn_id, 1, &message, ItemTimes::default())
                .await
                .expect("put");
            let done = Turn {
                status: TurnStatus::Completed,
                ..started(&turn_id, n)
            };
            store
                .finish_turn(
                    &thread.id,
                    &done,
                    None,
                    &TurnEndUpdate {
                        status: ThreadStatus::Idle,
                        updated_at: 1,
                    },
                )
                .await
                .expect("finish");
            (thread.id, turn_id, n, message)
        });
    }
    while let Some(joined) = tasks.join_next().await {
        let (thread_id, turn_id, n, message) = joined.expect("task");
        let turns = turn_of(&*store, &thread_id).await;
        assert_eq!(turns.len(), 1);
        assert_eq!(turns[0].id, turn_id);
        assert_eq!(turns[0].status, TurnStatus::Completed);
        assert_eq!(turns[0].items, vec![user(n), message]);
    }
}

macro_rules! both_stores {
    ($($case:ident),* $(,)?) => {
        $(
            mod $case {
                #[tokio::test]
                async fn in_memory() {
                    super::$case(std::sync::Arc::new(super::InMemoryThreadStore::new())).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    let home = tempfile::tempdir().expect("temp dir");
                    let store = super::SqliteThreadStore::open(home.path()).await.expect("open");
                    super::$case(std::sync::Arc::new(store)).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    if let Some(store) = super::super::tests::postgres_store().await {
                        super::$case(std::sync::Arc::new(store)).await;
                    }
                }
            }
        )*
    };
}

both_stores!(
    a_turn_is_written_as_it_happens,
    concurrent_turn_writes_each_land
);

/// A crash's leftovers, written directly: a completed turn, then a turn with a started
/// command and a started tool call and no end. Reopening closes the second one only.
#[tokio::test]
async fn sqlite_reopening_closes_turns_a_crash_left_running() {
    let home = tempfile::tempdir().expect("temp dir");
    let thread = record(&new_id());
    let (done_id, cut_id) = (new_id(), new_id());
    let completed = Turn {
        status: TurnStatus::Completed,
        items: vec![
            user(1),
            command(CommandExecutionStatus::Completed, Some("ok")),
        ],
        ..started(&done_id, 1)
    };
    {
        let store = SqliteThreadStore::open(home.path()).await.expect("open");
        store.create_thread(&thread, &[]).await.expect("create");
        store
            .commit_turn(&thread.id, &completed, &ThreadUpdate::default())
            .await
            .expect("completed turn");
        store
            .begin_turn(
                &thread.id,
                &started(&cut_id, 2),
                ItemTimes::default(),
                &ThreadUpdate::default(),
            )
            .await
            .expect("begin");
        let running = command(CommandExecutionStatus::InProgress, None);
        store
            .put_item(&thread.id, &cut_id, 1, &running, RUNNING_SINCE)
            .await
            .expect("started command");
        store
            .put_item(
                &thread.id,
                &cut_id,
                2,
                &tool_call(DynamicToolCallStatus::InProgress),
                ItemTimes::default(),
            )
            .await
            .expect("started tool call");
        // Dropped without finishing: what a SIGKILL leaves (the writes were committed).
    }
    for _ in 0..2 {
        // Twice: recovery is idempotent.
        let store = SqliteThreadStore::open(home.path()).await.expect("reopen");
        let turns = turn_of(&store, &thread.id).await;
        assert_eq!(turns[0], completed);
        let cut = &turns[1];
        assert_eq!(cut.status, TurnStatus::Interrupted);
        assert_eq!(
            cut.error.as_ref().map(|error| error.message.as_str()),
            Some(INTERRUPTED_BY_STOP)
        );
        assert_eq!(cut.items[0], user(2));
        assert_eq!(cut.items[1], command(CommandExecutionStatus::Failed, None));
        // Closing it keeps when it started; when it ended nobody knows.
        let items = store
            .list_items(
                &thread.id,
                &ItemListQuery {
                    turn_id: Some(cut.id.clone()),
                    ..ItemListQuery::default()
                },
            )
            .await
            .expect("items");
        assert_eq!(items.data[1].times, RUNNING_SINCE);
        let ThreadItem::DynamicToolCall {
            status,
            content_items,
            success,
            ..
        } = &cut.items[2]
        else {
            panic!("{:?}", cut.items[2]);
        };
        assert_eq!(*status, DynamicToolCallStatus::Failed);
        assert_eq!(*success, Some(false));
        assert!(
            content_items
                .as_ref()
                .is_some_and(|items| !items.is_empty())
        );
    }
}

/// A version-5 database (before item times) is migrated in place: its items read back, with
/// no times, and new writes keep theirs.
#[tokio::test]
async fn sqlite_migrates_a_version_five_database_keeping_its_items() {
    let home = tempfile::tempdir().expect("temp dir");
    let thread = record(&new_id());
    let turn_id = new_id();
    {
        let store = SqliteThreadStore::open(home.path()).await.expect("create");
        store.create_thread(&thread, &[]).await.expect("create");
        store
            .begin_turn(
                &thread.id,
                &started(&turn_id, 1),
                ItemTimes::default(),
                &ThreadUpdate::default(),
            )
            .await
            .expect("begin");
        let connection = rusqlite::Connection::open(store.database_path()).expect("raw open");
        // Back to what a version-5 build left.
        connection
            .execute_batch(
                "ALTER TABLE items DROP COLUMN started_at_ms; \
                 ALTER TABLE items DROP COLUMN completed_at_ms; PRAGMA user_version = 5;",
            )
            .expect("version 5");
    }
    let store = SqliteThreadStore::open(home.path()).await.expect("migrate");
    store
        .put_item(&thread.id, &turn_id, 1, &user(2), RUNNING_SINCE)
        .await
        .expect("a new item");
    let items = store
        .list_items(&thread.id, &ItemListQuery::default())
        .await
        .expect("items");
    let read: Vec<_> = items
        .data
        .into_iter()
        .map(|stored| (stored.item, stored.times))
        .collect();
    assert_eq!(
        read,
        vec![(user(1), ItemTimes::default()), (user(2), RUNNING_SINCE)]
    );
}

/// The times of the thread's newest item, as `thread/items/list` reads them.
async fn newest_item_times(store: &dyn ThreadStore, thread_id: &str) -> ItemTimes {
    let query = ItemListQuery {
        direction: SortDirection::Desc,
        limit: 1,
        ..ItemListQuery::default()
    };
    let page = store.list_items(thread_id, &query).await.expect("items");
    page.data[0].times
}

/// The times `turn/start` gives the input it stores with its turn.
const INPUT_AT: ItemTimes = ItemTimes {
    started_at_ms: Some(50),
    completed_at_ms: Some(50),
};

/// The times of the command a crash left running in the recovery test.
const RUNNING_SINCE: ItemTimes = ItemTimes {
    started_at_ms: Some(1_700_000_010_000),
    completed_at_ms: None,
};

/// After the shutdown checkpoint the log is empty and the database file alone holds the data.
#[tokio::test]
async fn sqlite_checkpoint_leaves_the_data_in_the_database_file() {
    let home = tempfile::tempdir().expect("temp dir");
    let store = SqliteThreadStore::open(home.path()).await.expect("open");
    let thread = record(&new_id());
    store.create_thread(&thread, &[]).await.expect("create");
    let turn_id = new_id();
    store
        .begin_turn(
            &thread.id,
            &started(&turn_id, 1),
            ItemTimes::default(),
            &ThreadUpdate::default(),
        )
        .await
        .expect("begin");
    let wal = home.path().join("threads.sqlite-wal");
    assert!(std::fs::metadata(&wal).expect("wal").len() > 0);
    store.checkpoint().await.expect("checkpoint");
    assert_eq!(
        std::fs::metadata(&wal).map(|meta| meta.len()).unwrap_or(0),
        0
    );

    // A backup that copies only the database file gets everything.
    let backup = tempfile::tempdir().expect("temp dir");
    std::fs::copy(
        store.database_path(),
        backup.path().join(SqliteThreadStore::FILE_NAME),
    )
    .expect("copy");
    let copy = SqliteThreadStore::open(backup.path())
        .await
        .expect("open copy");
    let turns = turn_of(&copy, &thread.id).await;
    assert_eq!(turns.len(), 1);
    // The copy was taken mid-turn, so opening it closed the turn as interrupted.
    assert_eq!(turns[0].status, TurnStatus::Interrupted);
    // The store stays usable after a checkpoint.
    store
        .put_item(&thread.id, &turn_id, 1, &user(2), ItemTimes::default())
        .await
        .expect("write after checkpoint");
}

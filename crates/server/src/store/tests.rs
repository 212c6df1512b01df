//! One behavioural suite run against both stores, so that an ephemeral thread and a persisted
//! one behave alike, plus the SQLite durability tests (reopen, and SIGKILL of a writer in a
//! child process).

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Map, json};
use tandem_protocol::{
    ApprovalPolicy, CommandAction, CommandExecutionStatus, DynamicToolCallOutputContentItem,
    DynamicToolCallStatus, DynamicToolSpec, DynamicToolType, SessionSource, SortDirection,
    ThreadAttachment, ThreadAttachmentAddOutcome, ThreadItem, ThreadStatus, Turn, TurnError,
    TurnItemsView, TurnStatus, UserInput,
};

use super::*;

// ---------------------------------------------------------------------------------------------
// Fixtures.
// ---------------------------------------------------------------------------------------------

/// A store under test, with the temporary home that must outlive it.
struct Fixture {
    store: Arc<dyn ThreadStore>,
    _home: Option<tempfile::TempDir>,
}

impl Fixture {
    fn memory() -> Self {
        Self {
            store: Arc::new(InMemoryThreadStore::new()),
            _home: None,
        }
    }

    /// A store on a fresh database of this test binary's throwaway PostgreSQL cluster;
    /// `None` (the test skips, saying why) where PostgreSQL is not installed.
    async fn postgres() -> Option<Self> {
        Some(Self {
            store: Arc::new(postgres_store().await?),
            _home: None,
        })
    }

    async fn sqlite() -> Self {
        let home = tempfile::tempdir().expect("temp dir");
        let store = SqliteThreadStore::open(home.path())
            .await
            .expect("open store");
        Self {
            store: Arc::new(store),
            _home: Some(home),
        }
    }
}

/// A [`PostgresThreadStore`] on a fresh database of this test binary's throwaway cluster
/// (see [`tandem_test_support::postgres`]); `None` where PostgreSQL is not installed.
pub(super) async fn postgres_store() -> Option<PostgresThreadStore> {
    let cluster = tandem_test_support::postgres::PostgresCluster::shared()?;
    let url = cluster.create_database();
    let settings = LeaseSettings::for_this_process(DEFAULT_LEASE_TTL);
    Some(
        PostgresThreadStore::connect(&url, settings)
            .await
            .expect("connect to the test cluster"),
    )
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
        model: Some("mock-model".to_owned()),
        model_provider: "mock".to_owned(),
        cli_version: "0.1.0".to_owned(),
        approval_policy: ApprovalPolicy::Never,
        dynamic_tools: Vec::new(),
        config: Map::new(),
        archived_at: None,
    }
}

/// A record that sets every member to a non-default value.
fn rich_record(id: &str) -> ThreadRecord {
    let mut config = Map::new();
    config.insert("thread_unload_delay_secs".to_owned(), json!(5));
    ThreadRecord {
        name: Some("refactor the parser".to_owned()),
        preview: "please refactor".to_owned().into(),
        ephemeral: true,
        updated_at: 1_700_000_100,
        status: ThreadStatus::SystemError,
        cwd: "/home/ada/project".to_owned(),
        source: SessionSource::Custom("sdk".to_owned()),
        forked_from_id: Some("0190a000-0000-7000-8000-00000000abcd".to_owned()),
        model: None,
        model_provider: "openai".to_owned(),
        approval_policy: ApprovalPolicy::OnRequest,
        dynamic_tools: vec![DynamicToolSpec {
            kind: DynamicToolType::Function,
            name: "lookup".to_owned(),
            description: "looks things up".to_owned(),
            input_schema: json!({"type": "object", "properties": {"q": {"type": "string"}}}),
            defer_loading: Some(true),
        }],
        config,
        ..record(id, 1_700_000_000)
    }
}

/// A completed turn holding one item of every variant, distinct per `n`.
fn turn(n: u32) -> Turn {
    Turn {
        id: format!("0190a000-0000-7000-8000-{n:012x}"),
        items: vec![
            ThreadItem::UserMessage {
                id: format!("user-{n}"),
                content: vec![UserInput::text(format!("request {n}"))],
                client_id: Some(format!("client-{n}")),
            },
            ThreadItem::AgentMessage {
                id: format!("agent-{n}"),
                text: format!("answer {n} with \"quotes\", newline\nand unicode \u{1F600}").into(),
            },
            ThreadItem::CommandExecution {
                id: format!("cmd-{n}"),
                command: "ls -la".to_owned(),
                cwd: "/work".to_owned(),
                status: CommandExecutionStatus::Declined,
                command_actions: vec![CommandAction::Unknown {
                    command: "ls -la".to_owned(),
                }],
                process_id: None,
                exit_code: Some(-1),
                aggregated_output: Some("out".to_owned().into()),
                duration_ms: None,
            },
            ThreadItem::DynamicToolCall {
                id: format!("tool-{n}"),
                tool: "lookup".to_owned(),
                namespace: None,
                arguments: json!({"q": n, "nested": [1, {"a": null}]}),
                status: DynamicToolCallStatus::Completed,
                content_items: Some(vec![DynamicToolCallOutputContentItem::InputText {
                    text: "found".to_owned().into(),
                }]),
                success: Some(true),
                duration_ms: Some(12),
            },
        ],
        items_view: TurnItemsView::Full,
        status: TurnStatus::Completed,
        error: None,
        started_at: Some(1_700_000_000 + i64::from(n)),
        completed_at: Some(1_700_000_001 + i64::from(n)),
        duration_ms: Some(1000),
    }
}

fn failed_turn(n: u32) -> Turn {
    Turn {
        status: TurnStatus::Failed,
        error: Some(TurnError {
            message: "model unavailable".to_owned(),
            additional_details: Some("503".to_owned()),
        }),
        items: vec![],
        completed_at: None,
        duration_ms: None,
        ..turn(n)
    }
}

fn attachment(kind: &str, key: &str, id: &str) -> ThreadAttachment {
    ThreadAttachment {
        id: id.to_owned(),
        attachment_type: kind.to_owned(),
        identity_key: key.to_owned(),
        payload: json!({"key": key, "list": [1, 2.5, "three"]}),
        created_at: 1_700_000_000,
    }
}

async fn all_pages_of_threads(store: &dyn ThreadStore, mut query: ThreadListQuery) -> Vec<String> {
    let mut ids = Vec::new();
    for _ in 0..100 {
        let page = store.list_threads(&query).await.expect("list threads");
        assert!(page.data.len() <= query.limit.max(1));
        ids.extend(page.data.into_iter().map(|thread| thread.id));
        match page.next_cursor {
            Some(cursor) => query.cursor = Some(cursor),
            None => return ids,
        }
    }
    panic!("pagination did not terminate");
}

async fn all_pages_of_turns(
    store: &dyn ThreadStore,
    thread_id: &str,
    mut query: TurnListQuery,
) -> Vec<String> {
    let mut ids = Vec::new();
    for _ in 0..100 {
        let page = store
            .list_turns(thread_id, &query)
            .await
            .expect("list turns");
        assert!(page.data.len() <= query.limit.max(1));
        ids.extend(page.data.into_iter().map(|turn| turn.id));
        match page.next_cursor {
            Some(cursor) => query.cursor = Some(cursor),
            None => return ids,
        }
    }
    panic!("pagination did not terminate");
}

// ---------------------------------------------------------------------------------------------
// The shared suite.
// ---------------------------------------------------------------------------------------------

macro_rules! shared_suite {
    ($($case:ident),* $(,)?) => {
        mod in_memory {
            $(
                #[tokio::test]
                async fn $case() {
                    super::$case(&super::Fixture::memory()).await;
                }
            )*
        }
        mod sqlite {
            $(
                #[tokio::test]
                async fn $case() {
                    super::$case(&super::Fixture::sqlite().await).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test]
                async fn $case() {
                    if let Some(fixture) = super::Fixture::postgres().await {
                        super::$case(&fixture).await;
                    }
                }
            )*
        }
    };
}

shared_suite!(
    thread_round_trips_every_member,
    creating_a_taken_id_fails,
    update_changes_only_the_given_members,
    committed_turns_round_trip_with_their_items,
    recommitting_a_turn_replaces_it_in_place,
    list_turns_paginates_both_ways,
    list_threads_paginates_by_creation,
    list_threads_filters,
    delete_removes_the_thread_and_everything_under_it,
    attachments_are_unique_per_type_and_key,
    fork_copies_history_through_a_turn,
    unknown_threads_are_reported,
);

async fn thread_round_trips_every_member(fixture: &Fixture) {
    let store = &*fixture.store;
    let rich = rich_record(&new_id());
    store.create_thread(&rich, &[]).await.expect("create");
    assert_eq!(
        store.get_thread(&rich.id).await.expect("get"),
        Some(rich.clone())
    );

    let plain = record(&new_id(), 1_700_000_000);
    store.create_thread(&plain, &[]).await.expect("create");
    assert_eq!(
        store.get_thread(&plain.id).await.expect("get"),
        Some(plain.clone())
    );

    let (read, turns) = store
        .get_thread_with_turns(&rich.id)
        .await
        .expect("get with turns")
        .expect("stored");
    assert_eq!(read, rich);
    assert!(turns.is_empty());

    let thread = read.to_thread(vec![turn(1)]);
    assert_eq!(thread.session_id, rich.id);
    assert_eq!(thread.status, ThreadStatus::SystemError);
    assert_eq!(thread.source, SessionSource::Custom("sdk".to_owned()));
    assert_eq!(thread.project_id, None);
    assert_eq!(thread.turns, vec![turn(1)]);
}

async fn creating_a_taken_id_fails(fixture: &Fixture) {
    let store = &*fixture.store;
    let first = record(&new_id(), 1);
    store
        .create_thread(&first, &[turn(1)])
        .await
        .expect("create");
    let mut second = record(&first.id, 2);
    second.name = Some("impostor".to_owned());
    let error = store
        .create_thread(&second, &[])
        .await
        .expect_err("taken id");
    assert!(
        matches!(&error, StoreError::ThreadExists(id) if *id == first.id),
        "{error}"
    );
    let (kept, turns) = store
        .get_thread_with_turns(&first.id)
        .await
        .expect("get")
        .expect("still stored");
    assert_eq!(kept, first);
    assert_eq!(turns, vec![turn(1)]);
}

async fn update_changes_only_the_given_members(fixture: &Fixture) {
    let store = &*fixture.store;
    let original = record(&new_id(), 10);
    store.create_thread(&original, &[]).await.expect("create");

    let update = ThreadUpdate {
        name: Some(Some("named".to_owned())),
        preview: Some("first words".to_owned().into()),
        updated_at: Some(20),
        status: Some(ThreadStatus::SystemError),
        model: Some(None),
        approval_policy: Some(ApprovalPolicy::OnRequest),
        ..ThreadUpdate::default()
    };
    let updated = store
        .update_thread(&original.id, &update)
        .await
        .expect("update");
    let mut expected = original.clone();
    expected.name = Some("named".to_owned());
    expected.preview = "first words".to_owned().into();
    expected.updated_at = 20;
    expected.status = ThreadStatus::SystemError;
    expected.model = None;
    expected.approval_policy = ApprovalPolicy::OnRequest;
    assert_eq!(updated, expected);
    assert_eq!(
        store.get_thread(&original.id).await.expect("get"),
        Some(expected.clone())
    );

    // Clearing the name and changing the settings; everything else stays.
    let mut config = Map::new();
    config.insert("k".to_owned(), json!("v"));
    let second = ThreadUpdate {
        name: Some(None),
        cwd: Some("/elsewhere".to_owned()),
        model_provider: Some("other".to_owned()),
        config: Some(config.clone()),
        ..ThreadUpdate::default()
    };
    let updated = store
        .update_thread(&original.id, &second)
        .await
        .expect("update");
    expected.name = None;
    expected.cwd = "/elsewhere".to_owned();
    expected.model_provider = "other".to_owned();
    expected.config = config;
    assert_eq!(updated, expected);
    assert_eq!(
        store.get_thread(&original.id).await.expect("get"),
        Some(expected)
    );
}

async fn committed_turns_round_trip_with_their_items(fixture: &Fixture) {
    let store = &*fixture.store;
    let thread = record(&new_id(), 100);
    store.create_thread(&thread, &[]).await.expect("create");

    let first = store
        .commit_turn(
            &thread.id,
            &turn(1),
            &ThreadUpdate {
                updated_at: Some(101),
                preview: Some("request 1".to_owned().into()),
                ..ThreadUpdate::default()
            },
        )
        .await
        .expect("commit 1");
    assert_eq!(first.updated_at, 101);
    assert_eq!(first.preview, "request 1");

    // A failed turn leaves the thread in systemError, committed with the turn.
    let second = store
        .commit_turn(
            &thread.id,
            &failed_turn(2),
            &ThreadUpdate {
                updated_at: Some(102),
                status: Some(ThreadStatus::SystemError),
                ..ThreadUpdate::default()
            },
        )
        .await
        .expect("commit 2");
    assert_eq!(second.status, ThreadStatus::SystemError);

    let (read, turns) = store
        .get_thread_with_turns(&thread.id)
        .await
        .expect("get")
        .expect("stored");
    assert_eq!(read, second);
    assert_eq!(turns, vec![turn(1), failed_turn(2)]);
    // Without turns, the record alone.
    assert_eq!(
        store.get_thread(&thread.id).await.expect("get"),
        Some(second)
    );
}

async fn recommitting_a_turn_replaces_it_in_place(fixture: &Fixture) {
    let store = &*fixture.store;
    let thread = record(&new_id(), 1);
    store.create_thread(&thread, &[]).await.expect("create");
    let mut in_progress = turn(1);
    in_progress.status = TurnStatus::InProgress;
    in_progress.items.truncate(1);
    in_progress.completed_at = None;
    let none = ThreadUpdate::default();
    store
        .commit_turn(&thread.id, &in_progress, &none)
        .await
        .expect("commit");
    store
        .commit_turn(&thread.id, &turn(2), &none)
        .await
        .expect("commit");
    store
        .commit_turn(&thread.id, &turn(1), &none)
        .await
        .expect("recommit");

    let (_, turns) = store
        .get_thread_with_turns(&thread.id)
        .await
        .expect("get")
        .expect("stored");
    assert_eq!(turns, vec![turn(1), turn(2)]);
}

async fn list_turns_paginates_both_ways(fixture: &Fixture) {
    let store = &*fixture.store;
    let thread = record(&new_id(), 1);
    // Committed out of id order: listing follows commit order, not ids.
    let order = [3, 1, 4, 0, 2];
    store.create_thread(&thread, &[]).await.expect("create");
    for n in order {
        store
            .commit_turn(&thread.id, &turn(n), &ThreadUpdate::default())
            .await
            .expect("commit");
    }
    let ids: Vec<String> = order.iter().map(|&n| turn(n).id).collect();
    let reversed: Vec<String> = ids.iter().rev().cloned().collect();

    for limit in [0, 1, 2, 5, 50] {
        let asc = TurnListQuery {
            limit,
            direction: SortDirection::Asc,
            cursor: None,
            items_view: TurnItemsView::Full,
        };
        assert_eq!(
            all_pages_of_turns(store, &thread.id, asc).await,
            ids,
            "limit {limit}"
        );
        let desc = TurnListQuery {
            limit,
            ..TurnListQuery::default()
        };
        assert_eq!(
            all_pages_of_turns(store, &thread.id, desc).await,
            reversed,
            "limit {limit}"
        );
    }

    // Pages carry whole turns, and the last page has no cursor.
    let page = store
        .list_turns(
            &thread.id,
            &TurnListQuery {
                limit: 2,
                direction: SortDirection::Asc,
                cursor: Some(turn(4).id),
                items_view: TurnItemsView::Full,
            },
        )
        .await
        .expect("page");
    assert_eq!(page.data, vec![turn(0), turn(2)]);
    assert_eq!(page.next_cursor, None);

    let error = store
        .list_turns(
            &thread.id,
            &TurnListQuery {
                cursor: Some("no-such-turn".to_owned()),
                ..TurnListQuery::default()
            },
        )
        .await
        .expect_err("bad cursor");
    assert_eq!(error.to_string(), "invalid cursor: no-such-turn");
}

async fn list_threads_paginates_by_creation(fixture: &Fixture) {
    let store = &*fixture.store;
    // Two threads share a creation second; ids break the tie.
    let created = [(30, "c"), (10, "a"), (20, "b1"), (20, "b0"), (40, "d")];
    let mut expected = Vec::new();
    for (created_at, suffix) in created {
        let id = format!("thread-{suffix}");
        store
            .create_thread(&record(&id, created_at), &[])
            .await
            .expect("create");
        expected.push((created_at, id));
    }
    expected.sort();
    let asc: Vec<String> = expected.into_iter().map(|(_, id)| id).collect();
    let desc: Vec<String> = asc.iter().rev().cloned().collect();

    for limit in [0, 1, 2, 3, 5, 100] {
        let query = ThreadListQuery {
            limit,
            direction: SortDirection::Asc,
            ..ThreadListQuery::default()
        };
        assert_eq!(
            all_pages_of_threads(store, query).await,
            asc,
            "limit {limit}"
        );
        let query = ThreadListQuery {
            limit,
            ..ThreadListQuery::default()
        };
        assert_eq!(
            all_pages_of_threads(store, query).await,
            desc,
            "limit {limit}"
        );
    }

    // A cursor stays valid after the thread it came from is deleted.
    let first = store
        .list_threads(&ThreadListQuery {
            limit: 2,
            direction: SortDirection::Asc,
            ..ThreadListQuery::default()
        })
        .await
        .expect("first page");
    assert_eq!(first.data.len(), 2);
    let cursor = first.next_cursor.expect("more pages");
    assert!(
        store
            .delete_thread(&first.data[1].id)
            .await
            .expect("delete")
    );
    let rest = all_pages_of_threads(
        store,
        ThreadListQuery {
            cursor: Some(cursor),
            limit: 2,
            direction: SortDirection::Asc,
            ..ThreadListQuery::default()
        },
    )
    .await;
    assert_eq!(rest, asc[2..].to_vec());

    for bad in ["nonsense", "x:thread-a", "10:", ""] {
        let error = store
            .list_threads(&ThreadListQuery {
                cursor: Some(bad.to_owned()),
                ..ThreadListQuery::default()
            })
            .await
            .expect_err(bad);
        assert_eq!(error.to_string(), format!("invalid cursor: {bad}"));
    }
}

async fn list_threads_filters(fixture: &Fixture) {
    let store = &*fixture.store;
    let specs = [
        ("t1", SessionSource::Cli, "/a", Some("Fix the parser")),
        ("t2", SessionSource::Exec, "/b", Some("parser tests")),
        ("t3", SessionSource::AppServer, "/a", None),
        (
            "t4",
            SessionSource::Custom("sdk".to_owned()),
            "/c",
            Some("docs"),
        ),
        ("t5", SessionSource::Vscode, "/b", Some("the PARSER")),
    ];
    for (index, (id, source, cwd, name)) in specs.into_iter().enumerate() {
        let thread = ThreadRecord {
            source,
            cwd: cwd.to_owned(),
            name: name.map(str::to_owned),
            ..record(id, i64::try_from(index).expect("small"))
        };
        store.create_thread(&thread, &[]).await.expect("create");
    }
    let ids = |query: ThreadListQuery| async move {
        let query = ThreadListQuery {
            direction: SortDirection::Asc,
            limit: 1,
            ..query
        };
        all_pages_of_threads(store, query).await
    };
    let kinds = |kinds: &[&str]| kinds.iter().map(|kind| (*kind).to_owned()).collect();
    let cwds = |cwds: &[&str]| cwds.iter().map(|cwd| (*cwd).to_owned()).collect();

    assert_eq!(
        ids(ThreadListQuery::default()).await,
        ["t1", "t2", "t3", "t4", "t5"]
    );
    assert_eq!(
        ids(ThreadListQuery {
            source_kinds: kinds(&["cli", "custom"]),
            ..ThreadListQuery::default()
        })
        .await,
        ["t1", "t4"]
    );
    assert_eq!(
        ids(ThreadListQuery {
            source_kinds: kinds(&["appServer"]),
            ..ThreadListQuery::default()
        })
        .await,
        ["t3"]
    );
    assert_eq!(
        ids(ThreadListQuery {
            cwds: cwds(&["/b"]),
            ..ThreadListQuery::default()
        })
        .await,
        ["t2", "t5"]
    );
    assert_eq!(
        ids(ThreadListQuery {
            cwds: cwds(&["/a", "/c"]),
            ..ThreadListQuery::default()
        })
        .await,
        ["t1", "t3", "t4"]
    );
    // Case-sensitive substring of the name; unnamed threads never match a term.
    assert_eq!(
        ids(ThreadListQuery {
            search_term: Some("parser".to_owned()),
            ..ThreadListQuery::default()
        })
        .await,
        ["t1", "t2"]
    );
    assert_eq!(
        ids(ThreadListQuery {
            search_term: Some(String::new()),
            ..ThreadListQuery::default()
        })
        .await,
        ["t1", "t2", "t3", "t4", "t5"]
    );
    assert_eq!(
        ids(ThreadListQuery {
            search_term: Some("parser".to_owned()),
            cwds: cwds(&["/b"]),
            source_kinds: kinds(&["exec", "vscode"]),
            ..ThreadListQuery::default()
        })
        .await,
        ["t2"]
    );
    assert!(
        ids(ThreadListQuery {
            source_kinds: kinds(&["nothing-like-this"]),
            ..ThreadListQuery::default()
        })
        .await
        .is_empty()
    );

    assert_eq!(
        ids(ThreadListQuery {
            search_term: Some("PARSER".to_owned()),
            ..ThreadListQuery::default()
        })
        .await,
        ["t5"]
    );
}

async fn delete_removes_the_thread_and_everything_under_it(fixture: &Fixture) {
    let store = &*fixture.store;
    let thread = record(&new_id(), 5);
    store
        .create_thread(&thread, &[turn(1)])
        .await
        .expect("create");
    store
        .commit_turn(&thread.id, &turn(2), &ThreadUpdate::default())
        .await
        .expect("commit");
    store
        .add_attachment(&thread.id, &attachment("pr", "1", "att-1"))
        .await
        .expect("attach");
    let other = record(&new_id(), 6);
    store
        .create_thread(&other, &[turn(1)])
        .await
        .expect("create other");

    assert!(store.delete_thread(&thread.id).await.expect("delete"));
    assert_eq!(store.get_thread(&thread.id).await.expect("get"), None);
    assert!(!store.delete_thread(&thread.id).await.expect("delete again"));

    // Nothing is left behind to resurface under a new thread with the same id.
    store.create_thread(&thread, &[]).await.expect("recreate");
    let (_, turns) = store
        .get_thread_with_turns(&thread.id)
        .await
        .expect("get")
        .expect("stored");
    assert!(turns.is_empty());
    assert!(
        store
            .list_attachments(&thread.id)
            .await
            .expect("list")
            .is_empty()
    );

    // Other threads are untouched.
    let (_, other_turns) = store
        .get_thread_with_turns(&other.id)
        .await
        .expect("get")
        .expect("other stored");
    assert_eq!(other_turns, vec![turn(1)]);
}

async fn attachments_are_unique_per_type_and_key(fixture: &Fixture) {
    let store = &*fixture.store;
    let thread = record(&new_id(), 1);
    store.create_thread(&thread, &[]).await.expect("create");

    let first = attachment("pr", "42", "att-1");
    let added = store.add_attachment(&thread.id, &first).await.expect("add");
    assert_eq!(added.outcome, ThreadAttachmentAddOutcome::Created);
    assert_eq!(added.attachment, first);

    // Same type and key: the stored one comes back unchanged, whatever the new payload.
    let mut again = attachment("pr", "42", "att-2");
    again.payload = json!("different");
    let repeated = store
        .add_attachment(&thread.id, &again)
        .await
        .expect("add again");
    assert_eq!(repeated.outcome, ThreadAttachmentAddOutcome::Existing);
    assert_eq!(repeated.attachment, first);

    // Same key under another type, and another key under the same type, are distinct.
    let issue = attachment("issue", "42", "att-3");
    let second_pr = attachment("pr", "43", "att-4");
    for other in [&issue, &second_pr] {
        let added = store.add_attachment(&thread.id, other).await.expect("add");
        assert_eq!(added.outcome, ThreadAttachmentAddOutcome::Created);
    }
    assert_eq!(
        store.list_attachments(&thread.id).await.expect("list"),
        vec![first.clone(), issue.clone(), second_pr.clone()]
    );

    let removed = store
        .remove_attachment(&thread.id, "pr", "42")
        .await
        .expect("remove");
    assert_eq!(removed, Some(first));
    assert_eq!(
        store
            .remove_attachment(&thread.id, "pr", "42")
            .await
            .expect("remove again"),
        None
    );
    assert_eq!(
        store.list_attachments(&thread.id).await.expect("list"),
        vec![issue, second_pr]
    );

    // After removal the pair can be added again, as a new attachment.
    let readded = store
        .add_attachment(&thread.id, &attachment("pr", "42", "att-5"))
        .await
        .expect("re-add");
    assert_eq!(readded.outcome, ThreadAttachmentAddOutcome::Created);
    assert_eq!(readded.attachment.id, "att-5");
}

async fn fork_copies_history_through_a_turn(fixture: &Fixture) {
    let store = &*fixture.store;
    let source = ThreadRecord {
        name: Some("original".to_owned()),
        ..record(&new_id(), 1)
    };
    store
        .create_thread(&source, &[turn(1), turn(2), turn(3)])
        .await
        .expect("create");
    store
        .add_attachment(&source.id, &attachment("pr", "1", "att-1"))
        .await
        .expect("attach");

    let partial = source.forked(new_id(), 50);
    assert_eq!(partial.forked_from_id.as_deref(), Some(source.id.as_str()));
    assert_eq!(partial.name.as_deref(), Some("original"));
    let copied = store
        .fork_thread(&source.id, Some(&turn(2).id), &partial)
        .await
        .expect("fork through turn 2");
    assert_eq!(copied, vec![turn(1), turn(2)]);
    let (read, turns) = store
        .get_thread_with_turns(&partial.id)
        .await
        .expect("get")
        .expect("fork stored");
    assert_eq!(read, partial);
    assert_eq!(turns, vec![turn(1), turn(2)]);
    assert!(
        store
            .list_attachments(&partial.id)
            .await
            .expect("list")
            .is_empty()
    );

    // The fork is independent: new turns land in it only.
    store
        .commit_turn(&partial.id, &turn(9), &ThreadUpdate::default())
        .await
        .expect("commit to fork");
    let (_, source_turns) = store
        .get_thread_with_turns(&source.id)
        .await
        .expect("get")
        .expect("source");
    assert_eq!(source_turns, vec![turn(1), turn(2), turn(3)]);

    let whole = source.forked(new_id(), 51);
    let copied = store
        .fork_thread(&source.id, None, &whole)
        .await
        .expect("fork all");
    assert_eq!(copied, vec![turn(1), turn(2), turn(3)]);

    let error = store
        .fork_thread(
            &source.id,
            Some("no-such-turn"),
            &source.forked(new_id(), 52),
        )
        .await
        .expect_err("unknown turn");
    assert!(matches!(error, StoreError::TurnNotFound { .. }), "{error}");
    let error = store
        .fork_thread("no-such-thread", None, &source.forked(new_id(), 53))
        .await
        .expect_err("unknown source");
    assert_eq!(error.to_string(), "thread not found: no-such-thread");
}

async fn unknown_threads_are_reported(fixture: &Fixture) {
    let store = &*fixture.store;
    let missing = "0190a000-0000-7000-8000-ffffffffffff";
    assert_eq!(store.get_thread(missing).await.expect("get"), None);
    assert_eq!(
        store.get_thread_with_turns(missing).await.expect("get"),
        None
    );
    assert!(!store.delete_thread(missing).await.expect("delete"));

    let expect_not_found = |result: Result<(), StoreError>| match result {
        Err(error) => assert_eq!(error.to_string(), format!("thread not found: {missing}")),
        Ok(()) => panic!("operation on an unknown thread succeeded"),
    };
    let none = ThreadUpdate::default();
    expect_not_found(store.update_thread(missing, &none).await.map(drop));
    expect_not_found(store.commit_turn(missing, &turn(1), &none).await.map(drop));
    expect_not_found(
        store
            .list_turns(missing, &TurnListQuery::default())
            .await
            .map(drop),
    );
    expect_not_found(
        store
            .add_attachment(missing, &attachment("pr", "1", "att"))
            .await
            .map(drop),
    );
    expect_not_found(store.remove_attachment(missing, "pr", "1").await.map(drop));
    expect_not_found(store.list_attachments(missing).await.map(drop));
    // Nothing was created by the failed calls.
    assert_eq!(store.get_thread(missing).await.expect("get"), None);
}

// ---------------------------------------------------------------------------------------------
// Helpers outside the suite.
// ---------------------------------------------------------------------------------------------

#[test]
fn new_ids_are_lowercase_uuid_v7_in_creation_order() {
    let ids: Vec<String> = (0..1000).map(|_| new_id()).collect();
    for id in &ids {
        let parsed = uuid::Uuid::parse_str(id).expect("a uuid");
        assert_eq!(parsed.get_version_num(), 7, "{id}");
        assert_eq!(*id, parsed.hyphenated().to_string(), "lowercase hyphenated");
    }
    assert!(
        ids.windows(2).all(|pair| pair[0] < pair[1]),
        "strictly increasing"
    );
}

#[test]
fn source_kinds_are_wire_names() {
    for source in [
        SessionSource::Cli,
        SessionSource::Vscode,
        SessionSource::Exec,
        SessionSource::AppServer,
        SessionSource::Unknown,
    ] {
        let wire = serde_json::to_value(&source).expect("serialize");
        assert_eq!(wire, json!(source_kind(&source)));
    }
    assert_eq!(
        source_kind(&SessionSource::Custom("sdk".to_owned())),
        "custom"
    );
}

#[test]
fn history_through_cuts_after_the_named_turn() {
    let history = vec![turn(1), turn(2), turn(3)];
    assert_eq!(
        history_through("t", history.clone(), Some(&turn(1).id)).expect("cut"),
        vec![turn(1)]
    );
    assert_eq!(
        history_through("t", history.clone(), None).expect("all"),
        history
    );
    let error = history_through("t", history, Some("nope")).expect_err("unknown");
    assert_eq!(error.to_string(), "turn not found in thread t: nope");
}

// ---------------------------------------------------------------------------------------------
// SQLite durability.
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn sqlite_new_store_on_the_same_home_reads_back_completed_turns() {
    let home = tempfile::tempdir().expect("temp dir");
    let thread = rich_record(&new_id());
    {
        let store = SqliteThreadStore::open(home.path()).await.expect("open");
        store.create_thread(&thread, &[]).await.expect("create");
        store
            .commit_turn(&thread.id, &turn(1), &ThreadUpdate::default())
            .await
            .expect("commit 1");
        store
            .commit_turn(&thread.id, &failed_turn(2), &ThreadUpdate::default())
            .await
            .expect("commit 2");
        store
            .add_attachment(&thread.id, &attachment("pr", "7", "att-7"))
            .await
            .expect("attach");
    }
    let reopened = SqliteThreadStore::open(home.path()).await.expect("reopen");
    let (read, turns) = reopened
        .get_thread_with_turns(&thread.id)
        .await
        .expect("get")
        .expect("persisted");
    assert_eq!(read, thread);
    assert_eq!(
        read.status,
        ThreadStatus::SystemError,
        "last status survives reopening"
    );
    assert_eq!(turns, vec![turn(1), failed_turn(2)]);
    assert_eq!(
        reopened.list_attachments(&thread.id).await.expect("list"),
        vec![attachment("pr", "7", "att-7")]
    );
}

#[tokio::test]
async fn sqlite_database_is_wal_full_sync_and_versioned() {
    let home = tempfile::tempdir().expect("temp dir");
    let store = SqliteThreadStore::open(home.path().join("fresh"))
        .await
        .expect("open");
    assert_eq!(
        store.database_path(),
        home.path().join("fresh").join(SqliteThreadStore::FILE_NAME)
    );
    let connection = rusqlite::Connection::open(store.database_path()).expect("raw open");
    let mode: String = connection
        .pragma_query_value(None, "journal_mode", |row| row.get(0))
        .expect("journal_mode");
    assert_eq!(mode, "wal");
    let version: i64 = connection
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .expect("user_version");
    assert_eq!(version, 4);
    // synchronous is per connection: ask the store's own.
    let synchronous: i64 = store
        .run(|connection| Ok(connection.pragma_query_value(None, "synchronous", |row| row.get(0))?))
        .await
        .expect("synchronous");
    assert_eq!(synchronous, 2, "FULL");
}

#[tokio::test]
async fn sqlite_refuses_a_database_from_a_newer_schema() {
    let home = tempfile::tempdir().expect("temp dir");
    drop(SqliteThreadStore::open(home.path()).await.expect("create"));
    let path = home.path().join(SqliteThreadStore::FILE_NAME);
    rusqlite::Connection::open(&path)
        .expect("raw open")
        .pragma_update(None, "user_version", 99)
        .expect("bump version");
    let error = SqliteThreadStore::open(home.path())
        .await
        .expect_err("newer schema");
    let message = error.to_string();
    assert!(
        matches!(error, StoreError::UnsupportedSchema { found: 99, .. }),
        "{message}"
    );
    assert!(message.contains(&path.display().to_string()), "{message}");
}

#[tokio::test]
async fn sqlite_reports_a_corrupt_value_naming_it() {
    let home = tempfile::tempdir().expect("temp dir");
    let store = SqliteThreadStore::open(home.path()).await.expect("open");
    let thread = record("t-corrupt", 1);
    store.create_thread(&thread, &[]).await.expect("create");
    store
        .run(|connection| {
            connection.execute("UPDATE threads SET status = '{\"type\": \"bogus\"}'", [])?;
            Ok(())
        })
        .await
        .expect("corrupt it");
    let error = store.get_thread("t-corrupt").await.expect_err("corrupt");
    assert!(matches!(error, StoreError::Corrupt { .. }), "{error}");
    assert!(
        error.to_string().contains("status of thread t-corrupt"),
        "{error}"
    );
}

/// Env var telling [`sqlite_crash_writer_child`] which home to write to.
const CRASH_HOME_ENV: &str = "TANDEM_STORE_CRASH_HOME";
/// Env var naming the thread the writer appends to.
const CRASH_THREAD_ENV: &str = "TANDEM_STORE_CRASH_THREAD";
/// Precedes the number of each turn the writer reports committed.
const CRASH_MARKER: &str = "crash writer committed turn ";
/// Turns the child commits at most, so that it stops by itself if never killed.
const CRASH_MAX_TURNS: u32 = 400;
/// Reported commits after which the parent kills the child.
const CRASH_KILL_AFTER: usize = 12;

/// The turn the crash writer commits as number `n`: large, so that most of the child's time
/// (and so most likely the kill) falls inside a write, and made from `n` alone, so that the
/// parent can tell an intact turn from a torn one.
fn crash_turn(n: u32) -> Turn {
    let mut turn = turn(n);
    for index in 0..16 {
        let chunk = format!("turn {n} chunk {index}|");
        turn.items.push(ThreadItem::AgentMessage {
            id: format!("bulk-{n}-{index}"),
            text: chunk.repeat(16 * 1024 / chunk.len()).into(),
        });
    }
    turn
}

/// The thread update committed with turn `n`, so the parent can check it landed with its turn.
fn crash_update(n: u32) -> ThreadUpdate {
    ThreadUpdate {
        updated_at: Some(i64::from(n)),
        preview: Some(format!("after turn {n}").into()),
        ..ThreadUpdate::default()
    }
}

/// The child half of [`sqlite_survives_sigkill_mid_write`]: commits turns in a loop and
/// reports each one on stdout once `commit_turn` returned. Not a test on its own.
#[test]
#[ignore = "child process of sqlite_survives_sigkill_mid_write, which runs it"]
fn sqlite_crash_writer_child() {
    let home = std::env::var_os(CRASH_HOME_ENV).expect("run by sqlite_survives_sigkill_mid_write");
    let thread_id = std::env::var(CRASH_THREAD_ENV).expect("thread id");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let store = SqliteThreadStore::open(Path::new(&home))
            .await
            .expect("open");
        let mut stdout = std::io::stdout();
        for n in 2..CRASH_MAX_TURNS {
            store
                .commit_turn(&thread_id, &crash_turn(n), &crash_update(n))
                .await
                .expect("commit");
            // A closed pipe means the parent is gone: stop rather than write forever.
            if writeln!(stdout, "{CRASH_MARKER}{n}")
                .and_then(|()| stdout.flush())
                .is_err()
            {
                return;
            }
        }
    });
}

/// Kills and reaps the child if the test fails before doing so itself.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        // Both fail harmlessly once the test has killed and reaped it.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn sqlite_survives_sigkill_mid_write() {
    use std::os::unix::process::ExitStatusExt as _;

    let home = tempfile::tempdir().expect("temp dir");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let thread = record(&new_id(), 1);
    runtime.block_on(async {
        let store = SqliteThreadStore::open(home.path()).await.expect("open");
        store.create_thread(&thread, &[]).await.expect("create");
        for n in 0..2 {
            store
                .commit_turn(&thread.id, &crash_turn(n), &crash_update(n))
                .await
                .expect("commit");
        }
    });

    let mut child = KillOnDrop(
        Command::new(std::env::current_exe().expect("test binary"))
            .args([
                "store::tests::sqlite_crash_writer_child",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CRASH_HOME_ENV, home.path())
            .env(CRASH_THREAD_ENV, &thread.id)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn writer"),
    );
    let stdout = child.0.stdout.take().expect("stdout");
    let (lines_tx, lines_rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });

    // With --nocapture the harness prints `test <name> ... ` without a newline before the
    // test runs, so the first report shares its line: look for the marker anywhere.
    let committed = |line: &str| {
        line.split_once(CRASH_MARKER)
            .map(|(_, n)| n.trim().parse::<u32>().expect("turn number"))
    };
    let mut reported = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    while reported.len() < CRASH_KILL_AFTER {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines_rx.recv_timeout(left) {
            Ok(line) => reported.extend(committed(&line)),
            Err(error) => panic!("writer reported {} commits, then {error:?}", reported.len()),
        }
    }
    // The writer starts its next commit as soon as it reported the last one; a delay of up to
    // about one commit's duration spreads the kill over the whole write.
    let jitter = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .subsec_micros()
        % 20_000;
    std::thread::sleep(Duration::from_micros(u64::from(jitter)));
    child.0.kill().expect("SIGKILL the writer");
    let status = child.0.wait().expect("reap the writer");
    assert_eq!(
        status.signal(),
        Some(9),
        "the writer was killed mid-loop: {status:?}"
    );
    // Lines already in the pipe are commits that finished before the kill.
    reader.join().expect("reader thread");
    reported.extend(lines_rx.try_iter().filter_map(|line| committed(&line)));
    let last_reported = *reported.last().expect("commits");
    assert_eq!(reported, (2..=last_reported).collect::<Vec<_>>());

    runtime.block_on(async {
        let store = SqliteThreadStore::open(home.path())
            .await
            .expect("reopen after SIGKILL");
        let (record, turns) = store
            .get_thread_with_turns(&thread.id)
            .await
            .expect("read after SIGKILL")
            .expect("thread survives");
        // Every reported commit is there; at most the one in flight at the kill also made it,
        // and then whole.
        let stored = u32::try_from(turns.len()).expect("few turns");
        assert!(
            stored == last_reported + 1 || stored == last_reported + 2,
            "{stored} turns stored, {last_reported} reported"
        );
        for (n, stored_turn) in (0..).zip(&turns) {
            assert!(*stored_turn == crash_turn(n), "turn {n} is not intact");
        }
        // The thread update of the last stored turn landed with it, and no later one.
        let last = stored - 1;
        assert_eq!(record.updated_at, i64::from(last));
        assert_eq!(record.preview, format!("after turn {last}"));

        // The database is sound and writable again.
        let integrity: String = store
            .run(|connection| {
                Ok(connection.pragma_query_value(None, "integrity_check", |row| row.get(0))?)
            })
            .await
            .expect("integrity check");
        assert_eq!(integrity, "ok");
        store
            .commit_turn(&thread.id, &turn(9999), &ThreadUpdate::default())
            .await
            .expect("write after recovery");
    });
}

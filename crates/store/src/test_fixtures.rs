//! The fixtures of the store suites: a store of each kind under test, and records, turns and
//! attachments that set every member.

use std::sync::Arc;

use serde_json::{Map, json};
use tandem_protocol::{
    ApprovalPolicy, CommandAction, CommandExecutionStatus, DynamicToolCallOutputContentItem,
    DynamicToolCallStatus, DynamicToolSpec, DynamicToolType, SessionSource, ThreadAttachment,
    ThreadItem, ThreadStatus, Turn, TurnError, TurnItemsView, TurnStatus, UserInput,
};

use super::*;

// ---------------------------------------------------------------------------------------------
// Fixtures.
// ---------------------------------------------------------------------------------------------

/// A store under test, with the temporary home that must outlive it.
pub(super) struct Fixture {
    pub(super) store: Arc<dyn ThreadStore>,
    _home: Option<tempfile::TempDir>,
}

impl Fixture {
    pub(super) fn memory() -> Self {
        Self {
            store: Arc::new(InMemoryThreadStore::new()),
            _home: None,
        }
    }

    /// A store on a fresh database of this test binary's throwaway PostgreSQL cluster;
    /// `None` (the test skips, saying why) where PostgreSQL is not installed.
    pub(super) async fn postgres() -> Option<Self> {
        Some(Self {
            store: Arc::new(postgres_store().await?),
            _home: None,
        })
    }

    pub(super) async fn sqlite() -> Self {
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

pub(super) fn record(id: &str, created_at: i64) -> ThreadRecord {
    ThreadRecord {
        id: id.to_owned(),
        name: None,
        preview: String::new().into(),
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
pub(super) fn rich_record(id: &str) -> ThreadRecord {
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
pub(super) fn turn(n: u32) -> Turn {
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
                source: tandem_protocol::CommandExecutionSource::Agent,
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

pub(super) fn failed_turn(n: u32) -> Turn {
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

pub(super) fn attachment(kind: &str, key: &str, id: &str) -> ThreadAttachment {
    ThreadAttachment {
        id: id.to_owned(),
        attachment_type: kind.to_owned(),
        identity_key: key.to_owned(),
        payload: json!({"key": key, "list": [1, 2.5, "three"]}),
        created_at: 1_700_000_000,
    }
}

pub(super) async fn all_pages_of_threads(
    store: &dyn ThreadStore,
    mut query: ThreadListQuery,
) -> Vec<String> {
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

pub(super) async fn all_pages_of_turns(
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

//! Section 7 values: items, turns, threads, sessions, attachments.

use serde_json::json;
use tandem_protocol::*;

use super::*;

// ----- section 7 values -----

pub(crate) fn user_message() -> ThreadItem {
    ThreadItem::UserMessage {
        id: s("item-1"),
        content: vec![UserInput::text("list the files")],
        client_id: Some(s("client-msg-1")),
    }
}

pub(crate) fn agent_message() -> ThreadItem {
    ThreadItem::AgentMessage {
        id: s("item-2"),
        text: s("Running ls.").into(),
    }
}

pub(crate) fn command_execution() -> ThreadItem {
    ThreadItem::CommandExecution {
        id: s("item-3"),
        command: s("ls -la"),
        cwd: s(CWD),
        status: CommandExecutionStatus::Completed,
        command_actions: vec![CommandAction::Unknown {
            command: s("ls -la"),
        }],
        process_id: Some(s("4242")),
        exit_code: Some(0),
        aggregated_output: Some(s("total 0\n").into()),
        duration_ms: Some(12),
        source: tandem_protocol::CommandExecutionSource::Agent,
    }
}

pub(crate) fn declined_command() -> ThreadItem {
    ThreadItem::CommandExecution {
        id: s("item-5"),
        command: s("rm -rf 'build dir'"),
        cwd: s(CWD),
        status: CommandExecutionStatus::Declined,
        command_actions: vec![CommandAction::Unknown {
            command: s("rm -rf 'build dir'"),
        }],
        process_id: None,
        exit_code: None,
        aggregated_output: None,
        duration_ms: None,
        source: tandem_protocol::CommandExecutionSource::Agent,
    }
}

pub(crate) fn dynamic_tool_call() -> ThreadItem {
    ThreadItem::DynamicToolCall {
        id: s("call-1"),
        tool: s("lookup"),
        namespace: None,
        arguments: json!({"query": "tandem", "limit": 3}),
        status: DynamicToolCallStatus::Completed,
        content_items: Some(vec![DynamicToolCallOutputContentItem::InputText {
            text: s("found 3").into(),
        }]),
        success: Some(true),
        duration_ms: Some(40),
    }
}

pub(crate) fn turn() -> Turn {
    Turn {
        id: s(TURN_ID),
        items: vec![
            user_message(),
            agent_message(),
            command_execution(),
            dynamic_tool_call(),
        ],
        items_view: TurnItemsView::Full,
        status: TurnStatus::Completed,
        error: None,
        started_at: Some(1_750_000_000),
        completed_at: Some(1_750_000_005),
        duration_ms: Some(5_000),
    }
}

pub(crate) fn failed_turn() -> Turn {
    Turn {
        id: s(TURN_ID_2),
        items: vec![declined_command()],
        items_view: TurnItemsView::Full,
        status: TurnStatus::Failed,
        error: Some(TurnError {
            message: s("model unavailable"),
            additional_details: Some(s("HTTP 503")),
        }),
        started_at: Some(1_750_000_010),
        completed_at: Some(1_750_000_011),
        duration_ms: Some(900),
    }
}

pub(crate) fn new_turn() -> Turn {
    Turn {
        id: s(TURN_ID_2),
        items: vec![],
        items_view: TurnItemsView::NotLoaded,
        status: TurnStatus::InProgress,
        error: None,
        started_at: Some(1_750_000_010),
        completed_at: None,
        duration_ms: None,
    }
}

pub(crate) fn thread() -> Thread {
    Thread {
        id: s(THREAD_ID),
        session_id: s(THREAD_ID),
        name: Some(s("Refactor")),
        preview: s("list the files").into(),
        ephemeral: false,
        created_at: 1_750_000_000,
        updated_at: 1_750_000_005,
        status: ThreadStatus::Active {
            active_flags: vec![ThreadActiveFlag::WaitingOnApproval],
        },
        cwd: s(CWD),
        source: SessionSource::Custom(s("sdk")),
        forked_from_id: None,
        model: Some(s("gpt-test")),
        model_provider: s("openai"),
        cli_version: s("0.1.0"),
        project_id: None,
        turns: vec![turn()],
    }
}

pub(crate) fn forked_thread() -> Thread {
    Thread {
        id: s(FORK_ID),
        session_id: s(FORK_ID),
        name: None,
        preview: s("").into(),
        ephemeral: true,
        created_at: 1_750_000_100,
        updated_at: 1_750_000_100,
        status: ThreadStatus::Idle,
        cwd: s("/tmp/fork"),
        source: SessionSource::AppServer,
        forked_from_id: Some(s(THREAD_ID)),
        model: None,
        model_provider: s("openai"),
        cli_version: s("0.1.0"),
        project_id: None,
        turns: vec![],
    }
}

pub(crate) fn session() -> SessionSettings {
    SessionSettings::new(
        "gpt-test",
        "openai",
        CWD,
        ApprovalPolicy::OnRequest,
        SandboxPolicy::DangerFullAccess,
    )
}

pub(crate) fn attachment() -> ThreadAttachment {
    ThreadAttachment {
        id: s("att-1"),
        attachment_type: s("github.pr"),
        identity_key: s("tandem#12"),
        payload: json!({"url": "https://example.invalid/pr/12", "draft": false}),
        created_at: 1_750_000_050,
    }
}

//! Typed sample values shared by the integration tests: one non-trivial params value and one
//! result value per method, so that `round_trip` and `wire_examples` check the same data.

#![allow(dead_code)] // each test binary uses a different subset

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use tandem_protocol::*;

pub(crate) const THREAD_ID: &str = "0190f3a2-7c4e-7b1a-9d2e-3f4a5b6c7d8e";
pub(crate) const FORK_ID: &str = "0190f3a2-9000-7abc-8def-0123456789ab";
pub(crate) const TURN_ID: &str = "0190f3a2-8000-7000-8000-000000000001";
pub(crate) const TURN_ID_2: &str = "0190f3a2-8000-7000-8000-000000000002";
pub(crate) const CWD: &str = "/home/dev/project";

pub(crate) fn s(text: &str) -> String {
    text.to_owned()
}

pub(crate) fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

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

// ----- section 3 and 4: client requests -----

pub(crate) fn initialize_params() -> InitializeParams {
    InitializeParams {
        client_info: ClientInfo {
            name: s("tandem-tests"),
            title: Some(s("Tandem tests")),
            version: s("1.2.3"),
        },
        capabilities: Some(InitializeCapabilities {
            experimental_api: true,
            opt_out_notification_methods: Some(vec![s("item/agentMessage/delta")]),
        }),
    }
}

pub(crate) fn initialize_response() -> InitializeResponse {
    InitializeResponse {
        user_agent: s("tandem/0.169.0 (tandem 0.1.0; linux x86_64; unix) tandem-tests/1.2.3"),
        platform_family: s("unix"),
        platform_os: s("linux"),
        tandem_home: s("/home/dev/.tandem"),
        codex_home: s("/home/dev/.tandem"),
        server_info: ServerInfo {
            name: s("tandem"),
            version: s("0.169.0"),
        },
        tandem_version: s("0.1.0"),
        process_session: None,
    }
}

pub(crate) fn config_read_params() -> ConfigReadParams {
    ConfigReadParams {
        cwd: Some(s(CWD)),
        include_layers: Some(true),
    }
}

pub(crate) fn config_read_response() -> ConfigReadResponse {
    ConfigReadResponse {
        config: json!({"thread_unload_delay_secs": 60, "model": "gpt-test"}),
        origins: json!({}),
        layers: None,
    }
}

pub(crate) fn lookup_tool() -> DynamicToolSpec {
    DynamicToolSpec {
        kind: DynamicToolType::Function,
        name: s("lookup"),
        description: s("Look things up"),
        input_schema: json!({"type": "object", "properties": {"query": {"type": "string"}}}),
        defer_loading: Some(false),
    }
}

pub(crate) fn thread_start_params() -> ThreadStartParams {
    ThreadStartParams {
        overrides: ThreadOverrides {
            cwd: Some(Some(s(CWD))),
            model: Some(None),
            approval_policy: Some(Some(ApprovalPolicy::Never)),
            sandbox: Some(Some(SandboxMode::WorkspaceWrite)),
            name: Some(Some(s("Refactor"))),
            config: Some(Some(object(json!({"thread_unload_delay_secs": 0})))),
        },
        ephemeral: Some(true),
        dynamic_tools: Some(vec![lookup_tool()]),
        idempotency_key: Some(s("start-retry-1")),
    }
}

pub(crate) fn thread_start_response() -> ThreadStartResponse {
    ThreadStartResponse {
        thread: thread(),
        session: session(),
        cursor: None,
    }
}

pub(crate) fn thread_resume_params() -> ThreadResumeParams {
    ThreadResumeParams {
        thread_id: s(THREAD_ID),
        overrides: ThreadOverrides {
            model: Some(Some(s("gpt-other"))),
            approval_policy: Some(None),
            ..ThreadOverrides::default()
        },
        exclude_turns: Some(true),
        initial_turns_page: Some(ThreadResumeInitialTurnsPageParams {
            limit: Some(1),
            sort_direction: Some(SortDirection::Desc),
            items_view: Some(TurnItemsView::NotLoaded),
        }),
        cursor: None,
    }
}

pub(crate) fn thread_resume_response() -> ThreadResumeResponse {
    ThreadResumeResponse {
        thread: thread(),
        session: SessionSettings::new(
            "gpt-other",
            "openai",
            CWD,
            ApprovalPolicy::Never,
            SandboxPolicy::DangerFullAccess,
        ),
        initial_turns_page: Some(TurnsPage {
            data: vec![turn()],
            next_cursor: Some(s("t1")),
            backwards_cursor: Some(s("at:t1")),
        }),
        turns_backwards_cursor: Some(s("at:t1")),
        items_backwards_cursor: Some(s("at:t1/0")),
        cursor: None,
        gap: None,
        replayed: None,
    }
}

pub(crate) fn thread_items_list_params() -> ThreadItemsListParams {
    ThreadItemsListParams {
        thread_id: s(THREAD_ID),
        turn_id: Some(s("t1")),
        cursor: Some(ThreadItemsListCursor::Anchor(ThreadItemsListAnchor::Item {
            item_id: s("i1"),
        })),
        limit: Some(2),
        sort_direction: Some(SortDirection::Asc),
        defer_output: None,
    }
}

pub(crate) fn thread_items_list_response() -> ThreadItemsListResponse {
    ThreadItemsListResponse {
        data: turn()
            .items
            .into_iter()
            .map(|item| ThreadItemEntry {
                turn_id: s("t1"),
                item,
            })
            .collect(),
        next_cursor: Some(s("t1/1")),
        backwards_cursor: Some(s("at:t1/0")),
    }
}

pub(crate) fn thread_read_params() -> ThreadReadParams {
    ThreadReadParams {
        thread_id: s(THREAD_ID),
        include_turns: Some(true),
    }
}

pub(crate) fn thread_read_response() -> ThreadReadResponse {
    ThreadReadResponse {
        thread: Thread {
            status: ThreadStatus::NotLoaded,
            ..thread()
        },
    }
}

pub(crate) fn thread_list_params() -> ThreadListParams {
    ThreadListParams {
        cursor: Some(s("c1")),
        limit: Some(25),
        sort_direction: Some(SortDirection::Asc),
        source_kinds: Some(vec![s("appServer"), s("cli")]),
        cwd: Some(CwdFilter::Many(vec![s(CWD), s("/tmp/fork")])),
        search_term: Some(s("Refac")),
        archived: Some(false),
        parent_thread_id: None,
        ancestor_thread_id: None,
    }
}

pub(crate) fn thread_list_response() -> ThreadListResponse {
    ThreadListResponse {
        data: vec![thread(), forked_thread()],
        next_cursor: Some(s("c2")),
        backwards_cursor: None,
    }
}

pub(crate) fn thread_loaded_list_params() -> ThreadLoadedListParams {
    ThreadLoadedListParams {
        cursor: Some(s(THREAD_ID)),
        limit: Some(0),
    }
}

pub(crate) fn thread_loaded_list_response() -> ThreadLoadedListResponse {
    ThreadLoadedListResponse {
        data: vec![s(FORK_ID)],
        next_cursor: Some(s(FORK_ID)),
    }
}

pub(crate) fn thread_turns_list_params() -> ThreadTurnsListParams {
    ThreadTurnsListParams {
        thread_id: s(THREAD_ID),
        limit: Some(10),
        sort_direction: Some(SortDirection::Desc),
        cursor: Some(s("t1")),
        items_view: Some(TurnItemsView::Summary),
    }
}

pub(crate) fn thread_turns_list_response() -> ThreadTurnsListResponse {
    ThreadTurnsListResponse {
        data: vec![failed_turn(), turn()],
        next_cursor: None,
        backwards_cursor: None,
    }
}

pub(crate) fn thread_unsubscribe_params() -> ThreadUnsubscribeParams {
    ThreadUnsubscribeParams {
        thread_id: s(THREAD_ID),
    }
}

pub(crate) fn thread_unsubscribe_response() -> ThreadUnsubscribeResponse {
    ThreadUnsubscribeResponse {
        status: ThreadUnsubscribeStatus::NotSubscribed,
    }
}

pub(crate) fn thread_name_set_params() -> ThreadNameSetParams {
    ThreadNameSetParams {
        thread_id: s(THREAD_ID),
        name: s("  New name "),
    }
}

pub(crate) fn thread_fork_params() -> ThreadForkParams {
    ThreadForkParams {
        thread_id: s(THREAD_ID),
        overrides: ThreadOverrides {
            cwd: Some(Some(s("/tmp/fork"))),
            name: Some(None),
            ..ThreadOverrides::default()
        },
        ephemeral: Some(true),
        exclude_turns: Some(false),
        last_turn_id: Some(s(TURN_ID)),
        idempotency_key: Some(s("fork-retry-1")),
    }
}

pub(crate) fn thread_fork_response() -> ThreadForkResponse {
    ThreadForkResponse {
        thread: forked_thread(),
        session: SessionSettings::new(
            "gpt-test",
            "openai",
            "/tmp/fork",
            ApprovalPolicy::Never,
            SandboxPolicy::DangerFullAccess,
        ),
        cursor: None,
    }
}

pub(crate) fn thread_delete_params() -> ThreadDeleteParams {
    ThreadDeleteParams {
        thread_id: s(THREAD_ID),
    }
}

pub(crate) fn thread_attachment_add_params() -> ThreadAttachmentAddParams {
    ThreadAttachmentAddParams {
        thread_id: s(THREAD_ID),
        attachment_type: s("github.pr"),
        identity_key: s("tandem#12"),
        payload: json!({"url": "https://example.invalid/pr/12", "draft": false}),
    }
}

pub(crate) fn thread_attachment_add_response() -> ThreadAttachmentAddResponse {
    ThreadAttachmentAddResponse {
        outcome: ThreadAttachmentAddOutcome::Existing,
        attachment: attachment(),
    }
}

pub(crate) fn thread_attachment_remove_params() -> ThreadAttachmentRemoveParams {
    ThreadAttachmentRemoveParams {
        thread_id: s(THREAD_ID),
        attachment_type: s("github.pr"),
        identity_key: s("tandem#12"),
    }
}

pub(crate) fn turn_start_params() -> TurnStartParams {
    TurnStartParams {
        thread_id: s(THREAD_ID),
        input: vec![
            UserInput::text("hello"),
            UserInput::text("and more"),
            UserInput::Image {
                url: s("data:image/png;base64,iVBORw0KGgo=").into(),
                detail: Some(ImageDetail::Low),
            },
            UserInput::LocalImage {
                path: s("/tmp/photo.jpg"),
                detail: None,
            },
        ],
        client_user_message_id: Some(s("client-msg-2")),
        approval_policy: Some(Some(ApprovalPolicy::OnRequest)),
        model: None,
        sandbox_policy: Some(Some(SandboxPolicy::WorkspaceWrite {
            writable_roots: vec![s("/srv/cache")],
            network_access: true,
            exclude_tmpdir_env_var: false,
            exclude_slash_tmp: true,
        })),
    }
}

pub(crate) fn turn_start_response() -> TurnStartResponse {
    TurnStartResponse { turn: new_turn() }
}

pub(crate) fn turn_steer_params() -> TurnSteerParams {
    TurnSteerParams {
        thread_id: s(THREAD_ID),
        expected_turn_id: s(TURN_ID_2),
        input: vec![UserInput::text("also check the tests")],
        client_user_message_id: None,
    }
}

pub(crate) fn turn_steer_response() -> TurnSteerResponse {
    TurnSteerResponse {
        turn_id: s(TURN_ID_2),
    }
}

pub(crate) fn turn_interrupt_params() -> TurnInterruptParams {
    TurnInterruptParams {
        thread_id: s(THREAD_ID),
        turn_id: s(TURN_ID_2),
    }
}

pub(crate) fn process_spawn_params() -> ProcessSpawnParams {
    ProcessSpawnParams {
        process_handle: s("build"),
        command: vec![s("cargo"), s("build")],
        cwd: Some(s(CWD)),
        tty: Some(true),
        stream_stdin: Some(true),
        stream_stdout_stderr: Some(true),
        output_bytes_cap: Some(None),
        timeout_ms: Some(Some(30_000)),
        env: Some(BTreeMap::from([
            (s("RUST_LOG"), Some(s("debug"))),
            (s("HOME"), None),
        ])),
        size: Some(PtySize { rows: 24, cols: 80 }),
    }
}

pub(crate) fn process_write_stdin_params() -> ProcessWriteStdinParams {
    ProcessWriteStdinParams {
        process_handle: s("build"),
        delta: Some(Bytes::from_static(b"hello\n")),
        close_stdin: Some(true),
    }
}

pub(crate) fn process_kill_params() -> ProcessKillParams {
    ProcessKillParams {
        process_handle: s("build"),
    }
}

pub(crate) fn process_resize_pty_params() -> ProcessResizePtyParams {
    ProcessResizePtyParams {
        process_handle: s("build"),
        size: PtySize {
            rows: 50,
            cols: 132,
        },
    }
}

// ----- section 5: server requests -----

pub(crate) fn tool_call_params() -> ToolCallParams {
    ToolCallParams {
        thread_id: s(THREAD_ID),
        turn_id: s(TURN_ID),
        call_id: s("call-1"),
        namespace: Some(s("docs")),
        tool: s("lookup"),
        arguments: json!({"query": "tandem", "limit": 3}),
    }
}

pub(crate) fn tool_call_response() -> ToolCallResponse {
    ToolCallResponse {
        content_items: vec![
            DynamicToolCallOutputContentItem::InputText {
                text: s("found 3").into(),
            },
            DynamicToolCallOutputContentItem::InputText {
                text: s("done").into(),
            },
        ],
        success: true,
    }
}

pub(crate) fn approval_params() -> CommandExecutionRequestApprovalParams {
    CommandExecutionRequestApprovalParams {
        thread_id: s(THREAD_ID),
        turn_id: s(TURN_ID),
        item_id: s("item-5"),
        started_at_ms: 1_750_000_001_234,
        command: s("rm -rf 'build dir'"),
        cwd: s(CWD),
        reason: Some(s("clean the build")),
        command_actions: vec![CommandAction::Unknown {
            command: s("rm -rf 'build dir'"),
        }],
        available_decisions: Some(CommandExecutionApprovalDecision::ALL.to_vec()),
    }
}

pub(crate) fn approval_response() -> CommandExecutionRequestApprovalResponse {
    CommandExecutionRequestApprovalResponse {
        decision: CommandExecutionApprovalDecision::AcceptForSession,
    }
}

pub(crate) fn user_input_params() -> ToolRequestUserInputParams {
    ToolRequestUserInputParams {
        thread_id: s(THREAD_ID),
        turn_id: s(TURN_ID),
        item_id: s("ask-1"),
        is_blocking: true,
        questions: vec![
            UserInputQuestion {
                id: s("q1"),
                header: s("Branch"),
                question: s("Which branch?"),
                is_other: false,
                is_secret: false,
                options: Some(vec![UserInputQuestionOption {
                    label: s("main"),
                    description: s("the default branch"),
                }]),
            },
            UserInputQuestion {
                id: s("q2"),
                header: s("Why"),
                question: s("Why now?"),
                is_other: false,
                is_secret: false,
                options: None,
            },
        ],
    }
}

pub(crate) fn user_input_response() -> ToolRequestUserInputResponse {
    ToolRequestUserInputResponse {
        answers: BTreeMap::from([
            (
                s("q1"),
                UserInputAnswer {
                    answers: vec![s("main")],
                },
            ),
            (
                s("q2"),
                UserInputAnswer {
                    answers: vec![s("release"), s("today")],
                },
            ),
        ]),
    }
}

// ----- whole requests -----

/// The request of method `M` with `id` and `params`.
pub(crate) fn request<M: RequestMethod>(id: impl Into<RequestId>, params: M::Params) -> M::Request {
    M::into_request(id.into(), params)
}

/// One request per client method, with ids of every kind (0, negative, `i64::MAX`, strings).
pub(crate) fn client_requests() -> Vec<ClientRequest> {
    use client_methods as m;
    vec![
        request::<m::Initialize>(0, initialize_params()),
        request::<m::ConfigRead>("cfg", config_read_params()),
        request::<m::ThreadStart>(2, thread_start_params()),
        request::<m::ThreadResume>(3, thread_resume_params()),
        request::<m::ThreadRead>(4, thread_read_params()),
        request::<m::ThreadList>(5, thread_list_params()),
        request::<m::ThreadLoadedList>(6, thread_loaded_list_params()),
        request::<m::ThreadTurnsList>(7, thread_turns_list_params()),
        request::<m::ThreadUnsubscribe>(8, thread_unsubscribe_params()),
        request::<m::ThreadNameSet>(9, thread_name_set_params()),
        request::<m::ThreadFork>(10, thread_fork_params()),
        request::<m::ThreadDelete>(11, thread_delete_params()),
        request::<m::ThreadAttachmentAdd>(12, thread_attachment_add_params()),
        request::<m::ThreadAttachmentRemove>(13, thread_attachment_remove_params()),
        request::<m::TurnStart>(14, turn_start_params()),
        request::<m::TurnSteer>(15, turn_steer_params()),
        request::<m::TurnInterrupt>(16, turn_interrupt_params()),
        request::<m::ProcessSpawn>(i64::MAX, process_spawn_params()),
        request::<m::ProcessWriteStdin>(-1, process_write_stdin_params()),
        request::<m::ProcessKill>("kill-1", process_kill_params()),
        request::<m::ProcessResizePty>(19, process_resize_pty_params()),
        // t-threadops:
        request::<m::ThreadArchive>(20, thread_archive_params()),
        request::<m::ThreadUnarchive>(21, thread_unarchive_params()),
        request::<m::ThreadCompactStart>(22, thread_compact_start_params()),
        request::<m::ThreadRevert>(23, thread_revert_params()),
        request::<m::ThreadRollback>(24, thread_rollback_params()),
        request::<m::ThreadAttachmentList>(25, thread_attachment_list_params()),
        request::<m::ModelList>(27, model_list_params()),
        request::<m::AccountRead>(
            28,
            GetAccountParams {
                refresh_token: Some(false),
            },
        ),
        request::<m::ConfigValueWrite>(29, config_value_write_params()),
        request::<m::ConfigBatchWrite>(30, config_batch_write_params()),
        request::<m::ThreadItemsList>(26, thread_items_list_params()),
        // x-exec:
        request::<m::CommandExec>(31, command_exec_params()),
        request::<m::CommandExecWrite>(32, command_exec_write_params()),
        request::<m::CommandExecTerminate>(33, command_exec_terminate_params()),
        request::<m::CommandExecResize>(34, command_exec_resize_params()),
        // tui:
        request::<m::ProcessScreen>(35, process_screen_params()),
        // procre:
        request::<m::ProcessResume>(36, process_resume_params()),
        // attach19:
        request::<m::ProcessShare>(37, process_share_params()),
        request::<m::ProcessAttach>(38, process_attach_params()),
    ]
}

// ----- attach19: process/share, process/attach -----

pub(crate) fn process_share_params() -> ProcessShareParams {
    ProcessShareParams {
        process_handle: s("top-1"),
    }
}

pub(crate) fn process_share_response() -> ProcessShareResponse {
    ProcessShareResponse {
        attach_token: s("4be77319f2c61d0a9f2c61d0a4be7731"),
    }
}

pub(crate) fn process_attach_params() -> ProcessAttachParams {
    ProcessAttachParams {
        process_handle: s("top-1"),
        attach_token: s("4be77319f2c61d0a9f2c61d0a4be7731"),
    }
}

pub(crate) fn process_attach_response() -> ProcessAttachResponse {
    ProcessAttachResponse {
        screen: process_screen_response(),
        cursor: EventCursor {
            epoch: s("9f2c61d0a4be7731"),
            seq: 12,
        },
    }
}

// ----- procre: process/resume -----

pub(crate) fn process_resume_params() -> ProcessResumeParams {
    ProcessResumeParams {
        process_session: s("9f2c61d0a4be77319f2c61d0a4be7731"),
        process_handle: s("build"),
        cursor: Some(EventCursor {
            epoch: s("9f2c61d0a4be7731"),
            seq: 1042,
        }),
    }
}

pub(crate) fn process_resume_response() -> ProcessResumeResponse {
    ProcessResumeResponse {
        gap: false,
        replayed: 3,
        cursor: EventCursor {
            epoch: s("9f2c61d0a4be7731"),
            seq: 1045,
        },
    }
}

// ----- x-exec: command/exec -----

pub(crate) fn command_exec_params() -> CommandExecParams {
    CommandExecParams {
        command: vec![s("sh"), s("-c"), s("make test")],
        process_id: Some(s("build-1")),
        tty: false,
        stream_stdin: true,
        stream_stdout_stderr: true,
        output_bytes_cap: Some(1 << 20),
        disable_output_cap: false,
        timeout_ms: Some(30_000),
        disable_timeout: false,
        cwd: Some(s(CWD)),
        env: Some(BTreeMap::from([(s("CI"), Some(s("1"))), (s("HOME"), None)])),
        size: None,
        sandbox_policy: Some(SandboxPolicy::DangerFullAccess),
    }
}

pub(crate) fn command_exec_response() -> CommandExecResponse {
    CommandExecResponse {
        exit_code: 0,
        stdout: s("ok\n"),
        stderr: String::new(),
    }
}

pub(crate) fn command_exec_write_params() -> CommandExecWriteParams {
    CommandExecWriteParams {
        process_id: s("build-1"),
        delta: Some(Bytes::from_static(b"y\n")),
        close_stdin: true,
    }
}

pub(crate) fn command_exec_terminate_params() -> CommandExecTerminateParams {
    CommandExecTerminateParams {
        process_id: s("build-1"),
    }
}

// ----- tui: process/screen -----

pub(crate) fn process_screen_params() -> ProcessScreenParams {
    ProcessScreenParams {
        process_handle: s("top-1"),
    }
}

pub(crate) fn process_screen_response() -> ProcessScreenResponse {
    ProcessScreenResponse {
        size: PtySize { rows: 3, cols: 20 },
        cursor_row: 2,
        cursor_col: 0,
        text: s("load: 0.1\nPID  CMD\n"),
        formatted: s("\u{1b}[?25h\u{1b}[m\u{1b}[H\u{1b}[Jload: 0.1\r\nPID  CMD"),
        output_bytes: 4096,
    }
}

pub(crate) fn command_exec_resize_params() -> CommandExecResizeParams {
    CommandExecResizeParams {
        process_id: s("build-1"),
        size: PtySize {
            rows: 40,
            cols: 120,
        },
    }
}

pub(crate) fn command_exec_output_delta() -> ServerNotification {
    ServerNotification::CommandExecOutputDelta(CommandExecOutputDeltaNotification {
        process_id: s("build-1"),
        stream: ProcessOutputStream::Stdout,
        delta: Bytes::from_static(b"ok\n"),
        cap_reached: false,
    })
}

// ----- t-threadops: archive, compaction, revert/rollback, attachment listing -----

pub(crate) fn thread_archive_params() -> ThreadArchiveParams {
    ThreadArchiveParams {
        thread_id: s(THREAD_ID),
    }
}

pub(crate) fn thread_unarchive_params() -> ThreadUnarchiveParams {
    ThreadUnarchiveParams {
        thread_id: s(THREAD_ID),
    }
}

pub(crate) fn thread_unarchive_response() -> ThreadUnarchiveResponse {
    ThreadUnarchiveResponse { thread: thread() }
}

pub(crate) fn thread_compact_start_params() -> ThreadCompactStartParams {
    ThreadCompactStartParams {
        thread_id: s(THREAD_ID),
    }
}

pub(crate) fn thread_revert_params() -> ThreadRevertParams {
    ThreadRevertParams {
        thread_id: s(THREAD_ID),
        before_turn_id: s(TURN_ID_2),
    }
}

pub(crate) fn thread_revert_response() -> ThreadRevertResponse {
    ThreadRevertResponse {
        thread: thread(),
        turns_backwards_cursor: None,
        items_backwards_cursor: None,
    }
}

pub(crate) fn thread_rollback_params() -> ThreadRollbackParams {
    ThreadRollbackParams {
        thread_id: s(THREAD_ID),
        num_turns: 2,
    }
}

pub(crate) fn thread_rollback_response() -> ThreadRollbackResponse {
    ThreadRollbackResponse { thread: thread() }
}

pub(crate) fn thread_attachment_list_params() -> ThreadAttachmentListParams {
    ThreadAttachmentListParams {
        thread_id: s(THREAD_ID),
        cursor: Some(s("attachment-0")),
        limit: Some(10),
    }
}

pub(crate) fn thread_attachment_list_response() -> ThreadAttachmentListResponse {
    ThreadAttachmentListResponse {
        data: vec![attachment()],
        next_cursor: None,
    }
}

pub(crate) fn thread_archived() -> ServerNotification {
    ServerNotification::ThreadArchived(ThreadArchivedNotification {
        thread_id: s(THREAD_ID),
    })
}

pub(crate) fn thread_unarchived() -> ServerNotification {
    ServerNotification::ThreadUnarchived(ThreadUnarchivedNotification {
        thread_id: s(THREAD_ID),
    })
}

pub(crate) fn thread_compacted() -> ServerNotification {
    ServerNotification::ThreadCompacted(ContextCompactedNotification {
        thread_id: s(THREAD_ID),
        turn_id: s(TURN_ID),
    })
}

pub(crate) fn thread_reverted() -> ServerNotification {
    ServerNotification::ThreadReverted(ThreadRevertedNotification {
        thread_id: s(THREAD_ID),
    })
}

pub(crate) fn model_list_params() -> ModelListParams {
    ModelListParams {
        cursor: Some(s("2")),
        limit: Some(2),
        include_hidden: Some(true),
        model_provider: None,
    }
}

pub(crate) fn model_list_response() -> ModelListResponse {
    ModelListResponse {
        data: vec![Model {
            id: s("qwen3"),
            model: s("qwen3"),
            upgrade: None,
            upgrade_info: None,
            availability_nux: None,
            display_name: s("qwen3"),
            description: s("qwen3 at model provider local"),
            model_specialty: None,
            hidden: false,
            supported_reasoning_efforts: vec![ReasoningEffortOption {
                reasoning_effort: s("none"),
                description: s("no effort is sent"),
            }],
            default_reasoning_effort: s("none"),
            input_modalities: vec![s("text"), s("image")],
            supports_personality: false,
            multi_agent_version: Some(s("disabled")),
            additional_speed_tiers: Vec::new(),
            service_tiers: Vec::new(),
            default_service_tier: None,
            available_access_programs: None,
            is_default: true,
        }],
        next_cursor: Some(s("3")),
    }
}

pub(crate) fn account_response() -> GetAccountResponse {
    GetAccountResponse {
        account: None,
        user_id: None,
        requires_openai_auth: false,
        workspace_routing: None,
    }
}

pub(crate) fn config_value_write_params() -> ConfigValueWriteParams {
    ConfigValueWriteParams {
        key_path: s("model_providers.local.models"),
        value: json!(["qwen3", "llama3"]),
        merge_strategy: MergeStrategy::Replace,
        file_path: None,
        expected_version: Some(s("sha256:00")),
    }
}

pub(crate) fn config_batch_write_params() -> ConfigBatchWriteParams {
    ConfigBatchWriteParams {
        edits: vec![
            ConfigEdit {
                key_path: s("model"),
                value: json!("qwen3"),
                merge_strategy: MergeStrategy::Replace,
            },
            ConfigEdit {
                key_path: s("model_providers.local"),
                value: json!({"base_url": "http://127.0.0.1:8080/v1"}),
                merge_strategy: MergeStrategy::Upsert,
            },
        ],
        file_path: Some(s("/home/u/.local/share/tandem/config.toml")),
        expected_version: None,
        reload_user_config: Some(true),
    }
}

pub(crate) fn config_write_response() -> ConfigWriteResponse {
    ConfigWriteResponse {
        status: WriteStatus::OkOverridden,
        version: s("sha256:ab"),
        file_path: s("/home/u/.local/share/tandem/config.toml"),
        overridden_metadata: Some(json!({"message": "set by -c", "effectiveValue": "m",
            "overridingLayer": {"name": {"type": "sessionFlags"}, "version": "sessionFlags"}})),
    }
}

pub(crate) fn token_usage_updated() -> ServerNotification {
    let last = TokenUsageBreakdown {
        total_tokens: 107,
        input_tokens: 100,
        cached_input_tokens: 40,
        cache_write_input_tokens: 0,
        output_tokens: 7,
        reasoning_output_tokens: 2,
    };
    ServerNotification::ThreadTokenUsageUpdated(ThreadTokenUsageUpdatedNotification {
        thread_id: s(THREAD_ID),
        turn_id: s(TURN_ID),
        token_usage: ThreadTokenUsage {
            total: last,
            last,
            model_context_window: None,
        },
    })
}

/// One request per server method.
pub(crate) fn server_requests() -> Vec<ServerRequest> {
    use server_methods as m;
    vec![
        request::<m::ToolCall>(0, tool_call_params()),
        request::<m::CommandExecutionRequestApproval>(1, approval_params()),
        request::<m::ToolRequestUserInput>(2, user_input_params()),
    ]
}

// ----- section 6: server notifications -----

pub(crate) fn thread_started() -> ServerNotification {
    ServerNotification::ThreadStarted(ThreadStartedNotification {
        thread: forked_thread(),
    })
}

pub(crate) fn thread_status_changed() -> ServerNotification {
    ServerNotification::ThreadStatusChanged(ThreadStatusChangedNotification {
        thread_id: s(THREAD_ID),
        status: ThreadStatus::Active {
            active_flags: vec![
                ThreadActiveFlag::WaitingOnApproval,
                ThreadActiveFlag::WaitingOnUserInput,
            ],
        },
    })
}

pub(crate) fn thread_closed() -> ServerNotification {
    ServerNotification::ThreadClosed(ThreadClosedNotification {
        thread_id: s(THREAD_ID),
    })
}

pub(crate) fn thread_deleted() -> ServerNotification {
    ServerNotification::ThreadDeleted(ThreadDeletedNotification {
        thread_id: s(FORK_ID),
    })
}

pub(crate) fn thread_name_updated() -> ServerNotification {
    ServerNotification::ThreadNameUpdated(ThreadNameUpdatedNotification {
        thread_id: s(THREAD_ID),
        thread_name: Some(s("New name")),
    })
}

pub(crate) fn thread_attachment_updated() -> ServerNotification {
    ServerNotification::ThreadAttachmentUpdated(ThreadAttachmentUpdatedNotification {
        thread_id: s(THREAD_ID),
        attachment_type: s("github.pr"),
        identity_key: s("tandem#12"),
        attachment_id: s("att-1"),
        operation: ThreadAttachmentOperation::Deleted,
    })
}

pub(crate) fn turn_started() -> ServerNotification {
    ServerNotification::TurnStarted(TurnStartedNotification {
        thread_id: s(THREAD_ID),
        turn: new_turn(),
    })
}

pub(crate) fn turn_completed() -> ServerNotification {
    ServerNotification::TurnCompleted(TurnCompletedNotification {
        thread_id: s(THREAD_ID),
        turn: failed_turn(),
    })
}

pub(crate) fn item_started() -> ServerNotification {
    ServerNotification::ItemStarted(ItemStartedNotification {
        thread_id: s(THREAD_ID),
        turn_id: s(TURN_ID),
        item: ThreadItem::DynamicToolCall {
            id: s("call-1"),
            tool: s("lookup"),
            namespace: Some(s("docs")),
            arguments: json!({"query": "tandem"}),
            status: DynamicToolCallStatus::InProgress,
            content_items: None,
            success: None,
            duration_ms: None,
        },
        started_at_ms: 1_750_000_001_000,
    })
}

pub(crate) fn item_completed() -> ServerNotification {
    ServerNotification::ItemCompleted(ItemCompletedNotification {
        thread_id: s(THREAD_ID),
        turn_id: s(TURN_ID),
        item: command_execution(),
        completed_at_ms: 1_750_000_002_000,
    })
}

pub(crate) fn agent_message_delta() -> ServerNotification {
    ServerNotification::AgentMessageDelta(AgentMessageDeltaNotification {
        thread_id: s(THREAD_ID),
        turn_id: s(TURN_ID),
        item_id: s("item-2"),
        delta: s("Running ").into(),
    })
}

pub(crate) fn command_output_delta() -> ServerNotification {
    ServerNotification::CommandExecutionOutputDelta(CommandExecutionOutputDeltaNotification {
        thread_id: s(THREAD_ID),
        turn_id: s(TURN_ID),
        item_id: s("item-3"),
        delta: s("total 0\n").into(),
    })
}

pub(crate) fn server_request_resolved() -> ServerNotification {
    ServerNotification::ServerRequestResolved(ServerRequestResolvedNotification {
        thread_id: s(THREAD_ID),
        turn_id: s(TURN_ID),
        request_id: RequestId::Integer(0),
    })
}

pub(crate) fn error_notification() -> ServerNotification {
    ServerNotification::Error(ErrorNotification {
        thread_id: s(THREAD_ID),
        turn_id: s(TURN_ID_2),
        error: TurnError {
            message: s("model unavailable"),
            additional_details: None,
        },
        will_retry: false,
    })
}

/// An error the server retries (a model request sent again), `willRetry: true`.
pub(crate) fn retry_notification() -> ServerNotification {
    ServerNotification::Error(ErrorNotification {
        thread_id: s(THREAD_ID),
        turn_id: s(TURN_ID_2),
        error: TurnError {
            message: s("Reconnecting... 2/5"),
            additional_details: Some(s("HTTP 503 from openai: overloaded")),
        },
        will_retry: true,
    })
}

pub(crate) fn process_output_delta() -> ServerNotification {
    ServerNotification::ProcessOutputDelta(ProcessOutputDeltaNotification {
        process_handle: s("build"),
        stream: ProcessOutputStream::Stderr,
        delta: Bytes::from_static(b"warning\n"),
        cap_reached: true,
    })
}

pub(crate) fn process_exited() -> ServerNotification {
    ServerNotification::ProcessExited(ProcessExitedNotification {
        process_handle: s("build"),
        exit_code: 137,
        stdout: s("partial"),
        stdout_cap_reached: false,
        stderr: s(""),
        stderr_cap_reached: true,
        output_drain_timed_out: true,
    })
}

/// Every server notification sample, in docs/protocol.md order.
pub(crate) fn server_notifications() -> Vec<ServerNotification> {
    vec![
        thread_started(),
        thread_status_changed(),
        thread_closed(),
        thread_deleted(),
        thread_name_updated(),
        thread_attachment_updated(),
        turn_started(),
        turn_completed(),
        item_started(),
        item_completed(),
        agent_message_delta(),
        command_output_delta(),
        server_request_resolved(),
        error_notification(),
        process_output_delta(),
        process_exited(),
        thread_archived(),
        thread_unarchived(),
        thread_compacted(),
        thread_reverted(),
        token_usage_updated(),
        command_exec_output_delta(),
    ]
}

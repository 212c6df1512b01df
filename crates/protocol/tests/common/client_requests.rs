//! Sections 3 and 4: one params and one result value per client request, and every client
//! request as a whole message.

use std::collections::BTreeMap;

use serde_json::json;
use tandem_protocol::*;

use super::*;

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
            .enumerate()
            .map(|(index, item)| ThreadItemEntry {
                turn_id: s("t1"),
                item,
                // The first item (the user's input) was stored with its turn: no times.
                started_at_ms: (index > 0).then_some(1_764_626_400_000),
                completed_at_ms: (index > 0).then_some(1_764_626_400_250),
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
        effort: Some(Some(s("high"))),
        summary: Some(None),
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
    .into_iter()
    // fs29:
    .chain(fs_requests())
    // search29:
    .chain(search_shell_requests())
    // mcp30:
    .chain(mcp_requests())
    .collect()
}

//! The methods added since the first protocol revision: process share/attach/resume/screen,
//! command/exec, thread operations (archive, compaction, revert/rollback, attachment listing),
//! the model catalog, config writes and token usage.

use std::collections::BTreeMap;

use serde_json::json;
use tandem_protocol::*;

use super::*;

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
        restore_files: None,
    }
}

pub(crate) fn thread_revert_response() -> ThreadRevertResponse {
    ThreadRevertResponse {
        thread: thread(),
        turns_backwards_cursor: None,
        items_backwards_cursor: None,
        file_restore: FileRestoreResult::default(),
    }
}

pub(crate) fn thread_rollback_params() -> ThreadRollbackParams {
    ThreadRollbackParams {
        thread_id: s(THREAD_ID),
        num_turns: 2,
        restore_files: None,
    }
}

pub(crate) fn thread_rollback_response() -> ThreadRollbackResponse {
    ThreadRollbackResponse {
        thread: thread(),
        file_restore: FileRestoreResult::default(),
    }
}

/// undo29: `thread/rollback` with the Tandem extension `restoreFiles`.
pub(crate) fn thread_rollback_restoring_params() -> ThreadRollbackParams {
    ThreadRollbackParams {
        thread_id: s(THREAD_ID),
        num_turns: 1,
        restore_files: Some(true),
    }
}

/// undo29: its answer, naming what was restored and what was left alone.
pub(crate) fn thread_rollback_restoring_response() -> ThreadRollbackResponse {
    ThreadRollbackResponse {
        thread: thread(),
        file_restore: FileRestoreResult {
            restored_files: Some(vec![s("/work/a.txt")]),
            skipped_files: Some(vec![SkippedFile {
                path: s("/work/b.txt"),
                reason: s("changed on disk since turn t2 wrote it"),
            }]),
            unrestorable_turns: Some(Vec::new()),
        },
    }
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

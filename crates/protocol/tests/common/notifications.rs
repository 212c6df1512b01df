//! Section 6: one value per server notification, and all of them.

use serde_json::json;
use tandem_protocol::*;

use super::*;

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
        // fs29:
        fs_changed(),
        // reason29:
        turn_plan_updated(),
        reasoning_summary_part_added(),
        reasoning_summary_text_delta(),
        reasoning_text_delta(),
        // apply29:
        file_change_patch_updated(),
        turn_diff_updated(),
        // mcp30:
        mcp_startup_status_updated(),
        mcp_tool_call_progress(),
    ]
}

//! Section 5: the server requests' params and results, and every server request as a whole
//! message.

use std::collections::BTreeMap;

use serde_json::json;
use tandem_protocol::*;

use super::*;

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

/// One request per server method.
pub(crate) fn server_requests() -> Vec<ServerRequest> {
    use server_methods as m;
    vec![
        request::<m::ToolCall>(0, tool_call_params()),
        request::<m::CommandExecutionRequestApproval>(1, approval_params()),
        request::<m::ToolRequestUserInput>(2, user_input_params()),
        // apply29:
        request::<m::FileChangeRequestApproval>(3, file_change_approval_params()),
        // mcp30:
        request::<m::McpServerElicitationRequest>(4, mcp_elicitation_params()),
    ]
}

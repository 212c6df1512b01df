//! Typed -> JSON text -> typed round trips for every method and result, plus the decoding
//! rules of docs/protocol.md sections 1, 4 and 7 that are easiest to state on typed values.

mod common;

use std::collections::BTreeSet;
use std::fmt::Debug;

use common::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tandem_protocol::error_codes::{INVALID_PARAMS, INVALID_REQUEST};
use tandem_protocol::*;

/// Through JSON text, as a transport would carry it.
fn through_text<T: Serialize + DeserializeOwned>(value: &T) -> T {
    let text = serde_json::to_string(value).expect("encode");
    serde_json::from_str(&text).unwrap_or_else(|err| panic!("decode {text}: {err}"))
}

fn set(methods: &[&str]) -> BTreeSet<String> {
    methods.iter().map(|m| (*m).to_owned()).collect()
}

fn assert_covers_exactly(covered: Vec<String>, methods: &[&str]) {
    let unique: BTreeSet<String> = covered.iter().cloned().collect();
    assert_eq!(unique.len(), covered.len(), "a method is covered twice");
    assert_eq!(unique, set(methods), "covered methods differ from METHODS");
}

#[test]
fn client_requests_round_trip() {
    let mut covered = Vec::new();
    for typed in client_requests() {
        let wire = typed.clone().into_jsonrpc().unwrap();
        assert_eq!(wire.method, typed.method());
        let JSONRPCMessage::Request(back) = through_text(&JSONRPCMessage::Request(wire.clone()))
        else {
            panic!("not a request")
        };
        assert_eq!(ClientRequest::try_from(back).unwrap(), typed);
        covered.push(typed.method().to_owned());
    }
    assert_covers_exactly(covered, ClientRequest::METHODS);
}

#[test]
fn server_requests_round_trip() {
    let mut covered = Vec::new();
    for typed in server_requests() {
        let wire = typed.clone().into_jsonrpc().unwrap();
        let JSONRPCMessage::Request(back) = through_text(&JSONRPCMessage::Request(wire)) else {
            panic!("not a request")
        };
        assert_eq!(ServerRequest::try_from(back).unwrap(), typed);
        assert_eq!(typed.thread_id(), Some(THREAD_ID));
        assert_eq!(typed.turn_id(), Some(TURN_ID));
        covered.push(typed.method().to_owned());
    }
    assert_covers_exactly(covered, ServerRequest::METHODS);
}

#[test]
fn client_notifications_round_trip() {
    let typed = ClientNotification::Initialized(EmptyParams {});
    let wire = typed.clone().into_jsonrpc().unwrap();
    assert_eq!(
        serde_json::to_value(&wire).unwrap(),
        json!({"method": "initialized", "params": {}})
    );
    let JSONRPCMessage::Notification(back) = through_text(&JSONRPCMessage::Notification(wire))
    else {
        panic!("not a notification")
    };
    assert_eq!(ClientNotification::try_from(back).unwrap(), typed);
    assert_eq!(ClientNotification::METHODS, &["initialized"]);
}

#[test]
fn server_notifications_round_trip() {
    let mut covered = Vec::new();
    for typed in server_notifications() {
        let mut wire = typed.clone().into_jsonrpc().unwrap();
        assert_eq!(wire.emitted_at_ms, None);
        wire.emitted_at_ms = Some(1_750_000_000_123);
        let JSONRPCMessage::Notification(back) = through_text(&JSONRPCMessage::Notification(wire))
        else {
            panic!("not a notification")
        };
        assert_eq!(back.emitted_at_ms, Some(1_750_000_000_123));
        assert_eq!(ServerNotification::try_from(back).unwrap(), typed);
        covered.push(typed.method().to_owned());
    }
    assert_covers_exactly(covered, ServerNotification::METHODS);
}

/// Round-trips one result value of method `M` and returns the method name for coverage.
fn result_round_trip<M>(value: M::Response) -> String
where
    M: RequestMethod,
    M::Response: PartialEq + Debug,
{
    assert_eq!(through_text(&value), value, "{} result", M::METHOD);
    M::METHOD.to_owned()
}

#[test]
fn client_request_results_round_trip() {
    use client_methods as m;
    let covered = vec![
        result_round_trip::<m::Initialize>(initialize_response()),
        result_round_trip::<m::ConfigRead>(config_read_response()),
        result_round_trip::<m::ThreadStart>(thread_start_response()),
        result_round_trip::<m::ThreadResume>(thread_resume_response()),
        result_round_trip::<m::ThreadRead>(thread_read_response()),
        result_round_trip::<m::ThreadList>(thread_list_response()),
        result_round_trip::<m::ThreadLoadedList>(thread_loaded_list_response()),
        result_round_trip::<m::ThreadTurnsList>(thread_turns_list_response()),
        result_round_trip::<m::ThreadItemsList>(thread_items_list_response()),
        result_round_trip::<m::ThreadUnsubscribe>(thread_unsubscribe_response()),
        result_round_trip::<m::ThreadNameSet>(EmptyResponse {}),
        result_round_trip::<m::ThreadFork>(thread_fork_response()),
        result_round_trip::<m::ThreadDelete>(EmptyResponse {}),
        result_round_trip::<m::ThreadAttachmentAdd>(thread_attachment_add_response()),
        result_round_trip::<m::ThreadAttachmentRemove>(EmptyResponse {}),
        result_round_trip::<m::TurnStart>(turn_start_response()),
        result_round_trip::<m::TurnSteer>(turn_steer_response()),
        result_round_trip::<m::TurnInterrupt>(EmptyResponse {}),
        result_round_trip::<m::ProcessSpawn>(EmptyResponse {}),
        result_round_trip::<m::ProcessWriteStdin>(EmptyResponse {}),
        result_round_trip::<m::ProcessKill>(EmptyResponse {}),
        result_round_trip::<m::ProcessResizePty>(EmptyResponse {}),
        result_round_trip::<m::ThreadArchive>(EmptyResponse {}),
        result_round_trip::<m::ThreadUnarchive>(thread_unarchive_response()),
        result_round_trip::<m::ThreadCompactStart>(EmptyResponse {}),
        result_round_trip::<m::ThreadRevert>(thread_revert_response()),
        result_round_trip::<m::ThreadRollback>(thread_rollback_response()),
        result_round_trip::<m::ThreadAttachmentList>(thread_attachment_list_response()),
        result_round_trip::<m::ModelList>(model_list_response()),
        result_round_trip::<m::AccountRead>(account_response()),
        result_round_trip::<m::ConfigValueWrite>(config_write_response()),
        result_round_trip::<m::ConfigBatchWrite>(config_write_response()),
        result_round_trip::<m::CommandExec>(command_exec_response()),
        result_round_trip::<m::CommandExecWrite>(EmptyResponse {}),
        result_round_trip::<m::CommandExecTerminate>(EmptyResponse {}),
        result_round_trip::<m::CommandExecResize>(EmptyResponse {}),
        // tui:
        result_round_trip::<m::ProcessScreen>(process_screen_response()),
        // procre:
        result_round_trip::<m::ProcessResume>(process_resume_response()),
        // attach19:
        result_round_trip::<m::ProcessShare>(process_share_response()),
        result_round_trip::<m::ProcessAttach>(process_attach_response()),
        // fs29:
        result_round_trip::<m::FsReadFile>(fs_read_file_response()),
        result_round_trip::<m::FsWriteFile>(EmptyResponse {}),
        result_round_trip::<m::FsCreateDirectory>(EmptyResponse {}),
        result_round_trip::<m::FsGetMetadata>(fs_get_metadata_response()),
        result_round_trip::<m::FsReadDirectory>(fs_read_directory_response()),
        result_round_trip::<m::FsRemove>(EmptyResponse {}),
        result_round_trip::<m::FsCopy>(EmptyResponse {}),
        result_round_trip::<m::FsWatch>(fs_watch_response()),
        result_round_trip::<m::FsUnwatch>(EmptyResponse {}),
        // search29:
        result_round_trip::<m::FuzzyFileSearch>(fuzzy_file_search_response()),
        result_round_trip::<m::ThreadShellCommand>(EmptyResponse {}),
        // mcp30:
        result_round_trip::<m::McpServerStatusList>(mcp_status_list_response()),
        result_round_trip::<m::McpServerToolCall>(mcp_tool_call_response()),
        result_round_trip::<m::McpServerResourceRead>(mcp_resource_read_response()),
        result_round_trip::<m::McpServerReload>(EmptyResponse {}),
    ];
    assert_covers_exactly(covered, ClientRequest::METHODS);
}

#[test]
fn server_request_results_round_trip() {
    use server_methods as m;
    let covered = vec![
        result_round_trip::<m::ToolCall>(tool_call_response()),
        result_round_trip::<m::CommandExecutionRequestApproval>(approval_response()),
        result_round_trip::<m::ToolRequestUserInput>(user_input_response()),
        result_round_trip::<m::FileChangeRequestApproval>(file_change_approval_response()),
        result_round_trip::<m::McpServerElicitationRequest>(mcp_elicitation_response()),
    ];
    assert_covers_exactly(covered, ServerRequest::METHODS);
}

#[test]
fn every_thread_status_and_decision_round_trips() {
    for status in [
        ThreadStatus::NotLoaded,
        ThreadStatus::Idle,
        ThreadStatus::SystemError,
        ThreadStatus::Active {
            active_flags: vec![],
        },
    ] {
        assert_eq!(through_text(&status), status);
    }
    for decision in CommandExecutionApprovalDecision::ALL {
        assert_eq!(through_text(&decision), decision);
    }
    for source in [
        SessionSource::Cli,
        SessionSource::Vscode,
        SessionSource::Exec,
        SessionSource::AppServer,
        SessionSource::Unknown,
        SessionSource::Custom("sdk".into()),
    ] {
        assert_eq!(through_text(&source), source);
    }
}

#[test]
fn custom_requests_keep_their_wire_shape() {
    let wire = json!({"id": "ext-1", "method": "tandem/ext", "params": {"x": [1, null], "y": {}}});
    let request: JSONRPCRequest = serde_json::from_value(wire.clone()).unwrap();
    let typed = ClientRequest::try_from(request.clone()).unwrap();
    assert_eq!(
        typed,
        ClientRequest::Custom {
            request_id: "ext-1".into(),
            method: "tandem/ext".into(),
            params: json!({"x": [1, null], "y": {}}),
        }
    );
    assert_eq!(typed.method(), "tandem/ext");
    assert_eq!(typed.experimental_reason(), None);
    assert_eq!(
        serde_json::to_value(typed.into_jsonrpc().unwrap()).unwrap(),
        wire
    );

    let typed = ServerRequest::try_from(request).unwrap();
    assert!(matches!(&typed, ServerRequest::Custom { method, .. } if method == "tandem/ext"));
    assert_eq!(typed.thread_id(), None);
    assert_eq!(
        serde_json::to_value(typed.into_jsonrpc().unwrap()).unwrap(),
        wire
    );

    // Omitted params become `{}`, the shape every typed method also sends.
    let bare: JSONRPCRequest = serde_json::from_value(json!({"id": 5, "method": "x/y"})).unwrap();
    let typed = ClientRequest::try_from(bare).unwrap();
    assert_eq!(
        serde_json::to_value(typed.into_jsonrpc().unwrap()).unwrap(),
        json!({"id": 5, "method": "x/y", "params": {}})
    );
}

#[test]
fn custom_notifications_keep_their_wire_shape() {
    let wire = json!({"method": "tandem/progress", "params": {"pct": 40, "label": "indexing"}});
    let notification: JSONRPCNotification = serde_json::from_value(wire.clone()).unwrap();

    let typed = ServerNotification::try_from(notification.clone()).unwrap();
    assert_eq!(
        typed,
        ServerNotification::Custom {
            method: "tandem/progress".into(),
            params: json!({"pct": 40, "label": "indexing"}),
        }
    );
    assert_eq!(typed.thread_id(), None);
    assert_eq!(
        serde_json::to_value(typed.into_jsonrpc().unwrap()).unwrap(),
        wire
    );

    let typed = ClientNotification::try_from(notification).unwrap();
    assert!(
        matches!(&typed, ClientNotification::Custom { method, .. } if method == "tandem/progress")
    );
    assert_eq!(
        serde_json::to_value(typed.into_jsonrpc().unwrap()).unwrap(),
        wire
    );
}

fn decode_client(wire: Value) -> Result<ClientRequest, JSONRPCErrorError> {
    ClientRequest::try_from(serde_json::from_value::<JSONRPCRequest>(wire).unwrap())
}

fn params_of(request: ClientRequest) -> Value {
    request.into_jsonrpc().unwrap().params.unwrap()
}

#[test]
fn three_state_overrides_distinguish_omitted_null_and_value() {
    for (params, expected) in [
        (json!({"threadId": "t"}), None),
        (json!({"threadId": "t", "model": null}), Some(None)),
        (
            json!({"threadId": "t", "model": "m"}),
            Some(Some("m".to_owned())),
        ),
    ] {
        let typed =
            decode_client(json!({"id": 1, "method": "thread/resume", "params": params})).unwrap();
        let ClientRequest::ThreadResume {
            params: typed_params,
            ..
        } = &typed
        else {
            panic!("not thread/resume: {typed:?}")
        };
        assert_eq!(typed_params.overrides.model, expected, "{params}");
        assert_eq!(params_of(typed), params, "re-encodes as it came");
    }
}

#[test]
fn three_state_fields_of_start_turn_and_spawn_re_encode_as_they_came() {
    let cases = [
        json!({"id": 1, "method": "thread/start", "params": {}}),
        json!({"id": 1, "method": "thread/start",
               "params": {"cwd": null, "name": null, "approvalPolicy": null, "config": null}}),
        json!({"id": 1, "method": "thread/start",
               "params": {"name": "n", "approvalPolicy": "never", "config": {"a_b": 1}}}),
        json!({"id": 2, "method": "turn/start",
               "params": {"threadId": "t", "input": [], "model": null, "approvalPolicy": null}}),
        json!({"id": 2, "method": "turn/start",
               "params": {"threadId": "t", "input": [], "model": "m"}}),
        json!({"id": 3, "method": "process/spawn",
               "params": {"processHandle": "h", "command": ["true"], "cwd": "/"}}),
        json!({"id": 3, "method": "process/spawn",
               "params": {"processHandle": "h", "command": ["true"], "cwd": "/",
                          "timeoutMs": null, "outputBytesCap": null}}),
        json!({"id": 3, "method": "process/spawn",
               "params": {"processHandle": "h", "command": ["true"], "cwd": "/",
                          "timeoutMs": 0, "outputBytesCap": 1}}),
    ];
    for wire in cases {
        let typed = decode_client(wire.clone()).unwrap();
        assert_eq!(params_of(typed), wire["params"], "{wire}");
    }

    let ClientRequest::ProcessSpawn { params, .. } = decode_client(json!({
        "id": 3, "method": "process/spawn",
        "params": {"processHandle": "h", "command": ["true"], "cwd": "/", "timeoutMs": null}
    }))
    .unwrap() else {
        panic!("not process/spawn")
    };
    assert_eq!(params.timeout_ms, Some(None));
    assert_eq!(params.output_bytes_cap, None);

    let ClientRequest::TurnStart { params, .. } = decode_client(json!({
        "id": 2, "method": "turn/start",
        "params": {"threadId": "t", "input": [], "approvalPolicy": null, "model": "m"}
    }))
    .unwrap() else {
        panic!("not turn/start")
    };
    assert_eq!(params.approval_policy, Some(None));
    assert_eq!(params.model, Some(Some("m".to_owned())));
}

#[test]
fn client_built_requests_omit_what_they_did_not_set() {
    let typed = request::<client_methods::ThreadStart>(1, ThreadStartParams::default());
    assert_eq!(params_of(typed), json!({}));
    let typed = request::<client_methods::ThreadList>(1, ThreadListParams::default());
    assert_eq!(params_of(typed), json!({}));
    let typed = request::<client_methods::TurnStart>(
        1,
        TurnStartParams {
            thread_id: "t".into(),
            input: vec![UserInput::text("hi")],
            ..Default::default()
        },
    );
    assert_eq!(
        params_of(typed),
        json!({"threadId": "t", "input": [{"type": "text", "text": "hi", "text_elements": []}]})
    );
}

fn assert_invalid_request(wire: Value, expected_detail: &str) {
    let err = decode_client(wire.clone()).expect_err("params must not decode");
    assert_eq!(err.code, INVALID_REQUEST, "{wire}");
    assert!(
        err.message.starts_with("Invalid request: "),
        "{wire}: {}",
        err.message
    );
    assert!(
        err.message.contains(expected_detail),
        "{wire}: {:?} does not mention {expected_detail:?}",
        err.message
    );
}

#[test]
fn bad_params_are_invalid_requests() {
    assert_invalid_request(
        json!({"id": 1, "method": "thread/read", "params": {}}),
        "missing field `threadId`",
    );
    // Flattened overrides must not hide which member is missing.
    assert_invalid_request(
        json!({"id": 1, "method": "thread/resume", "params": {"model": "m"}}),
        "missing field `threadId`",
    );
    assert_invalid_request(
        json!({"id": 1, "method": "thread/fork", "params": null}),
        "missing field `threadId`",
    );
    assert_invalid_request(
        json!({"id": 1, "method": "thread/read", "params": {"threadId": 123}}),
        "invalid type: integer `123`, expected a string",
    );
    assert_invalid_request(
        json!({"id": 1, "method": "turn/steer",
               "params": {"threadId": "t", "input": []}}),
        "missing field `expectedTurnId`",
    );
    assert_invalid_request(
        json!({"id": 1, "method": "thread/attachment/add",
               "params": {"threadId": "t", "attachmentType": "a", "identityKey": "k"}}),
        "missing field `payload`",
    );
    assert_invalid_request(
        json!({"id": 1, "method": "turn/start",
               "params": {"threadId": "t", "input": [{"type": "video", "url": "x"}]}}),
        "unknown variant `video`",
    );
    assert_invalid_request(
        json!({"id": 1, "method": "turn/start",
               "params": {"threadId": "t", "input": [{"text": "no type"}]}}),
        "missing field `type`",
    );
    assert_invalid_request(
        json!({"id": 1, "method": "thread/start", "params": {"approvalPolicy": "always"}}),
        "unknown variant `always`",
    );
    assert_invalid_request(
        json!({"id": 1, "method": "thread/list", "params": {"sortDirection": "up"}}),
        "unknown variant `up`",
    );
    assert_invalid_request(
        json!({"id": 1, "method": "process/resizePty",
               "params": {"processHandle": "h", "size": {"rows": 70000, "cols": 1}}}),
        "Invalid request: ",
    );

    let bad_notification: JSONRPCNotification =
        serde_json::from_value(json!({"method": "thread/closed", "params": {}})).unwrap();
    let err = ServerNotification::try_from(bad_notification).unwrap_err();
    assert_eq!(err.code, INVALID_REQUEST);
    assert_eq!(err.message, "Invalid request: missing field `threadId`");
}

#[test]
fn unknown_members_are_ignored() {
    let typed = decode_client(json!({"id": 1, "method": "thread/read",
        "params": {"threadId": "t", "includeTurns": true, "futureMember": [1, 2]}}))
    .unwrap();
    assert_eq!(
        typed,
        request::<client_methods::ThreadRead>(
            1,
            ThreadReadParams {
                thread_id: "t".into(),
                include_turns: Some(true),
            }
        )
    );
    // Client replies to server requests, and everything a client may read back.
    let reply: ToolCallResponse = serde_json::from_value(json!({
        "contentItems": [{"type": "inputText", "text": "ok", "extra": 1}],
        "success": false, "extra": true
    }))
    .unwrap();
    assert!(!reply.success);
    let mut thread_json = serde_json::to_value(thread()).unwrap();
    thread_json["gitInfo"] = json!({"branch": "main"});
    assert_eq!(
        serde_json::from_value::<Thread>(thread_json).unwrap(),
        thread()
    );
}

#[test]
fn exited_without_drain_flag_reads_as_complete() {
    let notification: JSONRPCNotification = serde_json::from_value(json!({
        "method": "process/exited",
        "emittedAtMs": 1,
        "params": {"processHandle": "build", "exitCode": 0, "stdout": "ok\n",
                   "stdoutCapReached": false, "stderr": "", "stderrCapReached": false}
    }))
    .unwrap();
    let ServerNotification::ProcessExited(exited) =
        ServerNotification::try_from(notification).unwrap()
    else {
        panic!("not process/exited")
    };
    assert!(!exited.output_drain_timed_out);
    assert_eq!(exited.exit_code, 0);
    assert_eq!(exited.stdout, "ok\n");
    // The member is always sent.
    let out = serde_json::to_value(&exited).unwrap();
    assert_eq!(out["outputDrainTimedOut"], json!(false));
}

/// The exact JSON of a delta: `deltaBase64` is standard padded base64 of the bytes, and the
/// bytes come back unchanged, for every byte value and for no bytes at all.
#[test]
fn process_bytes_are_base64_on_the_wire_and_unchanged_in_between() {
    let all_bytes: Vec<u8> = (0..=255).collect();
    // Standard alphabet with padding, computed independently of the codec under test.
    let expected_all = standard_base64(&all_bytes);
    for (bytes, expected) in [
        (all_bytes.clone(), expected_all),
        (Vec::new(), String::new()),
    ] {
        let delta = ProcessOutputDeltaNotification {
            process_handle: s("build"),
            stream: ProcessOutputStream::Stderr,
            delta: Bytes::from(bytes.clone()),
            cap_reached: false,
        };
        let notification = ServerNotification::ProcessOutputDelta(delta.clone());
        let wire = serde_json::to_value(notification.clone().into_jsonrpc().unwrap()).unwrap();
        assert_eq!(
            wire,
            json!({"method": "process/outputDelta", "params": {
                "processHandle": "build", "stream": "stderr",
                "deltaBase64": expected, "capReached": false}})
        );
        let text = serde_json::to_string(&wire).unwrap();
        let back: JSONRPCNotification = serde_json::from_str(&text).unwrap();
        assert_eq!(ServerNotification::try_from(back).unwrap(), notification);

        let write = ClientRequest::ProcessWriteStdin {
            request_id: RequestId::Integer(3),
            params: ProcessWriteStdinParams {
                process_handle: s("build"),
                delta: Some(Bytes::from(bytes.clone())),
                close_stdin: None,
            },
        };
        let wire = serde_json::to_value(write.clone().into_jsonrpc().unwrap()).unwrap();
        assert_eq!(
            wire,
            json!({"id": 3, "method": "process/writeStdin",
                   "params": {"processHandle": "build", "deltaBase64": expected}})
        );
        let back: JSONRPCRequest = serde_json::from_value(wire).unwrap();
        assert_eq!(ClientRequest::try_from(back).unwrap(), write);
    }
}

#[test]
fn bad_base64_is_invalid_params_and_null_is_no_bytes() {
    let error = decode_client(json!({"id": 1, "method": "process/writeStdin",
        "params": {"processHandle": "p", "deltaBase64": "not base64!"}}))
    .unwrap_err();
    assert_eq!(error.code, error_codes::INVALID_PARAMS);
    assert!(
        error.message.starts_with("invalid deltaBase64: "),
        "{}",
        error.message
    );
    // The wrong type is a shape error, like any other member's.
    let error = decode_client(json!({"id": 1, "method": "process/writeStdin",
        "params": {"processHandle": "p", "deltaBase64": 7}}))
    .unwrap_err();
    assert_eq!(error.code, error_codes::INVALID_REQUEST);
    let request = decode_client(json!({"id": 1, "method": "process/writeStdin",
        "params": {"processHandle": "p", "deltaBase64": null, "closeStdin": true}}))
    .unwrap();
    let ClientRequest::ProcessWriteStdin { params, .. } = request else {
        panic!("not writeStdin")
    };
    assert_eq!(params.delta, None);
}

/// RFC 4648 base64 with padding, written out here so the test does not trust the codec.
fn standard_base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for group in bytes.chunks(3) {
        let n = group
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, byte)| n | u32::from(*byte) << (16 - 8 * i));
        for i in 0..4 {
            if i <= group.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[test]
fn approval_policy_input_spellings_map_to_canonical() {
    for (input, expected) in [
        (json!("never"), ApprovalPolicy::Never),
        (json!("on-request"), ApprovalPolicy::OnRequest),
        (json!("onRequest"), ApprovalPolicy::OnRequest),
        (json!("untrusted"), ApprovalPolicy::OnRequest),
        (json!("on-failure"), ApprovalPolicy::OnRequest),
        (
            json!({"granular": {"sandbox_approval": true, "rules": false}}),
            ApprovalPolicy::OnRequest,
        ),
        (json!({"granular": {}}), ApprovalPolicy::OnRequest),
    ] {
        let policy: ApprovalPolicy = serde_json::from_value(input.clone()).unwrap();
        assert_eq!(policy, expected, "{input}");
        let canonical = serde_json::to_value(policy).unwrap();
        assert_eq!(canonical, json!(expected.as_str()));
        assert!(canonical == json!("never") || canonical == json!("on-request"));

        // Through a request, the re-encoded params carry the canonical spelling.
        let typed = decode_client(json!({"id": 1, "method": "thread/start",
                                         "params": {"approvalPolicy": input}}))
        .unwrap();
        assert_eq!(
            params_of(typed),
            json!({"approvalPolicy": expected.as_str()})
        );
    }
    for bad in [
        json!("always"),
        json!("Never"),
        json!(1),
        json!(null),
        json!({"other": {}}),
        json!({"granular": {}, "other": 1}),
    ] {
        assert!(
            serde_json::from_value::<ApprovalPolicy>(bad.clone()).is_err(),
            "{bad} must not decode"
        );
    }
}

#[test]
fn unsupported_input_types_decode_and_are_rejected_with_invalid_params() {
    for kind in UnsupportedInputKind::ALL {
        let name = kind.as_str();
        // An `image` by `fileId` (one with a `url` is supported).
        let input = json!({"type": name, "fileId": "file-1", "name": "x"});
        let typed = decode_client(json!({"id": 1, "method": "turn/start",
            "params": {"threadId": "t", "input": [{"type": "text", "text": "see"}, input]}}))
        .unwrap_or_else(|err| panic!("{name} must decode: {err}"));
        let ClientRequest::TurnStart { params, .. } = &typed else {
            panic!("not turn/start")
        };
        assert_eq!(params.input[0], UserInput::text("see"));
        assert!(
            matches!(&params.input[1], UserInput::Unsupported { kind: k, .. } if k == kind),
            "{name}: {:?}",
            params.input[1]
        );
        assert_eq!(params.input[1].kind(), name);
        let err = UserInput::ensure_all_supported(&params.input).unwrap_err();
        assert_eq!(err.code, INVALID_PARAMS);
        assert_eq!(err.message, format!("unsupported input type: {name}"));
        // Members are kept, so the value re-encodes unchanged.
        assert_eq!(serde_json::to_value(&params.input[1]).unwrap(), input);
    }
    assert!(UserInput::ensure_all_supported(&[UserInput::text("ok")]).is_ok());
}

#[test]
fn text_elements_are_optional_on_input_and_empty_on_output() {
    for input in [
        json!({"type": "text", "text": "hi"}),
        json!({"type": "text", "text": "hi", "text_elements": []}),
        json!({"type": "text", "text": "hi",
               "text_elements": [{"byteRange": {"start": 0, "end": 2}, "placeholder": null}]}),
    ] {
        let typed: UserInput = serde_json::from_value(input.clone()).unwrap();
        assert_eq!(typed, UserInput::text("hi"), "{input}");
        assert_eq!(
            serde_json::to_value(&typed).unwrap(),
            json!({"type": "text", "text": "hi", "text_elements": []})
        );
    }
    assert!(serde_json::from_value::<UserInput>(json!({"type": "text"})).is_err());
}

#[test]
fn experimental_reasons_name_methods_and_fields() {
    let with_tools = request::<client_methods::ThreadStart>(
        1,
        ThreadStartParams {
            dynamic_tools: Some(vec![lookup_tool()]),
            ..Default::default()
        },
    );
    assert_eq!(
        with_tools.experimental_reason().as_deref(),
        Some("thread/start.dynamicTools")
    );
    let without = request::<client_methods::ThreadStart>(1, ThreadStartParams::default());
    assert_eq!(without.experimental_reason(), None);
    let null_tools =
        decode_client(json!({"id": 1, "method": "thread/start", "params": {"dynamicTools": null}}))
            .unwrap();
    assert_eq!(null_tools.experimental_reason(), None);
    let empty_tools =
        decode_client(json!({"id": 1, "method": "thread/start", "params": {"dynamicTools": []}}))
            .unwrap();
    assert_eq!(
        empty_tools.experimental_reason().as_deref(),
        Some("thread/start.dynamicTools")
    );

    // Every experimental method and field is reported by some sample, and nothing else is.
    let mut reported = BTreeSet::new();
    for typed in client_requests() {
        let method = typed.method().to_owned();
        match typed.experimental_reason() {
            Some(reason) => {
                assert!(reason == method || reason.starts_with(&format!("{method}.")));
                reported.insert(reason);
            }
            None => assert!(!EXPERIMENTAL_CLIENT_METHODS.contains(&method.as_str())),
        }
    }
    let mut expected: BTreeSet<String> = set(EXPERIMENTAL_CLIENT_METHODS);
    expected.extend(EXPERIMENTAL_FIELDS.iter().map(|(m, f)| format!("{m}.{f}")));
    assert_eq!(reported, expected);
    assert!(is_experimental_field("thread/start", "dynamicTools"));
    assert!(!is_experimental_field("thread/resume", "dynamicTools"));

    for typed in client_requests() {
        assert_eq!(
            typed.is_process_control(),
            // `command/exec` itself answers after its output, on the ordinary lane, and so
            // does `process/resume` after what it replays, and `process/attach` after the
            // attachment it waits for.
            (typed.method().starts_with("process/")
                && typed.method() != "process/resume"
                && typed.method() != "process/attach")
                || typed.method().starts_with("command/exec/"),
            "{}",
            typed.method()
        );
    }
    for method in ServerNotification::METHODS {
        assert_eq!(
            is_experimental_notification(method),
            method.starts_with("process/"),
            "{method}"
        );
    }
}

#[test]
fn approval_decisions_read_other_clients_words_and_decline_the_rest() {
    for (answer, expected) in [
        (json!("accept"), CommandExecutionApprovalDecision::Accept),
        (
            json!("acceptForSession"),
            CommandExecutionApprovalDecision::AcceptForSession,
        ),
        (json!("decline"), CommandExecutionApprovalDecision::Decline),
        (json!("cancel"), CommandExecutionApprovalDecision::Cancel),
        // codexed's vocabulary and the legacy `execCommandApproval` one.
        (json!("allow"), CommandExecutionApprovalDecision::Accept),
        (
            json!("allowForSession"),
            CommandExecutionApprovalDecision::AcceptForSession,
        ),
        (json!("approved"), CommandExecutionApprovalDecision::Accept),
        (
            json!("approved_for_session"),
            CommandExecutionApprovalDecision::AcceptForSession,
        ),
        (json!("abort"), CommandExecutionApprovalDecision::Cancel),
        (json!("deny"), CommandExecutionApprovalDecision::Decline),
        (
            json!("denyForSession"),
            CommandExecutionApprovalDecision::Decline,
        ),
        (json!("denied"), CommandExecutionApprovalDecision::Decline),
        (json!("Accept"), CommandExecutionApprovalDecision::Decline),
        (
            json!({"acceptWithExecpolicyAmendment": {"execpolicy_amendment": ["ls"]}}),
            CommandExecutionApprovalDecision::Decline,
        ),
        (json!(null), CommandExecutionApprovalDecision::Decline),
    ] {
        let reply: CommandExecutionRequestApprovalResponse =
            serde_json::from_value(json!({"decision": answer})).unwrap();
        assert_eq!(reply.decision, expected, "{answer}");
    }
}

#[test]
fn dynamic_tool_spec_type_defaults_to_function_and_rejects_others() {
    let spec: DynamicToolSpec = serde_json::from_value(json!({
        "name": "lookup", "description": "d", "inputSchema": {"type": "object"}
    }))
    .unwrap();
    assert_eq!(spec.kind, DynamicToolType::Function);
    assert_eq!(spec.defer_loading, None);
    assert_eq!(
        serde_json::to_value(&spec).unwrap(),
        json!({"type": "function", "name": "lookup", "description": "d",
               "inputSchema": {"type": "object"}})
    );
    assert!(
        serde_json::from_value::<DynamicToolSpec>(json!({
            "type": "mcp", "name": "lookup", "description": "d", "inputSchema": {}
        }))
        .is_err()
    );
}

#[test]
fn notifications_name_their_thread() {
    for typed in server_notifications() {
        let expected = match typed.method() {
            "process/outputDelta"
            | "process/exited"
            | "command/exec/outputDelta"
            | "fs/changed"
            // mcp30: a server's startup is about no thread (sent to every connection).
            | "mcpServer/startupStatus/updated" => None,
            "thread/started" | "thread/deleted" => Some(FORK_ID),
            _ => Some(THREAD_ID),
        };
        assert_eq!(typed.thread_id(), expected, "{}", typed.method());
    }
}

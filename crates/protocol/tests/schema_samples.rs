//! The generated JSON Schema says what the codec does: every typed sample of `common`,
//! serialized as a transport would send it, validates against the schema of its message, and
//! deliberately wrong values (an unknown method, a missing or mistyped member, an experimental
//! method against the stable schema) do not.

#![cfg(feature = "schema")]

mod common;

use std::collections::BTreeSet;

use common::*;
use jsonschema::Validator;
use serde::Serialize;
use serde_json::{Value, json};
use tandem_protocol::schema::{BUNDLE_FILE_NAME, json_schema_files};
use tandem_protocol::*;

/// The bundle and its per-type files, with or without the experimental API.
struct Schemas {
    bundle: Value,
    files: Vec<(String, Value)>,
}

impl Schemas {
    fn generate(experimental: bool) -> Self {
        let files: Vec<(String, Value)> = json_schema_files(experimental)
            .unwrap()
            .into_iter()
            .map(|file| (file.path, serde_json::from_str(&file.contents).unwrap()))
            .collect();
        let bundle = files
            .iter()
            .find(|(path, _)| path == BUNDLE_FILE_NAME)
            .map(|(_, schema)| schema.clone())
            .unwrap();
        Self { bundle, files }
    }

    /// A validator for the schema at `pointer` under `definitions` of the bundle, e.g.
    /// `ClientRequest` or `ClientRequestResponses/properties/thread~1start`.
    fn definition(&self, pointer: &str) -> Validator {
        let schema = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "definitions": self.bundle["definitions"],
            "allOf": [{"$ref": format!("#/definitions/{pointer}")}],
        });
        assert!(
            self.bundle
                .pointer(&format!("/definitions/{pointer}"))
                .is_some(),
            "no definition {pointer}"
        );
        jsonschema::draft7::new(&schema).unwrap_or_else(|err| panic!("{pointer}: {err}"))
    }

    /// A validator for one per-type file, as an SDK would load it.
    fn file(&self, name: &str) -> Validator {
        let (_, schema) = self
            .files
            .iter()
            .find(|(path, _)| path == &format!("{name}.json"))
            .unwrap_or_else(|| panic!("no {name}.json"));
        jsonschema::draft7::new(schema).unwrap()
    }

    /// The bundle's root: any one message.
    fn any_message(&self) -> Validator {
        jsonschema::draft7::new(&self.bundle).unwrap()
    }
}

/// The JSON-RPC method name escaped for a JSON pointer.
fn escaped(method: &str) -> String {
    method.replace('~', "~0").replace('/', "~1")
}

fn assert_valid(validator: &Validator, value: &Value, what: &str) {
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|error| format!("{} at {}", error, error.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{what} should validate: {errors:#?}\n{value:#}"
    );
}

fn assert_invalid(validator: &Validator, value: &Value, what: &str) {
    assert!(
        !validator.is_valid(value),
        "{what} should not validate:\n{value:#}"
    );
}

fn to_json(value: &impl Serialize) -> Value {
    serde_json::to_value(value).unwrap()
}

fn request<M: RequestMethod>(id: impl Into<RequestId>, params: M::Params) -> M::Request {
    M::into_request(id.into(), params)
}

fn client_requests() -> Vec<ClientRequest> {
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
        request::<m::ModelList>(20, model_list_params()),
        request::<m::AccountRead>(
            21,
            GetAccountParams {
                refresh_token: None,
            },
        ),
        request::<m::ConfigValueWrite>(22, config_value_write_params()),
        request::<m::ConfigBatchWrite>(23, config_batch_write_params()),
        request::<m::ThreadItemsList>(24, thread_items_list_params()),
        request::<m::ThreadArchive>(25, thread_archive_params()),
        request::<m::ThreadUnarchive>(26, thread_unarchive_params()),
        request::<m::ThreadCompactStart>(27, thread_compact_start_params()),
        request::<m::ThreadRevert>(28, thread_revert_params()),
        request::<m::ThreadRollback>(29, thread_rollback_params()),
        request::<m::ThreadAttachmentList>(30, thread_attachment_list_params()),
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

/// `(method, result)` for every client request method.
fn client_results() -> Vec<(&'static str, Value)> {
    use client_methods as m;
    fn result<M: RequestMethod>(value: M::Response) -> (&'static str, Value) {
        (M::METHOD, to_json(&value))
    }
    vec![
        result::<m::Initialize>(initialize_response()),
        result::<m::ConfigRead>(config_read_response()),
        result::<m::ThreadStart>(thread_start_response()),
        result::<m::ThreadResume>(thread_resume_response()),
        result::<m::ThreadRead>(thread_read_response()),
        result::<m::ThreadList>(thread_list_response()),
        result::<m::ThreadLoadedList>(thread_loaded_list_response()),
        result::<m::ThreadTurnsList>(thread_turns_list_response()),
        result::<m::ThreadItemsList>(thread_items_list_response()),
        result::<m::ThreadUnsubscribe>(thread_unsubscribe_response()),
        result::<m::ThreadNameSet>(EmptyResponse {}),
        result::<m::ThreadFork>(thread_fork_response()),
        result::<m::ThreadDelete>(EmptyResponse {}),
        result::<m::ThreadAttachmentAdd>(thread_attachment_add_response()),
        result::<m::ThreadAttachmentRemove>(EmptyResponse {}),
        result::<m::TurnStart>(turn_start_response()),
        result::<m::TurnSteer>(turn_steer_response()),
        result::<m::TurnInterrupt>(EmptyResponse {}),
        result::<m::ProcessSpawn>(EmptyResponse {}),
        result::<m::ProcessWriteStdin>(EmptyResponse {}),
        result::<m::ProcessKill>(EmptyResponse {}),
        result::<m::ProcessResizePty>(EmptyResponse {}),
        result::<m::ModelList>(model_list_response()),
        result::<m::AccountRead>(account_response()),
        result::<m::ConfigValueWrite>(config_write_response()),
        result::<m::ConfigBatchWrite>(config_write_response()),
        result::<m::ThreadArchive>(EmptyResponse {}),
        result::<m::ThreadUnarchive>(thread_unarchive_response()),
        result::<m::ThreadCompactStart>(EmptyResponse {}),
        result::<m::ThreadRevert>(thread_revert_response()),
        result::<m::ThreadRollback>(thread_rollback_response()),
        result::<m::ThreadAttachmentList>(thread_attachment_list_response()),
        result::<m::CommandExec>(command_exec_response()),
        result::<m::CommandExecWrite>(EmptyResponse {}),
        result::<m::CommandExecTerminate>(EmptyResponse {}),
        result::<m::CommandExecResize>(EmptyResponse {}),
        // tui:
        result::<m::ProcessScreen>(process_screen_response()),
        // procre:
        result::<m::ProcessResume>(process_resume_response()),
        // attach19:
        result::<m::ProcessShare>(process_share_response()),
        result::<m::ProcessAttach>(process_attach_response()),
        // fs29:
        result::<m::FsReadFile>(fs_read_file_response()),
        result::<m::FsWriteFile>(EmptyResponse {}),
        result::<m::FsCreateDirectory>(EmptyResponse {}),
        result::<m::FsGetMetadata>(fs_get_metadata_response()),
        result::<m::FsReadDirectory>(fs_read_directory_response()),
        result::<m::FsRemove>(EmptyResponse {}),
        result::<m::FsCopy>(EmptyResponse {}),
        result::<m::FsWatch>(fs_watch_response()),
        result::<m::FsUnwatch>(EmptyResponse {}),
        // search29:
        result::<m::FuzzyFileSearch>(fuzzy_file_search_response()),
        result::<m::ThreadShellCommand>(EmptyResponse {}),
        // mcp30:
        result::<m::McpServerStatusList>(mcp_status_list_response()),
        result::<m::McpServerToolCall>(mcp_tool_call_response()),
        result::<m::McpServerResourceRead>(mcp_resource_read_response()),
        result::<m::McpServerReload>(EmptyResponse {}),
    ]
}

fn server_results() -> Vec<(&'static str, Value)> {
    use server_methods as m;
    vec![
        (m::ToolCall::METHOD, to_json(&tool_call_response())),
        (
            m::CommandExecutionRequestApproval::METHOD,
            to_json(&approval_response()),
        ),
        (
            m::ToolRequestUserInput::METHOD,
            to_json(&user_input_response()),
        ),
        (
            m::FileChangeRequestApproval::METHOD,
            to_json(&file_change_approval_response()),
        ),
        (
            m::McpServerElicitationRequest::METHOD,
            to_json(&mcp_elicitation_response()),
        ),
    ]
}

/// A request as a transport puts it on the wire.
fn wire_request(request: JSONRPCRequest) -> Value {
    to_json(&JSONRPCMessage::Request(request))
}

fn assert_covers(methods: impl IntoIterator<Item = String>, expected: &[&str]) {
    let covered: BTreeSet<String> = methods.into_iter().collect();
    let expected: BTreeSet<String> = expected.iter().map(|m| (*m).to_owned()).collect();
    assert_eq!(covered, expected, "the samples must cover every method");
}

#[test]
fn every_client_request_sample_validates_and_experimental_ones_only_when_included() {
    let stable = Schemas::generate(false);
    let experimental = Schemas::generate(true);
    let (stable_union, stable_file, stable_any) = (
        stable.definition("ClientRequest"),
        stable.file("ClientRequest"),
        stable.any_message(),
    );
    let (union, file, any) = (
        experimental.definition("ClientRequest"),
        experimental.file("ClientRequest"),
        experimental.any_message(),
    );
    let mut covered = Vec::new();
    for typed in client_requests() {
        let method = typed.method().to_owned();
        let wire = wire_request(typed.into_jsonrpc().unwrap());
        assert_valid(&union, &wire, &method);
        assert_valid(&file, &wire, &method);
        assert_valid(&any, &wire, &method);
        if EXPERIMENTAL_CLIENT_METHODS.contains(&method.as_str()) {
            assert_invalid(&stable_union, &wire, &format!("{method} (experimental)"));
            assert_invalid(&stable_file, &wire, &format!("{method} (experimental)"));
            assert_invalid(&stable_any, &wire, &format!("{method} (experimental)"));
        } else {
            assert_valid(&stable_union, &wire, &method);
            assert_valid(&stable_file, &wire, &method);
            assert_valid(&stable_any, &wire, &method);
        }
        covered.push(method);
    }
    assert_covers(covered, ClientRequest::METHODS);
}

#[test]
fn every_server_request_sample_validates() {
    for schemas in [Schemas::generate(false), Schemas::generate(true)] {
        let union = schemas.definition("ServerRequest");
        let file = schemas.file("ServerRequest");
        let any = schemas.any_message();
        let mut covered = Vec::new();
        for typed in server_requests() {
            let method = typed.method().to_owned();
            let wire = wire_request(typed.into_jsonrpc().unwrap());
            assert_valid(&union, &wire, &method);
            assert_valid(&file, &wire, &method);
            assert_valid(&any, &wire, &method);
            covered.push(method);
        }
        assert_covers(covered, ServerRequest::METHODS);
    }
}

#[test]
fn every_result_sample_validates_against_the_result_type_of_its_method() {
    let stable = Schemas::generate(false);
    let experimental = Schemas::generate(true);
    for (table, results, methods) in [
        (
            "ClientRequestResponses",
            client_results(),
            ClientRequest::METHODS,
        ),
        (
            "ServerRequestResponses",
            server_results(),
            ServerRequest::METHODS,
        ),
    ] {
        let mut covered = Vec::new();
        for (method, result) in results {
            let pointer = format!("{table}/properties/{}", escaped(method));
            assert_valid(&experimental.definition(&pointer), &result, method);
            if !EXPERIMENTAL_CLIENT_METHODS.contains(&method) {
                assert_valid(&stable.definition(&pointer), &result, method);
            }
            // The envelope around it is a response whatever the method.
            let response = to_json(&JSONRPCResponse {
                id: RequestId::Integer(7),
                result,
            });
            assert_valid(&experimental.file("JSONRPCResponse"), &response, method);
            assert_valid(&experimental.any_message(), &response, method);
            covered.push(method.to_owned());
        }
        assert_covers(covered, methods);
    }
    // The table names every method of its union, and only those of the set.
    let stable_table = &stable.bundle["definitions"]["ClientRequestResponses"]["properties"];
    for method in ClientRequest::METHODS {
        let experimental_method = EXPERIMENTAL_CLIENT_METHODS.contains(method);
        assert_eq!(
            stable_table.get(*method).is_none(),
            experimental_method,
            "{method}"
        );
    }
}

#[test]
fn every_notification_sample_validates_and_experimental_ones_only_when_included() {
    let stable = Schemas::generate(false);
    let experimental = Schemas::generate(true);
    let mut covered = Vec::new();
    for typed in server_notifications() {
        let method = typed.method().to_owned();
        let mut wire = to_json(&JSONRPCMessage::Notification(typed.into_jsonrpc().unwrap()));
        let stamped = {
            let mut stamped = wire.clone();
            stamped["emittedAtMs"] = json!(1_750_000_000_123_i64);
            stamped
        };
        for value in [&wire, &stamped] {
            assert_valid(
                &experimental.definition("ServerNotification"),
                value,
                &method,
            );
            assert_valid(&experimental.file("ServerNotification"), value, &method);
            assert_valid(&experimental.any_message(), value, &method);
            if EXPERIMENTAL_NOTIFICATION_METHODS.contains(&method.as_str()) {
                let what = format!("{method} (experimental)");
                assert_invalid(&stable.definition("ServerNotification"), value, &what);
                assert_invalid(&stable.any_message(), value, &what);
            } else {
                assert_valid(&stable.definition("ServerNotification"), value, &method);
                assert_valid(&stable.any_message(), value, &method);
            }
        }
        wire["emittedAtMs"] = json!("yesterday");
        assert_invalid(
            &experimental.definition("ServerNotification"),
            &wire,
            "a string emittedAtMs",
        );
        covered.push(method);
    }
    assert_covers(covered, ServerNotification::METHODS);

    let initialized = ClientNotification::Initialized(EmptyParams {});
    let wire = to_json(&JSONRPCMessage::Notification(
        initialized.into_jsonrpc().unwrap(),
    ));
    for schemas in [&stable, &experimental] {
        assert_valid(&schemas.file("ClientNotification"), &wire, "initialized");
        assert_valid(&schemas.any_message(), &wire, "initialized");
    }
}

#[test]
fn envelope_samples_validate() {
    let schemas = Schemas::generate(false);
    let parse_error = to_json(&JSONRPCError {
        id: None,
        error: JSONRPCErrorError::new(error_codes::PARSE_ERROR, "Parse error: expected value"),
    });
    let overloaded = to_json(&JSONRPCError {
        id: Some(RequestId::String("req-1".into())),
        error: JSONRPCErrorError {
            data: Some(json!({"queue": "requests"})),
            ..JSONRPCErrorError::overloaded("request queue is full")
        },
    });
    for error in [&parse_error, &overloaded] {
        assert_valid(&schemas.file("JSONRPCError"), error, "error");
        assert_valid(&schemas.file("JSONRPCMessage"), error, "error");
        assert_valid(&schemas.any_message(), error, "error");
    }
    let untyped = to_json(&JSONRPCMessage::Request(JSONRPCRequest {
        id: RequestId::Integer(1),
        method: "embedder/extension".into(),
        params: None,
    }));
    // The envelope takes any method; the typed messages do not (`Custom` is not in the schema).
    assert_valid(&schemas.file("JSONRPCMessage"), &untyped, "untyped request");
    assert_invalid(&schemas.any_message(), &untyped, "an unknown method");
    assert_invalid(
        &schemas.file("JSONRPCError"),
        &json!({"id": 1, "error": {"code": "bad"}}),
        "an error without a message",
    );
}

/// A stable sample as JSON, for the wrong-value tests to break.
fn sample_request(method: &str) -> Value {
    let typed = client_requests()
        .into_iter()
        .find(|request| request.method() == method)
        .unwrap();
    wire_request(typed.into_jsonrpc().unwrap())
}

#[test]
fn wrong_requests_do_not_validate() {
    let schemas = Schemas::generate(false);
    let requests = schemas.definition("ClientRequest");

    let mut unknown = sample_request("thread/read");
    unknown["method"] = json!("thread/frobnicate");
    assert_invalid(&requests, &unknown, "an unknown method");

    let mut missing = sample_request("thread/read");
    missing["params"]
        .as_object_mut()
        .unwrap()
        .remove("threadId");
    assert_invalid(&requests, &missing, "thread/read without threadId");

    let mut no_id = sample_request("thread/read");
    no_id.as_object_mut().unwrap().remove("id");
    assert_invalid(&requests, &no_id, "a request without id");

    let mut mistyped = sample_request("turn/steer");
    mistyped["params"]["threadId"] = json!(123);
    assert_invalid(&requests, &mistyped, "a numeric threadId");

    let mut bad_input = sample_request("turn/start");
    bad_input["params"]["input"] = json!([{"type": "audio", "url": "https://example.invalid"}]);
    assert_invalid(&requests, &bad_input, "an unsupported input type");

    // The schema describes the canonical spellings only (see docs/protocol/README.md); the
    // codec also reads the spellings of existing clients.
    let mut alias = sample_request("thread/start");
    alias["params"]["approvalPolicy"] = json!("untrusted");
    assert_invalid(&requests, &alias, "a non-canonical approvalPolicy");
    let decoded =
        ClientRequest::try_from(serde_json::from_value::<JSONRPCRequest>(alias.clone()).unwrap())
            .unwrap();
    assert!(matches!(
        decoded,
        ClientRequest::ThreadStart { params, .. }
            if params.overrides.approval_policy == Some(Some(ApprovalPolicy::OnRequest))
    ));
    alias["params"]["approvalPolicy"] = json!(null);
    assert_valid(&requests, &alias, "approvalPolicy: null (server default)");
}

#[test]
fn wrong_experimental_requests_do_not_validate() {
    let schemas = Schemas::generate(true);
    let requests = schemas.definition("ClientRequest");

    let mut bad_tool = sample_request("thread/start");
    bad_tool["params"]["dynamicTools"] = json!([{"name": 1}]);
    assert_invalid(&requests, &bad_tool, "a dynamic tool without its members");

    let mut bad_delta = sample_request("process/writeStdin");
    bad_delta["params"]["deltaBase64"] = json!(42);
    assert_invalid(&requests, &bad_delta, "a numeric deltaBase64");

    let mut bad_size = sample_request("process/resizePty");
    bad_size["params"]["size"]["rows"] = json!(-1);
    assert_invalid(&requests, &bad_size, "a negative PTY size");
}

#[test]
fn wrong_results_and_notifications_do_not_validate() {
    let schemas = Schemas::generate(false);

    let mut incomplete = to_json(&thread_read_response());
    incomplete["thread"].as_object_mut().unwrap().remove("name");
    let read = schemas.definition("ClientRequestResponses/properties/thread~1read");
    assert_invalid(&read, &incomplete, "a thread without its nullable name");
    incomplete["thread"]["name"] = json!(null);
    assert_valid(&read, &incomplete, "a thread with name: null");

    let unsubscribe = schemas.definition("ClientRequestResponses/properties/thread~1unsubscribe");
    assert_invalid(
        &unsubscribe,
        &json!({"status": "gone"}),
        "an unknown status",
    );

    let notifications = schemas.definition("ServerNotification");
    let mut status = to_json(&JSONRPCMessage::Notification(
        server_notifications()
            .into_iter()
            .find(|n| n.method() == "thread/status/changed")
            .unwrap()
            .into_jsonrpc()
            .unwrap(),
    ));
    assert_valid(&notifications, &status, "thread/status/changed");
    status["params"]["status"] = json!({"type": "sleeping"});
    assert_invalid(&notifications, &status, "an unknown thread status");
    status["params"].as_object_mut().unwrap().remove("status");
    assert_invalid(&notifications, &status, "a status change without status");

    assert_invalid(
        &notifications,
        &json!({"method": "thread/closed"}),
        "a notification without params",
    );
}

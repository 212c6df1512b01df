//! Literal wire examples written by hand from docs/protocol.md, one per method: each decodes into
//! the expected typed value, and encoding that value gives back exactly the same members
//! (key sets compared recursively first, for a readable failure, then whole values).

mod common;

use common::wire_json::*;
use common::*;
use serde_json::{Value, json};
use tandem_protocol::*;

#[test]
fn client_requests_match_protocol_examples() {
    use client_methods as m;
    let covered = vec![
        check::<m::Initialize>(
            json!({"clientInfo": {"name": "tandem-tests", "title": "Tandem tests",
                                  "version": "1.2.3"},
                   "capabilities": {"experimentalApi": true,
                                    "optOutNotificationMethods": ["item/agentMessage/delta"]}}),
            initialize_params(),
            json!({"userAgent": "tandem/0.169.0 (tandem 0.1.0; linux x86_64; unix) tandem-tests/1.2.3",
                   "platformFamily": "unix", "platformOs": "linux",
                   "tandemHome": "/home/dev/.tandem", "codexHome": "/home/dev/.tandem",
                   "serverInfo": {"name": "tandem", "version": "0.169.0"},
                   "tandemVersion": "0.1.0"}),
            initialize_response(),
        ),
        check::<m::ConfigRead>(
            json!({"cwd": "/home/dev/project", "includeLayers": true}),
            config_read_params(),
            json!({"config": {"thread_unload_delay_secs": 60, "model": "gpt-test"},
                   "origins": {}, "layers": null}),
            config_read_response(),
        ),
        check::<m::ThreadStart>(
            json!({"cwd": "/home/dev/project", "model": null, "ephemeral": true,
                   "approvalPolicy": "never", "name": "Refactor", "sandbox": "workspace-write",
                   "dynamicTools": [{"type": "function", "name": "lookup",
                                     "description": "Look things up",
                                     "inputSchema": {"type": "object",
                                                     "properties": {"query": {"type": "string"}}},
                                     "deferLoading": false}],
                   "config": {"thread_unload_delay_secs": 0},
                   "idempotencyKey": "start-retry-1"}),
            thread_start_params(),
            with_session(thread_json(), "gpt-test", "/home/dev/project", "on-request"),
            thread_start_response(),
        ),
        check::<m::ThreadResume>(
            json!({"threadId": "0190f3a2-7c4e-7b1a-9d2e-3f4a5b6c7d8e", "model": "gpt-other",
                   "approvalPolicy": null, "excludeTurns": true,
                   "initialTurnsPage": {"limit": 1, "sortDirection": "desc",
                                        "itemsView": "notLoaded"}}),
            thread_resume_params(),
            {
                let mut result =
                    with_session(thread_json(), "gpt-other", "/home/dev/project", "never");
                result["initialTurnsPage"] = json!({"data": [turn_json()], "nextCursor": "t1",
                                                    "backwardsCursor": "at:t1"});
                result["turnsBackwardsCursor"] = json!("at:t1");
                result["itemsBackwardsCursor"] = json!("at:t1/0");
                result
            },
            thread_resume_response(),
        ),
        check::<m::ThreadItemsList>(
            json!({"threadId": "0190f3a2-7c4e-7b1a-9d2e-3f4a5b6c7d8e", "turnId": "t1",
                   "cursor": {"type": "item", "itemId": "i1"}, "limit": 2,
                   "sortDirection": "asc"}),
            thread_items_list_params(),
            {
                let entries: Vec<Value> = turn_json()["items"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .enumerate()
                    .map(|(index, item)| {
                        let (started, completed) = if index == 0 {
                            (Value::Null, Value::Null)
                        } else {
                            (json!(1_764_626_400_000_i64), json!(1_764_626_400_250_i64))
                        };
                        json!({"turnId": "t1", "item": item, "startedAtMs": started,
                               "completedAtMs": completed})
                    })
                    .collect();
                json!({"data": entries, "nextCursor": "t1/1", "backwardsCursor": "at:t1/0"})
            },
            thread_items_list_response(),
        ),
        check::<m::ThreadRead>(
            json!({"threadId": "0190f3a2-7c4e-7b1a-9d2e-3f4a5b6c7d8e", "includeTurns": true}),
            thread_read_params(),
            {
                let mut thread = thread_json();
                thread["status"] = json!({"type": "notLoaded"});
                json!({"thread": thread})
            },
            thread_read_response(),
        ),
        check::<m::ThreadList>(
            json!({"cursor": "c1", "limit": 25, "sortDirection": "asc",
                   "sourceKinds": ["appServer", "cli"],
                   "cwd": ["/home/dev/project", "/tmp/fork"], "searchTerm": "Refac",
                   "archived": false}),
            thread_list_params(),
            json!({"data": [thread_json(), forked_thread_json()], "nextCursor": "c2",
                   "backwardsCursor": null}),
            thread_list_response(),
        ),
        check::<m::ThreadLoadedList>(
            json!({"cursor": "0190f3a2-7c4e-7b1a-9d2e-3f4a5b6c7d8e", "limit": 0}),
            thread_loaded_list_params(),
            json!({"data": ["0190f3a2-9000-7abc-8def-0123456789ab"],
                   "nextCursor": "0190f3a2-9000-7abc-8def-0123456789ab"}),
            thread_loaded_list_response(),
        ),
        check::<m::ThreadTurnsList>(
            json!({"threadId": "0190f3a2-7c4e-7b1a-9d2e-3f4a5b6c7d8e", "limit": 10,
                   "sortDirection": "desc", "cursor": "t1", "itemsView": "summary"}),
            thread_turns_list_params(),
            json!({"data": [failed_turn_json(), turn_json()], "nextCursor": null,
                   "backwardsCursor": null}),
            thread_turns_list_response(),
        ),
        check::<m::ThreadUnsubscribe>(
            json!({"threadId": "0190f3a2-7c4e-7b1a-9d2e-3f4a5b6c7d8e"}),
            thread_unsubscribe_params(),
            json!({"status": "notSubscribed"}),
            thread_unsubscribe_response(),
        ),
        check::<m::ThreadNameSet>(
            json!({"threadId": "0190f3a2-7c4e-7b1a-9d2e-3f4a5b6c7d8e", "name": "  New name "}),
            thread_name_set_params(),
            json!({}),
            EmptyResponse {},
        ),
        check::<m::ThreadFork>(
            json!({"threadId": "0190f3a2-7c4e-7b1a-9d2e-3f4a5b6c7d8e", "cwd": "/tmp/fork",
                   "name": null, "ephemeral": true, "excludeTurns": false,
                   "lastTurnId": "0190f3a2-8000-7000-8000-000000000001",
                   "idempotencyKey": "fork-retry-1"}),
            thread_fork_params(),
            with_session(forked_thread_json(), "gpt-test", "/tmp/fork", "never"),
            thread_fork_response(),
        ),
        check::<m::ThreadDelete>(
            json!({"threadId": "0190f3a2-7c4e-7b1a-9d2e-3f4a5b6c7d8e"}),
            thread_delete_params(),
            json!({}),
            EmptyResponse {},
        ),
        check::<m::ThreadAttachmentAdd>(
            json!({"threadId": "0190f3a2-7c4e-7b1a-9d2e-3f4a5b6c7d8e",
                   "attachmentType": "github.pr", "identityKey": "tandem#12",
                   "payload": {"url": "https://example.invalid/pr/12", "draft": false}}),
            thread_attachment_add_params(),
            json!({"outcome": "existing",
                   "attachment": {"id": "att-1", "attachmentType": "github.pr",
                                  "identityKey": "tandem#12",
                                  "payload": {"url": "https://example.invalid/pr/12",
                                              "draft": false},
                                  "createdAt": 1_750_000_050}}),
            thread_attachment_add_response(),
        ),
        check::<m::ThreadAttachmentRemove>(
            json!({"threadId": "0190f3a2-7c4e-7b1a-9d2e-3f4a5b6c7d8e",
                   "attachmentType": "github.pr", "identityKey": "tandem#12"}),
            thread_attachment_remove_params(),
            json!({}),
            EmptyResponse {},
        ),
        check::<m::TurnStart>(
            json!({"threadId": "0190f3a2-7c4e-7b1a-9d2e-3f4a5b6c7d8e",
                   "input": [{"type": "text", "text": "hello", "text_elements": []},
                             {"type": "text", "text": "and more", "text_elements": []},
                             {"type": "image", "url": "data:image/png;base64,iVBORw0KGgo=",
                              "detail": "low"},
                             {"type": "localImage", "detail": null, "path": "/tmp/photo.jpg"}],
                   "clientUserMessageId": "client-msg-2", "approvalPolicy": "on-request",
                   "sandboxPolicy": {"type": "workspaceWrite", "writableRoots": ["/srv/cache"],
                                     "networkAccess": true, "excludeTmpdirEnvVar": false,
                                     "excludeSlashTmp": true},
                   "effort": "high", "summary": null}),
            turn_start_params(),
            json!({"turn": new_turn_json()}),
            turn_start_response(),
        ),
        check::<m::TurnSteer>(
            json!({"threadId": "0190f3a2-7c4e-7b1a-9d2e-3f4a5b6c7d8e",
                   "expectedTurnId": "0190f3a2-8000-7000-8000-000000000002",
                   "input": [{"type": "text", "text": "also check the tests",
                              "text_elements": []}]}),
            turn_steer_params(),
            json!({"turnId": "0190f3a2-8000-7000-8000-000000000002"}),
            turn_steer_response(),
        ),
        check::<m::TurnInterrupt>(
            json!({"threadId": "0190f3a2-7c4e-7b1a-9d2e-3f4a5b6c7d8e",
                   "turnId": "0190f3a2-8000-7000-8000-000000000002"}),
            turn_interrupt_params(),
            json!({}),
            EmptyResponse {},
        ),
        check::<m::ProcessSpawn>(
            json!({"processHandle": "build", "command": ["cargo", "build"],
                   "cwd": "/home/dev/project", "tty": true, "streamStdin": true,
                   "streamStdoutStderr": true, "outputBytesCap": null, "timeoutMs": 30000,
                   "env": {"HOME": null, "RUST_LOG": "debug"},
                   "size": {"rows": 24, "cols": 80}}),
            process_spawn_params(),
            json!({}),
            EmptyResponse {},
        ),
        check::<m::ProcessWriteStdin>(
            json!({"processHandle": "build", "deltaBase64": "aGVsbG8K", "closeStdin": true}),
            process_write_stdin_params(),
            json!({}),
            EmptyResponse {},
        ),
        check::<m::ProcessKill>(
            json!({"processHandle": "build"}),
            process_kill_params(),
            json!({}),
            EmptyResponse {},
        ),
        check::<m::ProcessResizePty>(
            json!({"processHandle": "build", "size": {"rows": 50, "cols": 132}}),
            process_resize_pty_params(),
            json!({}),
            EmptyResponse {},
        ),
        // t-threadops: the shapes of the reference's schema (0.169.0).
        check::<m::ThreadArchive>(
            json!({"threadId": "0190f3a2-7c4e-7b1a-9d2e-3f4a5b6c7d8e"}),
            thread_archive_params(),
            json!({}),
            EmptyResponse {},
        ),
        check::<m::ThreadUnarchive>(
            json!({"threadId": "0190f3a2-7c4e-7b1a-9d2e-3f4a5b6c7d8e"}),
            thread_unarchive_params(),
            json!({"thread": thread_json()}),
            thread_unarchive_response(),
        ),
        check::<m::ThreadCompactStart>(
            json!({"threadId": "0190f3a2-7c4e-7b1a-9d2e-3f4a5b6c7d8e"}),
            thread_compact_start_params(),
            json!({}),
            EmptyResponse {},
        ),
        check::<m::ThreadRevert>(
            json!({"threadId": "0190f3a2-7c4e-7b1a-9d2e-3f4a5b6c7d8e",
                   "beforeTurnId": "0190f3a2-8000-7000-8000-000000000002"}),
            thread_revert_params(),
            json!({"thread": thread_json(), "turnsBackwardsCursor": null,
                   "itemsBackwardsCursor": null}),
            thread_revert_response(),
        ),
        check::<m::ThreadRollback>(
            json!({"threadId": "0190f3a2-7c4e-7b1a-9d2e-3f4a5b6c7d8e", "numTurns": 2}),
            thread_rollback_params(),
            json!({"thread": thread_json()}),
            thread_rollback_response(),
        ),
        check::<m::ThreadAttachmentList>(
            json!({"threadId": "0190f3a2-7c4e-7b1a-9d2e-3f4a5b6c7d8e",
                   "cursor": "attachment-0", "limit": 10}),
            thread_attachment_list_params(),
            json!({"data": [{"id": "att-1", "attachmentType": "github.pr",
                             "identityKey": "tandem#12",
                             "payload": {"url": "https://example.invalid/pr/12", "draft": false},
                             "createdAt": 1_750_000_050}],
                   "nextCursor": null}),
            thread_attachment_list_response(),
        ),
        // The results as the reference app-server (0.169.0) writes them, member for member.
        check::<m::ModelList>(
            json!({"cursor": "2", "limit": 2, "includeHidden": true}),
            model_list_params(),
            json!({"data": [{
                "id": "qwen3", "model": "qwen3", "upgrade": null, "upgradeInfo": null,
                "availabilityNux": null, "displayName": "qwen3",
                "description": "qwen3 at model provider local", "modelSpecialty": null,
                "hidden": false,
                "supportedReasoningEfforts": [
                    {"reasoningEffort": "none", "description": "no effort is sent"}],
                "defaultReasoningEffort": "none", "inputModalities": ["text", "image"],
                "supportsPersonality": false, "multiAgentVersion": "disabled",
                "additionalSpeedTiers": [], "serviceTiers": [], "defaultServiceTier": null,
                "availableAccessPrograms": null, "isDefault": true}],
                "nextCursor": "3"}),
            model_list_response(),
        ),
        check::<m::AccountRead>(
            json!({"refreshToken": false}),
            GetAccountParams {
                refresh_token: Some(false),
            },
            json!({"account": null, "userId": null, "requiresOpenaiAuth": false,
                   "workspaceRouting": null}),
            account_response(),
        ),
        check::<m::ConfigValueWrite>(
            json!({"keyPath": "model_providers.local.models", "value": ["qwen3", "llama3"],
                   "mergeStrategy": "replace", "expectedVersion": "sha256:00"}),
            config_value_write_params(),
            json!({"status": "okOverridden", "version": "sha256:ab",
                   "filePath": "/home/u/.local/share/tandem/config.toml",
                   "overriddenMetadata": {"message": "set by -c", "effectiveValue": "m",
                       "overridingLayer": {"name": {"type": "sessionFlags"},
                                           "version": "sessionFlags"}}}),
            config_write_response(),
        ),
        check::<m::ConfigBatchWrite>(
            json!({"edits": [
                    {"keyPath": "model", "value": "qwen3", "mergeStrategy": "replace"},
                    {"keyPath": "model_providers.local",
                     "value": {"base_url": "http://127.0.0.1:8080/v1"},
                     "mergeStrategy": "upsert"}],
                   "filePath": "/home/u/.local/share/tandem/config.toml",
                   "reloadUserConfig": true}),
            config_batch_write_params(),
            json!({"status": "okOverridden", "version": "sha256:ab",
                   "filePath": "/home/u/.local/share/tandem/config.toml",
                   "overriddenMetadata": {"message": "set by -c", "effectiveValue": "m",
                       "overridingLayer": {"name": {"type": "sessionFlags"},
                                           "version": "sessionFlags"}}}),
            config_write_response(),
        ),
        // x-exec: the reference's command/exec shapes (0.169.0).
        check::<m::CommandExec>(
            json!({"command": ["sh", "-c", "make test"], "processId": "build-1",
                   "streamStdin": true, "streamStdoutStderr": true,
                   "outputBytesCap": 1_048_576, "timeoutMs": 30_000, "cwd": CWD,
                   "env": {"CI": "1", "HOME": null},
                   "sandboxPolicy": {"type": "dangerFullAccess"}}),
            command_exec_params(),
            json!({"exitCode": 0, "stdout": "ok\n", "stderr": ""}),
            command_exec_response(),
        ),
        check::<m::CommandExecWrite>(
            json!({"processId": "build-1", "deltaBase64": "eQo=", "closeStdin": true}),
            command_exec_write_params(),
            json!({}),
            EmptyResponse {},
        ),
        check::<m::CommandExecTerminate>(
            json!({"processId": "build-1"}),
            command_exec_terminate_params(),
            json!({}),
            EmptyResponse {},
        ),
        check::<m::CommandExecResize>(
            json!({"processId": "build-1", "size": {"rows": 40, "cols": 120}}),
            command_exec_resize_params(),
            json!({}),
            EmptyResponse {},
        ),
        // tui:
        check::<m::ProcessScreen>(
            json!({"processHandle": "top-1"}),
            process_screen_params(),
            json!({"size": {"rows": 3, "cols": 20}, "cursorRow": 2, "cursorCol": 0,
                   "text": "load: 0.1\nPID  CMD\n",
                   "formatted": "\u{1b}[?25h\u{1b}[m\u{1b}[H\u{1b}[Jload: 0.1\r\nPID  CMD",
                   "outputBytes": 4096}),
            process_screen_response(),
        ),
        // procre:
        check::<m::ProcessResume>(
            json!({"processSession": "9f2c61d0a4be77319f2c61d0a4be7731",
                   "processHandle": "build",
                   "cursor": {"epoch": "9f2c61d0a4be7731", "seq": 1042}}),
            process_resume_params(),
            json!({"gap": false, "replayed": 3,
                   "cursor": {"epoch": "9f2c61d0a4be7731", "seq": 1045}}),
            process_resume_response(),
        ),
        // attach19:
        check::<m::ProcessShare>(
            json!({"processHandle": "top-1"}),
            process_share_params(),
            json!({"attachToken": "4be77319f2c61d0a9f2c61d0a4be7731"}),
            process_share_response(),
        ),
        check::<m::ProcessAttach>(
            json!({"processHandle": "top-1", "attachToken": "4be77319f2c61d0a9f2c61d0a4be7731"}),
            process_attach_params(),
            json!({"screen": {"size": {"rows": 3, "cols": 20}, "cursorRow": 2, "cursorCol": 0,
                              "text": "load: 0.1\nPID  CMD\n",
                              "formatted": "\u{1b}[?25h\u{1b}[m\u{1b}[H\u{1b}[Jload: 0.1\r\nPID  CMD",
                              "outputBytes": 4096},
                   "cursor": {"epoch": "9f2c61d0a4be7731", "seq": 12}}),
            process_attach_response(),
        ),
        // fs29: the reference's shapes (its JSON Schema, release 0.169.0).
        check::<m::FsReadFile>(
            json!({"path": "/home/dev/project/a.txt"}),
            FsReadFileParams {
                path: abs("/home/dev/project/a.txt"),
            },
            json!({"dataBase64": "aGVsbG8="}),
            fs_read_file_response(),
        ),
        check::<m::FsWriteFile>(
            json!({"path": "/home/dev/project/b.txt", "dataBase64": "aGVsbG8="}),
            FsWriteFileParams {
                path: abs("/home/dev/project/b.txt"),
                data_base64: "aGVsbG8=".to_owned(),
            },
            json!({}),
            EmptyResponse {},
        ),
        check::<m::FsCreateDirectory>(
            json!({"path": "/home/dev/project/out", "recursive": false}),
            FsCreateDirectoryParams {
                path: abs("/home/dev/project/out"),
                recursive: Some(false),
            },
            json!({}),
            EmptyResponse {},
        ),
        check::<m::FsGetMetadata>(
            json!({"path": "/home/dev"}),
            FsGetMetadataParams {
                path: abs("/home/dev"),
            },
            json!({"isDirectory": false, "isFile": true, "isSymlink": true,
                   "createdAtMs": 0, "modifiedAtMs": 1_796_537_799_443_i64}),
            fs_get_metadata_response(),
        ),
        check::<m::FsReadDirectory>(
            json!({"path": "/home/dev/project"}),
            FsReadDirectoryParams {
                path: abs("/home/dev/project"),
            },
            json!({"entries": [
                {"fileName": "a.txt", "isDirectory": false, "isFile": true},
                {"fileName": "src", "isDirectory": true, "isFile": false},
            ]}),
            fs_read_directory_response(),
        ),
        check::<m::FsRemove>(
            json!({"path": "/home/dev/project/out", "recursive": true, "force": false}),
            FsRemoveParams {
                path: abs("/home/dev/project/out"),
                recursive: Some(true),
                force: Some(false),
            },
            json!({}),
            EmptyResponse {},
        ),
        check::<m::FsCopy>(
            json!({"sourcePath": "/home/dev/project/src",
                   "destinationPath": "/home/dev/project/src2", "recursive": true}),
            FsCopyParams {
                source_path: abs("/home/dev/project/src"),
                destination_path: abs("/home/dev/project/src2"),
                recursive: true,
            },
            json!({}),
            EmptyResponse {},
        ),
        check::<m::FsWatch>(
            json!({"path": "/home/dev/project", "watchId": "w-1"}),
            FsWatchParams {
                path: abs("/home/dev/project"),
                watch_id: "w-1".to_owned(),
            },
            json!({"path": "/home/dev/project"}),
            fs_watch_response(),
        ),
        check::<m::FsUnwatch>(
            json!({"watchId": "w-1"}),
            FsUnwatchParams {
                watch_id: "w-1".to_owned(),
            },
            json!({}),
            EmptyResponse {},
        ),
        // search29: the reference's shapes (its JSON Schema, release 0.169.0); a search
        // result's members are snake_case there.
        check::<m::FuzzyFileSearch>(
            json!({"query": "main", "roots": ["/home/dev/project"], "cancellationToken": "picker-1"}),
            fuzzy_file_search_params(),
            json!({"files": [
                {"root": "/home/dev/project", "path": "src/main.rs", "match_type": "file",
                 "file_name": "main.rs", "score": 65645, "indices": [4, 5, 6, 7]},
                {"root": "/home/dev/project", "path": "maindir", "match_type": "directory",
                 "file_name": "maindir", "score": 109, "indices": [0, 1, 2, 3]},
            ]}),
            fuzzy_file_search_response(),
        ),
        check::<m::ThreadShellCommand>(
            json!({"threadId": THREAD_ID, "command": "git status --short | head", "timeoutMs": 30000}),
            thread_shell_command_params(),
            json!({}),
            EmptyResponse {},
        ),
        // mcp30: the reference's shapes (its JSON Schema, release 0.169.0).
        check::<m::McpServerStatusList>(
            mcp_status_list_params_json(),
            mcp_status_list_params(),
            mcp_status_list_response_json(),
            mcp_status_list_response(),
        ),
        check::<m::McpServerToolCall>(
            mcp_tool_call_params_json(),
            mcp_tool_call_params(),
            mcp_tool_call_response_json(),
            mcp_tool_call_response(),
        ),
        check::<m::McpServerResourceRead>(
            mcp_resource_read_params_json(),
            mcp_resource_read_params(),
            mcp_resource_read_response_json(),
            mcp_resource_read_response(),
        ),
        check::<m::McpServerReload>(json!({}), EmptyParams {}, json!({}), EmptyResponse {}),
    ];
    assert_covers_exactly(covered, ClientRequest::METHODS);
}

#[test]
fn server_requests_match_protocol_examples() {
    use server_methods as m;
    let covered = vec![
        check::<m::ToolCall>(
            json!({"threadId": "0190f3a2-7c4e-7b1a-9d2e-3f4a5b6c7d8e",
                   "turnId": "0190f3a2-8000-7000-8000-000000000001", "callId": "call-1",
                   "namespace": "docs", "tool": "lookup",
                   "arguments": {"query": "tandem", "limit": 3}}),
            tool_call_params(),
            json!({"contentItems": [{"type": "inputText", "text": "found 3"},
                                    {"type": "inputText", "text": "done"}],
                   "success": true}),
            tool_call_response(),
        ),
        check::<m::CommandExecutionRequestApproval>(
            json!({"threadId": "0190f3a2-7c4e-7b1a-9d2e-3f4a5b6c7d8e",
                   "turnId": "0190f3a2-8000-7000-8000-000000000001", "itemId": "item-5",
                   "startedAtMs": 1_750_000_001_234_i64, "command": "rm -rf 'build dir'",
                   "cwd": "/home/dev/project", "reason": "clean the build",
                   "commandActions": [{"type": "unknown", "command": "rm -rf 'build dir'"}],
                   "availableDecisions": ["accept", "acceptForSession", "decline", "cancel"]}),
            approval_params(),
            json!({"decision": "acceptForSession"}),
            approval_response(),
        ),
        check::<m::ToolRequestUserInput>(
            json!({"threadId": "0190f3a2-7c4e-7b1a-9d2e-3f4a5b6c7d8e",
            "turnId": "0190f3a2-8000-7000-8000-000000000001", "itemId": "ask-1",
            "isBlocking": true,
            "questions": [
                {"id": "q1", "header": "Branch", "question": "Which branch?",
                 "isOther": false, "isSecret": false,
                 "options": [{"label": "main", "description": "the default branch"}]},
                {"id": "q2", "header": "Why", "question": "Why now?",
                 "isOther": false, "isSecret": false, "options": null}
            ]}),
            user_input_params(),
            json!({"answers": {"q1": {"answers": ["main"]},
                               "q2": {"answers": ["release", "today"]}}}),
            user_input_response(),
        ),
        check::<m::FileChangeRequestApproval>(
            json!({"threadId": "0190f3a2-7c4e-7b1a-9d2e-3f4a5b6c7d8e",
                   "turnId": "0190f3a2-8000-7000-8000-000000000001", "itemId": "item-patch",
                   "startedAtMs": 1_760_000_000_000_i64,
                   "reason": "the patch changes /etc/hosts outside the writable roots",
                   "grantRoot": null}),
            file_change_approval_params(),
            json!({"decision": "acceptForSession"}),
            file_change_approval_response(),
        ),
        // mcp30:
        check::<m::McpServerElicitationRequest>(
            mcp_elicitation_params_json(),
            mcp_elicitation_params(),
            mcp_elicitation_response_json(),
            mcp_elicitation_response(),
        ),
    ];
    assert_covers_exactly(covered, ServerRequest::METHODS);
}

#[test]
fn client_notification_matches_protocol_example() {
    for wire in [
        json!({"method": "initialized"}),
        json!({"method": "initialized", "params": null}),
        json!({"method": "initialized", "params": {}}),
    ] {
        let notification: JSONRPCNotification = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(
            ClientNotification::try_from(notification).unwrap(),
            ClientNotification::Initialized(EmptyParams {}),
            "{wire}"
        );
    }
}

#[test]
fn thread_statuses_and_sources_use_spec_spellings() {
    for (wire, expected) in [
        (json!({"type": "notLoaded"}), ThreadStatus::NotLoaded),
        (json!({"type": "idle"}), ThreadStatus::Idle),
        (json!({"type": "systemError"}), ThreadStatus::SystemError),
        (
            json!({"type": "active", "activeFlags": ["waitingOnUserInput"]}),
            ThreadStatus::Active {
                active_flags: vec![ThreadActiveFlag::WaitingOnUserInput],
            },
        ),
    ] {
        assert_decodes_and_encodes(&wire, &expected, "thread status");
    }
    for (wire, expected) in [
        (json!("cli"), SessionSource::Cli),
        (json!("vscode"), SessionSource::Vscode),
        (json!("exec"), SessionSource::Exec),
        (json!("appServer"), SessionSource::AppServer),
        (json!("unknown"), SessionSource::Unknown),
        (
            json!({"custom": "sdk"}),
            SessionSource::Custom("sdk".into()),
        ),
    ] {
        assert_decodes_and_encodes(&wire, &expected, "session source");
    }
    for (wire, expected) in [
        (json!("inProgress"), TurnStatus::InProgress),
        (json!("completed"), TurnStatus::Completed),
        (json!("interrupted"), TurnStatus::Interrupted),
        (json!("failed"), TurnStatus::Failed),
    ] {
        assert_decodes_and_encodes(&wire, &expected, "turn status");
    }
    for (wire, expected) in [
        (json!("unsubscribed"), ThreadUnsubscribeStatus::Unsubscribed),
        (
            json!("notSubscribed"),
            ThreadUnsubscribeStatus::NotSubscribed,
        ),
        (json!("notLoaded"), ThreadUnsubscribeStatus::NotLoaded),
    ] {
        assert_decodes_and_encodes(&wire, &expected, "unsubscribe status");
    }
    assert_decodes_and_encodes(
        &json!("created"),
        &ThreadAttachmentAddOutcome::Created,
        "attachment outcome",
    );
    assert_decodes_and_encodes(
        &json!("created"),
        &ThreadAttachmentOperation::Created,
        "attachment operation",
    );
    // Values that are not listed do not decode: output is closed.
    assert!(serde_json::from_value::<ThreadStatus>(json!({"type": "archived"})).is_err());
    assert!(serde_json::from_value::<ThreadItem>(json!({"type": "webSearch", "id": "r"})).is_err());
}

#[test]
fn thread_list_cwd_accepts_one_path_or_several() {
    let one: ThreadListParams = serde_json::from_value(json!({"cwd": "/a"})).unwrap();
    assert_eq!(one.cwd, Some(CwdFilter::One("/a".into())));
    assert_eq!(one.cwd.as_ref().unwrap().paths(), ["/a".to_owned()]);
    assert_wire_eq(
        &serde_json::to_value(&one).unwrap(),
        &json!({"cwd": "/a"}),
        "cwd",
    );
    let many: ThreadListParams = serde_json::from_value(json!({"cwd": ["/a", "/b"]})).unwrap();
    assert_eq!(
        many.cwd.unwrap().paths(),
        ["/a".to_owned(), "/b".to_owned()]
    );
    let filters: ThreadListParams = serde_json::from_value(json!({
        "archived": true, "parentThreadId": "p", "ancestorThreadId": "a"
    }))
    .unwrap();
    assert_eq!(filters.archived, Some(true));
    assert_eq!(filters.parent_thread_id.as_deref(), Some("p"));
    assert_eq!(filters.ancestor_thread_id.as_deref(), Some("a"));
}

/// undo29: the Tandem extension `restoreFiles` of `thread/rollback` and its answer's members,
/// beside the reference's shape that the coverage list checks.
#[test]
fn rollback_restoring_files_matches_its_example() {
    check::<client_methods::ThreadRollback>(
        json!({"threadId": "0190f3a2-7c4e-7b1a-9d2e-3f4a5b6c7d8e", "numTurns": 1,
               "restoreFiles": true}),
        thread_rollback_restoring_params(),
        json!({"thread": thread_json(), "restoredFiles": ["/work/a.txt"],
               "skippedFiles": [{"path": "/work/b.txt",
                                 "reason": "changed on disk since turn t2 wrote it"}],
               "unrestorableTurns": []}),
        thread_rollback_restoring_response(),
    );
}

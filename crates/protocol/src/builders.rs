//! Constructors and builder methods for the params and results a client sends, so that callers
//! never spell out the three-state `Option<Option<_>>` fields of [`crate::types`] or the
//! members Tandem fixes. They only fill in fields; what the fields mean is documented on the
//! types themselves.
//!
//! ```
//! use tandem_protocol::{InitializeParams, ProcessSpawnParams, ThreadStartParams, TurnStartParams};
//!
//! let init = InitializeParams::new("my-client", "1.0").experimental_api(true);
//! assert!(init.capabilities.unwrap().experimental_api);
//!
//! let start = ThreadStartParams::new().model("gpt-x").ephemeral(true);
//! assert_eq!(start.overrides.model, Some(Some("gpt-x".into())));
//!
//! let turn = TurnStartParams::text("thread-id", "hello").default_model();
//! assert_eq!(turn.model, Some(None));
//!
//! let spawn = ProcessSpawnParams::new("build", ["make", "-j2"], "/tmp").streaming().no_timeout();
//! assert_eq!(spawn.timeout_ms, Some(None));
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Map, Value};

use crate::SharedText;
use crate::types::*;

impl InitializeParams {
    /// `initialize` params for the client `name` at `version`, with no capabilities: the
    /// stable API and every notification.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            client_info: ClientInfo {
                name: name.into(),
                title: None,
                version: version.into(),
            },
            capabilities: None,
        }
    }

    /// Sets the human-readable title of `clientInfo`.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.client_info.title = Some(title.into());
        self
    }

    /// Opts in to (or out of) the experimental methods, fields and notifications.
    pub fn experimental_api(mut self, enabled: bool) -> Self {
        self.capabilities_mut().experimental_api = enabled;
        self
    }

    /// Asks the server never to send these notification methods to this connection.
    pub fn opt_out_notifications<I, S>(mut self, methods: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let methods: Vec<String> = methods.into_iter().map(Into::into).collect();
        self.capabilities_mut().opt_out_notification_methods =
            (!methods.is_empty()).then_some(methods);
        self
    }

    fn capabilities_mut(&mut self) -> &mut InitializeCapabilities {
        self.capabilities.get_or_insert_with(Default::default)
    }
}

/// Builder methods shared by the params that carry [`ThreadOverrides`]
/// (`thread/start`, `thread/resume`, `thread/fork`).
macro_rules! thread_override_setters {
    ($type:ty) => {
        impl $type {
            /// Sets the working directory (absolute).
            pub fn cwd(mut self, cwd: impl Into<String>) -> Self {
                self.overrides.cwd = Some(Some(cwd.into()));
                self
            }

            /// Sets the model.
            pub fn model(mut self, model: impl Into<String>) -> Self {
                self.overrides.model = Some(Some(model.into()));
                self
            }

            /// Asks for the server's default model (`model: null`).
            pub fn default_model(mut self) -> Self {
                self.overrides.model = Some(None);
                self
            }

            /// Sets the approval policy.
            pub fn approval_policy(mut self, policy: ApprovalPolicy) -> Self {
                self.overrides.approval_policy = Some(Some(policy));
                self
            }

            /// Sets the thread name.
            pub fn name(mut self, name: impl Into<String>) -> Self {
                self.overrides.name = Some(Some(name.into()));
                self
            }

            /// Sets configuration overrides, under config-file (snake_case) keys.
            pub fn config(mut self, config: Map<String, Value>) -> Self {
                self.overrides.config = Some(Some(config));
                self
            }
        }
    };
}

thread_override_setters!(ThreadStartParams);
thread_override_setters!(ThreadResumeParams);
thread_override_setters!(ThreadForkParams);

impl ThreadStartParams {
    /// Params with every member omitted: server defaults throughout.
    pub fn new() -> Self {
        Self::default()
    }

    /// Discards the thread instead of persisting it.
    pub fn ephemeral(mut self, ephemeral: bool) -> Self {
        self.ephemeral = Some(ephemeral);
        self
    }

    /// Registers tools the client serves (experimental).
    pub fn dynamic_tools(mut self, tools: Vec<DynamicToolSpec>) -> Self {
        self.dynamic_tools = Some(tools);
        self
    }
}

impl ThreadResumeParams {
    /// Resumes `thread_id` with its current settings.
    pub fn new(thread_id: impl Into<String>) -> Self {
        Self {
            thread_id: thread_id.into(),
            ..Self::default()
        }
    }

    /// Leaves `thread.turns` of the result empty.
    pub fn exclude_turns(mut self, exclude: bool) -> Self {
        self.exclude_turns = Some(exclude);
        self
    }
}

impl ThreadForkParams {
    /// Forks all of `thread_id` with its settings.
    pub fn new(thread_id: impl Into<String>) -> Self {
        Self {
            thread_id: thread_id.into(),
            ..Self::default()
        }
    }

    /// Discards the fork instead of persisting it.
    pub fn ephemeral(mut self, ephemeral: bool) -> Self {
        self.ephemeral = Some(ephemeral);
        self
    }

    /// Leaves `thread.turns` of the result empty.
    pub fn exclude_turns(mut self, exclude: bool) -> Self {
        self.exclude_turns = Some(exclude);
        self
    }

    /// Copies history through `turn_id`, inclusive.
    pub fn last_turn_id(mut self, turn_id: impl Into<String>) -> Self {
        self.last_turn_id = Some(turn_id.into());
        self
    }
}

impl ThreadReadParams {
    /// Reads `thread_id` without its turns.
    pub fn new(thread_id: impl Into<String>) -> Self {
        Self {
            thread_id: thread_id.into(),
            include_turns: None,
        }
    }

    /// Fills `thread.turns`.
    pub fn include_turns(mut self, include: bool) -> Self {
        self.include_turns = Some(include);
        self
    }
}

impl ThreadListParams {
    /// The first page, newest first, unfiltered.
    pub fn new() -> Self {
        Self::default()
    }

    /// Continues after the page whose `nextCursor` this is.
    pub fn cursor(mut self, cursor: impl Into<String>) -> Self {
        self.cursor = Some(cursor.into());
        self
    }

    /// Sets the page size.
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Orders by creation time in `direction`.
    pub fn sort_direction(mut self, direction: SortDirection) -> Self {
        self.sort_direction = Some(direction);
        self
    }

    /// Only threads whose name contains `term`.
    pub fn search_term(mut self, term: impl Into<String>) -> Self {
        self.search_term = Some(term.into());
        self
    }
}

impl ThreadLoadedListParams {
    /// The first page of loaded thread ids.
    pub fn new() -> Self {
        Self::default()
    }

    /// Continues after this id.
    pub fn cursor(mut self, cursor: impl Into<String>) -> Self {
        self.cursor = Some(cursor.into());
        self
    }

    /// Sets the page size.
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = Some(limit);
        self
    }
}

impl ThreadTurnsListParams {
    /// The first page of `thread_id`'s turns, newest first.
    pub fn new(thread_id: impl Into<String>) -> Self {
        Self {
            thread_id: thread_id.into(),
            ..Self::default()
        }
    }

    /// Sets the page size.
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Orders by creation time in `direction`.
    pub fn sort_direction(mut self, direction: SortDirection) -> Self {
        self.sort_direction = Some(direction);
        self
    }

    /// Continues after the page whose `nextCursor` this is.
    pub fn cursor(mut self, cursor: impl Into<String>) -> Self {
        self.cursor = Some(cursor.into());
        self
    }

    /// Sets how much of each turn's items the page holds (default `summary`).
    pub fn items_view(mut self, view: TurnItemsView) -> Self {
        self.items_view = Some(view);
        self
    }
}

impl ThreadUnsubscribeParams {
    /// Unsubscribes from `thread_id`.
    pub fn new(thread_id: impl Into<String>) -> Self {
        Self {
            thread_id: thread_id.into(),
        }
    }
}

impl ThreadNameSetParams {
    /// Renames `thread_id` to `name`.
    pub fn new(thread_id: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            thread_id: thread_id.into(),
            name: name.into(),
        }
    }
}

impl ThreadDeleteParams {
    /// Deletes `thread_id`.
    pub fn new(thread_id: impl Into<String>) -> Self {
        Self {
            thread_id: thread_id.into(),
        }
    }
}

impl ThreadAttachmentAddParams {
    /// Attaches `payload` to `thread_id` under (`attachment_type`, `identity_key`).
    pub fn new(
        thread_id: impl Into<String>,
        attachment_type: impl Into<String>,
        identity_key: impl Into<String>,
        payload: Value,
    ) -> Self {
        Self {
            thread_id: thread_id.into(),
            attachment_type: attachment_type.into(),
            identity_key: identity_key.into(),
            payload,
        }
    }
}

impl ThreadAttachmentRemoveParams {
    /// Removes the attachment (`attachment_type`, `identity_key`) of `thread_id`.
    pub fn new(
        thread_id: impl Into<String>,
        attachment_type: impl Into<String>,
        identity_key: impl Into<String>,
    ) -> Self {
        Self {
            thread_id: thread_id.into(),
            attachment_type: attachment_type.into(),
            identity_key: identity_key.into(),
        }
    }
}

impl TurnStartParams {
    /// A turn on `thread_id` with `input`, keeping the thread's model and approval policy.
    pub fn new(thread_id: impl Into<String>, input: Vec<UserInput>) -> Self {
        Self {
            thread_id: thread_id.into(),
            input,
            ..Self::default()
        }
    }

    /// A turn on `thread_id` whose input is one text.
    pub fn text(thread_id: impl Into<String>, text: impl Into<SharedText>) -> Self {
        Self::new(thread_id, vec![UserInput::text(text)])
    }

    /// Echoed as `clientId` of the turn's `userMessage` item.
    pub fn client_user_message_id(mut self, id: impl Into<String>) -> Self {
        self.client_user_message_id = Some(id.into());
        self
    }

    /// Uses `model` from this turn on.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(Some(model.into()));
        self
    }

    /// Returns to the server's default model from this turn on (`model: null`).
    pub fn default_model(mut self) -> Self {
        self.model = Some(None);
        self
    }

    /// Uses `policy` from this turn on.
    pub fn approval_policy(mut self, policy: ApprovalPolicy) -> Self {
        self.approval_policy = Some(Some(policy));
        self
    }
}

impl TurnSteerParams {
    /// Adds `input` to the active turn `expected_turn_id` of `thread_id`.
    pub fn new(
        thread_id: impl Into<String>,
        expected_turn_id: impl Into<String>,
        input: Vec<UserInput>,
    ) -> Self {
        Self {
            thread_id: thread_id.into(),
            expected_turn_id: expected_turn_id.into(),
            input,
            client_user_message_id: None,
        }
    }

    /// Echoed as `clientId` of the `userMessage` item.
    pub fn client_user_message_id(mut self, id: impl Into<String>) -> Self {
        self.client_user_message_id = Some(id.into());
        self
    }
}

impl TurnInterruptParams {
    /// Interrupts the active turn `turn_id` of `thread_id`.
    pub fn new(thread_id: impl Into<String>, turn_id: impl Into<String>) -> Self {
        Self {
            thread_id: thread_id.into(),
            turn_id: turn_id.into(),
        }
    }
}

impl ProcessSpawnParams {
    /// Runs `command` in `cwd` (absolute) under `process_handle`, with the protocol defaults:
    /// no PTY, output captured (not streamed) and capped at 1 MiB, a 10 s timeout.
    pub fn new<I, S>(process_handle: impl Into<String>, command: I, cwd: impl Into<String>) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            process_handle: process_handle.into(),
            command: command.into_iter().map(Into::into).collect(),
            cwd: Some(cwd.into()),
            ..Self::default()
        }
    }

    /// Runs under a pseudo-terminal (implies streamed stdin and output).
    pub fn tty(mut self) -> Self {
        self.tty = Some(true);
        self
    }

    /// Accepts `process/writeStdin`.
    pub fn stream_stdin(mut self) -> Self {
        self.stream_stdin = Some(true);
        self
    }

    /// Streams output as `process/outputDelta` notifications.
    pub fn streaming(mut self) -> Self {
        self.stream_stdout_stderr = Some(true);
        self
    }

    /// Caps each output stream at `bytes`.
    pub fn output_cap(mut self, bytes: u64) -> Self {
        self.output_bytes_cap = Some(Some(bytes));
        self
    }

    /// Delivers all output, uncapped.
    pub fn unlimited_output(mut self) -> Self {
        self.output_bytes_cap = Some(None);
        self
    }

    /// Kills the process group after `timeout` (saturating at `i64::MAX` milliseconds).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        let millis = i64::try_from(timeout.as_millis()).unwrap_or(i64::MAX);
        self.timeout_ms = Some(Some(millis));
        self
    }

    /// Never times out.
    pub fn no_timeout(mut self) -> Self {
        self.timeout_ms = Some(None);
        self
    }

    /// Sets the environment variable `name` to `value` for the child.
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env
            .get_or_insert_with(BTreeMap::new)
            .insert(name.into(), Some(value.into()));
        self
    }

    /// Removes the environment variable `name` for the child.
    pub fn env_remove(mut self, name: impl Into<String>) -> Self {
        self.env
            .get_or_insert_with(BTreeMap::new)
            .insert(name.into(), None);
        self
    }

    /// Sets the initial PTY size (requires [`Self::tty`]).
    pub fn size(mut self, rows: u16, cols: u16) -> Self {
        self.size = Some(PtySize { rows, cols });
        self
    }
}

impl ProcessWriteStdinParams {
    /// Writes `bytes` to the stdin of `process_handle`.
    pub fn bytes(process_handle: impl Into<String>, bytes: impl Into<Bytes>) -> Self {
        Self {
            process_handle: process_handle.into(),
            delta: Some(bytes.into()),
            close_stdin: None,
        }
    }

    /// Closes the stdin of `process_handle`.
    pub fn close(process_handle: impl Into<String>) -> Self {
        Self {
            process_handle: process_handle.into(),
            delta: None,
            close_stdin: Some(true),
        }
    }
}

impl ProcessKillParams {
    /// Kills the process group of `process_handle`.
    pub fn new(process_handle: impl Into<String>) -> Self {
        Self {
            process_handle: process_handle.into(),
        }
    }
}

impl ProcessResizePtyParams {
    /// Resizes the PTY of `process_handle`.
    pub fn new(process_handle: impl Into<String>, rows: u16, cols: u16) -> Self {
        Self {
            process_handle: process_handle.into(),
            size: PtySize { rows, cols },
        }
    }
}

impl ProcessScreenParams {
    /// The screen of `process_handle`.
    pub fn new(process_handle: impl Into<String>) -> Self {
        Self {
            process_handle: process_handle.into(),
        }
    }
}

// attach19:
impl ProcessShareParams {
    /// An attach token for `process_handle`.
    pub fn new(process_handle: impl Into<String>) -> Self {
        Self {
            process_handle: process_handle.into(),
        }
    }
}

impl ProcessAttachParams {
    /// Watch `process_handle` with the owner's `attach_token`.
    pub fn new(process_handle: impl Into<String>, attach_token: impl Into<String>) -> Self {
        Self {
            process_handle: process_handle.into(),
            attach_token: attach_token.into(),
        }
    }
}

impl CommandExecutionRequestApprovalResponse {
    /// Runs the command.
    pub fn accept() -> Self {
        Self {
            decision: CommandExecutionApprovalDecision::Accept,
        }
    }

    /// Does not run the command; the turn goes on.
    pub fn decline() -> Self {
        Self {
            decision: CommandExecutionApprovalDecision::Decline,
        }
    }
}

impl ToolCallResponse {
    /// A successful call whose output for the model is `text`.
    pub fn text(text: impl Into<SharedText>) -> Self {
        Self {
            content_items: vec![DynamicToolCallOutputContentItem::InputText { text: text.into() }],
            success: true,
        }
    }

    /// A failed call; `message` tells the model why.
    pub fn failure(message: impl Into<SharedText>) -> Self {
        Self {
            content_items: vec![DynamicToolCallOutputContentItem::InputText {
                text: message.into(),
            }],
            success: false,
        }
    }
}

impl ToolRequestUserInputResponse {
    /// No answers at all.
    pub fn no_answers() -> Self {
        Self {
            answers: BTreeMap::new(),
        }
    }

    /// Adds `answers` for the question `question_id`.
    pub fn with_answer<I, S>(mut self, question_id: impl Into<String>, answers: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let answers = answers.into_iter().map(Into::into).collect();
        self.answers
            .insert(question_id.into(), UserInputAnswer { answers });
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builders_produce_the_wire_shapes_of_the_spec() {
        let init = InitializeParams::new("c", "1")
            .experimental_api(true)
            .opt_out_notifications(["item/agentMessage/delta"]);
        assert_eq!(
            serde_json::to_value(&init).unwrap(),
            json!({"clientInfo": {"name": "c", "version": "1"}, "capabilities": {
                "experimentalApi": true, "optOutNotificationMethods": ["item/agentMessage/delta"]}})
        );
        let turn = TurnStartParams::text("t", "hi").default_model();
        assert_eq!(
            serde_json::to_value(&turn).unwrap(),
            json!({"threadId": "t", "input": [{"type": "text", "text": "hi", "text_elements": []}],
                   "model": null})
        );
        let spawn = ProcessSpawnParams::new("h", ["sh"], "/")
            .unlimited_output()
            .timeout(Duration::from_secs(2))
            .env_remove("X");
        assert_eq!(
            serde_json::to_value(&spawn).unwrap(),
            json!({"processHandle": "h", "command": ["sh"], "cwd": "/", "outputBytesCap": null,
                   "timeoutMs": 2000, "env": {"X": null}})
        );
        let answers = ToolRequestUserInputResponse::no_answers().with_answer("q", ["yes"]);
        assert_eq!(
            serde_json::to_value(&answers).unwrap(),
            json!({"answers": {"q": {"answers": ["yes"]}}})
        );
    }
}

//! What `tandem run` and `tandem chat` share: the server options (in-process by default,
//! `--connect ws://...` with `--token-file`, or `--spawn 'CMD ARGS'`), building the
//! `tandem-client` client from them, the thread they work on, the terminal questions of
//! approvals and user input, and the checks and notices that keep a new user from talking to
//! the scripted agent without knowing it: `--model` needs a configured provider, a selected
//! provider needs its API key and a model, and the scripted agent's answers come with a notice.

use std::io::{self, BufRead, IsTerminal, Write};
use std::path::PathBuf;

use clap::Args;
use serde_json::Value;
use tandem_client::{ChildCommand, Client, ClientError, ClientOptions, Transport, WebSocketTarget};
use tandem_protocol::{
    ConfigReadParams, SessionSource, Thread, ThreadStartParams, TurnStartParams,
};
use tandem_server::ConfigWarning;

use crate::settings::{CassetteArgs, GlobalOptions, SettingsError};

/// The server options of `tandem run` and `tandem chat`.
#[derive(Debug, Args)]
pub(crate) struct ServerArgs {
    /// Use the app-server listening at this URL instead of an in-process server: a websocket
    /// (ws://127.0.0.1:4500) or a unix socket (unix:///PATH, what `tandem app-server --listen
    /// unix://PATH` serves).
    #[arg(long, value_name = "URL", conflicts_with = "spawn")]
    connect: Option<String>,

    /// Send the bearer token in FILE when connecting (with --connect).
    #[arg(long, value_name = "FILE", requires = "connect")]
    token_file: Option<PathBuf>,

    /// Start this command as the app-server and talk to it over its stdin and stdout, e.g.
    /// --spawn 'tandem app-server --listen stdio://'. Words split like a shell's (quotes and
    /// backslashes), without expansions.
    #[arg(long, value_name = "'CMD ARGS'")]
    spawn: Option<String>,

    /// The model for the thread and its turns; it needs a model provider (model_provider in
    /// config.toml, or -c model_provider=NAME).
    #[arg(long, value_name = "M")]
    pub(crate) model: Option<String>,

    /// Do not print the notice that the scripted agent (no model configured) answered.
    #[arg(long)]
    pub(crate) quiet_notices: bool,

    #[command(flatten)]
    cassette: CassetteArgs,
}

/// The notice printed when the scripted agent answers (with each `run`, once per `chat`): it
/// is not a model, and a new user would otherwise take its echo for one.
pub(crate) const SCRIPTED_NOTICE: &str = "tandem: note: no model is configured, so the scripted \
     test agent answers; set model_provider and model in $TANDEM_HOME/config.toml or with -c \
     (README: \"Using a real model\"); --quiet-notices hides this";

/// The scripted agent's commands, for chat's `/help`.
pub(crate) const SCRIPTED_COMMANDS: &str = "\
The scripted agent (no model configured) answers each line of a message:
  /sh CMD       run CMD with sh -c (asks for approval)
  /plan JSON    set the plan: {\"plan\": [{\"step\": \"...\", \"status\": \"in_progress\"}]}
  /think TEXT   reason: a summary part per |-separated piece of TEXT
  /patch        apply the patch on the lines after it, up to *** End Patch (asks for
                approval outside the writable roots; type the lines ending each with \\)
  /ask TEXT     ask you TEXT and echo the answer
  /sleep MS     wait MS milliseconds (interruptible)
  /fail TEXT    fail the turn with TEXT
  /tool N JSON  call the client tool N (none in tandem chat)
  other text    quoted back: You said: \"...\"";

/// Whether the scripted agent runs `thread`'s turns: the server records its own provider name
/// on the threads it creates while no model provider is configured.
pub(crate) fn is_scripted(thread: &Thread) -> bool {
    thread.model_provider == tandem_server::MODEL_PROVIDER
}

/// Why a session could not start or went wrong.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SessionError {
    /// The in-process server's home, config file or a `-c` override is invalid.
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// `--spawn` could not be split into words.
    #[error("--spawn: {0}")]
    SpawnCommand(String),
    /// `--token-file` could not be read, or others may read it.
    #[error("--token-file: {0}")]
    TokenFile(tandem_client::TokenFileError),
    /// The client failed.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The current directory is unusable for the thread.
    #[error("cannot use the current directory for the thread: {0}")]
    CurrentDir(String),
    /// The SIGTERM/SIGHUP handlers that shut the session down cleanly could not be installed.
    #[error(
        "cannot install the SIGTERM and SIGHUP handlers (check the process's signal limits): {0}"
    )]
    Signals(io::Error),
    /// The selected provider lacks its API key or a model: the first request would fail.
    #[error("{0}")]
    Provider(ConfigWarning),
    /// `--model` was given but no provider is selected, so the scripted agent would answer.
    #[error(
        "--model {model}: no model provider is selected, so no model would answer; select one \
         of the configured providers ({}) with -c model_provider=NAME or model_provider in \
         config.toml",
        providers.join(", ")
    )]
    ModelWithoutProvider {
        /// The model asked for.
        model: String,
        /// The providers the server's configuration defines.
        providers: Vec<String>,
    },
}

impl ServerArgs {
    /// Starts the client these options describe; an in-process server is configured by the
    /// global options (`-c`, `--profile`), like `tandem app-server`.
    pub(crate) async fn client(
        &self,
        source: SessionSource,
        global: &GlobalOptions,
    ) -> Result<Client, SessionError> {
        let options = ClientOptions::new()
            .client_name("tandem-cli")
            .client_version(env!("CARGO_PKG_VERSION"))
            .session_source(source);
        let transport = if let Some(url) = &self.connect {
            let mut target = WebSocketTarget::new(url);
            if let Some(file) = &self.token_file {
                target = target.token_file(file).map_err(SessionError::TokenFile)?;
            }
            Transport::WebSocket(target)
        } else if let Some(command) = &self.spawn {
            let words = split_words(command).map_err(SessionError::SpawnCommand)?;
            let (program, args) = words
                .split_first()
                .ok_or_else(|| SessionError::SpawnCommand("the command is empty".into()))?;
            Transport::Child(ChildCommand::new(program).args(args))
        } else {
            global.warn_unknown_features();
            // `run` and `chat` work in the user's project: its commands may write there (and
            // in /tmp), but nowhere else and not to the network (README, "Sandbox").
            let (server, provider_warnings) = global.load_options_with_sandbox(
                true,
                Some(tandem_protocol::SandboxMode::WorkspaceWrite),
                &self.cassette,
            )?;
            for warning in provider_warnings {
                // A model named on the command line makes the configured one unnecessary.
                let model_given = self.model.is_some();
                if !(model_given && matches!(warning, ConfigWarning::MissingModel { .. })) {
                    return Err(SessionError::Provider(warning));
                }
            }
            Transport::InProcess(server)
        };
        let client = Client::start(transport, options).await?;
        // Wire servers start lazily; fail here, with the reason, rather than on the first turn.
        client.connect().await?;
        if let Some(model) = &self.model {
            // Asked of the server, in-process or not: its configuration decides who answers.
            let config = client
                .config_read(ConfigReadParams::default())
                .await?
                .config;
            check_model_has_provider(model, &config)?;
        }
        Ok(client)
    }

    /// What the client talks to, for a status line: `in-process`, the websocket URL or
    /// `spawn: CMD`.
    pub(crate) fn label(&self) -> String {
        match (&self.connect, &self.spawn) {
            (Some(url), _) => url.clone(),
            (None, Some(command)) => {
                // The program's name: a full command line would crowd out the rest.
                let words = split_words(command).unwrap_or_default();
                let program = words.first().map_or(command.as_str(), |program| {
                    program.rsplit('/').next().unwrap_or(program)
                });
                format!("spawn: {program}")
            }
            (None, None) => "in-process".to_owned(),
        }
    }

    /// `thread/start` params: the current directory and `--model`.
    pub(crate) fn thread_params(&self) -> Result<ThreadStartParams, SessionError> {
        let cwd = std::env::current_dir().map_err(|e| SessionError::CurrentDir(e.to_string()))?;
        let cwd = cwd
            .to_str()
            .ok_or_else(|| SessionError::CurrentDir("the path is not valid UTF-8".into()))?
            .to_owned();
        let params = ThreadStartParams::new().cwd(cwd);
        Ok(match &self.model {
            Some(model) => params.model(model),
            None => params,
        })
    }

    /// `turn/start` params for `text` on `thread_id`, with `--model`.
    pub(crate) fn turn_params(&self, thread_id: &str, text: &str) -> TurnStartParams {
        let params = TurnStartParams::text(thread_id, text);
        match &self.model {
            Some(model) => params.model(model),
            None => params,
        }
    }
}

/// Fails when `config` (a `config/read` result) selects no model provider: `--model` would
/// otherwise be recorded on the thread and the scripted agent would answer anyway. A server
/// whose configuration does not have Tandem's keys is not judged.
fn check_model_has_provider(model: &str, config: &Value) -> Result<(), SessionError> {
    let (Some(selected), Some(Value::Object(providers))) =
        (config.get("model_provider"), config.get("model_providers"))
    else {
        return Ok(());
    };
    if !selected.is_null() {
        return Ok(());
    }
    Err(SessionError::ModelWithoutProvider {
        model: model.to_owned(),
        providers: providers.keys().cloned().collect(),
    })
}

/// Splits `line` into words as a POSIX shell would, with single quotes, double quotes (in
/// which `\"`, `\\` and `\$` are escapes) and backslashes, but no expansions.
pub(crate) fn split_words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if let Some(done) = word.take() {
                    words.push(done);
                }
            }
            '\'' => {
                let current = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => current.push(c),
                        None => return Err("unterminated single quote".into()),
                    }
                }
            }
            '"' => {
                let current = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => current.push(c),
                            Some(c) => {
                                current.push('\\');
                                current.push(c);
                            }
                            None => return Err("unterminated double quote".into()),
                        },
                        Some(c) => current.push(c),
                        None => return Err("unterminated double quote".into()),
                    }
                }
            }
            '\\' => match chars.next() {
                Some(c) => word.get_or_insert_with(String::new).push(c),
                None => return Err("a trailing backslash escapes nothing".into()),
            },
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

/// Whether stdin is a terminal a person can answer questions on.
pub(crate) fn stdin_is_terminal() -> bool {
    io::stdin().is_terminal()
}

/// Asks `question` on stderr and reads one line from stdin (blocking; run it off the runtime).
/// `None` at end of input.
pub(crate) fn ask_line(question: &str) -> Option<String> {
    let mut stderr = io::stderr().lock();
    let _ = write!(stderr, "{question}");
    let _ = stderr.flush();
    let mut line = String::new();
    match io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim_end_matches(['\n', '\r']).to_owned()),
    }
}

/// Whether an answer to a y/n question means yes.
pub(crate) fn is_yes(answer: &str) -> bool {
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

/// The decision an answer to a file change question means: `y` accept, `a` accept for the
/// session, anything else decline.
pub(crate) fn file_change_decision(answer: &str) -> tandem_protocol::FileChangeApprovalDecision {
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => tandem_protocol::FileChangeApprovalDecision::Accept,
        "a" | "always" => tandem_protocol::FileChangeApprovalDecision::AcceptForSession,
        _ => tandem_protocol::FileChangeApprovalDecision::Decline,
    }
}

/// The y/n question of an approval.
pub(crate) fn approval_question(command: &str) -> String {
    format!("Allow the agent to run `{command}`? [y/n] ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_like_a_shell() {
        assert_eq!(
            split_words(r#"tandem app-server  --listen 'stdio://' "a b" c\ d "x\"y""#).unwrap(),
            [
                "tandem",
                "app-server",
                "--listen",
                "stdio://",
                "a b",
                "c d",
                "x\"y"
            ]
        );
        assert_eq!(split_words("''").unwrap(), [""]);
        assert!(split_words("'open").is_err());
        assert!(split_words("").unwrap().is_empty());
    }

    #[test]
    fn a_model_needs_a_selected_provider() {
        let unselected = serde_json::json!({
            "model_provider": null,
            "model_providers": {"ollama": {}, "openai": {}},
        });
        let error = check_model_has_provider("gpt-5", &unselected)
            .expect_err("no provider")
            .to_string();
        assert!(
            error.starts_with("--model gpt-5: no model provider is selected"),
            "{error}"
        );
        assert!(error.contains("(ollama, openai)"), "{error}");
        let selected = serde_json::json!({
            "model_provider": "openai",
            "model_providers": {"openai": {}},
        });
        assert!(check_model_has_provider("gpt-5", &selected).is_ok());
        // Another app-server's configuration is not Tandem's to judge.
        assert!(check_model_has_provider("gpt-5", &serde_json::json!({})).is_ok());
    }

    #[test]
    fn yes_is_y_or_yes() {
        assert!(is_yes("y") && is_yes(" YES ") && !is_yes("n") && !is_yes(""));
    }
}

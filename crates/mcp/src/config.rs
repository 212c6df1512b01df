//! The `[mcp_servers.NAME]` tables, with the reference's keys and defaults: a stdio server
//! (`command`, `args`, `env`, `env_vars`, `cwd`) or a streamable HTTP one (`url`,
//! `bearer_token_env_var`, `http_headers`, `env_http_headers`), and for both `enabled`,
//! `required`, `startup_timeout_sec` (30 s), `tool_timeout_sec` (300 s), `enabled_tools`,
//! `disabled_tools`, `default_tools_approval_mode` and `[mcp_servers.NAME.tools.TOOL]`
//! `approval_mode`.
//!
//! Values are checked once, here, into [`McpServerConfig`]; tandem-server reports a
//! [`McpConfigError`] against the layer that set the key, and warns about the keys nothing
//! reads with [`SERVER_KEYS`] and [`TOOL_KEYS`].

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

/// Config key of the MCP server tables.
pub const MCP_SERVERS_KEY: &str = "mcp_servers";

/// How long a server may take to start and list its tools when `startup_timeout_sec` is not
/// set: the reference's current default (older releases used 10 s).
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a tool call may take when `tool_timeout_sec` is not set: the reference's current
/// default (older releases used 60 s).
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(300);

/// The longest timeout accepted, so that a deadline never overflows the clock (a day: longer
/// waits look hung to everyone).
const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

/// The keys of one `[mcp_servers.NAME]` table.
pub const SERVER_KEYS: &[&str] = &[
    "command",
    "args",
    "env",
    "env_vars",
    "cwd",
    "url",
    "bearer_token_env_var",
    "http_headers",
    "env_http_headers",
    "enabled",
    "required",
    "startup_timeout_sec",
    "tool_timeout_sec",
    "enabled_tools",
    "disabled_tools",
    "default_tools_approval_mode",
    "tools",
];

/// The keys of one `[mcp_servers.NAME.tools.TOOL]` table.
pub const TOOL_KEYS: &[&str] = &["approval_mode"];

/// One configured MCP server.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServerConfig {
    /// The table's name: `NAME` of `[mcp_servers.NAME]`.
    pub name: String,
    /// How to reach it.
    pub transport: McpTransportConfig,
    /// `enabled` (default `true`): a disabled server is listed but never started.
    pub enabled: bool,
    /// `required` (default `false`): a turn waits for a required server to finish starting,
    /// and fails when it could not.
    pub required: bool,
    /// `startup_timeout_sec`: how long connecting and listing its tools may take.
    pub startup_timeout: Duration,
    /// `tool_timeout_sec`: how long one tool call may take.
    pub tool_timeout: Duration,
    /// `enabled_tools`: when set, only these tools are offered.
    pub enabled_tools: Option<Vec<String>>,
    /// `disabled_tools`: tools never offered (applied after `enabled_tools`).
    pub disabled_tools: Vec<String>,
    /// `default_tools_approval_mode`: how the server's tools are approved unless a tool says.
    pub default_tools_approval_mode: Option<ToolApprovalMode>,
    /// `[mcp_servers.NAME.tools.TOOL]` `approval_mode`, per tool.
    pub tool_approval_modes: BTreeMap<String, ToolApprovalMode>,
}

impl McpServerConfig {
    /// Whether the tool named `tool` (the server's own name) is offered.
    pub fn tool_enabled(&self, tool: &str) -> bool {
        let listed = self
            .enabled_tools
            .as_ref()
            .is_none_or(|enabled| enabled.iter().any(|name| name == tool));
        listed && !self.disabled_tools.iter().any(|name| name == tool)
    }

    /// The approval mode of `tool`: its own, else the server's default, else `auto`.
    pub fn approval_mode(&self, tool: &str) -> ToolApprovalMode {
        self.tool_approval_modes
            .get(tool)
            .copied()
            .or(self.default_tools_approval_mode)
            .unwrap_or_default()
    }

    /// The table under its config-file keys, for `config/read`: secrets are never in it
    /// (only the names of their variables), and `env` and header values are redacted.
    pub fn to_config_object(&self) -> Value {
        let redacted = |map: &BTreeMap<String, String>| -> Value {
            map.keys()
                .map(|key| (key.clone(), json!("<redacted>")))
                .collect::<serde_json::Map<_, _>>()
                .into()
        };
        let mut object = serde_json::Map::new();
        match &self.transport {
            McpTransportConfig::Stdio(stdio) => {
                object.insert("command".into(), json!(stdio.command));
                object.insert("args".into(), json!(stdio.args));
                object.insert("env".into(), redacted(&stdio.env));
                object.insert("env_vars".into(), json!(stdio.env_vars));
                object.insert(
                    "cwd".into(),
                    json!(stdio.cwd.as_ref().map(|cwd| cwd.display().to_string())),
                );
            }
            McpTransportConfig::StreamableHttp(http) => {
                object.insert("url".into(), json!(http.url));
                object.insert(
                    "bearer_token_env_var".into(),
                    json!(http.bearer_token_env_var),
                );
                object.insert("http_headers".into(), redacted(&http.http_headers));
                object.insert("env_http_headers".into(), json!(http.env_http_headers));
            }
        }
        object.insert("enabled".into(), json!(self.enabled));
        object.insert("required".into(), json!(self.required));
        object.insert(
            "startup_timeout_sec".into(),
            json!(self.startup_timeout.as_secs_f64()),
        );
        object.insert(
            "tool_timeout_sec".into(),
            json!(self.tool_timeout.as_secs_f64()),
        );
        object.insert("enabled_tools".into(), json!(self.enabled_tools));
        object.insert("disabled_tools".into(), json!(self.disabled_tools));
        object.insert(
            "default_tools_approval_mode".into(),
            json!(
                self.default_tools_approval_mode
                    .map(ToolApprovalMode::as_str)
            ),
        );
        let tools: serde_json::Map<String, Value> = self
            .tool_approval_modes
            .iter()
            .map(|(tool, mode)| (tool.clone(), json!({ "approval_mode": mode.as_str() })))
            .collect();
        object.insert("tools".into(), tools.into());
        object.into()
    }
}

/// How a server is reached.
#[derive(Debug, Clone, PartialEq)]
pub enum McpTransportConfig {
    /// A child process speaking MCP over its stdin and stdout.
    Stdio(StdioServerConfig),
    /// A server at an HTTP URL (MCP's streamable HTTP transport).
    StreamableHttp(HttpServerConfig),
}

/// A stdio server's launch settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StdioServerConfig {
    /// `command`: the program, looked up on the allowed `PATH`.
    pub command: String,
    /// `args`.
    pub args: Vec<String>,
    /// `env`: variables set for the server, over everything else.
    pub env: BTreeMap<String, String>,
    /// `env_vars`: names of Tandem's own variables passed on beyond the allow-list.
    pub env_vars: Vec<String>,
    /// `cwd`: where it runs; Tandem's own working directory when unset.
    pub cwd: Option<PathBuf>,
}

/// A streamable HTTP server's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpServerConfig {
    /// `url`: the MCP endpoint, `http://` or `https://`.
    pub url: String,
    /// `bearer_token_env_var`: the variable holding a token sent as `Authorization: Bearer`.
    pub bearer_token_env_var: Option<String>,
    /// `http_headers`: headers sent with every request.
    pub http_headers: BTreeMap<String, String>,
    /// `env_http_headers`: headers whose values are read from Tandem's environment, header
    /// name to variable name.
    pub env_http_headers: BTreeMap<String, String>,
}

/// How calls of a tool are approved: the reference's `approval_mode` values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ToolApprovalMode {
    /// `auto` (the default): called without asking.
    #[default]
    Auto,
    /// `prompt`: the client is asked before every call.
    Prompt,
    /// `approve`: approved in advance, never asked.
    Approve,
}

impl ToolApprovalMode {
    /// The config value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Prompt => "prompt",
            Self::Approve => "approve",
        }
    }
}

/// Why an `[mcp_servers]` value cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {key} = {value}: {reason}")]
pub struct McpConfigError {
    /// The dotted key, from `mcp_servers` on (`mcp_servers.docs.startup_timeout_sec`).
    pub key: String,
    /// The value as written.
    pub value: String,
    /// What is wrong and what would be accepted.
    pub reason: String,
}

/// Reads the `mcp_servers` value of a configuration: a table of server tables.
pub fn parse_mcp_servers(
    value: &toml::Value,
) -> Result<BTreeMap<String, McpServerConfig>, McpConfigError> {
    let toml::Value::Table(servers) = value else {
        return Err(McpConfigError {
            key: MCP_SERVERS_KEY.to_owned(),
            value: value.to_string(),
            reason: "expected tables of servers, [mcp_servers.NAME]".to_owned(),
        });
    };
    servers
        .iter()
        .map(|(name, table)| Ok((name.clone(), parse_server(name, table)?)))
        .collect()
}

fn parse_server(name: &str, value: &toml::Value) -> Result<McpServerConfig, McpConfigError> {
    let prefix = format!("{MCP_SERVERS_KEY}.{name}");
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(McpConfigError {
            key: prefix,
            value: String::new(),
            reason: "a server name is 1 or more characters of A-Z a-z 0-9 _ - (it becomes part \
                     of the tool names the model sees)"
                .to_owned(),
        });
    }
    let toml::Value::Table(table) = value else {
        return Err(McpConfigError {
            key: prefix,
            value: value.to_string(),
            reason: "expected a table: [mcp_servers.NAME] with command or url".to_owned(),
        });
    };
    let fields = Fields {
        table,
        prefix: &prefix,
    };
    let transport = match (table.get("command"), table.get("url")) {
        (Some(_), Some(_)) => {
            return Err(fields.invalid(
                "url",
                "a server has either command (stdio) or url (streamable HTTP), not both",
            ));
        }
        (Some(_), None) => {
            for http_only in ["bearer_token_env_var", "http_headers", "env_http_headers"] {
                if table.contains_key(http_only) {
                    return Err(fields.invalid(
                        http_only,
                        "only a streamable HTTP server (url = ...) takes this key",
                    ));
                }
            }
            let command = fields.string("command")?.unwrap_or_default();
            if command.trim().is_empty() {
                return Err(fields.invalid("command", "expected a program such as \"npx\""));
            }
            McpTransportConfig::Stdio(StdioServerConfig {
                command,
                args: fields.strings("args")?.unwrap_or_default(),
                env: fields.string_map("env")?,
                env_vars: fields.strings("env_vars")?.unwrap_or_default(),
                cwd: fields.string("cwd")?.map(PathBuf::from),
            })
        }
        (None, Some(_)) => {
            for stdio_only in ["args", "env", "env_vars", "cwd"] {
                if table.contains_key(stdio_only) {
                    return Err(fields.invalid(
                        stdio_only,
                        "only a stdio server (command = ...) takes this key",
                    ));
                }
            }
            let url = fields.string("url")?.unwrap_or_default();
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(fields.invalid(
                    "url",
                    "expected an http:// or https:// URL of the server's MCP endpoint",
                ));
            }
            McpTransportConfig::StreamableHttp(HttpServerConfig {
                url,
                bearer_token_env_var: fields.string("bearer_token_env_var")?,
                http_headers: fields.string_map("http_headers")?,
                env_http_headers: fields.string_map("env_http_headers")?,
            })
        }
        (None, None) => {
            return Err(McpConfigError {
                key: prefix,
                value: value.to_string(),
                reason: "set command = \"PROGRAM\" (a stdio server) or url = \"https://...\" \
                         (a streamable HTTP server)"
                    .to_owned(),
            });
        }
    };
    let mut tool_approval_modes = BTreeMap::new();
    if let Some(tools) = table.get("tools") {
        let toml::Value::Table(tools) = tools else {
            return Err(fields.invalid("tools", "expected tables, [mcp_servers.NAME.tools.TOOL]"));
        };
        for (tool, settings) in tools {
            let tool_prefix = format!("{prefix}.tools.{tool}");
            let toml::Value::Table(settings) = settings else {
                return Err(McpConfigError {
                    key: tool_prefix,
                    value: settings.to_string(),
                    reason: "expected a table with approval_mode".to_owned(),
                });
            };
            let tool_fields = Fields {
                table: settings,
                prefix: &tool_prefix,
            };
            if let Some(mode) = tool_fields.approval_mode("approval_mode")? {
                tool_approval_modes.insert(tool.clone(), mode);
            }
        }
    }
    Ok(McpServerConfig {
        name: name.to_owned(),
        transport,
        enabled: fields.bool("enabled")?.unwrap_or(true),
        required: fields.bool("required")?.unwrap_or(false),
        startup_timeout: fields
            .seconds("startup_timeout_sec")?
            .unwrap_or(DEFAULT_STARTUP_TIMEOUT),
        tool_timeout: fields
            .seconds("tool_timeout_sec")?
            .unwrap_or(DEFAULT_TOOL_TIMEOUT),
        enabled_tools: fields.strings("enabled_tools")?,
        disabled_tools: fields.strings("disabled_tools")?.unwrap_or_default(),
        default_tools_approval_mode: fields.approval_mode("default_tools_approval_mode")?,
        tool_approval_modes,
    })
}

/// Typed reads of one table's keys, with errors naming the dotted key.
struct Fields<'a> {
    table: &'a toml::Table,
    prefix: &'a str,
}

impl Fields<'_> {
    fn invalid(&self, key: &str, reason: &str) -> McpConfigError {
        McpConfigError {
            key: format!("{}.{key}", self.prefix),
            value: self
                .table
                .get(key)
                .map(ToString::to_string)
                .unwrap_or_default(),
            reason: reason.to_owned(),
        }
    }

    fn string(&self, key: &str) -> Result<Option<String>, McpConfigError> {
        match self.table.get(key) {
            None => Ok(None),
            Some(toml::Value::String(value)) => Ok(Some(value.clone())),
            Some(_) => Err(self.invalid(key, "expected a string")),
        }
    }

    fn bool(&self, key: &str) -> Result<Option<bool>, McpConfigError> {
        match self.table.get(key) {
            None => Ok(None),
            Some(toml::Value::Boolean(value)) => Ok(Some(*value)),
            Some(_) => Err(self.invalid(key, "expected true or false")),
        }
    }

    fn strings(&self, key: &str) -> Result<Option<Vec<String>>, McpConfigError> {
        match self.table.get(key) {
            None => Ok(None),
            Some(toml::Value::Array(items)) => items
                .iter()
                .map(|item| match item {
                    toml::Value::String(item) => Ok(item.clone()),
                    _ => Err(self.invalid(key, "expected a list of strings, e.g. [\"a\", \"b\"]")),
                })
                .collect::<Result<_, _>>()
                .map(Some),
            Some(_) => Err(self.invalid(key, "expected a list of strings, e.g. [\"a\", \"b\"]")),
        }
    }

    fn string_map(&self, key: &str) -> Result<BTreeMap<String, String>, McpConfigError> {
        let reason = "expected a table of strings, e.g. { NAME = \"value\" }";
        match self.table.get(key) {
            None => Ok(BTreeMap::new()),
            Some(toml::Value::Table(map)) => map
                .iter()
                .map(|(name, value)| match value {
                    toml::Value::String(value) => Ok((name.clone(), value.clone())),
                    _ => Err(self.invalid(key, reason)),
                })
                .collect(),
            Some(_) => Err(self.invalid(key, reason)),
        }
    }

    fn seconds(&self, key: &str) -> Result<Option<Duration>, McpConfigError> {
        let secs = match self.table.get(key) {
            None => return Ok(None),
            Some(toml::Value::Integer(secs)) => *secs as f64,
            Some(toml::Value::Float(secs)) => *secs,
            Some(_) => {
                return Err(self.invalid(key, "expected a number of seconds, e.g. 30 or 2.5"));
            }
        };
        if !(secs > 0.0 && secs <= MAX_TIMEOUT.as_secs_f64()) {
            return Err(self.invalid(
                key,
                "expected more than 0 seconds and at most 86400 (a day)",
            ));
        }
        Ok(Some(Duration::from_secs_f64(secs)))
    }

    fn approval_mode(&self, key: &str) -> Result<Option<ToolApprovalMode>, McpConfigError> {
        Ok(match self.string(key)?.as_deref() {
            None => None,
            Some("auto") => Some(ToolApprovalMode::Auto),
            Some("prompt") => Some(ToolApprovalMode::Prompt),
            Some("approve") => Some(ToolApprovalMode::Approve),
            Some(_) => {
                return Err(self.invalid(key, "expected \"auto\", \"prompt\" or \"approve\""));
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<BTreeMap<String, McpServerConfig>, McpConfigError> {
        let table: toml::Table = toml::from_str(text).expect("toml");
        parse_mcp_servers(&table["mcp_servers"])
    }

    #[test]
    fn stdio_and_http_servers_with_the_reference_defaults() {
        let servers = parse(
            r#"
            [mcp_servers.docs]
            command = "npx"
            args = ["-y", "server"]
            env = { A = "1" }
            env_vars = ["GITHUB_TOKEN"]
            [mcp_servers.remote]
            url = "https://example.test/mcp"
            bearer_token_env_var = "TOKEN"
            tool_timeout_sec = 2.5
            enabled_tools = ["a", "b"]
            disabled_tools = ["b"]
            default_tools_approval_mode = "prompt"
            [mcp_servers.remote.tools.a]
            approval_mode = "approve"
            "#,
        )
        .expect("valid");
        let docs = &servers["docs"];
        assert_eq!(docs.startup_timeout, Duration::from_secs(30));
        assert_eq!(docs.tool_timeout, Duration::from_secs(300));
        assert!(docs.enabled && !docs.required);
        let McpTransportConfig::Stdio(stdio) = &docs.transport else {
            panic!("stdio expected");
        };
        assert_eq!(stdio.args, ["-y", "server"]);
        assert_eq!(stdio.env_vars, ["GITHUB_TOKEN"]);
        let remote = &servers["remote"];
        assert_eq!(remote.tool_timeout, Duration::from_millis(2500));
        assert!(remote.tool_enabled("a"));
        assert!(!remote.tool_enabled("b") && !remote.tool_enabled("c"));
        assert_eq!(remote.approval_mode("a"), ToolApprovalMode::Approve);
        assert_eq!(remote.approval_mode("c"), ToolApprovalMode::Prompt);
        let object = remote.to_config_object();
        assert_eq!(object["url"], "https://example.test/mcp");
        assert_eq!(object["tools"]["a"]["approval_mode"], "approve");
    }

    #[test]
    fn invalid_values_name_the_key_and_say_what_fits() {
        let cases = [
            ("[mcp_servers.x]\nargs = []", "mcp_servers.x", "set command"),
            (
                "[mcp_servers.x]\ncommand = \"a\"\nurl = \"http://h\"",
                "mcp_servers.x.url",
                "not both",
            ),
            (
                "[mcp_servers.x]\ncommand = \"a\"\nstartup_timeout_sec = 0",
                "mcp_servers.x.startup_timeout_sec",
                "more than 0",
            ),
            (
                "[mcp_servers.x]\nurl = \"ftp://h\"",
                "mcp_servers.x.url",
                "http://",
            ),
            (
                "[mcp_servers.x]\nurl = \"http://h\"\nargs = [\"a\"]",
                "mcp_servers.x.args",
                "stdio",
            ),
            (
                "[mcp_servers.x]\ncommand = \"a\"\ndefault_tools_approval_mode = \"yes\"",
                "mcp_servers.x.default_tools_approval_mode",
                "\"prompt\"",
            ),
            (
                "[mcp_servers.\"a b\"]\ncommand = \"a\"",
                "mcp_servers.a b",
                "A-Z a-z",
            ),
        ];
        for (text, key, reason) in cases {
            let error = parse(text).expect_err(text);
            assert_eq!(error.key, key, "{text}");
            assert!(error.reason.contains(reason), "{text}: {error}");
        }
    }
}

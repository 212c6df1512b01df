//! `tandem mcp list`: starts the configured MCP servers as a session would, waits until each
//! has connected or failed (at most its `startup_timeout_sec`), and prints each server's
//! state, the tools a session gets from it under the model's names, the tools it has that
//! the configuration hides, and why a server failed: "which tools did my session actually
//! get, and why not the others".

use std::fmt::Write as _;
use std::time::Duration;

use clap::Subcommand;
use tandem_server::mcp::{McpManager, McpServerSnapshot, McpServerState, McpTransportConfig};

use crate::settings::GlobalOptions;

/// `tandem mcp ...`.
#[derive(Debug, clap::Args)]
pub(crate) struct McpArgs {
    #[command(subcommand)]
    command: McpCommand,
}

#[derive(Debug, Subcommand)]
enum McpCommand {
    /// Start every configured MCP server, then print its state and the tools a session gets.
    List,
}

/// How often the servers' states are looked at while they start.
const POLL: Duration = Duration::from_millis(50);

/// Runs `tandem mcp`; the exit code is 1 when the configuration does not load or a
/// `required` server did not connect.
pub(crate) async fn run(args: McpArgs, global: GlobalOptions) -> i32 {
    let McpCommand::List = args.command;
    let loaded = tokio::task::spawn_blocking(move || global.load_options(false)).await;
    let options = match loaded {
        Ok(Ok((options, _))) => options,
        Ok(Err(error)) => {
            eprintln!("tandem: {error}");
            return 1;
        }
        Err(error) => {
            eprintln!("tandem: {error}");
            return 1;
        }
    };
    if let Some(helper) = &options.helper_program {
        tandem_server::helper::enable_watchdog(helper);
    }
    let servers = options.config.mcp_servers.clone();
    if servers.is_empty() {
        println!(
            "No MCP servers are configured: add [mcp_servers.NAME] to {}",
            options.config.config_file().display()
        );
        return 0;
    }
    let longest = servers
        .values()
        .map(|server| server.startup_timeout)
        .max()
        .unwrap_or_default();
    let manager = McpManager::new(servers);
    manager.start();
    // Each start ends by its own timeout; the margin covers a kill that takes a moment.
    let deadline = tokio::time::Instant::now() + longest + Duration::from_secs(2);
    while tokio::time::Instant::now() < deadline
        && manager.statuses().iter().any(|status| {
            matches!(
                status.state,
                McpServerState::NotStarted | McpServerState::Starting
            )
        })
    {
        tokio::time::sleep(POLL).await;
    }
    let statuses = manager.statuses();
    let model_names: Vec<(String, String, String)> = manager
        .ready_tools()
        .into_iter()
        .map(|tool| (tool.server, tool.tool, tool.model_name))
        .collect();
    print!("{}", render(&statuses, &model_names));
    manager.shutdown();
    let required_missing = statuses.iter().any(|status| {
        status.config.enabled && status.config.required && status.state != McpServerState::Connected
    });
    i32::from(required_missing)
}

/// The listing: one block per server.
fn render(statuses: &[McpServerSnapshot], model_names: &[(String, String, String)]) -> String {
    let mut out = String::new();
    for status in statuses {
        let config = &status.config;
        let transport = match &config.transport {
            McpTransportConfig::Stdio(stdio) => format!("stdio: {}", stdio.command),
            McpTransportConfig::StreamableHttp(http) => format!("http: {}", http.url),
        };
        let required = if config.required { ", required" } else { "" };
        let _ = writeln!(
            out,
            "{}  {}  ({transport}{required})",
            config.name,
            status.state.as_str()
        );
        if let Some(error) = status.error.as_ref().or(status.tools_error.as_ref()) {
            let _ = writeln!(out, "  error: {error}");
        }
        for tool in &status.tools {
            let model_name = model_names
                .iter()
                .find(|(server, name, _)| *server == config.name && name == tool.name.as_ref())
                .map(|(_, _, model_name)| model_name.as_str())
                .unwrap_or("-");
            let description = tool.description.as_deref().unwrap_or_default();
            let _ = writeln!(out, "  tool {model_name}  {description}");
        }
        for hidden in &status.hidden_tools {
            let why = if config.disabled_tools.iter().any(|name| name == hidden) {
                "in disabled_tools"
            } else {
                "not in enabled_tools"
            };
            let _ = writeln!(out, "  hidden {hidden}  ({why})");
        }
        if status.state == McpServerState::Connected {
            let _ = writeln!(
                out,
                "  {} resources, {} resource templates",
                status.resources.len(),
                status.resource_templates.len()
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use tandem_server::mcp::parse_mcp_servers;
    use tandem_test_support::mcp_server::{CrashMode, TestMcpServer, serve_http};

    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_listing_shows_states_offered_and_hidden_tools_and_errors() {
        let http = serve_http(TestMcpServer::new(CrashMode::Refuse), 0)
            .await
            .expect("http server");
        let text = format!(
            "[mcp_servers.web]\nurl = \"{}\"\ndisabled_tools = [\"crash\"]\n\
             [mcp_servers.broken]\ncommand = \"/nonexistent/server\"\nrequired = true\n\
             [mcp_servers.off]\ncommand = \"x\"\nenabled = false\n",
            http.url
        );
        let table: toml::Table = toml::from_str(&text).expect("toml");
        let servers: BTreeMap<_, _> = parse_mcp_servers(&table["mcp_servers"]).expect("valid");
        let manager = McpManager::new(servers);
        manager.start();
        tokio::time::timeout(Duration::from_secs(60), async {
            while manager.statuses().iter().any(|status| {
                matches!(
                    status.state,
                    McpServerState::NotStarted | McpServerState::Starting
                )
            }) {
                tokio::time::sleep(POLL).await;
            }
        })
        .await
        .expect("servers settle");
        let names: Vec<(String, String, String)> = manager
            .ready_tools()
            .into_iter()
            .map(|tool| (tool.server, tool.tool, tool.model_name))
            .collect();
        let listing = render(&manager.statuses(), &names);
        manager.shutdown();
        assert!(
            listing.contains("broken  failed  (stdio: /nonexistent/server, required)\n  error: cannot start MCP server broken"),
            "{listing}"
        );
        assert!(listing.contains("off  disabled  (stdio: x)\n"), "{listing}");
        assert!(
            listing.contains("  tool mcp__web__echo  Answers its text\n"),
            "{listing}"
        );
        assert!(
            listing.contains("  hidden crash  (in disabled_tools)\n"),
            "{listing}"
        );
        assert!(
            listing.contains("  1 resources, 1 resource templates\n"),
            "{listing}"
        );
    }
}

//! The `[mcp_servers]` tables (issue 30) in the configuration: validated at load like every
//! key (typos warned with a suggestion, refused in strict mode, invalid values named with
//! their origin), shown by `config/read` without secrets, and written by `config/value/write`.

use serde_json::json;
use tandem_protocol::{ConfigEdit, MergeStrategy};

use super::write::{ConfigWriteError, write_config};
use super::*;

fn home_with(text: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join(CONFIG_FILE_NAME), text).expect("write config");
    dir
}

const DOCS: &str = "[mcp_servers.docs]\ncommand = \"docs-server\"\nenv = { TOKEN = \"secret\" }\n";

#[test]
fn mcp_server_tables_load_with_the_reference_defaults_and_no_secret_in_config_read() {
    let home = home_with(DOCS);
    let config = ServerConfig::builder()
        .tandem_home(home.path())
        .load()
        .expect("load");
    let docs = &config.mcp_servers["docs"];
    assert_eq!(docs.startup_timeout, Duration::from_secs(30));
    assert_eq!(docs.tool_timeout, Duration::from_secs(300));
    let shown = config.to_config_object();
    assert_eq!(shown["mcp_servers"]["docs"]["command"], "docs-server");
    assert_eq!(shown["mcp_servers"]["docs"]["env"]["TOKEN"], "<redacted>");
    assert!(!shown.to_string().contains("secret"));
}

#[test]
fn mcp_server_typos_warn_and_strict_mode_refuses_them() {
    let home = home_with(&format!(
        "{DOCS}startup_timeout_secs = 5\n[mcp_servers.docs.tools.search]\naproval_mode = \"prompt\"\n"
    ));
    let (_, warnings) = ServerConfig::builder()
        .tandem_home(home.path())
        .load_with_warnings()
        .expect("loads with warnings");
    let unknown: Vec<(String, Option<String>)> = warnings
        .iter()
        .filter_map(|warning| match warning {
            ConfigWarning::UnknownKey {
                key, suggestion, ..
            } => Some((key.clone(), suggestion.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        unknown,
        [
            (
                "mcp_servers.docs.startup_timeout_secs".to_owned(),
                Some("startup_timeout_sec".to_owned())
            ),
            (
                "mcp_servers.docs.tools.search.aproval_mode".to_owned(),
                Some("approval_mode".to_owned())
            ),
        ]
    );
    let strict = ServerConfig::builder()
        .tandem_home(home.path())
        .strict(true)
        .load()
        .expect_err("strict");
    assert!(
        strict.to_string().contains("startup_timeout_secs"),
        "{strict}"
    );
}

#[test]
fn an_invalid_mcp_value_names_the_key_and_where_it_came_from() {
    let home = home_with(DOCS);
    let error = ServerConfig::builder()
        .tandem_home(home.path())
        .config_override("mcp_servers.docs.tool_timeout_sec", (-1).into())
        .load()
        .expect_err("negative timeout");
    let message = error.to_string();
    assert!(
        message.contains("mcp_servers.docs.tool_timeout_sec") && message.contains("-c"),
        "{message}"
    );
}

#[test]
fn config_value_write_sets_and_validates_mcp_keys() {
    let home = home_with(DOCS);
    let config = ServerConfig::builder()
        .tandem_home(home.path())
        .load()
        .expect("load");
    let edit = |key: &str, value: Value| ConfigEdit {
        key_path: key.into(),
        value,
        merge_strategy: MergeStrategy::Replace,
    };
    let written = write_config(
        &config,
        &[edit("mcp_servers.docs.tool_timeout_sec", json!(60))],
        None,
        None,
    )
    .expect("writes");
    assert_eq!(
        written.config.mcp_servers["docs"].tool_timeout,
        Duration::from_secs(60)
    );
    let added = write_config(
        &written.config,
        &[edit(
            "mcp_servers.web",
            json!({"url": "https://example.test/mcp", "required": true}),
        )],
        None,
        None,
    )
    .expect("adds a server");
    assert!(added.config.mcp_servers["web"].required);
    let refused = write_config(
        &added.config,
        &[edit("mcp_servers.web.args", json!(["x"]))],
        None,
        None,
    );
    let Err(ConfigWriteError::Validation(message)) = refused else {
        panic!("args on an HTTP server is refused");
    };
    assert!(message.contains("mcp_servers.web.args"), "{message}");
}

//! The `file_search_api` and `shell_command_api` keys: whether a connected client may use
//! `fuzzyFileSearch` and `thread/shellCommand`, which, like the `fs/*` methods (`fs_api`),
//! act with the server's own rights (docs/security.md). Each is a switch of its own so that
//! a server can keep, say, the file picker while refusing shell commands.

use super::ConfigError;
use super::layers::Layered;

/// Config key: `false` turns `fuzzyFileSearch` off (it answers -32601).
pub const FILE_SEARCH_API_KEY: &str = "file_search_api";

/// Config key: `false` turns `thread/shellCommand` off (it answers -32601).
pub const SHELL_COMMAND_API_KEY: &str = "shell_command_api";

/// The two switches as a merged table sets them; `None` for a key no layer set.
#[derive(Debug, Default)]
pub(super) struct ClientApiSettings {
    pub(super) file_search: Option<bool>,
    pub(super) shell_command: Option<bool>,
}

/// Reads and checks both keys of `layered`.
pub(super) fn parse_client_apis(layered: &Layered) -> Result<ClientApiSettings, ConfigError> {
    let switch = |key: &str, method: &str| match layered.table.get(key) {
        None => Ok(None),
        Some(toml::Value::Boolean(enabled)) => Ok(Some(*enabled)),
        Some(other) => Err(ConfigError::InvalidValue {
            key: key.to_owned(),
            value: other.to_string(),
            origin: layered.origin_of(key).to_string(),
            reason: format!(
                "expected true (serve {method}) or false (answer -32601), found a {}",
                other.type_str()
            ),
        }),
    };
    Ok(ClientApiSettings {
        file_search: switch(FILE_SEARCH_API_KEY, "fuzzyFileSearch")?,
        shell_command: switch(SHELL_COMMAND_API_KEY, "thread/shellCommand")?,
    })
}

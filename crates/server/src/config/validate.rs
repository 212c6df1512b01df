//! What a configuration that loads may still get wrong, found at load time rather than on the
//! first request: keys nobody reads (a typo such as `modle` would otherwise be ignored in
//! silence), a selected provider whose API key variable is not set (otherwise an HTTP 401
//! after the first request), and a selected provider with no model (otherwise a failure when
//! the first turn starts).
//!
//! Unknown keys are warnings, with the nearest known key as a suggestion, so that a file shared
//! with another tool or a newer server still loads; [`super::ServerConfigBuilder::strict`]
//! makes them errors. The provider checks are warnings for the server (a client may name the
//! model per thread, and a key may be exported before the first turn); front ends that start
//! a turn at once, like `tandem run`, treat them as errors.

use std::fmt;

use super::layers::Origin;
use super::sandbox::{SANDBOX_WORKSPACE_WRITE_KEY, WORKSPACE_WRITE_KEYS};
use super::{KNOWN_KEYS, MODEL_PROVIDERS_KEY, PROFILES_KEY, ServerConfig};
use tandem_agent::providers::PROVIDER_KEYS;
use tandem_mcp::MCP_SERVERS_KEY;
use tandem_mcp::config::{SERVER_KEYS, TOOL_KEYS};

/// Something a loaded configuration gets wrong that does not stop it from loading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigWarning {
    /// A key no part of Tandem reads; it is ignored.
    UnknownKey {
        /// The key, dotted for nested tables (`model_providers.openai.base_ur`).
        key: String,
        /// Where it was set: the config file, a profile of it, or a `-c` override.
        origin: String,
        /// The nearest known key, when one is close enough to be the intended one.
        suggestion: Option<String>,
    },
    /// The selected provider sends an API key from an environment variable that is not set.
    MissingApiKey {
        /// The selected provider.
        provider: String,
        /// The variable its `env_key` names.
        env_key: String,
    },
    /// A provider is selected but no `model` is configured.
    MissingModel {
        /// The selected provider.
        provider: String,
    },
}

impl fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownKey {
                key,
                origin,
                suggestion,
            } => {
                write!(f, "unknown config key `{key}` in {origin}")?;
                match suggestion {
                    Some(known) => write!(f, "; did you mean `{known}`?"),
                    None => Ok(()),
                }
            }
            Self::MissingApiKey { provider, env_key } => write!(
                f,
                "model provider {provider} reads its API key from {env_key}, which is not set: \
                 export {env_key}=... before starting tandem, or change env_key in \
                 [model_providers.{provider}]"
            ),
            Self::MissingModel { provider } => write!(
                f,
                "model provider {provider} is selected but no model is configured: set \
                 model = \"NAME\" in config.toml or pass -c model=NAME (or --model NAME)"
            ),
        }
    }
}

/// The unknown keys of one layer (the config file's top level, a `-c` override table, a
/// profile), including those of the provider tables and profiles it holds.
pub(crate) fn unknown_keys(table: &toml::Table, origin: &Origin) -> Vec<ConfigWarning> {
    let mut found = Vec::new();
    collect_top_level(table, origin, &mut found);
    found
}

fn collect_top_level(table: &toml::Table, origin: &Origin, found: &mut Vec<ConfigWarning>) {
    for (key, value) in table {
        if !KNOWN_KEYS.contains(&key.as_str()) {
            found.push(unknown(key, KNOWN_KEYS, origin));
            continue;
        }
        match (key.as_str(), value) {
            (MODEL_PROVIDERS_KEY, toml::Value::Table(providers)) => {
                for (id, provider) in providers {
                    let toml::Value::Table(provider) = provider else {
                        continue;
                    };
                    for name in provider.keys() {
                        if !PROVIDER_KEYS.contains(&name.as_str()) {
                            let mut warning = unknown(name, PROVIDER_KEYS, origin);
                            prefix_key(&mut warning, &format!("{MODEL_PROVIDERS_KEY}.{id}."));
                            found.push(warning);
                        }
                    }
                }
            }
            (super::STORE_KEY, toml::Value::Table(options)) => {
                for name in options.keys() {
                    if !super::store::STORE_KEYS.contains(&name.as_str()) {
                        let mut warning = unknown(name, super::store::STORE_KEYS, origin);
                        prefix_key(&mut warning, &format!("{}.", super::STORE_KEY));
                        found.push(warning);
                    }
                }
            }
            (SANDBOX_WORKSPACE_WRITE_KEY, toml::Value::Table(options)) => {
                for name in options.keys() {
                    if !WORKSPACE_WRITE_KEYS.contains(&name.as_str()) {
                        let mut warning = unknown(name, WORKSPACE_WRITE_KEYS, origin);
                        prefix_key(&mut warning, &format!("{SANDBOX_WORKSPACE_WRITE_KEY}."));
                        found.push(warning);
                    }
                }
            }
            (MCP_SERVERS_KEY, toml::Value::Table(servers)) => {
                for (server, table) in servers {
                    let toml::Value::Table(table) = table else {
                        continue;
                    };
                    let prefix = format!("{MCP_SERVERS_KEY}.{server}.");
                    for (name, value) in table {
                        if !SERVER_KEYS.contains(&name.as_str()) {
                            let mut warning = unknown(name, SERVER_KEYS, origin);
                            prefix_key(&mut warning, &prefix);
                            found.push(warning);
                        } else if let ("tools", toml::Value::Table(tools)) = (name.as_str(), value)
                        {
                            for (tool, settings) in tools {
                                let toml::Value::Table(settings) = settings else {
                                    continue;
                                };
                                for key in settings.keys() {
                                    if !TOOL_KEYS.contains(&key.as_str()) {
                                        let mut warning = unknown(key, TOOL_KEYS, origin);
                                        prefix_key(&mut warning, &format!("{prefix}tools.{tool}."));
                                        found.push(warning);
                                    }
                                }
                            }
                        }
                    }
                }
            }
            (PROFILES_KEY, toml::Value::Table(profiles)) => {
                for (name, profile) in profiles {
                    let toml::Value::Table(profile) = profile else {
                        continue;
                    };
                    let origin = match origin {
                        Origin::File(path) => Origin::Profile {
                            name: name.clone(),
                            path: path.clone(),
                        },
                        other => other.clone(),
                    };
                    let mut inner = Vec::new();
                    collect_top_level(profile, &origin, &mut inner);
                    for mut warning in inner {
                        prefix_key(&mut warning, &format!("{PROFILES_KEY}.{name}."));
                        found.push(warning);
                    }
                }
            }
            _ => {}
        }
    }
}

fn unknown(key: &str, known: &[&str], origin: &Origin) -> ConfigWarning {
    ConfigWarning::UnknownKey {
        key: key.to_owned(),
        origin: origin.to_string(),
        suggestion: nearest(key, known).map(str::to_owned),
    }
}

fn prefix_key(warning: &mut ConfigWarning, prefix: &str) {
    if let ConfigWarning::UnknownKey { key, .. } = warning {
        key.insert_str(0, prefix);
    }
}

/// The known key closest to `key` by edit distance (a swap of two neighbours counting once),
/// if it is close enough to be a typo of it: at most a third of its length, and at most 3; or
/// else a known key that `key` is a prefix of, or that is a prefix of `key` (a unit left off,
/// `thread_unload_delay`, or added).
fn nearest<'a>(key: &str, known: &[&'a str]) -> Option<&'a str> {
    let limit = (key.chars().count() / 3).clamp(1, 3);
    let by_distance = known
        .iter()
        .map(|candidate| (strsim::damerau_levenshtein(key, candidate), *candidate))
        .filter(|(distance, _)| *distance <= limit)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate);
    by_distance.or_else(|| {
        known
            .iter()
            .find(|candidate| {
                key.len() >= 4 && (candidate.starts_with(key) || key.starts_with(**candidate))
            })
            .copied()
    })
}

/// The selected provider's problems that would otherwise surface on the first request: its API
/// key variable unset (checked with `env_var`, so that tests need not touch the environment)
/// and no model configured.
pub(crate) fn provider_warnings(
    config: &ServerConfig,
    env_var: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Vec<ConfigWarning> {
    let Some(provider) = config.selected_provider() else {
        return Vec::new();
    };
    let mut found = Vec::new();
    // A provider replaying a cassette sends nothing, so it needs no key.
    let replays = provider
        .cassette
        .as_ref()
        .is_some_and(|cassette| cassette.mode == tandem_agent::CassetteMode::Replay);
    if let Some(env_key) = &provider.env_key
        && !replays
        && env_var(env_key).is_none_or(|value| value.is_empty())
    {
        found.push(ConfigWarning::MissingApiKey {
            provider: provider.id.clone(),
            env_key: env_key.clone(),
        });
    }
    if config.model.is_none() {
        found.push(ConfigWarning::MissingModel {
            provider: provider.id.clone(),
        });
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_suggest_the_nearest_known_key() {
        assert_eq!(nearest("modle", KNOWN_KEYS), Some("model"));
        assert_eq!(nearest("model_provder", KNOWN_KEYS), Some("model_provider"));
        assert_eq!(
            nearest("model_provders", KNOWN_KEYS),
            Some("model_providers")
        );
        assert_eq!(nearest("base_ur", PROVIDER_KEYS), Some("base_url"));
        assert_eq!(nearest("colour_theme", KNOWN_KEYS), None);
        assert_eq!(nearest("x", KNOWN_KEYS), None);
        assert_eq!(
            nearest("thread_unload_delay", KNOWN_KEYS),
            Some("thread_unload_delay_secs")
        );
    }
}

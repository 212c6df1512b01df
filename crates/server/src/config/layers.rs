//! The layers a configuration is merged from (the config file, a profile of it, `-c`
//! overrides) and where each value came from, so that a bad value is reported against the
//! layer that set it rather than against the file in general.
//!
//! Layers are TOML tables merged key by key: a table merges into a table, any other value
//! replaces what was there. Every leaf that a layer sets records that layer as its origin.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use super::ConfigError;

/// Where a configuration value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Origin {
    /// Nobody set it: a built-in default.
    Default,
    /// The config file.
    File(PathBuf),
    /// `[profiles.<name>]` of the config file.
    Profile {
        /// The profile's name.
        name: String,
        /// The config file.
        path: PathBuf,
    },
    /// [`super::ServerConfigBuilder::config_override`], the CLI's `-c key=value`.
    Override,
    /// A typed setter of [`super::ServerConfigBuilder`].
    StartArguments,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Default => f.write_str("the built-in defaults"),
            Self::File(path) => write!(f, "{}", path.display()),
            Self::Profile { name, path } => {
                write!(f, "profile {name} of {}", path.display())
            }
            Self::Override => f.write_str("a -c override"),
            Self::StartArguments => f.write_str("the server's start arguments"),
        }
    }
}

/// A merged configuration table and the origin of each leaf in it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Layered {
    pub(crate) table: toml::Table,
    /// Dotted path of every leaf set so far, with the layer that set it last.
    origins: BTreeMap<String, Origin>,
}

impl Layered {
    /// Merges `layer` over what is there, recording `origin` for each leaf it sets.
    pub(crate) fn merge(&mut self, layer: toml::Table, origin: &Origin) {
        merge_into(&mut self.table, layer, origin, "", &mut self.origins);
    }

    /// Sets the value at the dotted `key` (creating the tables on the way), as a `-c`
    /// override does. Fails if a segment on the way holds a value that is not a table.
    pub(crate) fn set(
        &mut self,
        key: &str,
        value: toml::Value,
        origin: &Origin,
    ) -> Result<(), ConfigError> {
        let path = split_dotted_key(key).ok_or_else(|| ConfigError::InvalidValue {
            key: key.to_owned(),
            value: value.to_string(),
            origin: origin.to_string(),
            reason: "not a dotted key: use names joined by `.`, quoting a name that holds a \
                     `.` (for example model_providers.\"my.provider\".base_url)"
                .to_owned(),
        })?;
        let (last, parents) = path.split_last().expect("a key has at least one segment");
        let mut table = &mut self.table;
        let mut walked = String::new();
        for segment in parents {
            if !walked.is_empty() {
                walked.push('.');
            }
            walked.push_str(segment);
            let entry = table
                .entry(segment.clone())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            table = match entry {
                toml::Value::Table(inner) => inner,
                other => {
                    return Err(ConfigError::InvalidValue {
                        key: key.to_owned(),
                        value: value.to_string(),
                        origin: origin.to_string(),
                        reason: format!(
                            "{walked} is a {}, not a table, so it has no key {last}",
                            other.type_str()
                        ),
                    });
                }
            };
        }
        let dotted = path.join(".");
        match value {
            toml::Value::Table(inner) => {
                let target = table
                    .entry(last.clone())
                    .or_insert_with(|| toml::Value::Table(toml::Table::new()));
                if !target.is_table() {
                    *target = toml::Value::Table(toml::Table::new());
                }
                if let toml::Value::Table(existing) = target {
                    merge_into(existing, inner, origin, &dotted, &mut self.origins);
                }
            }
            leaf => {
                table.insert(last.clone(), leaf);
                self.origins.insert(dotted, origin.clone());
            }
        }
        Ok(())
    }

    /// The layer that set `path` (a dotted key): the leaf itself, else the nearest enclosing
    /// key that a layer set as a whole, else any leaf below it, else the defaults.
    pub(crate) fn origin_of(&self, path: &str) -> Origin {
        if let Some(origin) = self.origins.get(path) {
            return origin.clone();
        }
        let mut prefix = path;
        while let Some((parent, _)) = prefix.rsplit_once('.') {
            if let Some(origin) = self.origins.get(parent) {
                return origin.clone();
            }
            prefix = parent;
        }
        let below = format!("{path}.");
        self.origins
            .range(below.clone()..)
            .take_while(|(key, _)| key.starts_with(&below))
            .map(|(_, origin)| origin.clone())
            .last()
            .unwrap_or(Origin::Default)
    }
}

fn merge_into(
    base: &mut toml::Table,
    layer: toml::Table,
    origin: &Origin,
    prefix: &str,
    origins: &mut BTreeMap<String, Origin>,
) {
    for (key, value) in layer {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(existing)), toml::Value::Table(inner)) => {
                merge_into(existing, inner, origin, &path, origins);
            }
            (_, toml::Value::Table(inner)) => {
                let mut fresh = toml::Table::new();
                merge_into(&mut fresh, inner, origin, &path, origins);
                base.insert(key, toml::Value::Table(fresh));
            }
            (_, leaf) => {
                base.insert(key, leaf);
                origins.insert(path, origin.clone());
            }
        }
    }
}

/// Splits `a.b."c.d"` into `["a", "b", "c.d"]`; `None` for an empty segment or an unclosed
/// quote.
pub(crate) fn split_dotted_key(key: &str) -> Option<Vec<String>> {
    let mut segments = Vec::new();
    let mut rest = key.trim();
    loop {
        let (segment, after) = if let Some(quoted) = rest.strip_prefix('"') {
            let end = quoted.find('"')?;
            (quoted[..end].to_owned(), quoted[end + 1..].trim_start())
        } else {
            let end = rest.find('.').unwrap_or(rest.len());
            let segment = rest[..end].trim();
            if segment.is_empty() {
                return None;
            }
            (segment.to_owned(), &rest[end..])
        };
        segments.push(segment);
        if after.is_empty() {
            return Some(segments);
        }
        rest = after.strip_prefix('.')?.trim_start();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        toml::from_str(text).expect("toml")
    }

    #[test]
    fn dotted_keys_split_on_dots_outside_quotes() {
        assert_eq!(
            split_dotted_key("model_providers.\"my.provider\".base_url"),
            Some(vec![
                "model_providers".to_owned(),
                "my.provider".to_owned(),
                "base_url".to_owned()
            ])
        );
        assert_eq!(split_dotted_key("model"), Some(vec!["model".to_owned()]));
        assert_eq!(split_dotted_key("a..b"), None);
        assert_eq!(split_dotted_key("a.\"b"), None);
        assert_eq!(split_dotted_key(""), None);
    }

    #[test]
    fn later_layers_win_leaf_by_leaf_and_remember_who_set_what() {
        let file = Origin::File(PathBuf::from("/home/config.toml"));
        let mut layered = Layered::default();
        layered.merge(
            table("model = \"a\"\n[model_providers.p]\nbase_url = \"http://x\"\nenv_key = \"K\"\n"),
            &file,
        );
        layered
            .set(
                "model_providers.p.base_url",
                "http://y".into(),
                &Origin::Override,
            )
            .expect("set");
        let provider = layered.table["model_providers"]["p"]
            .as_table()
            .expect("table");
        assert_eq!(provider["base_url"].as_str(), Some("http://y"));
        assert_eq!(provider["env_key"].as_str(), Some("K"));
        assert_eq!(
            layered.origin_of("model_providers.p.base_url"),
            Origin::Override
        );
        assert_eq!(layered.origin_of("model_providers.p.env_key"), file);
        assert_eq!(layered.origin_of("model"), file);
        assert_eq!(
            layered.origin_of("thread_unload_delay_secs"),
            Origin::Default
        );
    }

    #[test]
    fn setting_below_a_value_that_is_not_a_table_names_the_key() {
        let mut layered = Layered::default();
        layered.merge(table("model = \"a\"\n"), &Origin::Default);
        let error = layered
            .set("model.name", "b".into(), &Origin::Override)
            .expect_err("model is a string");
        let message = error.to_string();
        assert!(message.contains("model.name"), "{message}");
        assert!(message.contains("-c override"), "{message}");
    }
}

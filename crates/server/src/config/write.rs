//! `config/value/write` and `config/batchWrite`: edits of the home's `config.toml` that keep
//! its comments, order and formatting (through `toml_edit`, the editing layer of the same
//! TOML parser), validated exactly like a config file at start before anything is written,
//! and written atomically (a temporary file in the home, fsynced, renamed over the file, the
//! directory fsynced) so that a crash leaves the old file or the new one, never half of one.
//!
//! The file's `version` is `sha256:<hex>` of its bytes, as the reference app-server computes
//! it; an `expectedVersion` that no longer matches refuses the write. Writes are serialized
//! by the caller (one at a time per server), so the check and the rename cannot interleave
//! with another write of this server.

use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tandem_protocol::{
    ConfigEdit, ConfigWriteResponse, JSONRPCErrorError, MergeStrategy, WriteStatus,
};
use toml_edit::{DocumentMut, Item, TableLike};

use super::layers::split_dotted_key;
use super::{ConfigWarning, PROFILES_KEY, ServerConfig};

/// Why a config write was refused or failed. Each maps onto the reference's error: -32600
/// with `data.config_write_error_code`, or -32603 for a filesystem failure.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConfigWriteError {
    /// `expectedVersion` is not the file's version.
    #[error("Configuration was modified since last read. Fetch latest version and retry.")]
    VersionConflict,
    /// The edited file would not load; nothing was written.
    #[error("Invalid configuration: {0}")]
    Validation(String),
    /// `filePath` names another file than the home's `config.toml`.
    #[error(
        "Tandem writes only its own config file, {config_file}; {requested} is not it (omit \
         filePath to write it)"
    )]
    NotWritable {
        requested: String,
        config_file: PathBuf,
    },
    /// The file could not be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The new file could not be written; the old one is unchanged.
    #[error("cannot write config file {path}: {source}; the file is unchanged")]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl ConfigWriteError {
    /// The JSON-RPC error to answer.
    pub(crate) fn to_rpc(&self) -> JSONRPCErrorError {
        let code = match self {
            Self::VersionConflict => "configVersionConflict",
            Self::Validation(_) => "configValidationError",
            Self::NotWritable { .. } => "configLayerReadonly",
            Self::Read { .. } | Self::Write { .. } => {
                return JSONRPCErrorError::internal(self.to_string());
            }
        };
        let mut error = JSONRPCErrorError::invalid_request(self.to_string());
        error.data = Some(json!({ "config_write_error_code": code }));
        error
    }
}

/// `sha256:<hex>` of `bytes`.
pub(crate) fn version_of(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut hex = String::with_capacity(7 + digest.len() * 2);
    hex.push_str("sha256:");
    for byte in digest {
        hex.push_str(&format!("{byte:02x}"));
    }
    hex
}

/// A successful write: the answer, and the configuration loaded from the new file.
pub(crate) struct Written {
    pub(crate) response: ConfigWriteResponse,
    pub(crate) config: ServerConfig,
    pub(crate) warnings: Vec<ConfigWarning>,
}

/// Applies `edits` to the config file of `current`'s home and writes it, if the result loads.
/// Blocking (filesystem); the caller serializes writes.
pub(crate) fn write_config(
    current: &ServerConfig,
    edits: &[ConfigEdit],
    file_path: Option<&str>,
    expected_version: Option<&str>,
) -> Result<Written, ConfigWriteError> {
    let path = current.config_file();
    if let Some(requested) = file_path
        && Path::new(requested) != path
    {
        return Err(ConfigWriteError::NotWritable {
            requested: requested.to_owned(),
            config_file: path,
        });
    }
    let old = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(source) => return Err(ConfigWriteError::Read { path, source }),
    };
    if let Some(expected) = expected_version
        && expected != version_of(&old)
    {
        return Err(ConfigWriteError::VersionConflict);
    }
    let old_text = String::from_utf8(old).map_err(|_| {
        ConfigWriteError::Validation(format!(
            "{} is not UTF-8 text; fix or remove it by hand",
            path.display()
        ))
    })?;
    let new_text = apply_edits(&old_text, edits)?;
    let (config, warnings) = current
        .reload_with_file_text(&new_text)
        .map_err(|error| ConfigWriteError::Validation(error.to_string()))?;
    write_atomically(&path, new_text.as_bytes()).map_err(|source| ConfigWriteError::Write {
        path: path.clone(),
        source,
    })?;
    let overridden = edits
        .iter()
        .find_map(|edit| overridden_by(current, &config, &edit.key_path));
    let response = ConfigWriteResponse {
        status: if overridden.is_some() {
            WriteStatus::OkOverridden
        } else {
            WriteStatus::Ok
        },
        version: version_of(new_text.as_bytes()),
        file_path: path.display().to_string(),
        overridden_metadata: overridden,
    };
    Ok(Written {
        response,
        config,
        warnings,
    })
}

/// The reference's `overriddenMetadata` when a layer above the file (a `-c` override, or the
/// selected profile) also sets `key_path` and so wins over the written value.
fn overridden_by(current: &ServerConfig, new: &ServerConfig, key_path: &str) -> Option<Value> {
    let path = split_dotted_key(key_path)?;
    let overlaps = |other: &[String]| {
        let shared = path.len().min(other.len());
        path[..shared] == other[..shared]
    };
    let effective = new
        .to_config_object()
        .pointer(&format!("/{}", path.join("/")))
        .cloned()
        .unwrap_or(Value::Null);
    let by_override = current
        .source
        .overrides
        .iter()
        .filter_map(|(key, _)| split_dotted_key(key))
        .any(|key| overlaps(&key));
    if by_override {
        return Some(json!({
            "message": format!("{key_path} is set by a -c override, which wins over config.toml"),
            "overridingLayer": {"name": {"type": "sessionFlags"}, "version": "sessionFlags"},
            "effectiveValue": effective,
        }));
    }
    let profile = new.profile.as_ref()?;
    let profile_sets = std::fs::read_to_string(current.config_file())
        .ok()
        .and_then(|text| text.parse::<toml::Table>().ok())
        .and_then(|table| {
            let profiles = table.get(PROFILES_KEY)?.as_table()?;
            let mut value = profiles.get(profile)?;
            for segment in &path {
                value = value.as_table()?.get(segment)?;
            }
            Some(())
        })
        .is_some();
    profile_sets.then(|| {
        json!({
            "message": format!("{key_path} is set by profile {profile}, which wins over the top level"),
            "overridingLayer": {
                "name": {"type": "user", "file": current.config_file().display().to_string(), "profile": profile},
                "version": version_of(std::fs::read(current.config_file()).unwrap_or_default().as_slice()),
            },
            "effectiveValue": effective,
        })
    })
}

/// `text` with `edits` applied in order, comments and layout kept.
pub(crate) fn apply_edits(text: &str, edits: &[ConfigEdit]) -> Result<String, ConfigWriteError> {
    let mut document: DocumentMut = text.parse().map_err(|error| {
        ConfigWriteError::Validation(format!(
            "the config file is not valid TOML, so it cannot be edited safely: {error}"
        ))
    })?;
    for edit in edits {
        apply_edit(&mut document, edit)?;
    }
    Ok(document.to_string())
}

fn apply_edit(document: &mut DocumentMut, edit: &ConfigEdit) -> Result<(), ConfigWriteError> {
    let invalid =
        |reason: String| ConfigWriteError::Validation(format!("{reason}\nin `{}`", edit.key_path));
    let path = split_dotted_key(&edit.key_path).ok_or_else(|| {
        invalid("not a dotted key: use names joined by `.`, quoting a name that holds a `.`".into())
    })?;
    let (last, parents) = path.split_last().expect("a key has at least one segment");
    let mut table: &mut dyn TableLike = document.as_table_mut();
    let mut walked = String::new();
    for segment in parents {
        if !walked.is_empty() {
            walked.push('.');
        }
        walked.push_str(segment);
        if table.get(segment).is_none() {
            if edit.value.is_null() {
                // Removing below a table that does not exist: nothing to do.
                return Ok(());
            }
            let mut fresh = toml_edit::Table::new();
            fresh.set_implicit(true);
            table.insert(segment, Item::Table(fresh));
        }
        let item = table.get_mut(segment).expect("inserted above");
        if !item.is_table_like() {
            return Err(invalid(format!(
                "{walked} is a {}, not a table, so it has no key {last}",
                item.type_name()
            )));
        }
        table = item.as_table_like_mut().expect("checked");
    }
    if edit.value.is_null() {
        table.remove(last);
        return Ok(());
    }
    let replace = edit.merge_strategy == MergeStrategy::Replace;
    match (table.get_mut(last), &edit.value) {
        (Some(existing), Value::Object(entries)) if !replace && existing.is_table_like() => {
            let existing = existing.as_table_like_mut().expect("checked");
            upsert(existing, entries).map_err(invalid)?;
        }
        (Some(existing), value) => {
            let mut item = to_item(value, existing.is_table()).map_err(invalid)?;
            // An edited value keeps the comment that followed it on its line.
            if let (Some(old), Some(new)) = (existing.as_value(), item.as_value_mut()) {
                let suffix = old.decor().suffix().cloned();
                if let Some(suffix) = suffix {
                    new.decor_mut().set_suffix(suffix);
                }
            }
            *existing = item;
        }
        (None, value) => {
            let standalone = matches!(value, Value::Object(_));
            table.insert(last, to_item(value, standalone).map_err(invalid)?);
        }
    }
    Ok(())
}

/// Merges `entries` into `table` key by key: tables merge, anything else replaces, `null`
/// removes.
fn upsert(
    table: &mut dyn TableLike,
    entries: &serde_json::Map<String, Value>,
) -> Result<(), String> {
    for (key, value) in entries {
        match (table.get_mut(key), value) {
            (_, Value::Null) => {
                table.remove(key);
            }
            (Some(existing), Value::Object(inner)) if existing.is_table_like() => {
                upsert(existing.as_table_like_mut().expect("checked"), inner)?;
            }
            (Some(existing), value) => *existing = to_item(value, existing.is_table())?,
            (None, value) => {
                let standalone = table.is_dotted() || matches!(value, Value::Object(_));
                table.insert(key, to_item(value, standalone && value.is_object())?);
            }
        }
    }
    Ok(())
}

/// `value` as a TOML item: an object becomes a `[table]` when `standalone`, else an inline
/// table. TOML has no `null`, so one inside a value is refused.
fn to_item(value: &Value, standalone: bool) -> Result<Item, String> {
    if let (Value::Object(entries), true) = (value, standalone) {
        let mut table = toml_edit::Table::new();
        for (key, inner) in entries {
            table.insert(key, to_item(inner, inner.is_object())?);
        }
        return Ok(Item::Table(table));
    }
    Ok(Item::Value(to_value(value)?))
}

fn to_value(value: &Value) -> Result<toml_edit::Value, String> {
    Ok(match value {
        Value::Null => return Err("null is not a TOML value; remove the key instead".to_owned()),
        Value::Bool(flag) => (*flag).into(),
        Value::String(text) => text.as_str().into(),
        Value::Number(number) => match (number.as_i64(), number.as_f64()) {
            (Some(integer), _) => integer.into(),
            (None, Some(_)) if number.is_u64() => {
                return Err(format!("{number} is too large for a TOML integer"));
            }
            (None, Some(float)) => float.into(),
            (None, None) => return Err(format!("{number} is not a TOML number")),
        },
        Value::Array(items) => {
            let mut array = toml_edit::Array::new();
            for item in items {
                array.push(to_value(item)?);
            }
            toml_edit::Value::Array(array)
        }
        Value::Object(entries) => {
            let mut table = toml_edit::InlineTable::new();
            for (key, inner) in entries {
                table.insert(key, to_value(inner)?);
            }
            toml_edit::Value::InlineTable(table)
        }
    })
}

/// Replaces `path` with `bytes` so that a crash leaves the old file or the new one: write a
/// temporary file beside it, fsync it, rename it over `path`, fsync the directory. The new
/// file keeps the old one's permissions.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let directory = path
        .parent()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no parent directory"))?;
    let name = path
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or("config.toml");
    let temporary = directory.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut file = std::fs::File::create(&temporary)?;
        if let Ok(metadata) = std::fs::metadata(path) {
            file.set_permissions(metadata.permissions())?;
        }
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&temporary, path)?;
        std::fs::File::open(directory)?.sync_all()
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(key: &str, value: Value, merge_strategy: MergeStrategy) -> ConfigEdit {
        ConfigEdit {
            key_path: key.into(),
            value,
            merge_strategy,
        }
    }

    /// The reference app-server's answer to the same edits of the same file (0.169.0).
    #[test]
    fn edits_keep_comments_and_order_like_the_reference() {
        let before = "# my comment\nmodel = \"gpt-5.5\"\n\n# section comment\n[tui]\ntheme = \"dark\" # inline\n";
        let after = apply_edits(
            before,
            &[
                edit(
                    "model_reasoning_effort",
                    json!("high"),
                    MergeStrategy::Replace,
                ),
                edit("tui.theme", json!("light"), MergeStrategy::Replace),
                edit("tui", json!({"x": 1}), MergeStrategy::Upsert),
                edit("a.b.c", json!([1, 2]), MergeStrategy::Replace),
            ],
        )
        .expect("applies");
        assert_eq!(
            after,
            "# my comment\nmodel = \"gpt-5.5\"\nmodel_reasoning_effort = \"high\"\n\n# section comment\n[tui]\ntheme = \"light\" # inline\nx = 1\n\n[a.b]\nc = [1, 2]\n"
        );
        let removed = apply_edits(
            &after,
            &[edit("model", Value::Null, MergeStrategy::Replace)],
        )
        .expect("applies");
        assert!(!removed.contains("gpt-5.5"), "{removed}");
        assert!(removed.contains("# section comment"), "{removed}");
    }

    #[test]
    fn replace_drops_what_upsert_keeps() {
        let before = "[model_providers.local]\nbase_url = \"http://a/v1\"\nenv_key = \"K\"\n";
        let replaced = apply_edits(
            before,
            &[edit(
                "model_providers.local",
                json!({"base_url": "http://b/v1"}),
                MergeStrategy::Replace,
            )],
        )
        .expect("applies");
        assert!(!replaced.contains("env_key"), "{replaced}");
        let upserted = apply_edits(
            before,
            &[edit(
                "model_providers.local",
                json!({"base_url": "http://b/v1"}),
                MergeStrategy::Upsert,
            )],
        )
        .expect("applies");
        assert!(upserted.contains("env_key = \"K\""), "{upserted}");
        assert!(upserted.contains("http://b/v1"), "{upserted}");
    }

    #[test]
    fn impossible_edits_are_validation_errors() {
        for (key, value) in [
            ("model.name", json!("x")),
            ("a..b", json!(1)),
            ("list", json!([1, null])),
            ("big", json!(u64::MAX)),
        ] {
            let error = apply_edits(
                "model = \"m\"\n",
                &[edit(key, value, MergeStrategy::Replace)],
            )
            .expect_err(key);
            let rpc = error.to_rpc();
            assert_eq!(rpc.code, -32600, "{key}");
            assert_eq!(
                rpc.data,
                Some(json!({"config_write_error_code": "configValidationError"}))
            );
            assert!(rpc.message.contains(key), "{key}: {}", rpc.message);
        }
    }

    #[test]
    fn versions_are_sha256_of_the_bytes() {
        assert_eq!(
            version_of(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn writes_validate_replace_atomically_and_check_the_version() {
        let home = tempfile::tempdir().expect("temp dir");
        let path = home.path().join("config.toml");
        std::fs::write(&path, "# keep me\nthread_unload_delay_secs = 5\n").expect("write");
        let config = ServerConfig::builder()
            .tandem_home(home.path())
            .load()
            .expect("load");
        let written = write_config(
            &config,
            &[edit("model", json!("qwen3"), MergeStrategy::Replace)],
            None,
            Some(&version_of(&std::fs::read(&path).expect("read"))),
        )
        .expect("writes");
        assert_eq!(written.config.model.as_deref(), Some("qwen3"));
        assert_eq!(written.response.status, WriteStatus::Ok);
        let text = std::fs::read_to_string(&path).expect("read");
        assert_eq!(
            text,
            "# keep me\nthread_unload_delay_secs = 5\nmodel = \"qwen3\"\n"
        );
        assert_eq!(written.response.version, version_of(text.as_bytes()));
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(home.path())
            .expect("list")
            .map(|entry| entry.expect("entry").file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("config.toml")]);

        let stale = write_config(
            &config,
            &[edit("model", json!("other"), MergeStrategy::Replace)],
            None,
            Some(&version_of(b"")),
        );
        assert!(matches!(stale, Err(ConfigWriteError::VersionConflict)));
        let invalid = write_config(
            &config,
            &[edit(
                "thread_unload_delay_secs",
                json!("soon"),
                MergeStrategy::Replace,
            )],
            None,
            None,
        );
        let Err(ConfigWriteError::Validation(message)) = invalid else {
            panic!("a string delay is refused");
        };
        assert!(message.contains("thread_unload_delay_secs"), "{message}");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), text);
        let elsewhere = write_config(
            &config,
            &[edit("model", json!("x"), MergeStrategy::Replace)],
            Some("/etc/passwd"),
            None,
        );
        assert!(matches!(
            elsewhere,
            Err(ConfigWriteError::NotWritable { .. })
        ));
    }

    #[test]
    fn an_override_of_the_key_reports_ok_overridden() {
        let home = tempfile::tempdir().expect("temp dir");
        let config = ServerConfig::builder()
            .tandem_home(home.path())
            .config_override("model", "pinned".into())
            .load()
            .expect("load");
        let written = write_config(
            &config,
            &[edit("model", json!("qwen3"), MergeStrategy::Replace)],
            None,
            None,
        )
        .expect("writes");
        assert_eq!(written.response.status, WriteStatus::OkOverridden);
        let metadata = written.response.overridden_metadata.expect("metadata");
        assert_eq!(metadata["effectiveValue"], "pinned");
        assert_eq!(metadata["overridingLayer"]["name"]["type"], "sessionFlags");
    }
}

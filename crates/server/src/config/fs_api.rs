//! The `fs_api` and `fs_read_max_bytes` keys: whether a connected client may use the `fs/*`
//! methods, which act with the server's own rights (docs/security.md), and the most bytes one
//! `fs/readFile` returns. Apart from `mod.rs` so that the switch and its bound read together.

use super::ConfigError;
use super::layers::Layered;

/// Config key: `false` turns the `fs/*` methods off (they answer -32601).
pub const FS_API_KEY: &str = "fs_api";

/// Config key of the most bytes `fs/readFile` returns; a larger file is refused (-32600).
pub const FS_READ_MAX_BYTES_KEY: &str = "fs_read_max_bytes";

/// Default of [`FS_READ_MAX_BYTES_KEY`]: 16 MiB, about 21 MiB of base64 in one answer.
pub const DEFAULT_FS_READ_MAX_BYTES: u64 = 16 * 1024 * 1024;

/// The two keys as a merged table sets them; `None` for a key no layer set.
#[derive(Debug, Default)]
pub(super) struct FsApiSettings {
    pub(super) enabled: Option<bool>,
    pub(super) read_max_bytes: Option<u64>,
}

/// Reads and checks both keys of `layered`.
pub(super) fn parse_fs_api(layered: &Layered) -> Result<FsApiSettings, ConfigError> {
    let table = &layered.table;
    let invalid = |key: &str, value: &toml::Value, reason: String| ConfigError::InvalidValue {
        key: key.to_owned(),
        value: value.to_string(),
        origin: layered.origin_of(key).to_string(),
        reason,
    };
    let enabled = match table.get(FS_API_KEY) {
        None => None,
        Some(toml::Value::Boolean(enabled)) => Some(*enabled),
        Some(other) => {
            return Err(invalid(
                FS_API_KEY,
                other,
                format!(
                    "expected true (serve fs/*) or false (answer -32601), found a {}",
                    other.type_str()
                ),
            ));
        }
    };
    let read_max_bytes = match table.get(FS_READ_MAX_BYTES_KEY) {
        None => None,
        Some(toml::Value::Integer(bytes)) => Some(u64::try_from(*bytes).map_err(|_| {
            invalid(
                FS_READ_MAX_BYTES_KEY,
                &toml::Value::Integer(*bytes),
                "the bound must not be negative; use 0 to refuse every non-empty file, or \
                 fs_api = false to turn the methods off"
                    .to_owned(),
            )
        })?),
        Some(other) => {
            return Err(invalid(
                FS_READ_MAX_BYTES_KEY,
                other,
                format!(
                    "expected a whole number of bytes (e.g. {DEFAULT_FS_READ_MAX_BYTES}), found a {}",
                    other.type_str()
                ),
            ));
        }
    };
    Ok(FsApiSettings {
        enabled,
        read_max_bytes,
    })
}

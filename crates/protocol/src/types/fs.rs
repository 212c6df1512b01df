//! The `fs/*` methods and the `fs/changed` notification (docs/protocol.md section 4, "Files"):
//! the host's file system as the connected client sees it, in the reference app-server's
//! shapes (its JSON Schema, release 0.169.0) so that clients written for it run unchanged.
//!
//! Every path is an [`AbsolutePathBuf`]: a relative or empty path fails to decode, with the
//! reference's message, before the server sees the request.

use std::path::{Component, Path, PathBuf};

#[allow(unused_imports)]
use super::*;

/// The message of a relative (or empty) path, as the reference words it; the codec prefixes
/// `Invalid request: ` and answers -32600.
pub const NOT_ABSOLUTE_PATH: &str = "AbsolutePathBuf deserialized without a base path";

/// An absolute path, normalized lexically: `.` components dropped and `..` applied to the
/// component before it (symbolic links are not resolved). On the wire, a string.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[cfg_attr(feature = "schema", schemars(with = "String"), ts(as = "String"))]
pub struct AbsolutePathBuf(PathBuf);

impl AbsolutePathBuf {
    /// `path` normalized, or `None` when it is not absolute.
    pub fn new(path: impl AsRef<Path>) -> Option<Self> {
        let path = path.as_ref();
        if !path.is_absolute() {
            return None;
        }
        let mut normalized = PathBuf::new();
        for component in path.components() {
            match component {
                Component::CurDir => {}
                Component::ParentDir => {
                    normalized.pop();
                }
                other => normalized.push(other),
            }
        }
        Some(Self(normalized))
    }

    /// The path.
    pub fn as_path(&self) -> &Path {
        &self.0
    }

    /// The path, owned.
    pub fn into_path_buf(self) -> PathBuf {
        self.0
    }
}

impl AsRef<Path> for AbsolutePathBuf {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl std::fmt::Display for AbsolutePathBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.display().fmt(f)
    }
}

impl Serialize for AbsolutePathBuf {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0.to_string_lossy())
    }
}

impl<'de> Deserialize<'de> for AbsolutePathBuf {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = AbsolutePathBuf;

            fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str("path string")
            }

            fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<AbsolutePathBuf, E> {
                AbsolutePathBuf::new(value).ok_or_else(|| E::custom(NOT_ABSOLUTE_PATH))
            }
        }
        deserializer.deserialize_str(Visitor)
    }
}

/// `fs/readFile` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct FsReadFileParams {
    /// Absolute path to read.
    pub path: AbsolutePathBuf,
}

/// `fs/readFile` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct FsReadFileResponse {
    /// File contents encoded as base64.
    pub data_base64: String,
}

/// `fs/writeFile` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct FsWriteFileParams {
    /// Absolute path to write (created, or truncated and replaced).
    pub path: AbsolutePathBuf,
    /// File contents encoded as base64 (standard alphabet, padded); checked by the server,
    /// which answers -32600 `fs/writeFile requires valid base64 dataBase64: ...`.
    pub data_base64: String,
}

/// `fs/createDirectory` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct FsCreateDirectoryParams {
    /// Absolute directory path to create.
    pub path: AbsolutePathBuf,
    /// Whether parent directories should also be created (and an existing directory
    /// accepted); `null` or omitted = `true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recursive: Option<bool>,
}

/// `fs/getMetadata` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct FsGetMetadataParams {
    /// Absolute path to inspect.
    pub path: AbsolutePathBuf,
}

/// `fs/getMetadata` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct FsGetMetadataResponse {
    /// Whether the path resolves (through symbolic links) to a directory.
    pub is_directory: bool,
    /// Whether the path resolves (through symbolic links) to a regular file.
    pub is_file: bool,
    /// Whether the path itself is a symbolic link.
    pub is_symlink: bool,
    /// Creation time in Unix milliseconds when the file system reports it, otherwise `0`.
    pub created_at_ms: i64,
    /// Modification time in Unix milliseconds when available, otherwise `0`.
    pub modified_at_ms: i64,
}

/// `fs/readDirectory` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct FsReadDirectoryParams {
    /// Absolute directory path to read.
    pub path: AbsolutePathBuf,
}

/// One entry of an `fs/readDirectory` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct FsReadDirectoryEntry {
    /// The child's name only, not a path.
    pub file_name: String,
    /// Whether the entry resolves (through symbolic links) to a directory.
    pub is_directory: bool,
    /// Whether the entry resolves (through symbolic links) to a regular file.
    pub is_file: bool,
}

/// `fs/readDirectory` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct FsReadDirectoryResponse {
    /// The directory's direct children (Tandem sorts them by name; the reference leaves
    /// them in the order the OS lists them).
    pub entries: Vec<FsReadDirectoryEntry>,
}

/// `fs/remove` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct FsRemoveParams {
    /// Absolute path to remove (a symbolic link is removed, not what it points to).
    pub path: AbsolutePathBuf,
    /// Whether a directory's contents are removed too; `null` or omitted = `true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recursive: Option<bool>,
    /// Whether a missing path is accepted; `null` or omitted = `true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force: Option<bool>,
}

/// `fs/copy` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct FsCopyParams {
    /// Absolute source path (a symbolic link is copied as a link).
    pub source_path: AbsolutePathBuf,
    /// Absolute destination path.
    pub destination_path: AbsolutePathBuf,
    /// Required for directory copies; ignored for file copies.
    #[serde(default, with = "null_as_default", skip_serializing_if = "is_false")]
    #[cfg_attr(feature = "schema", schemars(with = "bool"), ts(as = "Option<bool>"))]
    pub recursive: bool,
}

/// `fs/watch` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct FsWatchParams {
    /// Absolute file or directory path to watch (it need not exist yet).
    pub path: AbsolutePathBuf,
    /// Connection-scoped watch id, named by `fs/unwatch` and every `fs/changed`.
    pub watch_id: String,
}

/// `fs/watch` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct FsWatchResponse {
    /// The watched path, normalized (the path every `fs/changed` paths are under).
    pub path: AbsolutePathBuf,
}

/// `fs/unwatch` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct FsUnwatchParams {
    /// The id an earlier `fs/watch` gave; an unknown id is accepted (`{}`), as the reference
    /// accepts it.
    pub watch_id: String,
}

/// `fs/changed` params: paths that changed under one watch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct FsChangedNotification {
    /// The watch.
    pub watch_id: String,
    /// The paths that changed since the previous `fs/changed` of this watch, sorted, each
    /// once. When more changed than one notification carries, this is the watched path
    /// alone: re-read it (docs/protocol.md, "Files").
    pub changed_paths: Vec<AbsolutePathBuf>,
}

fn is_false(value: &bool) -> bool {
    !*value
}

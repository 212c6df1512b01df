//! `fuzzyFileSearch` and `thread/shellCommand` (docs/protocol.md section 4, "Files" and
//! "A user's shell command"): in the reference app-server's shapes (its JSON Schema, release
//! 0.169.0), member names included: a search result's members are snake_case there, unlike
//! their neighbours, and so here.

#[allow(unused_imports)]
use super::*;

/// `fuzzyFileSearch` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct FuzzyFileSearchParams {
    /// What to look for: matched fuzzily against each path relative to its root. An empty
    /// query matches nothing.
    pub query: String,
    /// The directories to search (absolute; a relative or missing one yields nothing).
    pub roots: Vec<String>,
    /// A client-chosen token: a later search with the same token cancels this one, which
    /// then answers at once with no files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancellation_token: Option<String>,
}

/// Whether a search result is a file or a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub enum FuzzyFileSearchMatchType {
    /// Anything but a directory.
    File,
    /// A directory.
    Directory,
}

/// One result of `fuzzyFileSearch`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
pub struct FuzzyFileSearchResult {
    /// The root (as the request gave it) the path is under.
    pub root: String,
    /// The path, relative to `root`.
    pub path: String,
    /// File or directory.
    pub match_type: FuzzyFileSearchMatchType,
    /// The last component of `path`.
    pub file_name: String,
    /// How well `path` matches: higher is better; results are sorted by it (descending),
    /// then by `path`.
    pub score: u32,
    /// The positions (in characters of `path`) that matched the query, ascending.
    #[serde(default)]
    pub indices: Option<Vec<u32>>,
}

/// `fuzzyFileSearch` result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct FuzzyFileSearchResponse {
    /// The best matches, best first.
    pub files: Vec<FuzzyFileSearchResult>,
}

/// `thread/shellCommand` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadShellCommandParams {
    /// The thread (loaded).
    pub thread_id: String,
    /// A command line for the user's shell (pipes, redirections and quoting kept). It runs
    /// without the thread's sandbox, with the server's rights.
    pub command: String,
    /// The most milliseconds it may run; omitted or `null`: one hour. Zero times out at once;
    /// a negative value is refused (-32602).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<i64>,
}

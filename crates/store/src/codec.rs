//! Row encoding shared by the SQL stores (SQLite and PostgreSQL): protocol values as their JSON,
//! unit enums as bare words, a `threads` row before its JSON members are decoded, and the SQL
//! fragments both build their paging queries from.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tandem_protocol::SortDirection;

use crate::{StoreError, ThreadRecord, effective_limit};

pub(crate) fn encode<T: Serialize>(value: &T, what: &'static str) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|source| StoreError::Encode { what, source })
}

/// [`encode`] into a buffer of exactly the encoded size: an item can be as large as a turn's
/// input, and a buffer grown by doubling would briefly hold up to twice that, plus the copy
/// made at each growth.
pub(crate) fn encode_exact<T: Serialize>(
    value: &T,
    what: &'static str,
) -> Result<String, StoreError> {
    /// Counts the bytes written to it.
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let fail = |source| StoreError::Encode { what, source };
    let mut counter = Counter(0);
    serde_json::to_writer(&mut counter, value).map_err(fail)?;
    let mut buffer = Vec::with_capacity(counter.0);
    serde_json::to_writer(&mut buffer, value).map_err(fail)?;
    // serde_json writes only valid UTF-8.
    String::from_utf8(buffer).map_err(|error| StoreError::Unavailable(error.to_string()))
}

pub(crate) fn decode<T: DeserializeOwned>(
    text: &str,
    what: impl FnOnce() -> String,
) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|source| StoreError::Corrupt {
        what: what(),
        source,
    })
}

/// A unit enum's wire spelling, stored bare so that the column reads naturally in SQL.
pub(crate) fn encode_word<T: Serialize>(
    value: &T,
    what: &'static str,
) -> Result<String, StoreError> {
    match serde_json::to_value(value).map_err(|source| StoreError::Encode { what, source })? {
        Value::String(word) => Ok(word),
        other => Ok(other.to_string()),
    }
}

pub(crate) fn decode_word<T: DeserializeOwned>(
    word: String,
    what: impl FnOnce() -> String,
) -> Result<T, StoreError> {
    serde_json::from_value(Value::String(word)).map_err(|source| StoreError::Corrupt {
        what: what(),
        source,
    })
}

/// A `threads` row as stored, before its JSON members are decoded.
pub(crate) struct RawThread {
    pub(crate) id: String,
    pub(crate) name: Option<String>,
    pub(crate) preview: String,
    pub(crate) ephemeral: bool,
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
    pub(crate) status: String,
    pub(crate) cwd: String,
    pub(crate) source: String,
    pub(crate) forked_from_id: Option<String>,
    pub(crate) model: Option<String>,
    pub(crate) model_provider: String,
    pub(crate) cli_version: String,
    pub(crate) approval_policy: String,
    pub(crate) dynamic_tools: String,
    pub(crate) config: String,
    pub(crate) archived_at: Option<i64>,
}

impl RawThread {
    pub(crate) fn decode(self) -> Result<ThreadRecord, StoreError> {
        let id = self.id;
        let what = |member: &str| format!("{member} of thread {id}");
        Ok(ThreadRecord {
            status: decode(&self.status, || what("status"))?,
            source: decode(&self.source, || what("source"))?,
            approval_policy: decode_word(self.approval_policy, || what("approval policy"))?,
            dynamic_tools: decode(&self.dynamic_tools, || what("dynamic tools"))?,
            config: decode(&self.config, || what("config"))?,
            name: self.name,
            preview: self.preview.into(),
            ephemeral: self.ephemeral,
            created_at: self.created_at,
            updated_at: self.updated_at,
            cwd: self.cwd,
            forked_from_id: self.forked_from_id,
            model: self.model,
            model_provider: self.model_provider,
            cli_version: self.cli_version,
            archived_at: self.archived_at,
            id,
        })
    }
}

/// `ASC` or `DESC`.
pub(crate) fn sql_order(direction: SortDirection) -> &'static str {
    match direction {
        SortDirection::Asc => "ASC",
        SortDirection::Desc => "DESC",
    }
}

/// The comparison that keeps the rows past an anchor in `direction`.
pub(crate) fn sql_comparison(direction: SortDirection, inclusive: bool) -> &'static str {
    match (direction, inclusive) {
        (SortDirection::Asc, false) => ">",
        (SortDirection::Asc, true) => ">=",
        (SortDirection::Desc, false) => "<",
        (SortDirection::Desc, true) => "<=",
    }
}

/// A page size as SQLite's `LIMIT`, one more than asked so that the caller can tell whether a
/// next page exists.
pub(crate) fn limit_plus_one(limit: usize) -> i64 {
    i64::try_from(effective_limit(limit))
        .unwrap_or(i64::MAX)
        .saturating_add(1)
}

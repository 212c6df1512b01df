//! The cassette file: JSON lines, a header line with the format version, then one line per
//! exchange (the canonical request and the response as the provider sent it), and how it is
//! read, checked and written.
//!
//! JSON lines rather than TOML: every exchange is one self-contained line, so a recording grows
//! by appending a line, a diff of a re-recorded cassette shows which exchanges changed, a damaged
//! file is detected line by line, and request bodies and event payloads (JSON already) are
//! embedded as JSON instead of being re-encoded as TOML tables or escaped strings.
//!
//! Writes never overwrite what is there: a new cassette is written whole to a temporary file
//! beside it and renamed into place (atomic on one filesystem), and each later exchange is
//! appended as one line in a single write. A crash in the middle of that write can leave the
//! last line cut, which the next load reports as truncated, naming the line. While a server
//! records, it holds an exclusive lock on `PATH.lock`, so a second recorder fails at start
//! instead of interleaving its writes.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The format version this build reads and writes.
pub const FORMAT_VERSION: u64 = 1;

/// Why a cassette cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CassetteError {
    /// Replay needs a recording that is not there.
    #[error(
        "cassette {path} does not exist: record it first (cassette_mode = \"record\", or \
         --cassette-mode record), or check the path"
    )]
    Missing {
        /// The cassette's path.
        path: PathBuf,
    },
    /// The file could not be read, written or locked.
    #[error("cannot {action} cassette {path}: {source}")]
    Io {
        /// What was being done: `read`, `write`, `lock`.
        action: &'static str,
        /// The cassette's path.
        path: PathBuf,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// The file is not a cassette (no header line).
    #[error(
        "{path} is not a tandem cassette (its first line is not a cassette header: {reason}); \
         point cassette at a file tandem recorded, or record a new one"
    )]
    NotACassette {
        /// The file's path.
        path: PathBuf,
        /// What the first line holds instead.
        reason: String,
    },
    /// Written by a tandem with another format version.
    #[error(
        "cassette {path} has format version {found}, and this tandem reads version \
         {FORMAT_VERSION}: record it again with this tandem"
    )]
    UnknownVersion {
        /// The cassette's path.
        path: PathBuf,
        /// The version the header names.
        found: String,
    },
    /// The last line has no end: the file was cut short.
    #[error(
        "cassette {path} is truncated: line {line} has no end; record it again, or delete that \
         line to keep the exchanges before it"
    )]
    Truncated {
        /// The cassette's path.
        path: PathBuf,
        /// The incomplete line (1-based).
        line: usize,
    },
    /// A line is not a valid exchange.
    #[error(
        "cassette {path} line {line} is not a valid exchange ({reason}); record it again, or \
         fix or delete that line"
    )]
    Corrupt {
        /// The cassette's path.
        path: PathBuf,
        /// The line (1-based).
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// Recorded against another provider or wire.
    #[error(
        "cassette {path} was recorded against provider {recorded} ({recorded_wire} wire), not \
         {configured} ({configured_wire} wire): select the provider it was recorded with, or \
         record a new cassette for {configured}"
    )]
    OtherProvider {
        /// The cassette's path.
        path: PathBuf,
        /// The provider in its header.
        recorded: String,
        /// The wire in its header.
        recorded_wire: String,
        /// The provider it is used with.
        configured: String,
        /// That provider's wire.
        configured_wire: String,
    },
    /// Another recorder holds the file.
    #[error(
        "cassette {path} is being recorded by another server (its lock {lock} is held): stop \
         that server first, or record to another file"
    )]
    Busy {
        /// The cassette's path.
        path: PathBuf,
        /// The lock file.
        lock: PathBuf,
    },
}

/// The first line of a cassette.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Header {
    /// The format version ([`FORMAT_VERSION`]).
    pub(crate) tandem_cassette: u64,
    /// The provider id it was recorded against.
    pub(crate) provider: String,
    /// The provider's wire: `chat` or `responses`.
    pub(crate) wire_api: String,
    /// The tandem version that created it (informative).
    #[serde(default)]
    pub(crate) recorded_by: String,
}

/// One exchange: a request and what came back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Entry {
    /// The digest of the canonical request (recomputed on load, so a hand-edited request
    /// matches as edited).
    pub(crate) digest: String,
    /// The endpoint under the provider's base URL: `chat/completions` or `responses`.
    pub(crate) endpoint: String,
    /// The canonical request body.
    pub(crate) request: Value,
    /// What came back.
    pub(crate) response: RecordedResponse,
}

/// What one request got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum RecordedResponse {
    /// An HTTP response: status, the headers that matter to the agent, and the body.
    Http(HttpResponse),
    /// The request failed before any response (a refused connection, a reset).
    Failed {
        /// Whether the agent retried it.
        retryable: bool,
        /// The agent's message for it.
        message: String,
    },
    /// The client gave up before the response arrived (its timeout, an interrupted turn):
    /// replayed as a response that never comes.
    NoResponse,
}

/// An HTTP response as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct HttpResponse {
    /// The status code.
    pub(crate) status: u16,
    /// Milliseconds from sending the request to the response head.
    #[serde(default)]
    pub(crate) after_ms: u64,
    /// `content-type`, `retry-after` and `retry-after-ms`, when sent; no other header is
    /// recorded (they may carry credentials or tracking ids).
    #[serde(default)]
    pub(crate) headers: BTreeMap<String, String>,
    /// A `text/event-stream` body: its events in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) events: Option<Vec<RecordedEvent>>,
    /// Any other body, as text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) body: Option<String>,
    /// How the body ended.
    pub(crate) end: StreamEnd,
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RecordedEvent {
    /// Milliseconds from sending the request to the event's arrival.
    pub(crate) t_ms: u64,
    /// The `event:` name; empty when the line was absent.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(crate) event: String,
    /// The `data:` of the event when it is a JSON object or array (kept as JSON, readable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) json: Option<Value>,
    /// The `data:` of the event otherwise (`[DONE]`, text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) data: Option<String>,
}

/// How a response body ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum StreamEnd {
    /// The server closed it normally.
    Eof,
    /// The client stopped reading (the answer was complete, or it gave up): replayed as a
    /// body that sends nothing more.
    Dropped,
    /// The body broke (a reset, a cut chunk): replayed as the same error.
    Error {
        /// The error as the agent saw it.
        message: String,
    },
}

/// A loaded cassette.
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    /// Its header; `None` for a file that does not exist yet (or is empty).
    pub(crate) header: Option<Header>,
    /// Its exchanges, in file order.
    pub(crate) entries: Vec<Entry>,
}

/// Reads and checks the cassette at `path`; a missing or empty file loads as empty.
pub(crate) fn load(path: &Path) -> Result<Loaded, CassetteError> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Loaded::default()),
        Err(source) => {
            return Err(CassetteError::Io {
                action: "read",
                path: path.to_owned(),
                source,
            });
        }
    };
    parse(path, &text)
}

/// Parses a cassette's text.
pub(crate) fn parse(path: &Path, text: &str) -> Result<Loaded, CassetteError> {
    if text.is_empty() {
        return Ok(Loaded::default());
    }
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut loaded = Loaded::default();
    for (index, raw) in lines.iter().enumerate() {
        let number = index + 1;
        let Some(line) = raw.strip_suffix('\n') else {
            return Err(CassetteError::Truncated {
                path: path.to_owned(),
                line: number,
            });
        };
        if index == 0 {
            loaded.header = Some(parse_header(path, line)?);
        } else {
            let entry: Entry =
                serde_json::from_str(line).map_err(|error| CassetteError::Corrupt {
                    path: path.to_owned(),
                    line: number,
                    reason: error.to_string(),
                })?;
            check_entry(&entry).map_err(|reason| CassetteError::Corrupt {
                path: path.to_owned(),
                line: number,
                reason,
            })?;
            loaded.entries.push(entry);
        }
    }
    Ok(loaded)
}

fn parse_header(path: &Path, line: &str) -> Result<Header, CassetteError> {
    let not_a_cassette = |reason: String| CassetteError::NotACassette {
        path: path.to_owned(),
        reason,
    };
    let value: Value =
        serde_json::from_str(line).map_err(|error| not_a_cassette(error.to_string()))?;
    let version = value
        .get("tandem_cassette")
        .ok_or_else(|| not_a_cassette("no tandem_cassette version".to_owned()))?;
    if version.as_u64() != Some(FORMAT_VERSION) {
        return Err(CassetteError::UnknownVersion {
            path: path.to_owned(),
            found: version.to_string(),
        });
    }
    serde_json::from_value(value).map_err(|error| not_a_cassette(error.to_string()))
}

fn check_entry(entry: &Entry) -> Result<(), String> {
    if let RecordedResponse::Http(http) = &entry.response
        && http.events.is_some() == http.body.is_some()
    {
        return Err("an http response needs exactly one of events and body".to_owned());
    }
    if !entry.request.is_object() {
        return Err("the request is not a JSON object".to_owned());
    }
    Ok(())
}

/// Replaces `lines` as the whole content of `path`, atomically: a temporary file beside it,
/// flushed, then renamed over it.
pub(crate) fn write_atomically(path: &Path, lines: &[String]) -> Result<(), CassetteError> {
    let io_error = |source| CassetteError::Io {
        action: "write",
        path: path.to_owned(),
        source,
    };
    if let Some(parent) = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
    {
        fs::create_dir_all(parent).map_err(io_error)?;
    }
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(format!(".tmp{}", std::process::id()));
    let temporary = PathBuf::from(temporary);
    let mut text = String::with_capacity(lines.iter().map(|line| line.len() + 1).sum());
    for line in lines {
        text.push_str(line);
        text.push('\n');
    }
    let written = (|| {
        let mut file = File::create(&temporary)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        fs::rename(&temporary, path)
    })();
    if let Err(error) = written {
        let _ = fs::remove_file(&temporary);
        return Err(io_error(error));
    }
    Ok(())
}

/// Appends `line` and its newline to the cassette at `path` in one write.
pub(crate) fn append_line(path: &Path, line: &str) -> Result<(), CassetteError> {
    let mut text = String::with_capacity(line.len() + 1);
    text.push_str(line);
    text.push('\n');
    OpenOptions::new()
        .append(true)
        .open(path)
        .and_then(|mut file| file.write_all(text.as_bytes()))
        .map_err(|source| CassetteError::Io {
            action: "append to",
            path: path.to_owned(),
            source,
        })
}

/// The exclusive right to record to a cassette: a locked `PATH.lock`, removed when dropped.
#[derive(Debug)]
pub(crate) struct RecordLock {
    path: PathBuf,
    // Held for the lock; closing it releases the lock.
    _file: File,
}

impl RecordLock {
    /// Locks `cassette` for recording, or says who holds it.
    pub(crate) fn acquire(cassette: &Path) -> Result<Self, CassetteError> {
        let mut lock = cassette.as_os_str().to_owned();
        lock.push(".lock");
        let lock = PathBuf::from(lock);
        let io_error = |source| CassetteError::Io {
            action: "lock",
            path: cassette.to_owned(),
            source,
        };
        if let Some(parent) = lock
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
        {
            fs::create_dir_all(parent).map_err(io_error)?;
        }
        // A holder that just finished removes the file it locked; a lock taken on that removed
        // file protects nothing, so it is taken again on the file now at the path.
        for _ in 0..8 {
            let file = OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&lock)
                .map_err(io_error)?;
            match file.try_lock() {
                Ok(()) => {}
                Err(fs::TryLockError::WouldBlock) => {
                    return Err(CassetteError::Busy {
                        path: cassette.to_owned(),
                        lock,
                    });
                }
                Err(fs::TryLockError::Error(error)) => return Err(io_error(error)),
            }
            if same_file(&file, &lock) {
                return Ok(Self {
                    path: lock,
                    _file: file,
                });
            }
        }
        Err(CassetteError::Busy {
            path: cassette.to_owned(),
            lock,
        })
    }
}

#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), fs::metadata(path)) {
        (Ok(open), Ok(named)) => open.ino() == named.ino() && open.dev() == named.dev(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_file: &File, path: &Path) -> bool {
    path.exists()
}

impl Drop for RecordLock {
    fn drop(&mut self) {
        // Removed while still locked, so no other recorder can have locked this file.
        let _ = fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = r#"{"tandem_cassette":1,"provider":"mock","wire_api":"chat"}"#;
    const ENTRY: &str = r#"{"digest":"sha256:0","endpoint":"chat/completions","request":{"model":"m"},"response":{"kind":"http","status":200,"events":[{"t_ms":0,"data":"[DONE]"}],"end":"eof"}}"#;

    fn path() -> PathBuf {
        PathBuf::from("t.jsonl")
    }

    #[test]
    fn a_well_formed_cassette_parses() {
        let loaded = parse(&path(), &format!("{HEADER}\n{ENTRY}\n")).unwrap();
        assert_eq!(loaded.header.unwrap().provider, "mock");
        assert_eq!(loaded.entries.len(), 1);
    }

    #[test]
    fn damage_is_named_by_line() {
        let truncated = parse(&path(), &format!("{HEADER}\n{}", &ENTRY[..40])).unwrap_err();
        assert!(
            matches!(truncated, CassetteError::Truncated { line: 2, .. }),
            "{truncated}"
        );
        let corrupt = parse(&path(), &format!("{HEADER}\n{{\"digest\":1}}\n")).unwrap_err();
        assert!(
            matches!(corrupt, CassetteError::Corrupt { line: 2, .. }),
            "{corrupt}"
        );
        let version = parse(
            &path(),
            "{\"tandem_cassette\":7,\"provider\":\"p\",\"wire_api\":\"chat\"}\n",
        )
        .unwrap_err();
        assert!(
            version.to_string().contains("format version 7"),
            "{version}"
        );
        let foreign = parse(&path(), "hello\n").unwrap_err();
        assert!(
            matches!(foreign, CassetteError::NotACassette { .. }),
            "{foreign}"
        );
    }

    #[test]
    fn a_second_recorder_is_refused_and_the_lock_goes_with_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let cassette = dir.path().join("c.jsonl");
        let first = RecordLock::acquire(&cassette).unwrap();
        let second = RecordLock::acquire(&cassette).unwrap_err();
        assert!(matches!(second, CassetteError::Busy { .. }), "{second}");
        drop(first);
        assert!(!dir.path().join("c.jsonl.lock").exists());
        RecordLock::acquire(&cassette).unwrap();
    }

    #[test]
    fn writes_replace_the_file_whole() {
        let dir = tempfile::tempdir().unwrap();
        let cassette = dir.path().join("nested/c.jsonl");
        write_atomically(&cassette, &[HEADER.to_owned(), ENTRY.to_owned()]).unwrap();
        let text = fs::read_to_string(&cassette).unwrap();
        assert_eq!(text, format!("{HEADER}\n{ENTRY}\n"));
        let leftovers: Vec<_> = fs::read_dir(dir.path().join("nested")).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary file is left behind");
        append_line(&cassette, ENTRY).unwrap();
        let loaded = parse(&cassette, &fs::read_to_string(&cassette).unwrap()).unwrap();
        assert_eq!(loaded.entries.len(), 2);
    }
}

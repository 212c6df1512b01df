//! Cassettes: record a provider's answers once, replay them offline (docs/cassettes.md).
//!
//! A [`Cassette`] sits at the agent's transport seam (`openai::transport`), the one place every
//! model request passes, so nothing else in the agent knows whether an answer is live or
//! replayed. Per provider ([`CassetteSettings`], `model_providers.NAME.cassette` and
//! `cassette_mode`) it runs in one of the [`CassetteMode`]s: `record` sends every request to
//! the provider and appends the exchange; `replay` answers only from the file and fails a
//! request it has no recording of, naming the first field where it differs from the nearest
//! recording; `record-missing` replays what is there and records what is not.
//!
//! Requests are matched by the digest of their canonical form (`canonical`), in order among
//! equal requests, so a retried request meets the recorded retry. Responses are replayed as the
//! provider sent them: status, the headers the agent reads, the server-sent events with their
//! timing (`cassette_timing = "recorded"` honours it), and how the body ended, so a recorded
//! 429 or a dropped stream takes the agent through its retry path again.
//!
//! Files: `format` holds the file and its checks, `canonical` the request's canonical form
//! and digest, `recorder` the recording of a live response, `replayer` the answers from a file.

mod canonical;
mod format;
mod recorder;
mod replayer;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::Value;

pub use format::{CassetteError, FORMAT_VERSION};

use crate::openai::retry::AttemptError;
use crate::openai::transport::{Exchange, ModelResponse};
use crate::providers::ModelProviderConfig;
use format::{Entry, Header, RecordLock};

/// What a provider does with its cassette.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum CassetteMode {
    /// No cassette: every request goes to the provider (the default without a cassette).
    Live,
    /// Every request goes to the provider, and each exchange is appended to the cassette.
    Record,
    /// Every request is answered from the cassette; one it has no recording of fails the
    /// turn (the default with a cassette).
    #[default]
    Replay,
    /// Requests the cassette has a recording of are replayed; the others go to the provider
    /// and are recorded.
    RecordMissing,
}

/// The modes' config spellings, in order.
pub const CASSETTE_MODES: &[&str] = &["live", "record", "replay", "record-missing"];

impl CassetteMode {
    /// The config spelling: `live`, `record`, `replay` or `record-missing`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Live => "live",
            Self::Record => "record",
            Self::Replay => "replay",
            Self::RecordMissing => "record-missing",
        }
    }

    /// Parses a config spelling.
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "live" => Self::Live,
            "record" => Self::Record,
            "replay" => Self::Replay,
            "record-missing" => Self::RecordMissing,
            _ => return None,
        })
    }
}

/// Whether replay waits as long as the provider took.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum CassetteTiming {
    /// Answers are replayed as fast as the agent reads them (the default).
    #[default]
    Skip,
    /// The response head and each event arrive after the delay they were recorded with.
    Recorded,
}

impl CassetteTiming {
    /// The config spelling: `skip` or `recorded`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Skip => "skip",
            Self::Recorded => "recorded",
        }
    }
}

/// A provider's cassette settings (`cassette`, `cassette_mode`, `cassette_timing`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CassetteSettings {
    /// The cassette file (relative paths are taken from the working directory).
    pub path: PathBuf,
    /// What to do with it.
    pub mode: CassetteMode,
    /// Whether replay honours the recorded timing.
    pub timing: CassetteTiming,
}

impl CassetteSettings {
    /// Settings for `path` in `mode`, replayed without delays.
    pub fn new(path: impl Into<PathBuf>, mode: CassetteMode) -> Self {
        Self {
            path: path.into(),
            mode,
            timing: CassetteTiming::Skip,
        }
    }
}

/// A provider's open cassette: what was loaded, what has been replayed, and (when recording)
/// the lock and the file's lines.
pub(crate) struct Cassette {
    path: PathBuf,
    mode: CassetteMode,
    timing: CassetteTiming,
    provider: String,
    wire_api: &'static str,
    /// Values never written to the file: the API key and long header values.
    secrets: Vec<String>,
    state: Mutex<State>,
    /// Held while recording; released (and its file removed) with the cassette.
    _lock: Option<RecordLock>,
}

impl std::fmt::Debug for Cassette {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cassette")
            .field("path", &self.path)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
struct State {
    /// Every exchange, loaded and recorded (shared: a replay hands one out without copying).
    entries: Vec<Arc<Entry>>,
    /// The positions in `entries` of each digest's exchanges, in order.
    by_digest: HashMap<String, Vec<usize>>,
    /// How many of each digest's exchanges have been used.
    used: HashMap<String, usize>,
    /// Whether the file exists with its header: the first exchange recorded to a new file
    /// creates it whole (a temporary file renamed), later ones are appended.
    started: bool,
    /// Why the last write failed: every later request fails with it rather than going on
    /// without recording.
    write_failure: Option<String>,
}

impl State {
    fn add(&mut self, entry: Entry) -> usize {
        let position = self.entries.len();
        self.by_digest
            .entry(entry.digest.clone())
            .or_default()
            .push(position);
        self.entries.push(Arc::new(entry));
        position
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Cassette {
    /// Opens the cassette `provider` names, or `None` when it runs live. Blocking: it reads
    /// the file (and, when recording, locks it).
    pub(crate) fn open(provider: &ModelProviderConfig) -> Result<Option<Arc<Self>>, CassetteError> {
        let Some(settings) = &provider.cassette else {
            return Ok(None);
        };
        if settings.mode == CassetteMode::Live {
            return Ok(None);
        }
        let path = settings.path.clone();
        let records = matches!(
            settings.mode,
            CassetteMode::Record | CassetteMode::RecordMissing
        );
        // Locked before reading, so that what is read is what this recorder appends to.
        let record_lock = records.then(|| RecordLock::acquire(&path)).transpose()?;
        let loaded = format::load(&path)?;
        if loaded.header.is_none() && settings.mode == CassetteMode::Replay {
            return Err(CassetteError::Missing { path });
        }
        let wire_api = provider.wire_api.as_str();
        if let Some(header) = &loaded.header
            && (header.provider != provider.id || header.wire_api != wire_api)
        {
            return Err(CassetteError::OtherProvider {
                path,
                recorded: header.provider.clone(),
                recorded_wire: header.wire_api.clone(),
                configured: provider.id.clone(),
                configured_wire: wire_api.to_owned(),
            });
        }
        let mut state = State {
            started: loaded.header.is_some(),
            ..State::default()
        };
        for mut entry in loaded.entries {
            entry.digest = canonical::digest(&entry.request);
            state.add(entry);
        }
        let mut secrets: Vec<String> = provider
            .env_key
            .as_deref()
            .and_then(|name| std::env::var(name).ok())
            .into_iter()
            .collect();
        // Short header values ("1", "json") cannot be told from ordinary text; credentials
        // are long.
        secrets.extend(
            provider
                .http_headers
                .values()
                .filter(|value| value.len() >= 8)
                .cloned(),
        );
        tracing::info!(
            cassette = %path.display(), mode = settings.mode.as_str(),
            exchanges = state.entries.len(), provider = %provider.id,
            "model provider runs on a cassette"
        );
        Ok(Some(Arc::new(Self {
            path,
            mode: settings.mode,
            timing: settings.timing,
            provider: provider.id.clone(),
            wire_api,
            secrets,
            state: Mutex::new(state),
            _lock: record_lock,
        })))
    }

    /// The cassette's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Answers `exchange` as the mode says: from the file, from the provider (recorded), or
    /// with the error that says why neither.
    pub(crate) async fn send(
        self: &Arc<Self>,
        client: &reqwest::Client,
        exchange: Exchange<'_>,
    ) -> Result<ModelResponse, AttemptError> {
        if let Some(failure) = lock(&self.state).write_failure.clone() {
            return Err(AttemptError::Fatal(failure));
        }
        let body: Value = serde_json::from_slice(&exchange.body).map_err(|error| {
            AttemptError::Fatal(format!("the model request is not JSON ({error})"))
        })?;
        let canonical = canonical::canonicalize(&body, exchange.cwd);
        let digest = canonical::digest(&canonical);
        if self.mode != CassetteMode::Record
            && let Some(entry) = self.take(&digest)
        {
            tracing::debug!(cassette = %self.path.display(), %digest, "replaying a recorded answer");
            return replayer::respond(&entry, self.timing).await;
        }
        if self.mode == CassetteMode::Replay {
            return Err(AttemptError::Fatal(self.miss(&digest, &canonical)));
        }
        recorder::record(self, client, exchange, digest, canonical).await
    }

    /// The next unused exchange recorded for `digest`, marked used.
    fn take(&self, digest: &str) -> Option<Arc<Entry>> {
        let mut state = lock(&self.state);
        let next = state.used.get(digest).copied().unwrap_or(0);
        let position = *state.by_digest.get(digest)?.get(next)?;
        state.used.insert(digest.to_owned(), next + 1);
        Some(Arc::clone(&state.entries[position]))
    }

    /// Why a request has no recording, for the turn's error.
    fn miss(&self, digest: &str, canonical: &Value) -> String {
        let state = lock(&self.state);
        replayer::miss_message(self, &state.entries, state.by_digest.get(digest), canonical)
    }

    /// Adds a recorded exchange (marked used: this run has had it) and writes the file, with
    /// every one of `secrets` redacted.
    fn commit(&self, entry: Entry, secrets: &[String]) {
        let entry = redact(entry, secrets);
        let line = match serde_json::to_string(&entry) {
            Ok(line) => line,
            Err(error) => {
                tracing::error!(%error, "cannot encode a recorded exchange");
                return;
            }
        };
        let mut state = lock(&self.state);
        let digest = entry.digest.clone();
        state.add(entry);
        *state.used.entry(digest).or_default() += 1;
        let written = if state.started {
            format::append_line(&self.path, &line)
        } else {
            let header = Header {
                tandem_cassette: FORMAT_VERSION,
                provider: self.provider.clone(),
                wire_api: self.wire_api.to_owned(),
                recorded_by: concat!("tandem ", env!("CARGO_PKG_VERSION")).to_owned(),
            };
            let header = serde_json::to_string(&header).unwrap_or_default();
            format::write_atomically(&self.path, &[header, line])
        };
        match written {
            Ok(()) => state.started = true,
            Err(error) => {
                tracing::error!(%error, "cannot write the cassette");
                state.write_failure = Some(format!("{error}; the recording stopped there"));
            }
        }
    }

    /// The secrets of a request sent with `key` (set, perhaps, after the cassette opened).
    fn secrets_with(&self, key: Option<&str>) -> Vec<String> {
        let mut secrets = self.secrets.clone();
        if let Some(key) = key.filter(|key| !secrets.iter().any(|known| known == key)) {
            secrets.push(key.to_owned());
        }
        secrets
    }
}

/// `entry` with every one of `secrets` replaced by `<redacted>`, wherever it appears.
fn redact(entry: Entry, secrets: &[String]) -> Entry {
    let secrets: Vec<&String> = secrets.iter().filter(|secret| !secret.is_empty()).collect();
    if secrets.is_empty() {
        return entry;
    }
    let Ok(mut text) = serde_json::to_string(&entry) else {
        return entry;
    };
    for secret in secrets {
        // As it appears inside a JSON string.
        let escaped = Value::from(secret.as_str()).to_string();
        let escaped = &escaped[1..escaped.len() - 1];
        text = text.replace(escaped, "<redacted>");
    }
    // Redaction cannot break the JSON (it replaces text inside strings), but if it ever did
    // the entry is not written with the secret in it either.
    serde_json::from_str(&text).unwrap_or(Entry {
        digest: entry.digest,
        endpoint: entry.endpoint,
        request: Value::Null,
        response: format::RecordedResponse::NoResponse,
    })
}

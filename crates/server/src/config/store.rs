//! The `[store]` table (issue 20, docs/scaling.md): where durable threads live and how long a
//! server's writer lease on a thread lasts. `store.url = "postgres://..."` puts threads in
//! PostgreSQL, shared by every server that names the same database; without it they live in
//! `TANDEM_HOME/threads.sqlite`. `store.lease_ttl_ms` is the lease TTL (renewed every third
//! of it); tests shorten it to see failover in seconds. `store.handoff_wait_ms` is how long a
//! server asked for a thread another server holds waits for it to be handed over (issue 32)
//! before it refuses.

use std::time::Duration;

use super::ConfigError;
use super::layers::Layered;
use crate::store::DEFAULT_LEASE_TTL;

/// Config key of the `[store]` table.
pub const STORE_KEY: &str = "store";

/// The keys of the `[store]` table.
pub(crate) const STORE_KEYS: &[&str] = &["url", "lease_ttl_ms", "handoff_wait_ms"];

/// How long a resume waits for a handoff when the configuration sets nothing: 2 s.
pub(crate) const DEFAULT_HANDOFF_WAIT: Duration = Duration::from_secs(2);
/// The longest handoff wait accepted: a request waiting longer would look hung to a client.
const MAX_HANDOFF_WAIT: Duration = Duration::from_secs(60);

/// The shortest lease TTL accepted: renewing every third of it must stay well above a
/// database round trip.
const MIN_LEASE_TTL: Duration = Duration::from_millis(300);

/// The `[store]` settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoreSettings {
    pub(crate) url: Option<String>,
    pub(crate) lease_ttl: Duration,
    pub(crate) handoff_wait: Duration,
}

impl Default for StoreSettings {
    fn default() -> Self {
        Self {
            url: None,
            lease_ttl: DEFAULT_LEASE_TTL,
            handoff_wait: DEFAULT_HANDOFF_WAIT,
        }
    }
}

/// Reads the `[store]` table of `layered`.
pub(crate) fn parse_store(layered: &Layered) -> Result<StoreSettings, ConfigError> {
    let mut settings = StoreSettings::default();
    let Some(value) = layered.table.get(STORE_KEY) else {
        return Ok(settings);
    };
    let origin = layered.origin_of(STORE_KEY).to_string();
    let invalid = |key: &str, value: &toml::Value, reason: &str| ConfigError::InvalidValue {
        key: format!("{STORE_KEY}.{key}"),
        value: value.to_string(),
        origin: origin.clone(),
        reason: reason.to_owned(),
    };
    let toml::Value::Table(table) = value else {
        return Err(ConfigError::InvalidValue {
            key: STORE_KEY.to_owned(),
            value: value.to_string(),
            origin: origin.clone(),
            reason: "expected a table: [store] url = \"postgres://...\"".to_owned(),
        });
    };
    if let Some(url) = table.get("url") {
        match url {
            toml::Value::String(text)
                if text.starts_with("postgres://") || text.starts_with("postgresql://") =>
            {
                settings.url = Some(text.clone());
            }
            toml::Value::String(text) if text.is_empty() => {}
            other => {
                return Err(invalid(
                    "url",
                    other,
                    "expected a PostgreSQL URL such as \"postgres://tandem@db.internal/tandem\" \
                     (leave it out to keep threads in TANDEM_HOME/threads.sqlite)",
                ));
            }
        }
    }
    if let Some(ttl) = table.get("lease_ttl_ms") {
        let millis = match ttl {
            toml::Value::Integer(millis) => u64::try_from(*millis).ok(),
            _ => None,
        };
        match millis.map(Duration::from_millis) {
            Some(ttl) if ttl >= MIN_LEASE_TTL => settings.lease_ttl = ttl,
            _ => {
                return Err(invalid(
                    "lease_ttl_ms",
                    ttl,
                    &format!(
                        "expected a whole number of milliseconds of at least {} (default {})",
                        MIN_LEASE_TTL.as_millis(),
                        DEFAULT_LEASE_TTL.as_millis()
                    ),
                ));
            }
        }
    }
    if let Some(wait) = table.get("handoff_wait_ms") {
        let millis = match wait {
            toml::Value::Integer(millis) => u64::try_from(*millis).ok(),
            _ => None,
        };
        match millis.map(Duration::from_millis) {
            Some(wait) if wait <= MAX_HANDOFF_WAIT => settings.handoff_wait = wait,
            _ => {
                return Err(invalid(
                    "handoff_wait_ms",
                    wait,
                    &format!(
                        "expected a whole number of milliseconds from 0 (refuse at once) to {} \
                         (default {})",
                        MAX_HANDOFF_WAIT.as_millis(),
                        DEFAULT_HANDOFF_WAIT.as_millis()
                    ),
                ));
            }
        }
    }
    Ok(settings)
}

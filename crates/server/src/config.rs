//! Server configuration: where `TANDEM_HOME` is, what `TANDEM_HOME/config.toml` says, and the
//! overrides of whoever builds the server, resolved once into a validated [`ServerConfig`] so
//! that nothing later has to re-check a value (protocol.md sections 4 and 9).
//!
//! Precedence, highest first: the builder's overrides, the config file, the defaults. The home
//! itself comes from the builder, else the `TANDEM_HOME` environment variable, else the
//! platform data directory joined with `tandem`.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tandem_protocol::ConfigReadResponse;

/// The environment variable naming the server's home directory.
pub const TANDEM_HOME_ENV: &str = "TANDEM_HOME";

/// The config file's name inside `TANDEM_HOME`.
pub const CONFIG_FILE_NAME: &str = "config.toml";

/// The directory under the platform data directory used when `TANDEM_HOME` is not set.
pub const DEFAULT_HOME_DIR_NAME: &str = "tandem";

/// Config key of the idle-unload delay, in seconds.
pub const THREAD_UNLOAD_DELAY_KEY: &str = "thread_unload_delay_secs";

/// Default idle-unload delay (protocol.md section 10).
pub const DEFAULT_THREAD_UNLOAD_DELAY: Duration = Duration::from_secs(60);

/// How long a server may run and still compute an unload deadline from a validated delay.
///
/// Validation adds this to "now" because deadlines are computed later than the config is
/// loaded: a delay that only just fits today would overflow after some uptime. A century
/// rejects nothing anyone would configure on purpose.
const UPTIME_HEADROOM: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);

/// Every key the config file may hold; any other key is ignored with a warning.
const KNOWN_KEYS: &[&str] = &[THREAD_UNLOAD_DELAY_KEY];

/// Why a configuration could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// No `TANDEM_HOME`, and the platform has no data directory to default to.
    #[error(
        "cannot find a home directory for Tandem: set the {TANDEM_HOME_ENV} environment variable \
         to an absolute path (this platform reports no data directory)"
    )]
    NoHome,
    /// A relative home could not be made absolute (the working directory is unreadable).
    #[error("cannot make TANDEM_HOME {path} absolute: {source}; set it to an absolute path")]
    RelativeHome {
        /// The home as given.
        path: PathBuf,
        /// Why the working directory could not be read.
        #[source]
        source: io::Error,
    },
    /// The home directory does not exist and could not be created.
    #[error("cannot create TANDEM_HOME directory {path}: {source}")]
    CreateHome {
        /// The home directory.
        path: PathBuf,
        /// The filesystem error.
        #[source]
        source: io::Error,
    },
    /// The config file exists but could not be read.
    #[error("cannot read config file {path}: {source}")]
    ReadFile {
        /// The config file.
        path: PathBuf,
        /// The filesystem error.
        #[source]
        source: io::Error,
    },
    /// The config file is not valid TOML.
    #[error("config file {path} is not valid TOML: {source}")]
    ParseFile {
        /// The config file.
        path: PathBuf,
        /// The parser's error, with line and column.
        #[source]
        source: Box<toml::de::Error>,
    },
    /// A key holds a value the server cannot use.
    #[error("invalid {key} = {value} in {origin}: {reason}")]
    InvalidValue {
        /// The config key.
        key: &'static str,
        /// The offending value, as written.
        value: String,
        /// Where it came from: the config file's path, or the embedder's overrides.
        origin: String,
        /// What is wrong and what would be accepted.
        reason: String,
    },
}

/// The effective, validated server configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The server's home directory: absolute, and existing once [`ServerConfigBuilder::load`]
    /// returned.
    pub tandem_home: PathBuf,
    /// How long a loaded thread with no subscribers and no active turn stays loaded.
    pub thread_unload_delay: Duration,
}

impl ServerConfig {
    /// A builder with no overrides: home from the environment, settings from the config file.
    pub fn builder() -> ServerConfigBuilder {
        ServerConfigBuilder::default()
    }

    /// The path of the config file inside the home (it need not exist).
    pub fn config_file(&self) -> PathBuf {
        self.tandem_home.join(CONFIG_FILE_NAME)
    }

    /// The effective configuration under its config-file keys, the `config` object of
    /// `config/read`.
    pub fn to_config_object(&self) -> Value {
        json!({
            "tandem_home": self.tandem_home.display().to_string(),
            THREAD_UNLOAD_DELAY_KEY: self.thread_unload_delay.as_secs(),
        })
    }

    /// The `config/read` result: the effective configuration, `origins: {}`, `layers: null`.
    pub fn config_read_response(&self) -> ConfigReadResponse {
        ConfigReadResponse {
            config: self.to_config_object(),
            origins: json!({}),
            layers: None,
        }
    }
}

/// Resolves a [`ServerConfig`]; explicit settings here win over the config file.
#[derive(Debug, Clone, Default)]
pub struct ServerConfigBuilder {
    tandem_home: Option<PathBuf>,
    thread_unload_delay_secs: Option<u64>,
}

impl ServerConfigBuilder {
    /// Uses this home instead of `TANDEM_HOME` or the platform default. A relative path is
    /// taken relative to the working directory.
    pub fn tandem_home(mut self, path: impl Into<PathBuf>) -> Self {
        self.tandem_home = Some(path.into());
        self
    }

    /// Sets `thread_unload_delay_secs`, overriding the config file. Checked by
    /// [`ServerConfigBuilder::load`] like a value from the file.
    pub fn thread_unload_delay_secs(mut self, secs: u64) -> Self {
        self.thread_unload_delay_secs = Some(secs);
        self
    }

    /// Resolves the home (creating it if missing), reads its config file if present, applies
    /// the overrides and validates the result. A config file that is unreadable, not TOML or
    /// holds an invalid value is an error even where an override replaces that value.
    ///
    /// Blocking: it touches the filesystem. Call it before starting the server, or from
    /// `spawn_blocking`.
    pub fn load(self) -> Result<ServerConfig, ConfigError> {
        let home = match self.tandem_home {
            Some(path) => make_absolute(path)?,
            None => resolve_tandem_home(
                std::env::var_os(TANDEM_HOME_ENV),
                dirs::data_dir().map(|dir| dir.join(DEFAULT_HOME_DIR_NAME)),
            )?,
        };
        std::fs::create_dir_all(&home).map_err(|source| ConfigError::CreateHome {
            path: home.clone(),
            source,
        })?;

        let file = FileSettings::read(&home.join(CONFIG_FILE_NAME))?;
        let thread_unload_delay = match self.thread_unload_delay_secs {
            Some(secs) => validate_thread_unload_delay(secs, "the server's start arguments")?,
            None => file
                .thread_unload_delay
                .unwrap_or(DEFAULT_THREAD_UNLOAD_DELAY),
        };
        Ok(ServerConfig {
            tandem_home: home,
            thread_unload_delay,
        })
    }
}

/// Checks that an unload deadline computed from `secs` fits the monotonic clock, now and over
/// any realistic uptime; `origin` names where the value came from for the error.
pub fn validate_thread_unload_delay(secs: u64, origin: &str) -> Result<Duration, ConfigError> {
    let delay = Duration::from_secs(secs);
    let fits = Instant::now()
        .checked_add(delay)
        .and_then(|deadline| deadline.checked_add(UPTIME_HEADROOM))
        .is_some();
    if fits {
        Ok(delay)
    } else {
        Err(ConfigError::InvalidValue {
            key: THREAD_UNLOAD_DELAY_KEY,
            value: secs.to_string(),
            origin: origin.to_owned(),
            reason: "the unload deadline would overflow the monotonic clock; use a smaller \
                     number of seconds (0 unloads as soon as idle)"
                .to_owned(),
        })
    }
}

/// The home from the `TANDEM_HOME` value if set and non-empty, else the platform default;
/// made absolute. Split from the environment so that tests need not mutate it.
fn resolve_tandem_home(
    env_value: Option<OsString>,
    platform_default: Option<PathBuf>,
) -> Result<PathBuf, ConfigError> {
    // An empty variable is how shells spell "unset" in `TANDEM_HOME= cmd`; treating it as the
    // working directory would scatter databases wherever the server happens to start.
    let chosen = env_value
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
        .or(platform_default)
        .ok_or(ConfigError::NoHome)?;
    make_absolute(chosen)
}

fn make_absolute(path: PathBuf) -> Result<PathBuf, ConfigError> {
    if path.is_absolute() {
        return Ok(path);
    }
    std::path::absolute(&path).map_err(|source| ConfigError::RelativeHome { path, source })
}

/// What the config file sets; `None` for keys it leaves out.
#[derive(Debug, Default, PartialEq, Eq)]
struct FileSettings {
    thread_unload_delay: Option<Duration>,
}

impl FileSettings {
    /// Reads `path`; a missing file sets nothing.
    fn read(path: &Path) -> Result<Self, ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::parse(&text, path),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(Self::default()),
            Err(source) => Err(ConfigError::ReadFile {
                path: path.to_owned(),
                source,
            }),
        }
    }

    /// Parses the file's text; `path` is only used in messages.
    fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let table: toml::Table = toml::from_str(text).map_err(|source| ConfigError::ParseFile {
            path: path.to_owned(),
            source: Box::new(source),
        })?;
        for key in table
            .keys()
            .filter(|key| !KNOWN_KEYS.contains(&key.as_str()))
        {
            // Ignored rather than rejected so that a file shared with a newer server, or
            // holding keys of other tools, still loads.
            tracing::warn!(key = %key, file = %path.display(), "ignoring unknown config key");
        }
        let origin = path.display().to_string();
        let thread_unload_delay = table
            .get(THREAD_UNLOAD_DELAY_KEY)
            .map(|value| parse_delay(value, &origin))
            .transpose()?;
        Ok(Self {
            thread_unload_delay,
        })
    }
}

fn parse_delay(value: &toml::Value, origin: &str) -> Result<Duration, ConfigError> {
    let invalid = |reason: String| ConfigError::InvalidValue {
        key: THREAD_UNLOAD_DELAY_KEY,
        value: value.to_string(),
        origin: origin.to_owned(),
        reason,
    };
    match value {
        toml::Value::Integer(secs) => {
            let secs = u64::try_from(*secs).map_err(|_| {
                invalid("the delay must not be negative; use 0 to unload as soon as idle".into())
            })?;
            validate_thread_unload_delay(secs, origin)
        }
        other => Err(invalid(format!(
            "expected a whole number of seconds (e.g. {}), found a {}",
            DEFAULT_THREAD_UNLOAD_DELAY.as_secs(),
            other.type_str()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn home_with_config(text: Option<&str>) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        if let Some(text) = text {
            std::fs::write(dir.path().join(CONFIG_FILE_NAME), text).expect("write config");
        }
        dir
    }

    fn load(home: &Path) -> Result<ServerConfig, ConfigError> {
        ServerConfig::builder().tandem_home(home).load()
    }

    #[test]
    fn missing_file_gives_the_default_delay() {
        let home = home_with_config(None);
        let config = load(home.path()).expect("load");
        assert_eq!(config.thread_unload_delay, Duration::from_secs(60));
        assert_eq!(config.tandem_home, home.path());
    }

    #[test]
    fn file_without_the_key_gives_the_default_delay() {
        let home = home_with_config(Some("# nothing set\n"));
        assert_eq!(
            load(home.path()).expect("load").thread_unload_delay,
            DEFAULT_THREAD_UNLOAD_DELAY
        );
    }

    #[test]
    fn delay_zero_and_one_parse() {
        for secs in [0, 1] {
            let home = home_with_config(Some(&format!("thread_unload_delay_secs = {secs}\n")));
            let config = load(home.path()).expect("load");
            assert_eq!(config.thread_unload_delay, Duration::from_secs(secs));
        }
    }

    #[test]
    fn overflowing_delay_override_is_rejected_naming_the_key() {
        let home = home_with_config(None);
        let error = ServerConfig::builder()
            .tandem_home(home.path())
            .thread_unload_delay_secs(u64::MAX)
            .load()
            .expect_err("u64::MAX must overflow the monotonic clock");
        let message = error.to_string();
        assert!(message.contains(THREAD_UNLOAD_DELAY_KEY), "{message}");
        assert!(message.contains(&u64::MAX.to_string()), "{message}");
        assert!(message.contains("overflow"), "{message}");
    }

    #[test]
    fn overflowing_delay_in_the_file_is_rejected_naming_key_and_file() {
        // TOML integers are i64, so i64::MAX is the largest value a file can hold; as seconds
        // it is beyond any monotonic clock's range.
        let home = home_with_config(Some(&format!("thread_unload_delay_secs = {}\n", i64::MAX)));
        let message = load(home.path()).expect_err("must overflow").to_string();
        assert!(message.contains(THREAD_UNLOAD_DELAY_KEY), "{message}");
        assert!(message.contains(&i64::MAX.to_string()), "{message}");
        assert!(message.contains(CONFIG_FILE_NAME), "{message}");
    }

    #[test]
    fn negative_and_non_integer_delays_are_rejected_naming_the_key() {
        for value in ["-1", "1.5", "\"60\"", "true"] {
            let home = home_with_config(Some(&format!("thread_unload_delay_secs = {value}\n")));
            let error = load(home.path()).expect_err(value);
            assert!(
                matches!(error, ConfigError::InvalidValue { .. }),
                "{error:?}"
            );
            let message = error.to_string();
            assert!(message.contains(THREAD_UNLOAD_DELAY_KEY), "{message}");
            assert!(message.contains(value), "{message}");
        }
    }

    #[test]
    fn override_beats_the_file() {
        let home = home_with_config(Some("thread_unload_delay_secs = 5\n"));
        let config = ServerConfig::builder()
            .tandem_home(home.path())
            .thread_unload_delay_secs(0)
            .load()
            .expect("load");
        assert_eq!(config.thread_unload_delay, Duration::ZERO);
    }

    #[test]
    fn malformed_file_is_an_error_even_with_an_override() {
        // The override replaces the file's value, but a broken file is still reported: the
        // embedder should hear about it rather than have it silently ignored.
        let home = home_with_config(Some("thread_unload_delay_secs = \n"));
        let error = ServerConfig::builder()
            .tandem_home(home.path())
            .thread_unload_delay_secs(3)
            .load()
            .expect_err("malformed file");
        assert!(matches!(error, ConfigError::ParseFile { .. }), "{error:?}");
    }

    #[test]
    fn malformed_file_error_names_the_path() {
        let home = home_with_config(Some("thread_unload_delay_secs = = 3\n"));
        let error = load(home.path()).expect_err("malformed");
        let path = home.path().join(CONFIG_FILE_NAME);
        let message = error.to_string();
        assert!(message.contains(&path.display().to_string()), "{message}");
        assert!(std::error::Error::source(&error).is_some());
    }

    #[test]
    fn unknown_keys_are_ignored() {
        let home = home_with_config(Some(
            "thread_unload_delay_secs = 7\nsome_future_key = \"x\"\n[other_tool]\na = 1\n",
        ));
        assert_eq!(
            load(home.path()).expect("load").thread_unload_delay,
            Duration::from_secs(7)
        );
    }

    #[test]
    fn home_is_created_on_first_use() {
        let parent = tempfile::tempdir().expect("temp dir");
        let home = parent.path().join("nested").join("tandem");
        let config = load(&home).expect("load");
        assert!(home.is_dir());
        assert_eq!(config.tandem_home, home);
    }

    #[test]
    fn home_resolution_prefers_the_variable_then_the_platform_default() {
        let from_env = resolve_tandem_home(
            Some(OsString::from("/srv/tandem")),
            Some(PathBuf::from("/data/tandem")),
        )
        .expect("env");
        assert_eq!(from_env, PathBuf::from("/srv/tandem"));

        let empty_env =
            resolve_tandem_home(Some(OsString::new()), Some(PathBuf::from("/data/tandem")))
                .expect("default");
        assert_eq!(empty_env, PathBuf::from("/data/tandem"));

        let relative = resolve_tandem_home(Some(OsString::from("rel/home")), None).expect("rel");
        assert!(relative.is_absolute());
        assert!(relative.ends_with("rel/home"));

        assert!(matches!(
            resolve_tandem_home(None, None),
            Err(ConfigError::NoHome)
        ));
    }

    #[test]
    fn config_object_reports_the_effective_values() {
        let home = home_with_config(Some("thread_unload_delay_secs = 0\n"));
        let config = load(home.path()).expect("load");
        let response = config.config_read_response();
        assert_eq!(
            response.config,
            json!({
                "tandem_home": home.path().display().to_string(),
                "thread_unload_delay_secs": 0,
            })
        );
        assert_eq!(response.origins, json!({}));
        assert_eq!(response.layers, None);
    }
}

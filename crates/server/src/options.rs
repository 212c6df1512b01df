//! [`ServerOptions`]: what a [`crate::TandemServer`] is started with, and where its home
//! directory (`tandemHome`) is when the embedder does not say.
//!
//! The home is resolved once, up front, so that `initialize` reports one absolute path for the
//! server's whole life; it is created on first use (the first `initialize`), not at resolution,
//! so that merely building options never touches the filesystem.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

/// The environment variable that overrides the home directory.
pub const TANDEM_HOME_ENV: &str = "TANDEM_HOME";

/// The directory name used under the platform data directory when `TANDEM_HOME` is unset.
pub const HOME_DIR_NAME: &str = "tandem";

/// Why [`ServerOptions`] could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ServerOptionsError {
    /// Neither `TANDEM_HOME` nor a platform data directory is available.
    #[error(
        "cannot choose a home directory for Tandem: set {TANDEM_HOME_ENV} to an absolute path \
         (neither it nor a platform data directory such as $XDG_DATA_HOME or $HOME is set)"
    )]
    NoHome,
    /// A relative home could not be made absolute because the working directory is unknown.
    #[error("cannot make the Tandem home {path} absolute: {source}; give an absolute path")]
    RelativeHome {
        /// The home as given.
        path: PathBuf,
        /// Why the working directory could not be read.
        #[source]
        source: io::Error,
    },
}

/// How a [`crate::TandemServer`] is configured.
///
/// Marked non-exhaustive so that settings can be added without breaking embedders: build it
/// with [`ServerOptions::new`] or [`ServerOptions::from_env`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerOptions {
    /// The server's home directory (`tandemHome`): always absolute. Created by the server on
    /// first use if it does not exist.
    pub tandem_home: PathBuf,
}

impl ServerOptions {
    /// Options with `tandem_home` as the home; a relative path is taken relative to the
    /// working directory.
    pub fn new(tandem_home: impl Into<PathBuf>) -> Result<Self, ServerOptionsError> {
        Ok(Self {
            tandem_home: make_absolute(tandem_home.into())?,
        })
    }

    /// Options with the home taken from `TANDEM_HOME`, else the platform data directory
    /// joined with `tandem` (on Linux `$XDG_DATA_HOME/tandem`, else
    /// `$HOME/.local/share/tandem`).
    pub fn from_env() -> Result<Self, ServerOptionsError> {
        Self::new(resolve_home(|name| std::env::var_os(name))?)
    }
}

/// The home named by `env` (a lookup, so tests need not mutate the process environment).
fn resolve_home(env: impl Fn(&str) -> Option<OsString>) -> Result<PathBuf, ServerOptionsError> {
    // An empty value is how shells spell "unset" (`TANDEM_HOME= cmd`); taking it as the working
    // directory would scatter server state wherever the server happens to start.
    if let Some(home) = env(TANDEM_HOME_ENV).filter(|value| !value.is_empty()) {
        return Ok(PathBuf::from(home));
    }
    platform_data_dir(&env)
        .map(|dir| dir.join(HOME_DIR_NAME))
        .ok_or(ServerOptionsError::NoHome)
}

/// The per-user data directory of the platform, following each platform's convention.
fn platform_data_dir(env: &impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let absolute = |name: &str| {
        env(name)
            .map(PathBuf::from)
            // The XDG spec says relative values are invalid and must be ignored.
            .filter(|path| path.is_absolute())
    };
    if cfg!(windows) {
        absolute("APPDATA")
    } else if cfg!(target_os = "macos") {
        absolute("HOME").map(|home| home.join("Library").join("Application Support"))
    } else {
        absolute("XDG_DATA_HOME")
            .or_else(|| absolute("HOME").map(|home| home.join(".local").join("share")))
    }
}

fn make_absolute(path: PathBuf) -> Result<PathBuf, ServerOptionsError> {
    if path.is_absolute() {
        return Ok(path);
    }
    std::path::absolute(&path).map_err(|source| ServerOptionsError::RelativeHome { path, source })
}

/// Creates `home` (and its parents) if missing; the error names the path and what to do.
pub(crate) async fn ensure_home(home: &Path) -> Result<(), String> {
    tokio::fs::create_dir_all(home).await.map_err(|error| {
        format!(
            "cannot create the Tandem home {}: {error}; set {TANDEM_HOME_ENV} to a writable \
             directory",
            home.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let map: HashMap<String, OsString> = pairs
            .iter()
            .map(|(name, value)| ((*name).to_owned(), OsString::from(value)))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn tandem_home_variable_wins() {
        let home = resolve_home(env(&[
            ("TANDEM_HOME", "/srv/tandem"),
            ("HOME", "/home/ada"),
        ]))
        .unwrap();
        assert_eq!(home, PathBuf::from("/srv/tandem"));
    }

    #[test]
    fn empty_variable_falls_back_to_the_platform_directory() {
        let home = resolve_home(env(&[("TANDEM_HOME", ""), ("HOME", "/home/ada")])).unwrap();
        assert!(home.starts_with("/home/ada"), "{}", home.display());
        assert!(home.ends_with(HOME_DIR_NAME));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn linux_uses_xdg_data_home_then_home() {
        let xdg = resolve_home(env(&[("XDG_DATA_HOME", "/data"), ("HOME", "/home/ada")]));
        assert_eq!(xdg.unwrap(), PathBuf::from("/data/tandem"));
        // A relative XDG_DATA_HOME is invalid per the spec and ignored.
        let relative = resolve_home(env(&[("XDG_DATA_HOME", "data"), ("HOME", "/home/ada")]));
        assert_eq!(
            relative.unwrap(),
            PathBuf::from("/home/ada/.local/share/tandem")
        );
    }

    #[test]
    fn nothing_set_is_an_actionable_error() {
        let error = resolve_home(env(&[])).unwrap_err();
        assert!(matches!(error, ServerOptionsError::NoHome));
        assert!(error.to_string().contains("set TANDEM_HOME"), "{error}");
    }

    #[test]
    fn relative_homes_are_made_absolute() {
        let options = ServerOptions::new("relative/home").unwrap();
        assert!(options.tandem_home.is_absolute());
        assert!(options.tandem_home.ends_with("relative/home"));
    }

    #[tokio::test]
    async fn home_is_created_and_an_uncreatable_one_is_explained() {
        let base = std::env::temp_dir().join(format!("tandem-options-test-{}", std::process::id()));
        let home = base.join("nested").join("home");
        ensure_home(&home).await.unwrap();
        assert!(home.is_dir());
        // A regular file where a parent directory should be cannot be created through.
        let blocker = base.join("file");
        std::fs::write(&blocker, b"x").unwrap();
        let message = ensure_home(&blocker.join("home")).await.unwrap_err();
        assert!(message.contains("set TANDEM_HOME"), "{message}");
        let _ = std::fs::remove_dir_all(&base);
    }
}

//! The global options every `tandem` command accepts (before or after the subcommand), and how
//! they become the server's configuration: `-c key=value` overrides, `--profile`,
//! `--strict-config`, `--trace-file`, and the `--enable`/`--disable` feature switches that
//! clients of other app-servers pass (accepted, but hidden from `--help`: Tandem has no
//! optional features). Configuration warnings (unknown keys with a "did you mean") are printed
//! on stderr here, for every command.
//!
//! They are not clap `global` arguments: clap keeps only the innermost level's values of a
//! global argument, so `tandem -c a=1 run -c b=2` would lose `a=1`. Instead the top level and
//! each subcommand declare them, and [`GlobalOptions::then`] joins the two in command-line
//! order.

use std::path::PathBuf;

use clap::Args;
use tandem_server::config::toml;
use tandem_server::{
    ConfigWarning, HelperProgram, ServerConfig, ServerConfigBuilder, ServerOptions,
    ServerOptionsError,
};

/// Feature names `--enable`/`--disable` know. Tandem has no optional features yet, so every
/// name is unknown: that is a warning, not an error, because SDKs written for other app-servers
/// pass their own defaults (one enables `guardian_approval`).
const KNOWN_FEATURES: &[&str] = &[];

/// Options shared by every command.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct GlobalOptions {
    /// Override a config key for this run: `-c key=value`, repeatable. The value is parsed as
    /// TOML and taken as a plain string if it is not TOML; dotted keys address nested tables
    /// (`-c model_providers.local.base_url="http://127.0.0.1:8080/v1"`).
    #[arg(
        short = 'c',
        long = "config",
        value_name = "KEY=VALUE",
        value_parser = check_override
    )]
    pub(crate) config: Vec<String>,
    /// Turn a feature on (repeatable). Tandem has no optional features, so every name is
    /// ignored with a warning; hidden from `--help`, accepted for clients of other app-servers.
    #[arg(long, value_name = "FEATURE", hide = true)]
    pub(crate) enable: Vec<String>,
    /// Turn a feature off (repeatable); like `--enable`, accepted and ignored with a warning.
    #[arg(long, value_name = "FEATURE", hide = true)]
    pub(crate) disable: Vec<String>,
    /// Use `[profiles.NAME]` of config.toml over its top-level settings.
    #[arg(long, value_name = "NAME")]
    pub(crate) profile: Option<String>,
    /// Refuse to start when config.toml or a -c override holds a key tandem does not know
    /// (without it such keys are ignored with a warning on stderr).
    #[arg(long)]
    pub(crate) strict_config: bool,
    /// Write the wire trace (every JSON message in and out, per connection) to PATH instead
    /// of stderr; it is on whenever this is given (see TANDEM_LOG=tandem::wire=trace).
    #[arg(long, value_name = "PATH")]
    pub(crate) trace_file: Option<PathBuf>,
}

/// `--cassette PATH --cassette-mode MODE` of `tandem run` and `tandem chat`: the selected
/// provider's `cassette` and `cassette_mode`, for the in-process server.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct CassetteArgs {
    /// Answer the model's requests from the cassette at PATH, or record them to it (see
    /// --cassette-mode): the selected provider's `cassette` (docs/cassettes.md).
    #[arg(long, value_name = "PATH", conflicts_with_all = ["connect", "spawn"])]
    pub(crate) cassette: Option<PathBuf>,
    /// What to do with --cassette: replay (answer from it only), record (call the provider and
    /// append every exchange), record-missing (replay what it has, record the rest) or live.
    #[arg(
        long,
        value_name = "MODE",
        requires = "cassette",
        default_value = "replay",
        value_parser = ["live", "record", "replay", "record-missing"]
    )]
    pub(crate) cassette_mode: String,
}

impl CassetteArgs {
    /// `builder` with the selected provider's cassette keys set, when --cassette is given.
    fn apply(&self, builder: ServerConfigBuilder) -> ServerConfigBuilder {
        let Some(path) = &self.cassette else {
            return builder;
        };
        builder
            .selected_provider_override("cassette", toml::Value::from(path.display().to_string()))
            .selected_provider_override(
                "cassette_mode",
                toml::Value::from(self.cassette_mode.as_str()),
            )
    }
}

/// A `-c` that is not `key=value`.
#[derive(Debug, thiserror::Error)]
#[error("-c expects KEY=VALUE (e.g. -c thread_unload_delay_secs=5), got `{0}`")]
pub(crate) struct OverrideSyntaxError(String);

impl GlobalOptions {
    /// These options (given before the subcommand) followed by `later` (given after it): the
    /// overrides and feature switches of both, in order, so a later `-c` of the same key wins;
    /// `later`'s profile if it names one.
    pub(crate) fn then(mut self, later: GlobalOptions) -> GlobalOptions {
        self.config.extend(later.config);
        self.enable.extend(later.enable);
        self.disable.extend(later.disable);
        self.profile = later.profile.or(self.profile);
        self.strict_config |= later.strict_config;
        self.trace_file = later.trace_file.or(self.trace_file);
        self
    }

    /// These options as command-line arguments, for a child `tandem` that must load the same
    /// configuration (the daemon a proxy or `daemon start` launches). The trace file is not
    /// passed on: it belongs to this process.
    pub(crate) fn as_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        for item in &self.config {
            args.extend(["-c".to_owned(), item.clone()]);
        }
        for feature in &self.enable {
            args.extend(["--enable".to_owned(), feature.clone()]);
        }
        for feature in &self.disable {
            args.extend(["--disable".to_owned(), feature.clone()]);
        }
        if let Some(profile) = &self.profile {
            args.extend(["--profile".to_owned(), profile.clone()]);
        }
        if self.strict_config {
            args.push("--strict-config".to_owned());
        }
        args
    }

    /// Warns about feature names Tandem does not know.
    pub(crate) fn warn_unknown_features(&self) {
        for feature in self.enable.iter().chain(&self.disable) {
            if !KNOWN_FEATURES.contains(&feature.as_str()) {
                eprintln!("tandem: warning: unknown feature `{feature}` ignored");
            }
        }
    }

    /// The config builder these options describe (home from `TANDEM_HOME` or the default).
    pub(crate) fn config_builder(&self) -> Result<ServerConfigBuilder, OverrideSyntaxError> {
        let mut builder = ServerConfig::builder();
        for item in &self.config {
            let (key, value) = parse_override(item)?;
            builder = builder.config_override(&key, value);
        }
        if let Some(profile) = &self.profile {
            builder = builder.profile(profile.clone());
        }
        Ok(builder.strict(self.strict_config))
    }

    /// Loads the server options (blocking: it reads config.toml) and prints every
    /// configuration warning on stderr: what `tandem app-server` starts with.
    pub(crate) fn server_options(&self) -> Result<ServerOptions, SettingsError> {
        let (options, provider_warnings) = self.load_options(true)?;
        for warning in provider_warnings {
            print_warning(&warning);
        }
        Ok(options)
    }

    /// Loads the server options, prints the unknown-key warnings on stderr and returns the
    /// others (a selected provider's unset API key or missing model) for the command to
    /// judge. With `create_home` false a missing home is not created (`tandem exec`, which
    /// never makes a thread request).
    pub(crate) fn load_options(
        &self,
        create_home: bool,
    ) -> Result<(ServerOptions, Vec<ConfigWarning>), SettingsError> {
        self.load_options_with_sandbox(create_home, None, &CassetteArgs::default())
    }

    /// [`Self::load_options`], with `default_sandbox` as the sandbox mode of threads when the
    /// configuration sets no `sandbox_mode` (`None`: the server's own default, read-only), and
    /// the selected provider on `cassette` when it names one.
    pub(crate) fn load_options_with_sandbox(
        &self,
        create_home: bool,
        default_sandbox: Option<tandem_protocol::SandboxMode>,
        cassette: &CassetteArgs,
    ) -> Result<(ServerOptions, Vec<ConfigWarning>), SettingsError> {
        let mut builder = cassette.apply(self.config_builder()?.create_home(create_home));
        if let Some(mode) = default_sandbox {
            builder = builder.default_sandbox_mode(mode);
        }
        let (options, warnings) = ServerOptions::load_with_warnings(builder)?;
        // This binary is the server's helper program, so that every command's children die
        // with tandem however it ends (the watchdog; `main` runs the helper jobs).
        let options = match HelperProgram::current_exe() {
            Ok(helper) => options.with_helper_program(helper),
            Err(error) => {
                tracing::warn!(%error, "cannot find tandem's own binary; running without the watchdog");
                options
            }
        };
        let (unknown, others): (Vec<_>, Vec<_>) = warnings
            .into_iter()
            .partition(|warning| matches!(warning, ConfigWarning::UnknownKey { .. }));
        for warning in &unknown {
            print_warning(warning);
        }
        Ok((options, others))
    }
}

fn print_warning(warning: &ConfigWarning) {
    match warning {
        ConfigWarning::UnknownKey { .. } => {
            eprintln!("tandem: warning: {warning} (--strict-config makes this an error)")
        }
        _ => eprintln!("tandem: warning: {warning}"),
    }
}

/// Why the server's settings could not be loaded.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SettingsError {
    /// A malformed `-c`.
    #[error(transparent)]
    Syntax(#[from] OverrideSyntaxError),
    /// The home, config file or an override is invalid.
    #[error(transparent)]
    Options(#[from] ServerOptionsError),
}

/// Checks the syntax of a `-c` while the command line is parsed, so that a malformed one is a
/// usage error (exit 2) like any other, for every command.
fn check_override(item: &str) -> Result<String, OverrideSyntaxError> {
    parse_override(item).map(|_| item.to_owned())
}

/// Splits `key=value` and parses the value as TOML, falling back to a plain string, as
/// clients of other app-servers expect (`-c model=gpt-5` and `-c model="gpt-5"` agree).
fn parse_override(item: &str) -> Result<(String, toml::Value), OverrideSyntaxError> {
    let (key, raw) = item
        .split_once('=')
        .ok_or_else(|| OverrideSyntaxError(item.to_owned()))?;
    let key = key.trim();
    if key.is_empty() {
        return Err(OverrideSyntaxError(item.to_owned()));
    }
    let raw = raw.trim();
    let value = toml::from_str::<toml::Table>(&format!("value = {raw}"))
        .ok()
        .and_then(|mut table| table.remove("value"))
        .unwrap_or_else(|| toml::Value::String(raw.to_owned()));
    Ok((key.to_owned(), value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_toml_or_plain_strings() {
        let (key, value) = parse_override("thread_unload_delay_secs=5").unwrap();
        assert_eq!(
            (key.as_str(), value),
            ("thread_unload_delay_secs", 5.into())
        );
        let (_, value) = parse_override("model=gpt-5").unwrap();
        assert_eq!(value, toml::Value::String("gpt-5".into()));
        let (_, value) = parse_override(r#"model="gpt-5""#).unwrap();
        assert_eq!(value, toml::Value::String("gpt-5".into()));
        let (key, value) =
            parse_override(r#"model_providers.mock.base_url="http://127.0.0.1:9/v1""#).unwrap();
        assert_eq!(key, "model_providers.mock.base_url");
        assert_eq!(value, toml::Value::String("http://127.0.0.1:9/v1".into()));
        let (_, value) = parse_override("flags=[1, 2]").unwrap();
        assert_eq!(value, toml::Value::Array(vec![1.into(), 2.into()]));
        // `=` inside the value belongs to the value.
        let (_, value) = parse_override("note=a=b").unwrap();
        assert_eq!(value, toml::Value::String("a=b".into()));
        assert!(parse_override("no-equals").is_err());
        assert!(parse_override("=5").is_err());
    }
}

//! Tests of configuration loading: the file, profiles, overrides and providers.

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

    let empty_env = resolve_tandem_home(Some(OsString::new()), Some(PathBuf::from("/data/tandem")))
        .expect("default");
    assert_eq!(empty_env, PathBuf::from("/data/tandem"));

    // A relative TANDEM_HOME would name another directory wherever tandem starts (issue 18).
    let relative = resolve_tandem_home(Some(OsString::from("rel/home")), None)
        .expect_err("relative")
        .to_string();
    assert!(
        relative.contains("TANDEM_HOME must be an absolute path, got rel/home"),
        "{relative}"
    );
    assert!(
        relative.contains("TANDEM_HOME=\"$PWD/rel/home\""),
        "{relative}"
    );

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
        response.config["tandem_home"],
        home.path().display().to_string()
    );
    assert_eq!(response.config["thread_unload_delay_secs"], 0);
    assert_eq!(response.config["model"], Value::Null);
    assert_eq!(response.config["model_provider"], Value::Null);
    assert_eq!(response.config["profile"], Value::Null);
    assert!(response.config["model_providers"]["openai"].is_object());
    assert_eq!(response.origins, json!({}));
    assert_eq!(response.layers, None);
}

fn builder(home: &Path) -> ServerConfigBuilder {
    ServerConfig::builder().tandem_home(home)
}

#[test]
fn no_provider_means_scripted_and_builtins_are_known() {
    let home = home_with_config(None);
    let config = load(home.path()).expect("load");
    assert_eq!(config.model_provider, None);
    assert!(config.selected_provider().is_none());
    let openai = &config.model_providers["openai"];
    assert_eq!(openai.base_url, "https://api.openai.com/v1");
    assert_eq!(openai.env_key.as_deref(), Some("OPENAI_API_KEY"));
    assert_eq!(openai.wire_api, WireApi::Chat);
    assert_eq!(openai.stream_max_retries, DEFAULT_STREAM_MAX_RETRIES);
    assert_eq!(openai.stream_idle_timeout, DEFAULT_STREAM_IDLE_TIMEOUT);
    let ollama = &config.model_providers["ollama"];
    assert_eq!(ollama.base_url, "http://localhost:11434/v1");
    assert_eq!(ollama.env_key, None);
}

#[test]
fn a_provider_from_the_file_with_every_key() {
    let home = home_with_config(Some(
        r#"
model = "qwen3"
model_provider = "local"

[model_providers.local]
base_url = "http://127.0.0.1:8080/v1/"
env_key = "LOCAL_KEY"
wire_api = "responses"
stream_max_retries = 2
stream_idle_timeout_ms = 1500
http_headers = { "x-team" = "core" }
"#,
    ));
    let config = load(home.path()).expect("load");
    assert_eq!(config.model.as_deref(), Some("qwen3"));
    let provider = config.selected_provider().expect("selected");
    assert_eq!(provider.id, "local");
    assert_eq!(provider.base_url, "http://127.0.0.1:8080/v1");
    assert_eq!(provider.env_key.as_deref(), Some("LOCAL_KEY"));
    assert_eq!(provider.wire_api, WireApi::Responses);
    assert_eq!(provider.stream_max_retries, 2);
    assert_eq!(provider.stream_idle_timeout, Duration::from_millis(1500));
    assert_eq!(provider.http_headers["x-team"], "core");
}

#[test]
fn overrides_address_nested_keys_and_later_ones_win() {
    let home = home_with_config(Some("model = \"from-file\"\n"));
    let config = builder(home.path())
        .config_override("model_provider", "mock".into())
        .config_override(
            "model_providers.mock.base_url",
            "http://127.0.0.1:1/v1".into(),
        )
        .config_override("model", "first".into())
        .config_override("model", "second".into())
        .config_override("thread_unload_delay_secs", 1.into())
        .load()
        .expect("load");
    assert_eq!(config.model.as_deref(), Some("second"));
    assert_eq!(config.thread_unload_delay, Duration::from_secs(1));
    let provider = config.selected_provider().expect("mock");
    assert_eq!(provider.base_url, "http://127.0.0.1:1/v1");
    assert_eq!(provider.env_key, None);
    assert_eq!(provider.stream_max_retries, DEFAULT_STREAM_MAX_RETRIES);
}

#[test]
fn an_override_replaces_one_key_of_a_file_provider_and_keeps_the_rest() {
    let home = home_with_config(Some(
        "[model_providers.local]\nbase_url = \"http://127.0.0.1:1/v1\"\nstream_max_retries = 1\n",
    ));
    let config = builder(home.path())
        .config_override(
            "model_providers.local.base_url",
            "http://127.0.0.1:2/v1".into(),
        )
        .config_override(
            "model_providers.openai.base_url",
            "http://proxy.test/v1".into(),
        )
        .load()
        .expect("load");
    let local = &config.model_providers["local"];
    assert_eq!(local.base_url, "http://127.0.0.1:2/v1");
    assert_eq!(local.stream_max_retries, 1);
    let openai = &config.model_providers["openai"];
    assert_eq!(openai.base_url, "http://proxy.test/v1");
    assert_eq!(openai.env_key.as_deref(), Some("OPENAI_API_KEY"));
}

#[test]
fn an_invalid_override_names_the_key_and_the_override() {
    let home = home_with_config(None);
    let cases: Vec<(&str, toml::Value, &str)> = vec![
        ("thread_unload_delay_secs", (-1).into(), "negative"),
        ("thread_unload_delay_secs", "soon".into(), "whole number"),
        ("model_providers.mock.base_url", "ftp://x".into(), "scheme"),
        (
            "model_providers.mock.base_url",
            "not a url".into(),
            "not a URL",
        ),
        (
            "model_providers.mock.stream_max_retries",
            (-2).into(),
            "0 to 100",
        ),
        (
            "model_providers.mock.stream_idle_timeout_ms",
            0.into(),
            "positive",
        ),
        ("model_providers.mock.wire_api", "grpc".into(), "responses"),
        ("model", 3.into(), "model name"),
    ];
    for (key, value, hint) in cases {
        let error = builder(home.path())
            .config_override(key, value.clone())
            .load()
            .expect_err(key);
        let message = error.to_string();
        assert!(
            matches!(error, ConfigError::InvalidValue { .. }),
            "{error:?}"
        );
        assert!(message.contains(key), "{key}: {message}");
        assert!(message.contains("-c override"), "{key}: {message}");
        assert!(message.contains(hint), "{key}: {message}");
    }
}

#[test]
fn selecting_an_unknown_provider_lists_the_known_ones() {
    let home = home_with_config(None);
    let error = builder(home.path())
        .config_override("model_provider", "nowhere".into())
        .load()
        .expect_err("unknown provider");
    let message = error.to_string();
    assert!(message.contains("model_provider"), "{message}");
    assert!(message.contains("-c override"), "{message}");
    assert!(message.contains("[model_providers.nowhere]"), "{message}");
    assert!(message.contains("ollama, openai"), "{message}");
}

#[test]
fn a_provider_without_base_url_is_an_error_naming_the_key() {
    let home = home_with_config(Some("[model_providers.half]\nenv_key = \"K\"\n"));
    let message = load(home.path()).expect_err("no base_url").to_string();
    assert!(
        message.contains("model_providers.half.base_url"),
        "{message}"
    );
    assert!(message.contains(CONFIG_FILE_NAME), "{message}");
}

#[test]
fn a_file_provider_completed_by_an_override_loads() {
    // The file's provider lacks a base_url, which only the merged result must have.
    let home = home_with_config(Some(
        "model_provider = \"half\"\n[model_providers.half]\nenv_key = \"K\"\n",
    ));
    let config = builder(home.path())
        .config_override(
            "model_providers.half.base_url",
            "http://127.0.0.1:3/v1".into(),
        )
        .load()
        .expect("load");
    let provider = config.selected_provider().expect("half");
    assert_eq!(provider.base_url, "http://127.0.0.1:3/v1");
    assert_eq!(provider.env_key.as_deref(), Some("K"));
}

#[test]
fn a_wrongly_typed_file_value_is_an_error_even_when_overridden() {
    let home = home_with_config(Some("model_provider = 7\n"));
    let error = builder(home.path())
        .config_override("model_provider", "openai".into())
        .load()
        .expect_err("the file is wrong");
    let message = error.to_string();
    assert!(message.contains("model_provider"), "{message}");
    assert!(message.contains(CONFIG_FILE_NAME), "{message}");
}

#[test]
fn bad_header_names_and_values_are_rejected() {
    for headers in [
        "{ \"bad header\" = \"x\" }",
        "{ \"x-ok\" = \"line\\nbreak\" }",
        "{ \"x-n\" = 1 }",
    ] {
        let home = home_with_config(Some(&format!(
            "[model_providers.p]\nbase_url = \"http://127.0.0.1:1\"\nhttp_headers = {headers}\n"
        )));
        let message = load(home.path()).expect_err(headers).to_string();
        assert!(
            message.contains("model_providers.p.http_headers"),
            "{message}"
        );
    }
}

const PROFILES: &str = r#"
model = "top"
thread_unload_delay_secs = 30

[profiles.fast]
model = "small"
model_provider = "ollama"

[profiles.broken]
thread_unload_delay_secs = "x"
"#;

#[test]
fn a_profile_overrides_the_top_level_and_overrides_beat_the_profile() {
    let home = home_with_config(Some(PROFILES));
    let plain = load(home.path()).expect("load");
    assert_eq!(plain.model.as_deref(), Some("top"));
    assert_eq!(plain.profile, None);
    assert_eq!(plain.model_provider, None);

    let fast = builder(home.path()).profile("fast").load().expect("fast");
    assert_eq!(fast.model.as_deref(), Some("small"));
    assert_eq!(fast.model_provider.as_deref(), Some("ollama"));
    assert_eq!(fast.thread_unload_delay, Duration::from_secs(30));
    assert_eq!(fast.profile.as_deref(), Some("fast"));

    let overridden = builder(home.path())
        .profile("fast")
        .config_override("model", "big".into())
        .load()
        .expect("overridden");
    assert_eq!(overridden.model.as_deref(), Some("big"));

    // `profile` as a key (here from an override) selects it too.
    let by_key = builder(home.path())
        .config_override("profile", "fast".into())
        .load()
        .expect("by key");
    assert_eq!(by_key.model.as_deref(), Some("small"));
}

#[test]
fn an_unknown_profile_is_a_clear_error() {
    let home = home_with_config(Some(PROFILES));
    let error = builder(home.path())
        .profile("slow")
        .load()
        .expect_err("no such profile");
    assert!(
        matches!(error, ConfigError::UnknownProfile { .. }),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains("[profiles.slow]"), "{message}");
    assert!(message.contains("broken, fast"), "{message}");
}

#[test]
fn a_bad_profile_value_names_the_profile() {
    let home = home_with_config(Some(PROFILES));
    let message = builder(home.path())
        .profile("broken")
        .load()
        .expect_err("bad value")
        .to_string();
    assert!(message.contains("thread_unload_delay_secs"), "{message}");
    assert!(message.contains("profile broken"), "{message}");
}

#[test]
fn config_read_shows_the_provider_but_no_secret() {
    let home = home_with_config(Some(
        "model = \"m\"\nmodel_provider = \"p\"\n[model_providers.p]\nbase_url = \"http://127.0.0.1:9/v1\"\nenv_key = \"P_KEY\"\nhttp_headers = { authorization = \"Bearer s3cret\" }\n",
    ));
    let config = load(home.path()).expect("load");
    let object = config.to_config_object();
    assert_eq!(object["model"], "m");
    assert_eq!(object["model_provider"], "p");
    let provider = &object["model_providers"]["p"];
    assert_eq!(provider["base_url"], "http://127.0.0.1:9/v1");
    assert_eq!(provider["env_key"], "P_KEY");
    assert_eq!(provider["wire_api"], "chat");
    assert_eq!(provider["stream_max_retries"], 5);
    assert_eq!(provider["stream_idle_timeout_ms"], 300_000);
    assert_eq!(provider["http_headers"]["authorization"], "<redacted>");
    assert!(!object.to_string().contains("s3cret"));
}

#[test]
fn the_process_output_bound_defaults_to_64_mib_and_is_set_by_file_or_override() {
    let home = home_with_config(None);
    let config = load(home.path()).expect("load");
    assert_eq!(config.process_output_max_bytes, 64 * 1024 * 1024);
    assert_eq!(
        config.to_config_object()["process_output_max_bytes"],
        64 * 1024 * 1024
    );

    let home = home_with_config(Some("process_output_max_bytes = 4096\n"));
    assert_eq!(
        load(home.path()).expect("load").process_output_max_bytes,
        4096
    );
    let config = builder(home.path())
        .config_override("process_output_max_bytes", 0.into())
        .load()
        .expect("load");
    assert_eq!(config.process_output_max_bytes, 0);

    for (value, hint) in [
        (toml::Value::from(-1), "negative"),
        (toml::Value::from("8M"), "whole number of bytes"),
    ] {
        let error = builder(home.path())
            .config_override("process_output_max_bytes", value)
            .load()
            .expect_err("invalid bound");
        let text = error.to_string();
        assert!(text.contains("process_output_max_bytes"), "{text}");
        assert!(text.contains(hint), "{text}");
    }
}

#[test]
fn the_search_and_shell_command_switches_are_on_by_default_and_validated() {
    let home = home_with_config(None);
    let config = load(home.path()).expect("load");
    assert!(config.file_search_api && config.shell_command_api);
    assert_eq!(config.to_config_object()["file_search_api"], true);
    assert_eq!(config.to_config_object()["shell_command_api"], true);

    let home = home_with_config(Some("file_search_api = false\nshell_command_api = false\n"));
    let config = load(home.path()).expect("load");
    assert!(!config.file_search_api && !config.shell_command_api);

    for key in ["file_search_api", "shell_command_api"] {
        let error = builder(home.path())
            .config_override(key, toml::Value::from(0))
            .load()
            .expect_err("invalid value");
        let text = error.to_string();
        assert!(
            text.contains(key) && text.contains("expected true") && text.contains("-32601"),
            "{text}"
        );
    }
}

#[test]
fn the_fs_api_is_on_by_default_and_its_keys_are_validated() {
    let home = home_with_config(None);
    let config = load(home.path()).expect("load");
    assert!(config.fs_api);
    assert_eq!(config.fs_read_max_bytes, 16 * 1024 * 1024);
    assert_eq!(config.to_config_object()["fs_api"], true);
    assert_eq!(
        config.to_config_object()["fs_read_max_bytes"],
        16 * 1024 * 1024
    );

    let home = home_with_config(Some("fs_api = false\nfs_read_max_bytes = 10\n"));
    let config = load(home.path()).expect("load");
    assert!(!config.fs_api);
    assert_eq!(config.fs_read_max_bytes, 10);

    for (key, value, hint) in [
        ("fs_api", toml::Value::from("no"), "expected true"),
        ("fs_read_max_bytes", toml::Value::from(-1), "negative"),
        (
            "fs_read_max_bytes",
            toml::Value::from("1M"),
            "whole number of bytes",
        ),
    ] {
        let error = builder(home.path())
            .config_override(key, value)
            .load()
            .expect_err("invalid value");
        let text = error.to_string();
        assert!(text.contains(key) && text.contains(hint), "{text}");
    }
}

// ---------------------------------------------------------------------------------------------
// Validation at load (issue 18): unknown keys, strict mode, the selected provider's key and model
// ---------------------------------------------------------------------------------------------

fn unknown_keys(warnings: &[ConfigWarning]) -> Vec<(String, String, Option<String>)> {
    warnings
        .iter()
        .filter_map(|warning| match warning {
            ConfigWarning::UnknownKey {
                key,
                origin,
                suggestion,
            } => Some((key.clone(), origin.clone(), suggestion.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn unknown_keys_of_the_file_and_of_overrides_warn_with_a_suggestion() {
    let home = home_with_config(Some(
        "modle = \"x\"\n[model_providers.local]\nbase_ur = \"http://h/v1\"\nbase_url = \"http://h/v1\"\n\
         [profiles.fast]\nthread_unload_delay = 5\n",
    ));
    let (config, warnings) = ServerConfig::builder()
        .tandem_home(home.path())
        .config_override("model_provder", "openai".into())
        .config_override("model", "m".into())
        .load_with_warnings()
        .expect("unknown keys do not stop loading");
    assert_eq!(config.model.as_deref(), Some("m"));
    assert_eq!(
        config.model_provider, None,
        "the misspelt key selects nothing"
    );
    let file = home.path().join(CONFIG_FILE_NAME).display().to_string();
    assert_eq!(
        unknown_keys(&warnings),
        [
            (
                "model_providers.local.base_ur".to_owned(),
                file.clone(),
                Some("base_url".to_owned())
            ),
            ("modle".to_owned(), file.clone(), Some("model".to_owned())),
            (
                "profiles.fast.thread_unload_delay".to_owned(),
                format!("profile fast of {file}"),
                Some("thread_unload_delay_secs".to_owned())
            ),
            (
                "model_provder".to_owned(),
                "a -c override".to_owned(),
                Some("model_provider".to_owned())
            ),
        ]
    );
    let message = warnings[1].to_string();
    assert!(
        message.contains("unknown config key `modle`") && message.contains("did you mean `model`?"),
        "{message}"
    );
}

#[test]
fn strict_mode_makes_unknown_keys_errors_naming_each() {
    let home = home_with_config(Some("modle = \"x\"\n"));
    let error = ServerConfig::builder()
        .tandem_home(home.path())
        .config_override("model_provder", "openai".into())
        .strict(true)
        .load()
        .expect_err("strict");
    let message = error.to_string();
    assert!(matches!(error, ConfigError::UnknownKeys { ref unknown } if unknown.len() == 2));
    assert!(
        message.contains("`modle`") && message.contains("`model`?"),
        "{message}"
    );
    assert!(
        message.contains("`model_provder` in a -c override"),
        "{message}"
    );
    // A clean configuration loads in strict mode too.
    let clean = home_with_config(Some("model = \"x\"\n"));
    ServerConfig::builder()
        .tandem_home(clean.path())
        .strict(true)
        .load()
        .expect("no unknown key");
}

#[test]
fn a_selected_provider_without_its_key_or_a_model_is_reported_at_load() {
    let home = home_with_config(None);
    let config = ServerConfig::builder()
        .tandem_home(home.path())
        .config_override("model_provider", "openai".into())
        .load()
        .expect("load");
    let unset = validate::provider_warnings(&config, |_| None);
    assert_eq!(
        unset,
        [
            ConfigWarning::MissingApiKey {
                provider: "openai".into(),
                env_key: "OPENAI_API_KEY".into()
            },
            ConfigWarning::MissingModel {
                provider: "openai".into()
            },
        ]
    );
    assert!(
        unset[0].to_string().contains("export OPENAI_API_KEY="),
        "{}",
        unset[0]
    );
    assert!(
        unset[1].to_string().contains("-c model=NAME"),
        "{}",
        unset[1]
    );
    let empty = validate::provider_warnings(&config, |_| Some("".into()));
    assert!(
        matches!(empty[0], ConfigWarning::MissingApiKey { .. }),
        "an empty key is no key"
    );

    let configured = ServerConfig::builder()
        .tandem_home(home.path())
        .config_override("model_provider", "openai".into())
        .config_override("model", "gpt-4.1".into())
        .load()
        .expect("load");
    assert!(validate::provider_warnings(&configured, |_| Some("sk-x".into())).is_empty());
    // Ollama sends no key; the scripted agent needs neither.
    let ollama = ServerConfig::builder()
        .tandem_home(home.path())
        .config_override("model_provider", "ollama".into())
        .config_override("model", "qwen3".into())
        .load()
        .expect("load");
    assert!(validate::provider_warnings(&ollama, |_| None).is_empty());
    let scripted = load(home.path()).expect("load");
    assert!(validate::provider_warnings(&scripted, |_| None).is_empty());
}

#[test]
fn the_handoff_wait_defaults_to_two_seconds_and_takes_zero_to_a_minute() {
    let home = home_with_config(None);
    assert_eq!(
        load(home.path()).expect("load").lease_handoff_wait,
        Duration::from_secs(2)
    );
    let home = home_with_config(Some("[store]\nhandoff_wait_ms = 0\n"));
    assert_eq!(
        load(home.path()).expect("load").lease_handoff_wait,
        Duration::ZERO
    );
    for bad in ["-1", "60001", "\"soon\""] {
        let home = home_with_config(Some(&format!("[store]\nhandoff_wait_ms = {bad}\n")));
        let error = load(home.path()).expect_err(bad).to_string();
        assert!(error.contains("store.handoff_wait_ms"), "{bad}: {error}");
        assert!(error.contains("default 2000"), "{bad}: {error}");
    }
}

//! The sandbox keys of the configuration, named as the reference names them: `sandbox_mode`
//! (`read-only`, `workspace-write`, `danger-full-access`) and the `[sandbox_workspace_write]`
//! table (`writable_roots`, `network_access`, `exclude_tmpdir_env_var`, `exclude_slash_tmp`).
//! The same keys in a thread's `config` overrides set that thread's policy.
//!
//! Values are read as JSON, so that the config file (TOML) and a thread's overrides (JSON)
//! share one parser and one set of error messages.

use serde_json::Value;
use tandem_protocol::{SandboxMode, SandboxPolicy};

/// Config key of the sandbox mode of the agent's commands.
pub const SANDBOX_MODE_KEY: &str = "sandbox_mode";

/// Config key of the options of the `workspace-write` mode.
pub const SANDBOX_WORKSPACE_WRITE_KEY: &str = "sandbox_workspace_write";

/// The keys of the `[sandbox_workspace_write]` table.
pub(crate) const WORKSPACE_WRITE_KEYS: &[&str] = &[
    "writable_roots",
    "network_access",
    "exclude_tmpdir_env_var",
    "exclude_slash_tmp",
];

/// Why a sandbox key holds a value the server cannot use: (key, reason).
pub(crate) type SandboxKeyError = (String, String);

/// The mode a `sandbox_mode` value names.
pub(crate) fn parse_mode(value: &Value) -> Result<SandboxMode, SandboxKeyError> {
    serde_json::from_value(value.clone()).map_err(|_| {
        (
            SANDBOX_MODE_KEY.to_owned(),
            "expected \"read-only\", \"workspace-write\" or \"danger-full-access\"".to_owned(),
        )
    })
}

/// The policy of `mode`, with the options of `workspace_write` (a `[sandbox_workspace_write]`
/// table) applied when the mode is `workspace-write`; they are checked in every mode.
pub(crate) fn policy_of(
    mode: SandboxMode,
    workspace_write: Option<&Value>,
) -> Result<SandboxPolicy, SandboxKeyError> {
    let mut policy = mode.policy();
    let Some(table) = workspace_write else {
        return Ok(policy);
    };
    let invalid = |key: &str, reason: &str| {
        (
            format!("{SANDBOX_WORKSPACE_WRITE_KEY}.{key}"),
            reason.to_owned(),
        )
    };
    let Value::Object(table) = table else {
        return Err((
            SANDBOX_WORKSPACE_WRITE_KEY.to_owned(),
            "expected a table: [sandbox_workspace_write]".to_owned(),
        ));
    };
    let flag = |key: &str| match table.get(key) {
        None => Ok(false),
        Some(Value::Bool(value)) => Ok(*value),
        Some(_) => Err(invalid(key, "expected true or false")),
    };
    let network = flag("network_access")?;
    let exclude_tmpdir = flag("exclude_tmpdir_env_var")?;
    let exclude_tmp = flag("exclude_slash_tmp")?;
    let roots = match table.get("writable_roots") {
        None => Vec::new(),
        Some(Value::Array(roots)) => roots
            .iter()
            .map(|root| match root {
                Value::String(root) if root.starts_with('/') => Ok(root.clone()),
                _ => Err(invalid(
                    "writable_roots",
                    "expected absolute paths, e.g. [\"/home/me/cache\"]",
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(invalid(
                "writable_roots",
                "expected a list of absolute paths",
            ));
        }
    };
    if let SandboxPolicy::WorkspaceWrite {
        writable_roots,
        network_access,
        exclude_tmpdir_env_var,
        exclude_slash_tmp,
    } = &mut policy
    {
        *writable_roots = roots;
        *network_access = network;
        *exclude_tmpdir_env_var = exclude_tmpdir;
        *exclude_slash_tmp = exclude_tmp;
    }
    Ok(policy)
}

/// The policy the sandbox keys of `get` ask for, `None` when `sandbox_mode` is not set.
pub(crate) fn policy_from_keys<'a>(
    get: impl Fn(&str) -> Option<&'a Value>,
) -> Result<Option<SandboxPolicy>, SandboxKeyError> {
    let Some(mode) = get(SANDBOX_MODE_KEY) else {
        return Ok(None);
    };
    policy_of(parse_mode(mode)?, get(SANDBOX_WORKSPACE_WRITE_KEY)).map(Some)
}

/// The config object members that describe `policy` under the config keys.
pub(crate) fn policy_to_keys(policy: &SandboxPolicy) -> (Value, Value) {
    match policy {
        SandboxPolicy::DangerFullAccess | SandboxPolicy::ExternalSandbox { .. } => (
            Value::from(SandboxMode::DangerFullAccess.as_str()),
            Value::Null,
        ),
        SandboxPolicy::ReadOnly { .. } => {
            (Value::from(SandboxMode::ReadOnly.as_str()), Value::Null)
        }
        SandboxPolicy::WorkspaceWrite {
            writable_roots,
            network_access,
            exclude_tmpdir_env_var,
            exclude_slash_tmp,
        } => (
            Value::from(SandboxMode::WorkspaceWrite.as_str()),
            serde_json::json!({
                "writable_roots": writable_roots,
                "network_access": network_access,
                "exclude_tmpdir_env_var": exclude_tmpdir_env_var,
                "exclude_slash_tmp": exclude_slash_tmp,
            }),
        ),
    }
}

/// The key of a thread's `config` under which `thread/start.sandbox` and
/// `turn/start.sandboxPolicy` keep the policy they asked for (the wire object).
pub(crate) const THREAD_POLICY_KEY: &str = "sandbox_policy";

/// The policy of a thread whose `config` overrides are `config`: the one a request set, else
/// the one its `sandbox_mode` keys ask for, else `default`. Overrides that do not parse (they
/// were checked when they were set) count as unset.
pub(crate) fn thread_policy(
    config: &serde_json::Map<String, Value>,
    default: &SandboxPolicy,
) -> SandboxPolicy {
    if let Some(policy) = config
        .get(THREAD_POLICY_KEY)
        .and_then(|value| serde_json::from_value(value.clone()).ok())
    {
        return policy;
    }
    policy_from_keys(|key| config.get(key))
        .ok()
        .flatten()
        .unwrap_or_else(|| default.clone())
}

/// Records `policy` in a thread's `config` overrides; `None` returns the thread to the
/// server's default.
pub(crate) fn set_thread_policy(
    config: &mut serde_json::Map<String, Value>,
    policy: Option<&SandboxPolicy>,
) {
    config.remove(SANDBOX_MODE_KEY);
    config.remove(SANDBOX_WORKSPACE_WRITE_KEY);
    match policy.and_then(|policy| serde_json::to_value(policy).ok()) {
        Some(value) => {
            config.insert(THREAD_POLICY_KEY.to_owned(), value);
        }
        None => {
            config.remove(THREAD_POLICY_KEY);
        }
    }
}

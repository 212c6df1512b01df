//! What the sandbox acceptance tests share (`sandbox.rs`, `sandbox_git.rs`): whether this
//! machine can run them, a directory outside every writable root, and running an agent's
//! `/sh` command in a thread and reading the verdict lines it prints (`NAME: ok` or
//! `NAME: denied (WHY)`).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tandem_server::SandboxSupport;

use super::client::Client;

/// Whether this machine can run the tests; prints why not, and fails instead under
/// `TANDEM_REQUIRE_SANDBOX=1`.
pub(crate) fn sandbox_available(test: &str) -> bool {
    let support = SandboxSupport::probe_now(false, None);
    if support.can_enforce() {
        return true;
    }
    let why = format!(
        "{test}: skipped: this machine cannot enforce the sandbox (kernel {}, Landlock ABI \
         {:?} {}, seccomp {})",
        support.kernel,
        support.landlock_abi,
        support.landlock_unavailable.as_deref().unwrap_or(""),
        support.seccomp
    );
    assert!(
        std::env::var("TANDEM_REQUIRE_SANDBOX").as_deref() != Ok("1"),
        "{why}; TANDEM_REQUIRE_SANDBOX=1 makes this a failure"
    );
    eprintln!("{why}");
    false
}

/// A directory outside every root workspace-write opens: not under `/tmp` or `$TMPDIR`, which
/// it makes writable, wherever the checkout (and so the test's home) lives. `/var/tmp` unless
/// `TANDEM_TEST_OUTSIDE_DIR` names another.
pub(crate) fn outside_dir(test: &str) -> PathBuf {
    let base = std::env::var_os("TANDEM_TEST_OUTSIDE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/tmp"));
    let temp_roots = [
        Some(PathBuf::from("/tmp")),
        std::env::var_os("TMPDIR").map(PathBuf::from),
    ];
    for root in temp_roots.into_iter().flatten() {
        assert!(
            !base.starts_with(&root),
            "{} is under {}, which workspace-write makes writable; set \
             TANDEM_TEST_OUTSIDE_DIR to a directory elsewhere",
            base.display(),
            root.display()
        );
    }
    let dir = base.join(format!("tandem-sandbox-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("outside dir");
    dir
}

/// Starts a thread with `thread_params` (plus cwd and `approvalPolicy: never`); returns its
/// id and the `thread/start` result.
pub(crate) async fn start_thread(
    client: &mut Client,
    id: &str,
    cwd: &Path,
    extra: Value,
) -> (String, Value) {
    let mut params = json!({"cwd": cwd, "approvalPolicy": "never"});
    if let (Value::Object(params), Value::Object(extra)) = (&mut params, extra) {
        params.extend(extra);
    }
    let result = client.ok(id, "thread/start", params).await;
    let thread_id = result["thread"]["id"]
        .as_str()
        .expect("thread id")
        .to_owned();
    (thread_id, result)
}

/// Runs `/sh COMMAND` as a turn (with `turn_extra` in `turn/start`); returns the completed
/// command item.
pub(crate) async fn run(
    client: &mut Client,
    id: &str,
    thread_id: &str,
    command: &str,
    turn_extra: Value,
) -> Value {
    let mut params = json!({
        "threadId": thread_id,
        "input": [{"type": "text", "text": format!("/sh {command}")}],
    });
    if let (Value::Object(params), Value::Object(extra)) = (&mut params, turn_extra) {
        params.extend(extra);
    }
    client.ok(id, "turn/start", params).await;
    let item = client
        .notification("item/completed", |params| {
            params["item"]["type"] == "commandExecution"
        })
        .await;
    client.notification("turn/completed", |_| true).await;
    item["params"]["item"].clone()
}

/// The probe's verdict for `name` in a command's output: `Some(true)` for ok.
pub(crate) fn verdict(item: &Value, name: &str) -> Option<bool> {
    let output = item["aggregatedOutput"].as_str()?;
    output.lines().find_map(|line| {
        let rest = line.strip_prefix(name)?.strip_prefix(": ")?;
        Some(rest == "ok")
    })
}

pub(crate) fn assert_verdicts(item: &Value, expected: &[(&str, bool)], case: &str) {
    for (name, ok) in expected {
        assert_eq!(
            verdict(item, name),
            Some(*ok),
            "{case}: {name} should be {}: {item}",
            if *ok { "ok" } else { "denied" }
        );
    }
}

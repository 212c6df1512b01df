//! The sandbox at the process layer (issue 14): [`ProcessManager::spawn_sandboxed`] restricts
//! a child under a PTY as on pipes, with the `tandem` binary as the helper program that an
//! embedder names. `tandem-sandbox-probe` reports what it could do.
//!
//! Skips with a printed reason where the kernel lacks Landlock or seccomp, unless
//! `TANDEM_REQUIRE_SANDBOX=1`.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use tandem_process::helper::HelperProgram;
use tandem_process::sandbox::SandboxSupport;
use tandem_process::sandbox::Sandboxing;
use tandem_process::{ProcessEventSink, ProcessManager};
use tandem_protocol::{
    ProcessExitedNotification, ProcessOutputDeltaNotification, ProcessSpawnParams, SandboxMode,
};
use tandem_test_support::within;
use tokio::sync::oneshot;

/// Collects a child's output until it exits.
struct Collect {
    output: Mutex<Vec<u8>>,
    exited: Mutex<Option<oneshot::Sender<i32>>>,
}

#[async_trait]
impl ProcessEventSink for Collect {
    async fn output_delta(&self, delta: ProcessOutputDeltaNotification) {
        self.output
            .lock()
            .expect("lock")
            .extend_from_slice(&delta.delta);
    }

    async fn exited(&self, exited: ProcessExitedNotification) {
        if let Some(sender) = self.exited.lock().expect("lock").take() {
            let _ = sender.send(exited.exit_code);
        }
    }
}

#[tokio::test]
async fn a_pty_child_runs_under_the_sandbox() {
    let support = SandboxSupport::probe_now(false, None);
    if !support.can_enforce() {
        assert!(
            std::env::var("TANDEM_REQUIRE_SANDBOX").as_deref() != Ok("1"),
            "no sandbox on this machine ({support:?}) and TANDEM_REQUIRE_SANDBOX=1"
        );
        eprintln!("skipped: this machine cannot enforce the sandbox: {support:?}");
        return;
    }
    let (tandem, probe) = tokio::task::spawn_blocking(|| {
        (
            tandem_test_support::binary::tandem_binary()
                .expect("build tandem")
                .to_path_buf(),
            tandem_test_support::binary::sandbox_probe_binary()
                .expect("build the probe")
                .to_path_buf(),
        )
    })
    .await
    .expect("build task");
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("sandbox-pty-{}", std::process::id()));
    // Outside must not be under /tmp or $TMPDIR, which workspace-write opens (the target dir
    // can be, when the checkout is): /var/tmp unless TANDEM_TEST_OUTSIDE_DIR names another.
    let outside = std::env::var_os("TANDEM_TEST_OUTSIDE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/tmp"))
        .join(format!("tandem-sandbox-pty-{}", std::process::id()));
    let root = base.join("root");
    std::fs::create_dir_all(&root).expect("root");
    std::fs::create_dir_all(&outside).expect("outside");

    let sandbox = Sandboxing::with_support(Some(HelperProgram::new(tandem)), support)
        .resolve(&SandboxMode::WorkspaceWrite.policy(), &root)
        .expect("enforceable here");
    assert!(sandbox.is_some(), "workspace-write restricts");
    let (exited_tx, exited_rx) = oneshot::channel();
    let sink = Arc::new(Collect {
        output: Mutex::new(Vec::new()),
        exited: Mutex::new(Some(exited_tx)),
    });
    let params = ProcessSpawnParams {
        process_handle: "pty".to_owned(),
        command: vec![
            probe.display().to_string(),
            "--inside".to_owned(),
            root.join("in.txt").display().to_string(),
            "--outside".to_owned(),
            outside.join("out.txt").display().to_string(),
        ],
        cwd: Some(root.display().to_string()),
        tty: Some(true),
        ..ProcessSpawnParams::default()
    };
    let manager = ProcessManager::new();
    let spawned = manager
        .spawn_sandboxed(params, sandbox, Arc::clone(&sink) as _)
        .await
        .expect("spawned");
    spawned.start_streaming();
    let code = within(
        std::time::Duration::from_secs(20),
        "the probe exits",
        exited_rx,
    )
    .await
    .expect("exit code");
    let output = String::from_utf8_lossy(&sink.output.lock().expect("lock")).into_owned();
    assert_eq!(code, 0, "{output}");
    assert!(output.contains("inside: ok"), "{output}");
    assert!(output.contains("outside: denied"), "{output}");
    assert!(root.join("in.txt").exists());
    assert!(!outside.join("out.txt").exists());
    // The test process (the "server") is not restricted.
    std::fs::write(outside.join("server.txt"), b"still writable").expect("server writes outside");
    let _ = std::fs::remove_dir_all(&outside);
}

//! The built `tandem` binary for tests that drive it from outside (`tandem app-server` over
//! stdio or a websocket): building it from inside a test run, and a guard that never lets a
//! server outlive the test that started it.
//!
//! Test targets of other packages have no `CARGO_BIN_EXE_tandem`, so the binary is built here
//! with a nested cargo command (cargo releases the build lock before it runs tests). The build
//! happens once per test process; cargo reports where it put the executable, so a custom
//! `CARGO_TARGET_DIR` needs no special handling.
//!
//! The nested command resolves features the way `cargo test --workspace` (the README's and
//! CI's test command) does: the whole workspace, dev-dependencies included. A plain
//! `cargo build -p tandem-cli` resolves them without dev-dependencies (tokio without
//! `test-util`, for one), which gave every crate below the binary another hash and rebuilt
//! the whole stack in the middle of CI's test run, about 80 s of a 2-core machine.

use std::io;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;
use tokio::process::{Child, Command};

/// How long a dropped [`ServerProcess`] waits for a clean exit after SIGTERM before it sends
/// SIGKILL: the server's own shutdown budget (docs/protocol.md section 10) plus a margin.
pub const DROP_GRACE: Duration = Duration::from_secs(6);

/// Why the `tandem` binary could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BinaryError {
    /// cargo itself could not be started.
    #[error("could not run `{cargo}` (set CARGO to the cargo binary): {source}")]
    Spawn {
        /// The cargo command tried.
        cargo: String,
        /// Why it did not start.
        source: io::Error,
    },
    /// The build failed; cargo's diagnostics follow.
    #[error(
        "building `{bin}` of {package} (`cargo test --workspace --no-run --test ...`) failed ({status}); fix the build:\n{stderr}"
    )]
    Failed {
        /// The package built.
        package: &'static str,
        /// The binary target built.
        bin: &'static str,
        /// cargo's exit status.
        status: ExitStatus,
        /// What cargo printed on stderr.
        stderr: String,
    },
    /// The build succeeded but cargo named no executable for the target.
    #[error("cargo built {package} but reported no `{bin}` executable")]
    NoExecutable {
        /// The package built.
        package: &'static str,
        /// The binary target asked for.
        bin: &'static str,
    },
}

/// The workspace this crate belongs to: the directory the nested build runs in.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crates/test-support sits two levels below the workspace root")
        .to_path_buf()
}

/// Builds the `tandem` binary (debug profile) with the nested cargo command described in the
/// module documentation and returns the path of the executable. Blocking; prefer the cached
/// [`tandem_binary`].
pub fn build_tandem_binary() -> Result<PathBuf, BinaryError> {
    build_binary("tandem-cli", "tandem", "generate")
}

/// Builds the binary target `bin` of `package` (debug profile) and returns the path of the
/// executable. Blocking.
///
/// `companion_test` is one integration test of `package`: cargo builds every binary of a
/// package whose integration test it builds, and naming a test target (not `-p package`)
/// keeps the workspace as the package set, so features resolve as in
/// `cargo test --workspace` and the build finds that command's artifacts fresh.
pub fn build_binary(
    package: &'static str,
    bin: &'static str,
    companion_test: &'static str,
) -> Result<PathBuf, BinaryError> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = std::process::Command::new(&cargo)
        .args([
            "test",
            "--workspace",
            "--no-run",
            "--test",
            companion_test,
            "--message-format=json-render-diagnostics",
        ])
        .current_dir(workspace_root())
        .stdin(Stdio::null())
        .output()
        .map_err(|source| BinaryError::Spawn {
            cargo: cargo.clone(),
            source,
        })?;
    if !output.status.success() {
        return Err(BinaryError::Failed {
            package,
            bin,
            status: output.status,
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|message| message["reason"] == "compiler-artifact")
        .filter(|message| message["target"]["name"] == bin)
        .filter(|message| message["target"]["kind"] == serde_json::json!(["bin"]))
        .filter(|message| message["profile"]["test"] == false)
        .find_map(|message| message["executable"].as_str().map(PathBuf::from))
        .ok_or(BinaryError::NoExecutable { package, bin })
}

/// The `tandem-sandbox-probe` binary of this package (see its source), built on the first
/// call of this test process.
pub fn sandbox_probe_binary() -> Result<&'static Path, &'static BinaryError> {
    static BINARY: OnceLock<Result<PathBuf, BinaryError>> = OnceLock::new();
    BINARY
        .get_or_init(|| {
            build_binary(
                "tandem-test-support",
                "tandem-sandbox-probe",
                "client_backends",
            )
        })
        .as_ref()
        .map(PathBuf::as_path)
}

/// The `tandem-mcp-test-server` binary of this package (see its source), built on the first
/// call of this test process.
pub fn mcp_test_server_binary() -> Result<&'static Path, &'static BinaryError> {
    static BINARY: OnceLock<Result<PathBuf, BinaryError>> = OnceLock::new();
    BINARY
        .get_or_init(|| {
            build_binary(
                "tandem-test-support",
                "tandem-mcp-test-server",
                "client_backends",
            )
        })
        .as_ref()
        .map(PathBuf::as_path)
}

/// [`mcp_test_server_binary`]'s path as a string for a config file, built (on the first call)
/// on a blocking thread so that an async test's runtime goes on meanwhile. Panics, naming the
/// build's failure, when it cannot be built: a test has nothing to run without it.
pub async fn mcp_test_server_path() -> String {
    tokio::task::spawn_blocking(|| {
        mcp_test_server_binary()
            .expect("build tandem-mcp-test-server")
            .display()
            .to_string()
    })
    .await
    .expect("the build task ran")
}

/// The `tandem` binary, built on the first call of this test process; later calls (from any
/// thread) wait for that build and share its outcome.
pub fn tandem_binary() -> Result<&'static Path, &'static BinaryError> {
    static BINARY: OnceLock<Result<PathBuf, BinaryError>> = OnceLock::new();
    BINARY
        .get_or_init(build_tandem_binary)
        .as_ref()
        .map(PathBuf::as_path)
}

/// A command for the `tandem` binary with `home` as its `TANDEM_HOME`, default (quiet)
/// logging, and every stdio stream piped. The binary is built first if needed, on a blocking
/// thread so the caller's runtime keeps running.
pub async fn tandem_command(home: &Path) -> Result<Command, &'static BinaryError> {
    let binary = tokio::task::spawn_blocking(tandem_binary)
        .await
        .expect("the build task does not panic")?;
    let mut command = Command::new(binary);
    command
        .env("TANDEM_HOME", home)
        .env_remove("TANDEM_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    Ok(command)
}

/// A running server process that is shut down when the guard is dropped: SIGTERM first, so
/// the server can kill the process groups it started, then SIGKILL after [`DROP_GRACE`].
#[derive(Debug)]
pub struct ServerProcess {
    child: Child,
}

impl ServerProcess {
    /// Starts `command` under the guard.
    pub fn spawn(command: &mut Command) -> io::Result<Self> {
        Ok(Self {
            child: command.spawn()?,
        })
    }

    /// The child, to take its pipes or query it.
    pub fn child_mut(&mut self) -> &mut Child {
        &mut self.child
    }

    /// The server's process id, while it runs.
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// Sends SIGTERM (a clean shutdown request) and waits as [`Self::wait_within`] does.
    pub async fn terminate_within(&mut self, limit: Duration) -> io::Result<ExitStatus> {
        if let Some(pid) = self.id().and_then(|pid| i32::try_from(pid).ok()) {
            kill(Pid::from_raw(pid), Signal::SIGTERM).map_err(io::Error::from)?;
        }
        self.wait_within(limit).await
    }

    /// Waits at most `limit` for the server to exit by itself; past that it is killed and the
    /// result is [`io::ErrorKind::TimedOut`].
    pub async fn wait_within(&mut self, limit: Duration) -> io::Result<ExitStatus> {
        match tokio::time::timeout(limit, self.child.wait()).await {
            Ok(status) => status,
            Err(_) => {
                let _ = self.child.start_kill();
                Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("the server did not exit within {limit:?}; killed"),
                ))
            }
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if !matches!(self.child.try_wait(), Ok(None)) {
            return;
        }
        if let Some(pid) = self.child.id().and_then(|pid| i32::try_from(pid).ok()) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
            // Blocking here is deliberate: a drop cannot await, and a server left running
            // would keep its children (and the test's ports and files) alive.
            let deadline = Instant::now() + DROP_GRACE;
            while Instant::now() < deadline {
                if !matches!(self.child.try_wait(), Ok(None)) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        let _ = self.child.start_kill();
    }
}

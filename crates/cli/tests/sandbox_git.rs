//! Issue 27, point 5, against the real binary: under `workspace-write` the top-level `.git` of
//! every writable root (a directory, or a worktree's `gitdir:` file and the directory it
//! names) and the server's home beneath a root stay read-only, enforced by the kernel, both
//! ways the probe can report: a mount namespace (where user namespaces work) and Landlock per
//! entry (where they are blocked; forced here with `TANDEM_SANDBOX_FORCE_NO_MOUNT_NAMESPACE`).
//! Writes elsewhere in the root, in a nested repository's `.git` and in `/tmp` still work; a
//! symbolic or hard link out of the root, or onto `.git`, still does not; a command running as
//! root cannot take the read-only mount back. Through a turn's command and `command/exec` (pipes
//! and PTY), run by the server as root, and by the helper as an unprivileged user (`setpriv`),
//! which takes the user-namespace path.
//!
//! Skips with a printed reason where the kernel cannot sandbox at all, unless
//! `TANDEM_REQUIRE_SANDBOX=1`.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::client::Client;
use common::sandbox::{assert_verdicts, outside_dir, run, sandbox_available, start_thread};
use common::server::{Launch, fresh_home};
use serde_json::json;
use tandem_protocol::SandboxPolicy;
use tandem_server::sandbox::FORCE_NO_MOUNT_NAMESPACE_ENV;
use tandem_server::{HelperProgram, ReadOnlySubpaths, SandboxSupport, Sandboxing};

/// Clears the read-only flag of a mount with `mount_setattr(2)`, as a command running as root
/// could try (util-linux's `mount` of this distribution still uses `mount(2)`).
const CLEAR_READ_ONLY_PY: &str = r#"
import ctypes, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
attr = struct.pack("QQQQ", 0, 1, 0, 0)  # attr_set, attr_clr = MOUNT_ATTR_RDONLY, ...
libc.syscall(442, -100, sys.argv[1].encode(), 0, ctypes.create_string_buffer(attr), len(attr))
"#;

/// What the tests write to and must find unchanged.
struct Layout {
    /// Holds the script; writable by nobody.
    base: PathBuf,
    /// The thread's cwd: a repository (`.git/hooks`, `.git/config`) with `src/`, a nested
    /// repository `sub/.git` and `escape`, a link to `outside`.
    root: PathBuf,
    /// A second writable root: a worktree whose `.git` file names `.gitdata` in it.
    worktree: PathBuf,
    /// The server's home, beneath `root`.
    home: PathBuf,
    /// Outside every root, with the file `target`.
    outside: PathBuf,
    /// A prefix for files in `/tmp`.
    tmp: String,
}

const GIT_CONFIG: &str = "[core]\n\tbare = false\n";
const GIT_POINTER: &str = "gitdir: .gitdata\n";
const TARGET: &str = "target\n";

impl Layout {
    fn new(test: &str, base: PathBuf) -> Self {
        let root = base.join("root");
        let worktree = base.join("worktree");
        for dir in [
            root.join(".git/hooks"),
            root.join("src"),
            root.join("sub/.git/hooks"),
            worktree.join(".gitdata/hooks"),
            worktree.join("src"),
        ] {
            std::fs::create_dir_all(dir).expect("mkdir");
        }
        std::fs::write(root.join(".git/config"), GIT_CONFIG).expect(".git/config");
        std::fs::write(worktree.join(".git"), GIT_POINTER).expect("gitdir pointer");
        let outside = outside_dir(test);
        std::fs::write(outside.join("target"), TARGET).expect("target");
        std::os::unix::fs::symlink(&outside, root.join("escape")).expect("symlink");
        let home = root.join(".tandem-home");
        std::fs::create_dir_all(&home).expect("home");
        std::fs::write(
            base.join("clear-read-only.py"),
            CLEAR_READ_ONLY_PY.trim_start(),
        )
        .expect("script");
        let tmp = format!("/tmp/tandem-sandbox-{test}-{}", std::process::id());
        Self {
            base,
            root,
            worktree,
            home,
            outside,
            tmp,
        }
    }

    /// Each attempt: its name, the shell command, and whether it must work under a mount
    /// namespace and under Landlock per entry. `tag` keeps the names of new files apart.
    fn cases(&self, tag: &str) -> Vec<(&'static str, String, bool, bool)> {
        let (root, worktree, home, outside) = (
            self.root.display(),
            self.worktree.display(),
            self.home.display(),
            self.outside.display(),
        );
        let mut cases = vec![
            (
                "hook",
                format!("echo 'echo pwned' > {root}/.git/hooks/pre-commit"),
                false,
                false,
            ),
            (
                "git-config",
                format!("echo '\tfsmonitor = evil' >> {root}/.git/config"),
                false,
                false,
            ),
            (
                "git-file",
                format!("echo 'gitdir: {outside}' > {worktree}/.git"),
                false,
                false,
            ),
            (
                "git-file-dir",
                format!("echo 'echo pwned' > {worktree}/.gitdata/hooks/pre-commit"),
                false,
                false,
            ),
            (
                "home",
                format!("echo model_provider=evil >> {home}/config.toml"),
                false,
                false,
            ),
            (
                "git-hard-link",
                format!(
                    "ln {root}/.git/config {root}/src/config-{tag} && \
                     echo evil >> {root}/src/config-{tag}"
                ),
                false,
                false,
            ),
            (
                "git-symlink",
                format!(
                    "ln -s {root}/.git/hooks {root}/src/hooks-{tag} && \
                     echo pwned > {root}/src/hooks-{tag}/post-commit"
                ),
                false,
                false,
            ),
            (
                "symlink-out",
                format!("echo evil > {root}/escape/file-{tag}"),
                false,
                false,
            ),
            (
                "hard-link-out",
                format!(
                    "ln {outside}/target {root}/src/target-{tag} && \
                     echo evil >> {root}/src/target-{tag}"
                ),
                false,
                false,
            ),
            (
                "inside",
                format!("echo ok > {root}/src/file-{tag} && mkdir {root}/src/dir-{tag}"),
                true,
                true,
            ),
            (
                "nested-git",
                format!("echo ok > {root}/sub/.git/hooks/pre-commit-{tag}"),
                true,
                true,
            ),
            (
                "worktree",
                format!("echo ok > {worktree}/src/file-{tag}"),
                true,
                true,
            ),
            ("tmp", format!("echo ok > {}-{tag}", self.tmp), true, true),
            // The cost of Landlock alone: no new entry at the top of a root holding `.git`.
            (
                "new-top-level",
                format!("echo ok > {root}/top-{tag}"),
                true,
                false,
            ),
        ];
        if Command::new("python3")
            .arg("-c")
            .arg("pass")
            .status()
            .is_ok()
        {
            cases.push((
                "remount",
                format!(
                    "python3 {}/clear-read-only.py {root}/.git; \
                     echo pwned > {root}/.git/hooks/post-merge",
                    self.base.display()
                ),
                false,
                false,
            ));
        } else {
            eprintln!("no python3: the mount_setattr attempt is left out");
        }
        // Last: were it allowed, the attempts on `.git` after it would fail for want of it.
        cases.push((
            "git-rename",
            format!("mv {root}/.git {root}/git-{tag}"),
            false,
            false,
        ));
        cases
    }

    /// A script that makes every attempt of `cases` and prints its verdict.
    fn script(&self, tag: &str) -> PathBuf {
        let mut script = String::from(
            "t() { if out=$( (eval \"$2\") 2>&1 ); then echo \"$1: ok\"; \
             else echo \"$1: denied ($out)\" | head -n 1; fi; }\n",
        );
        for (name, command, _, _) in self.cases(tag) {
            assert!(!command.contains('"'), "{command}");
            script.push_str(&format!("t {name} \"{command}\"\n"));
        }
        script.push_str("echo \"uid: $(id -u)\"\n");
        let path = self.base.join(format!("attempts-{tag}.sh"));
        std::fs::write(&path, script).expect("script");
        path
    }

    /// Asserts every verdict of a run of [`Self::script`] under `by`, and that nothing that
    /// must stay read-only changed.
    fn assert_run(&self, output: &str, tag: &str, by: ReadOnlySubpaths) {
        let item = json!({ "aggregatedOutput": output });
        let expected: Vec<(&str, bool)> = self
            .cases(tag)
            .into_iter()
            .map(|(name, _, mount, per_entry)| match by {
                ReadOnlySubpaths::MountNamespace => (name, mount),
                ReadOnlySubpaths::LandlockPerEntry => (name, per_entry),
            })
            .collect();
        assert_verdicts(&item, &expected, &format!("{tag} ({by:?})"));
        assert!(
            !output.contains("Landlock alone"),
            "the helper fell back: {output}"
        );
        for hook in ["pre-commit", "post-commit", "post-merge"] {
            assert!(!self.root.join(".git/hooks").join(hook).exists(), "{hook}");
        }
        assert!(!self.worktree.join(".gitdata/hooks/pre-commit").exists());
        let read = |path: PathBuf| std::fs::read_to_string(path).expect("read");
        assert_eq!(read(self.root.join(".git/config")), GIT_CONFIG);
        assert_eq!(read(self.worktree.join(".git")), GIT_POINTER);
        assert_eq!(read(self.outside.join("target")), TARGET);
        assert!(!self.home.join("config.toml").exists());
        assert!(!self.outside.join(format!("file-{tag}")).exists());
    }

    /// The workspace-write policy of the attempts: the worktree as a second root.
    fn policy(&self) -> SandboxPolicy {
        SandboxPolicy::WorkspaceWrite {
            writable_roots: vec![self.worktree.display().to_string()],
            network_access: false,
            exclude_tmpdir_env_var: false,
            exclude_slash_tmp: false,
        }
    }
}

impl Drop for Layout {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.outside);
        let _ = std::fs::remove_dir_all(&self.base);
        for tag in ["mount", "entry", "nobody-mount", "nobody-entry"] {
            let _ = std::fs::remove_file(format!("{}-{tag}", self.tmp));
        }
    }
}

fn tandem_helper() -> HelperProgram {
    HelperProgram::new(env!("CARGO_BIN_EXE_tandem"))
}

#[tokio::test]
async fn the_top_level_git_and_the_home_stay_read_only_both_ways() {
    if !sandbox_available("the_top_level_git_and_the_home_stay_read_only_both_ways") {
        return;
    }
    let found = tokio::task::spawn_blocking(|| {
        SandboxSupport::probe_now(false, Some(&tandem_helper())).read_only_subpaths
    })
    .await
    .expect("probe");
    eprintln!("this machine keeps .git read-only by {found:?}");
    let layout = Layout::new("git", fresh_home("sandbox_git"));
    for (tag, forced, by) in [
        ("mount", false, found.expect("Landlock is available")),
        ("entry", true, ReadOnlySubpaths::LandlockPerEntry),
    ] {
        let mut launch = Launch::new("sandbox_git")
            .args(["app-server"])
            .home(layout.home.clone());
        if forced {
            launch = launch.env(FORCE_NO_MOUNT_NAMESPACE_ENV, "1");
        }
        let (_server, client) = launch.stdio();
        let mut client = Client::Stdio(client);
        client.initialize(true).await;

        let config = client.ok("c", "config/read", json!({})).await;
        let support = &config["config"]["sandbox_support"];
        assert_eq!(support["readOnlySubpaths"], json!(by), "{support}");
        if forced {
            let why = support["mountNamespaceUnavailable"].as_str().unwrap_or("");
            assert!(why.contains(FORCE_NO_MOUNT_NAMESPACE_ENV), "{support}");
        }

        let (thread, _) = start_thread(
            &mut client,
            "t",
            &layout.root,
            json!({"sandbox": "workspace-write"}),
        )
        .await;
        let policy = serde_json::to_value(layout.policy()).expect("policy");
        let command = format!("sh {}", layout.script(tag).display());
        let item = run(
            &mut client,
            "r",
            &thread,
            &command,
            json!({ "sandboxPolicy": policy }),
        )
        .await;
        assert_eq!(item["status"], "completed", "{item}");

        // The other way a client runs a sandboxed command, on pipes and under a PTY.
        let hook = format!(
            "echo pwned > {}/.git/hooks/pre-commit",
            layout.root.display()
        );
        for (id, tty) in [("e1", false), ("e2", true)] {
            let mut params = json!({"command": ["sh", "-c", hook], "cwd": layout.root,
                                    "sandboxPolicy": policy});
            if tty {
                params["tty"] = json!(true);
                params["processId"] = json!(format!("pty-{tag}"));
            }
            let result = client.ok(id, "command/exec", params).await;
            assert_ne!(
                result["exitCode"],
                json!(0),
                "command/exec, tty {tty}: {result}"
            );
        }
        layout.assert_run(item["aggregatedOutput"].as_str().unwrap_or(""), tag, by);
    }
}

/// The helper run as `nobody` by a root test: a mount namespace then needs a user namespace
/// that maps the uid and gid to themselves, and the command runs as `nobody` still.
#[test]
fn for_an_unprivileged_user_the_helper_keeps_git_read_only_and_the_uid() {
    const TEST: &str = "for_an_unprivileged_user_the_helper_keeps_git_read_only_and_the_uid";
    if !sandbox_available(TEST) {
        return;
    }
    if !nix::unistd::geteuid().is_root() {
        eprintln!("{TEST}: skipped: not root, so the other tests ran unprivileged already");
        return;
    }
    if Command::new("setpriv").arg("--version").output().is_err() {
        eprintln!("{TEST}: skipped: no setpriv to run the helper as nobody");
        return;
    }
    // Outside /tmp, which the policy opens, and owned by nobody, who must write in the roots.
    let layout = Layout::new("git_nobody", outside_dir("git_nobody_base"));
    // `outside` too, so that the kernel's protected_hardlinks does not refuse the hard link
    // out of the root before the sandbox is asked.
    let owned = Command::new("chown")
        .args(["-R", "65534:65534"])
        .args([&layout.base, &layout.outside])
        .status()
        .expect("chown");
    assert!(owned.success());
    let helper = tandem_helper();
    let base_support = SandboxSupport::probe_now(false, None);
    for (tag, by, found) in [
        ("nobody-mount", ReadOnlySubpaths::MountNamespace, Ok(())),
        (
            "nobody-entry",
            ReadOnlySubpaths::LandlockPerEntry,
            Err("forced".to_owned()),
        ),
    ] {
        let support = base_support.clone().with_mount_namespace(found);
        let resolved = Sandboxing::with_support(Some(helper.clone()), support)
            .protecting_home(&layout.home)
            .resolve(&layout.policy(), &layout.root)
            .expect("enforceable")
            .expect("restricting");
        assert_eq!(resolved.spec().read_only_by, Some(by));
        let output = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(helper.path())
            .args(["__tandem-helper", "sandbox"])
            .arg(serde_json::to_string(resolved.spec()).expect("spec"))
            .arg("sh")
            .arg(layout.script(tag))
            .output()
            .expect("run the helper as nobody");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stdout}{stderr}");
        assert!(stdout.contains("uid: 65534"), "{stdout}");
        layout.assert_run(&format!("{stdout}{stderr}"), tag, by);
    }
}

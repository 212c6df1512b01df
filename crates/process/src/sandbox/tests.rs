//! Policy resolution: what each policy makes writable, and the refusals.

use std::path::Path;

use tandem_protocol::{NetworkAccess, SandboxMode, SandboxPolicy};

use super::*;

fn supported() -> SandboxSupport {
    SandboxSupport {
        kernel: "6.18.0-test".to_owned(),
        landlock_abi: Some(6),
        landlock_unavailable: None,
        seccomp: true,
        read_only_subpaths: Some(ReadOnlySubpaths::MountNamespace),
        mount_namespace_unavailable: None,
    }
}

fn helper() -> Option<HelperProgram> {
    Some(HelperProgram::new("/usr/bin/tandem"))
}

#[test]
fn read_only_writes_nowhere_and_workspace_write_opens_cwd_tmp_and_roots() {
    let sandboxing = Sandboxing::with_support(helper(), supported());
    let cwd = std::env::temp_dir();
    let read_only = sandboxing
        .resolve(&SandboxPolicy::default(), &cwd)
        .expect("enforceable")
        .expect("restricting");
    assert_eq!(read_only.spec().writable, Vec::<PathBuf>::new());
    assert!(!read_only.spec().network);
    assert_eq!(read_only.partial_enforcement(), None);

    let root = std::env::current_dir().expect("cwd");
    let policy = SandboxPolicy::WorkspaceWrite {
        writable_roots: vec![root.display().to_string(), "/does/not/exist".to_owned()],
        network_access: true,
        exclude_tmpdir_env_var: true,
        exclude_slash_tmp: false,
    };
    let workspace = sandboxing
        .resolve(&policy, Path::new("/"))
        .expect("enforceable")
        .expect("restricting");
    let writable = &workspace.spec().writable;
    assert!(writable.contains(&PathBuf::from("/")), "{writable:?}");
    assert!(writable.contains(&root), "{writable:?}");
    assert!(writable.contains(&PathBuf::from("/tmp")), "{writable:?}");
    assert!(!writable.contains(&PathBuf::from("/does/not/exist")));
    assert!(workspace.spec().network);

    let excluded = SandboxPolicy::WorkspaceWrite {
        writable_roots: Vec::new(),
        network_access: false,
        exclude_tmpdir_env_var: true,
        exclude_slash_tmp: true,
    };
    let spec = sandboxing
        .resolve(&excluded, Path::new("/"))
        .expect("enforceable")
        .expect("restricting");
    assert_eq!(spec.spec().writable, vec![PathBuf::from("/")]);
}

#[test]
fn unrestricted_policies_need_no_sandbox_even_without_support() {
    let none = SandboxSupport::probe_now(true, None);
    let sandboxing = Sandboxing::with_support(None, none);
    for policy in [
        SandboxPolicy::DangerFullAccess,
        SandboxPolicy::ExternalSandbox {
            network_access: NetworkAccess::Enabled,
        },
    ] {
        assert_eq!(sandboxing.resolve(&policy, Path::new("/")), Ok(None));
    }
}

#[test]
fn refusals_name_the_kernel_the_abi_and_what_to_change() {
    let mut missing = supported();
    missing.landlock_abi = None;
    missing.landlock_unavailable = Some("forced off".to_owned());
    let error = Sandboxing::with_support(helper(), missing)
        .resolve(&SandboxMode::WorkspaceWrite.policy(), Path::new("/"))
        .expect_err("refused");
    let message = error.to_string();
    for needed in [
        "6.18.0-test",
        "Landlock ABI none: forced off",
        "danger-full-access",
        "lsm=",
    ] {
        assert!(message.contains(needed), "{needed:?} missing: {message}");
    }

    let error = Sandboxing::with_support(None, supported())
        .resolve(&SandboxPolicy::default(), Path::new("/"))
        .expect_err("refused");
    assert!(matches!(error, SandboxError::NoHelper { .. }), "{error}");
    assert!(error.to_string().contains("with_helper_program"), "{error}");

    let relative = SandboxPolicy::WorkspaceWrite {
        writable_roots: vec!["cache".to_owned()],
        network_access: false,
        exclude_tmpdir_env_var: false,
        exclude_slash_tmp: false,
    };
    assert_eq!(
        Sandboxing::with_support(helper(), supported()).resolve(&relative, Path::new("/")),
        Err(SandboxError::RelativeRoot("cache".to_owned()))
    );
}

#[test]
fn an_old_landlock_abi_is_reported_as_partial() {
    let mut old = supported();
    old.landlock_abi = Some(2);
    let resolved = Sandboxing::with_support(helper(), old)
        .resolve(&SandboxPolicy::default(), Path::new("/"))
        .expect("enforceable")
        .expect("restricting");
    let why = resolved.partial_enforcement().expect("partial");
    assert!(why.contains("ABI 2") && why.contains("truncat"), "{why}");
}

#[test]
fn the_forced_probe_reports_no_landlock_and_why() {
    let forced = SandboxSupport::probe_now(true, None);
    assert_eq!(forced.landlock_abi, None);
    assert!(
        forced
            .landlock_unavailable
            .as_deref()
            .is_some_and(|why| why.contains(FORCE_NO_LANDLOCK_ENV)),
        "{forced:?}"
    );
    assert!(!forced.can_enforce());
}

#[test]
fn workspace_write_keeps_the_top_level_git_and_the_home_read_only() {
    let base = tempfile::tempdir().expect("temp dir");
    let root = std::fs::canonicalize(base.path()).expect("canonical");
    let home = root.join("tandem-home");
    std::fs::create_dir_all(root.join(".git/hooks")).expect(".git");
    std::fs::create_dir_all(&home).expect("home");
    let policy = SandboxPolicy::WorkspaceWrite {
        writable_roots: Vec::new(),
        network_access: false,
        exclude_tmpdir_env_var: true,
        exclude_slash_tmp: true,
    };
    for way in [
        ReadOnlySubpaths::MountNamespace,
        ReadOnlySubpaths::LandlockPerEntry,
    ] {
        assert_eq!(serde_json::to_value(way).ok(), Some(way.as_str().into()));
    }
    let mut per_entry = supported().with_mount_namespace(Err("blocked".to_owned()));
    assert_eq!(
        per_entry.read_only_subpaths,
        Some(ReadOnlySubpaths::LandlockPerEntry)
    );
    for (support, by) in [
        (supported(), ReadOnlySubpaths::MountNamespace),
        (per_entry.clone(), ReadOnlySubpaths::LandlockPerEntry),
    ] {
        let resolved = Sandboxing::with_support(helper(), support)
            .protecting_home(&home)
            .resolve(&policy, &root)
            .expect("enforceable")
            .expect("restricting");
        let spec = resolved.spec();
        assert_eq!(spec.writable, vec![root.clone()]);
        assert_eq!(spec.read_only, vec![root.join(".git"), home.clone()]);
        assert_eq!(spec.read_only_by, Some(by));
    }

    // Nothing to keep: no way named, and read-only policies open nothing to begin with.
    let plain = root.join("plain");
    std::fs::create_dir_all(&plain).expect("plain");
    let sandboxing = Sandboxing::with_support(helper(), supported()).protecting_home(&home);
    let resolved = sandboxing
        .resolve(&policy, &plain)
        .expect("enforceable")
        .expect("restricting");
    assert_eq!(resolved.spec().read_only, Vec::<PathBuf>::new());
    assert_eq!(resolved.spec().read_only_by, None);
    let read_only = sandboxing
        .resolve(&SandboxPolicy::default(), &root)
        .expect("enforceable")
        .expect("restricting");
    assert_eq!(read_only.spec().read_only, Vec::<PathBuf>::new());

    // Without Landlock neither way holds: refused, saying so.
    per_entry.landlock_abi = None;
    per_entry.landlock_unavailable = Some("forced off".to_owned());
    let per_entry = per_entry.with_mount_namespace(Ok(()));
    assert_eq!(per_entry.read_only_subpaths, None);
    let error = Sandboxing::with_support(helper(), per_entry)
        .resolve(&policy, &root)
        .expect_err("refused");
    assert!(
        error.to_string().contains("read-only .git by none"),
        "{error}"
    );
}

#[test]
fn writable_roots_hold_whatever_the_machine_enforces_and_keep_git_read_only() {
    let base = tempfile::tempdir().expect("temp dir");
    let root = std::fs::canonicalize(base.path()).expect("canonical");
    let home = root.join("tandem-home");
    std::fs::create_dir_all(root.join(".git/hooks")).expect(".git");
    std::fs::create_dir_all(&home).expect("home");
    let policy = SandboxPolicy::WorkspaceWrite {
        writable_roots: Vec::new(),
        network_access: false,
        exclude_tmpdir_env_var: true,
        exclude_slash_tmp: true,
    };
    // No Landlock and no helper: a command would be refused, the roots are still known.
    let unsupported = SandboxSupport::probe_kernel(true);
    let sandboxing = Sandboxing::with_support(None, unsupported).protecting_home(&home);
    assert!(sandboxing.resolve(&policy, &root).is_err());
    let roots = sandboxing
        .writable_roots(&policy, &root)
        .expect("resolvable")
        .expect("restricting");
    assert_eq!(roots.writable, vec![root.clone()]);
    assert!(roots.allows(&root.join("src/main.rs")));
    assert!(!roots.allows(&root.join(".git/hooks/pre-commit")));
    assert!(!roots.allows(&root.join(".git")));
    assert!(!roots.allows(&home.join("config.toml")));
    assert!(!roots.allows(&root.with_file_name("elsewhere")));

    let read_only = SandboxPolicy::ReadOnly {
        network_access: false,
    };
    let roots = sandboxing
        .writable_roots(&read_only, &root)
        .expect("resolvable")
        .expect("restricting");
    assert!(roots.writable.is_empty() && !roots.allows(&root.join("a.txt")));
    assert_eq!(
        sandboxing
            .writable_roots(&SandboxPolicy::DangerFullAccess, &root)
            .expect("resolvable"),
        None
    );
}

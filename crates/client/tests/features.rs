//! The `in-process-server` feature: without it, `tandem-client` does not depend on
//! `tandem-server` (and so not on SQLite, reqwest or rustls), which a wire-only user should not
//! compile. `.ci/run` also builds the crate that way (`cargo check --no-default-features`); this
//! test checks the dependency graph itself, which `cargo tree` reads without building anything.

use std::process::Command;

/// The normal (non-dev) dependency graph of `tandem-client` with `features`.
fn dependency_tree(features: &[&str]) -> String {
    let output = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "--locked",
            "-p",
            "tandem-client",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .args(features)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        output.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8 tree")
}

fn depends_on(tree: &str, krate: &str) -> bool {
    tree.lines()
        .any(|line| line.split_whitespace().next() == Some(krate))
}

#[test]
fn without_the_in_process_server_feature_the_server_is_not_a_dependency() {
    let wire_only = dependency_tree(&["--no-default-features"]);
    assert!(depends_on(&wire_only, "tandem-host"), "{wire_only}");
    for heavy in ["tandem-server", "rusqlite", "reqwest", "rustls"] {
        assert!(
            !depends_on(&wire_only, heavy),
            "{heavy} in the wire-only tree:\n{wire_only}"
        );
    }
    let default = dependency_tree(&[]);
    assert!(depends_on(&default, "tandem-server"), "{default}");
}

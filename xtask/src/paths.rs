//! Where the workspace and its target directory are, for the commands that build, install or
//! write beside the sources (compat's venv, mcp-check's servers, the benches' helpers).

use std::path::{Path, PathBuf};

/// The workspace's root: the directory above xtask's own.
pub(crate) fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace root")
        .to_path_buf()
}

/// Cargo's target directory: `CARGO_TARGET_DIR`, or `target/` under the workspace.
pub(crate) fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

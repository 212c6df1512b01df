//! The crates' layers (issue 28; docs/architecture.md, "Crates and layers"), checked on what
//! `cargo tree` resolves for each crate's normal dependencies: a crate pulls in no Tandem crate
//! beside or above it, and the heavy drivers stay in the crate that needs them (no database
//! driver or HTTP client under the process machinery, no HTTP client or PTY crate under the
//! store, no runtime or driver at all under the pure patch crate).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// Each crate of the server's stack, with the Tandem crates it may depend on (directly or
/// not) and third-party packages that must not be in its tree.
const LAYERS: &[Layer] = &[
    // A leaf: the patch format is pure string work, with no I/O and no protocol.
    Layer {
        krate: "tandem-patch",
        may_use: &[],
        never: &[
            "tokio",
            "tokio-postgres",
            "rusqlite",
            "reqwest",
            "pty-process",
        ],
    },
    Layer {
        krate: "tandem-protocol",
        may_use: &[],
        never: &["tokio-postgres", "rusqlite", "reqwest", "pty-process"],
    },
    Layer {
        krate: "tandem-store",
        may_use: &["tandem-protocol"],
        never: &["reqwest", "pty-process"],
    },
    Layer {
        krate: "tandem-process",
        may_use: &["tandem-protocol"],
        never: &["rusqlite", "tokio-postgres", "reqwest"],
    },
    Layer {
        krate: "tandem-agent",
        may_use: &["tandem-protocol"],
        never: &["rusqlite", "tokio-postgres", "pty-process"],
    },
    // The MCP client: its stdio servers run under tandem-process's watchdog; it talks HTTP to
    // remote servers, and knows no store.
    Layer {
        krate: "tandem-mcp",
        may_use: &["tandem-protocol", "tandem-process"],
        never: &["rusqlite", "tokio-postgres"],
    },
    Layer {
        krate: "tandem-host",
        may_use: &["tandem-protocol"],
        never: &["rusqlite", "tokio-postgres", "reqwest", "pty-process"],
    },
    Layer {
        krate: "tandem-server",
        may_use: &[
            "tandem-protocol",
            "tandem-host",
            "tandem-store",
            "tandem-process",
            "tandem-agent",
            "tandem-patch",
            "tandem-mcp",
        ],
        never: &[],
    },
];

struct Layer {
    krate: &'static str,
    may_use: &'static [&'static str],
    never: &'static [&'static str],
}

/// The names of every package in `krate`'s tree of normal dependencies, itself excluded.
fn normal_dependencies(krate: &str) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask/ sits in the workspace root");
    let output = Command::new(&cargo)
        .args([
            "tree", "--locked", "-p", krate, "-e", "normal", "--prefix", "none", "--format", "{p}",
        ])
        .current_dir(root)
        .output()
        .unwrap_or_else(|error| panic!("run `{cargo} tree` (set CARGO): {error}"));
    assert!(
        output.status.success(),
        "`cargo tree -p {krate}` failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != krate)
        .map(str::to_owned)
        .collect()
}

#[test]
fn each_crate_pulls_in_only_the_layers_below_it_and_its_own_drivers() {
    let mut wrong = Vec::new();
    for layer in LAYERS {
        let tree = normal_dependencies(layer.krate);
        for name in &tree {
            if name.starts_with("tandem-") && !layer.may_use.contains(&name.as_str()) {
                wrong.push(format!(
                    "{} depends on {name}, which is not below it",
                    layer.krate
                ));
            }
        }
        for name in layer.never {
            if tree.contains(*name) {
                wrong.push(format!("{} pulls in {name}", layer.krate));
            }
        }
    }
    assert!(wrong.is_empty(), "layering broken:\n{}", wrong.join("\n"));
}

#[test]
fn the_checked_trees_are_real() {
    // Guards the test above against a `cargo tree` output it cannot read: the server's tree
    // holds every crate it wires and the drivers they bring.
    let tree = normal_dependencies("tandem-server");
    for name in [
        "tandem-store",
        "tandem-process",
        "tandem-agent",
        "rusqlite",
        "tokio-postgres",
        "reqwest",
        "pty-process",
    ] {
        assert!(tree.contains(name), "{name} missing from {tree:?}");
    }
}

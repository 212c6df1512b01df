//! `cargo bench -p tandem-server --bench fuzzy_search`: `fuzzyFileSearch` over a 100,000-file
//! tree against the baseline of the `ignore` crate's walk alone over the same tree, in the same
//! run (issue 29, point 6).
//!
//! The tree is generated in a temporary directory: 100 packages of 10 modules of 100 files
//! (`pkgNN/modM/file_N_M_K.rs`), a `.gitignore` at the top, 101,101 entries walked. The
//! baseline walks it with the very walker the search builds (same rules, same threads) and
//! does nothing per entry; the search rows run the server's own search (`engine::search`: the
//! walk, a `nucleo-matcher` score per entry, the best 50 kept) for a query that few paths
//! match and for one that every file matches (the most scoring and heap work). Each row is the
//! median of `RUNS` runs after one warm-up walk, so the page cache is warm for all of them.
//!
//! Without `--bench` (as under `cargo test --benches`) the tree has 2,000 files and each row
//! runs once.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ignore::WalkState;
use tandem_server::server::fuzzy_search::{MAX_RESULTS, engine};
use tokio_util::sync::CancellationToken;

/// Runs per row; the median is reported.
const RUNS: usize = 7;

fn main() {
    let quick = !std::env::args().any(|arg| arg == "--bench");
    let (packages, runs) = if quick { (2, 1) } else { (100, RUNS) };
    let dir = tempfile::tempdir().expect("temp dir");
    let started = Instant::now();
    let files = generate(dir.path(), packages);
    println!(
        "tree: {files} files under {} ({:.1} s to write)",
        dir.path().display(),
        started.elapsed().as_secs_f64()
    );
    let threads = engine::default_threads();
    let root = dir.path().display().to_string();
    walk_only(dir.path(), threads);

    let walk = median(runs, || {
        let started = Instant::now();
        let entries = walk_only(dir.path(), threads);
        (started.elapsed(), entries)
    });
    println!(
        "walk alone (ignore, {threads} threads):      {:>8.1} ms  ({} entries)",
        ms(walk.0),
        walk.1
    );
    for query in ["file_9_9_9", "f"] {
        let search = median(runs, || {
            let limits = engine::SearchLimits {
                max_results: MAX_RESULTS,
                // The server's 5 s bound would cut a slow run short; the figure is the whole walk.
                deadline: Instant::now() + Duration::from_secs(600),
                threads,
            };
            let started = Instant::now();
            let outcome = engine::search(
                query,
                std::slice::from_ref(&root),
                limits,
                &CancellationToken::new(),
            );
            assert!(!outcome.timed_out && !outcome.files.is_empty());
            (started.elapsed(), outcome.visited)
        });
        println!(
            "fuzzyFileSearch {query:<12} ({threads} threads): {:>8.1} ms  ({} entries, {:.2}x the walk)",
            ms(search.0),
            search.1,
            search.0.as_secs_f64() / walk.0.as_secs_f64()
        );
    }
}

/// Writes the tree; returns how many files it holds.
fn generate(root: &Path, packages: usize) -> usize {
    std::fs::write(root.join(".gitignore"), "target/\n*.tmp\n").expect("gitignore");
    let mut files = 0;
    for package in 0..packages {
        for module in 0..10 {
            let dir = root.join(format!("pkg{package:02}/mod{module}"));
            std::fs::create_dir_all(&dir).expect("dir");
            for file in 0..100 {
                std::fs::write(dir.join(format!("file_{package}_{module}_{file}.rs")), b"")
                    .expect("file");
                files += 1;
            }
        }
    }
    files
}

/// The baseline: the search's own walker, visiting every entry and doing nothing with it.
fn walk_only(root: &Path, threads: usize) -> u64 {
    let entries = AtomicU64::new(0);
    engine::walker(root, threads).run(|| {
        Box::new(|entry| {
            if entry.is_ok() {
                entries.fetch_add(1, Ordering::Relaxed);
            }
            WalkState::Continue
        })
    });
    entries.into_inner()
}

/// The run with the median time of `runs` runs of `run`.
fn median(runs: usize, mut run: impl FnMut() -> (Duration, u64)) -> (Duration, u64) {
    let mut all: Vec<(Duration, u64)> = (0..runs).map(|_| run()).collect();
    all.sort();
    all[all.len() / 2]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

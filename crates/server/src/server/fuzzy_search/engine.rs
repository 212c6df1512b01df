//! The search itself, synchronous and free of the protocol's plumbing so that the benchmark
//! runs exactly what the server runs: a parallel walk of each root with the `ignore` crate
//! (`.gitignore`, `.ignore` and git's excludes respected, hidden files included, links
//! followed, `.git` skipped), every path scored with `nucleo-matcher` as it is met, and only
//! the best [`SearchLimits::max_results`] kept per walker thread, merged at the end.
//!
//! Scores: `nucleo-matcher`'s score of the query against the path relative to its root (its
//! path settings: `/` is a word boundary), plus the reference app-server's preferences, seen
//! on its answers: a file whose own name matches the query gets `1 << 16` more, and an entry
//! whose name is the query exactly `2 << 16` more, so that `main` finds `src/main` before
//! `main_dir/x`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkBuilder, WalkState};
use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32Str};
use tandem_protocol::{FuzzyFileSearchMatchType, FuzzyFileSearchResult};
use tokio_util::sync::CancellationToken;

/// The score added when a file's own name matches the query.
const NAME_MATCH_BONUS: u32 = 1 << 16;

/// The score added when an entry's name is the query.
const EXACT_NAME_BONUS: u32 = 2 << 16;

/// How many entries a walker thread visits between two looks at the clock and the
/// cancellation: cheap enough to be unnoticed, often enough to stop within a millisecond.
const CHECK_EVERY: u32 = 256;

/// The bounds of one search.
#[derive(Debug, Clone, Copy)]
pub struct SearchLimits {
    /// The most results returned (the best ones).
    pub max_results: usize,
    /// When the walk stops: what was found by then is returned.
    pub deadline: Instant,
    /// Walker threads per root.
    pub threads: usize,
}

/// What a search found.
#[derive(Debug, Default)]
pub struct SearchOutcome {
    /// The best results, best first (score descending, then path).
    pub files: Vec<FuzzyFileSearchResult>,
    /// Entries scored (files and directories).
    pub visited: u64,
    /// Whether the deadline stopped the walk before it was complete.
    pub timed_out: bool,
    /// Whether the search was cancelled (its results are then empty).
    pub cancelled: bool,
}

/// One candidate kept while walking: ordered so that the worst is the greatest (lowest score,
/// then greatest path), for the bounded heap.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Candidate {
    score: Reverse<u32>,
    path: String,
    directory: bool,
}

/// Searches `roots` for `query`. Roots that are not absolute or do not exist give nothing; an
/// empty query gives nothing.
pub fn search(
    query: &str,
    roots: &[String],
    limits: SearchLimits,
    cancel: &CancellationToken,
) -> SearchOutcome {
    let mut outcome = SearchOutcome::default();
    if query.is_empty() || limits.max_results == 0 {
        return outcome;
    }
    let pattern = Pattern::parse(query, CaseMatching::Smart, Normalization::Smart);
    let mut found: Vec<(usize, Candidate)> = Vec::new();
    let timed_out = AtomicBool::new(false);
    for (index, root) in roots.iter().enumerate() {
        let path = Path::new(root);
        if !path.is_absolute() || !path.is_dir() {
            continue;
        }
        let shared = Mutex::new(Merged::default());
        let mut builder = VisitorBuilder {
            root: path,
            query,
            pattern: &pattern,
            limits,
            cancel,
            timed_out: &timed_out,
            merged: &shared,
        };
        walker(path, limits.threads).visit(&mut builder);
        let merged = shared.into_inner().unwrap_or_else(PoisonError::into_inner);
        outcome.visited += merged.visited;
        found.extend(merged.best.into_iter().map(|candidate| (index, candidate)));
        if cancel.is_cancelled() || timed_out.load(Ordering::Relaxed) {
            break;
        }
    }
    if cancel.is_cancelled() {
        outcome.cancelled = true;
        return outcome;
    }
    outcome.timed_out = timed_out.load(Ordering::Relaxed);
    found.sort_by(|(_, a), (_, b)| a.cmp(b));
    found.truncate(limits.max_results);
    let mut matcher = Matcher::new(Config::DEFAULT.match_paths());
    let mut buffer = Vec::new();
    outcome.files = found
        .into_iter()
        .map(|(index, candidate)| {
            let mut indices = Vec::new();
            pattern.indices(
                Utf32Str::new(&candidate.path, &mut buffer),
                &mut matcher,
                &mut indices,
            );
            indices.sort_unstable();
            indices.dedup();
            FuzzyFileSearchResult {
                root: roots[index].clone(),
                file_name: file_name(&candidate.path).to_owned(),
                path: candidate.path,
                match_type: if candidate.directory {
                    FuzzyFileSearchMatchType::Directory
                } else {
                    FuzzyFileSearchMatchType::File
                },
                score: candidate.score.0,
                indices: Some(indices),
            }
        })
        .collect();
    outcome
}

/// The walker of one root, as the search walks it (also the benchmark's baseline).
pub fn walker(root: &Path, threads: usize) -> ignore::WalkParallel {
    WalkBuilder::new(root)
        .hidden(false)
        .follow_links(true)
        // `.gitignore` applies outside a git repository too, as in the reference.
        .require_git(false)
        .threads(threads)
        // Git's own store is never a file one looks for, and it is large.
        .filter_entry(|entry| entry.file_name() != ".git")
        .build_parallel()
}

/// The last component of a relative path.
fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// What the walker threads of one root hand back.
#[derive(Default)]
struct Merged {
    best: Vec<Candidate>,
    visited: u64,
}

struct VisitorBuilder<'s> {
    root: &'s Path,
    query: &'s str,
    pattern: &'s Pattern,
    limits: SearchLimits,
    cancel: &'s CancellationToken,
    timed_out: &'s AtomicBool,
    merged: &'s Mutex<Merged>,
}

impl<'s> ParallelVisitorBuilder<'s> for VisitorBuilder<'s> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        Box::new(Visitor {
            root: self.root,
            query: self.query,
            pattern: self.pattern,
            limits: self.limits,
            cancel: self.cancel,
            timed_out: self.timed_out,
            merged: self.merged,
            matcher: Matcher::new(Config::DEFAULT.match_paths()),
            buffer: Vec::new(),
            best: BinaryHeap::new(),
            visited: 0,
            until_check: CHECK_EVERY,
        })
    }
}

/// One walker thread: scores what it visits and keeps its best; hands them over when the walk
/// drops it.
struct Visitor<'s> {
    root: &'s Path,
    query: &'s str,
    pattern: &'s Pattern,
    limits: SearchLimits,
    cancel: &'s CancellationToken,
    timed_out: &'s AtomicBool,
    merged: &'s Mutex<Merged>,
    matcher: Matcher,
    buffer: Vec<char>,
    /// A max-heap of the worst first: the kept candidates.
    best: BinaryHeap<Candidate>,
    visited: u64,
    until_check: u32,
}

impl Visitor<'_> {
    /// Scores `entry` and keeps it if it is among the best so far. The path is copied only
    /// then: when every path matches (a one-letter query), most are dropped uncopied.
    fn consider(&mut self, entry: &DirEntry) {
        if entry.depth() == 0 {
            return;
        }
        let Some(relative) = entry
            .path()
            .strip_prefix(self.root)
            .ok()
            .and_then(Path::to_str)
        else {
            return;
        };
        let Some(mut score) = self
            .pattern
            .score(Utf32Str::new(relative, &mut self.buffer), &mut self.matcher)
        else {
            return;
        };
        let directory = entry.file_type().is_some_and(|kind| kind.is_dir());
        let name = file_name(relative);
        if !directory
            && self
                .pattern
                .score(Utf32Str::new(name, &mut self.buffer), &mut self.matcher)
                .is_some()
        {
            score += NAME_MATCH_BONUS;
        }
        if name == self.query {
            score += EXACT_NAME_BONUS;
        }
        if self.best.len() >= self.limits.max_results
            && self.best.peek().is_some_and(|worst| {
                (Reverse(score), relative) >= (worst.score, worst.path.as_str())
            })
        {
            return;
        }
        self.best.push(Candidate {
            score: Reverse(score),
            path: relative.to_owned(),
            directory,
        });
        if self.best.len() > self.limits.max_results {
            self.best.pop();
        }
    }
}

impl ParallelVisitor for Visitor<'_> {
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        // Unreadable directories and link loops are skipped, as a file picker should.
        if let Ok(entry) = entry {
            self.visited += 1;
            self.consider(&entry);
        }
        self.until_check -= 1;
        if self.until_check == 0 {
            self.until_check = CHECK_EVERY;
            if self.cancel.is_cancelled() {
                return WalkState::Quit;
            }
            if Instant::now() >= self.limits.deadline {
                self.timed_out.store(true, Ordering::Relaxed);
                return WalkState::Quit;
            }
        }
        WalkState::Continue
    }
}

impl Drop for Visitor<'_> {
    fn drop(&mut self) {
        let mut merged = self.merged.lock().unwrap_or_else(PoisonError::into_inner);
        merged.visited += self.visited;
        merged
            .best
            .extend(std::mem::take(&mut self.best).into_vec());
    }
}

/// The walker threads a search uses: the machine's parallelism, at most 8 (past that the disk,
/// not the matcher, is the limit).
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn limits() -> SearchLimits {
        SearchLimits {
            max_results: 50,
            deadline: Instant::now() + Duration::from_secs(60),
            threads: 2,
        }
    }

    fn tree(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        for file in files {
            let path = dir.path().join(file);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("dirs");
            std::fs::write(path, b"").expect("file");
        }
        dir
    }

    fn root(dir: &tempfile::TempDir) -> Vec<String> {
        vec![dir.path().display().to_string()]
    }

    #[test]
    fn an_exact_name_beats_a_name_match_which_beats_a_path_match() {
        let dir = tree(&["x/main", "main.rs", "maindir/sub/z.txt", "other.txt"]);
        let found = search("main", &root(&dir), limits(), &CancellationToken::new());
        let paths: Vec<&str> = found.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            vec![
                "x/main",
                "main.rs",
                "maindir",
                "maindir/sub",
                "maindir/sub/z.txt"
            ]
        );
        assert_eq!(found.files[0].file_name, "main");
        assert_eq!(found.files[0].indices, Some(vec![2, 3, 4, 5]));
        assert_eq!(
            found.files[2].match_type,
            FuzzyFileSearchMatchType::Directory
        );
        assert!(found.files[0].score > found.files[1].score);
        assert!(found.files[1].score > found.files[2].score);
    }

    #[test]
    fn results_are_bounded_and_the_best_are_kept_over_threads() {
        let names: Vec<String> = (0..300)
            .map(|n| format!("d{}/f{n:03}.txt", n % 7))
            .collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let dir = tree(&names);
        let limits = SearchLimits {
            max_results: 10,
            ..limits()
        };
        let found = search("f", &root(&dir), limits, &CancellationToken::new());
        assert_eq!(found.files.len(), 10);
        // Equal scores: the smallest paths, in order.
        let mut expected: Vec<&str> = names.clone();
        expected.sort_unstable();
        let paths: Vec<&str> = found.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, expected[..10].to_vec());
        // 300 files, 7 directories and the root.
        assert_eq!(found.visited, 308);
    }

    #[test]
    fn gitignored_and_git_entries_are_skipped_hidden_ones_kept() {
        let dir = tree(&[
            ".gitignore",
            "build/out_main.o",
            ".git/main_head",
            ".hidden_main",
            "src/main.rs",
        ]);
        std::fs::write(dir.path().join(".gitignore"), "build/\n").expect("gitignore");
        let found = search("main", &root(&dir), limits(), &CancellationToken::new());
        let paths: Vec<&str> = found.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, vec!["src/main.rs", ".hidden_main"]);
    }

    #[test]
    fn bad_roots_and_empty_queries_find_nothing() {
        let dir = tree(&["a.txt"]);
        let token = CancellationToken::new();
        assert!(search("", &root(&dir), limits(), &token).files.is_empty());
        let roots = vec!["relative".to_owned(), "/no/such/dir".to_owned()];
        assert!(search("a", &roots, limits(), &token).files.is_empty());
        let both = vec!["/no/such/dir".to_owned(), root(&dir).remove(0)];
        let found = search("a", &both, limits(), &token);
        assert_eq!(found.files.len(), 1);
        assert_eq!(found.files[0].root, both[1]);
    }

    #[test]
    fn a_passed_deadline_or_a_cancellation_stops_the_walk() {
        let names: Vec<String> = (0..2000).map(|n| format!("d{}/f{n}.txt", n % 50)).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let dir = tree(&names);
        let late = SearchLimits {
            deadline: Instant::now(),
            ..limits()
        };
        let found = search("f", &root(&dir), late, &CancellationToken::new());
        assert!(found.timed_out);
        assert!(found.visited < 2050, "visited {}", found.visited);
        let cancelled = CancellationToken::new();
        cancelled.cancel();
        let found = search("f", &root(&dir), limits(), &cancelled);
        assert!(found.cancelled);
        assert!(found.files.is_empty());
    }
}

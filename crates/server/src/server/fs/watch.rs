//! `fs/watch`, `fs/unwatch` and `fs/changed`: one connection's watches over one OS watcher
//! (the `notify` crate), routed by path, debounced and bounded per watch.
//!
//! A watch of `P` asks the OS about `P`'s parent directory (so that `P` appearing, changing or
//! disappearing is seen, whether `P` exists yet or not) and, when `P` is a directory, about `P`
//! itself, not recursively: a change is `P` itself or one of its direct children, as the
//! reference reports. When the parent does not exist either, the watch anchors at the nearest
//! ancestor that does and moves down as the missing directories appear (and up when they go),
//! so that `P` created later under new directories is still reported, as by the reference. The
//! OS watches are counted, so that two watches of one directory share it and `fs/unwatch` of
//! one keeps the other's.
//!
//! Events go into the watch's pending set (at most [`MAX_CHANGED_PATHS`] paths; more turns it
//! into "overflowed"); the watch's task sends them [`DEBOUNCE`] after the first one as one
//! `fs/changed`, and waits until that notification was handed to the client before it sends
//! the next, gathering what changes meanwhile. A burst of changes is so at most one
//! notification per [`DEBOUNCE`] per watch with at most [`MAX_CHANGED_PATHS`] paths, and an
//! overflowed batch is the watched path alone ("re-read it").

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher as _};
use tandem_host::{ConnectionId, OutgoingMessageSender};
use tandem_protocol::{AbsolutePathBuf, FsChangedNotification, FsWatchParams, ServerNotification};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::FsError;

/// How long a watch gathers changes after the first one before it sends them: the reference's
/// cadence (about 200 ms), so that a burst becomes a few notifications.
pub const DEBOUNCE: Duration = Duration::from_millis(200);

/// Most paths one `fs/changed` names; a batch with more is sent as the watched path alone.
pub const MAX_CHANGED_PATHS: usize = 256;

/// The changes a watch has not sent yet.
#[derive(Default)]
struct Pending {
    paths: BTreeSet<PathBuf>,
    overflowed: bool,
}

/// One watch: where it looks and what it has gathered.
struct Watch {
    path: AbsolutePathBuf,
    /// The directories asked of the OS for this watch (each counted in `Os::counts`).
    os_paths: Mutex<Vec<PathBuf>>,
    pending: Mutex<Pending>,
    /// Set when an ancestor of the path appeared or went: the anchor must move.
    reanchor: std::sync::atomic::AtomicBool,
    wake: Notify,
}

impl Watch {
    /// Whether `changed` concerns this watch: the path itself or a direct child.
    fn concerns(&self, changed: &Path) -> bool {
        changed == self.path.as_path() || changed.parent() == Some(self.path.as_path())
    }

    /// Whether `changed` is a directory above the watched path (its appearance or removal
    /// moves the anchor).
    fn is_ancestor(&self, changed: &Path) -> bool {
        changed != self.path.as_path() && self.path.as_path().starts_with(changed)
    }

    fn ask_reanchor(&self) {
        self.reanchor
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self.wake.notify_one();
    }

    fn record(&self, changed: &Path) {
        let mut pending = lock(&self.pending);
        if pending.overflowed || pending.paths.contains(changed) {
            return;
        }
        if pending.paths.len() >= MAX_CHANGED_PATHS {
            pending.overflowed = true;
            pending.paths.clear();
        } else {
            pending.paths.insert(changed.to_owned());
        }
        drop(pending);
        self.wake.notify_one();
    }

    /// The pending batch as `changedPaths`, emptied; `None` when nothing is pending.
    fn take(&self) -> Option<Vec<AbsolutePathBuf>> {
        let pending = std::mem::take(&mut *lock(&self.pending));
        if pending.overflowed {
            return Some(vec![self.path.clone()]);
        }
        let paths: Vec<AbsolutePathBuf> = pending
            .paths
            .into_iter()
            .filter_map(AbsolutePathBuf::new)
            .collect();
        (!paths.is_empty()).then_some(paths)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The watches of one connection, routed by the OS watcher's callback.
type Routes = Arc<Mutex<HashMap<String, Arc<Watch>>>>;

/// The OS side: the watcher (created on the first watch) and how many watches use each path.
#[derive(Default)]
struct Os {
    watcher: Option<RecommendedWatcher>,
    counts: HashMap<PathBuf, usize>,
}

/// One connection's watches; dropping it (or [`Watches::close`]) ends them all.
pub(super) struct Watches {
    connection: ConnectionId,
    outgoing: OutgoingMessageSender,
    routes: Routes,
    os: Arc<Mutex<Os>>,
    tasks: Mutex<HashMap<String, JoinHandle<()>>>,
}

impl Watches {
    /// No watches yet, for `connection`.
    pub(super) fn new(connection: ConnectionId, outgoing: OutgoingMessageSender) -> Self {
        Self {
            connection,
            outgoing,
            routes: Arc::default(),
            os: Arc::default(),
            tasks: Mutex::default(),
        }
    }

    /// `fs/watch`: starts a watch; the answer is the normalized path.
    pub(super) fn watch(&self, params: FsWatchParams) -> Result<AbsolutePathBuf, FsError> {
        let FsWatchParams { path, watch_id } = params;
        if lock(&self.routes).contains_key(&watch_id) {
            return Err(FsError::WatchIdExists { watch_id });
        }
        let mut os_paths = Vec::new();
        if let Some(anchor) = anchor_of(path.as_path()) {
            os_paths.push(anchor);
        }
        if path.as_path().is_dir() {
            os_paths.push(path.as_path().to_owned());
        }
        {
            let mut os = lock(&self.os);
            let mut added: Vec<PathBuf> = Vec::new();
            for os_path in &os_paths {
                if let Err(error) = os.add(os_path, &self.routes) {
                    for undo in &added {
                        os.remove(undo);
                    }
                    return Err(error);
                }
                added.push(os_path.clone());
            }
        }
        let watch = Arc::new(Watch {
            path: path.clone(),
            os_paths: Mutex::new(os_paths),
            pending: Mutex::default(),
            reanchor: std::sync::atomic::AtomicBool::new(false),
            wake: Notify::new(),
        });
        let task = tokio::spawn(send_changes(
            Arc::clone(&watch),
            watch_id.clone(),
            self.connection,
            self.outgoing.clone(),
            Arc::clone(&self.os),
            Arc::clone(&self.routes),
        ));
        lock(&self.routes).insert(watch_id.clone(), watch);
        lock(&self.tasks).insert(watch_id.clone(), task);
        tracing::debug!(connection = %self.connection, %watch_id, %path, "fs/watch");
        Ok(path)
    }

    /// `fs/unwatch`: ends a watch (an unknown id is not an error). Once this returned, the
    /// watch sends nothing more.
    pub(super) async fn unwatch(&self, watch_id: &str) {
        let watch = lock(&self.routes).remove(watch_id);
        let task = lock(&self.tasks).remove(watch_id);
        if let Some(task) = task {
            task.abort();
            // A notification being handed over when the abort came is sent before this
            // returns, so before the `fs/unwatch` answer.
            let _ = task.await;
        }
        if let Some(watch) = watch {
            release_os_paths(&watch, &self.os);
            tracing::debug!(connection = %self.connection, %watch_id, "fs/unwatch");
        }
    }

    /// Ends every watch: the connection closed.
    pub(super) fn close(&self) {
        lock(&self.routes).clear();
        for (_, task) in lock(&self.tasks).drain() {
            task.abort();
        }
        let mut os = lock(&self.os);
        os.watcher = None;
        os.counts.clear();
    }

    /// How many watches are running (tests and debugging).
    pub(super) fn len(&self) -> usize {
        lock(&self.routes).len()
    }
}

impl Drop for Watches {
    fn drop(&mut self) {
        self.close();
    }
}

impl Os {
    /// Counts one more use of `path`, asking the OS on the first.
    fn add(&mut self, path: &Path, routes: &Routes) -> Result<(), FsError> {
        if let Some(count) = self.counts.get_mut(path) {
            *count += 1;
            return Ok(());
        }
        if self.watcher.is_none() {
            self.watcher = Some(new_watcher(Arc::downgrade(routes))?);
        }
        if let Some(watcher) = self.watcher.as_mut() {
            watcher
                .watch(path, RecursiveMode::NonRecursive)
                .map_err(|source| FsError::Watch { source })?;
        }
        self.counts.insert(path.to_owned(), 1);
        Ok(())
    }

    /// Counts one use of `path` less, releasing the OS watch after the last.
    fn remove(&mut self, path: &Path) {
        let Some(count) = self.counts.get_mut(path) else {
            return;
        };
        *count -= 1;
        if *count == 0 {
            self.counts.remove(path);
            if let Some(watcher) = self.watcher.as_mut() {
                // Fails when the directory is gone, and with it the OS watch: nothing to do.
                let _ = watcher.unwatch(path);
            }
        }
    }

    /// Asks the OS again about a counted directory that was removed and created again (its
    /// old OS watch ended with it).
    fn renew(&mut self, path: &Path) {
        if let Some(watcher) = self.watcher.as_mut() {
            let _ = watcher.watch(path, RecursiveMode::NonRecursive);
        }
    }
}

/// The directory a watch of `path` asks the OS about: its parent, or the nearest ancestor
/// that exists when the parent does not.
fn anchor_of(path: &Path) -> Option<PathBuf> {
    path.ancestors()
        .skip(1)
        .find(|dir| dir.is_dir())
        .map(Path::to_owned)
}

/// Gives back the directories `watch` asked of the OS. Lock order: a watch's `os_paths` may
/// be held while `os` is taken ([`move_anchor`], [`follow_directory`]), never the reverse, so
/// the paths are taken out before `os` is locked: a watch task aborted by [`Watches::close`]
/// may still be in [`move_anchor`] while `fs/unwatch` ends the same watch.
fn release_os_paths(watch: &Watch, os: &Mutex<Os>) {
    let os_paths = std::mem::take(&mut *lock(&watch.os_paths));
    let mut os = lock(os);
    for os_path in &os_paths {
        os.remove(os_path);
    }
}

/// Moves the watch's anchor to where [`anchor_of`] says it is now; whether it moved.
fn move_anchor(watch: &Watch, os: &Mutex<Os>, routes: &Routes) -> bool {
    let path = watch.path.as_path();
    let Some(anchor) = anchor_of(path) else {
        return false;
    };
    let mut os_paths = lock(&watch.os_paths);
    let old = os_paths
        .iter()
        .position(|os_path| os_path != path)
        .map(|index| os_paths.remove(index));
    if old.as_ref() == Some(&anchor) {
        os_paths.push(anchor);
        return false;
    }
    let mut os = lock(os);
    if let Some(old) = &old {
        os.remove(old);
    }
    if os.add(&anchor, routes).is_ok() {
        os_paths.push(anchor);
    }
    true
}

/// The watched path is a directory now (created, or removed and created again): its children
/// are watched from now on.
fn follow_directory(watch: &Watch, os: &Mutex<Os>, routes: &Routes) {
    let path = watch.path.as_path();
    let mut os_paths = lock(&watch.os_paths);
    let mut os = lock(os);
    if os_paths.iter().any(|os_path| os_path == path) {
        os.renew(path);
    } else if os.add(path, routes).is_ok() {
        os_paths.push(path.to_owned());
    }
}

/// The OS watcher, whose callback (on the watcher's own thread) records each changed path in
/// the watches it concerns. It holds the routes weakly: the routes do not own the watcher, but
/// the watcher must not keep a closed connection's watches alive.
fn new_watcher(
    routes: std::sync::Weak<Mutex<HashMap<String, Arc<Watch>>>>,
) -> Result<RecommendedWatcher, FsError> {
    notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let event = match event {
            Ok(event) => event,
            Err(error) => {
                tracing::warn!(%error, "fs/watch: the OS watcher reported an error");
                return;
            }
        };
        // Opening or reading a file changes nothing.
        if matches!(event.kind, EventKind::Access(_)) {
            return;
        }
        let Some(routes) = routes.upgrade() else {
            return;
        };
        let routes = lock(&routes);
        for changed in &event.paths {
            for watch in routes.values() {
                if watch.concerns(changed) {
                    watch.record(changed);
                } else if watch.is_ancestor(changed) {
                    watch.ask_reanchor();
                }
            }
        }
    })
    .map_err(|source| FsError::Watch { source })
}

/// The watch's task: waits for a first change, gathers for [`DEBOUNCE`], sends the batch and
/// waits for its delivery, again and again until aborted.
async fn send_changes(
    watch: Arc<Watch>,
    watch_id: String,
    connection: ConnectionId,
    outgoing: OutgoingMessageSender,
    os: Arc<Mutex<Os>>,
    routes: Routes,
) {
    loop {
        watch.wake.notified().await;
        tokio::time::sleep(DEBOUNCE).await;
        if watch
            .reanchor
            .swap(false, std::sync::atomic::Ordering::Relaxed)
            && move_anchor(&watch, &os, &routes)
            && watch.path.as_path().exists()
        {
            // It may have appeared before the OS was asked about its new parent.
            watch.record(watch.path.as_path());
        }
        let Some(changed_paths) = watch.take() else {
            continue;
        };
        if !lock(&routes).contains_key(&watch_id) {
            return;
        }
        if changed_paths.iter().any(|path| path == &watch.path) && watch.path.as_path().is_dir() {
            follow_directory(&watch, &os, &routes);
        }
        let notification = ServerNotification::FsChanged(FsChangedNotification {
            watch_id: watch_id.clone(),
            changed_paths,
        });
        if !outgoing
            .send_notification_and_wait(connection, notification)
            .await
        {
            tracing::debug!(%connection, %watch_id, "fs/changed not delivered (queue full or connection gone)");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watch(path: &str) -> Watch {
        Watch {
            path: AbsolutePathBuf::new(path).expect("absolute"),
            os_paths: Mutex::default(),
            pending: Mutex::default(),
            reanchor: std::sync::atomic::AtomicBool::new(false),
            wake: Notify::new(),
        }
    }

    #[test]
    fn a_batch_is_sorted_and_each_path_once() {
        let watch = watch("/w");
        for name in ["/w/b", "/w/a", "/w/b"] {
            watch.record(Path::new(name));
        }
        let batch = watch.take().expect("a batch");
        assert_eq!(
            batch,
            [
                AbsolutePathBuf::new("/w/a").unwrap(),
                AbsolutePathBuf::new("/w/b").unwrap()
            ]
        );
        assert_eq!(watch.take(), None, "taken once");
    }

    #[test]
    fn more_paths_than_the_bound_become_the_watched_path_alone() {
        let watch = watch("/w");
        for index in 0..=MAX_CHANGED_PATHS {
            watch.record(&PathBuf::from(format!("/w/{index}")));
        }
        assert_eq!(
            watch.take(),
            Some(vec![AbsolutePathBuf::new("/w").unwrap()])
        );
        // The next batch starts afresh.
        watch.record(Path::new("/w/x"));
        assert_eq!(
            watch.take(),
            Some(vec![AbsolutePathBuf::new("/w/x").unwrap()])
        );
    }

    /// `fs/unwatch` plays against a watch task that holds the watch's `os_paths` and wants
    /// `os` (as [`move_anchor`] does): `os` must stay free meanwhile, or the two deadlock.
    #[test]
    fn unwatching_never_holds_the_os_side_while_it_waits_for_a_watch() {
        let watch = Arc::new(watch("/w"));
        lock(&watch.os_paths).push(PathBuf::from("/w"));
        let os = Arc::new(Mutex::new(Os::default()));
        lock(&os).counts.insert(PathBuf::from("/w"), 1);
        let held = lock(&watch.os_paths);
        // The unwatch blocks on the watch's paths, held here.
        let unwatching = {
            let (watch, os) = (Arc::clone(&watch), Arc::clone(&os));
            crate::lock_waits::spawn_until_blocked(std::time::Duration::from_secs(10), move || {
                release_os_paths(&watch, &os)
            })
        };
        let (answer, answered) = std::sync::mpsc::channel();
        let probe = {
            let os = Arc::clone(&os);
            std::thread::spawn(move || {
                let _ = answer.send(lock(&os).counts.len());
            })
        };
        let found = answered.recv_timeout(std::time::Duration::from_secs(5));
        drop(held);
        probe.join().expect("probe");
        unwatching.join().expect("unwatch");
        assert_eq!(
            found,
            Ok(1),
            "os was held while the unwatch waited for the watch"
        );
        assert!(lock(&os).counts.is_empty(), "the path was given back");
        assert!(lock(&watch.os_paths).is_empty());
    }

    #[test]
    fn a_watch_concerns_its_path_and_direct_children_and_moves_with_its_ancestors() {
        let watch = watch("/a/b/c");
        assert!(watch.concerns(Path::new("/a/b/c")));
        assert!(watch.concerns(Path::new("/a/b/c/d")));
        assert!(!watch.concerns(Path::new("/a/b/c/d/e")));
        assert!(!watch.concerns(Path::new("/a/b/sibling")));
        assert!(watch.is_ancestor(Path::new("/a/b")));
        assert!(watch.is_ancestor(Path::new("/a")));
        assert!(!watch.is_ancestor(Path::new("/a/b/c")));
        assert!(!watch.is_ancestor(Path::new("/a/x")));
    }
}

//! The last resort of a shutdown that never finishes.
//!
//! Every stage of a host's shutdown is bounded by a Tokio timer, and a timer fires only on a
//! runtime thread that is free to run it. A bug that holds every worker (two std mutexes taken
//! in opposite orders, as the idle unload and the shutdown once did) or a blocking call on
//! `tandem exec`'s one thread would hold the shutdown for ever, silently: the stage timeouts
//! never fire, a second SIGTERM is handled by the same stuck runtime, and only a service
//! manager's SIGKILL ends it. So when a command's shutdown begins it arms this deadline, a
//! plain thread outside the runtime: past the command's own bound it writes what each thread
//! of the process is blocked in to stderr (without waiting for a reader) and exits with
//! [`EXIT_CODE`]. The next such bug is then a report and an exit, not a hang.
//!
//! Nothing acknowledged is lost by that exit: it is what a crash is, which the stores, the
//! recovery of interrupted turns at the next start and the watchdog that kills the server's
//! processes when it dies are built for (docs/reliability.md, "What dies with the server").

use std::fmt::Write as _;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The exit code of a shutdown the deadline ended (`EX_SOFTWARE`: an internal error).
pub(crate) const EXIT_CODE: i32 = 70;

/// `tandem app-server`'s deadline: its shutdown is bounded at 5 s (three stages of 1 s, the
/// writers' last 250 ms), and a service manager such as Docker sends SIGKILL 10 s after
/// SIGTERM, so the report is written between the two.
pub(crate) const APP_SERVER: Duration = Duration::from_secs(8);

/// What is added to a command's own bound before the deadline gives up on it.
const MARGIN: Duration = Duration::from_secs(3);

/// `tandem run`, `chat` and `tui`: closing the client waits for the in-process runtime's
/// acknowledgement (at most its ack timeout), then for its task (at most the close timeout);
/// a server of their own over stdio is given stdin EOF, SIGTERM and SIGKILL, each after the
/// close timeout, which is shorter.
pub(crate) const SESSION: Duration = tandem_host::in_process::DEFAULT_SHUTDOWN_ACK_TIMEOUT
    .saturating_add(tandem_client::DEFAULT_CLOSE_TIMEOUT)
    .saturating_add(MARGIN);

/// `tandem exec`'s host: the acknowledgement, then the runtime task's stage.
pub(crate) const EXEC: Duration = tandem_host::in_process::DEFAULT_SHUTDOWN_ACK_TIMEOUT
    .saturating_add(tandem_host::in_process::DEFAULT_SHUTDOWN_STAGE_TIMEOUT)
    .saturating_add(MARGIN);

/// At most this many lines of threads in a report (a server has a few dozen).
const THREADS_REPORTED: usize = 32;

/// Whether a deadline runs already: the first shutdown to begin arms it, later ones (the end
/// of stdin after a signal) find it armed.
static ARMED: AtomicBool = AtomicBool::new(false);

/// What the deadline does before it reports and exits, registered by the command
/// ([`before_exit`]): `tandem tui` gives its terminal back.
static BEFORE_EXIT: OnceLock<fn()> = OnceLock::new();

/// Has the deadline call `undo` before it reports and exits: what a command would undo on its
/// way out and an exit skips (a terminal left in raw mode). `undo` runs on the deadline's
/// thread while the runtime may be stuck, so it must not wait for anything (a lock, a reader).
/// Only the first registration counts.
pub(crate) fn before_exit(undo: fn()) {
    let _ = BEFORE_EXIT.set(undo);
}

/// Arms the deadline: if `command` is still running `after` from now, the process reports it
/// and exits with [`EXIT_CODE`]. Only the first call in a process counts; the deadline is never
/// disarmed, since the process exits once its shutdown is done.
pub(crate) fn arm(command: &'static str, after: Duration) {
    if ARMED.swap(true, Ordering::AcqRel) {
        return;
    }
    #[cfg(debug_assertions)]
    let after = faults::deadline().unwrap_or(after);
    let spawned = std::thread::Builder::new()
        .name("tandem-deadline".into())
        .spawn(move || {
            std::thread::sleep(after);
            // First, so that the report is written to the normal screen of a terminal.
            if let Some(undo) = BEFORE_EXIT.get() {
                undo();
            }
            crate::stderr_without_waiting::say(&report(command, after));
            // `exit` rather than a return through the stuck runtime; std's cleanup only takes
            // stdout's lock if it is free.
            std::process::exit(EXIT_CODE);
        });
    if let Err(error) = spawned {
        tracing::warn!(%error, "cannot start the shutdown deadline's thread; a stuck shutdown would hang");
    }
    #[cfg(debug_assertions)]
    faults::wedge_workers_if_asked();
}

/// What the deadline writes: which command, how long, and where each thread of the process is
/// (its name, its state and the kernel function it waits in, from `/proc/self/task`), threads
/// in the same place counted once.
fn report(command: &str, after: Duration) -> String {
    let mut text = format!(
        "tandem {command}: the shutdown did not finish within {after:?}; exiting with {EXIT_CODE} \
         without it. Nothing acknowledged is lost (running turns are closed as interrupted at \
         the next start, the processes it started are killed by their watchdog), but this is a \
         bug: please report it with the threads below.\n"
    );
    let mut places: Vec<(String, usize)> = Vec::new();
    for thread in threads() {
        match places.iter_mut().find(|(place, _)| *place == thread) {
            Some((_, count)) => *count += 1,
            None => places.push((thread, 1)),
        }
    }
    for (place, count) in places.iter().take(THREADS_REPORTED) {
        let _ = writeln!(text, "  {count} x {place}");
    }
    if places.len() > THREADS_REPORTED {
        let _ = writeln!(text, "  ({} more)", places.len() - THREADS_REPORTED);
    }
    text
}

/// Each thread of this process as `name: state (wait channel)`.
fn threads() -> Vec<String> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    tasks
        .flatten()
        .map(|task| {
            let path = task.path();
            let read = |file: &str| std::fs::read_to_string(path.join(file)).unwrap_or_default();
            let name = read("comm");
            let stat = read("stat");
            // The name in `stat` may hold spaces and parentheses; the state follows the last ')'.
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .unwrap_or("?")
                .to_owned();
            let channel = read("wchan");
            let channel = match channel.trim() {
                "" | "0" => "running",
                channel => channel,
            };
            format!("{}: {state} ({channel})", name.trim())
        })
        .collect()
}

/// Fault points of debug builds, for the tests of the deadline (release builds have none).
#[cfg(debug_assertions)]
mod faults {
    use std::time::Duration;

    /// `TANDEM_FAULT_SHUTDOWN_DEADLINE_MS`: a deadline of that many milliseconds instead of
    /// the command's, so that a test of a command with a long bound need not wait it out.
    pub(super) fn deadline() -> Option<Duration> {
        let millis = std::env::var("TANDEM_FAULT_SHUTDOWN_DEADLINE_MS").ok()?;
        millis.parse().ok().map(Duration::from_millis)
    }

    /// With `TANDEM_FAULT_WEDGE_SHUTDOWN` set, blocks every worker of the runtime for an hour
    /// as soon as the deadline is armed: what a deadlock of std mutexes does to a shutdown.
    pub(super) fn wedge_workers_if_asked() {
        if std::env::var_os("TANDEM_FAULT_WEDGE_SHUTDOWN").is_none() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        tracing::warn!("TANDEM_FAULT_WEDGE_SHUTDOWN: blocking every runtime worker");
        // Spawned from outside the workers (the commands arm the deadline on the thread of
        // `block_on`), each lands on a worker of its own once the others are held.
        for _ in 0..runtime.metrics().num_workers() {
            runtime.spawn(async { std::thread::sleep(Duration::from_secs(3600)) });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_names_the_command_and_counts_this_thread() {
        let text = report("app-server", Duration::from_secs(8));
        assert!(
            text.starts_with("tandem app-server: the shutdown did not finish within 8s"),
            "{text}"
        );
        // The test's own thread is running this very code (its name as the kernel has it:
        // the test's, or the binary's when the test runs on the main thread).
        let name = std::fs::read_to_string("/proc/thread-self/comm").expect("own thread name");
        let running = format!("{}: R (running)", name.trim());
        assert!(
            text.lines().any(|line| line.contains(&running)),
            "{running} in {text}"
        );
    }
}

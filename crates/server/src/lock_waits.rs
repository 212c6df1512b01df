//! For the lock-order tests: a thread spawned to take a lock, and a wait until the kernel says
//! it is blocked on one (a futex, from `/proc/self/task/TID/wchan`), in place of a sleep that
//! guesses how long the thread needs to get there (too short, and the test passes without
//! testing anything).

use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Runs `work` on a thread of its own and returns once that thread waits on a futex (a std
/// lock it cannot take), failing the test if it does not within `limit`.
pub(crate) fn spawn_until_blocked<T: Send + 'static>(
    limit: Duration,
    work: impl FnOnce() -> T + Send + 'static,
) -> JoinHandle<T> {
    let (own_task, task) = mpsc::channel();
    let handle = std::thread::spawn(move || {
        // `/proc/thread-self` links to `PID/task/TID`.
        let _ = own_task.send(std::fs::read_link("/proc/thread-self").expect("own task"));
        work()
    });
    let task = task.recv_timeout(limit).expect("the thread started");
    let wchan = std::path::Path::new("/proc").join(task).join("wchan");
    let deadline = Instant::now() + limit;
    while !std::fs::read_to_string(&wchan).is_ok_and(|at| at.contains("futex")) {
        assert!(
            Instant::now() < deadline,
            "the thread never blocked on a lock"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    handle
}

//! The allocator policy of `tandem app-server`: glibc gives freed memory back to the kernel,
//! so that the server's resident size follows what it holds (issue 27: a connection that was
//! owed 150 MB and is closed gives it back, and a server that runs for hours does not creep).
//!
//! Why glibc needs telling, twice:
//! - It maps large buffers on their own, but each time it unmaps one it raises its threshold
//!   for doing so to that buffer's size (up to 32 MiB). After the first multi-megabyte message,
//!   buffers of that size come from the per-thread arenas instead. Three `turn/start`s with
//!   8 MB inputs left the server 170 MiB above its start for good, all of it freed memory. A
//!   fixed threshold (`mallopt(M_MMAP_THRESHOLD)`, which also stops the adjustment) maps every
//!   buffer from 1 MiB up on its own and unmaps it when it is freed.
//! - Below the threshold, a freed arena chunk returns to the kernel only from the top of its
//!   heap: everything freed below a live allocation stays resident, and under a long mixed
//!   load (the soak: turns, processes, reconnects, on a dozen worker threads' arenas) the
//!   resident size grew about 7 MiB a minute while the live heap stayed flat (heaptrack: 43 MB
//!   live at 2 minutes, 25 MB at 7.5, resident 65 to 96 MiB). `malloc_trim(0)` gives the free
//!   pages inside the heaps back (`MADV_DONTNEED`); a thread calls it every
//!   [`TRIM_PERIOD`]. Same soak, 6 minutes, one server life: +6 985 KiB/min without it,
//!   +756 KiB/min with it (mimalloc: +2 812; docs/reliability.md, "What the soak found").
//!
//! Embedders of the in-process host choose their own allocator: this is the binary's policy.

use std::time::Duration;

/// How often the free pages of glibc's heaps go back to the kernel. One pass over a few tens
/// of MiB of heap takes well under a millisecond; the soak's probe saw no change in its p99.
#[cfg_attr(not(all(target_os = "linux", target_env = "gnu")), allow(dead_code))]
const TRIM_PERIOD: Duration = Duration::from_secs(10);

/// Buffers of at least this many bytes are mapped on their own and unmapped when freed.
#[cfg_attr(not(all(target_os = "linux", target_env = "gnu")), allow(dead_code))]
const MMAP_THRESHOLD: i32 = 1024 * 1024;

/// Sets the policy and starts the trimming thread; call once, before the server allocates
/// its first large buffers.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub(crate) fn return_freed_memory() {
    // SAFETY: `mallopt` takes no pointers and glibc serializes it with every allocation; its
    // only effect is on how later allocations are placed.
    let set = unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD) };
    if set != 1 {
        tracing::warn!("glibc refused the mmap threshold: freed buffers may stay resident");
    }
    let trimmer = std::thread::Builder::new()
        .name("malloc-trim".to_owned())
        .spawn(|| {
            loop {
                std::thread::sleep(TRIM_PERIOD);
                // SAFETY: `malloc_trim` takes no pointers; glibc locks each arena while it
                // returns that arena's free pages, as it does for any allocation.
                unsafe { libc::malloc_trim(0) };
            }
        });
    if let Err(error) = trimmer {
        tracing::warn!(%error, "cannot start the malloc-trim thread: freed memory may stay resident");
    }
}

/// Other allocators return freed memory themselves; nothing to set.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn return_freed_memory() {}

//! The allocator policy of `tandem app-server`: glibc gives buffers of a megabyte or more back
//! to the kernel as soon as they are freed, so that the server's resident size follows what it
//! holds (issue 27: a connection that was owed 150 MB and is closed gives it back).
//!
//! Why glibc needs telling: it maps large buffers on their own, but each time it unmaps one it
//! raises its threshold for doing so to that buffer's size (up to 32 MiB). After the first
//! multi-megabyte message, buffers of that size come from the per-thread arenas instead, and a
//! freed arena chunk returns to the kernel only from the top of its heap: everything freed
//! below a live allocation stays resident. Three `turn/start`s with 8 MB inputs left the
//! server 170 MiB above its start for good, all of it freed memory (the same run with a fixed
//! threshold went back to within 3 MiB). A fixed threshold (`mallopt(M_MMAP_THRESHOLD)`, which
//! also stops the adjustment) maps every buffer from 1 MiB up on its own and unmaps it when it
//! is freed; smaller ones are served from the arenas as before. docs/reliability.md has the
//! figures.

/// Buffers of at least this many bytes are mapped on their own and unmapped when freed.
#[cfg_attr(not(all(target_os = "linux", target_env = "gnu")), allow(dead_code))]
const MMAP_THRESHOLD: i32 = 1024 * 1024;

/// Sets the policy; call once, before the server allocates its first large buffers.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub(crate) fn return_large_buffers_when_freed() {
    // SAFETY: `mallopt` takes no pointers and glibc serializes it with every allocation; its
    // only effect is on how later allocations are placed.
    let set = unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD) };
    if set != 1 {
        tracing::warn!("glibc refused the mmap threshold: freed buffers may stay resident");
    }
}

/// Other allocators return large freed blocks themselves; nothing to set.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn return_large_buffers_when_freed() {}

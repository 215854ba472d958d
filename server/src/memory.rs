//! What the heap holds, for `/metrics`. The `lookout` binary allocates with jemalloc, for
//! Rust and C code alike, configured in `main.rs`; the heap is reported for it only (tests and
//! examples that link this library do not set its configuration).

use std::sync::atomic::{AtomicBool, Ordering};

static JEMALLOC: AtomicBool = AtomicBool::new(false);

/// Called by the binary, whose global allocator is jemalloc.
pub fn jemalloc_is_the_allocator() {
    JEMALLOC.store(true, Ordering::Relaxed);
}

/// What jemalloc holds: bytes allocated and not freed, and bytes of its pages resident in
/// memory (allocations, its metadata, and freed pages not yet returned).
#[derive(Debug, Clone, Copy)]
pub struct Heap {
    pub allocated: u64,
    pub resident: u64,
}

/// The heap as jemalloc counts it; None under another allocator.
pub fn heap() -> Option<Heap> {
    if !JEMALLOC.load(Ordering::Relaxed) {
        return None;
    }
    jemalloc_heap()
}

#[cfg(not(target_env = "msvc"))]
fn jemalloc_heap() -> Option<Heap> {
    // jemalloc's statistics are refreshed when the epoch advances.
    tikv_jemalloc_ctl::epoch::advance().ok()?;
    Some(Heap {
        allocated: tikv_jemalloc_ctl::stats::allocated::read().ok()? as u64,
        resident: tikv_jemalloc_ctl::stats::resident::read().ok()? as u64,
    })
}

#[cfg(target_env = "msvc")]
fn jemalloc_heap() -> Option<Heap> {
    None
}

/// Bytes SQLite has allocated (its page caches, statements, schema). In the binary its
/// `malloc` is jemalloc's too, so this is part of the heap; elsewhere it is glibc's.
pub fn sqlite() -> u64 {
    // SAFETY: sqlite3_memory_used takes no arguments and only reads SQLite's global memory
    // statistics, which it guards itself; it is safe to call from any thread at any time.
    let used = unsafe { libsqlite3_sys::sqlite3_memory_used() };
    u64::try_from(used).unwrap_or(0)
}

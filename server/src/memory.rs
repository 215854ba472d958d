//! What the heap holds, for `/metrics`. The `lookout` binary allocates with jemalloc (see
//! `main.rs`); tests and examples that link this library keep their own allocator, and then
//! the heap is not reported.

use std::sync::atomic::{AtomicBool, Ordering};

static JEMALLOC: AtomicBool = AtomicBool::new(false);

/// Called by the binary, whose global allocator is jemalloc.
pub fn jemalloc_is_the_allocator() {
    JEMALLOC.store(true, Ordering::Relaxed);
}

/// Bytes allocated and not freed, as jemalloc counts them; None under another allocator.
pub fn heap_in_use() -> Option<u64> {
    if !JEMALLOC.load(Ordering::Relaxed) {
        return None;
    }
    heap_allocated()
}

#[cfg(not(target_env = "msvc"))]
fn heap_allocated() -> Option<u64> {
    // jemalloc's statistics are refreshed when the epoch advances.
    tikv_jemalloc_ctl::epoch::advance().ok()?;
    tikv_jemalloc_ctl::stats::allocated::read()
        .ok()
        .map(|b| b as u64)
}

#[cfg(target_env = "msvc")]
fn heap_allocated() -> Option<u64> {
    None
}

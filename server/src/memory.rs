//! The heap: what it holds, for `/metrics`, and where the cache's data is allocated. The
//! `lookout` binary allocates with jemalloc ([`Allocator`]: a separate arena for the cache),
//! for Rust and C code alike, configured in `main.rs`; the heap is reported for it only (tests
//! and examples that link this library use the system allocator, where [`cached`] and
//! [`release_thread_cache`] change nothing).

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

static JEMALLOC: AtomicBool = AtomicBool::new(false);

/// Called by the binary, whose global allocator is jemalloc.
pub fn jemalloc_is_the_allocator() {
    JEMALLOC.store(true, Ordering::Relaxed);
}

thread_local! {
    /// Whether this thread is building data the cache keeps (see [`cached`]).
    static CACHING: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with what it allocates marked as the cache's: views, their strings and map
/// entries, which live until their object changes. Under the binary's [`Allocator`] those
/// allocations come from an arena of their own, so they do not share the allocator's pages
/// with the short-lived data around them (a list's JSON, a page being rendered, the history
/// writer's statements); sharing leaves those pages partly empty once the short-lived data is
/// freed (about 200 bytes per cached Ingress or Certificate, measured). Nests; elsewhere it
/// just runs `f`.
pub fn cached<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            CACHING.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(CACHING.with(|c| c.replace(true)));
    f()
}

/// Hands the regions this thread's allocator cache holds back to their arenas. Called after
/// work that freed a lot at once (a finished list, a computation of findings and rows): the
/// thread would otherwise keep up to a few hundred KB of freed memory until it allocates again,
/// on each thread that did such work. A no-op under another allocator.
pub fn release_thread_cache() {
    #[cfg(not(target_env = "msvc"))]
    if JEMALLOC.load(Ordering::Relaxed) {
        arena::flush_thread_cache();
    }
}

fn caching() -> bool {
    // try_with: the allocator may run while the thread's locals are being torn down.
    CACHING.try_with(Cell::get).unwrap_or(false)
}

#[cfg(not(target_env = "msvc"))]
pub use arena::Allocator;

#[cfg(not(target_env = "msvc"))]
mod arena {
    use std::alloc::{GlobalAlloc, Layout};
    use std::ffi::c_void;
    use std::sync::atomic::{AtomicU32, Ordering};

    use tikv_jemalloc_sys as ffi;
    use tikv_jemallocator::Jemalloc;

    /// jemalloc, with a separate arena for the cache's allocations (see [`super::cached`]).
    pub struct Allocator;

    /// Empties the calling thread's cache of freed regions.
    pub(super) fn flush_thread_cache() {
        // SAFETY: "thread.tcache.flush" takes and returns nothing: every pointer is null and
        // every length zero, as mallctl documents for such names.
        unsafe {
            ffi::mallctl(
                c"thread.tcache.flush".as_ptr(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            );
        }
    }

    /// Bytes allocated in the cache's arena (small and large regions), as of the last epoch.
    pub(super) fn allocated() -> Option<u64> {
        let arena = CACHE_ARENA.load(Ordering::Relaxed).checked_sub(1)?;
        let read = |what: &str| {
            let name = format!("stats.arenas.{arena}.{what}.allocated\0");
            // SAFETY: these statistics are size_t values, which usize reads.
            unsafe { tikv_jemalloc_ctl::raw::read::<usize>(name.as_bytes()) }.ok()
        };
        Some((read("small")? + read("large")?) as u64)
    }

    /// The cache's arena index + 1; 0 until [`Allocator::init`] (everything in the default
    /// arenas).
    static CACHE_ARENA: AtomicU32 = AtomicU32::new(0);

    impl Allocator {
        /// Creates the cache's arena. Call once at start, before the cache fills.
        pub fn init(&self) {
            // SAFETY: "arenas.create" is a read-only mallctl returning the new arena's index
            // as an unsigned int, which is what u32 reads.
            match unsafe { tikv_jemalloc_ctl::raw::read::<u32>(b"arenas.create\0") } {
                Ok(index) => CACHE_ARENA.store(index + 1, Ordering::Relaxed),
                Err(e) => eprintln!("warning: no separate allocator arena for the cache: {e}"),
            }
        }

        /// The mallocx flags of a cache allocation, or None when it is not one.
        fn cache_flags(layout: &Layout, size: usize) -> Option<i32> {
            let arena = CACHE_ARENA.load(Ordering::Relaxed);
            if arena == 0 || !super::caching() {
                return None;
            }
            // No thread cache: it would hand the cache's freed regions to other data, and
            // take other arenas' regions for the cache.
            let mut flags = ffi::MALLOCX_ARENA(arena as usize - 1) | ffi::MALLOCX_TCACHE_NONE;
            // jemalloc aligns to 16 bytes by itself (as tikv-jemallocator assumes too).
            if layout.align() > 16 || layout.align() > size {
                flags |= ffi::MALLOCX_ALIGN(layout.align());
            }
            Some(flags)
        }
    }

    // SAFETY: every call is forwarded to jemalloc, either through tikv-jemallocator or to
    // mallocx/rallocx with the layout's size and alignment; jemalloc frees a region of any
    // arena through sdallocx, so deallocation needs no arena.
    unsafe impl GlobalAlloc for Allocator {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            match Self::cache_flags(&layout, layout.size()) {
                // SAFETY: layout.size() is non-zero (GlobalAlloc's contract).
                Some(flags) => unsafe { ffi::mallocx(layout.size(), flags).cast() },
                // SAFETY: forwarded with the caller's guarantees.
                None => unsafe { Jemalloc.alloc(layout) },
            }
        }

        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            match Self::cache_flags(&layout, layout.size()) {
                // SAFETY: as in alloc.
                Some(flags) => unsafe {
                    ffi::mallocx(layout.size(), flags | ffi::MALLOCX_ZERO).cast()
                },
                // SAFETY: forwarded with the caller's guarantees.
                None => unsafe { Jemalloc.alloc_zeroed(layout) },
            }
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: forwarded with the caller's guarantees.
            unsafe { Jemalloc.dealloc(ptr, layout) }
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            match Self::cache_flags(&layout, new_size) {
                // SAFETY: ptr came from this allocator with `layout`; new_size is non-zero.
                Some(flags) => unsafe {
                    ffi::rallocx(ptr.cast::<c_void>(), new_size, flags).cast()
                },
                // SAFETY: forwarded with the caller's guarantees.
                None => unsafe { Jemalloc.realloc(ptr, layout, new_size) },
            }
        }
    }
}

/// What jemalloc holds: bytes allocated and not freed, and bytes of its pages resident in
/// memory (allocations, its metadata, and freed pages not yet returned).
#[derive(Debug, Clone, Copy)]
pub struct Heap {
    pub allocated: u64,
    pub resident: u64,
    /// Of `allocated`, the bytes in the cache's own arena (see [`cached`]); None without it.
    pub cache: Option<u64>,
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
        cache: arena::allocated(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_marks_only_its_own_work_and_restores_on_panic() {
        assert!(!caching());
        cached(|| {
            assert!(caching());
            cached(|| assert!(caching()));
            assert!(caching(), "a nested scope leaves the outer one marked");
        });
        assert!(!caching());
        let panicked = std::panic::catch_unwind(|| cached(|| panic!("projection failed")));
        assert!(panicked.is_err());
        assert!(
            !caching(),
            "a panic inside does not leave the thread marked"
        );
        std::thread::spawn(|| assert!(!caching(), "other threads are not marked"))
            .join()
            .unwrap();
    }
}

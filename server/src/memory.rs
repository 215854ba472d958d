//! Giving freed memory back to the system.

/// Hands the memory freed since the last call back to the system. glibc keeps freed memory in
/// its per-thread arenas and returns it by itself only from the top of each heap, so without
/// this the peak of every relist (the API objects, the views and findings it replaced) stays
/// in the RSS. Called after a relist and after the derived data of a relisted cluster is
/// computed: rare, and a few milliseconds each.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointers; it walks glibc's own free lists under its locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Limits glibc to one malloc arena per CPU (its default is eight per CPU). Each arena keeps
/// its own free memory, so with many of them the memory a relist freed on one thread is not
/// reused by the next on another and stays in the RSS; one per CPU keeps threads from
/// contending for an arena while measured RSS on a 10,000-Ingress cluster drops by about an
/// eighth. Call it before the async runtime starts its threads.
pub fn limit_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
        let arenas = libc::c_int::try_from(cpus.max(2)).unwrap_or(libc::c_int::MAX);
        // SAFETY: mallopt takes two integers and changes only the allocator's settings.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, arenas);
        }
    }
}

/// Bytes in use on the heap (allocated and not freed), as the allocator counts them; None
/// where the allocator cannot say (not glibc).
pub fn heap_in_use() -> Option<u64> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallinfo2 takes no arguments and returns a plain struct of counters.
        let m = unsafe { libc::mallinfo2() };
        Some((m.uordblks + m.hblkhd) as u64)
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    None
}

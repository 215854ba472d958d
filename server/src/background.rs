//! Low-priority background work: one thread at the lowest scheduling priority, so that
//! recomputing what only the passing of time changed never takes CPU from requests.

use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};

type Job = Box<dyn FnOnce() + Send>;

static QUEUE: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();

/// Runs `job` on the background thread (started on first use), after the jobs before it.
pub(crate) fn run(job: impl FnOnce() + Send + 'static) {
    let queue = QUEUE.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("lookout-background".into())
            .spawn(move || {
                lower_priority();
                for job in rx {
                    // A job that panics is reported; the thread goes on with the next.
                    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)).is_err() {
                        tracing::error!("a background recomputation panicked; it is skipped");
                    }
                }
            })
            .expect("cannot start the background thread");
        Mutex::new(tx)
    });
    if queue
        .lock()
        .expect("background queue lock")
        .send(Box::new(job))
        .is_err()
    {
        tracing::error!("the background thread has stopped; a recomputation is skipped");
    }
}

/// Gives the calling thread the lowest priority (nice 19) where the system allows it.
pub(crate) fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid and setpriority take and return plain integers; on Linux
        // PRIO_PROCESS with a thread id changes that thread only.
        let rc = unsafe {
            let tid = libc::gettid();
            libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 19)
        };
        if rc != 0 {
            tracing::debug!(error = %std::io::Error::last_os_error(), "could not lower the background thread's priority");
        }
    }
}

//! The loop every database writer runs, and what it tells about the database's health.
//!
//! A writer receives items from a bounded channel and writes them in batches. When a batch
//! cannot be written (the disk is full, the file is read-only or locked by another process)
//! the items are held in memory, in order, and written again with a growing pause, while
//! new items keep arriving behind them: the watchers never wait for a broken database and
//! nothing is lost unless the fault outlasts the hold (then the oldest items go, counted).
//! [`Health`] records the failure for the page banner, `/metrics` and the logs, and clears
//! it once everything held has been written.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use crate::store::Pool;
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::clock::Now;

/// The first pause after a failed write; it doubles up to [`RETRY_MAX`].
const RETRY_MIN: Duration = Duration::from_millis(500);
const RETRY_MAX: Duration = Duration::from_secs(30);

/// Slots the buffer of held items keeps once everything is written.
const KEPT_SLOTS: usize = 64;

/// How long one batch may take to write before it counts as failed.
const WRITE_TIMEOUT: Duration = Duration::from_secs(60);

/// An item with the time it reached the writer (when it happened, give or take the queue).
#[derive(Debug, Clone)]
pub struct Stamped<T> {
    pub at: DateTime<Utc>,
    pub item: T,
}

/// Writes one batch, all or nothing.
pub type WriteFn<T> =
    for<'a> fn(&'a Pool, &'a [Stamped<T>]) -> BoxFuture<'a, Result<(), sqlx::Error>>;

/// How one writer batches and how much it holds through a fault.
pub struct Writer<T> {
    /// Its name in logs, `/metrics` and the banner: `history`, `sync events`, `audit`.
    pub what: &'static str,
    /// Items per batch at most.
    pub batch: usize,
    /// How long it gathers a batch after the first item.
    pub linger: Duration,
    /// Items held while the database refuses writes; beyond it the oldest are dropped.
    pub hold: usize,
    pub write: WriteFn<T>,
}

/// Since when and why the database refuses a writer's writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub since: DateTime<Utc>,
    pub error: String,
}

/// One writer's state as `/metrics` and the banner read it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriterState {
    pub failure: Option<Failure>,
    /// Items waiting in memory for the database.
    pub held: usize,
    /// Failed write attempts since start.
    pub errors: u64,
    /// Items given up because the hold was full.
    pub dropped: u64,
}

/// Whether the database takes writes, as each writer last found it.
#[derive(Debug, Default)]
pub struct Health {
    writers: Mutex<BTreeMap<&'static str, WriterState>>,
    /// Batches committed, by every writer: what a cache of the history's reads keys on.
    committed: std::sync::atomic::AtomicU64,
    /// Woken when a failure ends, so the other failing writers try again at once instead
    /// of at the end of their pause.
    cleared: tokio::sync::Notify,
}

impl Health {
    /// How many batches the writers have committed so far: it moves whenever the history
    /// may read differently.
    pub fn committed(&self) -> u64 {
        self.committed.load(std::sync::atomic::Ordering::Acquire)
    }

    /// A write made outside the writers (an audit row written as the action happens).
    pub fn wrote_directly(&self) {
        self.committed
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }

    fn update(&self, what: &'static str, f: impl FnOnce(&mut WriterState)) {
        f(self
            .writers
            .lock()
            .expect("health lock")
            .entry(what)
            .or_default());
    }

    /// A write of `what` failed with `error`.
    pub fn failed(&self, what: &'static str, error: &sqlx::Error, now: DateTime<Utc>) {
        self.failed_because(what, describe(error), now);
    }

    /// `what` failed; `error` says why.
    pub fn failed_because(&self, what: &'static str, error: String, now: DateTime<Utc>) {
        self.update(what, |s| {
            s.errors += 1;
            match &mut s.failure {
                Some(f) => f.error = error,
                None => {
                    tracing::error!(writer = what, %error, "the database refuses writes; holding them in memory and trying again");
                    s.failure = Some(Failure { since: now, error });
                }
            }
        });
    }

    fn wrote(&self, what: &'static str, held: usize) {
        self.update(what, |s| {
            s.held = held;
            if held == 0 {
                if let Some(f) = s.failure.take() {
                    tracing::info!(writer = what, since = %f.since, "the database takes writes again; everything held is written");
                    self.cleared.notify_waiters();
                }
            }
        });
    }

    /// `what` works again (for a task that holds nothing, such as opening the database).
    pub fn recovered(&self, what: &'static str) {
        self.wrote(what, 0);
    }

    fn holding(&self, what: &'static str, held: usize, dropped: u64) {
        self.update(what, |s| {
            s.held = held;
            s.dropped += dropped;
        });
    }

    /// Every writer's state, by name.
    pub fn writers(&self) -> BTreeMap<&'static str, WriterState> {
        self.writers.lock().expect("health lock").clone()
    }

    /// Whether any writer finds the database refusing writes now.
    pub fn failing(&self) -> bool {
        self.writers
            .lock()
            .expect("health lock")
            .values()
            .any(|s| s.failure.is_some())
    }

    /// The oldest failure among the writers, with what they hold: for the page banner.
    pub fn problem(&self) -> Option<(Failure, usize)> {
        let writers = self.writers.lock().expect("health lock");
        let held = writers.values().map(|s| s.held).sum();
        writers
            .values()
            .filter_map(|s| s.failure.clone())
            .min_by_key(|f| f.since)
            .map(|f| (f, held))
    }
}

/// SQLite's own words for the cause (`database or disk is full`, `attempt to write a readonly
/// database`, `database is locked`), without sqlx's wrapping.
pub fn describe(e: &sqlx::Error) -> String {
    match e {
        sqlx::Error::Database(d) => d.message().to_string(),
        other => other.to_string(),
    }
}

/// Runs `w` until `shutdown` (or until every sender is gone), then writes what is queued or
/// held, once.
pub async fn run<T: Send + Sync + 'static>(
    w: Writer<T>,
    pool: Pool,
    mut rx: mpsc::Receiver<T>,
    shutdown: CancellationToken,
    now: Now,
    health: std::sync::Arc<Health>,
) {
    let mut held: VecDeque<Stamped<T>> = VecDeque::new();
    let mut pause = RETRY_MIN;
    let mut retry_at = Instant::now();
    let stamp = |item| Stamped { at: now(), item };
    health.wrote(w.what, 0);
    loop {
        if held.is_empty() {
            let first = tokio::select! {
                item = rx.recv() => item,
                _ = shutdown.cancelled() => break,
            };
            let Some(first) = first else { break };
            held.push_back(stamp(first));
            let deadline = Instant::now() + w.linger;
            while held.len() < w.batch {
                match tokio::time::timeout_at(deadline, rx.recv()).await {
                    Ok(Some(item)) => held.push_back(stamp(item)),
                    Ok(None) | Err(_) => break,
                }
            }
        } else {
            // Failing: keep taking items (in order, behind the held ones) until the retry.
            tokio::select! {
                item = rx.recv() => {
                    let Some(item) = item else { break };
                    hold(&w, &health, &mut held, stamp(item));
                    continue;
                }
                _ = tokio::time::sleep_until(retry_at) => {}
                _ = health.cleared.notified() => {}
                _ = shutdown.cancelled() => break,
            }
        }
        if flush(&w, &pool, &mut held, &health, &now).await {
            pause = RETRY_MIN;
            // A writer that was behind gathered batches of thousands; what trickles in
            // afterwards needs a few slots, not a buffer of the largest batch for ever.
            held.shrink_to(KEPT_SLOTS);
        } else {
            retry_at = Instant::now() + pause;
            pause = (pause * 2).min(RETRY_MAX);
        }
    }
    rx.close();
    while let Some(item) = rx.recv().await {
        hold(&w, &health, &mut held, stamp(item));
    }
    if !flush(&w, &pool, &mut held, &health, &now).await {
        tracing::error!(
            writer = w.what,
            items = held.len(),
            "stopping with items the database would not take; they are lost"
        );
    }
}

fn hold<T>(w: &Writer<T>, health: &Health, held: &mut VecDeque<Stamped<T>>, item: Stamped<T>) {
    let mut dropped = 0;
    while held.len() >= w.hold.max(1) {
        held.pop_front();
        dropped += 1;
    }
    if dropped > 0 {
        tracing::warn!(
            writer = w.what,
            hold = w.hold,
            "the database has refused writes for so long that the oldest held item is dropped"
        );
    }
    held.push_back(item);
    health.holding(w.what, held.len(), dropped);
}

/// Writes everything held, a batch at a time; false (and the rest still held) on failure.
async fn flush<T>(
    w: &Writer<T>,
    pool: &Pool,
    held: &mut VecDeque<Stamped<T>>,
    health: &Health,
    now: &Now,
) -> bool {
    while !held.is_empty() {
        let n = held.len().min(w.batch.max(1));
        let batch = &held.make_contiguous()[..n];
        // A write that never returns (a lock another process holds for ever, a connection
        // that went silent) becomes a failure: the batch is held and tried again.
        let written = match tokio::time::timeout(WRITE_TIMEOUT, (w.write)(pool, batch)).await {
            Ok(r) => r,
            Err(_) => Err(sqlx::Error::Io(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("the write took over {} s", WRITE_TIMEOUT.as_secs()),
            ))),
        };
        match written {
            Ok(()) => {
                held.drain(..n);
                health
                    .committed
                    .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
            }
            Err(e) => {
                health.failed(w.what, &e, now());
                health.holding(w.what, held.len(), 0);
                return false;
            }
        }
    }
    health.wrote(w.what, 0);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    static REFUSE: AtomicBool = AtomicBool::new(false);

    /// Writes numbers into table `n`, or refuses like a full disk while REFUSE is set.
    fn write_numbers<'a>(
        pool: &'a Pool,
        items: &'a [Stamped<i64>],
    ) -> BoxFuture<'a, Result<(), sqlx::Error>> {
        Box::pin(async move {
            if REFUSE.load(Ordering::SeqCst) {
                return Err(sqlx::Error::Protocol("disk is full (test)".into()));
            }
            let mut tx = pool.begin().await?;
            for s in items {
                sqlx::query("INSERT INTO n (v) VALUES ($1)")
                    .bind(s.item)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await
        })
    }

    #[tokio::test]
    async fn holds_items_through_a_fault_in_order_and_drops_only_beyond_the_hold() {
        sqlx::any::install_default_drivers();
        let pool = sqlx::any::AnyPoolOptions::new()
            .max_connections(1)
            .connect("sqlite::memory:")
            .await
            .unwrap();
        sqlx::query("CREATE TABLE n (id INTEGER PRIMARY KEY, v INTEGER)")
            .execute(&pool)
            .await
            .unwrap();
        let health = Arc::new(Health::default());
        let (tx, rx) = mpsc::channel(4);
        let token = CancellationToken::new();
        let writer = tokio::spawn(run(
            Writer {
                what: "numbers",
                batch: 3,
                linger: Duration::from_millis(5),
                hold: 50,
                write: write_numbers,
            },
            pool.clone(),
            rx,
            token.clone(),
            crate::clock::wall_clock(),
            health.clone(),
        ));
        REFUSE.store(true, Ordering::SeqCst);
        // More than the channel holds: the writer keeps taking them while failing.
        for v in 0..60 {
            tokio::time::timeout(Duration::from_secs(2), tx.send(v))
                .await
                .expect("a failing writer never blocks its senders")
                .unwrap();
        }
        // All 60 taken (the last four may still be in the channel when send returns).
        let state = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                let s = health.writers()["numbers"].clone();
                if s.held + s.dropped as usize == 60 {
                    break s;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("the writer takes every item");
        assert_eq!((state.held, state.dropped), (50, 10), "{state:?}");
        assert!(state.errors >= 1);
        let (failure, held) = health.problem().expect("a problem is reported");
        assert_eq!(
            failure.error,
            describe(&sqlx::Error::Protocol("disk is full (test)".into()))
        );
        assert_eq!(held, 50);

        // One more while the hold is full: the oldest held goes too.
        tx.send(60).await.unwrap();
        while health.writers()["numbers"].dropped < 11 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        REFUSE.store(false, Ordering::SeqCst);
        let written: Vec<i64> = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                let v: Vec<i64> = sqlx::query_scalar("SELECT v FROM n ORDER BY id")
                    .fetch_all(&pool)
                    .await
                    .unwrap();
                if v.len() >= 50 {
                    break v;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await
        .expect("the held items are written once the database takes them");
        assert_eq!(
            written,
            (11..=60).collect::<Vec<_>>(),
            "in order, the oldest eleven dropped"
        );
        assert_eq!(health.problem(), None, "recovered");
        assert_eq!(health.writers()["numbers"].held, 0);
        token.cancel();
        writer.await.unwrap();
    }
}

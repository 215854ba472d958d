//! What `/metrics` counts for one cluster.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

use lookout_app::model::Kind;

/// Counters of one cluster, since start.
#[derive(Debug, Default)]
pub struct Counters {
    /// Failed watch calls (410 relists excluded).
    pub watch_errors: AtomicU64,
    /// Initial lists and relists started.
    pub relists: AtomicU64,
    /// Times a watcher had to wait for the history writer.
    pub history_waits: AtomicU64,
    /// Evaluations of every rule on the whole cluster (a start, a relist, a change of sync
    /// state or of a cluster-scoped object, time passing).
    pub evaluations_whole: AtomicU64,
    /// Evaluations of the namespaced rules on one namespace after a change in it.
    pub evaluations_namespace: AtomicU64,
    /// Objects that could not be cached at all, by kind.
    skipped: Mutex<BTreeMap<Kind, u64>>,
}

impl Counters {
    /// Counts an object of `kind` that could not be cached; true the first time for that
    /// kind (to log it once).
    pub fn skip(&self, kind: Kind) -> bool {
        let mut skipped = self.skipped.lock().expect("skipped lock");
        let n = skipped.entry(kind).or_default();
        *n += 1;
        *n == 1
    }

    /// Objects skipped so far, by kind.
    pub fn skipped(&self) -> BTreeMap<Kind, u64> {
        self.skipped.lock().expect("skipped lock").clone()
    }
}

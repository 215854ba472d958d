//! What is derived from one cluster's cache: its findings, and on demand its Ingress rows,
//! its problems and its recent Tailscale Ingresses. Computed once per generation of the cache
//! (concurrent readers wait for that one computation); when only time passed, served as it is
//! for a while and then recomputed in the background.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use lookout_app::model::data::{ClusterData, ClusterFacts};
use lookout_app::model::read::lists::IngressRows;
use lookout_app::model::read::problems::{self, Problem};
use lookout_app::model::read::Visibility;
use lookout_app::model::rules::evaluate;
use lookout_app::model::rules::tailscale::{self, TailnetIngress};
use lookout_app::model::thresholds::Thresholds;
use lookout_app::model::{Finding, SyncState};

use super::record::ClusterRecord;

/// What is derived from the cluster's data at one generation: its findings and, once a
/// reader asked for them, the rest.
struct Derived {
    generation: u64,
    /// When it was computed (tokio's clock, so tests can move it).
    at: tokio::time::Instant,
    findings: Arc<Vec<Finding>>,
    rows: OnceLock<Arc<IngressRows>>,
    /// The problems as a caller who sees the whole cluster sees them.
    problems: OnceLock<Arc<Vec<Problem>>>,
    /// The Tailscale Ingresses of the last week (the fleet's `tailscale.cert-budget`).
    tailnet: OnceLock<Arc<Vec<TailnetIngress>>>,
}

/// The derived data of one cluster at the latest generation a reader asked for.
pub(super) struct DerivedCache {
    thresholds: Arc<Thresholds>,
    current: Mutex<Option<Arc<Derived>>>,
    /// Whether a background recomputation is running.
    refreshing: AtomicBool,
    /// How long derived data is served as it is when nothing changed; after that it is
    /// recomputed in the background (time-based rules move on) while the old is served.
    ttl: Duration,
}

impl DerivedCache {
    pub(super) fn new(thresholds: Arc<Thresholds>) -> Self {
        DerivedCache {
            thresholds,
            current: Mutex::new(None),
            refreshing: AtomicBool::new(false),
            ttl: Duration::from_secs(5),
        }
    }

    /// Sets how long derived data is served unchanged while the data does not change.
    pub(super) fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }
}

impl ClusterRecord {
    /// Every finding of the cluster.
    pub fn findings(self: &Arc<Self>) -> Arc<Vec<Finding>> {
        self.derived().findings.clone()
    }

    /// The Ingress rows of this cluster, built with the findings they summarise.
    pub fn ingress_rows(self: &Arc<Self>) -> Arc<IngressRows> {
        let d = self.derived();
        d.rows
            .get_or_init(|| {
                let facts = self.facts();
                let data = self.read(ClusterData::clone);
                self.build_rows(&d.findings, &facts, &data)
            })
            .clone()
    }

    /// The problems of this cluster for a caller who sees all of it.
    pub fn problems(self: &Arc<Self>) -> Arc<Vec<Problem>> {
        let d = self.derived();
        d.problems
            .get_or_init(|| {
                let facts = self.facts();
                let now = (self.now)();
                Arc::new(self.read(|data| {
                    problems::cluster_problems(&facts, data, &d.findings, |_| true, now)
                }))
            })
            .clone()
    }

    /// This cluster's Tailscale Ingresses made in the last week, for the tailnet budgets —
    /// kept with the derived data, so that a page does not scan every Ingress for them.
    pub fn tailnet_ingresses(self: &Arc<Self>) -> Arc<Vec<TailnetIngress>> {
        self.derived()
            .tailnet
            .get_or_init(|| {
                let facts = self.facts();
                let now = (self.now)();
                Arc::new(self.read(|data| tailscale::recent_ingresses(&facts, data, now)))
            })
            .clone()
    }

    /// The problems of this cluster built from what `visible` sees of its findings (for a
    /// caller who does not see all of it; not cached).
    pub fn problems_for(self: &Arc<Self>, visible: &Visibility<'_>) -> Vec<Problem> {
        let (findings, facts) = (self.findings(), self.facts());
        if !findings.iter().any(|f| visible.finding(f)) {
            return Vec::new();
        }
        let now = (self.now)();
        self.read(|data| {
            problems::cluster_problems(&facts, data, &findings, |f| visible.finding(f), now)
        })
    }

    /// Once every kind is listed, computes the derived data on the blocking pool, so the
    /// first page after a start or a relist does not wait for it (readers that come while it
    /// runs wait for this computation instead of starting their own).
    pub fn warm_up(self: &Arc<Self>) {
        if !self.sync.read(|s| matches!(s.state, SyncState::Synced)) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let this = self.clone();
        runtime.spawn_blocking(move || {
            this.ingress_rows();
            this.problems();
            crate::memory::release_thread_cache();
        });
    }

    /// The derived data for the current generation. After a change it is computed here, once
    /// (concurrent readers wait for that one computation), so a reader always sees the change;
    /// when only time passed it is served as it is and recomputed in the background.
    fn derived(self: &Arc<Self>) -> Arc<Derived> {
        let generation = self.cache.generation();
        let mut current = self.derived.current.lock().expect("derived lock");
        if let Some(d) = current.as_ref().filter(|d| d.generation == generation) {
            if d.at.elapsed() >= self.derived.ttl {
                self.refresh_in_background(d);
            }
            return d.clone();
        }
        let d = Arc::new(self.derive(generation, (false, false)));
        *current = Some(d.clone());
        d
    }

    /// Starts recomputing `stale` on the low-priority background thread (one at a time per
    /// cluster); the old data is served meanwhile.
    fn refresh_in_background(self: &Arc<Self>, stale: &Derived) {
        if self.derived.refreshing.swap(true, Ordering::AcqRel) {
            return;
        }
        let (this, generation, with) = (
            self.clone(),
            stale.generation,
            (stale.rows.get().is_some(), stale.problems.get().is_some()),
        );
        /// Lets the next recomputation start when this one ends, however it ends (a job
        /// that panics, or one the background thread never runs, is dropped).
        struct Refreshing(Arc<ClusterRecord>);
        impl Drop for Refreshing {
            fn drop(&mut self) {
                self.0.derived.refreshing.store(false, Ordering::Release);
            }
        }
        let guard = Refreshing(this);
        crate::background::run(move || {
            let this = &guard.0;
            let fresh = Arc::new(this.derive(generation, with));
            crate::memory::release_thread_cache();
            let mut current = this.derived.current.lock().expect("derived lock");
            // A change in the meantime was computed by a reader; keep that.
            if current.as_ref().is_some_and(|d| d.generation == generation) {
                *current = Some(fresh);
            }
        });
    }

    /// Computes the derived data from a copy of the data (the views are shared, only the maps
    /// are copied), so the watchers are not held up while the rules run.
    fn derive(&self, generation: u64, (with_rows, with_problems): (bool, bool)) -> Derived {
        let facts = self.facts();
        let now = (self.now)();
        let started = Instant::now();
        let data = self.read(ClusterData::clone);
        let findings = Arc::new(evaluate(&facts, &data, now, &self.derived.thresholds));
        tracing::debug!(cluster = %self.name, findings = findings.len(), ms = started.elapsed().as_millis() as u64, "findings computed");
        let rows = OnceLock::new();
        if with_rows {
            let _ = rows.set(self.build_rows(&findings, &facts, &data));
        }
        let problems = OnceLock::new();
        if with_problems {
            let _ = problems.set(Arc::new(problems::cluster_problems(
                &facts,
                &data,
                &findings,
                |_| true,
                now,
            )));
        }
        Derived {
            generation,
            at: tokio::time::Instant::now(),
            findings,
            rows,
            problems,
            tailnet: OnceLock::new(),
        }
    }

    fn build_rows(
        &self,
        findings: &[Finding],
        facts: &ClusterFacts,
        data: &ClusterData,
    ) -> Arc<IngressRows> {
        let started = Instant::now();
        let rows = lookout_app::model::read::lists::ingress_rows(findings, facts, data);
        tracing::debug!(cluster = %self.name, ingresses = data.ingresses.len(), ms = started.elapsed().as_millis() as u64, "Ingress rows built");
        Arc::new(rows)
    }
}

//! What is derived from one cluster's cache: its findings, and on demand its Ingress rows,
//! its problems and its recent Tailscale Ingresses. Computed once per generation of the cache
//! (concurrent readers wait for that one computation); when only time passed, served as it is
//! for a while and then recomputed in the background.
//!
//! The findings follow the changes: the rules that judge a namespace's objects from that
//! namespace alone are evaluated again only for the namespaces that changed, and the rules
//! that read across namespaces (see [`Rules::Across`]) for the whole cluster; the Ingress
//! rows are made again only for the namespaces whose objects or findings changed. A relist,
//! a change of sync state or of a cluster-scoped object, and the passing of time evaluate
//! everything again.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use lookout_app::model::data::{ClusterData, ClusterFacts};
use lookout_app::model::finding::sort_by_urgency;
use lookout_app::model::read::lists::{ingress_rows, ingress_rows_of, IngressRows};
use lookout_app::model::read::problems::{self, Problem};
use lookout_app::model::rules::tailscale::{self, TailnetIngress};
use lookout_app::model::rules::{across_namespaces, evaluate_split, Rules, Split};
use lookout_app::model::text::Text;
use lookout_app::model::thresholds::Thresholds;
use lookout_app::model::{Finding, SyncState};

use super::cache::Changes;
use super::record::ClusterRecord;

/// What is derived from the cluster's data at one generation: its findings and, once a
/// reader asked for them, the rest.
struct Derived {
    generation: u64,
    /// When the whole cluster was last evaluated (tokio's clock, so tests can move it): the
    /// time-based rules of namespaces that did not change are as old as that.
    at: tokio::time::Instant,
    findings: Arc<Vec<Finding>>,
    rows: OnceLock<Arc<IngressRows>>,
    /// The problems as a caller who sees the whole cluster sees them.
    problems: OnceLock<Arc<Vec<Problem>>>,
    /// The Tailscale Ingresses of the last week (the fleet's `tailscale.cert-budget`).
    tailnet: OnceLock<Arc<Vec<TailnetIngress>>>,
    /// Each Ingress's and Certificate's severity, from the problems.
    health: OnceLock<Arc<problems::Health>>,
}

/// The findings with the changes they follow, and the Ingress rows by namespace. The
/// findings are one list (held by the derived data, and by problems through it): a change
/// replaces its namespaces' findings of the namespaced rules and the findings across
/// namespaces in a new list, sharing the rest.
#[derive(Default)]
struct Parts {
    /// The changes the findings are evaluated at; None before the first evaluation.
    changes: Option<Changes>,
    findings: Arc<Vec<Finding>>,
    /// When the whole cluster was last evaluated.
    evaluated: Option<tokio::time::Instant>,
    rows: IngressRows,
    /// The namespaces whose rows are to be made again; None: all of them.
    stale_rows: Option<BTreeSet<Text>>,
}

impl Parts {
    /// Takes the evaluation of the whole cluster at `changes`. When nothing changed since
    /// the last evaluation (only time passed), the rows of the namespaces whose findings are
    /// the same stay as they are.
    fn evaluated(&mut self, split: Split, changes: Changes) {
        let mut findings = split.namespaced;
        findings.extend(split.across);
        sort_by_urgency(&mut findings);
        findings.shrink_to_fit();
        let findings = Arc::new(findings);
        if self.changes.as_ref() == Some(&changes) {
            self.stale_where_changed(&findings, |_| true);
        } else {
            self.stale_rows = None;
        }
        self.findings = findings;
        self.changes = Some(changes);
        self.evaluated = Some(tokio::time::Instant::now());
    }

    /// Takes the namespaced findings of the `changed` namespaces, evaluated again, and the
    /// findings across namespaces: the rows of the changed namespaces are stale, and of each
    /// namespace whose findings across namespaces changed — all of them when a finding about
    /// a cluster-scoped object did (any Ingress's chain may hold it).
    fn changed(&mut self, changed: &[String], found: Vec<Vec<Finding>>, across: Vec<Finding>) {
        let changed: BTreeSet<&str> = changed.iter().map(String::as_str).collect();
        let kept = self
            .findings
            .iter()
            .filter(|f| !across_namespaces(f) && !changed.contains(&*f.namespace));
        let mut findings: Vec<Finding> = kept.cloned().collect();
        findings.extend(found.into_iter().flatten());
        findings.extend(across);
        sort_by_urgency(&mut findings);
        findings.shrink_to_fit();
        let findings = Arc::new(findings);
        for ns in changed {
            self.stale_row(ns);
        }
        self.stale_where_changed(&findings, across_namespaces);
        self.findings = findings;
    }

    /// Marks stale the rows of each namespace whose findings `of` differ between the current
    /// findings and `new`.
    fn stale_where_changed(&mut self, new: &[Finding], of: impl Fn(&Finding) -> bool) {
        let before = by_namespace(self.findings.iter().filter(|f| of(f)));
        let after = by_namespace(new.iter().filter(|f| of(f)));
        let changed: Vec<Text> = before
            .keys()
            .chain(after.keys())
            .filter(|ns| before.get(*ns) != after.get(*ns))
            .map(|ns| Text::from(*ns))
            .collect();
        for ns in changed {
            if ns.is_empty() {
                self.stale_rows = None;
            }
            self.stale_row(&ns);
        }
    }

    fn stale_row(&mut self, namespace: &str) {
        if let Some(stale) = &mut self.stale_rows {
            stale.insert(Text::from(namespace));
        }
    }
}

/// Findings by the namespace of their object, each namespace's in their order.
fn by_namespace<'f>(
    findings: impl Iterator<Item = &'f Finding>,
) -> BTreeMap<&'f str, Vec<&'f Finding>> {
    let mut out: BTreeMap<&str, Vec<&Finding>> = BTreeMap::new();
    for f in findings {
        out.entry(&*f.namespace).or_default().push(f);
    }
    out
}

/// The derived data of one cluster at the latest generation a reader asked for.
pub(super) struct DerivedCache {
    thresholds: Arc<Thresholds>,
    current: Mutex<Option<Arc<Derived>>>,
    parts: Mutex<Parts>,
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
            parts: Mutex::new(Parts::default()),
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

/// How derived data is to be computed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Evaluate {
    /// What changed since the last evaluation (everything when that cannot be told apart).
    Changes,
    /// Everything: time has passed.
    Everything,
}

impl ClusterRecord {
    /// Every finding of the cluster.
    pub fn findings(self: &Arc<Self>) -> Arc<Vec<Finding>> {
        self.derived().findings.clone()
    }

    /// The Ingress rows of this cluster, built with the findings they summarise.
    pub fn ingress_rows(self: &Arc<Self>) -> Arc<IngressRows> {
        let d = self.derived();
        d.rows.get_or_init(|| self.rows(&d)).clone()
    }

    /// The problems of this cluster for a caller who sees all of it.
    pub fn problems(self: &Arc<Self>) -> Arc<Vec<Problem>> {
        let d = self.derived();
        self.problems_of(&d).clone()
    }

    /// The problems of `d`, judged once over the whole cluster for every reader.
    fn problems_of<'d>(&self, d: &'d Derived) -> &'d Arc<Vec<Problem>> {
        d.problems.get_or_init(|| {
            let facts = self.facts();
            let now = (self.now)();
            Arc::new(self.read(|data| problems::cluster_problems(&facts, data, &d.findings, now)))
        })
    }

    /// The severity of each Ingress and Certificate of this cluster that a problem reaches
    /// (the lists' health column), from the problems of this generation.
    pub fn health(self: &Arc<Self>) -> Arc<problems::Health> {
        let d = self.derived();
        if let Some(h) = d.health.get() {
            return h.clone();
        }
        let problems = self.problems_of(&d);
        d.health
            .get_or_init(|| Arc::new(problems::health(problems)))
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
        let d = Arc::new(self.derive(generation, Evaluate::Changes, (false, false)));
        *current = Some(d.clone());
        // A change evaluates what changed; the time-based findings of the rest move on with
        // the whole cluster's evaluation, however often things change.
        if d.at.elapsed() >= self.derived.ttl {
            self.refresh_in_background(&d);
        }
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
            let fresh = Arc::new(this.derive(generation, Evaluate::Everything, with));
            crate::memory::release_thread_cache();
            let mut current = this.derived.current.lock().expect("derived lock");
            // A change in the meantime was computed by a reader; keep that.
            if current.as_ref().is_some_and(|d| d.generation == generation) {
                *current = Some(fresh);
            }
        });
    }

    /// Computes the derived data of `generation`: the findings of what changed since the
    /// last evaluation (the changed namespaces and the rules across namespaces, with the data
    /// read-locked: a few milliseconds), or of everything — then from a copy of the data (the
    /// views are shared, only the maps are copied), so the watchers are not held up while
    /// every rule runs.
    fn derive(
        &self,
        generation: u64,
        how: Evaluate,
        (with_rows, with_problems): (bool, bool),
    ) -> Derived {
        // Before the facts and the data: what is read afterwards is at least as new.
        let changes = self.cache.changes();
        let facts = self.facts();
        let now = (self.now)();
        let started = Instant::now();
        let t = &*self.derived.thresholds;
        let mut parts = self.derived.parts.lock().expect("derived parts lock");
        let since = parts.changes.as_ref().filter(|before| {
            how == Evaluate::Changes
                && before.epoch == changes.epoch
                && before.cluster_scoped() == changes.cluster_scoped()
        });
        let evaluated = match since {
            Some(before) => {
                let changed: Vec<String> = changes
                    .namespaces
                    .iter()
                    .filter(|(ns, g)| !ns.is_empty() && before.namespaces.get(*ns) != Some(*g))
                    .map(|(ns, _)| ns.clone())
                    .collect();
                let (found, across) = self.read(|data| {
                    let found: Vec<Vec<Finding>> = changed
                        .iter()
                        .map(|ns| {
                            evaluate_split(&facts, &data.namespace(ns), now, t, Rules::Namespaced)
                                .namespaced
                        })
                        .collect();
                    (
                        found,
                        evaluate_split(&facts, data, now, t, Rules::Across).across,
                    )
                });
                self.counters
                    .evaluations_namespace
                    .fetch_add(changed.len() as u64, Ordering::Relaxed);
                parts.changed(&changed, found, across);
                parts.changes = Some(changes);
                format!("{} namespaces", changed.len())
            }
            None => {
                // The whole cluster, from a copy, without holding up the readers of the parts.
                drop(parts);
                let data = self.read(ClusterData::clone);
                let split = evaluate_split(&facts, &data, now, t, Rules::All);
                self.counters
                    .evaluations_whole
                    .fetch_add(1, Ordering::Relaxed);
                parts = self.derived.parts.lock().expect("derived parts lock");
                parts.evaluated(split, changes);
                "everything".to_string()
            }
        };
        let findings = parts.findings.clone();
        let at = parts.evaluated.unwrap_or_else(tokio::time::Instant::now);
        tracing::debug!(cluster = %self.name, evaluated, findings = findings.len(), ms = started.elapsed().as_millis() as u64, "findings computed");
        let rows = OnceLock::new();
        if with_rows {
            let _ = rows.set(self.rows_from(&mut parts, &findings, &facts));
        }
        drop(parts);
        let problems = OnceLock::new();
        if with_problems {
            let _ =
                problems.set(Arc::new(self.read(|data| {
                    problems::cluster_problems(&facts, data, &findings, now)
                })));
        }
        Derived {
            generation,
            at,
            findings,
            rows,
            problems,
            tailnet: OnceLock::new(),
            health: OnceLock::new(),
        }
    }

    /// The Ingress rows of `d`: the stale namespaces' made again when the parts still hold
    /// its findings, else all of them (the parts moved on).
    fn rows(&self, d: &Derived) -> Arc<IngressRows> {
        let facts = self.facts();
        let mut parts = self.derived.parts.lock().expect("derived parts lock");
        if Arc::ptr_eq(&parts.findings, &d.findings) {
            return self.rows_from(&mut parts, &d.findings, &facts);
        }
        drop(parts);
        let data = self.read(ClusterData::clone);
        Arc::new(ingress_rows(&d.findings, &facts, &data))
    }

    /// The rows of the parts, the stale ones made again from `findings` (the parts' own).
    fn rows_from(
        &self,
        parts: &mut Parts,
        findings: &[Finding],
        facts: &ClusterFacts,
    ) -> Arc<IngressRows> {
        let started = Instant::now();
        let remade = match parts.stale_rows.take() {
            None => {
                let data = self.read(ClusterData::clone);
                parts.rows = ingress_rows(findings, facts, &data);
                parts.rows.len()
            }
            Some(stale) => {
                self.read(|data| {
                    for ns in &stale {
                        // The findings a chain of the namespace may hold: its own and those
                        // about cluster-scoped objects.
                        let about: Vec<&Finding> = findings
                            .iter()
                            .filter(|f| f.namespace == *ns || f.namespace.is_empty())
                            .collect();
                        let part = data.namespace(ns);
                        match ingress_rows_of(&about, facts, &part).remove(ns) {
                            Some(rows) => parts.rows.insert(ns.clone(), rows),
                            None => parts.rows.remove(ns),
                        };
                    }
                });
                stale.len()
            }
        };
        parts.stale_rows = Some(BTreeSet::new());
        tracing::debug!(cluster = %self.name, namespaces = remade, ms = started.elapsed().as_millis() as u64, "Ingress rows made");
        Arc::new(parts.rows.clone())
    }
}

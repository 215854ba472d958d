//! One configured cluster: its sync state per kind, its cached data, and its findings.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use lookout_app::model::data::{ClusterData, ClusterFacts, ClusterOverrides};
use lookout_app::model::interner::Interner;
use lookout_app::model::read::lists::IngressRows;
use lookout_app::model::read::problems::{self, Problem};
use lookout_app::model::read::Visibility;
use lookout_app::model::rules::evaluate;
use lookout_app::model::rules::tailscale::{self, TailnetIngress};
use lookout_app::model::thresholds::Thresholds;
use lookout_app::model::{ClusterView, Finding, Kind, KindState, SyncState};
use tokio::sync::mpsc;

use super::complaints::Complaints;
use super::counters::Counters;
use super::sync::{Moved, SyncStatus};
use crate::clock::Now;
use lookout_app::model::cluster::SyncEvent;
use lookout_app::model::history::HistoryEvent;

/// What is derived from the cluster's data at one generation: its findings and, once a list
/// asked for them, the Ingress rows.
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

/// One configured cluster.
pub struct ClusterRecord {
    pub name: String,
    pub overrides: ClusterOverrides,
    thresholds: Arc<Thresholds>,
    now: Now,
    sync: RwLock<SyncStatus>,
    /// Every watched kind, projected.
    data: RwLock<ClusterData>,
    /// Shared copies of the strings the views repeat.
    strings: Mutex<Interner>,
    /// Bumped on every change of data or state; keys the derived data.
    generation: AtomicU64,
    /// Changes per namespace ("" for cluster-scoped objects), and of everything at once
    /// (relists, sync state): what a namespace-scoped caller's live revision is made of, so
    /// that it does not move with other namespaces' activity.
    namespace_generations: Mutex<std::collections::HashMap<String, u64>>,
    epoch: AtomicU64,
    /// The fleet's change counter that live updates (SSE) wait on.
    changes: crate::fleet::Changes,
    /// Findings and rows at the latest generation a reader asked for.
    derived: Mutex<Option<Arc<Derived>>>,
    /// Whether a background recomputation of `derived` is running.
    refreshing: AtomicBool,
    /// Bumped when the API server answers the probe while something is in error: the
    /// watchers start over with fresh requests — all of them (`true`) after the probe itself
    /// failed (their requests may hang), else those whose kind is in error.
    reconnects: tokio::sync::watch::Sender<(u64, bool)>,
    /// How long derived data is served as it is when nothing changed; after that it is
    /// recomputed in the background (time-based rules move on) while the old is served.
    findings_ttl: Duration,
    events: mpsc::Sender<SyncEvent>,
    /// Where history events go; None when history is off.
    history: Option<mpsc::Sender<HistoryEvent>>,
    /// What `/metrics` counts.
    pub counters: Counters,
    /// Failures not yet mentioned in the log (see [`super::complaints`]).
    complaints: Mutex<Complaints>,
}

impl ClusterRecord {
    pub fn new(
        name: String,
        overrides: ClusterOverrides,
        thresholds: Arc<Thresholds>,
        now: Now,
        events: mpsc::Sender<SyncEvent>,
        history: Option<mpsc::Sender<HistoryEvent>>,
        changes: crate::fleet::Changes,
    ) -> Self {
        ClusterRecord {
            name,
            overrides,
            thresholds,
            now,
            sync: RwLock::new(SyncStatus::new()),
            data: RwLock::new(ClusterData::default()),
            strings: Mutex::new(Interner::default()),
            generation: AtomicU64::new(0),
            namespace_generations: Mutex::default(),
            epoch: AtomicU64::new(0),
            changes,
            derived: Mutex::new(None),
            refreshing: AtomicBool::new(false),
            reconnects: tokio::sync::watch::Sender::new((0, false)),
            findings_ttl: Duration::from_secs(5),
            events,
            history,
            counters: Counters::default(),
            complaints: Mutex::default(),
        }
    }

    /// Sets how long findings are served unchanged while the data does not change.
    pub fn with_findings_ttl(mut self, ttl: Duration) -> Self {
        self.findings_ttl = ttl;
        self
    }

    /// Hands a history event to the writer. A full queue makes the watcher wait (and says
    /// so) rather than drop the event.
    pub async fn record_history(&self, ev: HistoryEvent) {
        let Some(tx) = &self.history else { return };
        match tx.try_send(ev) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(ev)) => {
                self.counters.history_waits.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(cluster = %self.name, "the history writer is behind; this watcher waits for it");
                if tx.send(ev).await.is_err() {
                    tracing::error!(cluster = %self.name, "the history writer has stopped; an event is not recorded");
                }
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {
                tracing::error!(cluster = %self.name, "the history writer has stopped; an event is not recorded")
            }
        }
    }

    /// An object of `kind` could not be cached (`why`); counted, and logged the first time.
    pub fn skip(&self, kind: Kind, why: &str, namespace: Option<&str>) {
        if self.counters.skip(kind) {
            tracing::warn!(cluster = %self.name, kind = kind.name(), why, namespace, "an object cannot be cached and is skipped (counted in lookout_objects_skipped_total)");
        }
    }

    /// A watch or probe failed (`what`): logged at once when the cluster was healthy, then at
    /// most once a minute with the number of failures held back. The state change itself is
    /// logged by `settle`; every failure is counted in `/metrics` and shown on the pages.
    pub fn complain(&self, kind: Kind, what: &str) {
        let held = self
            .complaints
            .lock()
            .expect("complaints lock")
            .failed(Instant::now());
        if let Some(held) = held {
            tracing::warn!(cluster = %self.name, kind = kind.name(), held_back = held, "{what}");
        }
    }

    /// Objects cached per watched kind.
    pub fn kind_counts(&self) -> Vec<(Kind, usize)> {
        self.sync
            .read()
            .expect("sync lock")
            .kinds
            .values()
            .map(|k| (k.kind, k.objects))
            .collect()
    }

    /// The one-word sync state.
    pub fn state_label(&self) -> &'static str {
        self.sync.read().expect("sync lock").state.label()
    }

    /// Changes the cached data.
    pub fn update<T>(&self, f: impl FnOnce(&mut ClusterData) -> T) -> T {
        let out = f(&mut self.data.write().expect("data lock"));
        self.changed();
        out
    }

    /// Changes the cached data with the interner at hand (projections).
    pub fn update_with_strings<T>(
        &self,
        f: impl FnOnce(&mut ClusterData, &mut Interner) -> T,
    ) -> T {
        let mut strings = self.strings.lock().expect("interner lock");
        self.update(|d| f(d, &mut strings))
    }

    /// Runs `f` with the interner (projecting into a relist buffer).
    pub fn with_strings<T>(&self, f: impl FnOnce(&mut Interner) -> T) -> T {
        f(&mut self.strings.lock().expect("interner lock"))
    }

    /// Forgets interned strings no view uses any more (after a relist).
    pub fn prune_strings(&self) {
        self.strings.lock().expect("interner lock").prune();
    }

    /// Reads the cached data.
    pub fn read<T>(&self, f: impl FnOnce(&ClusterData) -> T) -> T {
        f(&self.data.read().expect("data lock"))
    }

    /// Changes the state of one kind and recomputes the cluster's state from all kinds.
    pub fn set_kind(&self, kind: Kind, state: KindState, objects: usize) {
        let now = (self.now)();
        let changed = self
            .sync
            .write()
            .expect("sync lock")
            .set_kind(kind, state, objects, now);
        self.after_sync_change(changed, now);
    }

    /// Records whether the API server can be reached (`Err` says why not) and recomputes the
    /// cluster's state.
    fn set_reachable(&self, reachable: Result<(), String>) {
        let now = (self.now)();
        let changed = self
            .sync
            .write()
            .expect("sync lock")
            .set_reachable(reachable, now);
        self.after_sync_change(changed, now);
    }

    /// After a change of the sync state (None: nothing changed): when the cluster moved to
    /// another state, logs it and tells the sync-event writer; wakes the live updates.
    fn after_sync_change(&self, changed: Option<Option<Moved>>, now: DateTime<Utc>) {
        let Some(moved) = changed else { return };
        if let Some(Moved { from, to }) = moved {
            let error = match &to {
                SyncState::Stale { error, .. } | SyncState::Failed { error } => Some(error.clone()),
                _ => None,
            };
            match &error {
                Some(error) => {
                    tracing::warn!(cluster = %self.name, from, to = to.label(), error, "cluster sync state changed")
                }
                None => {
                    tracing::info!(cluster = %self.name, from, to = to.label(), "cluster sync state changed");
                    self.complaints.lock().expect("complaints lock").recovered();
                }
            }
            let ev = SyncEvent {
                cluster: self.name.clone(),
                state: to.label(),
                error,
                at: now,
            };
            if let Err(e) = self.events.try_send(ev) {
                tracing::warn!(cluster = %self.name, error = %e, "the sync-event writer is behind; this state change is not recorded");
            }
        }
        self.touch_all();
        self.changed();
    }

    /// Invalidates the findings cache and wakes the live-update streams.
    fn changed(&self) {
        self.generation.fetch_add(1, Ordering::Relaxed);
        self.changes.touch();
    }

    /// The generation of this cluster's data and state (for live updates).
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Relaxed)
    }

    /// An object of `namespace` (None: cluster-scoped) changed.
    pub fn touch_namespace(&self, namespace: Option<&str>) {
        *self
            .namespace_generations
            .lock()
            .expect("namespace generations lock")
            .entry(namespace.unwrap_or_default().to_string())
            .or_default() += 1;
    }

    /// Everything may have changed (a relist, a sync state).
    pub fn touch_all(&self) {
        self.epoch.fetch_add(1, Ordering::Relaxed);
    }

    /// A number that moves when something `visible` sees of this cluster changes: the whole
    /// cluster's generation for who sees all of it; else its epoch and the generations of
    /// the visible namespaces and of cluster-scoped objects (which their findings read).
    pub fn visible_generation(&self, visible: &Visibility<'_>) -> u64 {
        use std::hash::{Hash, Hasher};
        if visible.whole_cluster() {
            return self.generation();
        }
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.epoch.load(Ordering::Relaxed).hash(&mut h);
        let gens = self
            .namespace_generations
            .lock()
            .expect("namespace generations lock");
        let mut seen: Vec<(&String, &u64)> = gens
            .iter()
            .filter(|(ns, _)| ns.is_empty() || visible.namespace(ns))
            .collect();
        seen.sort();
        seen.hash(&mut h);
        h.finish()
    }

    /// Updates a kind's object count without changing its state.
    pub fn set_count(&self, kind: Kind, objects: usize) {
        let now = (self.now)();
        self.sync
            .write()
            .expect("sync lock")
            .set_count(kind, objects, now);
    }

    /// A receiver that wakes when watchers should start over (see `probed`).
    pub fn reconnects(&self) -> tokio::sync::watch::Receiver<(u64, bool)> {
        self.reconnects.subscribe()
    }

    /// The outcome of a health probe of the API server. While it fails, the cluster is in
    /// error. When it answers: after a failed probe every watcher starts over (their requests
    /// may hang for minutes); otherwise the watchers whose kind is in error do (a watch that
    /// resumed quietly sends nothing that would clear its error).
    pub fn probed(&self, result: Result<(), String>) {
        let (failing, kind_errors) = {
            let s = self.sync.read().expect("sync lock");
            (s.unreachable.is_some(), s.kind_errors())
        };
        match result {
            Err(error) => self.set_reachable(Err(error)),
            Ok(()) if failing => {
                tracing::info!(cluster = %self.name, "the API server answers again; watches start over");
                self.set_reachable(Ok(()));
                self.reconnects
                    .send_modify(|(n, all)| (*n, *all) = (n.wrapping_add(1), true));
            }
            Ok(()) if kind_errors => {
                self.reconnects
                    .send_modify(|(n, all)| (*n, *all) = (n.wrapping_add(1), false));
            }
            Ok(()) => {}
        }
    }

    /// Marks the whole cluster failed (no client could be built).
    pub fn fail(&self, error: String) {
        self.set_reachable(Err(error));
    }

    /// The state of one kind.
    pub fn kind_state(&self, kind: Kind) -> Option<KindState> {
        self.sync
            .read()
            .expect("sync lock")
            .kinds
            .get(&kind)
            .map(|k| k.state.clone())
    }

    /// What the rules know about the cluster itself.
    pub fn facts(&self) -> ClusterFacts {
        let s = self.sync.read().expect("sync lock");
        ClusterFacts {
            name: self.name.clone(),
            state: s.state.clone(),
            kinds: s.kinds.values().cloned().collect(),
            overrides: self.overrides.clone(),
        }
    }

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
                let all: Vec<&Finding> = d.findings.iter().collect();
                let now = (self.now)();
                Arc::new(self.read(|data| problems::cluster_problems(&facts, data, &all, now)))
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
        let mine: Vec<&Finding> = findings.iter().filter(|f| visible.finding(f)).collect();
        if mine.is_empty() {
            return Vec::new();
        }
        let now = (self.now)();
        self.read(|data| problems::cluster_problems(&facts, data, &mine, now))
    }

    /// Once every kind is listed, computes the derived data on the blocking pool, so the
    /// first page after a start or a relist does not wait for it (readers that come while it
    /// runs wait for this computation instead of starting their own).
    pub fn warm_up(self: &Arc<Self>) {
        if !matches!(
            self.sync.read().expect("sync lock").state,
            SyncState::Synced
        ) {
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
        let generation = self.generation.load(Ordering::Relaxed);
        let mut cache = self.derived.lock().expect("derived lock");
        if let Some(d) = cache.as_ref().filter(|d| d.generation == generation) {
            if d.at.elapsed() >= self.findings_ttl {
                self.refresh_in_background(d);
            }
            return d.clone();
        }
        let d = Arc::new(self.derive(generation, (false, false)));
        *cache = Some(d.clone());
        d
    }

    /// Starts recomputing `stale` on the low-priority background thread (one at a time per
    /// cluster); the old data is served meanwhile.
    fn refresh_in_background(self: &Arc<Self>, stale: &Derived) {
        if self.refreshing.swap(true, Ordering::AcqRel) {
            return;
        }
        let (this, generation, with) = (
            self.clone(),
            stale.generation,
            (stale.rows.get().is_some(), stale.problems.get().is_some()),
        );
        crate::background::run(move || {
            let fresh = Arc::new(this.derive(generation, with));
            crate::memory::release_thread_cache();
            let mut cache = this.derived.lock().expect("derived lock");
            // A change in the meantime was computed by a reader; keep that.
            if cache.as_ref().is_some_and(|d| d.generation == generation) {
                *cache = Some(fresh);
            }
            this.refreshing.store(false, Ordering::Release);
        });
    }

    /// Computes the derived data from a copy of the data (the views are shared, only the maps
    /// are copied), so the watchers are not held up while the rules run.
    fn derive(&self, generation: u64, (with_rows, with_problems): (bool, bool)) -> Derived {
        let facts = self.facts();
        let now = (self.now)();
        let started = Instant::now();
        let data = self.read(ClusterData::clone);
        let findings = Arc::new(evaluate(&facts, &data, now, &self.thresholds));
        tracing::debug!(cluster = %self.name, findings = findings.len(), ms = started.elapsed().as_millis() as u64, "findings computed");
        let rows = OnceLock::new();
        if with_rows {
            let _ = rows.set(self.build_rows(&findings, &facts, &data));
        }
        let problems = OnceLock::new();
        if with_problems {
            let all: Vec<&Finding> = findings.iter().collect();
            let _ = problems.set(Arc::new(problems::cluster_problems(
                &facts, &data, &all, now,
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

    /// The cluster as a caller who sees `visible` of it may see it.
    pub fn view(&self, visible: &Visibility<'_>) -> ClusterView {
        let ingresses = self.read(|d| {
            if visible.whole_cluster() {
                return d.ingresses.len();
            }
            d.ingresses
                .keys()
                .filter(|(ns, _)| visible.namespace(ns))
                .count()
        });
        let s = self.sync.read().expect("sync lock");
        // While every watch is open the cache is current: its last sync is now.
        let last_sync = match s.state {
            SyncState::Synced => Some((self.now)()),
            _ => s.last_sync,
        };
        // The client's own words (addresses, certificate names, API paths) are for those who
        // see the whole cluster — and the log; a namespace-scoped caller gets a sentence.
        let redact = |error: &str| {
            if visible.whole_cluster() {
                error.to_string()
            } else {
                "Lookout cannot reach this cluster's API server right now; the operators see the error.".to_string()
            }
        };
        let state = match &s.state {
            SyncState::Stale { since, error } => SyncState::Stale {
                since: *since,
                error: redact(error),
            },
            SyncState::Failed { error } => SyncState::Failed {
                error: redact(error),
            },
            other => other.clone(),
        };
        ClusterView {
            name: self.name.clone(),
            state,
            last_sync,
            last_error: s.last_error.as_deref().map(redact),
            // Object counts are the whole cluster's: only for callers who see all of it.
            kinds: if visible.whole_cluster() {
                s.kinds.values().cloned().collect()
            } else {
                Vec::new()
            },
            ingresses,
        }
    }

    /// Whether the first sync attempt has ended.
    pub fn settled(&self) -> bool {
        self.sync.read().expect("sync lock").state.settled()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicI64;

    use chrono::TimeZone;
    use kube::api::DynamicObject;
    use serde_json::json;

    use super::*;

    /// A record whose clock the test moves.
    fn record(clock: Arc<AtomicI64>) -> Arc<ClusterRecord> {
        let (events, _) = mpsc::channel(16);
        let now: Now =
            Arc::new(move || Utc.timestamp_opt(clock.load(Ordering::Relaxed), 0).unwrap());
        let record = ClusterRecord::new(
            "zrh".into(),
            ClusterOverrides::default(),
            Arc::new(Thresholds::default()),
            now,
            events,
            None,
            crate::fleet::Changes::default(),
        );
        Arc::new(record)
    }

    #[test]
    fn a_namespace_scoped_caller_gets_a_sentence_not_the_clients_error() {
        use lookout_app::model::scope::{Access, Grant, Role};
        use lookout_app::model::View;
        let record = record(Arc::new(AtomicI64::new(0)));
        let raw = "error trying to connect: tcp connect error: Connection refused (os error 111) to https://10.0.0.7:6443/apis/cert-manager.io/v1";
        record.set_reachable(Err(raw.into()));
        let all = View::whole_fleet(["zrh"]);
        let seen = record.view(&Visibility::of(&all, "zrh").unwrap());
        assert_eq!(
            seen.last_error.as_deref(),
            Some(raw),
            "operators see it all"
        );
        let grant = Grant {
            clusters: vec!["zrh".into()],
            namespaces: vec!["shop".into()],
        };
        let tenant = View::new(&Access::new(vec![(Role::Viewer, grant)]), ["zrh"]);
        let theirs = record.view(&Visibility::of(&tenant, "zrh").unwrap());
        let text = serde_json::to_string(&theirs).unwrap();
        assert!(
            !text.contains("10.0.0.7") && !text.contains("os error"),
            "{text}"
        );
        assert!(theirs.last_error.unwrap().contains("cannot reach"));
    }

    #[test]
    fn skipped_objects_are_counted_by_kind() {
        let record = record(Arc::new(AtomicI64::new(0)));
        assert!(record.counters.skipped().is_empty());
        record.skip(Kind::Ingress, "no metadata.name", Some("shop"));
        record.skip(Kind::Ingress, "no metadata.name", None);
        record.skip(Kind::Challenge, "no metadata.name", None);
        assert_eq!(
            record.counters.skipped().into_iter().collect::<Vec<_>>(),
            [(Kind::Challenge, 1), (Kind::Ingress, 2)]
        );
    }

    fn certificate(name: &str, not_after: &str) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "cert-manager.io/v1", "kind": "Certificate",
            "metadata": {"name": name, "namespace": "shop", "uid": "u-1"},
            "spec": {"secretName": format!("{name}-tls"), "dnsNames": ["shop.example.com"],
                     "issuerRef": {"name": "le", "kind": "Issuer"}},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Ready"}],
                       "notBefore": "2026-01-01T00:00:00Z", "notAfter": not_after,
                       "renewalTime": "2026-12-01T00:00:00Z"}
        }))
        .unwrap()
    }

    fn expired(findings: &[Finding]) -> Vec<String> {
        findings
            .iter()
            .filter(|f| f.rule == lookout_app::model::Rule::CertExpired)
            .map(|f| f.name.to_string())
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn a_change_shows_at_once_and_time_moves_findings_on_in_the_background() {
        let t0 = Utc
            .with_ymd_and_hms(2026, 12, 31, 0, 0, 0)
            .unwrap()
            .timestamp();
        let clock = Arc::new(AtomicI64::new(t0));
        let r = record(clock.clone());
        let add = |name: &str| {
            r.update_with_strings(|d, s| {
                super::super::kinds::watched(Kind::Certificate).apply(
                    "zrh",
                    d,
                    &certificate(name, "2027-01-01T00:00:00Z"),
                    s,
                )
            })
        };
        add("a");
        assert!(expired(&r.findings()).is_empty());
        assert_eq!(r.ingress_rows().len(), 0);

        // Time passes the notAfter: the findings computed before are served for their
        // lifetime, then once more while a recomputation runs, then the new ones.
        clock.store(t0 + 2 * 86_400, Ordering::Relaxed);
        assert!(expired(&r.findings()).is_empty(), "within the lifetime");
        tokio::time::advance(Duration::from_secs(4)).await;
        assert!(
            expired(&r.findings()).is_empty(),
            "within the lifetime (5 s)"
        );
        tokio::time::advance(Duration::from_secs(2)).await;
        assert!(expired(&r.findings()).is_empty(), "stale while recomputing");
        // The recomputation runs on the background thread, in real time.
        let deadline = Instant::now() + Duration::from_secs(10);
        while expired(&r.findings()).is_empty() {
            assert!(
                Instant::now() < deadline,
                "the background recomputation never landed"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(expired(&r.findings()), ["a"]);

        // A change is seen by the very next reader, not after the lifetime.
        add("b");
        assert_eq!(expired(&r.findings()), ["a", "b"]);
    }
}

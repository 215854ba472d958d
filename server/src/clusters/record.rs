//! One configured cluster: its cache, its sync tracker and what is derived from them, each
//! with one owner. Watchers change it only through [`ClusterRecord::apply`], with the
//! [`Step`]s their events become; pages read it.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::clusters::kinds::Object;
use lookout_app::model::data::{ClusterData, ClusterFacts, ClusterOverrides};
use lookout_app::model::probe::Observation;
use lookout_app::model::read::Visibility;
use lookout_app::model::thresholds::Thresholds;
use lookout_app::model::{ClusterView, Kind, KindState, SyncState};
use tokio::sync::mpsc;

use super::cache::Cache;
use super::counters::Counters;
use super::derived::DerivedCache;
use super::kinds::{self, Kept, Watched};
use super::sync::SyncTracker;
use crate::clock::Now;
use lookout_app::model::cluster::SyncEvent;
use lookout_app::model::history::HistoryEvent;
use lookout_app::model::text::Uid;

/// What a kind's watcher saw, as the cluster's state takes it.
pub(super) enum Step<'a> {
    /// A list starts: the first, or a relist (after a 410, an error, a restart).
    Listing,
    /// An object of the list in progress.
    Listed(&'a Object),
    /// The list is complete: it replaces the kind's cached objects.
    Relisted,
    /// An object was created or changed.
    Applied(&'a Object),
    /// An object was deleted.
    Deleted(&'a Object),
    /// The watch failed and retries with backoff: `logged` for the log, `shown` on the pages.
    Failed { logged: String, shown: String },
    /// The API server did not answer the `what` (a list, discovery) within `after`.
    Unanswered { what: &'static str, after: Duration },
    /// The kind is not served: its CRD is absent, or served at other versions only.
    Absent(KindState),
}

/// One configured cluster.
pub struct ClusterRecord {
    pub name: String,
    pub overrides: ClusterOverrides,
    pub(super) now: Now,
    pub(super) cache: Cache,
    pub(super) sync: SyncTracker,
    pub(super) derived: DerivedCache,
    /// The fleet's change counter that live updates (SSE) wait on.
    changes: crate::fleet::Changes,
    /// Where history events go; None when history is off.
    history: Option<mpsc::Sender<HistoryEvent>>,
    /// What `/metrics` counts.
    pub counters: Counters,
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
            sync: SyncTracker::new(name.clone(), events),
            name,
            overrides,
            now,
            cache: Cache::default(),
            derived: DerivedCache::new(thresholds),
            changes,
            history,
            counters: Counters::default(),
        }
    }

    /// Sets how long findings are served unchanged while the data does not change.
    pub fn with_findings_ttl(mut self, ttl: Duration) -> Self {
        self.derived = self.derived.with_ttl(ttl);
        self
    }

    /// Takes one step of a kind's watcher: the cache, the sync state and the history follow.
    /// Waits only when the history writer is behind (nothing is dropped).
    pub(super) async fn apply(self: &Arc<Self>, kind: &'static dyn Watched, step: Step<'_>) {
        if let Some(event) = self.take(kind, step) {
            self.record_history(event).await;
        }
    }

    /// [`ClusterRecord::apply`] without the wait: the history event to record, if any.
    fn take(self: &Arc<Self>, kind: &'static dyn Watched, step: Step<'_>) -> Option<HistoryEvent> {
        let k = kind.kind();
        match step {
            Step::Listing => {
                if self.kind_state(k).is_none_or(|s| {
                    matches!(
                        s,
                        KindState::NotInstalled | KindState::UnsupportedVersion { .. }
                    )
                }) {
                    self.set_kind(k, KindState::Listing, 0);
                }
                self.counters.relists.fetch_add(1, Ordering::Relaxed);
                self.cache.drop_relist(k);
                let started = (self.now)();
                self.cache
                    .relist(k, |relist, _, _| relist.started = Some(started));
                None
            }
            Step::Listed(obj) => {
                if let Some(why) = kinds::unusable(obj) {
                    self.skip(k, why, obj.metadata.namespace.as_deref());
                    return None;
                }
                self.cache.relist(k, |relist, strings, live| {
                    if !kind.apply(&self.name, &mut relist.data, obj, strings) {
                        relist.skipped += 1;
                    }
                    let event = kind.history(&self.name, obj, false, &relist.data, live);
                    if event.is_some() && kind.kept() == Kept::Objects {
                        relist
                            .live
                            .push(Uid::parse(obj.metadata.uid.as_deref().unwrap_or_default()));
                    }
                    event
                })
            }
            Step::Relisted => {
                let mut relist = self.cache.take_relist(k);
                let count = self.cache.write(|d, _| {
                    kind.replace(d, &mut relist.data);
                    kind.count(d)
                });
                self.cache.touch_all();
                self.changes.touch();
                self.cache.prune_strings();
                // The list's JSON is freed: give the memory back instead of caching it here.
                crate::memory::release_thread_cache();
                tracing::info!(cluster = %self.name, kind = k.name(), count, skipped = relist.skipped, "initial list done");
                self.set_kind(k, KindState::Synced, count);
                self.warm_up();
                (kind.kept() == Kept::Objects).then(|| HistoryEvent::Relisted {
                    cluster: self.name.clone(),
                    kind: k,
                    live: relist.live,
                    listed_from: relist.started,
                })
            }
            Step::Applied(obj) => {
                if let Some(why) = kinds::unusable(obj) {
                    self.skip(k, why, obj.metadata.namespace.as_deref());
                    return None;
                }
                let (count, event) = self.cache.write(|d, strings| {
                    kind.apply(&self.name, d, obj, strings);
                    (kind.count(d), kind.history(&self.name, obj, false, d, d))
                });
                // After the write: a caller's revision never moves ahead of the data.
                self.touch(k, obj);
                self.changes.touch();
                if self.kind_state(k) == Some(KindState::Synced) {
                    self.sync.set_count(k, count, (self.now)());
                } else {
                    self.set_kind(k, KindState::Synced, count);
                }
                event
            }
            Step::Deleted(obj) => {
                let (count, event) = self.cache.write(|d, _| {
                    kind.remove(d, obj);
                    (kind.count(d), kind.history(&self.name, obj, true, d, d))
                });
                // After the write: a caller's revision never moves ahead of the data.
                self.touch(k, obj);
                self.changes.touch();
                self.sync.set_count(k, count, (self.now)());
                event
            }
            Step::Failed { logged, shown } => {
                self.counters.watch_errors.fetch_add(1, Ordering::Relaxed);
                self.sync
                    .complain(k, &format!("watch failed, retrying with backoff: {logged}"));
                self.set_kind_keeping_count(kind, KindState::Error { error: shown });
                None
            }
            Step::Unanswered { what, after } => {
                self.sync.complain(
                    k,
                    &format!(
                        "no answer to the {what} within {after:?}; the cluster may be unreachable"
                    ),
                );
                self.set_kind_keeping_count(
                    kind,
                    KindState::Error {
                        error: format!(
                            "no answer to the {what} within {}s (watch.list_timeout); still trying",
                            after.as_secs_f64()
                        ),
                    },
                );
                None
            }
            Step::Absent(state) => {
                if self.kind_state(k).as_ref() != Some(&state) {
                    match &state {
                        KindState::UnsupportedVersion { served, .. } => tracing::warn!(
                            cluster = %self.name, kind = k.name(), ?served,
                            "the kind is served only at versions Lookout does not read; looking again later"
                        ),
                        _ => {
                            tracing::info!(cluster = %self.name, kind = k.name(), "CRD not installed; looking again later")
                        }
                    }
                    self.cache.drop_relist(k);
                    self.cache
                        .write(|d, _| kind.replace(d, &mut ClusterData::default()));
                    self.cache.touch_all();
                    self.changes.touch();
                    self.set_kind(k, state, 0);
                }
                None
            }
        }
    }
}

/// The namespace a change of `obj` touches: its own, except for cilium-config, which is
/// read for the objects of every namespace (the controller's settings) and so changes as a
/// cluster-scoped object does (None).
fn touched(kind: Kind, obj: &Object) -> Option<&str> {
    match kind {
        // A policy in one namespace covers Ingresses in others.
        Kind::ConfigMap
        | Kind::ManagedResource
        | Kind::ClusterPolicy
        | Kind::Policy
        | Kind::MutatingPolicy => None,
        _ => obj.metadata.namespace.as_deref(),
    }
}

impl ClusterRecord {
    /// Says what an applied or deleted object changed: its namespace, or the cluster's scope
    /// and that object.
    fn touch(&self, kind: Kind, obj: &Object) {
        let namespace = touched(kind, obj);
        self.cache.touch_namespace(namespace);
        if namespace.is_none() {
            self.cache
                .touch_cluster_object(kind, obj.metadata.name.as_deref().unwrap_or_default());
        }
    }

    /// Hands a history event to the writer. A full queue makes the watcher wait (and says
    /// so) rather than drop the event.
    async fn record_history(&self, ev: HistoryEvent) {
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
    fn skip(&self, kind: Kind, why: &str, namespace: Option<&str>) {
        if self.counters.skip(kind) {
            tracing::warn!(cluster = %self.name, kind = kind.name(), why, namespace, "an object cannot be cached and is skipped (counted in lookout_objects_skipped_total)");
        }
    }

    /// What the probe saw on the hosts' addresses this round; `namespaces` are those of the
    /// Ingresses whose observations changed, `gone` whether some observation was dropped.
    pub(crate) fn observed(&self, probes: Vec<Observation>, namespaces: &[&str], gone: bool) {
        self.cache.write(|d, _| d.probes = Arc::new(probes));
        for ns in namespaces {
            self.cache.touch_namespace(Some(ns));
        }
        if gone {
            self.cache.touch_all();
        }
        self.changes.touch();
    }

    /// Objects cached per watched kind.
    pub fn kind_counts(&self) -> Vec<(Kind, usize)> {
        self.sync
            .read(|s| s.kinds.values().map(|k| (k.kind, k.objects)).collect())
    }

    /// The one-word sync state.
    pub fn state_label(&self) -> &'static str {
        self.sync.read(|s| s.state.label())
    }

    /// Reads the cached data.
    pub fn read<T>(&self, f: impl FnOnce(&ClusterData) -> T) -> T {
        self.cache.read(f)
    }

    /// Changes the state of one kind and recomputes the cluster's state from all kinds.
    pub(super) fn set_kind(&self, kind: Kind, state: KindState, objects: usize) {
        if self.sync.set_kind(kind, state, objects, (self.now)()) {
            self.sync_changed();
        }
    }

    /// Changes the state of one kind, keeping its count of cached objects.
    fn set_kind_keeping_count(&self, kind: &dyn Watched, state: KindState) {
        let count = self.read(|d| kind.count(d));
        self.set_kind(kind.kind(), state, count);
    }

    /// The sync state changed: everything a caller sees may have.
    fn sync_changed(&self) {
        self.cache.touch_all();
        self.cache.bump();
        self.changes.touch();
    }

    /// The generation of this cluster's data and state (for live updates).
    pub fn generation(&self) -> u64 {
        self.cache.generation()
    }

    /// A number that moves when something `visible` sees of this cluster changes.
    /// A number that moves when something `visible` sees changes: its data (see
    /// [`Cache::visible_generation`]) or what is judged of it.
    pub fn visible_generation(self: &Arc<Self>, visible: &Visibility<'_>) -> u64 {
        let data = self.cache.visible_generation(visible);
        if visible.whole_cluster() {
            return data;
        }
        data ^ visible
            .findings_fingerprint(&self.findings())
            .rotate_left(1)
    }

    /// A receiver that wakes when watchers should start over (see `probed`).
    pub(super) fn reconnects(&self) -> tokio::sync::watch::Receiver<(u64, bool)> {
        self.sync.reconnects()
    }

    /// The outcome of a health probe of the API server (see [`SyncTracker::probed`]).
    pub fn probed(&self, result: Result<(), String>) {
        if self.sync.probed(result, (self.now)()) {
            self.sync_changed();
        }
    }

    /// Marks the whole cluster failed (no client could be built).
    pub fn fail(&self, error: String) {
        if self.sync.set_reachable(Err(error), (self.now)()) {
            self.sync_changed();
        }
    }

    /// The state of one kind.
    pub fn kind_state(&self, kind: Kind) -> Option<KindState> {
        self.sync.kind_state(kind)
    }

    /// What the rules know about the cluster itself.
    pub fn facts(&self) -> ClusterFacts {
        self.sync.read(|s| ClusterFacts {
            name: self.name.clone(),
            state: s.state.clone(),
            kinds: s.kinds.values().cloned().collect(),
            overrides: self.overrides.clone(),
        })
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
        // The client's own words (addresses, certificate names, API paths) are for those who
        // see the whole cluster — and the log; a namespace-scoped caller gets a sentence.
        let redact = |error: &str| {
            if visible.whole_cluster() {
                error.to_string()
            } else {
                "Lookout cannot reach this cluster's API server right now; the operators see the error.".to_string()
            }
        };
        self.sync.read(|s| {
            // While every watch is open the cache is current: its last sync is now.
            let last_sync = match s.state {
                SyncState::Synced => Some((self.now)()),
                _ => s.last_sync,
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
        })
    }

    /// Whether the first sync attempt has ended.
    pub fn settled(&self) -> bool {
        self.sync.read(|s| s.state.settled())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicI64;

    use crate::clusters::kinds::Object;
    use chrono::{TimeZone, Utc};
    use lookout_app::model::Finding;
    use serde_json::json;
    use std::time::Instant;

    use super::*;

    /// A record whose clock the test moves.
    pub(super) fn record(clock: Arc<AtomicI64>) -> Arc<ClusterRecord> {
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
        record.fail(raw.into());
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

    #[test]
    fn a_list_shows_whole_when_complete_and_errors_and_absence_follow_from_steps() {
        let r = record(Arc::new(AtomicI64::new(0)));
        let certs = super::super::kinds::watched(Kind::Certificate);
        let cached = || r.read(|d| d.certificates.len());
        let (a, b) = (
            certificate("a", "2027-01-01T00:00:00Z"),
            certificate("b", "2027-01-01T00:00:00Z"),
        );
        r.take(certs, Step::Listing);
        assert_eq!(r.kind_state(Kind::Certificate), Some(KindState::Listing));
        r.take(certs, Step::Listed(&a));
        r.take(certs, Step::Listed(&b));
        assert_eq!(cached(), 0, "half a list is not shown");
        r.take(certs, Step::Relisted);
        assert_eq!(cached(), 2);
        assert_eq!(r.kind_state(Kind::Certificate), Some(KindState::Synced));

        // A relist without b: the old data stays whole until the new list is.
        r.take(certs, Step::Listing);
        r.take(certs, Step::Listed(&a));
        assert_eq!(cached(), 2);
        let before = r.generation();
        r.take(certs, Step::Relisted);
        assert_eq!(cached(), 1);
        assert!(r.generation() > before, "the derived data follows");

        r.take(
            certs,
            Step::Failed {
                logged: "connection reset".into(),
                shown: "the watch failed".into(),
            },
        );
        assert_eq!(
            r.kind_state(Kind::Certificate),
            Some(KindState::Error {
                error: "the watch failed".into()
            })
        );
        assert_eq!(cached(), 1, "an error keeps what was cached");
        assert_eq!(r.kind_counts(), [(Kind::Certificate, 1)]);
        assert_eq!(r.counters.watch_errors.load(Ordering::Relaxed), 1);

        r.take(certs, Step::Deleted(&a));
        assert_eq!(cached(), 0);

        r.take(certs, Step::Applied(&b));
        r.take(certs, Step::Absent(KindState::NotInstalled));
        assert_eq!(cached(), 0, "a kind no longer served has nothing cached");
        assert_eq!(
            r.kind_state(Kind::Certificate),
            Some(KindState::NotInstalled)
        );
    }

    fn certificate(name: &str, not_after: &str) -> Object {
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
            r.take(
                super::super::kinds::watched(Kind::Certificate),
                Step::Applied(&certificate(name, "2027-01-01T00:00:00Z")),
            )
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

    #[tokio::test(start_paused = true)]
    async fn time_moves_findings_on_while_another_namespace_keeps_changing() {
        let t0 = Utc
            .with_ymd_and_hms(2026, 12, 31, 0, 0, 0)
            .unwrap()
            .timestamp();
        let clock = Arc::new(AtomicI64::new(t0));
        let r = record(clock.clone());
        let change = |i: u32| {
            let ingress: Object = serde_json::from_value(json!({
                "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                "metadata": {"name": "web", "namespace": "web", "uid": "u-web",
                             "annotations": {"change": i.to_string()}},
                "spec": {"rules": [{"host": "web.example.com"}]}
            }))
            .unwrap();
            r.take(
                super::super::kinds::watched(Kind::Ingress),
                Step::Applied(&ingress),
            );
        };
        r.take(
            super::super::kinds::watched(Kind::Certificate),
            Step::Applied(&certificate("a", "2027-01-01T00:00:00Z")),
        );
        change(0);
        assert!(expired(&r.findings()).is_empty());
        let whole = r.counters.evaluations_whole.load(Ordering::Relaxed);
        // The Certificate of "shop" expires while an Ingress of "web" changes every second,
        // and a reader comes after each change: each change evaluates "web" alone, and the
        // whole cluster is still evaluated again once its findings are five seconds old.
        clock.store(t0 + 2 * 86_400, Ordering::Relaxed);
        let deadline = Instant::now() + Duration::from_secs(10);
        for i in 1.. {
            change(i);
            if i == 1 {
                assert!(
                    expired(&r.findings()).is_empty(),
                    "a change is judged in its namespace"
                );
                assert_eq!(r.counters.evaluations_whole.load(Ordering::Relaxed), whole);
            }
            if expired(&r.findings()) == ["a"] {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the expiry never showed while another namespace kept changing"
            );
            tokio::time::advance(Duration::from_secs(1)).await;
            // The background evaluation runs in real time.
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[cfg(test)]
mod incremental {
    use std::sync::atomic::AtomicI64;

    use chrono::{TimeZone, Utc};
    use lookout_app::model::rules::evaluate;
    use lookout_app::model::{Finding, Rule};
    use serde_json::json;

    use super::super::kinds::watched;
    use super::*;
    use crate::clusters::kinds::Object;

    fn ingress(namespace: &str, issuer: Option<&str>) -> Object {
        let mut annotations = serde_json::Map::new();
        if let Some(i) = issuer {
            annotations.insert("cert-manager.io/cluster-issuer".into(), json!(i));
        }
        serde_json::from_value(json!({
            "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "web", "namespace": namespace, "uid": format!("u-{namespace}"),
                         "annotations": annotations},
            "spec": {"rules": [{"host": format!("{namespace}.example.com")}],
                     "tls": [{"hosts": [format!("{namespace}.example.com")], "secretName": "web-tls"}]}
        }))
        .unwrap()
    }

    fn missing_issuer_in(findings: &[Finding]) -> Vec<String> {
        findings
            .iter()
            .filter(|f| f.rule == Rule::IssuerMissing)
            .map(|f| f.namespace.to_string())
            .collect()
    }

    fn evaluations(r: &ClusterRecord) -> (u64, u64) {
        (
            r.counters.evaluations_whole.load(Ordering::Relaxed),
            r.counters.evaluations_namespace.load(Ordering::Relaxed),
        )
    }

    #[tokio::test]
    async fn a_change_is_judged_again_in_its_namespace_alone_and_finds_what_the_whole_cluster_would(
    ) {
        let at = Utc.with_ymd_and_hms(2026, 12, 6, 0, 0, 0).unwrap();
        let r = super::tests::record(Arc::new(AtomicI64::new(at.timestamp())));
        let whole = || {
            let data = r.read(ClusterData::clone);
            evaluate(&r.facts(), &data, at, &Thresholds::default())
        };
        for k in [Kind::Issuer, Kind::ClusterIssuer] {
            r.take(watched(k), Step::Listing);
            r.take(watched(k), Step::Relisted);
        }
        let ingresses = watched(Kind::Ingress);
        r.take(ingresses, Step::Listing);
        for ns in ["a", "b", "c"] {
            r.take(ingresses, Step::Listed(&ingress(ns, Some("letsencrypt"))));
        }
        r.take(ingresses, Step::Relisted);
        assert_eq!(missing_issuer_in(&r.findings()), ["a", "b", "c"]);
        assert_eq!(*r.findings(), whole());
        let rows = r.ingress_rows();
        let before = evaluations(&r);

        // The issuer annotation removed in one namespace: that namespace alone is judged
        // again, and the result is what judging the whole cluster gives.
        r.take(ingresses, Step::Applied(&ingress("a", None)));
        let findings = r.findings();
        assert_eq!(missing_issuer_in(&findings), ["b", "c"]);
        assert_eq!(*findings, whole());
        assert_eq!(evaluations(&r), (before.0, before.1 + 1));
        // Only that namespace's rows are made again; the others are the same rows.
        let after = r.ingress_rows();
        assert_eq!(
            after.keys().map(|k| &**k).collect::<Vec<_>>(),
            ["a", "b", "c"]
        );
        assert!(!Arc::ptr_eq(&rows["a"], &after["a"]));
        assert!(Arc::ptr_eq(&rows["b"], &after["b"]) && Arc::ptr_eq(&rows["c"], &after["c"]));
        assert!(after["a"][0].chain.is_empty() && !after["b"][0].chain.is_empty());

        // A namespace emptied: its findings and rows go.
        r.take(ingresses, Step::Deleted(&ingress("b", Some("letsencrypt"))));
        assert_eq!(missing_issuer_in(&r.findings()), ["c"]);
        assert_eq!(
            r.ingress_rows().keys().map(|k| &**k).collect::<Vec<_>>(),
            ["a", "c"]
        );
        assert_eq!(evaluations(&r), (before.0, before.1 + 2));

        // A cluster-scoped object, or cilium-config (read for every namespace), changes what
        // every namespace's rules read: the whole cluster is judged again.
        let issuer: Object = serde_json::from_value(json!({
            "apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer",
            "metadata": {"name": "letsencrypt", "uid": "u-le"},
            "spec": {"acme": {"server": "https://acme-v02.api.letsencrypt.org/directory",
                              "solvers": [{"http01": {"ingress": {}}}]}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}
        }))
        .unwrap();
        r.take(watched(Kind::ClusterIssuer), Step::Applied(&issuer));
        assert!(missing_issuer_in(&r.findings()).is_empty());
        assert_eq!(*r.findings(), whole());
        assert_eq!(evaluations(&r), (before.0 + 1, before.1 + 2));
        let cilium: Object = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cilium-config", "namespace": "kube-system", "uid": "u-cc"},
            "data": {"enable-ingress-controller": "true", "enforce-ingress-https": "true"}
        }))
        .unwrap();
        r.take(watched(Kind::ConfigMap), Step::Applied(&cilium));
        assert_eq!(*r.findings(), whole());
        assert_eq!(evaluations(&r), (before.0 + 2, before.1 + 2));
    }
}

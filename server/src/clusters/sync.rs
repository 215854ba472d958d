//! One cluster's sync state: each watched kind's, the API server's reachability, and the
//! cluster's state derived from them (connecting, synced, stale since T, failed).

use std::collections::BTreeMap;
use std::sync::{Mutex, RwLock};

use chrono::{DateTime, Utc};
use lookout_app::model::cluster::SyncEvent;
use lookout_app::model::{Kind, KindState, KindStatus, SyncState};
use tokio::sync::mpsc;

use super::complaints::Complaints;

/// What is known about one cluster's sync.
#[derive(Debug)]
pub(super) struct SyncStatus {
    pub state: SyncState,
    /// When every watch was last known to be open.
    pub last_sync: Option<DateTime<Utc>>,
    /// The most recent error, even after recovery.
    pub last_error: Option<String>,
    pub kinds: BTreeMap<Kind, KindStatus>,
    /// Why the API server cannot be reached (no client could be built, or the health probe
    /// fails); None while it answers.
    pub unreachable: Option<String>,
}

/// The cluster moved from one state to another.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Moved {
    pub from: &'static str,
    pub to: SyncState,
}

impl SyncStatus {
    pub(super) fn new() -> Self {
        SyncStatus {
            state: SyncState::Connecting,
            last_sync: None,
            last_error: None,
            kinds: BTreeMap::new(),
            unreachable: None,
        }
    }

    /// Sets the state of one kind. None when nothing changed (a retry that failed the same
    /// way again); else whether the cluster moved to another state.
    pub(super) fn set_kind(
        &mut self,
        kind: Kind,
        state: KindState,
        objects: usize,
        now: DateTime<Utc>,
    ) -> Option<Option<Moved>> {
        if let KindState::Error { error } = &state {
            self.last_error = Some(error.clone());
        }
        let status = KindStatus {
            kind,
            state,
            objects,
        };
        if self.kinds.get(&kind) == Some(&status) {
            return None;
        }
        self.kinds.insert(kind, status);
        Some(self.settle(now))
    }

    /// Records whether the API server can be reached (`Err` says why not). None when nothing
    /// changed; else whether the cluster moved to another state.
    pub(super) fn set_reachable(
        &mut self,
        reachable: Result<(), String>,
        now: DateTime<Utc>,
    ) -> Option<Option<Moved>> {
        let unreachable = reachable.err();
        if self.unreachable == unreachable {
            return None;
        }
        if let Some(error) = &unreachable {
            self.last_error = Some(error.clone());
        }
        self.unreachable = unreachable;
        Some(self.settle(now))
    }

    /// Updates a kind's object count without changing its state.
    pub(super) fn set_count(&mut self, kind: Kind, objects: usize, now: DateTime<Utc>) {
        if let Some(k) = self.kinds.get_mut(&kind) {
            k.objects = objects;
        }
        if matches!(self.state, SyncState::Synced) {
            self.last_sync = Some(now);
        }
    }

    /// Whether any kind is in error.
    pub(super) fn kind_errors(&self) -> bool {
        self.kinds
            .values()
            .any(|k| matches!(k.state, KindState::Error { .. }))
    }

    /// Derives the cluster's state from the API server's and every kind's.
    fn settle(&mut self, now: DateTime<Utc>) -> Option<Moved> {
        let error = self.unreachable.clone().or_else(|| {
            self.kinds.values().find_map(|k| match &k.state {
                KindState::Error { error } => Some(format!("{}: {error}", k.kind)),
                _ => None,
            })
        });
        let all_synced = self.kinds.values().all(|k| {
            matches!(
                k.state,
                KindState::Synced | KindState::NotInstalled | KindState::UnsupportedVersion { .. }
            )
        });
        let next = match (error, self.last_sync) {
            (Some(error), Some(since)) => SyncState::Stale { since, error },
            (Some(error), None) => SyncState::Failed { error },
            (None, _) if all_synced => SyncState::Synced,
            (None, _) => self.state.clone(),
        };
        if matches!(next, SyncState::Synced) {
            self.last_sync = Some(now);
        }
        let moved =
            (std::mem::discriminant(&next) != std::mem::discriminant(&self.state)).then(|| Moved {
                from: self.state.label(),
                to: next.clone(),
            });
        self.state = next;
        moved
    }
}

/// One cluster's sync state with what reports its changes: the log (changes of state at
/// once, failures at most once a minute), the sync-event writer, and the watchers' signal to
/// start over after the API server answers again.
pub(super) struct SyncTracker {
    cluster: String,
    status: RwLock<SyncStatus>,
    /// Failures not yet mentioned in the log (see [`super::complaints`]).
    complaints: Mutex<Complaints>,
    /// Bumped when the API server answers the probe while something is in error: the
    /// watchers start over with fresh requests — all of them (`true`) after the probe itself
    /// failed (their requests may hang), else those whose kind is in error.
    reconnects: tokio::sync::watch::Sender<(u64, bool)>,
    events: mpsc::Sender<SyncEvent>,
}

impl SyncTracker {
    pub(super) fn new(cluster: String, events: mpsc::Sender<SyncEvent>) -> Self {
        SyncTracker {
            cluster,
            status: RwLock::new(SyncStatus::new()),
            complaints: Mutex::default(),
            reconnects: tokio::sync::watch::Sender::new((0, false)),
            events,
        }
    }

    /// Reads the sync state.
    pub(super) fn read<T>(&self, f: impl FnOnce(&SyncStatus) -> T) -> T {
        f(&self.status.read().expect("sync lock"))
    }

    /// The state of one kind.
    pub(super) fn kind_state(&self, kind: Kind) -> Option<KindState> {
        self.read(|s| s.kinds.get(&kind).map(|k| k.state.clone()))
    }

    /// Changes the state of one kind; true when anything changed.
    pub(super) fn set_kind(
        &self,
        kind: Kind,
        state: KindState,
        objects: usize,
        now: DateTime<Utc>,
    ) -> bool {
        let changed = self
            .status
            .write()
            .expect("sync lock")
            .set_kind(kind, state, objects, now);
        self.report(changed, now)
    }

    /// Records whether the API server can be reached (`Err` says why not); true when
    /// anything changed.
    pub(super) fn set_reachable(&self, reachable: Result<(), String>, now: DateTime<Utc>) -> bool {
        let changed = self
            .status
            .write()
            .expect("sync lock")
            .set_reachable(reachable, now);
        self.report(changed, now)
    }

    /// Updates a kind's object count without changing its state.
    pub(super) fn set_count(&self, kind: Kind, objects: usize, now: DateTime<Utc>) {
        self.status
            .write()
            .expect("sync lock")
            .set_count(kind, objects, now);
    }

    /// A watch or probe failed (`what`): logged at once when the cluster was healthy, then at
    /// most once a minute with the number of failures held back. The state change itself is
    /// logged by [`SyncTracker::report`]; every failure is counted in `/metrics` and shown on
    /// the pages.
    pub(super) fn complain(&self, kind: Kind, what: &str) {
        let held = self
            .complaints
            .lock()
            .expect("complaints lock")
            .failed(std::time::Instant::now());
        if let Some(held) = held {
            tracing::warn!(cluster = %self.cluster, kind = kind.name(), held_back = held, "{what}");
        }
    }

    /// A receiver that wakes when watchers should start over (see [`SyncTracker::probed`]).
    pub(super) fn reconnects(&self) -> tokio::sync::watch::Receiver<(u64, bool)> {
        self.reconnects.subscribe()
    }

    /// The outcome of a health probe of the API server. While it fails, the cluster is in
    /// error. When it answers: after a failed probe every watcher starts over (their requests
    /// may hang for minutes); otherwise the watchers whose kind is in error do (a watch that
    /// resumed quietly sends nothing that would clear its error). True when the state changed.
    pub(super) fn probed(&self, result: Result<(), String>, now: DateTime<Utc>) -> bool {
        let (failing, kind_errors) = self.read(|s| (s.unreachable.is_some(), s.kind_errors()));
        match result {
            Err(error) => self.set_reachable(Err(error), now),
            Ok(()) if failing => {
                tracing::info!(cluster = %self.cluster, "the API server answers again; watches start over");
                let changed = self.set_reachable(Ok(()), now);
                self.reconnects
                    .send_modify(|(n, all)| (*n, *all) = (n.wrapping_add(1), true));
                changed
            }
            Ok(()) if kind_errors => {
                self.reconnects
                    .send_modify(|(n, all)| (*n, *all) = (n.wrapping_add(1), false));
                false
            }
            Ok(()) => false,
        }
    }

    /// After a change of the sync state (None: nothing changed): when the cluster moved to
    /// another state, logs it and tells the sync-event writer. True when anything changed.
    fn report(&self, changed: Option<Option<Moved>>, now: DateTime<Utc>) -> bool {
        let Some(moved) = changed else { return false };
        if let Some(Moved { from, to }) = moved {
            let error = match &to {
                SyncState::Stale { error, .. } | SyncState::Failed { error } => Some(error.clone()),
                _ => None,
            };
            match &error {
                Some(error) => {
                    tracing::warn!(cluster = %self.cluster, from, to = to.label(), error, "cluster sync state changed")
                }
                None => {
                    tracing::info!(cluster = %self.cluster, from, to = to.label(), "cluster sync state changed");
                    self.complaints.lock().expect("complaints lock").recovered();
                }
            }
            let ev = SyncEvent {
                cluster: self.cluster.clone(),
                state: to.label(),
                error,
                at: now,
            };
            if let Err(e) = self.events.try_send(ev) {
                tracing::warn!(cluster = %self.cluster, error = %e, "the sync-event writer is behind; this state change is not recorded");
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(s, 0).unwrap()
    }

    #[test]
    fn a_cluster_is_synced_once_every_kind_is_then_stale_then_synced_again() {
        let mut s = SyncStatus::new();
        assert_eq!(
            s.set_kind(Kind::Ingress, KindState::Listing, 0, at(0)),
            Some(None)
        );
        assert_eq!(
            s.set_kind(Kind::Certificate, KindState::NotInstalled, 0, at(0)),
            Some(None)
        );
        let moved = s.set_kind(Kind::Ingress, KindState::Synced, 3, at(1));
        assert_eq!(moved.flatten().map(|m| m.to), Some(SyncState::Synced));
        let error = KindState::Error {
            error: "boom".into(),
        };
        let moved = s.set_kind(Kind::Ingress, error.clone(), 3, at(2)).flatten();
        assert_eq!(
            moved.map(|m| m.to),
            Some(SyncState::Stale {
                since: at(1),
                error: "Ingress: boom".into()
            })
        );
        assert_eq!(
            s.set_kind(Kind::Ingress, error, 3, at(3)),
            None,
            "the same failure again changes nothing"
        );
        // The API server's reachability comes first.
        let moved = s.set_reachable(Err("no answer".into()), at(4)).flatten();
        assert_eq!(moved, None, "still stale");
        assert!(matches!(&s.state, SyncState::Stale { error, .. } if error == "no answer"));
        s.set_reachable(Ok(()), at(5));
        let moved = s
            .set_kind(Kind::Ingress, KindState::Synced, 3, at(6))
            .flatten();
        assert_eq!(moved.map(|m| m.from), Some("stale"));
        assert_eq!(
            s.last_error.as_deref(),
            Some("no answer"),
            "kept after recovery"
        );
    }

    #[test]
    fn a_cluster_that_never_synced_has_failed() {
        let mut s = SyncStatus::new();
        let moved = s
            .set_reachable(Err("no kubeconfig".into()), at(0))
            .flatten();
        assert_eq!(
            moved.map(|m| m.to),
            Some(SyncState::Failed {
                error: "no kubeconfig".into()
            })
        );
    }
}

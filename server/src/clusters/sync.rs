//! One cluster's sync state: each watched kind's, the API server's reachability, and the
//! cluster's state derived from them (connecting, synced, stale since T, failed).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use lookout_app::model::{Kind, KindState, KindStatus, SyncState};

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

//! What the history returns: Challenges with their transitions, a Certificate's timeline, recent
//! changes and audit rows.
//! The server's store fills these; pages and the API show them. [`HistoryEvent`] is what the
//! watchers hand the history's writer.

use std::sync::Arc;

use serde::Serialize;

use super::certificate::{CertificateRequestView, ChallengeView, OrderView};
use super::failure::Failure;
use super::kind::Kind;
use super::object::Condition;
use super::text::Uid;

/// A Challenge as the history keeps it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ChallengeRecord {
    /// The history's row id (not shown).
    #[serde(skip)]
    pub id: i64,
    pub cluster: String,
    pub namespace: String,
    pub name: String,
    pub order: Option<String>,
    pub dns_name: String,
    pub challenge_type: String,
    pub state: String,
    pub reason: Option<String>,
    /// The reason classified (redirected, not-found, …) while it fails: the CA's verdict on
    /// an `invalid`/`errored` one, or the self-check's complaint on a pending one.
    pub failure: Option<Failure>,
    pub created_at: Option<String>,
    pub last_seen: String,
    /// Set once Kubernetes deleted it.
    pub deleted_at: Option<String>,
    pub transitions: Vec<Transition>,
}

/// One change of state.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Transition {
    pub at: String,
    pub state: String,
    pub reason: Option<String>,
    pub presented: bool,
    pub processing: bool,
}

/// One line of a Certificate's timeline.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TimelineEntry {
    pub at: String,
    /// `readiness`, `request`, `order` or `challenge`.
    pub kind: &'static str,
    pub name: String,
    pub state: String,
    pub detail: Option<String>,
}

/// One line of "what changed recently" on the triage board: a readiness change, a
/// Challenge state change or deletion, a cluster sync change, or an action.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RecentChange {
    pub at: String,
    pub cluster: String,
    /// Empty for the cluster itself.
    pub namespace: String,
    pub kind: String,
    pub name: String,
    pub what: String,
    pub detail: Option<String>,
}

/// One row of the audit log: a preview or an action taken through Lookout.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct AuditEntry {
    pub id: i64,
    pub at: String,
    /// The user, the API token's name, or `anonymous`.
    pub actor: String,
    /// `edit-in-place`, `undo-edit-in-place`, `renew`, …
    pub action: String,
    pub cluster: String,
    pub namespace: String,
    pub kind: String,
    pub name: String,
    /// True for a preview (dry run).
    pub dry_run: bool,
    /// What changed, or would change.
    pub diff: Option<String>,
    /// `ok`, `conflict`, `refused` or `error`.
    pub outcome: String,
    pub error: Option<String>,
}

/// Something the history records.
#[derive(Debug, Clone)]
pub enum HistoryEvent {
    Challenge {
        cluster: String,
        view: Arc<ChallengeView>,
        deleted: bool,
        /// The object's `metadata.resourceVersion` when it is a number (as etcd's are):
        /// which of two observations of the object is newer. Replicas sharing one database
        /// write what each saw; one may write a change late, after a newer one.
        revision: Option<i64>,
    },
    Order {
        cluster: String,
        view: Arc<OrderView>,
        deleted: bool,
        /// As the Challenge's `revision`.
        revision: Option<i64>,
    },
    Request {
        cluster: String,
        view: Arc<CertificateRequestView>,
        acme_server: Option<String>,
        deleted: bool,
        /// As the Challenge's `revision`.
        revision: Option<i64>,
    },
    /// A Certificate's Ready condition as now seen (None when it has none).
    Readiness {
        cluster: String,
        namespace: String,
        name: String,
        ready: Option<Condition>,
        /// As the Challenge's `revision`.
        revision: Option<i64>,
    },
    /// An Issuer or ClusterIssuer of an ACME server, as now seen: a CertificateRequest
    /// recorded before it was listed (so without its ACME server) gets the server, so that
    /// every issuance counts in the Let's Encrypt budgets whatever the order things were
    /// seen in. A request that has its server keeps it (an issuer changed later does not
    /// rewrite what was issued).
    Issuer {
        cluster: String,
        /// `Issuer` or `ClusterIssuer`.
        kind: Kind,
        /// Empty for a ClusterIssuer.
        namespace: String,
        name: String,
        acme_server: String,
    },
    /// A relist of `kind` finished: its objects not among `live` uids were deleted meanwhile.
    Relisted {
        cluster: String,
        kind: Kind,
        live: Vec<Uid>,
        /// When the list began. A row whose state was written since (by another replica
        /// sharing the database, which saw an object this list is too old to hold) is not
        /// taken for deleted.
        listed_from: Option<chrono::DateTime<chrono::Utc>>,
    },
}

impl HistoryEvent {
    /// The event with the revision of the object it was seen in.
    pub fn at_revision(mut self, resource_version: Option<&str>) -> Self {
        let parsed = resource_version.and_then(|v| v.parse::<i64>().ok());
        match &mut self {
            HistoryEvent::Challenge { revision, .. }
            | HistoryEvent::Order { revision, .. }
            | HistoryEvent::Request { revision, .. }
            | HistoryEvent::Readiness { revision, .. } => *revision = parsed,
            HistoryEvent::Relisted { .. } | HistoryEvent::Issuer { .. } => {}
        }
        self
    }
}

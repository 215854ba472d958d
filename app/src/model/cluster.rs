//! The sync state of each configured cluster, as pages and `/api/v1/clusters` show it.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::kind::Kind;

/// Where a cluster's cached data stands.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum SyncState {
    /// No initial list has finished yet.
    Connecting,
    /// Every watched kind has listed and its watch is running.
    Synced,
    /// It was synced, then a watch failed: the data shown is from `since`.
    Stale { since: DateTime<Utc>, error: String },
    /// It never synced: the client could not be built or the first list failed.
    Failed { error: String },
}

impl SyncState {
    /// A one-word label for tables and badges.
    pub fn label(&self) -> &'static str {
        match self {
            SyncState::Connecting => "connecting",
            SyncState::Synced => "synced",
            SyncState::Stale { .. } => "stale",
            SyncState::Failed { .. } => "failed",
        }
    }

    /// Whether the first sync attempt has ended (in success or failure), for `/readyz`.
    pub fn settled(&self) -> bool {
        !matches!(self, SyncState::Connecting)
    }
}

/// The state of one watched kind in one cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum KindState {
    Listing,
    Synced,
    /// The kind's CRD is absent (re-checked periodically).
    NotInstalled,
    /// The kind's API group is served, but not at the version Lookout reads (e.g. a
    /// cert-manager older than 1.0 serving only `v1alpha2`): `served` lists what it offers.
    /// Re-checked like an absent CRD.
    UnsupportedVersion {
        reads: String,
        served: Vec<String>,
    },
    Error {
        error: String,
    },
}

/// A watched kind and how many objects of it are cached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KindStatus {
    pub kind: Kind,
    #[serde(flatten)]
    pub state: KindState,
    pub objects: usize,
}

/// A configured cluster as the caller may see it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClusterView {
    pub name: String,
    #[serde(flatten)]
    pub state: SyncState,
    /// When the data was last known to be current.
    pub last_sync: Option<DateTime<Utc>>,
    /// The most recent error, even after recovery.
    pub last_error: Option<String>,
    pub kinds: Vec<KindStatus>,
    /// Ingresses visible to the caller.
    pub ingresses: usize,
}

/// A cluster entered a new sync state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncEvent {
    pub cluster: String,
    /// `connecting`, `synced`, `stale` or `failed`.
    pub state: &'static str,
    pub error: Option<String>,
    pub at: DateTime<Utc>,
}

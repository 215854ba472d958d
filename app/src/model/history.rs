//! What the history returns: Challenges with their transitions, a Certificate's timeline, recent
//! changes and audit rows.
//! The server's store fills these; pages and the API show them.

use serde::Serialize;

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
    /// The reason classified (redirect to HTTPS, 404, …) for failed challenges.
    pub failure: Option<&'static str>,
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

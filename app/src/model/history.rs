//! What the ACME history returns: Challenges with their transitions, and a Certificate's
//! timeline. The server's store fills these; pages and the API show them.

use serde::Serialize;

/// A Challenge as the history keeps it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ChallengeRecord {
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

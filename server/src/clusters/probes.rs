//! What the probe's last rounds cost and found, kept beside the clusters for their readers
//! (`/metrics`, `/api/v1/probes`, the fleet's round as a reader sees it): the probe's worker
//! writes it, the registry shares it.

use std::sync::Mutex;

use chrono::{DateTime, Utc};

/// What the last rounds cost and found, for `/metrics` and `/api/v1/probes`.
#[derive(Debug, Default, Clone)]
pub struct RoundStats {
    /// When the last round finished.
    pub finished: Option<DateTime<Utc>>,
    pub seconds: f64,
    /// Host × address pairs probed.
    pub probed: usize,
    /// Of those, how many got no certificate.
    pub failed: usize,
    /// Published addresses the policy refused (never connected to).
    pub refused: usize,
    /// Sum of the single probes' durations, seconds.
    pub probe_seconds: f64,
    pub rounds: u64,
    /// Every probe of every round so far, and their durations summed (seconds).
    pub probes_total: u64,
    pub probe_seconds_total: f64,
}

/// Shared between the worker and the readers.
#[derive(Debug, Default)]
pub struct ProbeStatus {
    pub last: Mutex<RoundStats>,
}

//! The faults a cluster can be told to have, switchable at runtime: through the library
//! (`Cluster::set_faults`) or the admin endpoint (`admin.rs`).

use serde::{Deserialize, Serialize};

/// The faults in force on one cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Faults {
    /// Added to every API request, in milliseconds.
    pub latency_ms: u64,
    /// Every API request answers 500.
    pub error_500: bool,
    /// Lists answer 429 with this `Retry-After` (seconds).
    pub throttle_lists_retry_after: Option<u64>,
    /// Watch requests answer with a 410 Gone ERROR event.
    pub gone_on_watch: bool,
    /// Connections are accepted and never answered.
    pub blackhole: bool,
    /// cert-manager's controllers do not run (its Deployment down, or no leader): nothing
    /// is issued, re-solved or made from Ingresses until it is back; the API still answers.
    pub cert_manager_down: bool,
}

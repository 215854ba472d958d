//! Where "now" comes from: the wall clock in production, a simulated one in the demo and in
//! tests. Rules, sync times, the history and pages all read the same clock.

use std::sync::Arc;

/// Where "now" comes from: the wall clock, or a simulated one (the demo).
pub type Now = Arc<dyn Fn() -> chrono::DateTime<chrono::Utc> + Send + Sync>;

/// The wall clock.
pub fn wall_clock() -> Now {
    Arc::new(chrono::Utc::now)
}

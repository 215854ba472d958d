//! Keeps a cluster in trouble from flooding the log. A cluster that stays unreachable fails
//! every watch of every kind on every retry (the demo's `fra-edge` once printed 4,244 lines in
//! ten minutes); what an operator needs is the change of state (logged by the record) and
//! then a reminder now and then that it goes on.

use std::time::{Duration, Instant};

/// How often a cluster that stays in trouble is mentioned again.
pub(crate) const EVERY: Duration = Duration::from_secs(60);

/// The failures of one cluster since it was last mentioned in the log.
#[derive(Debug, Default)]
pub(crate) struct Complaints {
    /// When the last one was logged; None while the cluster is healthy.
    logged: Option<Instant>,
    /// Failures not logged since then.
    held: u64,
}

impl Complaints {
    /// Whether a failure at `now` should be logged, and how many were held back before it.
    pub(crate) fn failed(&mut self, now: Instant) -> Option<u64> {
        match self.logged {
            Some(at) if now.saturating_duration_since(at) < EVERY => {
                self.held += 1;
                None
            }
            _ => {
                self.logged = Some(now);
                Some(std::mem::take(&mut self.held))
            }
        }
    }

    /// The cluster is healthy again: its next failure is news.
    pub(crate) fn recovered(&mut self) {
        *self = Complaints::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_in_trouble_is_mentioned_once_a_minute_with_what_was_held_back() {
        let t0 = Instant::now();
        let mut c = Complaints::default();
        assert_eq!(c.failed(t0), Some(0), "the first failure is logged");
        for s in 1..60 {
            assert_eq!(c.failed(t0 + Duration::from_secs(s)), None);
        }
        assert_eq!(
            c.failed(t0 + EVERY),
            Some(59),
            "a minute later, with the count"
        );
        assert_eq!(c.failed(t0 + EVERY + Duration::from_secs(1)), None);
        c.recovered();
        assert_eq!(
            c.failed(t0 + EVERY + Duration::from_secs(2)),
            Some(0),
            "after a recovery the next failure is news"
        );
    }
}

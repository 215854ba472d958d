//! The simulated clock: real time, accelerated, or moved by hand in tests.

use std::sync::Mutex;
use std::time::Instant;

use chrono::{DateTime, Duration, SecondsFormat, Utc};

/// Where "now" comes from for every timestamp kubesim writes.
#[derive(Debug)]
pub enum Clock {
    /// Wall-clock time.
    Real,
    /// Starts at `start` and runs `factor` times faster than real time.
    Accelerated {
        start: DateTime<Utc>,
        began: Instant,
        factor: f64,
    },
    /// Moves only when a test calls [`Clock::advance`].
    Manual(Mutex<DateTime<Utc>>),
}

impl Clock {
    pub fn accelerated(factor: f64) -> Self {
        Clock::Accelerated {
            start: Utc::now(),
            began: Instant::now(),
            factor,
        }
    }

    pub fn manual(start: DateTime<Utc>) -> Self {
        Clock::Manual(Mutex::new(start))
    }

    pub fn now(&self) -> DateTime<Utc> {
        match self {
            Clock::Real => Utc::now(),
            Clock::Accelerated {
                start,
                began,
                factor,
            } => {
                let elapsed = began.elapsed().as_secs_f64() * factor;
                *start + Duration::milliseconds((elapsed * 1000.0) as i64)
            }
            Clock::Manual(t) => *t.lock().expect("clock lock"),
        }
    }

    /// Moves a manual clock forward; no effect on the others.
    pub fn advance(&self, by: Duration) {
        if let Clock::Manual(t) = self {
            *t.lock().expect("clock lock") += by;
        }
    }

    /// RFC 3339 with second precision, as Kubernetes writes timestamps.
    pub fn stamp(&self) -> String {
        self.now().to_rfc3339_opts(SecondsFormat::Secs, true)
    }
}

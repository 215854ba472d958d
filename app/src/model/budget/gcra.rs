//! One rate-limit bucket as Boulder keeps it (letsencrypt/boulder `ratelimits/gcra.go`,
//! `ratelimits/limit.go`): a "theoretical arrival time" (TAT). A limit of `count` per
//! `period` with room for `burst` emits one token every `period / count` (the emission
//! interval); spending moves the TAT one interval on, and is allowed only while the new TAT
//! stays within `burst` intervals of now. A denied spend changes nothing.

use chrono::{DateTime, Duration, Utc};

/// A limit's numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    pub count: i64,
    pub burst: i64,
    pub period: Duration,
}

impl Rate {
    /// `period / count` in nanoseconds, truncated as Boulder's integer division does.
    fn interval(self) -> i64 {
        self.period.num_nanoseconds().unwrap_or(i64::MAX) / self.count
    }

    fn burst_offset(self) -> i64 {
        self.interval() * self.burst
    }
}

/// A bucket: absent (never spent) is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bucket {
    tat: DateTime<Utc>,
}

fn nanos(t: DateTime<Utc>) -> i64 {
    t.timestamp_nanos_opt().unwrap_or(i64::MAX)
}

fn at(n: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_nanos(n)
}

impl Bucket {
    /// Whether one more fits at `now` (a check: nothing is spent).
    pub fn allows(bucket: Option<&Bucket>, rate: Rate, now: DateTime<Utc>) -> bool {
        let now_n = nanos(now);
        let tat = bucket.map_or(now_n, |b| nanos(b.tat)).max(now_n);
        now_n - (tat + rate.interval() - rate.burst_offset()) >= 0
    }

    /// Spends one at `now` if it fits; returns whether it did.
    pub fn spend(bucket: &mut Option<Bucket>, rate: Rate, now: DateTime<Utc>) -> bool {
        if !Self::allows(bucket.as_ref(), rate, now) {
            return false;
        }
        let now_n = nanos(now);
        let tat = bucket.map_or(now_n, |b| nanos(b.tat)).max(now_n);
        *bucket = Some(Bucket {
            tat: at(tat + rate.interval()),
        });
        true
    }

    /// Whole tokens left at `now` (0 ..= burst).
    pub fn remaining(bucket: Option<&Bucket>, rate: Rate, now: DateTime<Utc>) -> i64 {
        let now_n = nanos(now);
        let Some(b) = bucket else {
            return rate.burst;
        };
        let tat = nanos(b.tat).max(now_n);
        ((now_n - (tat - rate.burst_offset())) / rate.interval()).clamp(0, rate.burst)
    }

    /// When the next whole token arrives; None when the bucket is full.
    pub fn next_token(
        bucket: Option<&Bucket>,
        rate: Rate,
        now: DateTime<Utc>,
    ) -> Option<DateTime<Utc>> {
        let left = Self::remaining(bucket, rate, now);
        if left >= rate.burst {
            return None;
        }
        let tat = nanos(bucket?.tat).max(nanos(now));
        Some(at(tat - rate.burst_offset() + (left + 1) * rate.interval()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    const FIVE_A_WEEK: Rate = Rate {
        count: 5,
        burst: 5,
        period: Duration::days(7),
    };

    #[test]
    fn five_a_week_refill_one_every_33_6_hours() {
        let t0 = Utc.with_ymd_and_hms(2026, 6, 1, 0, 0, 0).unwrap();
        let mut b = None;
        for _ in 0..5 {
            assert!(Bucket::spend(&mut b, FIVE_A_WEEK, t0));
        }
        assert!(
            !Bucket::spend(&mut b, FIVE_A_WEEK, t0),
            "the sixth is denied"
        );
        assert_eq!(Bucket::remaining(b.as_ref(), FIVE_A_WEEK, t0), 0);
        let next = Bucket::next_token(b.as_ref(), FIVE_A_WEEK, t0).unwrap();
        assert_eq!(next - t0, Duration::minutes(2016), "7 d / 5");
        assert!(!Bucket::allows(
            b.as_ref(),
            FIVE_A_WEEK,
            next - Duration::seconds(1)
        ));
        assert!(Bucket::allows(b.as_ref(), FIVE_A_WEEK, next));
        assert_eq!(
            Bucket::remaining(b.as_ref(), FIVE_A_WEEK, t0 + Duration::days(7)),
            5
        );
        assert_eq!(
            Bucket::next_token(b.as_ref(), FIVE_A_WEEK, t0 + Duration::days(7)),
            None
        );
    }
}

//! The configurable thresholds of the health rules, with the defaults DESIGN.md gives.

use chrono::Duration;
use serde::Serialize;

/// When time-based rules fire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Thresholds {
    /// `cert.not-ready` turns critical after this long.
    pub not_ready_critical_after: Duration,
    /// `acme.challenge-failing` for a self-check that keeps failing.
    pub challenge_failing_after: Duration,
    /// `acme.challenge-stuck` for a pending or processing challenge.
    pub challenge_stuck_after: Duration,
    /// `acme.challenges-queued` for a challenge waiting for one of cert-manager's slots.
    pub challenge_queued_after: Duration,
    /// `ingress.no-address` after creation.
    pub no_address_after: Duration,
    /// `ingress.certificate-missing` for an Ingress that asks for a certificate and has none,
    /// this long after it last changed, when nothing says why.
    pub certificate_missing_after: Duration,
    /// `cert.expiring` turns critical under this much time left.
    pub expiry_critical: Duration,
    /// `cert.expiring` also fires under this much time left, whatever the renewal time.
    pub expiry_floor: Option<Duration>,
    /// How late past `renewalTime` a renewal may be before `cert.expiring` fires.
    pub renewal_grace: Duration,
    /// cert-manager's issuance backoff: first delay and cap.
    pub backoff_min: Duration,
    pub backoff_max: Duration,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            not_ready_critical_after: Duration::hours(1),
            challenge_failing_after: Duration::minutes(5),
            challenge_stuck_after: Duration::minutes(15),
            challenge_queued_after: Duration::minutes(2),
            no_address_after: Duration::minutes(5),
            certificate_missing_after: Duration::minutes(5),
            expiry_critical: Duration::days(7),
            expiry_floor: None,
            renewal_grace: Duration::hours(1),
            backoff_min: Duration::hours(1),
            backoff_max: Duration::hours(32),
        }
    }
}

/// Parses `90s`, `15m`, `1h`, `7d` (or a combination like `1h30m`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if s.is_empty() {
        return Err("empty duration".into());
    }
    let mut total = Duration::zero();
    let mut digits = String::new();
    for c in s.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let too_long = || format!("{s:?} is longer than a hundred years");
        let n: i64 = digits
            .parse()
            .map_err(|_| format!("{s:?} is not a duration like 90s, 15m, 1h or 7d"))?;
        digits.clear();
        // Checked: a huge number is an error to show, never an overflow.
        let part = match c {
            's' => Duration::try_seconds(n),
            'm' => Duration::try_minutes(n),
            'h' => Duration::try_hours(n),
            'd' => Duration::try_days(n),
            _ => return Err(format!("{s:?}: unknown unit {c:?} (use s, m, h or d)")),
        }
        .ok_or_else(too_long)?;
        total = total.checked_add(&part).ok_or_else(too_long)?;
        if total > Duration::days(36_525) {
            return Err(too_long());
        }
    }
    if !digits.is_empty() {
        return Err(format!("{s:?} needs a unit (s, m, h or d)"));
    }
    Ok(total)
}

/// cert-manager's next retry after `attempts` consecutive failures.
pub(crate) fn next_retry(
    last_failure: chrono::DateTime<chrono::Utc>,
    attempts: i64,
    t: &Thresholds,
) -> chrono::DateTime<chrono::Utc> {
    let exp = attempts.clamp(1, 30) - 1;
    let delay = t
        .backoff_min
        .checked_mul(1 << exp)
        .unwrap_or(t.backoff_max)
        .min(t.backoff_max);
    last_failure + delay
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("15m"), Ok(Duration::minutes(15)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::minutes(90)));
        assert_eq!(parse_duration("7d"), Ok(Duration::days(7)));
        assert!(parse_duration("15").is_err());
        assert!(parse_duration("5w").is_err());
        assert!(parse_duration("").is_err());
        // Huge values are errors, not overflows.
        for huge in [
            "99999999999999d",
            "9223372036854775807s",
            "36526d",
            "100000000h1d",
        ] {
            assert!(
                parse_duration(huge).unwrap_err().contains("hundred years"),
                "{huge}"
            );
        }
    }

    #[test]
    fn backoff_doubles_and_caps_at_32_hours() {
        let t0 = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let t = Thresholds::default();
        assert_eq!(next_retry(t0, 1, &t), t0 + Duration::hours(1));
        assert_eq!(next_retry(t0, 3, &t), t0 + Duration::hours(4));
        assert_eq!(next_retry(t0, 6, &t), t0 + Duration::hours(32));
        assert_eq!(next_retry(t0, 12, &t), t0 + Duration::hours(32));
    }
}

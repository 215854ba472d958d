//! Reading rate-limit texts: whether one is, and when it lifts (classification of challenge
//! failures is [`super::failure`]).

use chrono::{DateTime, NaiveDateTime, Utc};

/// Whether an ACME error text is a rate limit (`urn:ietf:params:acme:error:rateLimited` / 429).
pub(crate) fn is_rate_limited(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    t.contains("ratelimited")
        || t.contains("rate limit")
        || t.contains("429")
        || t.contains("too many")
}

/// The "retry after <time>" of a Let's Encrypt rate-limit message.
pub(crate) fn parse_retry_after(text: &str) -> Option<DateTime<Utc>> {
    let lower = text.to_ascii_lowercase();
    let start = lower.find("retry after ")? + "retry after ".len();
    let rest = text[start..].trim();
    let candidates = [
        rest.split_whitespace()
            .next()
            .unwrap_or_default()
            .trim_end_matches(['.', ',', ';', ':', ')'])
            .to_string(),
        rest.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
            .trim_end_matches(['.', ',', ';', ':', ')'])
            .to_string(),
        rest.split_whitespace()
            .take(2)
            .collect::<Vec<_>>()
            .join(" ")
            .trim_end_matches(['.', ',', ';', ':', ')'])
            .to_string(),
    ];
    for c in &candidates {
        if let Ok(t) = DateTime::parse_from_rfc3339(c) {
            return Some(t.with_timezone(&Utc));
        }
        for fmt in [
            "%Y-%m-%d %H:%M:%S UTC",
            "%Y-%m-%d %H:%M:%S%.f UTC",
            "%Y-%m-%d %H:%M:%S",
        ] {
            if let Ok(t) = NaiveDateTime::parse_from_str(c, fmt) {
                return Some(t.and_utc());
            }
        }
        if let Ok(t) = DateTime::parse_from_rfc2822(c) {
            return Some(t.with_timezone(&Utc));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn retry_after_is_read_from_lets_encrypt_messages() {
        let want = Utc.with_ymd_and_hms(2026, 1, 5, 17, 30, 0).unwrap();
        let texts = [
            "Failed to create Order: 429 urn:ietf:params:acme:error:rateLimited: too many certificates (5) already issued for this exact set of identifiers in the last 168h0m0s, retry after 2026-01-05 17:30:00 UTC: see https://letsencrypt.org/docs/rate-limits/",
            "too many new registrations (10) from this IP address in the last 3h0m0s, retry after 2026-01-05T17:30:00Z.",
        ];
        for t in texts {
            assert!(is_rate_limited(t));
            assert_eq!(parse_retry_after(t), Some(want), "{t}");
        }
        assert_eq!(parse_retry_after("rateLimited without a time"), None);
        assert!(!is_rate_limited("Successfully authorized domain"));
    }
}

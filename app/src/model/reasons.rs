//! Reading rate-limit texts: whether one is, and when it lifts (classification of challenge
//! failures is [`super::failure`]).

use chrono::{DateTime, NaiveDateTime, Utc};

use super::failure::{Failure, FailureClass};

/// Whether an ACME error text is a rate limit: the classifier's judgement
/// ([`Failure::classify`]), so that a rule and the failure it shows never disagree. Names are
/// not evidence: an Order's generated name can hold the digits 429 (`shop-tls-1-5712429898`).
pub(crate) fn is_rate_limited(text: &str) -> bool {
    Failure::classify(text).class == FailureClass::RateLimited
}

/// Whether an ACME error text says the account's names are paused (Boulder's
/// "temporarily prevented from requesting certificates for …", answered to every new order
/// until someone unpauses them at the URL it gives).
pub(crate) fn names_paused(text: &str) -> bool {
    text.contains("temporarily prevented from requesting certificates")
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
    fn a_rate_limit_is_read_from_its_problem_type_or_wording_not_from_names() {
        for limited in [
            "Failed to create Order: 429 urn:ietf:params:acme:error:rateLimited: too many certificates (5) already issued for this exact set of identifiers in the last 168h0m0s",
            "Error creating new order :: too many failed authorizations recently: see https://letsencrypt.org/docs/failed-validation-limit/",
            "Error creating new cert :: too many certificates already issued for exact set of domains: www.example.com.br",
            "urn:acme:error:rateLimited",
            "Failed to create Order: 429 urn:ietf:params:acme:error:rateLimited: Your account is temporarily prevented from requesting certificates for app.example.com",
        ] {
            assert!(is_rate_limited(limited), "{limited}");
        }
        for not_limited in [
            // An order made invalid by a failed challenge: a generated name holding 429, and no
            // reason (cert-manager leaves the Order's reason empty).
            "Failed to wait for order resource \"shop-tls-1-5712429898\" to become ready: order is in \"invalid\" state: ",
            "Waiting on certificate issuance from order re-checkout/re-checkout-tls-svclt-2985214297: \"\"",
            "Secret web-429 not found",
            "403 urn:ietf:params:acme:error:connection: 203.0.113.7: Fetching http://app.example.com/.well-known/acme-challenge/x: Too many redirects",
            "dial tcp: socket: too many open files",
        ] {
            assert!(!is_rate_limited(not_limited), "{not_limited}");
        }
    }

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

//! Reading failure texts: why a challenge failed, and when a rate limit lifts.

use chrono::{DateTime, NaiveDateTime, Utc};
use serde::Serialize;

/// Why an HTTP-01/DNS-01 challenge failed, in the categories on-call engineers act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChallengeFailure {
    RedirectToHttps,
    NotFound,
    Timeout,
    Dns,
    Caa,
    ConnectionRefused,
    Other,
}

impl ChallengeFailure {
    /// Classifies a Challenge's `status.reason` (or an ACME error detail).
    pub fn classify(reason: &str) -> Self {
        let r = reason.to_ascii_lowercase();
        let has = |needles: &[&str]| needles.iter().any(|n| r.contains(n));
        if has(&["caa"]) {
            ChallengeFailure::Caa
        } else if has(&[
            "redirect",
            "'301'",
            "'302'",
            "'307'",
            "'308'",
            " 301 ",
            " 308 ",
            "get \"https://",
            "to https",
        ]) {
            ChallengeFailure::RedirectToHttps
        } else if has(&["connection refused"]) {
            ChallengeFailure::ConnectionRefused
        } else if has(&[
            "no such host",
            "nxdomain",
            "servfail",
            "dns problem",
            "no valid a records",
            "no valid ip addresses",
        ]) {
            ChallengeFailure::Dns
        } else if has(&["timeout", "timed out", "deadline exceeded"]) {
            ChallengeFailure::Timeout
        } else if has(&["404", "not found"]) {
            ChallengeFailure::NotFound
        } else {
            ChallengeFailure::Other
        }
    }

    /// The short label used in tables and the API.
    pub fn label(self) -> &'static str {
        match self {
            ChallengeFailure::RedirectToHttps => "redirect to HTTPS",
            ChallengeFailure::NotFound => "404 not found",
            ChallengeFailure::Timeout => "timeout",
            ChallengeFailure::Dns => "DNS",
            ChallengeFailure::Caa => "CAA",
            ChallengeFailure::ConnectionRefused => "connection refused",
            ChallengeFailure::Other => "other",
        }
    }

    /// What it means, in plain words.
    pub fn explanation(self) -> &'static str {
        match self {
            ChallengeFailure::RedirectToHttps => "the challenge URL on plain HTTP is redirected to HTTPS (e.g. by Cilium's HTTPS enforcement), so the token is not served where the CA asks for it",
            ChallengeFailure::NotFound => "the challenge URL answers 404: the ingress controller does not route /.well-known/acme-challenge/<token> to cert-manager's solver",
            ChallengeFailure::Timeout => "the challenge URL did not answer in time: the host's address is not reachable from the CA (firewall, load balancer, PROXY protocol)",
            ChallengeFailure::Dns => "the host name does not resolve (or resolves to no usable address) from the CA's point of view",
            ChallengeFailure::Caa => "a CAA DNS record forbids this CA from issuing for the domain",
            ChallengeFailure::ConnectionRefused => "the host's address refuses connections on port 80",
            ChallengeFailure::Other => "the CA rejected the challenge for another reason; read the message",
        }
    }
}

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
    fn challenge_reasons_are_classified() {
        use ChallengeFailure::*;
        let cases = [
            ("Waiting for HTTP-01 challenge propagation: wrong status code '308', expected '200'", RedirectToHttps),
            ("Waiting for HTTP-01 challenge propagation: failed to perform self check GET request 'http://a/.well-known/acme-challenge/x': Get \"https://a/.well-known/acme-challenge/x\": tls: failed", RedirectToHttps),
            ("Waiting for HTTP-01 challenge propagation: wrong status code '404', expected '200'", NotFound),
            ("Invalid response from http://a/.well-known/acme-challenge/x: 404", NotFound),
            ("Timeout during connect (likely firewall problem)", Timeout),
            ("DNS problem: NXDOMAIN looking up A for shop.example.com", Dns),
            ("CAA record for example.com prevents issuance", Caa),
            ("dial tcp 192.0.2.1:80: connect: connection refused", ConnectionRefused),
            ("Error accepting authorization: acme: urn:ietf:params:acme:error:unauthorized", Other),
        ];
        for (text, want) in cases {
            assert_eq!(ChallengeFailure::classify(text), want, "{text}");
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

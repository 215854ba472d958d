//! The classifier against the real texts in `../shared/real-texts.json` (gathered from
//! public bug reports and upstream format strings, each with its root cause) and against
//! the texts kubesim and the demo print.

use super::{Failure, FailureClass};
use FailureClass::*;

/// One entry of `real-texts.json`.
#[derive(serde::Deserialize)]
pub(crate) struct RealText {
    pub id: String,
    pub category: String,
    pub text: String,
    pub root_cause: String,
    /// `relevant`, `ambiguous`, `not-relevant` or `harmful`: what edit-in-place has to do
    /// with the root cause.
    #[serde(rename = "edit_in_place_relevance")]
    pub relevance: Option<String>,
}

/// The real texts. Tests may read `../shared` (the product never does); a missing file is a
/// failure, not a skip.
pub(crate) fn real_texts() -> Vec<RealText> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/real-texts.json");
    let raw = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("the real texts are test data and must exist: {path}: {e}"));
    serde_json::from_str(&raw).expect("real-texts.json parses")
}

/// The class each category's root cause implies. A category is the upstream situation the
/// text comes from; where one category holds texts whose root causes differ, the entry's id
/// decides (below).
fn expected(category: &str, id: &str) -> FailureClass {
    match id {
        // Boulder fetched https:// after port 80 redirected there; 443 refused.
        "acme-https-refused-acmesh-4142" => return Redirected,
        // The CA's detail, unauthorized with the URL after redirects (https) and a 404.
        "acme-unauthorized-404-https-redirect-assembled" => return Redirected,
        // No detail in the message (pre-v0.13 wording): nothing to read a cause from.
        "acme-old-authz-invalid-2259" => return Other,
        _ => {}
    }
    let (family, situation) = category.split_once('/').unwrap_or((category, ""));
    let situation = situation.split(' ').next().unwrap_or_default();
    match (family.split(' ').next().unwrap_or_default(), situation) {
        (_, "caa") => Caa,
        (_, "dns-caa") => Dns,
        (_, "connection-timeout" | "connect-timeout") => Timeout,
        (_, "rejected-identifier") => Rejected,
        (_, "unauthorized-404" | "wrong-status-404") => NotFound,
        (_, "wrong-status-403" | "wrong-status-503") => WrongStatus,
        (_, "connection-refused") => ConnectionRefused,
        (_, "connection-reset" | "eof") => ConnectionReset,
        (_, "redirect-loop" | "redirect-to-https") => Redirected,
        (_, "tls-error") => Tls,
        (_, "unexpected-body") => WrongContent,
        ("rate-limit", _) => RateLimited,
        ("dns01", _) => Dns01,
        // The solver's Ingress refused by the controller's admission webhook.
        ("solver", "present-error") => Rejected,
        // An ingress-nginx log line: no ready solver endpoint, so it answers 503.
        ("http01-self-check", "") => WrongStatus,
        (
            "certificate-condition" | "certificaterequest-condition" | "ingress-shim" | "issuer",
            _,
        ) => Other,
        _ => panic!("no expected class for category {category:?} ({id}): add one"),
    }
}

#[test]
fn every_real_text_is_classified_as_its_root_cause_implies() {
    let texts = real_texts();
    assert!(
        texts.len() >= 50,
        "expected the full set, got {}",
        texts.len()
    );
    let wrong: Vec<String> = texts
        .iter()
        .filter_map(|r| {
            let got = Failure::classify(&r.text);
            let want = expected(&r.category, &r.id);
            (got.class != want).then(|| {
                format!(
                    "{}: {:?}, expected {want:?} ({})\n  text: {}\n  root cause: {}",
                    r.id, got.class, r.category, r.text, r.root_cause
                )
            })
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn labels_say_what_was_seen() {
    let cases = [
        (
            "Waiting for http-01 challenge propagation: failed to perform self check GET request 'http://hitchhicker.xyz/.well-known/acme-challenge/y3': Get \"http://www.hitchhicker.xyz/.well-known/acme-challenge/y3\": read tcp 10.40.0.16:39910->198.54.117.215:80: read: connection reset by peer",
            "connection reset (after a redirect to www.hitchhicker.xyz)",
        ),
        (
            "Waiting for HTTP-01 challenge propagation: wrong status code '503', expected '200'",
            "HTTP 503 instead of 200",
        ),
        (
            "acme: authorization error for a.example: 400 urn:ietf:params:acme:error:connection: During secondary validation: 203.0.113.10: Fetching http://a.example/.well-known/acme-challenge/x: Timeout during connect (likely firewall problem)",
            "failed from Let's Encrypt's other vantage points: timeout",
        ),
        // Boulder after Cilium's redirect, with no certificate on 443 (an in-place challenge
        // of a first issuance without the temporary certificate).
        (
            "acme: authorization error for web.example.com: 400 urn:ietf:params:acme:error:connection: 203.0.113.10: Fetching https://web.example.com/.well-known/acme-challenge/abc: Connection reset by peer",
            "redirected to HTTPS, where the handshake is reset",
        ),
        (
            "failed to perform self check GET request 'http://api.aztecscan.xyz/.well-known/acme-challenge/...': Get \"...\": EOF",
            "connection closed (EOF)",
        ),
        (
            "Failed to create Order: 429 urn:ietf:params:acme:error:rateLimited: too many failed authorizations (5) for \"app.example.com\" in the last 1h0m0s, retry after 2026-07-02 11:04:50 UTC",
            "failed authorizations per identifier (5 per hour)",
        ),
    ];
    for (text, label) in cases {
        assert_eq!(Failure::classify(text).label, label, "{text}");
    }
}

#[test]
fn texts_that_only_look_alike_are_told_apart() {
    let cases = [
        // An HTTP-01 lookup through the cluster's resolver is DNS, not DNS-01.
        ("Waiting for HTTP-01 challenge propagation: failed to perform self check GET request 'http://a.example/.well-known/acme-challenge/x': Get \"http://a.example/.well-known/acme-challenge/x\": dial tcp: lookup a.example on 10.96.0.10:53: no such host", Dns),
        // Same host, HTTPS: the self-check followed a redirect and the TLS leg failed.
        ("Waiting for HTTP-01 challenge propagation: failed to perform self check GET request 'http://a/.well-known/acme-challenge/x': Get \"https://a/.well-known/acme-challenge/x\": remote error: tls: internal error", Redirected),
        // The issuer's account, not a challenge, although it names an https URL.
        ("Failed to register ACME account: Get \"https://acme-v02.api.letsencrypt.org/directory\": dial tcp: i/o timeout", Other),
        ("too many open files", Other),
        ("Invalid response from http://a.example/.well-known/acme-challenge/x: 500", WrongStatus),
        ("The key authorization file from the server did not match this challenge", WrongContent),
        // Boulder's remote vantage points failed where the primary passed: not the redirect
        // or the timeout their own words name.
        ("acme: authorization error for a.example: 400 urn:ietf:params:acme:error:connection: During secondary validation: 203.0.113.10: Fetching http://a.example/.well-known/acme-challenge/x: Timeout during connect (likely firewall problem)", SecondaryValidation),
        ("acme: authorization error for a.example: 403 urn:ietf:params:acme:error:unauthorized: During secondary validation: 203.0.113.10: Invalid response from https://a.example/.well-known/acme-challenge/x: 404", SecondaryValidation),
        ("", Other),
    ];
    for (text, want) in cases {
        assert_eq!(Failure::classify(text).class, want, "{text}");
    }
}

#[test]
fn classes_serialize_as_the_contract_spells_them() {
    let f = Failure::classify("wrong status code '404', expected '200'");
    let json = serde_json::to_value(&f).unwrap();
    assert_eq!(json["class"], "not-found");
    assert_eq!(json["label"], "404 Not Found");
    assert!(json["explanation"].as_str().unwrap().contains("404"));
    for class in [
        Redirected,
        NotFound,
        WrongStatus,
        WrongContent,
        Timeout,
        ConnectionRefused,
        ConnectionReset,
        Tls,
        Dns,
        Caa,
        RateLimited,
        Rejected,
        Dns01,
        Other,
    ] {
        assert_eq!(serde_json::to_value(class).unwrap(), class.as_str());
    }
}

/// Texts built from the upstream format strings (Boulder `bdns/problem.go`,
/// `ratelimits/limiter.go`, `va/http.go`; cert-manager `pkg/issuer/acme/dns/util/cache.go`)
/// that read like something else.
#[test]
fn upstream_format_strings_are_read_as_what_they_are_about() {
    let prefix = "Error accepting authorization: acme: authorization error for a.example: 400 urn:ietf:params:acme:error:";
    let cases = [
        // The CA looking up DNS-01's TXT record is DNS-01, not the host's A record.
        (format!("{prefix}dns: DNS problem: NXDOMAIN looking up TXT for _acme-challenge.a.example - check that a DNS record exists for this domain"), Dns01, "DNS-01: _acme-challenge name does not exist"),
        (format!("{prefix}dns: DNS problem: looking up TXT for _acme-challenge.a.example: DNSSEC Bogus"), Dns01, "DNS-01: the CA could not look up the TXT record"),
        (format!("{prefix}dns: DNS problem: SERVFAIL looking up TXT for _acme-challenge.a.example - the domain's nameservers may be malfunctioning"), Dns01, "DNS-01: the CA could not look up the TXT record"),
        // ... while its A lookup for HTTP-01 stays DNS.
        (format!("{prefix}dns: DNS problem: NXDOMAIN looking up A for a.example - check that a DNS record exists for this domain"), Dns, "DNS lookup failed"),
        // cert-manager finding the zone: only DNS-01 asks for SOA records.
        ("When querying the SOA record for the domain '_acme-challenge.a.example.' using nameservers [10.96.0.10:53], rcode was expected to be 'NOERROR' or 'NXDOMAIN', but got 'SERVFAIL'".to_string(), Dns01, "DNS-01: zone lookup failed"),
        // Boulder refusing a redirect is a redirect problem.
        (format!("{prefix}connection: 203.0.113.7: Fetching http://a.example/.well-known/acme-challenge/x: Invalid port in redirect target. Only ports 80 and 443 are supported, not 8443"), Redirected, "redirected to a port other than 80 or 443"),
        (format!("{prefix}connection: 203.0.113.7: Fetching http://a.example/.well-known/acme-challenge/x: Invalid host in redirect target \"a.examplewww\". Check webserver config for missing '/' in redirect target."), Redirected, "redirected to an invalid target"),
        (format!("{prefix}connection: 203.0.113.7: Fetching http://a.example/.well-known/acme-challenge/x: Too many redirects"), Redirected, "redirects the CA will not follow"),
        // The registered-domain limit in today's words.
        ("Failed to create Order: 429 urn:ietf:params:acme:error:rateLimited: too many certificates (50) already issued for \"example.com\" in the last 168h0m0s, retry after 2026-12-06 10:00:00 UTC: see https://letsencrypt.org/docs/rate-limits/#new-certificates-per-registered-domain".to_string(), RateLimited, "certificates per registered domain (50 per week)"),
        ("Failed to create Order: 429 urn:ietf:params:acme:error:rateLimited: too many certificates (5) already issued for this exact set of identifiers in the last 168h0m0s, retry after 2026-12-06 10:00:00 UTC".to_string(), RateLimited, "duplicate certificates (5 per exact set per week)"),
    ];
    for (text, class, label) in cases {
        let f = Failure::classify(&text);
        assert_eq!((f.class, &*f.label), (class, label), "{text}");
    }
}

/// cert-manager writes a reason on a pending Challenge also when all is well: a solver that
/// waits instead of self-checking (`acmechallenges/readiness.go`). No failure is read from it.
#[test]
fn informational_reasons_are_no_failure() {
    for reason in [
        "Waiting 30s before accepting HTTP-01 challenge without self-check",
        "Waiting 12.5s before accepting DNS-01 challenge without self-check",
        "Successfully authorized domain",
    ] {
        assert!(super::informational(reason), "{reason}");
        assert_eq!(
            Failure::of_challenge("pending", Some(reason)),
            None,
            "{reason}"
        );
    }
    let failing =
        "Waiting for HTTP-01 challenge propagation: wrong status code '404', expected '200'";
    assert!(!super::informational(failing));
    assert_eq!(
        Failure::of_challenge("pending", Some(failing)).map(|f| f.class),
        Some(NotFound)
    );
    assert_eq!(Failure::of_challenge("valid", Some(failing)), None);
    assert_eq!(Failure::of_challenge("pending", Some("  ")), None);
}

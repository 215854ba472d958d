//! Why a challenge failed, read from the texts cert-manager and the CA really print.
//!
//! The texts, and where upstream words them (docs/upstream.md has the table):
//! - cert-manager's HTTP-01 self-check (`pkg/issuer/acme/http/http.go`): `failed to perform
//!   self check GET request '<url>': <Go error>`, `wrong status code '<n>', expected '200'`,
//!   `did not get expected response when querying endpoint, expected "<key>" but got: <body>`
//!   (newest: `did not get expected response "<key>" when querying endpoint`). Go's client
//!   follows redirects, so a redirect shows only as a second URL `Get "https://…"` in the
//!   error, as `stopped after 10 redirects`, or as whatever the HTTPS listener answered.
//! - the CA's verdict, as cert-manager reports it (`pkg/controller/acmechallenges/sync.go`):
//!   `Error accepting authorization: acme: authorization error for <name>: <status>
//!   urn:ietf:params:acme:error:<type>: <detail>`; Boulder's details (`va/http.go`,
//!   `va/caa.go`, `va/dns.go`): `<ip>: Invalid response from <url>: 404`, `<ip>: Fetching
//!   <url>: Timeout during connect (likely firewall problem)`, `Incorrect TXT record …`.
//! - Boulder's rate limits (`ratelimits/limiter.go`, `errors/errors.go`, `wfe2/wfe.go`).
//!
//! A bare `wrong status code '404'` names no URL: whether it was a redirect is then a
//! question of context (the rules answer it, and say "likely").

use std::borrow::Cow;

use serde::Serialize;

/// The failure classes, part of the API (`failure.class`), in the JSON as kebab-case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailureClass {
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
    /// Let's Encrypt's primary vantage point passed and its remote ones failed.
    SecondaryValidation,
    Other,
}

impl FailureClass {
    /// The class's name as the JSON spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureClass::Redirected => "redirected",
            FailureClass::NotFound => "not-found",
            FailureClass::WrongStatus => "wrong-status",
            FailureClass::WrongContent => "wrong-content",
            FailureClass::Timeout => "timeout",
            FailureClass::ConnectionRefused => "connection-refused",
            FailureClass::ConnectionReset => "connection-reset",
            FailureClass::Tls => "tls",
            FailureClass::Dns => "dns",
            FailureClass::Caa => "caa",
            FailureClass::RateLimited => "rate-limited",
            FailureClass::Rejected => "rejected",
            FailureClass::Dns01 => "dns01",
            FailureClass::SecondaryValidation => "secondary-validation",
            FailureClass::Other => "other",
        }
    }

    /// A short name for tables and tallies.
    pub fn title(self) -> &'static str {
        match self {
            FailureClass::Redirected => "redirected",
            FailureClass::NotFound => "404 not found",
            FailureClass::WrongStatus => "wrong HTTP status",
            FailureClass::WrongContent => "wrong content",
            FailureClass::Timeout => "timeout",
            FailureClass::ConnectionRefused => "connection refused",
            FailureClass::ConnectionReset => "connection reset",
            FailureClass::Tls => "TLS error",
            FailureClass::Dns => "DNS",
            FailureClass::Caa => "CAA",
            FailureClass::RateLimited => "rate limited",
            FailureClass::Rejected => "rejected",
            FailureClass::Dns01 => "DNS-01",
            FailureClass::SecondaryValidation => "secondary validation",
            FailureClass::Other => "other",
        }
    }
}

/// A classified failure: the class, what exactly was seen, and what it means.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    pub class: FailureClass,
    pub label: Cow<'static, str>,
    pub explanation: Cow<'static, str>,
}

impl Failure {
    fn new(
        class: FailureClass,
        label: impl Into<Cow<'static, str>>,
        explanation: impl Into<Cow<'static, str>>,
    ) -> Self {
        Failure {
            class,
            label: label.into(),
            explanation: explanation.into(),
        }
    }

    /// What a Challenge's `status.reason` says went wrong, if anything: None for a valid
    /// Challenge, an empty reason, or one of the reasons cert-manager writes while all is well
    /// ([`informational`]).
    pub fn of_challenge(state: &str, reason: Option<&str>) -> Option<Self> {
        reason
            .filter(|r| !r.trim().is_empty() && state != "valid" && !informational(r))
            .map(Failure::classify)
    }

    /// Classifies a Challenge's `status.reason`, an ACME problem detail, or a controller log
    /// line about a challenge.
    pub fn classify(text: &str) -> Self {
        let t = text.to_ascii_lowercase();
        let has = |needles: &[&str]| needles.iter().any(|n| t.contains(n));
        use FailureClass::*;

        if let Some(limit) = rate_limit(&t) {
            return limit;
        }
        // Boulder's multi-perspective validation (`va/va.go` `doRemoteOperation`): the primary
        // vantage point passed, the remote ones did not; what follows is a remote one's
        // problem. The host answers — from some networks.
        if let Some(at) = t.find("during secondary validation:") {
            let tail = &text[at + "during secondary validation:".len()..];
            let what = Failure::classify(tail.trim());
            let label = if what.class == Other {
                "failed from Let's Encrypt's other vantage points".to_string()
            } else {
                format!(
                    "failed from Let's Encrypt's other vantage points: {}",
                    what.label
                )
            };
            return Failure::new(SecondaryValidation, label, "Let's Encrypt validated the challenge from its primary vantage point, but its remote ones — other networks and regions — failed, so the authorization fails. The host answers from some places and not from others: a firewall, WAF or geo/IP allow-list that admits only some networks (Let's Encrypt does not publish the addresses it validates from), DNS that answers differently by region (split horizon, GeoDNS), or a CDN or anycast path that differs. It can look fine from your own network and from inside the cluster: allow /.well-known/acme-challenge/ on port 80 from anywhere, and check the name's public DNS from several regions.");
        }
        if has(&["error:rejectedidentifier", "forbidden by policy"]) {
            return Failure::new(Rejected, "name refused by the CA's policy", "the CA will not issue for this name (a blocked or reserved domain, e.g. a cloud provider's hostname); no retry helps — use a name you own");
        }
        if has(&["admission webhook"]) && has(&["denied", "rejected"]) {
            return Failure::new(Rejected, "solver refused by an admission webhook", "an admission webhook in the cluster refused an object cert-manager creates to solve the challenge (usually the solver Ingress); the webhook's message says which rule");
        }
        if has(&["error:caa", "prevents issuance"]) {
            return Failure::new(Caa, "CAA record forbids issuance", "a CAA DNS record at or above the name does not list this CA (letsencrypt.org), so the CA refuses to issue");
        }
        if let Some(dns01) = dns01(&t) {
            return dns01;
        }
        if let Some(other) = not_a_challenge(&t) {
            return other;
        }
        if let Some(redirect) = redirected(text, &t) {
            return redirect;
        }
        // Where the self-check was sent on by a redirect to plain HTTP on another host, the
        // rest of the text is about that host; say so in the label.
        let via = followed_to_other_host(text)
            .map(|host| format!(" (after a redirect to {host})"))
            .unwrap_or_default();
        if has(&["broken header", "proxy protocol"]) {
            return Failure::new(ConnectionReset, format!("PROXY protocol mismatch{via}"), "the listener expects a PROXY protocol header that the request did not send (or the other way round); the in-cluster self-check hairpins to the load balancer's address and fails while outside clients may work (cert-manager#466)");
        }
        if t.ends_with(": eof") || t.contains(": eof\"") || t.contains(": eof ") || t == "eof" {
            return Failure::new(ConnectionReset, format!("connection closed (EOF){via}"), "the connection was closed before an HTTP answer came back; behind a load balancer with PROXY protocol the in-cluster self-check is cut off like this (cert-manager#466)");
        }
        if has(&["connection reset", "reset by peer"]) {
            return Failure::new(ConnectionReset, format!("connection reset{via}"), "the host's address reset the connection: something other than the ingress controller answers there (DNS pointing elsewhere), or the load balancer expects PROXY protocol");
        }
        if has(&["connection refused"]) {
            return Failure::new(ConnectionRefused, format!("connection refused{via}"), "nothing accepts connections on port 80 of the host's address: no listener on the load balancer, or DNS points at another machine");
        }
        if has(&["looking up caa"]) {
            return Failure::new(Dns, "DNS problem looking up CAA", "the CA could not look up the name's CAA records (a failure at the domain's nameservers, or at the CA itself); neither the Ingress nor cert-manager can fix it — check the DNS zone and the CA's status page");
        }
        if has(&[
            "no such host",
            "nxdomain",
            "servfail",
            "dns problem",
            "no valid a records",
            "no valid ip addresses",
        ]) || (t.contains("lookup ") && t.contains(" on "))
        {
            return Failure::new(Dns, format!("DNS lookup failed{via}"), "the host name does not resolve (or resolves to no usable address) where it was looked up; point its DNS record at the ingress load balancer's address");
        }
        if has(&["tls: ", "x509:", "handshake failure", "error:tls"]) {
            return Failure::new(Tls, format!("TLS handshake failed{via}"), "a TLS handshake failed on the way to the token: the request was sent to HTTPS (by a redirect) where the host has no certificate yet; cert-manager.io/issue-temporary-certificate: \"true\" gives it one while the real one is issued");
        }
        if has(&["timeout", "timed out", "deadline exceeded"]) {
            return Failure::new(Timeout, format!("timeout{via}"), "the host's address did not answer in time: a firewall, a security group, the load balancer's health check, or a hairpin the network does not allow");
        }
        if has(&["does not have any active endpoint"]) {
            return Failure::new(WrongStatus, "solver Service has no ready endpoint (503)", "the ingress controller has no ready solver pod behind the challenge's Service, so it answers 503; usually brief, right after cert-manager replaced or removed the solver");
        }
        if let Some(status) = status_code(&t) {
            return match status {
                404 => Failure::new(NotFound, format!("404 Not Found{via}"), "the challenge URL answers 404: the request reached a server or listener that has no route for /.well-known/acme-challenge/<token> to cert-manager's solver"),
                code => Failure::new(WrongStatus, format!("HTTP {code} instead of 200{via}"), match code {
                    401 | 403 => "something in front of the solver refuses the request (authentication, a WAF or CDN, an IP allow-list); DNS may point at a CDN instead of the cluster",
                    500..=599 => "the ingress controller or something in front of it has no working backend for the challenge path (solver pod not ready, load balancer error)",
                    _ => "the challenge URL answered something other than the token",
                }),
            };
        }
        if has(&[
            "did not get expected response",
            "key authorization",
            "error:incorrectresponse",
        ]) {
            return Failure::new(WrongContent, format!("wrong content{via}"), "something answered 200 but not with the token: the request reached the application or a default page instead of cert-manager's solver");
        }
        if has(&["authorization for identifier", "is invalid"]) {
            return Failure::new(Other, "authorization invalid (no detail)", "the CA marked the authorization invalid but the message carries no detail; the CA's reason is in the ACME authorization (fetch the challenge URL, or read the Challenge's events)");
        }
        Failure::new(
            Other,
            "other",
            "not one of the known failure texts; read the message and the Challenge's events",
        )
    }
}

/// Whether a Challenge's reason is cert-manager telling how things go rather than what went
/// wrong (`pkg/controller/acmechallenges/readiness.go`, `sync.go`): a solver configured to
/// wait instead of self-checking ("Waiting 30s before accepting HTTP-01 challenge without
/// self-check"), and the reason of a valid Challenge ("Successfully authorized domain").
pub fn informational(reason: &str) -> bool {
    let t = reason.trim().to_ascii_lowercase();
    (t.starts_with("waiting ")
        && t.contains(" before accepting ")
        && t.ends_with("without self-check"))
        || t == "successfully authorized domain"
}

/// Boulder's rate limits, current and legacy wording.
fn rate_limit(t: &str) -> Option<Failure> {
    use FailureClass::RateLimited;
    let too_many = t.contains("too many ")
        && [
            "certificates",
            "failed authorizations",
            "new orders",
            "registrations",
        ]
        .iter()
        .any(|what| t.contains(what));
    let limited = too_many
        || t.contains("error:ratelimited")
        || t.contains("temporarily prevented from requesting certificates");
    if !limited {
        return None;
    }
    let (label, explanation) = if t.contains("temporarily prevented") {
        ("identifier paused by the CA", "Let's Encrypt paused this account for the name after a long run of failed validations; no order for it succeeds until someone unpauses it at the URL in the message — fix the failing challenge first")
    } else if t.contains("failed authorizations") {
        ("failed authorizations per identifier (5 per hour)", "five validations of this name failed within the hour for this ACME account; one more attempt frees up every 12 minutes — fix the challenge before it retries")
    } else if t.contains("exact set") {
        ("duplicate certificates (5 per exact set per week)", "this exact set of names was issued five times in seven days; one more frees up about every 34 hours — stop whatever re-issues it (Secret deleted, namespace recreated)")
    } else if t.contains("new orders") {
        ("new orders per account (300 per 3 hours)", "the ACME account created 300 orders in three hours: a retry loop or bulk issuance; renewals are exempt")
    } else if t.contains("registrations") {
        ("new accounts per IP address", "too many ACME accounts were registered from this address; reuse the issuer's account key")
    } else if t.contains("already issued for") || t.contains("registered domain") {
        ("certificates per registered domain (50 per week)", "fifty new certificates were issued under this registered domain in seven days (by anyone); renewals of an exact set issued in the last 120 days are exempt")
    } else {
        (
            "rate limited",
            "the CA refused the request under a rate limit; the message says which and until when",
        )
    };
    Some(Failure::new(RateLimited, label, explanation))
}

/// DNS-01: the provider's API, the TXT record the CA saw, the propagation check.
fn dns01(t: &str) -> Option<Failure> {
    use FailureClass::Dns01;
    let has = |needles: &[&str]| needles.iter().any(|n| t.contains(n));
    // Boulder looking up the TXT record (`bdns/problem.go`: "DNS problem: NXDOMAIN looking
    // up TXT for _acme-challenge.<name>", or with an extended error "looking up TXT for
    // <name>: <summary>").
    if has(&["looking up txt for"]) {
        if has(&["nxdomain"]) {
            return Some(Failure::new(Dns01, "DNS-01: _acme-challenge name does not exist", "the CA looked up the TXT record at _acme-challenge.<name> and the name does not exist (NXDOMAIN): the record was never created in the public zone, was removed before the CA looked, or a CNAME delegation points at a name that does not exist"));
        }
        return Some(Failure::new(Dns01, "DNS-01: the CA could not look up the TXT record", "the CA's resolvers could not get an answer for _acme-challenge.<name> (a timeout or SERVFAIL at the zone's nameservers, or a broken DNSSEC chain); the zone's nameservers must answer the public internet"));
    }
    // cert-manager finding the zone of the name (`pkg/issuer/acme/dns/util/cache.go`): only
    // DNS-01 looks up SOA records.
    if has(&["querying the soa record"]) {
        return Some(Failure::new(Dns01, "DNS-01: zone lookup failed", "cert-manager could not find the DNS zone of the name: the SOA query to its nameservers failed (SERVFAIL, REFUSED); check the zone's delegation, or the nameservers cert-manager asks (--dns01-recursive-nameservers)"));
    }
    if has(&["txt record"]) {
        return Some(Failure::new(Dns01, "DNS-01: wrong or missing TXT record", "the CA did not find the expected TXT record at _acme-challenge.<name>: a stale record, another issuer's record, or a CNAME delegation pointing elsewhere"));
    }
    if has(&["not yet propagated", "propagation check failed: dns"]) {
        return Some(Failure::new(Dns01, "DNS-01: record not propagated", "cert-manager's DNS-01 self-check does not see the TXT record on the zone's authoritative servers yet; if it never does, the check may be asking the wrong servers (cluster DNS shadowing the public zone)"));
    }
    if has(&[
        "route 53",
        "route53",
        "hosted zone",
        "cloudflare",
        "azuredns",
        "clouddns",
        "google dns",
        "digitalocean",
        "rfc2136",
        "acmedns",
    ]) {
        return Some(Failure::new(Dns01, "DNS-01: DNS provider error", "cert-manager could not create the TXT record through the DNS provider's API: credentials, permissions or zone detection"));
    }
    // The DNS-01 self-check dials the zone's nameservers itself; an HTTP-01 request only
    // reaches port 53 through a name lookup ("lookup <host> on <server>:53").
    if t.contains(":53: ") && !t.contains("lookup ") {
        return Some(Failure::new(Dns01, "DNS-01: nameservers unreachable", "cert-manager's DNS-01 self-check queries the zone's authoritative nameservers directly on port 53, which the controller cannot reach (egress only through a proxy or firewall); --dns01-recursive-nameservers-only avoids it"));
    }
    None
}

/// Texts about something other than a challenge that reach the same places: the issuer's
/// ACME account, ingress-shim's refusals, a Certificate's or request's conditions.
fn not_a_challenge(t: &str) -> Option<Failure> {
    use FailureClass::Other;
    let has = |needles: &[&str]| needles.iter().any(|n| t.contains(n));
    if has(&[
        "acme account",
        "error initializing issuer",
        "/directory\"",
        "/directory:",
    ]) {
        return Some(Failure::new(Other, "the issuer cannot reach its ACME server", "cert-manager's controller cannot talk to the CA's API (egress, proxy, or DNS sending the CA's name to the wrong address); every certificate of this issuer waits for it"));
    }
    if has(&[
        "could not determine issuer",
        "must specify a secretname",
        "skipped a tls block",
        "secretname: required value",
    ]) {
        return Some(Failure::new(Other, "ingress-shim refused the Ingress (BadConfig)", "cert-manager's ingress-shim made no Certificate for this Ingress (or this TLS entry) because its annotations or TLS section are invalid"));
    }
    None
}

/// A redirect, seen in the text itself: the self-check's second URL on `https://`, Go's
/// redirect limit, an HTTPS answer that is plain HTTP, or the CA fetching an `https://` URL.
fn redirected(text: &str, t: &str) -> Option<Failure> {
    use FailureClass::Redirected;
    // Boulder refusing to follow a redirect (`va/http.go`): to a port other than 80 or 443,
    // another scheme, a bad host, too many hops, or a status it may not follow.
    if t.contains("invalid port in redirect target") {
        return Some(Failure::new(Redirected, "redirected to a port other than 80 or 443", "the challenge URL redirects to another port (an HTTPS redirect that carries a NodePort or a listener's internal port); the CA follows redirects only to ports 80 and 443 — answer /.well-known/acme-challenge/ on port 80 without redirecting, or redirect to a URL without a port"));
    }
    if t.contains("in redirect target") {
        return Some(Failure::new(Redirected, "redirected to an invalid target", "the challenge URL redirects to a URL the CA refuses to follow (another scheme, an IP address or a host without a public suffix — often a redirect missing its '/'); answer /.well-known/acme-challenge/ on port 80 without redirecting"));
    }
    if t.contains("too many redirects") || t.contains("disallowed redirect status code") {
        return Some(Failure::new(Redirected, "redirects the CA will not follow", "the challenge URL redirects more than ten times, or with a status the CA may not follow (only 301, 302, 307 and 308); answer /.well-known/acme-challenge/ on port 80 without redirecting"));
    }
    if t.contains("stopped after 10 redirects") {
        return Some(Failure::new(Redirected, "redirect loop", "the challenge URL redirects in a loop (Go's client gave up after 10 redirects), typically plain HTTP redirected to HTTPS and back; cert-manager's solver never answered"));
    }
    let to_https = followed_url(text)
        .is_some_and(|u| u.to_ascii_lowercase().starts_with("https://"))
        || t.contains("fetching https://")
        || t.contains("invalid response from https://")
        || t.contains("server gave http response to https client");
    let redirect_status = ["'301'", "'302'", "'303'", "'307'", "'308'"]
        .iter()
        .any(|s| t.contains(&format!("wrong status code {s}")));
    if to_https && (t.contains("reset by peer") || t.contains("connection reset")) {
        return Some(Failure::new(Redirected, "redirected to HTTPS, where the handshake is reset", "plain-HTTP requests for the challenge URL are redirected to HTTPS, and the HTTPS listener resets the handshake: it has no certificate for the host yet (Cilium resets until the Secret exists, cilium/cilium#26988). A first issuance behind the redirect needs cert-manager.io/issue-temporary-certificate: \"true\" on the Certificate (ingress-shim sets it with edit-in-place), so the listener serves cert-manager's temporary certificate meanwhile; or answer /.well-known/acme-challenge/ on port 80 without redirecting"));
    }
    (to_https || redirect_status).then(|| Failure::new(Redirected, "redirected to HTTPS", "plain-HTTP requests for the challenge URL are redirected to HTTPS (the host's HTTPS enforcement: Cilium's force-https, an ssl-redirect annotation), where no route leads to cert-manager's solver"))
}

/// The URL Go's client last requested, from `Get "<url>": …` (or the older unquoted form).
fn followed_url(text: &str) -> Option<&str> {
    let start = text.find("Get ")? + "Get ".len();
    let rest = text[start..].trim_start_matches('"');
    let end = rest
        .find(|c: char| c == '"' || c.is_whitespace())
        .unwrap_or(rest.len());
    let url = rest[..end].trim_end_matches(':');
    url.contains("://").then_some(url)
}

/// The host a redirect sent the self-check to, when it differs from the requested one and
/// the scheme stayed HTTP.
fn followed_to_other_host(text: &str) -> Option<String> {
    let requested = text
        .split("GET request '")
        .nth(1)
        .and_then(|r| r.split('\'').next())?;
    let followed = followed_url(text)?;
    let host = |u: &str| {
        u.split("://")
            .nth(1)
            .and_then(|r| r.split(['/', ':']).next())
            .map(str::to_ascii_lowercase)
    };
    let (a, b) = (host(requested)?, host(followed)?);
    (a != b).then_some(b)
}

/// `wrong status code '<n>'` (cert-manager) or `Invalid response from <url>: <n>` (Boulder).
fn status_code(t: &str) -> Option<u16> {
    let digits = |s: &str| -> Option<u16> {
        let d: String = s.chars().take_while(char::is_ascii_digit).collect();
        (d.len() == 3).then(|| d.parse().ok()).flatten()
    };
    if let Some(i) = t.find("wrong status code '") {
        return digits(&t[i + "wrong status code '".len()..]);
    }
    if let Some(i) = t.find("invalid response from ") {
        let rest = &t[i..];
        let after_url = rest.find(": ")? + 2;
        return digits(&rest[after_url..]);
    }
    None
}

#[cfg(test)]
pub(crate) mod tests;

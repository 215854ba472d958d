//! What the types alone cannot say: addresses, URLs, names used in URLs, hashes, and
//! settings that only make sense together. Every problem is collected, each naming its key.

use std::net::SocketAddr;
use std::time::Duration;

use super::load::{problem, Problem, Problems};
use super::{parse_cidr, AuthMode, Config};

impl Config {
    /// Checks everything the types alone cannot.
    pub fn validate(&self) -> Result<(), Problems> {
        let mut out = Vec::new();
        self.check_server(&mut out);
        self.check_clusters(&mut out);
        self.check_auth(&mut out);
        self.check_durations(&mut out);
        self.check_probe(&mut out);
        if out.is_empty() {
            Ok(())
        } else {
            Err(Problems(out))
        }
    }

    fn check_server(&self, out: &mut Vec<Problem>) {
        let h = &self.http;
        for (key, value) in [
            ("http.max_connections", h.max_connections),
            ("http.streams_per_identity", h.streams_per_identity),
            ("http.streams_total", h.streams_total),
        ] {
            if value == 0 {
                out.push(problem(key, "must be at least 1"));
            }
        }
        if h.streams_total >= h.max_connections {
            out.push(problem(
                "http.streams_total",
                format!(
                    "must be below http.max_connections ({}): open streams would otherwise take every connection",
                    h.max_connections
                ),
            ));
        }
        if let Err(e) = self.listen.parse::<SocketAddr>() {
            out.push(problem(
                "listen",
                format!(
                    "{:?} is not an address like 127.0.0.1:8080 ({e})",
                    self.listen
                ),
            ));
        }
        if let Some(contact) = &self.support.contact {
            if contact.chars().count() > 300 || contact.chars().any(char::is_control) {
                out.push(problem(
                    "support.contact",
                    "must be one line of at most 300 characters (a URL, an e-mail address or a team's name)",
                ));
            }
        }
        if crate::store::Engine::of(&self.database_url).is_none() {
            out.push(problem(
                "database_url",
                format!(
                    "{:?} must start with sqlite: or postgres:// (e.g. sqlite:///var/lib/lookout/lookout.db or postgres://lookout@db.example/lookout)",
                    self.database_url
                ),
            ));
        }
    }

    fn check_clusters(&self, out: &mut Vec<Problem>) {
        let mut seen = Vec::new();
        for (i, c) in self.clusters.iter().enumerate() {
            let key = |k: &str| format!("clusters[{i}].{k}");
            if c.name.is_empty()
                || !c
                    .name
                    .chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || ch == '-' || ch == '_' || ch == '.')
            {
                out.push(problem(key("name"), format!("{:?} must be non-empty and use only letters, digits, '-', '_' and '.' (it is part of URLs)", c.name)));
            }
            if let Some(t) = &c.tailnet {
                let t = t.trim_end_matches('.');
                let label = t.strip_suffix(".ts.net").unwrap_or_default();
                if label.is_empty() || label.contains('.') {
                    out.push(problem(
                        key("tailnet"),
                        format!("{t:?} is not a tailnet name like example-tailnet.ts.net"),
                    ));
                }
            }
            if seen.contains(&&c.name) {
                out.push(problem(
                    key("name"),
                    format!("{:?} is used by another cluster", c.name),
                ));
            }
            seen.push(&c.name);
            match (&c.kubeconfig, c.in_cluster) {
                (Some(_), true) => out.push(problem(
                    key("in_cluster"),
                    "set either kubeconfig (with context) or in_cluster = true, not both",
                )),
                (None, false) => out.push(problem(
                    key("kubeconfig"),
                    "missing: set kubeconfig (with context) or in_cluster = true",
                )),
                (Some(p), false) if !p.exists() => out.push(problem(
                    key("kubeconfig"),
                    format!("{} does not exist", p.display()),
                )),
                _ => {}
            }
            if c.in_cluster && c.context.is_some() {
                out.push(problem(
                    key("context"),
                    "context applies only to a kubeconfig, not to in_cluster",
                ));
            }
        }
    }

    /// Sign-in: proxies, access rules, OIDC, the session key, the public URL, tokens.
    fn check_auth(&self, out: &mut Vec<Problem>) {
        let a = &self.auth;
        // The same for `check-config` and `serve` (which checks again after --listen).
        let remote = self
            .listen
            .parse::<SocketAddr>()
            .is_ok_and(|l| !l.ip().is_loopback());
        if a.mode == AuthMode::None && remote && !a.allow_unauthenticated_remote {
            out.push(problem(
                "listen",
                format!("{} is not a loopback address and auth.mode is \"none\": anyone who reaches it would see every cluster. Listen on 127.0.0.1, or set auth.allow_unauthenticated_remote = true", self.listen),
            ));
        }
        for (i, cidr) in a.trusted_proxies.iter().enumerate() {
            if parse_cidr(cidr).is_none() {
                out.push(problem(
                    format!("auth.trusted_proxies[{i}]"),
                    format!("{cidr:?} is not a CIDR like 10.0.0.0/8"),
                ));
            }
        }
        for (key, name) in [
            ("auth.user_header", &a.user_header),
            ("auth.groups_header", &a.groups_header),
        ] {
            if !is_header_name(name) {
                out.push(problem(
                    key,
                    format!("{name:?} is not an HTTP header name (letters, digits and - such as X-Forwarded-User)"),
                ));
            }
        }
        if a.access_source != super::AccessSource::Config
            && !matches!(a.mode, AuthMode::Proxy | AuthMode::Oidc)
        {
            out.push(problem(
                "auth.access_source",
                "the clusters can only be asked about a person who signs in: use mode \"proxy\" or \"oidc\"",
            ));
        }
        if self.actions.impersonate && !matches!(a.mode, AuthMode::Proxy | AuthMode::Oidc) {
            out.push(problem(
                "actions.impersonate",
                "actions can only be sent as a person who signs in: use auth.mode \"proxy\" or \"oidc\"",
            ));
        }
        if a.access_reviews_in_flight == 0 {
            out.push(problem(
                "auth.access_reviews_in_flight",
                "must be at least 1",
            ));
        }
        if a.mode == AuthMode::Proxy && a.trusted_proxies.is_empty() {
            out.push(problem(
                "auth.trusted_proxies",
                "proxy mode needs at least one trusted proxy address",
            ));
        }
        for (i, rule) in self.access.iter().enumerate() {
            if rule.groups.is_empty() {
                out.push(problem(
                    format!("access[{i}].groups"),
                    "must name at least one group",
                ));
            }
        }
        if a.mode == AuthMode::Oidc {
            match &a.oidc {
                None => out.push(problem(
                    "auth.oidc",
                    "mode \"oidc\" needs an [auth.oidc] table with issuer_url and client_id",
                )),
                Some(o) => {
                    if !is_http_url(&o.issuer_url) {
                        out.push(problem(
                            "auth.oidc.issuer_url",
                            format!("{:?} is not an http(s) URL", o.issuer_url),
                        ));
                    }
                    if o.client_id.trim().is_empty() {
                        out.push(problem("auth.oidc.client_id", "must not be empty"));
                    }
                }
            }
            if a.public_url.is_none() {
                out.push(problem("auth.public_url", "mode \"oidc\" needs the URL browsers reach Lookout at (for the redirect back from the provider)"));
            }
        }
        if let Some(url) = &a.public_url {
            if !is_http_url(url) {
                out.push(problem(
                    "auth.public_url",
                    format!("{url:?} is not an http(s) URL"),
                ));
            }
        }
        if let Some(key) = &a.session_key {
            use base64::Engine;
            match base64::engine::general_purpose::STANDARD.decode(key.trim()) {
                Ok(bytes) if bytes.len() >= 64 => {}
                Ok(bytes) => out.push(problem("auth.session_key", format!("decodes to {} bytes; at least 64 are needed (e.g. head -c 64 /dev/urandom | base64 -w0)", bytes.len()))),
                Err(_) => out.push(problem("auth.session_key", "is not base64")),
            }
        }
        for (i, t) in self.tokens.iter().enumerate() {
            if t.sha256.len() != 64 || !t.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
                out.push(problem(
                    format!("tokens[{i}].sha256"),
                    "must be 64 hex digits (printf %s TOKEN | sha256sum)",
                ));
            }
            if t.name.trim().is_empty() {
                out.push(problem(format!("tokens[{i}].name"), "must not be empty"));
            }
        }
    }

    /// Durations that must be positive, and thresholds the rules can count with.
    fn check_probe(&self, out: &mut Vec<Problem>) {
        let p = &self.probe;
        if p.concurrency == 0 {
            out.push(problem("probe.concurrency", "must be at least 1"));
        }
        for (key, value) in [("probe.interval", p.interval), ("probe.timeout", p.timeout)] {
            if value.is_zero() {
                out.push(problem(key, "must be longer than 0s (e.g. 5s, 5m)"));
            }
        }
        if p.timeout >= p.interval && !p.interval.is_zero() {
            out.push(problem(
                "probe.timeout",
                "must be shorter than probe.interval",
            ));
        }
        for (key, port) in [
            ("probe.https_port", p.https_port),
            ("probe.http_port", p.http_port),
        ] {
            if port == 0 {
                out.push(problem(key, "must be a port from 1 to 65535"));
            }
        }
        for (key, list) in [("probe.allow", &p.allow), ("probe.deny", &p.deny)] {
            for (i, net) in list.iter().enumerate() {
                if net.parse::<ipnet::IpNet>().is_err() {
                    out.push(problem(
                        format!("{key}[{i}]"),
                        format!("{net:?} is not a network like 10.0.0.0/8 or 2001:db8::/32"),
                    ));
                }
            }
        }
        if let Some(path) = &p.ca_file {
            if let Err(e) = std::fs::metadata(path) {
                out.push(problem(
                    "probe.ca_file",
                    format!("cannot read {}: {e}", path.display()),
                ));
            }
        }
    }

    fn check_durations(&self, out: &mut Vec<Problem>) {
        let positive = [
            ("auth.session_ttl", self.auth.session_ttl),
            ("auth.groups_max_age", self.auth.groups_max_age),
            ("auth.access_ttl", self.auth.access_ttl),
            (
                "watch.crd_recheck_interval",
                self.watch.crd_recheck_interval,
            ),
            ("watch.list_timeout", self.watch.list_timeout),
            ("history.retention", self.history.retention),
            ("http.header_timeout", self.http.header_timeout),
        ];
        for (key, value) in positive {
            if value.is_zero() {
                out.push(problem(
                    key,
                    "must be longer than 0s (e.g. 30s, 5m, 12h, 180d)",
                ));
            } else if value > TEN_YEARS {
                out.push(problem(key, "is longer than ten years"));
            }
        }
        // A sign-in that outlives a year is not a session.
        if self.auth.session_ttl > Duration::from_secs(366 * 86_400)
            && self.auth.session_ttl <= TEN_YEARS
        {
            out.push(problem("auth.session_ttl", "is longer than a year"));
        }
        let r = &self.rules;
        for (key, value) in [
            ("rules.not_ready_critical_after", r.not_ready_critical_after),
            ("rules.challenge_failing_after", r.challenge_failing_after),
            ("rules.challenge_stuck_after", r.challenge_stuck_after),
            ("rules.challenge_queued_after", r.challenge_queued_after),
            ("rules.no_address_after", r.no_address_after),
            (
                "rules.certificate_missing_after",
                r.certificate_missing_after,
            ),
            ("rules.expiry_critical", r.expiry_critical),
            ("rules.expiry_floor", r.expiry_floor),
            ("rules.renewal_grace", r.renewal_grace),
            ("rules.backoff_min", r.backoff_min),
            ("rules.backoff_max", r.backoff_max),
        ] {
            if value.is_some_and(|v| v > TEN_YEARS) {
                out.push(problem(key, "is longer than ten years"));
            }
        }
    }
}

/// Longer than any certificate lives: a threshold beyond it is a typo.
const TEN_YEARS: Duration = Duration::from_secs(10 * 366 * 86_400);

/// An HTTP header name: one or more token characters (RFC 9110 §5.1).
fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn is_http_url(url: &str) -> bool {
    url.starts_with("https://") || url.starts_with("http://")
}

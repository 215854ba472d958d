//! Let's Encrypt as the simulated clusters see it: production and staging, with the real
//! rate limits of DOMAIN.md §3 as token buckets, shared by every cluster of a fleet (the
//! limits are global across accounts).

use std::collections::{BTreeSet, HashMap};

use chrono::{DateTime, Duration, SecondsFormat, Utc};

/// Production directory URL.
pub const PRODUCTION: &str = "https://acme-v02.api.letsencrypt.org/directory";
/// Staging directory URL.
pub const STAGING: &str = "https://acme-staging-v02.api.letsencrypt.org/directory";

/// One of the two Let's Encrypt environments, or another CA treated as unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Server {
    Production,
    Staging,
}

impl Server {
    pub fn from_url(url: &str) -> Option<Server> {
        match url.trim_end_matches('/') {
            u if u == PRODUCTION => Some(Server::Production),
            u if u == STAGING => Some(Server::Staging),
            _ => None,
        }
    }
}

/// A limit: capacity per window (a token bucket refilling capacity/window).
#[derive(Debug, Clone, Copy)]
struct Limit {
    capacity: f64,
    window: Duration,
    /// How the window is written in messages, as Let's Encrypt does (`168h0m0s`).
    window_text: &'static str,
}

fn limits(server: Server) -> (Limit, Limit, Limit) {
    let week = Duration::days(7);
    let hour = Duration::hours(1);
    match server {
        // New certificates per registered domain, per exact set, failed authorizations per name.
        Server::Production => (
            Limit {
                capacity: 50.0,
                window: week,
                window_text: "168h0m0s",
            },
            Limit {
                capacity: 5.0,
                window: week,
                window_text: "168h0m0s",
            },
            Limit {
                capacity: 5.0,
                window: hour,
                window_text: "1h0m0s",
            },
        ),
        Server::Staging => (
            Limit {
                capacity: 30_000.0,
                window: week,
                window_text: "168h0m0s",
            },
            Limit {
                capacity: 30_000.0,
                window: week,
                window_text: "168h0m0s",
            },
            Limit {
                capacity: 200.0,
                window: hour,
                window_text: "1h0m0s",
            },
        ),
    }
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    updated: DateTime<Utc>,
}

/// What each bucket counts.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum BucketKey {
    RegisteredDomain(String),
    ExactSet(String),
    FailedAuthorization(String),
}

/// The state of both environments.
#[derive(Debug, Default)]
pub struct LetsEncrypt {
    buckets: HashMap<(Server, BucketKey), Bucket>,
    /// Exact sets issued before, for the renewal exemption of the per-domain limit.
    issued_sets: BTreeSet<(Server, String)>,
}

/// The registered domain of a name, by the Public Suffix List.
pub fn registered_domain(name: &str) -> String {
    let n = name
        .trim_start_matches("*.")
        .trim_end_matches('.')
        .to_ascii_lowercase();
    psl::domain_str(&n).map(str::to_string).unwrap_or(n)
}

/// The identifiers of an order as one canonical key (lowercase, sorted, de-duplicated).
pub fn exact_set(names: &[String]) -> String {
    let set: BTreeSet<String> = names.iter().map(|n| n.to_ascii_lowercase()).collect();
    set.into_iter().collect::<Vec<_>>().join(",")
}

fn stamp(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

impl LetsEncrypt {
    fn refill(
        &mut self,
        server: Server,
        key: &BucketKey,
        limit: Limit,
        now: DateTime<Utc>,
    ) -> Bucket {
        let b = self.buckets.entry((server, key.clone())).or_insert(Bucket {
            tokens: limit.capacity,
            updated: now,
        });
        let per_token = limit.window.num_milliseconds() as f64 / limit.capacity;
        let gained = (now - b.updated).num_milliseconds().max(0) as f64 / per_token;
        b.tokens = (b.tokens + gained).min(limit.capacity);
        b.updated = now;
        *b
    }

    fn retry_after(limit: Limit, bucket: Bucket, now: DateTime<Utc>) -> DateTime<Utc> {
        let per_token = limit.window.num_milliseconds() as f64 / limit.capacity;
        now + Duration::milliseconds(((1.0 - bucket.tokens) * per_token).ceil() as i64)
    }

    /// Checks a new order; Err is the ACME problem text of a 429 `rateLimited`.
    pub fn check_new_order(
        &mut self,
        server: Server,
        names: &[String],
        now: DateTime<Utc>,
    ) -> Result<(), String> {
        let (domain_limit, set_limit, auth_limit) = limits(server);
        let tail = "see https://letsencrypt.org/docs/rate-limits/";
        for n in names {
            let key = BucketKey::FailedAuthorization(n.to_ascii_lowercase());
            let b = self.refill(server, &key, auth_limit, now);
            if b.tokens < 1.0 {
                let at = Self::retry_after(auth_limit, b, now);
                return Err(format!(
                    "429 urn:ietf:params:acme:error:rateLimited: too many failed authorizations ({}) for \"{n}\" in the last {}, retry after {}: {tail}#authorization-failures-per-hostname-per-account",
                    auth_limit.capacity, auth_limit.window_text, stamp(at)
                ));
            }
        }
        let set = exact_set(names);
        let b = self.refill(server, &BucketKey::ExactSet(set.clone()), set_limit, now);
        if b.tokens < 1.0 {
            let at = Self::retry_after(set_limit, b, now);
            return Err(format!(
                "429 urn:ietf:params:acme:error:rateLimited: too many certificates ({}) already issued for this exact set of identifiers in the last {}, retry after {}: {tail}#new-certificates-per-exact-set-of-identifiers",
                set_limit.capacity, set_limit.window_text, stamp(at)
            ));
        }
        if !self.issued_sets.contains(&(server, set)) {
            for domain in names
                .iter()
                .map(|n| registered_domain(n))
                .collect::<BTreeSet<_>>()
            {
                let b = self.refill(
                    server,
                    &BucketKey::RegisteredDomain(domain.clone()),
                    domain_limit,
                    now,
                );
                if b.tokens < 1.0 {
                    let at = Self::retry_after(domain_limit, b, now);
                    return Err(format!(
                        "429 urn:ietf:params:acme:error:rateLimited: too many certificates ({}) already issued for \"{domain}\" in the last {}, retry after {}: {tail}#new-certificates-per-registered-domain",
                        domain_limit.capacity, domain_limit.window_text, stamp(at)
                    ));
                }
            }
        }
        Ok(())
    }

    /// Counts an issued certificate: the exact set always, the registered domains unless it
    /// renews a set issued before.
    pub fn record_issuance(&mut self, server: Server, names: &[String], now: DateTime<Utc>) {
        let (domain_limit, set_limit, _) = limits(server);
        let set = exact_set(names);
        let renewal = !self.issued_sets.insert((server, set.clone()));
        self.refill(server, &BucketKey::ExactSet(set.clone()), set_limit, now);
        if let Some(b) = self.buckets.get_mut(&(server, BucketKey::ExactSet(set))) {
            b.tokens -= 1.0;
        }
        if !renewal {
            for domain in names
                .iter()
                .map(|n| registered_domain(n))
                .collect::<BTreeSet<_>>()
            {
                let key = BucketKey::RegisteredDomain(domain);
                self.refill(server, &key, domain_limit, now);
                if let Some(b) = self.buckets.get_mut(&(server, key)) {
                    b.tokens -= 1.0;
                }
            }
        }
    }

    /// Counts a failed authorization for `name`.
    pub fn record_failed_authorization(&mut self, server: Server, name: &str, now: DateTime<Utc>) {
        let (_, _, auth_limit) = limits(server);
        let key = BucketKey::FailedAuthorization(name.to_ascii_lowercase());
        self.refill(server, &key, auth_limit, now);
        if let Some(b) = self.buckets.get_mut(&(server, key)) {
            b.tokens -= 1.0;
        }
    }
}

/// RFC 3339 with seconds, for timestamps in status fields.
pub fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 6, 1, 0, 0, 0).unwrap()
    }

    #[test]
    fn registered_domains_follow_the_public_suffix_list() {
        assert_eq!(registered_domain("new.blog.example.co.uk"), "example.co.uk");
        assert_eq!(registered_domain("shop.acme.example.com"), "example.com");
        assert_eq!(
            registered_domain("host.my-tailnet.ts.net"),
            "my-tailnet.ts.net"
        );
    }

    #[test]
    fn five_certificates_per_exact_set_then_429_with_retry_after() {
        let mut le = LetsEncrypt::default();
        let names = vec!["a.example.com".to_string()];
        for i in 0..5 {
            le.check_new_order(Server::Production, &names, t0())
                .unwrap();
            le.record_issuance(Server::Production, &names, t0() + Duration::minutes(i));
        }
        let err = le
            .check_new_order(Server::Production, &names, t0() + Duration::minutes(5))
            .unwrap_err();
        assert!(
            err.contains("rateLimited") && err.contains("exact set"),
            "{err}"
        );
        assert!(err.contains("retry after 2026-06-0"), "{err}");
        // One token refills every 7d/5 = 33.6 h.
        assert!(le
            .check_new_order(Server::Production, &names, t0() + Duration::hours(35))
            .is_ok());
        // Staging is separate.
        assert!(le.check_new_order(Server::Staging, &names, t0()).is_ok());
    }

    #[test]
    fn fifty_new_certificates_per_registered_domain_but_renewals_are_exempt() {
        let mut le = LetsEncrypt::default();
        for i in 0..50 {
            let names = vec![format!("host-{i}.example.com")];
            le.check_new_order(Server::Production, &names, t0())
                .unwrap();
            le.record_issuance(Server::Production, &names, t0());
        }
        let new = vec!["host-new.example.com".to_string()];
        let err = le
            .check_new_order(Server::Production, &new, t0())
            .unwrap_err();
        assert!(err.contains("\"example.com\""), "{err}");
        let renewal = vec!["host-7.example.com".to_string()];
        assert!(le
            .check_new_order(Server::Production, &renewal, t0())
            .is_ok());
    }

    #[test]
    fn five_failed_authorizations_per_name_per_hour() {
        let mut le = LetsEncrypt::default();
        for _ in 0..5 {
            le.record_failed_authorization(Server::Production, "a.example.com", t0());
        }
        let err = le
            .check_new_order(Server::Production, &["a.example.com".to_string()], t0())
            .unwrap_err();
        assert!(err.contains("failed authorizations"), "{err}");
        assert!(le
            .check_new_order(
                Server::Production,
                &["a.example.com".to_string()],
                t0() + Duration::minutes(13)
            )
            .is_ok());
    }
}

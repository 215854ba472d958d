//! Let's Encrypt as the simulated clusters see it: production and staging, with Boulder's
//! rate limits (letsencrypt/boulder `ratelimits/`: GCRA buckets; `wfe2/wfe.go` NewOrder,
//! `ra/ra.go` countCertificateIssued and countFailedValidations), shared by every cluster of
//! a fleet (the per-domain limits are global across accounts).

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

/// A limit as Boulder configures one: `count` per `period`, room for `burst`.
#[derive(Debug, Clone, Copy)]
struct Limit {
    count: i64,
    burst: i64,
    period: Duration,
    /// The rate-limits page's anchor.
    anchor: &'static str,
}

impl Limit {
    const fn new(count: i64, period: Duration, anchor: &'static str) -> Self {
        Limit {
            count,
            burst: count,
            period,
            anchor,
        }
    }

    /// The period as Go prints a duration in Boulder's messages (`168h0m0s`).
    fn period_text(self) -> String {
        let secs = self.period.num_seconds();
        format!("{}h{}m{}s", secs / 3600, secs % 3600 / 60, secs % 60)
    }

    /// Nanoseconds between two tokens (integer division, as `limit.go` precomputes it).
    fn step(self) -> i64 {
        self.period
            .num_nanoseconds()
            .expect("a period fits in i64 ns")
            / self.count
    }
}

/// The limits, by what they count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// CertificatesPerDomain (by registered domain).
    RegisteredDomain,
    /// CertificatesPerFQDNSet.
    ExactSet,
    /// FailedAuthorizationsPerDomainPerAccount.
    FailedAuthorizations,
    /// NewOrdersPerAccount.
    NewOrders,
    /// FailedAuthorizationsForPausingPerDomainPerAccount.
    Pausing,
    /// NewRegistrationsPerIPAddress.
    Registrations,
}

fn limit(server: Server, kind: Kind) -> Limit {
    let week = Duration::days(7);
    let hour = Duration::hours(1);
    let three_hours = Duration::hours(3);
    match (server, kind) {
        (Server::Production, Kind::RegisteredDomain) => {
            Limit::new(50, week, "new-certificates-per-registered-domain")
        }
        (Server::Production, Kind::ExactSet) => {
            Limit::new(5, week, "new-certificates-per-exact-set-of-identifiers")
        }
        (Server::Production, Kind::FailedAuthorizations) => {
            Limit::new(5, hour, "authorization-failures-per-identifier-per-account")
        }
        (Server::Production, Kind::NewOrders) => {
            Limit::new(300, three_hours, "new-orders-per-account")
        }
        (Server::Staging, Kind::RegisteredDomain | Kind::ExactSet) => {
            Limit::new(30_000, week, "new-certificates-per-registered-domain")
        }
        (Server::Staging, Kind::FailedAuthorizations) => Limit::new(
            200,
            hour,
            "authorization-failures-per-identifier-per-account",
        ),
        (Server::Staging, Kind::NewOrders) => {
            Limit::new(1_500, three_hours, "new-orders-per-account")
        }
        (_, Kind::Registrations) => Limit::new(10, three_hours, "new-registrations-per-ip-address"),
        // Boulder's configured pausing limit: 3 600 failures, one forgiven a day.
        (_, Kind::Pausing) => Limit {
            count: 1,
            burst: 3_600,
            period: Duration::days(1),
            anchor: "",
        },
    }
}

/// A bucket: its theoretical arrival time in Unix nanoseconds (`gcra.go`).
type Tat = i64;

fn ns(t: DateTime<Utc>) -> i64 {
    t.timestamp_nanos_opt().expect("a time within i64 ns")
}

/// What spending one token at `now` would give: the new TAT, or how long until it fits.
fn try_spend(tat: Option<Tat>, l: Limit, now: DateTime<Utc>) -> Result<Tat, Duration> {
    let now = ns(now);
    let from = tat.unwrap_or(now).max(now);
    let next = from + l.step();
    let slack = now - (next - l.step() * l.burst);
    if slack < 0 {
        Err(Duration::nanoseconds(-slack))
    } else {
        Ok(next)
    }
}

/// Who counts: (server, kind, key, account).
type BucketKey = (Server, Kind, String, String);

/// The state of both environments.
#[derive(Debug, Default)]
pub struct LetsEncrypt {
    tats: HashMap<BucketKey, Tat>,
    /// When each exact set was issued (renewal = issued in the last 120 days).
    issued: HashMap<(Server, String), Vec<DateTime<Utc>>>,
    /// Names paused per (server, account).
    paused: BTreeSet<(Server, String, String)>,
    /// Per-account limits that differ from the defaults (Boulder's overrides).
    overrides: HashMap<(Server, Kind, String), Limit>,
    /// Every certificate issued, oldest first: what an ARI order may replace.
    served: Vec<Served>,
}

/// A certificate the CA issued, as ARI sees it (`sa` `replacementOrders`).
#[derive(Debug, Clone)]
struct Served {
    server: Server,
    names: BTreeSet<String>,
    issued: DateTime<Utc>,
    /// Its replacement was finalized.
    replaced: bool,
    /// A replacement order accepted at this time is still pending (until it is finalized,
    /// fails, or outlives Boulder's 7-day order lifetime).
    pending_replacement: Option<DateTime<Utc>>,
}

/// Boulder's suggested renewal window of a certificate issued at `issued`
/// (`core/objects.go` `RenewalInfoSimple`), for the 90 days Let's Encrypt's certificates last.
fn renewal_window(issued: DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>) {
    let not_after = issued + Duration::days(90) - Duration::seconds(1);
    let validity = (not_after + Duration::seconds(1)) - issued;
    let renewal_offset = if validity < Duration::days(10) {
        validity / 2
    } else {
        validity / 3
    };
    let ideal = not_after - renewal_offset;
    let margin = validity / 100;
    (ideal - margin, ideal + margin)
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

/// An order's verdict: allowed, or the ACME problem a 429 carries.
pub type Verdict = Result<(), String>;

impl LetsEncrypt {
    fn tat(&self, key: &BucketKey) -> Option<Tat> {
        self.tats.get(key).copied()
    }

    /// The limit of a bucket: an override for its account, else the default.
    fn limit_of(&self, key: &BucketKey) -> Limit {
        self.overrides
            .get(&(key.0, key.1, key.3.clone()))
            .copied()
            .unwrap_or_else(|| limit(key.0, key.1))
    }

    /// Overrides the new-orders limit of one account (Boulder's `NewOrdersPerAccount`
    /// override by registration id): `count` per `period`.
    pub fn override_new_orders(
        &mut self,
        server: Server,
        account: &str,
        count: i64,
        period: Duration,
    ) {
        let default = limit(server, Kind::NewOrders);
        self.overrides.insert(
            (server, Kind::NewOrders, account.to_string()),
            Limit {
                count,
                burst: count,
                period,
                ..default
            },
        );
    }

    /// Spends one if it fits (Boulder's spend-only transactions never overdraw).
    fn spend(&mut self, key: BucketKey, now: DateTime<Utc>) -> bool {
        match try_spend(self.tat(&key), self.limit_of(&key), now) {
            Ok(tat) => {
                self.tats.insert(key, tat);
                true
            }
            Err(_) => false,
        }
    }

    fn renewal(&self, server: Server, set: &str, now: DateTime<Utc>) -> bool {
        self.issued
            .get(&(server, set.to_string()))
            .is_some_and(|ts| {
                ts.iter()
                    .any(|t| *t <= now && now - *t <= Duration::days(120))
            })
    }

    /// A new order from `account` (`wfe2/wfe.go` NewOrder): a paused name is refused; an
    /// ARI replacement (`replaces`; kubesim's cert-manager sends none) skips every limit
    /// when the CA accepts it ([`LetsEncrypt::accept_replacement`]); otherwise new orders per account
    /// (not for a renewal), failed authorizations per name, certificates per registered
    /// domain (not for a renewal) and per exact set are checked together, and only an
    /// allowed order spends (its new order). Err is the problem a 429 carries.
    pub fn check_new_order(
        &mut self,
        server: Server,
        account: &str,
        names: &[String],
        now: DateTime<Utc>,
        replaces: bool,
    ) -> Verdict {
        let names: Vec<String> = names.iter().map(|n| n.to_ascii_lowercase()).collect();
        let paused: Vec<&str> = names
            .iter()
            .filter(|n| {
                self.paused
                    .contains(&(server, account.to_string(), (*n).clone()))
            })
            .map(String::as_str)
            .collect();
        if !paused.is_empty() {
            return Err(format!(
                "429 urn:ietf:params:acme:error:rateLimited: Your account is temporarily prevented from requesting certificates for {} and possibly others. Please visit: https://portal.letsencrypt.org/sfe/v1/unpause?jwt=simulated",
                paused.join(", ")
            ));
        }
        if replaces && self.accept_replacement(server, &names, now) {
            return Ok(());
        }
        let set = exact_set(&names);
        let renewal = self.renewal(server, &set, now);
        let mut checks: Vec<(BucketKey, String)> = Vec::new();
        let orders = (server, Kind::NewOrders, String::new(), account.to_string());
        if !renewal {
            checks.push((
                orders.clone(),
                "too many new orders ({n}) from this account".into(),
            ));
        }
        for n in &names {
            checks.push((
                (
                    server,
                    Kind::FailedAuthorizations,
                    n.clone(),
                    account.to_string(),
                ),
                format!("too many failed authorizations ({{n}}) for \"{n}\""),
            ));
        }
        if !renewal {
            for d in names
                .iter()
                .map(|n| registered_domain(n))
                .collect::<BTreeSet<_>>()
            {
                checks.push((
                    (server, Kind::RegisteredDomain, d.clone(), String::new()),
                    format!("too many certificates ({{n}}) already issued for \"{d}\""),
                ));
            }
        }
        checks.push((
            (server, Kind::ExactSet, set, String::new()),
            "too many certificates ({n}) already issued for this exact set of identifiers".into(),
        ));
        // The strictest denial is the answer (`limiter.go` stricter: the longest wait).
        let denied = checks
            .iter()
            .filter_map(|(key, what)| {
                try_spend(self.tat(key), self.limit_of(key), now)
                    .err()
                    .map(|wait| (wait, key, what))
            })
            .max_by_key(|(wait, _, _)| *wait);
        if let Some((wait, key, what)) = denied {
            let l = self.limit_of(key);
            return Err(format!(
                "429 urn:ietf:params:acme:error:rateLimited: {} in the last {}, retry after {}: see https://letsencrypt.org/docs/rate-limits/#{}",
                what.replace("{n}", &l.burst.to_string()),
                l.period_text(),
                stamp(now + wait),
                l.anchor
            ));
        }
        if !renewal {
            self.spend(orders, now);
        }
        Ok(())
    }

    /// An issued certificate (`ra.go` countCertificateIssued): the exact set always, each
    /// registered domain unless it renews a set issued in the last 120 days — each only if it
    /// has room.
    pub fn record_issuance(&mut self, server: Server, names: &[String], now: DateTime<Utc>) {
        let set = exact_set(names);
        if !self.renewal(server, &set, now) {
            for d in names
                .iter()
                .map(|n| registered_domain(n))
                .collect::<BTreeSet<_>>()
            {
                self.spend((server, Kind::RegisteredDomain, d, String::new()), now);
            }
        }
        self.spend((server, Kind::ExactSet, set.clone(), String::new()), now);
        self.issued.entry((server, set)).or_default().push(now);
        let names: BTreeSet<String> = names.iter().map(|n| n.to_ascii_lowercase()).collect();
        for earlier in &mut self.served {
            if earlier.server == server
                && !earlier.names.is_disjoint(&names)
                && earlier.pending_replacement.take().is_some()
            {
                earlier.replaced = true;
            }
        }
        self.served.push(Served {
            server,
            names,
            issued: now,
            replaced: false,
            pending_replacement: None,
        });
    }

    /// Whether an order that `replaces` the latest certificate sharing one of `names` is
    /// exempt from the limits (`wfe2/wfe.go` `validateReplacementOrder`): inside that
    /// certificate's suggested window, with no replacement of it pending or finalized. A
    /// refused replacement (`alreadyReplaced`, or one outside the window) is then an order
    /// like any other — cert-manager sends it again without `replaces`.
    fn accept_replacement(&mut self, server: Server, names: &[String], now: DateTime<Utc>) -> bool {
        let Some(cert) = self
            .served
            .iter_mut()
            .filter(|c| c.server == server && c.issued < now)
            .rfind(|c| names.iter().any(|n| c.names.contains(n)))
        else {
            return false;
        };
        let pending = cert
            .pending_replacement
            .is_some_and(|t| now < t + Duration::days(7));
        let (start, end) = renewal_window(cert.issued);
        let accepted = !cert.replaced && !pending && now >= start && now < end;
        if accepted {
            cert.pending_replacement = Some(now);
        }
        accepted
    }

    /// A failed authorization (`ra.go` countFailedValidations): the per-account bucket of the
    /// name, and its pausing bucket — when that one has no room, the name is paused.
    pub fn record_failed_authorization(
        &mut self,
        server: Server,
        account: &str,
        name: &str,
        now: DateTime<Utc>,
    ) {
        let name = name.to_ascii_lowercase();
        // The replacement order this authorization belonged to is invalid now.
        for cert in self
            .served
            .iter_mut()
            .filter(|c| c.server == server && c.names.contains(&name))
        {
            cert.pending_replacement = None;
        }
        self.spend(
            (
                server,
                Kind::FailedAuthorizations,
                name.clone(),
                account.to_string(),
            ),
            now,
        );
        if !self.spend(
            (server, Kind::Pausing, name.clone(), account.to_string()),
            now,
        ) {
            self.paused.insert((server, account.to_string(), name));
        }
    }

    /// A new ACME account from `ip` (NewRegistrationsPerIPAddress, 10 per 3 hours).
    pub fn check_new_account(&mut self, server: Server, ip: &str, now: DateTime<Utc>) -> Verdict {
        let key = (server, Kind::Registrations, ip.to_string(), String::new());
        let l = limit(server, Kind::Registrations);
        match try_spend(self.tat(&key), l, now) {
            Ok(tat) => {
                self.tats.insert(key, tat);
                Ok(())
            }
            Err(wait) => Err(format!(
                "429 urn:ietf:params:acme:error:rateLimited: too many new registrations ({}) from this IP address in the last {}, retry after {}: see https://letsencrypt.org/docs/rate-limits/#{}",
                l.burst, l.period_text(), stamp(now + wait), l.anchor
            )),
        }
    }

    /// Pauses `name` for `account`, as the CA does after endless failures (for scenarios).
    pub fn pause(&mut self, server: Server, account: &str, name: &str) {
        self.paused
            .insert((server, account.to_string(), name.to_ascii_lowercase()));
    }

    /// Whether `name` is paused for `account`.
    pub fn is_paused(&self, server: Server, account: &str, name: &str) -> bool {
        self.paused
            .contains(&(server, account.to_string(), name.to_ascii_lowercase()))
    }

    /// Tokens left in a bucket at `now` and when the next comes back (None when full):
    /// what a test compares with Lookout's budgets. `key` is the registered domain, the
    /// exact set (as [`exact_set`]), the name, or empty for new orders; `account` is empty
    /// for the limits that are not per account.
    pub fn remaining(
        &self,
        server: Server,
        kind: Kind,
        key: &str,
        account: &str,
        now: DateTime<Utc>,
    ) -> (i64, Option<DateTime<Utc>>) {
        let bucket = (server, kind, key.to_string(), account.to_string());
        let l = self.limit_of(&bucket);
        let Some(tat) = self.tat(&bucket) else {
            return (l.burst, None);
        };
        let now_ns = ns(now);
        let tat = tat.max(now_ns);
        let left = ((now_ns - tat + l.step() * l.burst) / l.step()).clamp(0, l.burst);
        let next = (left < l.burst).then(|| {
            DateTime::from_timestamp_nanos(tat - l.step() * l.burst + (left + 1) * l.step())
        });
        (left, next)
    }
}

/// RFC 3339 with seconds, for timestamps in status fields.
pub fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ARI: exempt inside Boulder's window of the latest certificate with a name in common,
    /// once at a time; outside it, or already replaced, an order like any other.
    #[test]
    fn a_replacement_is_exempt_only_in_its_window_and_once() {
        let mut le = LetsEncrypt::default();
        let set = vec!["ari.example.com".to_string()];
        le.record_issuance(Server::Production, &set, t0());
        let (start, end) = renewal_window(t0());
        assert_eq!(
            start,
            t0() + Duration::days(60)
                - Duration::seconds(1)
                - Duration::hours(21)
                - Duration::minutes(36)
        );
        assert_eq!(
            end,
            t0() + Duration::days(60) - Duration::seconds(1)
                + Duration::hours(21)
                + Duration::minutes(36)
        );
        assert!(
            !le.accept_replacement(Server::Production, &set, t0() + Duration::days(30)),
            "too early"
        );
        assert!(
            le.accept_replacement(Server::Production, &set, start),
            "in the window"
        );
        assert!(
            !le.accept_replacement(Server::Production, &set, start + Duration::hours(1)),
            "one is pending"
        );
        le.record_failed_authorization(
            Server::Production,
            "acct",
            "ari.example.com",
            start + Duration::hours(2),
        );
        assert!(
            le.accept_replacement(Server::Production, &set, start + Duration::hours(3)),
            "the pending one failed"
        );
        le.record_issuance(Server::Production, &set, start + Duration::hours(4));
        // The new certificate is the one replaced now; the old one counts as replaced.
        assert!(
            !le.accept_replacement(Server::Production, &set, start + Duration::hours(5)),
            "outside the new one's window"
        );
        assert!(le.served[0].replaced && !le.served[1].replaced);
        assert!(
            !le.accept_replacement(
                Server::Production,
                &["other.example.com".to_string()],
                start
            ),
            "nothing to replace"
        );
    }
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
            le.check_new_order(Server::Production, "acct", &names, t0(), false)
                .unwrap();
            le.record_issuance(Server::Production, &names, t0() + Duration::minutes(i));
        }
        let err = le
            .check_new_order(
                Server::Production,
                "acct",
                &names,
                t0() + Duration::minutes(5),
                false,
            )
            .unwrap_err();
        assert!(
            err.contains("rateLimited") && err.contains("exact set"),
            "{err}"
        );
        assert!(err.contains("retry after 2026-06-0"), "{err}");
        // One token refills every 7d/5 = 33.6 h.
        assert!(le
            .check_new_order(
                Server::Production,
                "acct",
                &names,
                t0() + Duration::hours(35),
                false
            )
            .is_ok());
        // Staging is separate.
        assert!(le
            .check_new_order(Server::Staging, "acct", &names, t0(), false)
            .is_ok());
    }

    #[test]
    fn fifty_new_certificates_per_registered_domain_but_renewals_are_exempt() {
        let mut le = LetsEncrypt::default();
        for i in 0..50 {
            let names = vec![format!("host-{i}.example.com")];
            le.check_new_order(Server::Production, "acct", &names, t0(), false)
                .unwrap();
            le.record_issuance(Server::Production, &names, t0());
        }
        let new = vec!["host-new.example.com".to_string()];
        let err = le
            .check_new_order(Server::Production, "acct", &new, t0(), false)
            .unwrap_err();
        assert!(err.contains("\"example.com\""), "{err}");
        let renewal = vec!["host-7.example.com".to_string()];
        assert!(le
            .check_new_order(Server::Production, "acct", &renewal, t0(), false)
            .is_ok());
        // 121 days later it is a new certificate again.
        let later = t0() + Duration::days(121);
        le.record_issuance(Server::Production, &renewal, later);
        assert_eq!(
            le.remaining(
                Server::Production,
                Kind::RegisteredDomain,
                "example.com",
                "",
                later
            )
            .0,
            49
        );
    }

    #[test]
    fn five_failed_authorizations_per_name_per_hour() {
        let mut le = LetsEncrypt::default();
        for _ in 0..5 {
            le.record_failed_authorization(Server::Production, "acct", "a.example.com", t0());
        }
        let a = ["a.example.com".to_string()];
        let err = le
            .check_new_order(Server::Production, "acct", &a, t0(), false)
            .unwrap_err();
        assert!(
            err.contains(
                "too many failed authorizations (5) for \"a.example.com\" in the last 1h0m0s"
            ),
            "{err}"
        );
        assert!(
            le.check_new_order(Server::Production, "other", &a, t0(), false)
                .is_ok(),
            "per account"
        );
        assert!(le
            .check_new_order(
                Server::Production,
                "acct",
                &a,
                t0() + Duration::minutes(13),
                false
            )
            .is_ok());
    }

    #[test]
    fn a_denied_order_costs_nothing_and_orders_per_account_refill() {
        let mut le = LetsEncrypt::default();
        for i in 0..300 {
            le.check_new_order(
                Server::Production,
                "acct",
                &[format!("h{i}.example.org")],
                t0(),
                false,
            )
            .unwrap();
        }
        let err = le
            .check_new_order(
                Server::Production,
                "acct",
                &["x.example.org".into()],
                t0(),
                false,
            )
            .unwrap_err();
        assert!(
            err.contains("too many new orders (300) from this account in the last 3h0m0s"),
            "{err}"
        );
        assert_eq!(
            le.remaining(Server::Production, Kind::NewOrders, "", "acct", t0())
                .0,
            0
        );
        // One back every 36 s; an ARI replacement in its certificate's window needs none (a
        // certificate for x issued 60 days ago; the order adds a name, so it is no renewal).
        le.record_issuance(
            Server::Production,
            &["x.example.org".into()],
            t0() - Duration::days(60),
        );
        let replacing = ["x.example.org".to_string(), "y.example.org".to_string()];
        assert!(le
            .check_new_order(Server::Production, "acct", &replacing, t0(), true)
            .is_ok());
        assert!(
            le.check_new_order(Server::Production, "acct", &replacing, t0(), true)
                .is_err(),
            "a second replacement of it is an order like any other"
        );
        assert!(le
            .check_new_order(
                Server::Production,
                "acct",
                &["x.example.org".into()],
                t0() + Duration::seconds(36),
                false
            )
            .is_ok());
    }

    #[test]
    fn a_name_failing_3600_times_is_paused_for_the_account() {
        let mut le = LetsEncrypt::default();
        for i in 0..3_601 {
            le.record_failed_authorization(
                Server::Production,
                "acct",
                "z.example.com",
                t0() + Duration::seconds(i),
            );
        }
        assert!(le.is_paused(Server::Production, "acct", "z.example.com"));
        let err = le
            .check_new_order(
                Server::Production,
                "acct",
                &["z.example.com".into()],
                t0() + Duration::days(1),
                false,
            )
            .unwrap_err();
        assert!(err.contains("Your account is temporarily prevented from requesting certificates for z.example.com"), "{err}");
    }
}

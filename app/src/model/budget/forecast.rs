//! The next days' issuances against the budgets: which registered domains run out.
//!
//! Every Let's Encrypt Certificate due in the horizon (past its `renewalTime`, or not ready
//! and so issuing now) is played, in time order, against the budgets as they stand: each
//! costs one of its exact set and — unless it is a renewal — one of each registered domain
//! (DOMAIN.md §3.5: non-ARI renewals are exempt only from the registered-domain and
//! new-orders limits). Tokens come back as Boulder's buckets emit them, one per
//! `period / count`. An issuance that finds a bucket empty is refused; the domain "runs out".
//!
//! Besides the counted buckets, what the CA has said already binds: a Certificate whose
//! last order the CA refused with a retry time is refused until then (whatever the replay
//! makes of it: Boulder's word outranks it), a name the account has paused is refused, and
//! a new certificate (not a renewal) needs room in its account's new orders (300 / 3 h).
//!
//! Failed authorizations are not forecast: they depend on whether the challenges fail.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use super::*;

/// A Certificate that will be issued within the horizon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Due {
    /// The ACME directory URL (Let's Encrypt's only: other CAs have other limits).
    pub server: String,
    pub names: Vec<String>,
    /// When cert-manager will ask: its renewal time, or now when it is issuing already.
    pub at: DateTime<Utc>,
    /// The same set was issued in the last 120 days.
    pub renewal: bool,
    /// The ACME account its issuer orders with ([`super::account`]), for the per-account
    /// limits; None when unknown.
    pub account: Option<String>,
    /// Its last order was refused because Let's Encrypt paused its names for the account
    /// (the Certificate's Issuing condition says so): refused until someone unpauses them.
    pub paused: bool,
    pub origin: Origin,
}

impl Due {
    /// When `cert` will next be issued, if that is before `until`: at its renewal time when
    /// it is ready, now when it is not (it is being issued, or retried after a failure).
    /// `renewal` is judged from its current certificate: the same names issued in the last
    /// 120 days.
    pub fn of(
        cert: &crate::model::certificate::CertificateView,
        (server, account): (&str, Option<String>),
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Option<Due> {
        let at = if cert.is_ready() {
            cert.renewal_time?.max(now)
        } else {
            now
        };
        if at > until || cert.dns_names.is_empty() {
            return None;
        }
        let names: Vec<String> = cert.dns_names.iter().map(|n| n.to_string()).collect();
        Some(Due {
            server: server.to_string(),
            at,
            renewal: is_renewal(server, &names, cert.not_before, at, &[]),
            names,
            account,
            paused: cert.rare.issuing.as_ref().is_some_and(|i| {
                i.message
                    .as_deref()
                    .is_some_and(crate::model::reasons::names_paused)
            }),
            origin: Origin {
                cluster: cert.cluster.to_string(),
                namespace: cert.namespace.to_string(),
                kind: "Certificate".into(),
                name: cert.name.to_string(),
            },
        })
    }
}

/// Why a due issuance would be refused.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Refusal {
    pub limit: Limit,
    /// The registered domain or the exact set that has no room.
    pub key: String,
    /// When that bucket has room again.
    pub until: Option<DateTime<Utc>>,
}

/// One due issuance and what the budgets say of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DueCertificate {
    pub certificate: Origin,
    pub at: DateTime<Utc>,
    pub renewal: bool,
    pub refused: Option<Refusal>,
}

/// A registered domain's next days.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DomainForecast {
    pub server: String,
    pub domain: String,
    /// New certificates per registered domain: its room now, and what is left at the end of
    /// the horizon after the due issuances.
    pub capacity: u32,
    pub left_now: u32,
    pub left_at_end: u32,
    /// When the first due issuance would be refused; None when all fit.
    pub runs_out: Option<DateTime<Utc>>,
    /// A due issuance is refused over a budget that has no room already now (not only by
    /// the time it is due): Let's Encrypt refuses these names now.
    pub refusing_now: bool,
    pub refused: u32,
    pub renewals: u32,
    pub new_certificates: u32,
    /// The due issuances, in time order.
    pub due: Vec<DueCertificate>,
    /// Where they come from.
    pub clusters: Vec<String>,
    pub namespaces: Vec<String>,
}

/// A bucket's whole tokens as the forecast moves on.
struct Tokens {
    left: i64,
    /// It had no room at `now`, before the forecast moved on.
    empty_now: bool,
    burst: i64,
    next: Option<DateTime<Utc>>,
    interval: Duration,
}

impl Tokens {
    /// From a budget as the viewer sees it, or full when none is in use. A budget in use
    /// whose next token the viewer may not know (spent partly elsewhere) gets it after a
    /// whole interval: the latest it can be.
    fn of(server: &str, limit: Limit, key: &str, budgets: &[Budget], now: DateTime<Utc>) -> Self {
        let r = rate(server, limit);
        let interval = r.period / i32::try_from(r.count).unwrap_or(i32::MAX);
        let current = budgets
            .iter()
            .find(|b| b.server == server && b.limit == limit && b.key == key);
        let left = current.map_or(r.burst, |b| r.burst - i64::from(b.used).min(r.burst));
        let next = current
            .filter(|_| left < r.burst)
            .map(|b| b.frees_at.unwrap_or(now + interval));
        Tokens {
            left,
            empty_now: left <= 0,
            burst: r.burst,
            next,
            interval,
        }
    }

    fn advance(&mut self, to: DateTime<Utc>) {
        while let Some(next) = self.next.filter(|n| *n <= to) {
            self.left += 1;
            self.next = (self.left < self.burst).then(|| next + self.interval);
        }
    }

    fn spend(&mut self, at: DateTime<Utc>) {
        self.left -= 1;
        if self.next.is_none() {
            self.next = Some(at + self.interval);
        }
    }
}

/// What the CA has said already of `d`: its last order refused with a retry time still to
/// come (Boulder's word on this very Certificate), or one of its names paused for its
/// account (refused until someone unpauses it).
fn already_refused(d: &Due, budgets: &[Budget]) -> Option<Refusal> {
    let this = |o: &Origin| {
        o.cluster == d.origin.cluster
            && o.namespace == d.origin.namespace
            && o.name == d.origin.name
    };
    let named = budgets.iter().find(|b| {
        b.frees_at_from_ca
            && b.server == d.server
            && b.refused.as_ref().is_some_and(this)
            && b.frees_at.is_some_and(|t| t > d.at)
    });
    if let Some(b) = named {
        return Some(Refusal {
            limit: b.limit,
            key: b.key.clone(),
            until: b.frees_at,
        });
    }
    if d.paused {
        return Some(Refusal {
            limit: Limit::Paused,
            key: d.names.first().cloned().unwrap_or_default(),
            until: None,
        });
    }
    let account = d.account.as_ref()?;
    budgets
        .iter()
        .find(|b| {
            b.limit == Limit::Paused
                && b.server == d.server
                && b.account.as_ref() == Some(account)
                && d.names.iter().any(|n| n.eq_ignore_ascii_case(&b.key))
        })
        .map(|b| Refusal {
            limit: Limit::Paused,
            key: b.key.clone(),
            until: b.frees_at,
        })
}

/// How `due` issuances fare against `budgets` (as the viewer sees them) until
/// `now + horizon`, per server and registered domain: the ones that run out first, then
/// the ones with least room left.
pub fn forecast(
    budgets: &[Budget],
    due: &[Due],
    now: DateTime<Utc>,
    horizon: Duration,
) -> Vec<DomainForecast> {
    let mut due: Vec<&Due> = due.iter().filter(|d| !d.names.is_empty()).collect();
    due.sort_by(|a, b| (a.at, &a.origin).cmp(&(b.at, &b.origin)));
    let mut buckets: BTreeMap<(String, Limit, String), Tokens> = BTreeMap::new();
    let mut out: BTreeMap<(String, String), DomainForecast> = BTreeMap::new();
    for d in due {
        // The set spent its exact-set budget within the week: it was issued, so this is a
        // renewal whatever the Certificate's status says.
        let set = set_key(&d.names);
        let renewal = d.renewal || is_renewal(&d.server, &d.names, None, d.at, budgets);
        let domains = domains(&d.names);
        let mut keys = vec![(d.server.clone(), Limit::ExactSet, set)];
        if !renewal {
            keys.extend(
                domains
                    .iter()
                    .map(|x| (d.server.clone(), Limit::RegisteredDomain, x.clone())),
            );
        }
        if let Some(account) = d.account.as_ref().filter(|_| !renewal) {
            keys.push((d.server.clone(), Limit::NewOrders, account.clone()));
        }
        let (mut refused, mut empty_now) = match already_refused(d, budgets) {
            Some(r) => (Some(r), true),
            None => (None, false),
        };
        for key in &keys {
            let t = buckets
                .entry(key.clone())
                .or_insert_with(|| Tokens::of(&key.0, key.1, &key.2, budgets, now));
            t.advance(d.at);
            if t.left <= 0 && refused.is_none() {
                empty_now = t.empty_now;
                refused = Some(Refusal {
                    limit: key.1,
                    key: key.2.clone(),
                    until: t.next,
                });
            }
        }
        if refused.is_none() {
            for key in &keys {
                if let Some(t) = buckets.get_mut(key) {
                    t.spend(d.at);
                }
            }
        }
        for domain in domains {
            let f = out
                .entry((d.server.clone(), domain.clone()))
                .or_insert_with(|| {
                    let t = Tokens::of(&d.server, Limit::RegisteredDomain, &domain, budgets, now);
                    DomainForecast {
                        server: d.server.clone(),
                        left_now: u32::try_from(t.left).unwrap_or(0),
                        capacity: u32::try_from(t.burst).unwrap_or(u32::MAX),
                        domain,
                        left_at_end: 0,
                        runs_out: None,
                        refusing_now: false,
                        refused: 0,
                        renewals: 0,
                        new_certificates: 0,
                        due: Vec::new(),
                        clusters: Vec::new(),
                        namespaces: Vec::new(),
                    }
                });
            if refused.is_some() {
                f.refused += 1;
                f.runs_out = f.runs_out.or(Some(d.at));
                f.refusing_now |= empty_now;
            }
            if renewal {
                f.renewals += 1;
            } else {
                f.new_certificates += 1;
            }
            f.due.push(DueCertificate {
                certificate: d.origin.clone(),
                at: d.at,
                renewal,
                refused: refused.clone(),
            });
        }
    }
    let end = now + horizon;
    let mut out: Vec<DomainForecast> = out
        .into_values()
        .map(|mut f| {
            let key = (f.server.clone(), Limit::RegisteredDomain, f.domain.clone());
            let mut t = buckets
                .remove(&key)
                .unwrap_or_else(|| Tokens::of(&key.0, key.1, &key.2, budgets, now));
            t.advance(end);
            f.left_at_end = u32::try_from(t.left).unwrap_or(0);
            (f.clusters, f.namespaces) = places(f.due.iter().map(|d| &d.certificate));
            f
        })
        .collect();
    out.sort_by(|a, b| {
        (a.runs_out.is_none(), a.runs_out, a.left_at_end, &a.domain).cmp(&(
            b.runs_out.is_none(),
            b.runs_out,
            b.left_at_end,
            &b.domain,
        ))
    });
    out
}

/// The registered domains that run out, and the clusters their due certificates are in
/// (sorted, each once).
pub fn running_out(forecast: &[DomainForecast]) -> (Vec<&DomainForecast>, Vec<&str>) {
    let short: Vec<&DomainForecast> = forecast.iter().filter(|f| f.runs_out.is_some()).collect();
    let mut clusters: Vec<&str> = short
        .iter()
        .flat_map(|f| f.clusters.iter().map(String::as_str))
        .collect();
    clusters.sort_unstable();
    clusters.dedup();
    (short, clusters)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LE: &str = "https://acme-v02.api.letsencrypt.org/directory";

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn due(name: &str, names: &[&str], at: &str, renewal: bool) -> Due {
        Due {
            server: LE.into(),
            names: names.iter().map(|n| n.to_string()).collect(),
            at: t(at),
            renewal,
            account: None,
            paused: false,
            origin: Origin {
                cluster: if name.starts_with('g') { "gva" } else { "zrh" }.into(),
                namespace: "shop".into(),
                kind: "Certificate".into(),
                name: name.into(),
            },
        }
    }

    fn issued(names: &[&str], at: &str) -> Issuance {
        Issuance {
            server: LE.into(),
            names: names.iter().map(|n| n.to_string()).collect(),
            at: t(at),
            origin: Origin::default(),
        }
    }

    const NOW: &str = "2026-12-03T12:00:00Z";

    #[test]
    fn new_certificates_beyond_the_registered_domain_budget_run_out_and_renewals_do_not() {
        // 48 of example.com's 50 used an hour ago; three new certificates and five renewals
        // are due today.
        let history = History {
            issuances: (0..48)
                .map(|i| issued(&[&format!("h{i}.example.com")], "2026-12-03T11:00:00Z"))
                .collect(),
            ..History::default()
        };
        let budgets = compute(&history, t(NOW));
        let mut plan: Vec<Due> = (0..3)
            .map(|i| {
                due(
                    &format!("new{i}"),
                    &[&format!("n{i}.example.com")],
                    "2026-12-03T13:00:00Z",
                    false,
                )
            })
            .collect();
        plan.extend((0..5).map(|i| {
            due(
                &format!("renew{i}"),
                &[&format!("h{i}.example.com")],
                "2026-12-03T12:30:00Z",
                true,
            )
        }));
        let f = forecast(&budgets, &plan, t(NOW), Duration::days(7));
        assert_eq!(f.len(), 1);
        let d = &f[0];
        assert_eq!(
            (d.domain.as_str(), d.left_now, d.capacity),
            ("example.com", 2, 50)
        );
        assert_eq!((d.renewals, d.new_certificates, d.refused), (5, 3, 1));
        assert_eq!(d.runs_out, Some(t("2026-12-03T13:00:00Z")));
        assert!(
            !d.refusing_now,
            "room now (2 left); the due ones use it up later"
        );
        let refused: Vec<&str> = d
            .due
            .iter()
            .filter(|x| x.refused.is_some())
            .map(|x| x.certificate.name.as_str())
            .collect();
        assert_eq!(
            refused,
            ["new2"],
            "the third new one, in name order at the same time"
        );
        let why = d.due.iter().find_map(|x| x.refused.clone()).unwrap();
        assert_eq!(why.limit, Limit::RegisteredDomain);
        // One token every 7 d / 50 = 201.6 min after the oldest spend's window.
        assert!(why.until.is_some_and(|u| u > t(NOW)));
        // At the end of the week the bucket has refilled completely.
        assert_eq!(d.left_at_end, 50);
        assert_eq!(d.clusters, ["zrh"]);
    }

    /// What the CA has said binds the forecast: an account whose new orders are used up
    /// refuses a new certificate (a renewal is exempt), a paused name is refused for its
    /// account, and a Certificate the CA refused is refused until the time it named —
    /// renewal or not.
    #[test]
    fn the_accounts_limits_and_the_cas_own_refusals_are_forecast() {
        const BULK: &str = "ClusterIssuer letsencrypt-bulk (zrh)";
        let order = |i: usize| NewOrder {
            server: LE.into(),
            account: BULK.into(),
            names: vec![format!("n{i}.initech.example")],
            // Moments ago: one comes back every 36 s.
            at: t("2026-12-03T11:59:50Z"),
            replaces: false,
            origin: Origin::default(),
        };
        let history = History {
            orders: (0..300).map(order).collect(),
            ..History::default()
        };
        let budgets = compute(&history, t(NOW));
        let with_account = |mut d: Due, account: &str| {
            d.account = Some(account.into());
            d
        };
        let plan = [
            with_account(due("fresh", &["fresh.initech.example"], NOW, false), BULK),
            with_account(
                due("renewed", &["renewed.initech.example"], NOW, true),
                BULK,
            ),
        ];
        let f = forecast(&budgets, &plan, t(NOW), Duration::days(7));
        let of = |name: &str| {
            f.iter()
                .flat_map(|d| d.due.iter())
                .find(|d| d.certificate.name == name)
                .unwrap()
                .clone()
        };
        let refusal = of("fresh")
            .refused
            .expect("the account's new orders are used up");
        assert_eq!(refusal.limit, Limit::NewOrders);
        assert_eq!(refusal.key, BULK);
        assert!(refusal.until.is_some_and(|u| u > t(NOW)));
        assert!(of("renewed").refused.is_none(), "renewals are exempt");

        // The CA refused `legacy` over the exact set until tomorrow, and paused a name of
        // `paused` for its account.
        let legacy = due("legacy", &["legacy.globex.example"], NOW, true);
        let refusals = vec![crate::model::budget::refusal::CaRefusal {
            server: LE.into(),
            limit: Limit::ExactSet,
            key: "legacy.globex.example".into(),
            account: None,
            at: t("2026-12-03T10:00:00Z"),
            retry_after: t("2026-12-04T10:00:00Z"),
            origin: legacy.origin.clone(),
        }];
        let mut budgets = compute(
            &History {
                refusals,
                ..History::default()
            },
            t(NOW),
        );
        budgets.push(Budget {
            server: LE.into(),
            limit: Limit::Paused,
            key: "old.globex.example".into(),
            account: Some(BULK.into()),
            used: 1,
            capacity: 1,
            ratio: 1.0,
            frees_at: None,
            latest: None,
            counted: Vec::new(),
            elsewhere: 0,
            clusters: Vec::new(),
            namespaces: Vec::new(),
            spent_by: Vec::new(),
            refused: None,
            frees_at_from_ca: false,
        });
        // And the CA answered `halted`'s last order that its names are paused (its Issuing
        // condition says so), whatever the budgets hold.
        let mut halted = due("halted", &["halted.globex.example"], NOW, true);
        halted.paused = true;
        let plan = [
            legacy,
            with_account(
                due(
                    "paused",
                    &["old.globex.example", "new.globex.example"],
                    NOW,
                    true,
                ),
                BULK,
            ),
            halted,
        ];
        let f = forecast(&budgets, &plan, t(NOW), Duration::days(7));
        let d = &f[0];
        assert_eq!(d.domain, "globex.example");
        assert_eq!(d.refused, 3, "{d:#?}");
        assert!(d.refusing_now);
        let named = d
            .due
            .iter()
            .find(|x| x.certificate.name == "legacy")
            .unwrap();
        assert_eq!(
            named.refused.clone().unwrap().until,
            Some(t("2026-12-04T10:00:00Z"))
        );
        let paused = d
            .due
            .iter()
            .find(|x| x.certificate.name == "paused")
            .unwrap();
        assert_eq!(paused.refused.clone().unwrap().limit, Limit::Paused);
        let halted = d
            .due
            .iter()
            .find(|x| x.certificate.name == "halted")
            .unwrap();
        assert_eq!(halted.refused.clone().unwrap().limit, Limit::Paused);
        assert_eq!(
            halted.refused.clone().unwrap().until,
            None,
            "until unpaused"
        );
    }

    #[test]
    fn a_full_exact_set_refuses_even_a_renewal_until_its_token_comes_back() {
        let history = History {
            issuances: (0..5)
                .map(|i| issued(&["promo.example.org"], &format!("2026-12-03T0{i}:00:00Z")))
                .collect(),
            ..History::default()
        };
        let budgets = compute(&history, t(NOW));
        let plan = [
            // Not ready, without a current certificate: the history still knows the set.
            due("promo", &["promo.example.org"], NOW, false),
            // Due again in three days: by then a token (one per 33.6 h) is back.
            due(
                "promo-copy",
                &["promo.example.org"],
                "2026-12-06T12:00:00Z",
                true,
            ),
        ];
        let f = forecast(&budgets, &plan, t(NOW), Duration::days(7));
        let d = &f[0];
        assert_eq!(d.domain, "example.org");
        let refusal = d.due[0].refused.clone().expect("the set is used up");
        assert_eq!(refusal.limit, Limit::ExactSet);
        assert_eq!(refusal.until, budgets[0].frees_at);
        assert!(d.due[1].refused.is_none(), "a token came back by then");
        assert!(d.due[0].renewal && d.renewals == 2 && d.new_certificates == 0);
        assert_eq!(d.runs_out, Some(t(NOW)));
        assert!(d.refusing_now, "the exact set has no room already");
        // Only the first of the five was new, and its token came back after 202 minutes.
        assert_eq!(d.left_now, 50);
        assert_eq!(
            d.left_at_end, 50,
            "renewals do not spend the registered domain"
        );
    }

    #[test]
    fn a_shared_budget_whose_next_token_the_viewer_may_not_know_refills_after_a_whole_interval() {
        let budgets = vec![Budget {
            server: LE.into(),
            limit: Limit::ExactSet,
            key: "a.example.net".into(),
            account: None,
            used: 5,
            capacity: 5,
            ratio: 1.0,
            frees_at: None,
            latest: None,
            counted: Vec::new(),
            elsewhere: 4,
            clusters: Vec::new(),
            namespaces: Vec::new(),
            spent_by: Vec::new(),
            refused: None,
            frees_at_from_ca: false,
        }];
        let plan = [due("a", &["a.example.net"], NOW, true)];
        let f = forecast(&budgets, &plan, t(NOW), Duration::days(7));
        let until = f[0].due[0].refused.clone().unwrap().until.unwrap();
        assert_eq!(until, t(NOW) + Duration::days(7) / 5);
    }

    #[test]
    fn domains_that_run_out_come_first_and_staging_has_room() {
        let history = History {
            issuances: (0..50)
                .map(|i| issued(&[&format!("h{i}.b.example")], "2026-12-03T11:00:00Z"))
                .collect(),
            ..History::default()
        };
        let budgets = compute(&history, t(NOW));
        let mut staging = due("gstaging", &["x.b.example"], NOW, false);
        staging.server = "https://acme-staging-v02.api.letsencrypt.org/directory".into();
        let plan = [
            due("a", &["a.a.example"], NOW, false),
            due("b", &["new.b.example"], NOW, false),
            staging,
        ];
        let f = forecast(&budgets, &plan, t(NOW), Duration::days(7));
        let order: Vec<(&str, bool)> = f
            .iter()
            .map(|d| (d.domain.as_str(), d.runs_out.is_some()))
            .collect();
        assert_eq!(
            order,
            [
                ("b.example", true),
                ("a.example", false),
                ("b.example", false)
            ]
        );
        assert_eq!(f[2].capacity, 30_000);
    }
}

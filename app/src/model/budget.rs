//! Let's Encrypt budgets from the issuance history (DOMAIN.md §3): new certificates per
//! registered domain (50 / 7 days; renewals of an exact set issued before are exempt), per
//! exact set of names (5 / 7 days), failed authorizations per name (5 / hour) — per ACME
//! server, with the time the oldest counted event leaves the window.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

/// Where an event happened: cluster, namespace, and the Certificate (or Challenge).
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Origin {
    pub cluster: String,
    pub namespace: String,
    pub kind: String,
    pub name: String,
}

/// An issued certificate, from a CertificateRequest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issuance {
    /// The ACME directory URL.
    pub server: String,
    pub names: Vec<String>,
    pub at: DateTime<Utc>,
    pub origin: Origin,
}

/// A failed authorization, from an invalid Challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedAuthorization {
    pub server: String,
    pub name: String,
    pub at: DateTime<Utc>,
    pub origin: Origin,
}

/// Which limit a budget is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Limit {
    RegisteredDomain,
    ExactSet,
    FailedAuthorizations,
}

impl Limit {
    /// The limit in words, with its window.
    pub fn description(self) -> &'static str {
        match self {
            Limit::RegisteredDomain => "new certificates per registered domain (7 days)",
            Limit::ExactSet => "certificates per exact set of names (7 days)",
            Limit::FailedAuthorizations => "failed authorizations per name (1 hour)",
        }
    }
}

/// One budget: how much of a limit is used now.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Budget {
    pub server: String,
    pub limit: Limit,
    /// The registered domain, the exact set (comma-joined) or the name.
    pub key: String,
    pub used: u32,
    pub capacity: u32,
    /// `used / capacity`, 0.0–1.0+.
    pub ratio: f64,
    /// When the oldest counted event leaves the window (one more becomes available).
    pub frees_at: Option<DateTime<Utc>>,
    /// The object of the most recent counted event.
    pub latest: Option<Origin>,
}

/// Counted events per (server, key).
type Counted = BTreeMap<(String, String), Vec<(DateTime<Utc>, Origin)>>;

/// The registered domain of a name by the Public Suffix List.
pub fn registered_domain(name: &str) -> String {
    let n = name
        .trim_start_matches("*.")
        .trim_end_matches('.')
        .to_ascii_lowercase();
    psl::domain_str(&n).map(str::to_string).unwrap_or(n)
}

/// Whether a directory URL is Let's Encrypt staging (much higher limits).
fn staging(server: &str) -> bool {
    server.contains("acme-staging")
}

fn capacities(server: &str) -> (u32, u32, u32) {
    if staging(server) {
        (30_000, 30_000, 200)
    } else {
        (50, 5, 5)
    }
}

fn set_key(names: &[String]) -> String {
    names
        .iter()
        .map(|n| n.to_ascii_lowercase())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect::<Vec<_>>()
        .join(",")
}

fn budget(
    server: &str,
    limit: Limit,
    key: String,
    mut events: Vec<(DateTime<Utc>, Origin)>,
    capacity: u32,
    window: Duration,
) -> Budget {
    events.sort();
    let used = events.len() as u32;
    Budget {
        server: server.to_string(),
        limit,
        key,
        used,
        capacity,
        ratio: f64::from(used) / f64::from(capacity),
        frees_at: events.first().map(|(t, _)| *t + window),
        latest: events.last().map(|(_, o)| o.clone()),
    }
}

/// Every non-empty budget at `now`, fullest first.
pub fn compute(
    issuances: &[Issuance],
    failures: &[FailedAuthorization],
    now: DateTime<Utc>,
) -> Vec<Budget> {
    let week = Duration::days(7);
    let hour = Duration::hours(1);
    let mut sorted: Vec<&Issuance> = issuances.iter().collect();
    sorted.sort_by_key(|i| i.at);
    let mut seen_sets: BTreeSet<(String, String)> = BTreeSet::new();
    let mut per_domain: Counted = BTreeMap::new();
    let mut per_set: Counted = BTreeMap::new();
    for i in sorted {
        let set = set_key(&i.names);
        let renewal = !seen_sets.insert((i.server.clone(), set.clone()));
        if i.at <= now - week || i.at > now {
            continue;
        }
        per_set
            .entry((i.server.clone(), set))
            .or_default()
            .push((i.at, i.origin.clone()));
        if !renewal {
            for d in i
                .names
                .iter()
                .map(|n| registered_domain(n))
                .collect::<BTreeSet<_>>()
            {
                per_domain
                    .entry((i.server.clone(), d))
                    .or_default()
                    .push((i.at, i.origin.clone()));
            }
        }
    }
    let mut per_name: Counted = BTreeMap::new();
    for f in failures.iter().filter(|f| f.at > now - hour && f.at <= now) {
        per_name
            .entry((f.server.clone(), f.name.to_ascii_lowercase()))
            .or_default()
            .push((f.at, f.origin.clone()));
    }
    let mut out = Vec::new();
    for ((server, key), times) in per_domain {
        let cap = capacities(&server).0;
        out.push(budget(
            &server,
            Limit::RegisteredDomain,
            key,
            times,
            cap,
            week,
        ));
    }
    for ((server, key), times) in per_set {
        let cap = capacities(&server).1;
        out.push(budget(&server, Limit::ExactSet, key, times, cap, week));
    }
    for ((server, key), times) in per_name {
        let cap = capacities(&server).2;
        out.push(budget(
            &server,
            Limit::FailedAuthorizations,
            key,
            times,
            cap,
            hour,
        ));
    }
    out.sort_by(|a, b| b.ratio.total_cmp(&a.ratio).then(a.key.cmp(&b.key)));
    out
}

/// `acme.rate-limit-budget`: warning at 80 %, critical at 100 % of a limit.
pub fn findings(budgets: &[Budget], now: DateTime<Utc>) -> Vec<crate::model::Finding> {
    use crate::model::{Finding, Severity};
    budgets
        .iter()
        .filter(|b| b.ratio >= 0.8)
        .filter_map(|b| {
            let origin = b.latest.clone()?;
            let what = match b.limit {
                Limit::RegisteredDomain => format!("new certificates for registered domain {}", b.key),
                Limit::ExactSet => format!("certificates for the exact set {}", b.key),
                Limit::FailedAuthorizations => format!("failed authorizations for {}", b.key),
            };
            let window = if b.limit == Limit::FailedAuthorizations { "hour" } else { "7 days" };
            let frees = b.frees_at.map(|t| format!(" One more becomes available at {} (in {} min).", t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true), (t - now).num_minutes().max(0))).unwrap_or_default();
            Some(Finding {
                rule: "acme.rate-limit-budget",
                severity: if b.used >= b.capacity { Severity::Critical } else { Severity::Warning },
                cluster: origin.cluster.into(),
                namespace: origin.namespace.into(),
                kind: origin.kind.into(),
                name: origin.name.into(),
                title: format!("{}/{} {what} used", b.used, b.capacity).into(),
                message: format!("Let's Encrypt ({}) allows {} {what} per {window}; {} are used.{frees}", b.server, b.capacity, b.used).into(),
                remediation: "Avoid renewing or recreating certificates for these names until capacity frees up; fix failing challenges before retrying; combine names into fewer certificates.".into(),
                since: b.frees_at.map(|t| t - if b.limit == Limit::FailedAuthorizations { Duration::hours(1) } else { Duration::days(7) }),
            })
        })
        .collect()
}

/// What one more issuance would do to a budget.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Impact {
    pub server: String,
    pub limit: Limit,
    pub key: String,
    pub used: u32,
    pub capacity: u32,
    /// `used` after the planned issuances.
    pub after: u32,
    /// `after > capacity`: Let's Encrypt would refuse at least one of them.
    pub exceeds: bool,
    /// When the oldest counted issuance leaves the window.
    pub frees_at: Option<DateTime<Utc>>,
}

/// A planned issuance: its ACME server, its names, and whether that exact set was issued
/// before (a renewal, exempt from the registered-domain limit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    pub server: String,
    pub names: Vec<String>,
    pub renewal: bool,
}

/// The budgets that `planned` issuances use, with what they leave: the exact-set limit for
/// every issuance, the registered-domain limit for new ones. Sorted fullest first.
pub fn impact(budgets: &[Budget], planned: &[Planned]) -> Vec<Impact> {
    let mut adds: BTreeMap<(String, Limit, String), u32> = BTreeMap::new();
    for p in planned {
        if p.names.is_empty() {
            continue;
        }
        *adds
            .entry((p.server.clone(), Limit::ExactSet, set_key(&p.names)))
            .or_default() += 1;
        if !p.renewal {
            let domains: BTreeSet<String> = p.names.iter().map(|n| registered_domain(n)).collect();
            for d in domains {
                *adds
                    .entry((p.server.clone(), Limit::RegisteredDomain, d))
                    .or_default() += 1;
            }
        }
    }
    let mut out: Vec<Impact> = adds
        .into_iter()
        .map(|((server, limit, key), n)| {
            let (domain_cap, set_cap, _) = capacities(&server);
            let current = budgets
                .iter()
                .find(|b| b.server == server && b.limit == limit && b.key == key);
            let used = current.map(|b| b.used).unwrap_or(0);
            let capacity = current.map(|b| b.capacity).unwrap_or(match limit {
                Limit::ExactSet => set_cap,
                _ => domain_cap,
            });
            Impact {
                after: used + n,
                exceeds: used + n > capacity,
                frees_at: current.and_then(|b| b.frees_at),
                server,
                limit,
                key,
                used,
                capacity,
            }
        })
        .collect();
    out.sort_by(|a, b| {
        (b.exceeds, f64::from(b.after) / f64::from(b.capacity))
            .partial_cmp(&(a.exceeds, f64::from(a.after) / f64::from(a.capacity)))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    const PROD: &str = "https://acme-v02.api.letsencrypt.org/directory";
    const STAGING: &str = "https://acme-staging-v02.api.letsencrypt.org/directory";

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 6, 8, 12, 0, 0).unwrap()
    }

    fn issued(server: &str, names: &[&str], days_ago: i64) -> Issuance {
        Issuance {
            server: server.into(),
            names: names.iter().map(|s| s.to_string()).collect(),
            at: now() - Duration::days(days_ago),
            origin: Origin::default(),
        }
    }

    fn find<'a>(b: &'a [Budget], limit: Limit, key: &str) -> Option<&'a Budget> {
        b.iter()
            .find(|x| x.limit == limit && x.key == key && x.server == PROD)
    }

    #[test]
    fn hand_computed_budgets_across_co_uk_domains() {
        let history = vec![
            issued(PROD, &["shop.example.co.uk"], 10), // outside the window, but makes the day-2 one a renewal
            issued(PROD, &["shop.example.co.uk"], 2),  // renewal: exact set only
            issued(PROD, &["blog.example.co.uk"], 3),  // new: example.co.uk
            issued(PROD, &["a.example.co.uk", "b.example.co.uk"], 1), // new: example.co.uk once
            issued(PROD, &["other.co.uk"], 1),         // new: other.co.uk
            issued(STAGING, &["blog.example.co.uk"], 1), // staging counts separately
        ];
        let b = compute(&history, &[], now());
        let domain = find(&b, Limit::RegisteredDomain, "example.co.uk").unwrap();
        assert_eq!((domain.used, domain.capacity), (2, 50));
        assert_eq!(
            domain.frees_at,
            Some(now() - Duration::days(3) + Duration::days(7))
        );
        assert_eq!(
            find(&b, Limit::RegisteredDomain, "other.co.uk")
                .unwrap()
                .used,
            1
        );
        assert_eq!(
            find(&b, Limit::ExactSet, "shop.example.co.uk")
                .unwrap()
                .used,
            1,
            "the 10-day-old one left the window"
        );
        assert_eq!(
            find(&b, Limit::ExactSet, "a.example.co.uk,b.example.co.uk")
                .unwrap()
                .used,
            1
        );
        let staging = b
            .iter()
            .find(|x| x.server == STAGING && x.limit == Limit::RegisteredDomain)
            .unwrap();
        assert_eq!((staging.used, staging.capacity), (1, 30_000));
    }

    #[test]
    fn failed_authorizations_count_for_one_hour() {
        let f = |mins: i64| FailedAuthorization {
            server: PROD.into(),
            name: "Shop.Example.com".into(),
            at: now() - Duration::minutes(mins),
            origin: Origin::default(),
        };
        let b = compute(&[], &[f(5), f(20), f(50), f(70)], now());
        let name = find(&b, Limit::FailedAuthorizations, "shop.example.com").unwrap();
        assert_eq!((name.used, name.capacity), (3, 5));
        assert_eq!(
            name.frees_at,
            Some(now() - Duration::minutes(50) + Duration::hours(1))
        );
    }

    #[test]
    fn budget_findings_warn_at_80_percent_and_are_critical_when_full() {
        let at = |d| Issuance {
            origin: Origin {
                cluster: "zrh".into(),
                namespace: "acme".into(),
                kind: "Certificate".into(),
                name: "full-tls".into(),
            },
            ..issued(PROD, &["full.example.com"], d)
        };
        let four: Vec<Issuance> = (0..4).map(at).collect();
        let f = findings(&compute(&four, &[], now()), now());
        assert_eq!(f.len(), 1);
        assert_eq!(
            (f[0].rule, f[0].severity.label(), &*f[0].name),
            ("acme.rate-limit-budget", "warning", "full-tls")
        );
        let five: Vec<Issuance> = (0..5).map(at).collect();
        assert_eq!(
            findings(&compute(&five, &[], now()), now())[0]
                .severity
                .label(),
            "critical"
        );
        assert!(findings(&compute(&four[..3], &[], now()), now()).is_empty());
    }

    #[test]
    fn fullest_budgets_come_first() {
        let history: Vec<Issuance> = (0..5)
            .map(|d| issued(PROD, &["full.example.com"], d))
            .collect();
        let b = compute(&history, &[], now());
        assert_eq!(b[0].limit, Limit::ExactSet);
        assert!((b[0].ratio - 1.0).abs() < f64::EPSILON);
    }

    #[test]
    fn a_renew_costs_one_of_the_exact_set_and_only_new_sets_cost_a_domain_slot() {
        let now = now();
        let budgets = compute(
            &[
                issued(PROD, &["shop.example.co.uk"], 1),
                issued(PROD, &["shop.example.co.uk"], 2),
                issued(PROD, &["shop.example.co.uk"], 3),
                issued(PROD, &["shop.example.co.uk"], 4),
            ],
            &[],
            now,
        );
        let renew = Planned {
            server: PROD.into(),
            names: vec!["shop.example.co.uk".into()],
            renewal: true,
        };
        let i = impact(&budgets, std::slice::from_ref(&renew));
        assert_eq!(
            i.len(),
            1,
            "a renewal is exempt from the registered-domain limit"
        );
        assert_eq!(
            (i[0].limit, i[0].used, i[0].after, i[0].exceeds),
            (Limit::ExactSet, 4, 5, false)
        );
        let twice = impact(&budgets, &[renew.clone(), renew]);
        assert!(twice[0].exceeds, "the sixth of a set in 7 days is refused");
        let new = impact(
            &budgets,
            &[Planned {
                server: PROD.into(),
                names: vec!["a.example.co.uk".into(), "b.example.co.uk".into()],
                renewal: false,
            }],
        );
        let domain = new
            .iter()
            .find(|i| i.limit == Limit::RegisteredDomain)
            .unwrap();
        assert_eq!(
            (domain.key.as_str(), domain.after),
            ("example.co.uk", 2),
            "one slot per registered domain, not per name"
        );
    }
}

//! Let's Encrypt budgets as Boulder computes them (letsencrypt/boulder `ratelimits/`,
//! `wfe2/wfe.go` `NewOrder`, `ra/ra.go` `countCertificateIssued`, `countFailedValidations`),
//! replayed from the history: token buckets (GCRA, [`gcra`]), not sliding windows.
//!
//! - A **new order** is checked against: new orders per account (300 / 3 h; renewals
//!   exempt), failed authorizations per identifier per account (5 / h), new certificates per
//!   registered domain (50 / 7 d; renewals exempt) and per exact set (5 / 7 d). Only if all
//!   allow it is the new-orders bucket spent; a denied order costs nothing. An order that
//!   `replaces` a certificate (ARI) skips every limit while that certificate is in its
//!   suggested renewal window and not replaced already ([`ari`]). An identifier the CA
//!   paused is refused.
//! - An **issued certificate** spends the exact set and, unless it is a renewal, each
//!   registered domain — each only if it still has room.
//! - A **failed authorization** spends the identifier's failed-authorization bucket, and its
//!   pausing bucket (3 600 failures, one back a day): when that one is empty, the CA pauses
//!   the identifier for the account.
//! - A **renewal** is an exact set issued in the last 120 days.

mod ari;
mod gcra;
mod refusal;

use crate::model::rule::Rule;
use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use gcra::{Bucket, Rate};
use refusal::refusals;
pub use refusal::CaRefusal;

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
    /// The ACME account (the issuer that made the request).
    pub account: String,
    pub name: String,
    pub at: DateTime<Utc>,
    pub origin: Origin,
}

/// A new order sent to the CA, from an Order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewOrder {
    pub server: String,
    pub account: String,
    pub names: Vec<String>,
    pub at: DateTime<Utc>,
    /// `spec.replaces` (ARI): exempt from every limit inside the replaced certificate's
    /// suggested renewal window.
    pub replaces: bool,
    pub origin: Origin,
}

/// What the budgets are computed from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct History {
    pub orders: Vec<NewOrder>,
    pub issuances: Vec<Issuance>,
    pub failures: Vec<FailedAuthorization>,
    /// The CA's refusals with their retry times.
    pub refusals: Vec<CaRefusal>,
}

/// Which limit a budget is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Limit {
    RegisteredDomain,
    ExactSet,
    FailedAuthorizations,
    NewOrders,
    /// The identifier is paused for the account (not a count: used = capacity = 1).
    Paused,
}

impl Limit {
    /// The limit in words.
    pub fn description(self) -> &'static str {
        match self {
            Limit::RegisteredDomain => "new certificates per registered domain (50 / 7 days)",
            Limit::ExactSet => "certificates per exact set of names (5 / 7 days)",
            Limit::FailedAuthorizations => "failed authorizations per name per account (5 / hour)",
            Limit::NewOrders => "new orders per account (300 / 3 hours)",
            Limit::Paused => "name paused by Let's Encrypt for the account",
        }
    }
}

/// Whether a directory URL is Let's Encrypt staging (much higher limits).
fn staging(server: &str) -> bool {
    server.contains("acme-staging")
}

/// Boulder's production defaults (letsencrypt.org/docs/rate-limits) and staging's.
fn rate(server: &str, limit: Limit) -> Rate {
    let r = |count: i64, period: Duration| Rate {
        count,
        burst: count,
        period,
    };
    let (week, hour) = (Duration::days(7), Duration::hours(1));
    match (staging(server), limit) {
        (false, Limit::RegisteredDomain) => r(50, week),
        (false, Limit::ExactSet) => r(5, week),
        (false, Limit::FailedAuthorizations) => r(5, hour),
        (false, Limit::NewOrders) => r(300, Duration::hours(3)),
        (true, Limit::RegisteredDomain | Limit::ExactSet) => r(30_000, week),
        (true, Limit::FailedAuthorizations) => r(200, hour),
        (true, Limit::NewOrders) => r(1_500, Duration::hours(3)),
        // FailedAuthorizationsForPausingPerDomainPerAccount: room for 3 600 failures, one
        // back a day (Boulder's configured values).
        (_, Limit::Paused) => Rate {
            count: 1,
            burst: 3_600,
            period: Duration::days(1),
        },
    }
}

/// The registered domain of a name by the Public Suffix List.
pub fn registered_domain(name: &str) -> String {
    let n = name
        .trim_start_matches("*.")
        .trim_end_matches('.')
        .to_ascii_lowercase();
    psl::domain_str(&n).map(str::to_string).unwrap_or(n)
}

/// The ACME account an issuer uses, as budgets name it: cert-manager keeps one account per
/// Issuer or ClusterIssuer (its `privateKeySecretRef`).
pub fn account(cluster: &str, namespace: &str, issuer_kind: &str, issuer_name: &str) -> String {
    if issuer_kind == "ClusterIssuer" {
        format!("ClusterIssuer {issuer_name} ({cluster})")
    } else {
        format!("Issuer {issuer_name} ({cluster}/{namespace})")
    }
}

/// Whether issuing `names` from `server` at `at` is a renewal for Let's Encrypt: the same
/// exact set was issued in the 120 days before (Boulder, `wfe2/wfe.go`) — the Certificate's
/// current certificate (`not_before`), or an issuance the history counted (an exact-set
/// budget of the set, whoever spent it: pass the whole fleet's budgets, so that the answer
/// does not depend on who asks). The forecast, the renew and restart previews and the bulk
/// previews all ask this.
pub fn is_renewal(
    server: &str,
    names: &[String],
    not_before: Option<DateTime<Utc>>,
    at: DateTime<Utc>,
    budgets: &[Budget],
) -> bool {
    let set = set_key(names);
    not_before.is_some_and(|nb| nb <= at && at - nb <= Duration::days(120))
        || budgets
            .iter()
            .any(|b| b.limit == Limit::ExactSet && b.server == server && b.key == set)
}

/// An exact set of names as its budget's key: lowercase, sorted, de-duplicated, joined.
pub fn set_key(names: &[String]) -> String {
    names
        .iter()
        .map(|n| n.to_ascii_lowercase())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect::<Vec<_>>()
        .join(",")
}

fn domains(names: &[String]) -> BTreeSet<String> {
    names.iter().map(|n| registered_domain(n)).collect()
}

/// One budget: how much of a limit is used now.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Budget {
    pub server: String,
    pub limit: Limit,
    /// The registered domain, the exact set (comma-joined), the name, or the account.
    pub key: String,
    /// The ACME account, for the per-account limits.
    pub account: Option<String>,
    pub used: u32,
    pub capacity: u32,
    /// `used / capacity`, 0.0–1.0.
    pub ratio: f64,
    /// When one more becomes available (the bucket's next token).
    pub frees_at: Option<DateTime<Utc>>,
    /// The object of the most recent counted event.
    pub latest: Option<Origin>,
    /// Where the spends still counted came from, newest first (never in the JSON: see
    /// [`Budget::for_viewer`]).
    #[serde(skip)]
    pub counted: Vec<Origin>,
    /// Of `used`, how many came from outside what the viewer sees (for a namespace-scoped
    /// viewer: "n used in this fleet outside your namespaces").
    pub elsewhere: u32,
    /// Where the counted spends the viewer may see came from ("which clusters spend it").
    pub clusters: Vec<String>,
    /// The same as `cluster/namespace`.
    pub namespaces: Vec<String>,
    /// How many of the counted spends the viewer may see each `cluster/namespace` made,
    /// the most first ("which customers spent most").
    pub spent_by: Vec<Spent>,
    /// The CA refused an order over this budget and named `frees_at` itself; the object it
    /// refused (never in the JSON: see [`Budget::for_viewer`]).
    #[serde(skip)]
    pub refused: Option<Origin>,
    /// Whether `frees_at` is the CA's own retry time rather than the replay's.
    pub frees_at_from_ca: bool,
}

/// One namespace's share of a budget.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Spent {
    /// `cluster/namespace`.
    pub namespace: String,
    pub count: u32,
}

/// Counts of spends per `cluster/namespace`, the most first (then by name).
pub fn spent_by<'a>(origins: impl Iterator<Item = &'a Origin>) -> Vec<Spent> {
    let mut counts: BTreeMap<String, u32> = BTreeMap::new();
    for o in origins {
        *counts
            .entry(format!("{}/{}", o.cluster, o.namespace))
            .or_default() += 1;
    }
    let mut out: Vec<Spent> = counts
        .into_iter()
        .map(|(namespace, count)| Spent { namespace, count })
        .collect();
    out.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then_with(|| a.namespace.cmp(&b.namespace))
    });
    out
}

/// The clusters and `cluster/namespace`s of some origins, sorted and without repeats.
fn places<'a>(origins: impl Iterator<Item = &'a Origin>) -> (Vec<String>, Vec<String>) {
    let (mut clusters, mut namespaces) = (BTreeSet::new(), BTreeSet::new());
    origins.for_each(|o| {
        clusters.insert(o.cluster.clone());
        namespaces.insert(format!("{}/{}", o.cluster, o.namespace));
    });
    (
        clusters.into_iter().collect(),
        namespaces.into_iter().collect(),
    )
}

impl Budget {
    /// The budget as a viewer who sees only some objects may see it: None when none of its
    /// counted spends is theirs; else the same counts (shared limits are real) with how many
    /// came from elsewhere, and without anything that would tell of those — the latest
    /// object is their own, and the next token's time (the oldest counted spend's) is shown
    /// only when every counted spend is theirs.
    pub fn for_viewer(&self, sees: impl Fn(&Origin) -> bool) -> Option<Budget> {
        let mine: Vec<&Origin> = self.counted.iter().filter(|o| sees(o)).collect();
        // The CA's retry time was told to the refused object: its viewers may know it, and
        // see the budget it was refused over.
        let told = self.refused.as_ref().filter(|o| sees(o));
        let first = mine.first().copied().or(told)?.clone();
        let elsewhere = u32::try_from(self.counted.len() - mine.len()).unwrap_or(u32::MAX)
            + self
                .used
                .saturating_sub(u32::try_from(self.counted.len()).unwrap_or(u32::MAX));
        let (clusters, namespaces) = places(mine.iter().copied());
        let spent_by = spent_by(mine.iter().copied());
        let told = told.is_some();
        // Another CA's directory URL says which CA a neighbour's issuer uses (a private one,
        // often with its internal host name): withheld, as on the Certificate page.
        Some(Budget {
            server: shown_server(&self.server),
            latest: Some(first),
            frees_at: if elsewhere == 0 || told {
                self.frees_at
            } else {
                None
            },
            frees_at_from_ca: self.frees_at_from_ca && (elsewhere == 0 || told),
            refused: None,
            counted: Vec::new(),
            clusters,
            namespaces,
            spent_by,
            elsewhere,
            ..self.clone()
        })
    }
}

/// What a viewer who does not see everything reads as the server of a budget that is not
/// Let's Encrypt's.
pub const OTHER_SERVER: &str = "another ACME server";

/// A budget's server as a viewer who does not see everything reads it: Let's Encrypt's
/// directories as they are, any other as [`OTHER_SERVER`].
fn shown_server(server: &str) -> String {
    match crate::model::issuer::AcmeServer::classify(Some(server)) {
        crate::model::issuer::AcmeServer::LetsEncryptProduction
        | crate::model::issuer::AcmeServer::LetsEncryptStaging => server.to_string(),
        _ => OTHER_SERVER.to_string(),
    }
}

/// A bucket's identity: server, limit, key, account.
type Key = (String, Limit, String, Option<String>);

/// The replay's state.
#[derive(Default)]
struct Replay {
    /// Each bucket, and where its latest spends came from (at most its burst of them; none
    /// kept for the pausing buckets).
    buckets: BTreeMap<Key, (Option<Bucket>, std::collections::VecDeque<Origin>)>,
    /// When each exact set was issued, per server.
    issued: BTreeMap<(String, String), Vec<DateTime<Utc>>>,
    paused: BTreeMap<(String, String, String), Origin>,
    replacements: ari::Replacements,
}

impl Replay {
    fn renewal(&self, server: &str, names: &[String], at: DateTime<Utc>) -> bool {
        self.issued
            .get(&(server.to_string(), set_key(names)))
            .is_some_and(|ts| {
                ts.iter()
                    .any(|t| *t <= at && at - *t <= Duration::days(120))
            })
    }

    fn allows(&self, key: &Key, at: DateTime<Utc>) -> bool {
        let bucket = self.buckets.get(key).and_then(|(b, _)| b.as_ref());
        Bucket::allows(bucket, rate(&key.0, key.1), at)
    }

    fn spend(&mut self, key: Key, at: DateTime<Utc>, origin: &Origin) -> bool {
        let r = rate(&key.0, key.1);
        let keep = if key.1 == Limit::Paused {
            1
        } else {
            usize::try_from(r.burst).unwrap_or(1)
        };
        let entry = self.buckets.entry(key).or_default();
        let spent = Bucket::spend(&mut entry.0, r, at);
        if spent {
            entry.1.push_back(origin.clone());
            while entry.1.len() > keep {
                entry.1.pop_front();
            }
        }
        spent
    }

    fn order(&mut self, o: &NewOrder) {
        let names: Vec<String> = o.names.iter().map(|n| n.to_ascii_lowercase()).collect();
        if names.iter().any(|n| {
            self.paused
                .contains_key(&(o.server.clone(), o.account.clone(), n.clone()))
        }) {
            return;
        }
        if o.replaces && self.replacements.exempt(&o.server, &names, o.at) {
            return;
        }
        let renewal = self.renewal(&o.server, &names, o.at);
        let orders: Key = (
            o.server.clone(),
            Limit::NewOrders,
            o.account.clone(),
            Some(o.account.clone()),
        );
        let mut checks: Vec<Key> = names
            .iter()
            .map(|n| {
                (
                    o.server.clone(),
                    Limit::FailedAuthorizations,
                    n.clone(),
                    Some(o.account.clone()),
                )
            })
            .collect();
        checks.push((o.server.clone(), Limit::ExactSet, set_key(&names), None));
        if !renewal {
            checks.push(orders.clone());
            checks.extend(
                domains(&names)
                    .into_iter()
                    .map(|d| (o.server.clone(), Limit::RegisteredDomain, d, None)),
            );
        }
        if checks.iter().all(|k| self.allows(k, o.at)) && !renewal {
            self.spend(orders, o.at, &o.origin);
        }
    }

    fn issuance(&mut self, i: &Issuance) {
        let renewal = self.renewal(&i.server, &i.names, i.at);
        if !renewal {
            for d in domains(&i.names) {
                self.spend(
                    (i.server.clone(), Limit::RegisteredDomain, d, None),
                    i.at,
                    &i.origin,
                );
            }
        }
        self.spend(
            (i.server.clone(), Limit::ExactSet, set_key(&i.names), None),
            i.at,
            &i.origin,
        );
        self.issued
            .entry((i.server.clone(), set_key(&i.names)))
            .or_default()
            .push(i.at);
        let names: Vec<String> = i.names.iter().map(|n| n.to_ascii_lowercase()).collect();
        self.replacements.issued(&i.server, &names, i.at);
    }

    fn failure(&mut self, f: &FailedAuthorization) {
        let name = f.name.to_ascii_lowercase();
        self.replacements.failed(&f.server, &name);
        let account = Some(f.account.clone());
        self.spend(
            (
                f.server.clone(),
                Limit::FailedAuthorizations,
                name.clone(),
                account.clone(),
            ),
            f.at,
            &f.origin,
        );
        let pausing: Key = (f.server.clone(), Limit::Paused, name.clone(), account);
        if !self.spend(pausing, f.at, &f.origin) {
            self.paused.insert(
                (f.server.clone(), f.account.clone(), name),
                f.origin.clone(),
            );
        }
    }
}

/// Every budget in use at `now` (and every paused name), fullest first. Events after `now`
/// are ignored.
pub fn compute(history: &History, now: DateTime<Utc>) -> Vec<Budget> {
    enum Event<'h> {
        Order(&'h NewOrder),
        Failure(&'h FailedAuthorization),
        Issuance(&'h Issuance),
    }
    let mut events: Vec<(DateTime<Utc>, u8, Event<'_>)> = Vec::new();
    events.extend(history.orders.iter().map(|o| (o.at, 0, Event::Order(o))));
    events.extend(
        history
            .failures
            .iter()
            .map(|f| (f.at, 1, Event::Failure(f))),
    );
    events.extend(
        history
            .issuances
            .iter()
            .map(|i| (i.at, 2, Event::Issuance(i))),
    );
    events.retain(|(at, _, _)| *at <= now);
    events.sort_by_key(|(at, rank, _)| (*at, *rank));
    let mut replay = Replay::default();
    for (_, _, e) in &events {
        match e {
            Event::Order(o) => replay.order(o),
            Event::Failure(f) => replay.failure(f),
            Event::Issuance(i) => replay.issuance(i),
        }
    }
    let mut out: Vec<Budget> = Vec::new();
    for ((server, limit, key, account), (bucket, origins)) in &replay.buckets {
        if *limit == Limit::Paused {
            continue;
        }
        let r = rate(server, *limit);
        let left = Bucket::remaining(bucket.as_ref(), r, now);
        let used = u32::try_from(r.burst - left).unwrap_or(u32::MAX);
        if used == 0 {
            continue;
        }
        let capacity = u32::try_from(r.burst).unwrap_or(u32::MAX);
        // The spends still counted are the latest `used` ones.
        let counted: Vec<Origin> = origins.iter().rev().take(used as usize).cloned().collect();
        let (clusters, namespaces) = places(counted.iter());
        let spent_by = spent_by(counted.iter());
        out.push(Budget {
            server: server.clone(),
            limit: *limit,
            key: key.clone(),
            account: account.clone(),
            used,
            capacity,
            ratio: f64::from(used) / f64::from(capacity),
            frees_at: Bucket::next_token(bucket.as_ref(), r, now),
            latest: origins.back().cloned(),
            counted,
            elsewhere: 0,
            clusters,
            namespaces,
            spent_by,
            refused: None,
            frees_at_from_ca: false,
        });
    }
    refusals(&mut out, &history.refusals, now);
    for ((server, account, name), origin) in &replay.paused {
        out.push(Budget {
            server: server.clone(),
            limit: Limit::Paused,
            key: name.clone(),
            account: Some(account.clone()),
            used: 1,
            capacity: 1,
            ratio: 1.0,
            frees_at: None,
            latest: Some(origin.clone()),
            counted: vec![origin.clone()],
            elsewhere: 0,
            clusters: vec![origin.cluster.clone()],
            namespaces: vec![format!("{}/{}", origin.cluster, origin.namespace)],
            spent_by: spent_by(std::iter::once(origin)),
            refused: None,
            frees_at_from_ca: false,
        });
    }
    out.sort_by(|a, b| b.ratio.total_cmp(&a.ratio).then(a.key.cmp(&b.key)));
    out
}

/// The findings of the budgets: `acme.rate-limit-budget` (registered domain, exact set,
/// failed authorizations) and `acme.orders-budget` (new orders per account) at 80 % and
/// 100 %; `acme.paused` for a name the history shows paused.
pub fn findings(budgets: &[Budget], now: DateTime<Utc>) -> Vec<crate::model::Finding> {
    use crate::model::{Finding, Severity};
    budgets
        .iter()
        .filter(|b| b.ratio >= 0.8)
        .filter_map(|b| {
            let origin = b.latest.clone()?;
            let account = b.account.as_deref().unwrap_or("its account");
            let what = match b.limit {
                Limit::RegisteredDomain => format!("new certificates for registered domain {}", b.key),
                Limit::ExactSet => format!("certificates for the exact set {}", b.key),
                Limit::FailedAuthorizations => format!("failed authorizations for {} by {account}", b.key),
                Limit::NewOrders => format!("new orders by {account}"),
                Limit::Paused => format!("{} for {account}", b.key),
            };
            let frees = b.frees_at.map(|t| format!(" One more becomes available at {} (in {} min).", t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true), (t - now).num_minutes().max(0))).unwrap_or_default();
            let frees = if b.elsewhere > 0 {
                format!("{frees} {} of them were used in this fleet outside your namespaces.", b.elsewhere)
            } else {
                frees
            };
            let (rule, title, message, remediation): (Rule, String, String, &str) = match b.limit {
                Limit::Paused => (
                    Rule::AcmePaused,
                    format!("Let's Encrypt likely paused {what}"),
                    format!("The history shows so many failed validations of {} by {account} that Let's Encrypt pauses the name for that account: every new order for it is refused with \"Your account is temporarily prevented from requesting certificates…\" until someone unpauses it.", b.key),
                    "Fix the failing challenge first, then unpause the name at the URL in the Order's error (Let's Encrypt's self-service portal), then restart the issuance.",
                ),
                Limit::NewOrders => (
                    Rule::AcmeOrdersBudget,
                    format!("{}/{} {what} used", b.used, b.capacity),
                    format!("Let's Encrypt ({}) allows {} new orders per account in 3 hours (renewals exempt); {} are used.{frees}", b.server, b.capacity, b.used),
                    "Find what creates orders in a loop (a Certificate recreated, a failing challenge retried, bulk issuance) and stop it; spread bulk issuance over time.",
                ),
                _ => (
                    Rule::AcmeRateLimitBudget,
                    format!("{}/{} {what} used", b.used, b.capacity),
                    format!("Let's Encrypt ({}) allows {}; {} are used.{frees}", b.server, b.limit.description(), b.used),
                    "Avoid renewing or recreating certificates for these names until capacity frees up; fix failing challenges before retrying; combine names into fewer certificates.",
                ),
            };
            Some(Finding {
                rule,
                severity: if b.used >= b.capacity { Severity::Critical } else { Severity::Warning },
                cluster: origin.cluster.into(),
                namespace: origin.namespace.into(),
                kind: crate::model::Subject::Object(crate::model::Kind::from_name(&origin.kind)?),
                name: origin.name.into(),
                title: title.into(),
                message: message.into(),
                remediation: remediation.into(),
                since: None,
                commands: None,
                host: None,
            })
        })
        .collect()
}

mod forecast;
mod impact;

pub use forecast::{forecast, running_out, DomainForecast, Due, DueCertificate, Refusal};
pub use impact::{as_seen_by, impact, Impact, Planned};

#[cfg(test)]
mod tests;

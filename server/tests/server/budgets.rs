//! Lookout's Let's Encrypt budgets against kubesim's CA: two implementations of Boulder's
//! limits, written apart, fed the same generated history — orders (some replacing a
//! certificate by ARI), issuances (new and renewals, inside and outside 120 days) and
//! failed authorizations from two accounts — must agree on every bucket: what is left and
//! when the next one comes back.

use chrono::{DateTime, Duration, TimeZone, Utc};
use kubesim::sim::letsencrypt::{exact_set, registered_domain, Kind, LetsEncrypt, Server};
use lookout_app::model::budget::{self, Budget, History, Limit};

const PROD: &str = "https://acme-v02.api.letsencrypt.org/directory";
const ACCOUNTS: [&str; 2] = ["zrh/ClusterIssuer/letsencrypt-prod", "gva/Issuer/shop/le"];

/// A small deterministic generator (an LCG), so the history is the same every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

fn origin() -> budget::Origin {
    budget::Origin {
        cluster: "zrh".into(),
        namespace: "shop".into(),
        kind: "Certificate".into(),
        name: "x".into(),
    }
}

/// Lookout's answer for a bucket: (left, next token), from its budgets.
fn lookout(
    budgets: &[Budget],
    limit: Limit,
    key: &str,
    account: Option<&str>,
    burst: i64,
) -> (i64, Option<DateTime<Utc>>) {
    match budgets
        .iter()
        .find(|b| b.limit == limit && b.key == key && b.account.as_deref() == account)
    {
        Some(b) => (i64::from(b.capacity - b.used), b.frees_at),
        None => (burst, None),
    }
}

#[test]
fn lookout_and_kubesims_ca_agree_on_a_generated_history() {
    let mut rng = Rng(19);
    let mut le = LetsEncrypt::default();
    let mut history = History::default();
    let start = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    let mut now = start;
    // Names: a few hot sets (exact-set and failure limits) and many hosts under two
    // registered domains (the 50-per-domain limit).
    let hot = ["shop.example.com", "api.example.com", "www.example.co.uk"];
    let mut issued_sets: Vec<Vec<String>> = Vec::new();
    let (mut allowed, mut denied, mut renewals_kept, mut ari) = (0, 0, 0, 0);
    let mut checkpoints = 0;
    for step in 0..4_000 {
        // Bursts of activity, then quiet days (so renewals fall inside and outside 120 days).
        now += if rng.next(40) == 0 {
            Duration::days(1 + rng.next(60) as i64)
        } else {
            Duration::seconds(1 + rng.next(900) as i64)
        };
        let account = ACCOUNTS[rng.next(2) as usize];
        let names: Vec<String> = match rng.next(4) {
            0 => vec![hot[rng.next(3) as usize].to_string()],
            1 if !issued_sets.is_empty() => {
                issued_sets[rng.next(issued_sets.len() as u64) as usize].clone()
            }
            _ => {
                let domain = ["example.com", "example.co.uk"][rng.next(2) as usize];
                vec![format!("h{}.{domain}", rng.next(120))]
            }
        };
        let replaces = issued_sets.contains(&names) && rng.next(5) == 0;
        history.orders.push(budget::NewOrder {
            server: PROD.into(),
            account: account.into(),
            names: names.clone(),
            at: now,
            replaces,
            origin: origin(),
        });
        match le.check_new_order(Server::Production, account, &names, now, replaces) {
            Err(_) => denied += 1,
            Ok(()) => {
                allowed += 1;
                ari += usize::from(replaces);
                let at = now + Duration::seconds(30);
                if rng.next(3) == 0 {
                    for n in &names {
                        le.record_failed_authorization(Server::Production, account, n, at);
                        history.failures.push(budget::FailedAuthorization {
                            server: PROD.into(),
                            account: account.into(),
                            name: n.clone(),
                            at,
                            origin: origin(),
                        });
                    }
                } else {
                    if issued_sets.contains(&names) {
                        renewals_kept += 1;
                    }
                    le.record_issuance(Server::Production, &names, at);
                    history.issuances.push(budget::Issuance {
                        server: PROD.into(),
                        names: names.clone(),
                        at,
                        origin: origin(),
                    });
                    if !issued_sets.contains(&names) {
                        issued_sets.push(names.clone());
                    }
                }
                now = at;
            }
        }
        if step % 97 == 0 {
            checkpoints += 1;
            let at = now + Duration::seconds(1);
            let budgets = budget::compute(&history, at);
            let mut mismatches = Vec::new();
            let mut compare = |what: &str,
                               limit: Limit,
                               kind: Kind,
                               key: &str,
                               account: Option<&str>,
                               burst: i64| {
                let ours = lookout(&budgets, limit, key, account, burst);
                let theirs = le.remaining(
                    Server::Production,
                    kind,
                    if kind == Kind::NewOrders { "" } else { key },
                    account.unwrap_or(""),
                    at,
                );
                if ours != theirs {
                    mismatches.push(format!(
                        "{what} {key} {account:?}: lookout {ours:?}, kubesim {theirs:?}"
                    ));
                }
            };
            for domain in ["example.com", "example.co.uk"] {
                compare(
                    "domain",
                    Limit::RegisteredDomain,
                    Kind::RegisteredDomain,
                    domain,
                    None,
                    50,
                );
            }
            for set in issued_sets.iter().map(|s| exact_set(s)) {
                compare("set", Limit::ExactSet, Kind::ExactSet, &set, None, 5);
            }
            for account in ACCOUNTS {
                compare(
                    "orders",
                    Limit::NewOrders,
                    Kind::NewOrders,
                    account,
                    Some(account),
                    300,
                );
                for name in hot {
                    compare(
                        "failures",
                        Limit::FailedAuthorizations,
                        Kind::FailedAuthorizations,
                        name,
                        Some(account),
                        5,
                    );
                }
            }
            assert!(
                mismatches.is_empty(),
                "at {at} after step {step}:\n{}",
                mismatches.join("\n")
            );
        }
    }
    // The history exercised what it is meant to.
    assert!(
        denied > 50 && allowed > 1_000,
        "allowed {allowed}, denied {denied}"
    );
    assert!(
        renewals_kept > 100 && ari > 20,
        "renewals {renewals_kept}, ARI {ari}"
    );
    assert!(checkpoints > 40);
    assert_eq!(registered_domain("h1.example.co.uk"), "example.co.uk");
}

/// The 7-day forecast against kubesim's CA: the due issuances played, in time order, through
/// kubesim's limits (each allowed one issued) are refused exactly where Lookout's forecast
/// says they will be.
#[test]
fn the_forecast_refuses_what_kubesims_ca_refuses() {
    let mut rng = Rng(7);
    let mut le = LetsEncrypt::default();
    let mut history = History::default();
    let account = ACCOUNTS[0];
    let now = Utc.with_ymd_and_hms(2026, 6, 1, 12, 0, 0).unwrap();
    // The last hours: 45 new certificates for example.com and renewals of hot sets.
    let hot = ["shop.example.com", "api.example.com", "www.example.co.uk"];
    let mut issued: Vec<Vec<String>> = Vec::new();
    let mut at = now - Duration::hours(16);
    for i in 0..60 {
        at += Duration::minutes(5 + rng.next(10) as i64);
        let names = if i % 4 == 0 {
            vec![hot[rng.next(3) as usize].to_string()]
        } else {
            vec![format!("h{i}.example.com")]
        };
        le.check_new_order(Server::Production, account, &names, at, false)
            .ok();
        le.record_issuance(Server::Production, &names, at);
        history.issuances.push(budget::Issuance {
            server: PROD.into(),
            names: names.clone(),
            at,
            origin: origin(),
        });
        issued.push(names);
    }
    assert!(at < now);
    let budgets = budget::compute(&history, now);
    // The next week: new hosts (each once), and the sets above again.
    let mut due: Vec<budget::Due> = (0..70)
        .map(|i| {
            let names = if rng.next(3) == 0 {
                issued[rng.next(issued.len() as u64) as usize].clone()
            } else {
                vec![format!("n{i}.example.com")]
            };
            let renewal = issued.contains(&names);
            budget::Due {
                server: PROD.into(),
                names,
                // Most in the first two days, the rest over the week.
                at: now + Duration::minutes(rng.next(if i < 50 { 2 } else { 7 } * 24 * 60) as i64),
                renewal,
                account: None,
                paused: false,
                origin: budget::Origin {
                    name: format!("c{i}"),
                    ..origin()
                },
            }
        })
        .collect();
    due.sort_by_key(|d| (d.at, d.origin.clone()));
    let forecast = budget::forecast(&budgets, &due, now, Duration::days(7));
    let mut ours: Vec<String> = forecast
        .iter()
        .flat_map(|f| &f.due)
        .filter(|d| d.refused.is_some())
        .map(|d| d.certificate.name.clone())
        .collect();
    ours.sort();
    ours.dedup();
    let mut theirs: Vec<String> = Vec::new();
    for d in &due {
        match le.check_new_order(Server::Production, account, &d.names, d.at, false) {
            Ok(()) => le.record_issuance(Server::Production, &d.names, d.at),
            Err(_) => theirs.push(d.origin.name.clone()),
        }
    }
    theirs.sort();
    assert_eq!(
        ours, theirs,
        "refused by Lookout's forecast vs kubesim's CA"
    );
    assert!(
        theirs.len() >= 3 && theirs.len() < due.len() / 2,
        "the week runs out, but not at once: {theirs:?}"
    );
    let domain = forecast.iter().find(|f| f.domain == "example.com").unwrap();
    assert!(domain.runs_out.is_some() && domain.refused > 0);
}

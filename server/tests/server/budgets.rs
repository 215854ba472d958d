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

//! Budgets replayed as Boulder counts: buckets that refill, renewals within 120 days, ARI,
//! per-account limits, paused names.

use super::*;
use crate::model::Rule;
use chrono::TimeZone;

pub(super) const PROD: &str = "https://acme-v02.api.letsencrypt.org/directory";
const STAGING: &str = "https://acme-staging-v02.api.letsencrypt.org/directory";
pub(super) const ACCOUNT: &str = "ClusterIssuer letsencrypt-prod (zrh)";

pub(super) fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 8, 12, 0, 0).unwrap()
}

fn origin(name: &str) -> Origin {
    Origin {
        cluster: "zrh".into(),
        namespace: "acme".into(),
        kind: "Certificate".into(),
        name: name.into(),
    }
}

pub(super) fn issued(server: &str, names: &[&str], ago: Duration) -> Issuance {
    Issuance {
        server: server.into(),
        names: names.iter().map(|s| s.to_string()).collect(),
        at: now() - ago,
        origin: origin("full-tls"),
    }
}

pub(super) fn ordered(names: &[&str], ago: Duration, replaces: bool) -> NewOrder {
    NewOrder {
        server: PROD.into(),
        account: ACCOUNT.into(),
        names: names.iter().map(|s| s.to_string()).collect(),
        at: now() - ago,
        replaces,
        origin: origin("full-tls"),
    }
}

pub(super) fn failed(account: &str, name: &str, ago: Duration) -> FailedAuthorization {
    FailedAuthorization {
        server: PROD.into(),
        account: account.into(),
        name: name.into(),
        at: now() - ago,
        origin: origin("shop-tls-1-2-3"),
    }
}

pub(super) fn find<'a>(b: &'a [Budget], limit: Limit, key: &str) -> Option<&'a Budget> {
    b.iter()
        .find(|x| x.limit == limit && x.key == key && x.server == PROD)
}

#[test]
fn an_exact_set_refills_one_certificate_every_33_6_hours() {
    let history = History {
        issuances: (0..5)
            .map(|m| issued(PROD, &["full.example.com"], Duration::minutes(50 - m * 10)))
            .collect(),
        ..Default::default()
    };
    let b = compute(&history, now());
    let set = find(&b, Limit::ExactSet, "full.example.com").unwrap();
    assert_eq!((set.used, set.capacity), (5, 5));
    // The bucket's TAT is 5 intervals after the first spend (50 min ago); the first token
    // comes back one interval after the TAT minus the burst: 50 min ago + 33.6 h.
    assert_eq!(
        set.frees_at,
        Some(now() - Duration::minutes(50) + Duration::minutes(2016))
    );
    // Not a sliding window: two days later two of the five are back.
    let later = compute(&history, now() + Duration::days(2));
    assert_eq!(
        find(&later, Limit::ExactSet, "full.example.com")
            .unwrap()
            .used,
        4
    );
}

#[test]
fn a_renewal_is_an_exact_set_issued_in_the_last_120_days() {
    let history = History {
        issuances: vec![
            issued(PROD, &["old.example.co.uk"], Duration::days(130)),
            issued(PROD, &["old.example.co.uk"], Duration::hours(1)), // new again: 130 > 120 days
            issued(PROD, &["kept.example.co.uk"], Duration::days(100)),
            issued(PROD, &["kept.example.co.uk"], Duration::hours(1)), // renewal: no domain slot
            // Staging gets one back every 20 s: seen only right after.
            issued(STAGING, &["old.example.co.uk"], Duration::seconds(1)),
        ],
        ..Default::default()
    };
    let b = compute(&history, now());
    let domain = find(&b, Limit::RegisteredDomain, "example.co.uk").unwrap();
    assert_eq!((domain.used, domain.capacity), (1, 50), "{b:#?}");
    let staging = b
        .iter()
        .find(|x| x.server == STAGING && x.limit == Limit::RegisteredDomain)
        .unwrap();
    assert_eq!((staging.used, staging.capacity), (1, 30_000));
}

#[test]
fn new_orders_per_account_spend_only_when_the_whole_order_is_allowed() {
    // Five issued: the sixth order for the set is refused and costs no new order.
    let mut history = History {
        issuances: (0..5)
            .map(|m| issued(PROD, &["full.example.com"], Duration::minutes(30 - m)))
            .collect(),
        ..Default::default()
    };
    // (One new order comes back every 36 s: these are seconds old.)
    history
        .orders
        .push(ordered(&["full.example.com"], Duration::seconds(20), false));
    history.orders.push(ordered(
        &["other.example.com"],
        Duration::seconds(20),
        false,
    ));
    let b = compute(&history, now());
    let orders = b.iter().find(|x| x.limit == Limit::NewOrders).unwrap();
    assert_eq!(
        (orders.used, orders.capacity),
        (1, 300),
        "only other.example.com's order"
    );
    assert_eq!(orders.key, ACCOUNT);
}

#[test]
fn failed_authorizations_count_per_name_per_account() {
    let history = History {
        failures: vec![
            failed(ACCOUNT, "Shop.Example.com", Duration::minutes(5)),
            failed(ACCOUNT, "shop.example.com", Duration::minutes(4)),
            failed(ACCOUNT, "shop.example.com", Duration::minutes(3)),
            failed(
                "Issuer other (zrh/acme)",
                "shop.example.com",
                Duration::minutes(3),
            ),
        ],
        ..Default::default()
    };
    let b = compute(&history, now());
    let mine: Vec<&Budget> = b
        .iter()
        .filter(|x| x.limit == Limit::FailedAuthorizations)
        .collect();
    assert_eq!(mine.len(), 2, "one bucket per account");
    let a = mine
        .iter()
        .find(|x| x.account.as_deref() == Some(ACCOUNT))
        .unwrap();
    // One back every 12 minutes: none back yet after 5 minutes.
    assert_eq!((a.used, a.capacity), (3, 5));
    // TAT = 5 min ago + 3 × 12 min; the first token back: TAT − 5 × 12 min + 3 × 12 min.
    assert_eq!(
        a.frees_at,
        Some(now() - Duration::minutes(5) + Duration::minutes(12))
    );
    assert!(a.frees_at.unwrap() > now() && a.frees_at.unwrap() <= now() + Duration::minutes(12));
}

#[test]
fn a_name_that_keeps_failing_for_days_is_paused() {
    // 3 601 failures within a day: the pausing bucket (3 600, one back a day) runs out.
    let failures: Vec<FailedAuthorization> = (0..3_601)
        .map(|i| {
            failed(
                ACCOUNT,
                "zombie.example.com",
                Duration::seconds(20_000 - i * 5),
            )
        })
        .collect();
    let b = compute(
        &History {
            failures,
            ..Default::default()
        },
        now(),
    );
    let paused = b.iter().find(|x| x.limit == Limit::Paused).unwrap();
    assert_eq!(paused.key, "zombie.example.com");
    let f = findings(&b, now());
    assert!(f.iter().any(|f| f.rule == Rule::AcmePaused), "{f:#?}");
    // An order for it is refused by the pause: it costs no new order.
    let mut history = History {
        failures: (0..3_601)
            .map(|i| {
                failed(
                    ACCOUNT,
                    "zombie.example.com",
                    Duration::seconds(20_000 - i * 5),
                )
            })
            .collect(),
        ..Default::default()
    };
    history.orders.push(ordered(
        &["zombie.example.com"],
        Duration::seconds(1),
        false,
    ));
    assert!(compute(&history, now())
        .iter()
        .all(|x| x.limit != Limit::NewOrders));
}

#[test]
fn budget_findings_warn_at_80_percent_and_are_critical_when_full() {
    let four = History {
        issuances: (0..4)
            .map(|m| issued(PROD, &["full.example.com"], Duration::minutes(m)))
            .collect(),
        ..Default::default()
    };
    let f = findings(&compute(&four, now()), now());
    assert_eq!(f.len(), 1);
    assert_eq!(
        (f[0].rule, f[0].severity.label(), &*f[0].name),
        (Rule::AcmeRateLimitBudget, "warning", "full-tls")
    );
    let mut five = four.clone();
    five.issuances
        .push(issued(PROD, &["full.example.com"], Duration::minutes(5)));
    assert_eq!(
        findings(&compute(&five, now()), now())[0].severity.label(),
        "critical"
    );
    let orders = History {
        orders: (0..250)
            .map(|i| {
                ordered(
                    &[&format!("h{i}.example.com")],
                    Duration::seconds(300 - i),
                    false,
                )
            })
            .collect(),
        ..Default::default()
    };
    let f = findings(&compute(&orders, now()), now());
    assert!(
        f.iter()
            .any(|f| f.rule == Rule::AcmeOrdersBudget && f.severity.label() == "warning"),
        "{f:#?}"
    );
}

#[test]
fn a_renew_costs_one_of_the_exact_set_and_a_name_without_failures_left_is_refused() {
    let history = History {
        issuances: (1..=4)
            .map(|h| issued(PROD, &["shop.example.co.uk"], Duration::minutes(h)))
            .collect(),
        failures: (1..=5)
            .map(|m| failed(ACCOUNT, "blocked.example.co.uk", Duration::minutes(m)))
            .collect(),
        ..Default::default()
    };
    let budgets = compute(&history, now());
    let renew = Planned {
        server: PROD.into(),
        account: Some(ACCOUNT.into()),
        names: vec!["shop.example.co.uk".into()],
        renewal: true,
    };
    let i = impact(&budgets, std::slice::from_ref(&renew));
    assert_eq!(
        i.len(),
        1,
        "a renewal is exempt from the domain and new-order limits"
    );
    assert_eq!(
        (i[0].limit, i[0].used, i[0].after, i[0].exceeds),
        (Limit::ExactSet, 4, 5, false)
    );
    assert!(
        impact(&budgets, &[renew.clone(), renew])[0].exceeds,
        "the sixth is refused"
    );
    let new = impact(
        &budgets,
        &[Planned {
            server: PROD.into(),
            account: Some(ACCOUNT.into()),
            names: vec!["a.example.co.uk".into(), "blocked.example.co.uk".into()],
            renewal: false,
        }],
    );
    let blocked = new
        .iter()
        .find(|i| i.limit == Limit::FailedAuthorizations)
        .unwrap();
    assert!(blocked.exceeds && blocked.after == 5, "{new:#?}");
    assert_eq!(new[0].limit, Limit::FailedAuthorizations, "refusals first");
    let domain = new
        .iter()
        .find(|i| i.limit == Limit::RegisteredDomain)
        .unwrap();
    // shop.example.co.uk took one slot (its later issuances were renewals); the two new
    // names take one more between them.
    assert_eq!(
        (domain.key.as_str(), domain.used, domain.after),
        ("example.co.uk", 1, 2),
        "one slot per domain"
    );
    assert!(new
        .iter()
        .any(|i| i.limit == Limit::NewOrders && i.after == 1));
}

/// Issue 20, item 4: a namespace-scoped viewer sees the shared counts of the budgets its own
/// objects spent, with how many came from elsewhere — never another tenant's object or
/// the time of its issuance.
#[test]
fn a_viewer_sees_shared_counts_but_not_whose_or_when() {
    let tenant = |ns: &str, name: &str| Origin {
        cluster: "zrh".into(),
        namespace: ns.into(),
        kind: "Certificate".into(),
        name: name.into(),
    };
    let issue = |ns: &str, name: &str, names: &[&str], ago: i64| Issuance {
        server: PROD.into(),
        names: names.iter().map(|s| s.to_string()).collect(),
        at: now() - Duration::minutes(ago),
        origin: tenant(ns, name),
    };
    let history = History {
        issuances: vec![
            issue("tenant-b", "b-secret-tls", &["b.example.com"], 30),
            issue("tenant-a", "a-tls", &["a.example.com"], 20),
            // Tenant B issued tenant A's exact names too.
            issue("tenant-b", "b-copy-tls", &["a.example.com"], 10),
        ],
        ..Default::default()
    };
    let all = compute(&history, now());
    let a_sees = |o: &Origin| o.namespace == "tenant-a";
    let domain = find(&all, Limit::RegisteredDomain, "example.com").unwrap();
    let seen = domain.for_viewer(a_sees).unwrap();
    assert_eq!(
        (seen.used, seen.elsewhere),
        (2, 1),
        "two new certificates, one not A's"
    );
    assert_eq!(
        seen.latest.as_ref().unwrap().name,
        "a-tls",
        "only A's own object is named"
    );
    assert_eq!(
        (seen.clusters.clone(), seen.namespaces.clone()),
        (vec!["zrh".to_string()], vec!["zrh/tenant-a".to_string()]),
        "where only A's own spends came from"
    );
    assert_eq!(domain.namespaces, vec!["zrh/tenant-a", "zrh/tenant-b"]);
    assert_eq!(
        seen.frees_at, None,
        "the next token's time would tell of B's issuance"
    );
    let set = find(&all, Limit::ExactSet, "a.example.com").unwrap();
    let seen = set.for_viewer(a_sees).unwrap();
    assert_eq!((seen.used, seen.elsewhere), (2, 1));
    let json = serde_json::to_string(&seen).unwrap();
    assert!(
        !json.contains("tenant-b") && !json.contains("b-copy"),
        "{json}"
    );
    // B's own budget is not A's business at all.
    let b_only = find(&all, Limit::ExactSet, "b.example.com").unwrap();
    assert!(b_only.for_viewer(a_sees).is_none());
    // A renew preview: the counts are shared, the time only when all counted are A's.
    let planned = Planned {
        server: PROD.into(),
        account: None,
        names: vec!["a.example.com".into()],
        renewal: true,
    };
    let mut i = impact(&all, std::slice::from_ref(&planned));
    as_seen_by(&mut i, &all, a_sees);
    assert_eq!((i[0].used, i[0].elsewhere, i[0].frees_at), (2, 1, None));
    // Findings built from A's view: on A's object, with the shared count, no foreign time.
    let mut viewed: Vec<Budget> = all.iter().filter_map(|b| b.for_viewer(a_sees)).collect();
    for b in &mut viewed {
        b.used = b.capacity; // as full as can be, so that the finding fires
        b.ratio = 1.0;
    }
    let f = findings(&viewed, now());
    assert!(!f.is_empty());
    for f in &f {
        assert_eq!(&*f.namespace, "tenant-a", "{f:?}");
        assert!(!f.message.contains("becomes available"), "{}", f.message);
        assert!(
            f.message.contains("outside your namespaces"),
            "{}",
            f.message
        );
    }
}

/// Issue 21: a retry that fails again burns a failed authorization, so a renew preview shows
/// that budget as soon as the name has failed once — not only when it is nearly spent.
#[test]
fn a_renew_preview_shows_the_failed_authorizations_of_a_name_that_failed() {
    let history = History {
        issuances: vec![issued(PROD, &["shop.example.co.uk"], Duration::days(30))],
        failures: vec![failed(ACCOUNT, "shop.example.co.uk", Duration::minutes(10))],
        ..Default::default()
    };
    let budgets = compute(&history, now());
    let renew = Planned {
        server: PROD.into(),
        account: Some(ACCOUNT.into()),
        names: vec!["shop.example.co.uk".into()],
        renewal: true,
    };
    let i = impact(&budgets, &[renew]);
    let failures = i
        .iter()
        .find(|i| i.limit == Limit::FailedAuthorizations)
        .unwrap_or_else(|| panic!("{i:#?}"));
    assert_eq!(
        (failures.used, failures.after, failures.exceeds),
        (1, 1, false),
        "checked, not spent: a success costs none of it"
    );
}

#[test]
fn spends_are_counted_per_namespace_the_most_first() {
    let o = |ns: &str| Origin {
        cluster: "zrh".into(),
        namespace: ns.into(),
        kind: "Certificate".into(),
        name: "x".into(),
    };
    let origins = [
        o("globex"),
        o("acme"),
        o("globex"),
        o("initech"),
        o("globex"),
        o("acme"),
    ];
    let spent = super::spent_by(origins.iter());
    let got: Vec<(&str, u32)> = spent
        .iter()
        .map(|s| (s.namespace.as_str(), s.count))
        .collect();
    assert_eq!(
        got,
        [("zrh/globex", 3), ("zrh/acme", 2), ("zrh/initech", 1)]
    );
}

/// The CA's refusal with its retry time is the budget's word: the replay counted four of
/// five (the fifth was spent where Lookout does not look), the CA said no until a time —
/// the budget is full until then, and frees at that time, for everyone who was told it.
#[test]
fn the_cas_retry_time_outranks_the_replay() {
    let retry = now() + Duration::hours(7);
    let message = format!(
        "Failed to create Order: 429 urn:ietf:params:acme:error:rateLimited: too many certificates (5) already issued for this exact set of identifiers in the last 168h0m0s, retry after {}: see https://letsencrypt.org/docs/rate-limits/",
        retry.format("%Y-%m-%d %H:%M:%S UTC")
    );
    let names = vec!["promo.example.org".to_string()];
    let refusal = CaRefusal::read(
        PROD,
        ACCOUNT,
        &names,
        &message,
        now() - Duration::minutes(5),
        origin("promo-tls"),
    )
    .expect("an exact-set refusal");
    assert_eq!(
        (refusal.limit, refusal.key.as_str()),
        (Limit::ExactSet, "promo.example.org")
    );
    let history = History {
        issuances: (1..=4)
            .map(|h| issued(PROD, &["promo.example.org"], Duration::hours(h)))
            .collect(),
        refusals: vec![refusal.clone()],
        ..History::default()
    };
    let budgets = compute(&history, now());
    let b = find(&budgets, Limit::ExactSet, "promo.example.org").unwrap();
    assert_eq!(
        (b.used, b.frees_at, b.frees_at_from_ca),
        (5, Some(retry), true)
    );
    // The refused Certificate's viewers were told the time; the replay alone would not
    // have shown it to them (a spend from elsewhere).
    let own = b.for_viewer(|o| o.name == "promo-tls").unwrap();
    assert_eq!(own.frees_at, Some(retry));
    // Once the retry time has passed, the replay speaks again.
    let later = compute(&history, retry + Duration::minutes(1));
    let b = find(&later, Limit::ExactSet, "promo.example.org").unwrap();
    assert!(!b.frees_at_from_ca);
    assert_eq!(b.used, 4, "{b:?}");
    // A refusal over a budget the history never saw spent still makes it.
    let alone = compute(
        &History {
            refusals: vec![refusal],
            ..History::default()
        },
        now(),
    );
    let b = find(&alone, Limit::ExactSet, "promo.example.org").unwrap();
    assert_eq!((b.used, b.frees_at), (5, Some(retry)));
    assert!(b.for_viewer(|o| o.name == "promo-tls").is_some());
    assert!(b.for_viewer(|o| o.name == "other-tls").is_none());
}

#[test]
fn refusals_name_their_limit_in_boulders_words() {
    let retry = "retry after 2026-06-08 19:00:00 UTC";
    let read = |m: &str| {
        CaRefusal::read(
            PROD,
            ACCOUNT,
            &["a.shop.example".to_string(), "b.shop.example".to_string()],
            &format!("429 urn:ietf:params:acme:error:rateLimited: {m}, {retry}: see …"),
            now(),
            origin("x"),
        )
        .map(|r| (r.limit, r.key, r.account))
    };
    assert_eq!(
        read("too many new orders (300) from this account in the last 3h0m0s"),
        Some((Limit::NewOrders, ACCOUNT.into(), Some(ACCOUNT.into())))
    );
    assert_eq!(
        read("too many failed authorizations (5) for \"A.shop.example\" in the last 1h0m0s"),
        Some((
            Limit::FailedAuthorizations,
            "a.shop.example".into(),
            Some(ACCOUNT.into())
        ))
    );
    assert_eq!(
        read("too many certificates (50) already issued for \"shop.example\" in the last 168h0m0s"),
        Some((Limit::RegisteredDomain, "shop.example".into(), None))
    );
    assert_eq!(
        read("too many certificates (5) already issued for this exact set of identifiers in the last 168h0m0s"),
        Some((Limit::ExactSet, "a.shop.example,b.shop.example".into(), None))
    );
    assert_eq!(
        read("too many new registrations (10) from this IP address"),
        None
    );
    assert_eq!(
        CaRefusal::read(
            PROD,
            ACCOUNT,
            &[],
            "too many new orders (300) from this account",
            now(),
            origin("x")
        ),
        None,
        "no retry time, no refusal to keep"
    );
}

/// A viewer who does not see everything learns that a budget's server is another CA, not
/// its directory URL (a neighbour's private CA and its internal host name).
#[test]
fn another_cas_directory_is_withheld_from_a_partial_viewer() {
    let private = "https://acme.corp.internal:9443/directory";
    let history = History {
        issuances: vec![
            issued(private, &["a.example.org"], Duration::hours(1)),
            issued(PROD, &["a.example.org"], Duration::hours(1)),
        ],
        ..History::default()
    };
    let budgets = compute(&history, now());
    let servers: Vec<String> = budgets
        .iter()
        .filter_map(|b| b.for_viewer(|_| true))
        .map(|b| b.server)
        .collect();
    assert!(servers.iter().any(|s| s == OTHER_SERVER), "{servers:?}");
    assert!(servers.iter().any(|s| s == PROD), "{servers:?}");
    assert!(!servers.iter().any(|s| s.contains("corp.internal")));
    // Whoever sees everything reads the budgets whole.
    assert!(budgets.iter().any(|b| b.server == private));
}

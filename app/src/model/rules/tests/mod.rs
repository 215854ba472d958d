//! Every rule, positive and negative (the `ingress.*` rules in `ingress.rs`).

mod challenges;
mod gateway;
mod gateway_by_hand;
mod gateway_http01;
mod gateway_proxy;
mod ingress;
mod listener;
mod policy;
mod probe;
mod temporary;
mod waiting;

use crate::model::Rule;
use chrono::{Duration, Utc};

use super::fixtures::{ago, attempt, cluster_issuer, World};
use crate::model::certificate::CertificateView;
use crate::model::cluster::{KindState, SyncState};
use crate::model::ingress::IngressView;
use crate::model::issuer::LE_PRODUCTION;
use crate::model::kind::Kind;

fn shop() -> IngressView {
    IngressView::test("shop")
        .in_ns("acme")
        .with_issuer("letsencrypt-prod")
        .tls("shop.example.com")
        .edit_in_place("true")
}

fn one(sev: &str, kind: &str, name: &str) -> Vec<(String, String, String)> {
    vec![(sev.to_string(), kind.to_string(), name.to_string())]
}

#[test]
fn a_healthy_ingress_and_certificate_have_no_findings() {
    let ing = shop();
    let w = World::new()
        .certificate(CertificateView::of(&ing))
        .ingress(ing);
    assert_eq!(w.findings(), vec![]);
}

#[test]
fn cluster_unreachable_when_stale_or_failed() {
    let mut w = World::new();
    w.facts.state = SyncState::Stale {
        since: Utc::now(),
        error: "connection refused".into(),
    };
    assert_eq!(
        w.fired(Rule::ClusterUnreachable),
        one("critical", "Cluster", "zrh")
    );
    w.facts.state = SyncState::Failed {
        error: "no such context".into(),
    };
    assert!(w.findings()[0].message.contains("no such context"));
    w.facts.state = SyncState::Synced;
    assert!(w.fired(Rule::ClusterUnreachable).is_empty());
}

#[test]
fn cert_manager_missing_only_when_ingresses_ask_for_certificates() {
    let w = World::new()
        .kind_state(Kind::Certificate, KindState::NotInstalled)
        .ingress(IngressView::test("plain").tls("a.example.com"));
    assert!(w.fired(Rule::ClusterCertManagerMissing).is_empty());
    let w = w.ingress(shop());
    // On the Ingress that asks, not the cluster: whoever sees the Ingress sees why.
    assert_eq!(
        w.fired(Rule::ClusterCertManagerMissing),
        one("warning", "Ingress", "shop")
    );
}

#[test]
fn ipv6_proxy_protocol_needs_proxy_protocol_and_ipv4_only() {
    let mut w = World::new().load_balancer(&["IPv4"]);
    assert!(w.fired(Rule::ClusterIpv6ProxyProtocol).is_empty());
    for c in w.data.cilium_configs.values_mut() {
        std::sync::Arc::make_mut(c).proxy_protocol = Some(true);
    }
    assert_eq!(
        w.fired(Rule::ClusterIpv6ProxyProtocol),
        one("warning", "Cluster", "zrh")
    );
    let w = w.load_balancer(&["IPv4", "IPv6"]);
    assert!(w.fired(Rule::ClusterIpv6ProxyProtocol).is_empty());
}

#[test]
fn expired_certificate_is_critical_and_not_also_not_ready() {
    let ing = shop();
    let mut cert = CertificateView::of(&ing).not_ready("Expired", Duration::days(2));
    cert.not_after = ago(Duration::days(2));
    let w = World::new().certificate(cert).ingress(ing);
    assert_eq!(
        w.fired(Rule::CertExpired),
        one("critical", "Certificate", "shop-tls")
    );
    assert!(w.fired(Rule::CertNotReady).is_empty());
}

#[test]
fn expiring_is_relative_to_the_renewal_time_not_a_fixed_21_days() {
    let ing = shop();
    // A 45-day certificate with 15 days left and renewal due in 1 day: fine.
    let mut ok = CertificateView::of(&ing);
    ok.not_before = ago(Duration::days(30));
    ok.not_after = Some(super::fixtures::now() + Duration::days(15));
    ok.renewal_time = Some(super::fixtures::now() + Duration::days(1));
    let w = World::new().certificate(ok).ingress(ing.clone());
    assert!(w.fired(Rule::CertExpiring).is_empty());
    // Renewal was due 2 days ago: warning with 20 days left, critical with 5.
    let w = World::new()
        .certificate(CertificateView::of(&ing).expiring(Duration::days(20), Duration::days(2)))
        .ingress(ing.clone());
    assert_eq!(
        w.fired(Rule::CertExpiring),
        one("warning", "Certificate", "shop-tls")
    );
    let w = World::new()
        .certificate(CertificateView::of(&ing).expiring(Duration::days(5), Duration::days(2)))
        .ingress(ing);
    assert_eq!(
        w.fired(Rule::CertExpiring),
        one("critical", "Certificate", "shop-tls")
    );
}

#[test]
fn not_ready_turns_critical_after_an_hour() {
    let ing = shop();
    let w = World::new()
        .certificate(CertificateView::of(&ing).not_ready("DoesNotExist", Duration::minutes(10)))
        .ingress(ing.clone());
    assert_eq!(
        w.fired(Rule::CertNotReady),
        one("warning", "Certificate", "shop-tls")
    );
    assert!(w
        .findings()
        .iter()
        .any(|f| f.title.contains("DoesNotExist")));
    let w = World::new()
        .certificate(CertificateView::of(&ing).not_ready("DoesNotExist", Duration::hours(3)))
        .ingress(ing);
    assert_eq!(
        w.fired(Rule::CertNotReady),
        one("critical", "Certificate", "shop-tls")
    );
}

#[test]
fn issuance_failing_shows_the_next_retry() {
    let ing = shop();
    let w = World::new()
        .certificate(CertificateView::of(&ing).failing(3, Duration::hours(1)))
        .ingress(ing.clone());
    assert_eq!(
        w.fired(Rule::CertIssuanceFailing),
        one("critical", "Certificate", "shop-tls")
    );
    let f = w
        .findings()
        .into_iter()
        .find(|f| f.rule == Rule::CertIssuanceFailing)
        .unwrap();
    let retry = super::at(super::fixtures::now() + Duration::hours(3));
    assert!(f.message.contains(&retry), "{}", f.message);
    let w = World::new()
        .certificate(CertificateView::of(&ing))
        .ingress(ing);
    assert!(w.fired(Rule::CertIssuanceFailing).is_empty());
}

#[test]
fn hosts_not_covered_by_the_certificate() {
    let ing = shop();
    let w = World::new()
        .certificate(CertificateView::of(&ing).dns(&["other.example.com"]))
        .ingress(ing.clone());
    assert_eq!(
        w.fired(Rule::CertHostsNotCovered),
        one("warning", "Ingress", "shop")
    );
    let w = World::new()
        .certificate(CertificateView::of(&ing).dns(&["*.example.com"]))
        .ingress(ing);
    assert!(w.fired(Rule::CertHostsNotCovered).is_empty());
}

#[test]
fn staging_issuer_in_production_clusters_only() {
    let ing = IngressView::test("shop")
        .in_ns("acme")
        .with_issuer("letsencrypt-staging")
        .tls("shop.example.com")
        .edit_in_place("true");
    let mut w = World::new()
        .certificate(CertificateView::of(&ing))
        .ingress(ing);
    assert_eq!(
        w.fired(Rule::CertStagingIssuer),
        one("warning", "Certificate", "shop-tls")
    );
    w.facts.overrides.production = false;
    assert!(w.fired(Rule::CertStagingIssuer).is_empty());
}

#[test]
fn a_young_self_check_failure_is_not_yet_failing_and_an_invalid_one_is() {
    let ing = shop();
    let cert = CertificateView::of(&ing);
    let reason =
        "Waiting for HTTP-01 challenge propagation: wrong status code '404', expected '200'";
    let w = World::new()
        .attempt(attempt(
            &cert,
            "pending",
            None,
            Some(("pending", reason, Duration::minutes(2))),
        ))
        .certificate(cert.clone())
        .ingress(ing.clone());
    assert!(w.fired(Rule::AcmeChallengeFailing).is_empty());
    let w = World::new()
        .attempt(attempt(
            &cert,
            "invalid",
            None,
            Some(("invalid", "404", Duration::minutes(2))),
        ))
        .certificate(cert)
        .ingress(ing);
    assert_eq!(w.fired(Rule::AcmeChallengeFailing).len(), 1);
}

#[test]
fn stuck_challenge_after_15_minutes() {
    let ing = shop();
    let cert = CertificateView::of(&ing);
    let w = World::new()
        .attempt(attempt(
            &cert,
            "pending",
            None,
            Some(("pending", "", Duration::minutes(20))),
        ))
        .certificate(cert.clone())
        .ingress(ing.clone());
    assert_eq!(
        w.fired(Rule::AcmeChallengeStuck),
        one("warning", "Challenge", "shop-tls-2-123-456")
    );
    let w = World::new()
        .attempt(attempt(
            &cert,
            "pending",
            None,
            Some(("pending", "", Duration::minutes(5))),
        ))
        .certificate(cert)
        .ingress(ing);
    assert!(w.fired(Rule::AcmeChallengeStuck).is_empty());
}

#[test]
fn rate_limited_order_reports_the_certificate_and_retry_time() {
    let ing = shop();
    let cert = CertificateView::of(&ing);
    let reason = "Failed to create Order: 429 urn:ietf:params:acme:error:rateLimited: too many certificates (5) already issued for this exact set of identifiers in the last 168h0m0s, retry after 2026-06-02 08:00:00 UTC";
    let w = World::new()
        .attempt(attempt(&cert, "errored", Some(reason), None))
        .certificate(cert.clone())
        .ingress(ing.clone());
    assert_eq!(
        w.fired(Rule::AcmeRateLimited),
        one("critical", "Certificate", "shop-tls")
    );
    let f = w
        .findings()
        .into_iter()
        .find(|f| f.rule == Rule::AcmeRateLimited)
        .unwrap();
    assert!(f.message.contains("2026-06-02T08:00:00Z"), "{}", f.message);
    let w = World::new()
        .attempt(attempt(
            &cert,
            "errored",
            Some("Failed to create Order: 400 badNonce"),
            None,
        ))
        .certificate(cert.clone())
        .ingress(ing.clone());
    assert!(w.fired(Rule::AcmeRateLimited).is_empty());
    // An invalid authorization is not a rate limit, even when the Order's generated name
    // holds the digits 429 (the demo's shop once showed "rate limit hit" for a minute).
    let invalid = "Failed to wait for order resource \"shop-tls-1-5712429898\" to become ready: order is in \"invalid\" state: ";
    let w = World::new()
        .attempt(attempt(&cert, "invalid", Some(invalid), None))
        .certificate(cert)
        .ingress(ing);
    assert!(w.fired(Rule::AcmeRateLimited).is_empty());
}

#[test]
fn a_paused_name_and_the_new_orders_limit_have_rules_of_their_own() {
    let ing = shop();
    let cert = CertificateView::of(&ing);
    let world = |reason: &str| {
        World::new()
            .attempt(attempt(&cert, "errored", Some(reason), None))
            .certificate(cert.clone())
            .ingress(ing.clone())
    };
    let w = world("Failed to create Order: 429 urn:ietf:params:acme:error:rateLimited: Your account is temporarily prevented from requesting certificates for shop.example.com and possibly others. Please visit: https://portal.letsencrypt.org/sfe/v1/unpause?jwt=x");
    assert_eq!(
        w.fired(Rule::AcmePaused),
        one("critical", "Certificate", "shop-tls")
    );
    assert!(w.fired(Rule::AcmeRateLimited).is_empty());
    let w = world("Failed to create Order: 429 urn:ietf:params:acme:error:rateLimited: too many new orders (300) from this account in the last 3h0m0s, retry after 2026-06-01 15:00:00 UTC: see https://letsencrypt.org/docs/rate-limits/#new-orders-per-account");
    assert_eq!(
        w.fired(Rule::AcmeOrdersBudget),
        one("critical", "Certificate", "shop-tls")
    );
    assert!(w.fired(Rule::AcmePaused).is_empty() && w.fired(Rule::AcmeRateLimited).is_empty());
}

#[test]
fn missing_issuer_is_reported_once_on_the_ingress() {
    let ing = IngressView::test("shop")
        .in_ns("acme")
        .with_issuer("letsencrypt-typo")
        .tls("shop.example.com")
        .edit_in_place("true");
    let w = World::new()
        .certificate(CertificateView::of(&ing))
        .ingress(ing);
    assert_eq!(
        w.fired(Rule::IssuerMissing),
        one("critical", "Ingress", "shop")
    );
    let ing = shop();
    let w = World::new()
        .certificate(CertificateView::of(&ing))
        .ingress(ing);
    assert!(w.fired(Rule::IssuerMissing).is_empty());
}

#[test]
fn issuer_not_ready_when_referenced() {
    let ing = shop();
    let w = World::new()
        .issuer(cluster_issuer("letsencrypt-prod", LE_PRODUCTION, false))
        .certificate(CertificateView::of(&ing))
        .ingress(ing);
    assert_eq!(
        w.fired(Rule::IssuerNotReady),
        one("critical", "ClusterIssuer", "letsencrypt-prod")
    );
    // An unready issuer nobody uses is not a finding.
    let w = World::new().issuer(cluster_issuer("unused", LE_PRODUCTION, false));
    assert!(w.fired(Rule::IssuerNotReady).is_empty());
}

#[test]
fn findings_are_sorted_critical_first() {
    let ing = IngressView::test("shop")
        .with_issuer("letsencrypt-prod")
        .tls("shop.example.com");
    let w = World::new()
        .certificate(CertificateView::of(&ing).failing(1, Duration::hours(1)))
        .ingress(ing)
        .ingress(IngressView::test("x").class("nginx"));
    let f = w.findings();
    assert_eq!(f[0].severity.label(), "critical");
    assert_eq!(f.last().unwrap().severity.label(), "warning");
}

#[test]
fn gateway_listeners_link_to_the_certificates_of_their_secrets() {
    use crate::model::chain::Index;
    use crate::model::infra::{GatewayView, ListenerView, SecretRef};
    let ing = shop();
    let w = World::new().certificate(CertificateView::of(&ing));
    let gw = GatewayView {
        namespace: "acme".into(),
        name: "gw".into(),
        class: "cilium".into(),
        issuer: None,
        listeners: vec![
            ListenerView {
                name: "https".into(),
                hostname: Some("shop.example.com".into()),
                protocol: "HTTPS".into(),
                port: 443,
                certificate_refs: vec![SecretRef {
                    namespace: "acme".into(),
                    name: "shop-tls".into(),
                }],
                conditions: Vec::new(),
            },
            ListenerView {
                name: "other".into(),
                hostname: None,
                protocol: "HTTPS".into(),
                port: 443,
                certificate_refs: vec![SecretRef {
                    namespace: "acme".into(),
                    name: "nope".into(),
                }],
                conditions: Vec::new(),
            },
        ],
        http_listeners: Vec::new(),
        addresses: Vec::new(),
        created: None,
    };
    let idx = Index::new(&w.facts, &w.data);
    let linked = idx.gateway_certificates(&gw);
    assert_eq!(linked[0].0, "https");
    assert_eq!(&*linked[0].1[0].name, "shop-tls");
    assert!(linked[1].1.is_empty());
}

#[test]
fn tailscale_cert_budget_counts_new_hostnames_per_tailnet_across_clusters() {
    use super::tailscale::{findings, recent_ingresses};
    use crate::model::text::Text;
    // A cluster with `n` named Tailscale Ingresses in tail1234 (and `waiting` without a
    // hostname yet), created two days ago.
    let cluster = |name: &str, n: usize, waiting: usize, tailnet: Option<&str>| {
        let mut w = World::new();
        w.facts.name = name.into();
        w.facts.overrides.tailnet = tailnet.map(str::to_string);
        for i in 0..n + waiting {
            let mut ing = IngressView::test(&format!("{name}-ts-{i}")).class("tailscale");
            ing.addresses = if i < n {
                std::sync::Arc::from([Text::from(format!("{name}-{i}.tail1234.ts.net"))])
            } else {
                Default::default()
            };
            ing.created = super::fixtures::ago(Duration::days(2));
            w = w.ingress(ing);
        }
        w
    };
    let now = super::fixtures::now();
    let fleet = |worlds: &[&World]| {
        let all: Vec<_> = worlds
            .iter()
            .flat_map(|w| recent_ingresses(&w.facts, &w.data, now))
            .collect();
        findings(&all)
    };
    // 25 + 20 in two clusters: one tailnet, one budget.
    let (a, b) = (
        cluster("zrh", 25, 0, None),
        cluster("gva", 20, 3, Some("tail1234.ts.net")),
    );
    let f = fleet(&[&a, &b]);
    // One per namespace spending from the tailnet (here one in each cluster), on its own
    // newest Ingress: every tenant is told, whoever created last.
    assert_eq!(f.len(), 2, "{f:#?}");
    let clusters: Vec<&str> = f.iter().map(|x| &*x.cluster).collect();
    assert_eq!(clusters, ["gva", "zrh"]);
    assert!(f.iter().all(|x| x.name.starts_with(&*x.cluster)), "{f:#?}");
    let gva = f.iter().find(|x| &*x.cluster == "gva").unwrap();
    assert!(gva.message.contains("3 more are still without a hostname"));
    let f: Vec<_> = f.into_iter().filter(|x| &*x.cluster == "zrh").collect();
    assert!(
        f[0].title
            .contains("45 new Tailscale hostnames in tail1234.ts.net"),
        "{}",
        f[0].title
    );
    // Read by whoever sees its Ingress: how many clusters, or which, is not told.
    assert!(
        f[0].message.contains("across this fleet"),
        "{}",
        f[0].message
    );
    assert!(!f[0].message.contains("2 clusters"), "{}", f[0].message);
    assert!(!f[0].message.contains("zrh"), "{}", f[0].message);
    // Another namespace creating one later changes neither which Ingress zrh's finding is
    // on nor since when.
    let c = cluster("lab", 1, 0, Some("tail1234.ts.net"));
    let again: Vec<_> = fleet(&[&a, &b, &c])
        .into_iter()
        .filter(|x| &*x.cluster == "zrh")
        .collect();
    assert_eq!(
        (&again[0].name, again[0].since),
        (&f[0].name, f[0].since),
        "{again:#?}"
    );
    // Each cluster alone stays under the warning: the per-cluster rules never fire it.
    assert!(fleet(&[&a]).is_empty());
    assert!(a.fired(Rule::TailscaleCertBudget).is_empty());
    // Older than a week: nothing.
    let mut old = cluster("zrh", 45, 0, None);
    let keys: Vec<_> = old.data.ingresses.keys().cloned().collect();
    for k in keys {
        let mut ing = (*old.data.ingresses[&k]).clone();
        ing.created = super::fixtures::ago(Duration::days(8));
        old.data.ingresses.insert(k, std::sync::Arc::new(ing));
    }
    assert!(fleet(&[&old]).is_empty());
}

/// Item 6 of issue 20: what a namespace-scoped caller learns of a ClusterIssuer in a
/// Certificate's chain — kind, name, readiness and which CA kind, not another CA's URL.
#[test]
fn a_tenant_sees_a_cluster_issuers_kind_not_its_internal_url() {
    use crate::model::read::lists::certificate_detail;
    use crate::model::read::Visibility;
    use crate::model::scope::{Access, Grant, Role};
    use crate::model::View;
    let ing = shop();
    let cert = CertificateView::of(&ing);
    let mut internal = cluster_issuer(
        "letsencrypt-prod",
        "https://ca.internal.corp:9000/acme/directory",
        false,
    );
    internal.kind = "ClusterIssuer".into();
    internal.ready.as_mut().unwrap().message = Some(
        "Failed to register ACME account: Get \"https://ca.internal.corp:9000/acme/directory\": connection refused".into(),
    );
    let w = World::new()
        .issuer(internal)
        .certificate(cert.clone())
        .ingress(ing);
    let detail = |view: &View| {
        let visible = Visibility::of(view, "zrh").unwrap();
        certificate_detail(&visible, &w.facts, &w.data, &[], "acme", "shop-tls").unwrap()
    };
    let support = View::whole_fleet(["zrh"]);
    let issuer = detail(&support).chain.issuer.unwrap();
    assert!(issuer.acme_server_url.is_some() && !issuer.solvers.is_empty());
    let tenant = View::new(
        &Access::new(vec![(
            Role::Viewer,
            Grant {
                clusters: vec!["zrh".into()],
                namespaces: vec!["acme".into()],
            },
        )]),
        ["zrh"],
    );
    let theirs = detail(&tenant);
    let json = serde_json::to_string(&theirs).unwrap();
    assert!(!json.contains("ca.internal.corp"), "{json}");
    let issuer = theirs.chain.issuer.unwrap();
    assert_eq!(issuer.name, "letsencrypt-prod");
    assert!(!issuer.is_ready(), "its readiness stays");
    assert_eq!(
        issuer.ready.unwrap().reason.as_deref(),
        Some("ErrRegisterACMEAccount")
    );
    assert_eq!(issuer.server, crate::model::issuer::AcmeServer::OtherAcme);
}

/// A request made again under its predecessor's name (cert-manager names requests
/// `<certificate>-<revision>`) is another request: the predecessor's Order and Challenges,
/// not yet removed by the garbage collector, are not its own — it waits for that Order.
#[test]
fn a_namesake_requests_chain_holds_only_its_own_order_and_names_the_old_one() {
    use crate::model::chain::Index;
    use crate::model::text::Uid;
    let ing = shop();
    let cert = CertificateView::of(&ing);
    let (mut request, order, ch) = attempt(
        &cert,
        "invalid",
        None,
        Some(("invalid", "old failure", Duration::minutes(20))),
    );
    // The old request (whose uid the Order and Challenge name) was deleted; a new one of
    // the same name stands.
    request.uid = Uid::parse("uid-cr-made-again");
    let order_name = order.name.clone();
    let w = World::new()
        .attempt((request, order, ch))
        .certificate(cert.clone())
        .ingress(ing);
    let idx = Index::new(&w.facts, &w.data);
    let chain = idx.certificate_chain(&cert);
    assert_eq!(chain.requests.len(), 1);
    assert!(chain.requests[0].orders.is_empty(), "not its Order");
    assert_eq!(chain.requests[0].held_by.as_deref(), Some(&*order_name));
}

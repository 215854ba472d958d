//! Every rule, positive and negative.

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
        w.fired("cluster.unreachable"),
        one("critical", "Cluster", "zrh")
    );
    w.facts.state = SyncState::Failed {
        error: "no such context".into(),
    };
    assert!(w.findings()[0].message.contains("no such context"));
    w.facts.state = SyncState::Synced;
    assert!(w.fired("cluster.unreachable").is_empty());
}

#[test]
fn cert_manager_missing_only_when_ingresses_ask_for_certificates() {
    let w = World::new()
        .kind_state(Kind::Certificate, KindState::NotInstalled)
        .ingress(IngressView::test("plain").tls("a.example.com"));
    assert!(w.fired("cluster.cert-manager-missing").is_empty());
    let w = w.ingress(shop());
    assert_eq!(
        w.fired("cluster.cert-manager-missing"),
        one("warning", "Cluster", "zrh")
    );
}

#[test]
fn ipv6_proxy_protocol_needs_proxy_protocol_and_ipv4_only() {
    let mut w = World::new().load_balancer(&["IPv4"]);
    assert!(w.fired("cluster.ipv6-proxy-protocol").is_empty());
    for c in w.data.cilium_configs.values_mut() {
        std::sync::Arc::make_mut(c).proxy_protocol = Some(true);
    }
    assert_eq!(
        w.fired("cluster.ipv6-proxy-protocol"),
        one("warning", "Cluster", "zrh")
    );
    let w = w.load_balancer(&["IPv4", "IPv6"]);
    assert!(w.fired("cluster.ipv6-proxy-protocol").is_empty());
}

#[test]
fn expired_certificate_is_critical_and_not_also_not_ready() {
    let ing = shop();
    let mut cert = CertificateView::of(&ing).not_ready("Expired", Duration::days(2));
    cert.not_after = ago(Duration::days(2));
    let w = World::new().certificate(cert).ingress(ing);
    assert_eq!(
        w.fired("cert.expired"),
        one("critical", "Certificate", "shop-tls")
    );
    assert!(w.fired("cert.not-ready").is_empty());
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
    assert!(w.fired("cert.expiring").is_empty());
    // Renewal was due 2 days ago: warning with 20 days left, critical with 5.
    let w = World::new()
        .certificate(CertificateView::of(&ing).expiring(Duration::days(20), Duration::days(2)))
        .ingress(ing.clone());
    assert_eq!(
        w.fired("cert.expiring"),
        one("warning", "Certificate", "shop-tls")
    );
    let w = World::new()
        .certificate(CertificateView::of(&ing).expiring(Duration::days(5), Duration::days(2)))
        .ingress(ing);
    assert_eq!(
        w.fired("cert.expiring"),
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
        w.fired("cert.not-ready"),
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
        w.fired("cert.not-ready"),
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
        w.fired("cert.issuance-failing"),
        one("critical", "Certificate", "shop-tls")
    );
    let f = w
        .findings()
        .into_iter()
        .find(|f| f.rule == "cert.issuance-failing")
        .unwrap();
    let retry = super::at(super::fixtures::now() + Duration::hours(3));
    assert!(f.message.contains(&retry), "{}", f.message);
    let w = World::new()
        .certificate(CertificateView::of(&ing))
        .ingress(ing);
    assert!(w.fired("cert.issuance-failing").is_empty());
}

#[test]
fn hosts_not_covered_by_the_certificate() {
    let ing = shop();
    let w = World::new()
        .certificate(CertificateView::of(&ing).dns(&["other.example.com"]))
        .ingress(ing.clone());
    assert_eq!(
        w.fired("cert.hosts-not-covered"),
        one("warning", "Ingress", "shop")
    );
    let w = World::new()
        .certificate(CertificateView::of(&ing).dns(&["*.example.com"]))
        .ingress(ing);
    assert!(w.fired("cert.hosts-not-covered").is_empty());
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
        w.fired("cert.staging-issuer"),
        one("warning", "Certificate", "shop-tls")
    );
    w.facts.overrides.production = false;
    assert!(w.fired("cert.staging-issuer").is_empty());
}

#[test]
fn failing_challenge_is_classified_and_makes_missing_annotation_critical() {
    let ing = IngressView::test("shop")
        .in_ns("acme")
        .with_issuer("letsencrypt-prod")
        .tls("shop.example.com");
    let cert = CertificateView::of(&ing);
    let reason =
        "Waiting for HTTP-01 challenge propagation: wrong status code '308', expected '200'";
    let w = World::new()
        .attempt(attempt(
            &cert,
            "pending",
            None,
            Some(("pending", reason, Duration::minutes(20))),
        ))
        .certificate(cert)
        .ingress(ing);
    assert_eq!(
        w.fired("acme.challenge-failing"),
        one("critical", "Challenge", "shop-tls-2-123-456")
    );
    let f = w
        .findings()
        .into_iter()
        .find(|f| f.rule == "acme.challenge-failing")
        .unwrap();
    assert!(f.title.contains("redirect to HTTPS"), "{}", f.title);
    assert_eq!(
        w.fired("ingress.edit-in-place-missing"),
        one("critical", "Ingress", "shop")
    );
    assert!(w.fired("acme.challenge-stuck").is_empty());
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
    assert!(w.fired("acme.challenge-failing").is_empty());
    let w = World::new()
        .attempt(attempt(
            &cert,
            "invalid",
            None,
            Some(("invalid", "404", Duration::minutes(2))),
        ))
        .certificate(cert)
        .ingress(ing);
    assert_eq!(w.fired("acme.challenge-failing").len(), 1);
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
        w.fired("acme.challenge-stuck"),
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
    assert!(w.fired("acme.challenge-stuck").is_empty());
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
        w.fired("acme.rate-limited"),
        one("critical", "Certificate", "shop-tls")
    );
    let f = w
        .findings()
        .into_iter()
        .find(|f| f.rule == "acme.rate-limited")
        .unwrap();
    assert!(f.message.contains("2026-06-02T08:00:00Z"), "{}", f.message);
    let w = World::new()
        .attempt(attempt(
            &cert,
            "errored",
            Some("Failed to create Order: 400 badNonce"),
            None,
        ))
        .certificate(cert)
        .ingress(ing);
    assert!(w.fired("acme.rate-limited").is_empty());
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
        w.fired("issuer.missing"),
        one("critical", "Ingress", "shop")
    );
    let ing = shop();
    let w = World::new()
        .certificate(CertificateView::of(&ing))
        .ingress(ing);
    assert!(w.fired("issuer.missing").is_empty());
}

#[test]
fn issuer_not_ready_when_referenced() {
    let ing = shop();
    let w = World::new()
        .issuer(cluster_issuer("letsencrypt-prod", LE_PRODUCTION, false))
        .certificate(CertificateView::of(&ing))
        .ingress(ing);
    assert_eq!(
        w.fired("issuer.not-ready"),
        one("critical", "ClusterIssuer", "letsencrypt-prod")
    );
    // An unready issuer nobody uses is not a finding.
    let w = World::new().issuer(cluster_issuer("unused", LE_PRODUCTION, false));
    assert!(w.fired("issuer.not-ready").is_empty());
}

#[test]
fn edit_in_place_missing_invalid_and_not_effective() {
    let missing = IngressView::test("a")
        .with_issuer("letsencrypt-prod")
        .tls("a.example.com");
    let w = World::new()
        .certificate(CertificateView::of(&missing))
        .ingress(missing);
    assert_eq!(
        w.fired("ingress.edit-in-place-missing"),
        one("warning", "Ingress", "a")
    );

    let invalid = IngressView::test("b")
        .with_issuer("letsencrypt-prod")
        .tls("b.example.com")
        .edit_in_place("yes");
    let w = World::new()
        .certificate(CertificateView::of(&invalid))
        .ingress(invalid);
    assert_eq!(
        w.fired("ingress.edit-in-place-invalid"),
        one("warning", "Ingress", "b")
    );
    assert!(w.fired("ingress.edit-in-place-missing").is_empty());

    let set = IngressView::test("c")
        .with_issuer("letsencrypt-prod")
        .tls("c.example.com")
        .edit_in_place("true");
    let w = World::new()
        .certificate(CertificateView::of(&set).without_override())
        .ingress(set.clone());
    assert_eq!(
        w.fired("ingress.edit-in-place-not-effective"),
        one("warning", "Ingress", "c")
    );
    let w = World::new()
        .certificate(CertificateView::of(&set))
        .ingress(set);
    assert!(w.fired("ingress.edit-in-place-not-effective").is_empty());

    let plain = IngressView::test("d").tls("d.example.com");
    assert!(World::new()
        .ingress(plain)
        .findings()
        .iter()
        .all(|f| !f.rule.starts_with("ingress.edit-in-place")));
}

#[test]
fn shared_secret_in_one_namespace() {
    let a = IngressView::test("a").tls_secret("a.example.com", "shared-tls");
    let b = IngressView::test("b").tls_secret("b.example.com", "shared-tls");
    let w = World::new().ingress(a).ingress(b.clone());
    assert_eq!(w.fired("ingress.shared-secret").len(), 2);
    let across = w
        .findings()
        .into_iter()
        .find(|f| f.rule == "ingress.shared-secret")
        .unwrap();
    assert!(
        across
            .message
            .contains("owned by whichever Ingress it saw first")
            && !across.message.contains("fight"),
        "{}",
        across.message
    );
    // Twice within one Ingress: ingress-shim refuses the whole Ingress.
    let twice = IngressView::test("d")
        .tls_secret("d.example.com", "d-tls")
        .tls_secret("www.d.example.com", "d-tls");
    let w = World::new().ingress(twice);
    let fired = w.findings();
    let within: Vec<_> = fired
        .iter()
        .filter(|f| f.rule == "ingress.shared-secret")
        .collect();
    assert_eq!(within.len(), 1);
    assert!(
        within[0].message.contains("BadConfig"),
        "{}",
        within[0].message
    );
    let other_ns = IngressView::test("c")
        .in_ns("other")
        .tls_secret("c.example.com", "shared-tls");
    assert!(World::new()
        .ingress(b)
        .ingress(other_ns)
        .fired("ingress.shared-secret")
        .is_empty());
}

#[test]
fn certificate_missing_when_the_issuer_annotations_conflict_or_there_is_no_tls() {
    let both =
        "both \"cert-manager.io/issuer\" and \"cert-manager.io/cluster-issuer\" may not be set";
    let conflict = IngressView::test("c")
        .with_issuer("letsencrypt-prod")
        .with_issuer_conflict(both)
        .tls("c.example.com");
    let w = World::new().ingress(conflict.clone());
    let fired = w.fired("ingress.certificate-missing");
    assert_eq!(fired.len(), 1);
    let f = w
        .findings()
        .into_iter()
        .find(|f| f.rule == "ingress.certificate-missing")
        .unwrap();
    assert!(
        f.message.contains("BadConfig") && f.message.contains(both),
        "{}",
        f.message
    );
    // A Certificate made before the annotations went wrong still writes the Secret.
    let w = World::new()
        .ingress(conflict.clone())
        .certificate(CertificateView::of(&conflict));
    assert!(w.fired("ingress.certificate-missing").is_empty());
    // An issuer but no TLS section: nothing for ingress-shim to make a Certificate from.
    let bare = IngressView::test("bare").with_issuer("letsencrypt-prod");
    assert_eq!(
        World::new()
            .ingress(bare)
            .fired("ingress.certificate-missing")
            .len(),
        1
    );
    // Consistent annotations and a TLS section: nothing to say here.
    let fine = IngressView::test("fine")
        .with_issuer("letsencrypt-prod")
        .tls("fine.example.com");
    assert!(World::new()
        .ingress(fine)
        .fired("ingress.certificate-missing")
        .is_empty());
}

#[test]
fn shared_host_with_https_enforcement() {
    let a = IngressView::test("a").tls("shop.example.com");
    let b = IngressView::test("b").tls_secret("shop.example.com", "b-tls");
    let w = World::new().ingress(a.clone()).ingress(b.clone());
    assert_eq!(w.fired("ingress.shared-host-https-redirect").len(), 2);
    let off_a = a.force_https("disabled");
    let off_b = b.force_https("disabled");
    assert!(World::new()
        .ingress(off_a)
        .ingress(off_b)
        .fired("ingress.shared-host-https-redirect")
        .is_empty());
}

#[test]
fn no_address_after_five_minutes() {
    let w = World::new().ingress(IngressView::test("a").without_address(Duration::minutes(10)));
    assert_eq!(
        w.fired("ingress.no-address"),
        one("warning", "Ingress", "a")
    );
    let w = World::new().ingress(IngressView::test("a").without_address(Duration::minutes(1)));
    assert!(w.fired("ingress.no-address").is_empty());
}

#[test]
fn unmanaged_tls_when_no_certificate_writes_the_secret() {
    let w = World::new().ingress(IngressView::test("a").tls("a.example.com"));
    assert_eq!(
        w.fired("ingress.unmanaged-tls"),
        one("info", "Ingress", "a")
    );
    let ing = shop();
    let w = World::new()
        .certificate(CertificateView::of(&ing))
        .ingress(ing);
    assert!(w.fired("ingress.unmanaged-tls").is_empty());
}

#[test]
fn unknown_class() {
    let w = World::new().ingress(IngressView::test("a").class("nginx"));
    assert_eq!(
        w.fired("ingress.unknown-class"),
        one("warning", "Ingress", "a")
    );
    assert!(World::new()
        .ingress(IngressView::test("a"))
        .fired("ingress.unknown-class")
        .is_empty());
    // The message names the classes there are, or says there are none.
    let message = |w: &World| {
        w.findings()
            .into_iter()
            .find(|f| f.rule == "ingress.unknown-class")
            .map(|f| f.message.to_string())
            .unwrap()
    };
    assert!(message(&w).ends_with("the cluster has IngressClasses cilium."));
    let mut none = World::new().ingress(IngressView::test("a").class("nginx"));
    none.data.ingress_classes.clear();
    assert!(message(&none).ends_with("the cluster has no IngressClass."));
}

#[test]
fn annotation_status_reports_managers() {
    use crate::model::chain::{AnnotationStatus, Index};
    let ing = shop();
    let w = World::new()
        .certificate(CertificateView::of(&ing))
        .ingress(ing.clone());
    let idx = Index::new(&w.facts, &w.data);
    assert_eq!(
        idx.annotation_status(&ing),
        AnnotationStatus::Set {
            managers: std::sync::Arc::from(["lookout".into()])
        }
    );
    let chains = idx.tls_chains(&ing);
    assert_eq!(
        &*chains[0].certificate.as_ref().unwrap().certificate.name,
        "shop-tls"
    );
    let info = idx.controller_of(&ing);
    assert_eq!((info.cilium, info.enforce_https), (true, Some(true)));
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
    use crate::model::infra::{GatewayView, ListenerView};
    let ing = shop();
    let w = World::new().certificate(CertificateView::of(&ing));
    let gw = GatewayView {
        namespace: "acme".into(),
        name: "gw".into(),
        issuer: None,
        listeners: vec![
            ListenerView {
                name: "https".into(),
                hostname: Some("shop.example.com".into()),
                protocol: "HTTPS".into(),
                secret_names: vec!["shop-tls".into()],
            },
            ListenerView {
                name: "other".into(),
                hostname: None,
                protocol: "HTTPS".into(),
                secret_names: vec!["nope".into()],
            },
        ],
        created: None,
    };
    let idx = Index::new(&w.facts, &w.data);
    let linked = idx.gateway_certificates(&gw);
    assert_eq!(linked[0].0, "https");
    assert_eq!(&*linked[0].1[0].name, "shop-tls");
    assert!(linked[1].1.is_empty());
}

#[test]
fn tailscale_cert_budget_counts_new_hostnames_per_tailnet() {
    use crate::model::text::Text;
    let mut w = World::new();
    for i in 0..40 {
        let mut ing = IngressView::test(&format!("ts-{i}")).class("tailscale");
        ing.addresses = std::sync::Arc::from([Text::from(format!("app{i}.tail1234.ts.net"))]);
        ing.created = super::fixtures::ago(Duration::days(2));
        w = w.ingress(ing);
    }
    assert_eq!(w.fired("tailscale.cert-budget").len(), 1);
    let f = w
        .findings()
        .into_iter()
        .find(|f| f.rule == "tailscale.cert-budget")
        .unwrap();
    assert!(f.title.contains("tail1234.ts.net"), "{}", f.title);
    // Older than a week, or fewer than 40: nothing.
    let mut w = World::new();
    for i in 0..39 {
        let mut ing = IngressView::test(&format!("ts-{i}")).class("tailscale");
        ing.addresses = std::sync::Arc::from([Text::from(format!("app{i}.tail1234.ts.net"))]);
        w = w.ingress(ing);
    }
    assert!(w.fired("tailscale.cert-budget").is_empty());
}

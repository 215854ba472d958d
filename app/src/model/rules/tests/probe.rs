//! The `probe.*` rules on observations set by hand: what each says, and when it stays quiet.

use crate::model::Rule;
use std::sync::Arc;

use chrono::Duration;

use super::shop;
use crate::model::certificate::CertificateView;
use crate::model::ingress::IngressView;
use crate::model::probe::{
    AcmePathObservation, Observation, ProbeError, ProbeSource, ServedCertificate, TlsObservation,
};
use crate::model::rules::fixtures::{now, World};
use crate::model::Finding;

fn leaf(names: &[&str], issuer: &str, not_after: chrono::DateTime<chrono::Utc>) -> TlsObservation {
    TlsObservation {
        leaf: ServedCertificate {
            subject: format!("CN={}", names.first().copied().unwrap_or("x")),
            names: names.iter().map(|n| n.to_string()).collect(),
            issuer: issuer.into(),
            serial: "0A".into(),
            not_before: not_after - Duration::days(90),
            not_after,
            sha256: "ab".repeat(32),
        },
        chain_len: 2,
        untrusted: None,
        version: "TLSv1.3".into(),
    }
}

fn seen(address: &str, ingress: &str, tls: Result<TlsObservation, ProbeError>) -> Observation {
    let (tls, tls_error) = match tls {
        Ok(t) => (Some(t), None),
        Err(e) => (None, Some(e)),
    };
    Observation {
        host: "shop.example.com".into(),
        address: address.parse().unwrap(),
        sources: vec![ProbeSource {
            namespace: "acme".into(),
            kind: "Ingress".into(),
            name: ingress.into(),
        }],
        since: now() - Duration::minutes(5),
        tls,
        tls_error,
        needs_proxy_header: false,
        acme: Some(AcmePathObservation {
            status: 404,
            location: None,
        }),
        acme_error: None,
    }
}

fn world(edit_in_place: bool, observations: Vec<Observation>) -> World {
    let ing = if edit_in_place {
        shop()
    } else {
        shop().edit_in_place("")
    };
    let mut w = World::new()
        .certificate(CertificateView::of(&ing))
        .ingress(ing);
    w.data.probes = Arc::new(observations);
    w
}

fn probe_findings(w: &World) -> Vec<Finding> {
    w.findings()
        .into_iter()
        .filter(|f| f.rule.id().starts_with("probe."))
        .collect()
}

const R10: &str = "CN=R10, O=Let's Encrypt";

#[test]
fn a_host_serving_its_certificate_has_no_probe_findings() {
    let good = leaf(&["shop.example.com"], R10, now() + Duration::days(70));
    let w = world(
        true,
        vec![
            seen("192.0.2.1", "shop", Ok(good.clone())),
            seen("2001:db8::1", "shop", Ok(good)),
        ],
    );
    assert!(probe_findings(&w).is_empty(), "{:#?}", probe_findings(&w));
}

#[test]
fn an_expired_copy_while_the_certificate_is_valid_is_called_stale() {
    let old = leaf(&["shop.example.com"], R10, now() - Duration::days(1));
    let w = world(true, vec![seen("192.0.2.1", "shop", Ok(old))]);
    let found = probe_findings(&w);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].rule, Rule::ProbeExpired);
    assert_eq!(found[0].kind, crate::model::Kind::Certificate);
    assert!(
        found[0].message.contains("stale copy"),
        "{}",
        found[0].message
    );
}

#[test]
fn an_expired_certificate_no_certificate_manages_is_not_told_to_renew() {
    let old = leaf(&["shop.example.com"], R10, now() - Duration::days(1));
    let hand_made = IngressView::test("shop")
        .in_ns("acme")
        .tls("shop.example.com");
    let mut w = World::new().ingress(hand_made);
    w.data.probes = Arc::new(vec![seen("192.0.2.1", "shop", Ok(old))]);
    let expired = probe_findings(&w)
        .into_iter()
        .find(|f| f.rule == Rule::ProbeExpired)
        .expect("the expired certificate is observed");
    assert_eq!(expired.kind, crate::model::Kind::Ingress);
    assert!(
        expired
            .remediation
            .contains("No Certificate manages this Secret")
            && !expired.remediation.contains("Renew the Certificate"),
        "{}",
        expired.remediation
    );
}

#[test]
fn an_older_certificate_is_named_as_such() {
    // Valid, but ending 60 days before the one the Certificate says was issued.
    let older = leaf(&["shop.example.com"], R10, now() + Duration::days(10));
    let w = world(true, vec![seen("192.0.2.1", "shop", Ok(older))]);
    let found = probe_findings(&w);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].rule, Rule::ProbeWrongCertificate);
    assert!(
        found[0].message.contains("an older certificate"),
        "{}",
        found[0].message
    );
    // Still valid and trusted for the host: no client fails yet, it needs attention.
    assert_eq!(found[0].severity.label(), "warning");
}

#[test]
fn a_host_served_another_of_its_certificates_is_not_served_the_wrong_one() {
    use crate::model::ingress::IngressView;
    use crate::model::rules::fixtures::attempt;
    // shop and shop-api serve one host, each with a Certificate; the controller serves
    // shop-api's, whose leaf cert-manager issued.
    let served = leaf(&["shop.example.com"], R10, now() + Duration::days(80));
    let api = IngressView::test("shop-api")
        .in_ns("acme")
        .with_issuer("letsencrypt-prod")
        .edit_in_place("true")
        .tls("shop.example.com");
    let api_cert = CertificateView::of(&api);
    let (mut request, order, _) = attempt(&api_cert, "valid", None, None);
    request.issued = Some(Box::new(crate::model::probe::IssuedLeaf {
        sha256: served.leaf.sha256.as_str().into(),
        serial: "0A".into(),
        not_after: served.leaf.not_after,
    }));
    let mut w = world(true, vec![seen("192.0.2.1", "shop", Ok(served.clone()))])
        .certificate(api_cert)
        .attempt((request, order, None))
        .ingress(api);
    assert!(probe_findings(&w).is_empty(), "{:#?}", probe_findings(&w));
    // Another leaf than any Certificate of the host issued is still the wrong one.
    let mut stranger = served;
    stranger.leaf.sha256 = "cd".repeat(32);
    w.data.probes = Arc::new(vec![seen("192.0.2.1", "shop", Ok(stranger))]);
    assert!(probe_findings(&w)
        .iter()
        .any(|f| f.rule == Rule::ProbeWrongCertificate));
}

#[test]
fn a_certificate_for_other_names_is_a_name_mismatch_and_another_certificate_not_an_untrusted_one() {
    let mut other = leaf(
        &["elsewhere.example.com"],
        "CN=elsewhere.example.com",
        now() + Duration::days(300),
    );
    other.untrusted = Some(crate::model::probe::Untrusted::UnknownIssuer(
        "self-signed".into(),
    ));
    let w = world(true, vec![seen("192.0.2.1", "shop", Ok(other))]);
    let mut rules: Vec<Rule> = probe_findings(&w).iter().map(|f| f.rule).collect();
    rules.sort_by_key(|r| r.id());
    assert_eq!(
        rules,
        [Rule::ProbeNameMismatch, Rule::ProbeWrongCertificate]
    );
    let wrong = probe_findings(&w)
        .into_iter()
        .find(|f| f.rule == Rule::ProbeWrongCertificate)
        .unwrap();
    assert!(
        wrong.message.contains("a certificate for other names"),
        "{}",
        wrong.message
    );
    assert!(
        !wrong.message.contains("refuses updates"),
        "{}",
        wrong.message
    );
    // The Certificate already names the host: the advice is about what is served, never
    // to add a name it has.
    let mismatch = probe_findings(&w)
        .into_iter()
        .find(|f| f.rule == Rule::ProbeNameMismatch)
        .unwrap();
    assert!(
        mismatch.remediation.contains("already names this host")
            && !mismatch.remediation.contains("Make the host part"),
        "{}",
        mismatch.remediation
    );
}

#[test]
fn another_certificate_behind_a_refused_shared_listener_says_why() {
    // shop is on the shared listener, where another host has two Secrets: Envoy refuses
    // the listener's updates, and shop's new Secret has not reached clients.
    let shared = |mut ing: IngressView| {
        ing.rare.make_mut().lb_mode = Some("shared".into());
        ing
    };
    let older = leaf(&["shop.example.com"], R10, now() + Duration::days(10));
    let docs = |name: &str, secret: &str| {
        shared(
            IngressView::test(name)
                .in_ns("acme")
                .tls_secret("docs.example.com", secret),
        )
    };
    let mut w = World::new()
        .certificate(CertificateView::of(&shop()))
        .ingress(shared(shop()))
        .ingress(docs("docs", "docs-tls"))
        .ingress(docs("docs-preview", "docs-preview-tls"));
    w.data.probes = Arc::new(vec![seen("192.0.2.1", "shop", Ok(older.clone()))]);
    let wrong = probe_findings(&w)
        .into_iter()
        .find(|f| f.rule == Rule::ProbeWrongCertificate)
        .expect("another certificate is served");
    assert!(
        wrong.message.contains("refuses updates"),
        "{}",
        wrong.message
    );
    assert!(
        wrong
            .remediation
            .contains("ingress.cilium-listener-conflict"),
        "{}",
        wrong.remediation
    );
    // One Secret for docs: the listener takes updates, the usual advice.
    let mut w = World::new()
        .certificate(CertificateView::of(&shop()))
        .ingress(shared(shop()))
        .ingress(docs("docs", "docs-tls"));
    w.data.probes = Arc::new(vec![seen("192.0.2.1", "shop", Ok(older))]);
    let wrong = probe_findings(&w)
        .into_iter()
        .find(|f| f.rule == Rule::ProbeWrongCertificate)
        .unwrap();
    assert!(
        !wrong.message.contains("refuses updates"),
        "{}",
        wrong.message
    );
}

#[test]
fn a_staging_chain_is_untrusted() {
    let mut staging = leaf(
        &["shop.example.com"],
        "CN=(STAGING) Pseudo Plum E5",
        now() + Duration::days(70),
    );
    staging.untrusted = Some(crate::model::probe::Untrusted::UnknownIssuer(
        "unknown issuer".into(),
    ));
    let w = world(true, vec![seen("192.0.2.1", "shop", Ok(staging))]);
    let found = probe_findings(&w);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].rule, Rule::ProbeUntrusted);
    assert!(found[0].message.contains("staging"), "{}", found[0].message);
}

#[test]
fn a_redirected_acme_path_counts_only_without_edit_in_place() {
    let good = leaf(&["shop.example.com"], R10, now() + Duration::days(70));
    let mut o = seen("192.0.2.1", "shop", Ok(good));
    o.acme = Some(AcmePathObservation {
        status: 308,
        location: Some("https://shop.example.com/.well-known/acme-challenge/t".into()),
    });
    let without = world(false, vec![o.clone()]);
    assert_eq!(
        probe_findings(&without)
            .iter()
            .map(|f| f.rule)
            .collect::<Vec<_>>(),
        [Rule::ProbeAcmePathRedirected]
    );
    let warned = probe_findings(&without);
    assert_eq!(
        warned[0].severity,
        crate::model::Severity::Warning,
        "only the next renewal's risk"
    );
    assert!(warned[0].remediation.starts_with("Add edit-in-place"));
    // A challenge for the host failing now: this issuance is breaking, critical.
    let ing = shop().edit_in_place("");
    let cert = CertificateView::of(&ing).issuing();
    let (r, ord, ch) = crate::model::rules::fixtures::attempt(
        &cert,
        "pending",
        None,
        Some((
            "pending",
            "Waiting for HTTP-01 challenge propagation: wrong status code '404', expected '200'",
            Duration::minutes(20),
        )),
    );
    let mut failing = World::new()
        .attempt((r, ord, ch))
        .certificate(cert.clone())
        .ingress(ing.clone());
    failing.data.probes = Arc::new(vec![o.clone()]);
    let found = probe_findings(&failing);
    assert_eq!(found[0].rule, Rule::ProbeAcmePathRedirected);
    assert_eq!(found[0].severity, crate::model::Severity::Critical);
    assert!(
        found[0].message.ends_with("Its issuance is failing now."),
        "{}",
        found[0].message
    );
    // A Certificate made by hand: the override goes on the Certificate, not the Ingress.
    let mut by_hand = CertificateView::of(&ing);
    by_hand.owner = None;
    let mut w = World::new().certificate(by_hand).ingress(ing);
    w.data.probes = Arc::new(vec![o.clone()]);
    let found = probe_findings(&w);
    assert!(
        found[0].remediation.starts_with(
            "Put acme.cert-manager.io/http01-override-ingress-name: \"shop\" on Certificate"
        ),
        "{}",
        found[0].remediation
    );
    // With edit-in-place the redirect reaches the solver over HTTPS.
    assert!(probe_findings(&world(true, vec![o])).is_empty());
}

#[test]
fn ipv6_failing_while_ipv4_works_is_said_as_such_and_both_failing_twice() {
    let good = leaf(&["shop.example.com"], R10, now() + Duration::days(70));
    let w = world(
        true,
        vec![
            seen("192.0.2.1", "shop", Ok(good)),
            seen("2001:db8::1", "shop", Err(ProbeError::Timeout)),
        ],
    );
    let found = probe_findings(&w);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].rule, Rule::ProbeUnreachable);
    assert!(
        found[0].title.contains("IPv6 clients get no answer"),
        "{}",
        found[0].title
    );
    assert!(found[0].message.contains("cilium/cilium#42950"));
    let down = world(
        true,
        vec![
            seen("192.0.2.1", "shop", Err(ProbeError::Refused)),
            seen("2001:db8::1", "shop", Err(ProbeError::Refused)),
        ],
    );
    let titles: Vec<String> = probe_findings(&down)
        .iter()
        .map(|f| f.title.to_string())
        .collect();
    assert_eq!(titles.len(), 2, "{titles:#?}");
    assert!(
        titles.iter().all(|t| t.contains("does not answer on")),
        "{titles:#?}"
    );
}

#[test]
fn an_answer_only_with_a_proxy_header_is_proxy_protocol_not_unreachable() {
    let good = leaf(&["shop.example.com"], R10, now() + Duration::days(70));
    let mut o = seen("192.0.2.1", "shop", Ok(good));
    o.needs_proxy_header = true;
    let found = probe_findings(&world(true, vec![o.clone()]));
    assert_eq!(
        found.iter().map(|f| f.rule).collect::<Vec<_>>(),
        [Rule::ProbeProxyProtocol]
    );
    assert!(
        found[0]
            .remediation
            .contains("enable-ingress-proxy-protocol"),
        "{}",
        found[0].remediation
    );
    // Published by a Gateway: Cilium's Gateway listeners have a flag of their own.
    o.sources = vec![ProbeSource {
        namespace: "acme".into(),
        kind: "Gateway".into(),
        name: "edge".into(),
    }];
    let found = probe_findings(&world(true, vec![o]));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0]
            .remediation
            .contains("turn off enable-gateway-api-proxy-protocol in cilium-config"),
        "{}",
        found[0].remediation
    );
    assert_eq!(found[0].host.as_deref(), Some("shop.example.com"));
}

#[test]
fn a_hosts_serving_signature_changes_when_its_certificate_is_issued_and_no_other_does() {
    use crate::model::certificate::CertificateView;
    use crate::model::ingress::IngressView;
    use crate::model::probe::serving_signatures;
    use chrono::Duration;
    let shop = IngressView::test("shop")
        .in_ns("acme")
        .with_issuer("letsencrypt-prod")
        .tls("shop.example.com");
    let blog = IngressView::test("blog")
        .in_ns("acme")
        .with_issuer("letsencrypt-prod")
        .tls("blog.example.com");
    let mut w = World::new()
        .certificate(CertificateView::of(&shop).not_ready("Failed", Duration::hours(1)))
        .certificate(CertificateView::of(&blog))
        .ingress(shop)
        .ingress(blog);
    let before = serving_signatures(&w.data);
    assert_eq!(before.len(), 2);
    // cert-manager issues shop's certificate: a new revision, Ready.
    for c in w.data.certificates.values_mut() {
        if &*c.name == "shop-tls" {
            let c = std::sync::Arc::make_mut(c);
            c.revision = Some(2);
            c.ready = CertificateView::of(&IngressView::test("x").tls("x.example.com")).ready;
        }
    }
    let after = serving_signatures(&w.data);
    assert_ne!(before["shop.example.com"], after["shop.example.com"]);
    assert_eq!(before["blog.example.com"], after["blog.example.com"]);
    // The probe's own results are not a change of what should be served.
    w.data.probes = std::sync::Arc::new(Vec::new());
    assert_eq!(serving_signatures(&w.data), after);
}

#[test]
fn a_handshake_failing_before_the_first_issuance_is_no_certificate_not_an_unreachable_host() {
    let reset = |issued: bool| {
        let ing = shop();
        let mut cert = CertificateView::of(&ing);
        if !issued {
            cert.not_after = None;
        }
        let mut w = World::new().certificate(cert).ingress(ing);
        w.data.probes = Arc::new(vec![
            seen("192.0.2.1", "shop", Err(ProbeError::Reset)),
            seen("2001:db8::1", "shop", Err(ProbeError::Closed)),
        ]);
        probe_findings(&w)
    };
    // Never issued: no Secret, so the listener has no certificate — about the Certificate.
    let found = reset(false);
    assert_eq!(
        found.iter().map(|f| f.rule).collect::<Vec<_>>(),
        [Rule::ProbeNoCertificate],
        "{found:#?}"
    );
    assert_eq!(found[0].kind.name(), "Certificate");
    assert!(
        found[0].message.contains("has never been issued")
            && found[0].message.contains("cilium/cilium#26988")
            && found[0].message.contains("192.0.2.1"),
        "{}",
        found[0].message
    );
    // Issued, and still reset: the listener or the load balancer is at fault.
    let found = reset(true);
    assert!(
        !found.is_empty() && found.iter().all(|f| f.rule == Rule::ProbeUnreachable),
        "{found:#?}"
    );
    // A refused connection is no handshake: the load balancer, whatever the Certificate says.
    let ing = shop();
    let mut cert = CertificateView::of(&ing);
    cert.not_after = None;
    let mut w = World::new().certificate(cert).ingress(ing);
    w.data.probes = Arc::new(vec![seen("192.0.2.1", "shop", Err(ProbeError::Refused))]);
    assert_eq!(
        probe_findings(&w)
            .iter()
            .map(|f| f.rule)
            .collect::<Vec<_>>(),
        [Rule::ProbeUnreachable]
    );
}

#[test]
fn a_host_whose_ingress_has_no_certificate_yet_serves_none_and_a_neighbours_reset_is_explained() {
    let resets = |address: &str, ingress: &str| seen(address, ingress, Err(ProbeError::Reset));
    // The Ingress asks cert-manager, and no Certificate exists (cert-manager missing, or
    // ingress-shim refused it): about the Ingress, naming the Secret nothing writes.
    let mut w = World::new().ingress(shop());
    w.data.probes = Arc::new(vec![resets("192.0.2.1", "shop")]);
    let found = probe_findings(&w);
    assert_eq!(
        found.iter().map(|f| f.rule).collect::<Vec<_>>(),
        [Rule::ProbeNoCertificate],
        "{found:#?}"
    );
    assert_eq!(found[0].kind.name(), "Ingress");
    assert!(
        found[0].message.contains("no Certificate has been made")
            && found[0].message.contains("shop-tls"),
        "{}",
        found[0].message
    );
    // Not asking cert-manager: a reset is the listener's, as before.
    let mut w = World::new().ingress(
        IngressView::test("shop")
            .in_ns("acme")
            .tls("shop.example.com"),
    );
    w.data.probes = Arc::new(vec![resets("192.0.2.1", "shop")]);
    assert_eq!(
        probe_findings(&w)
            .iter()
            .map(|f| f.rule)
            .collect::<Vec<_>>(),
        [Rule::ProbeUnreachable]
    );
    // Two Ingresses give the host a Secret each; one Certificate issued, the other never:
    // the reset is the unissued one's, reported once, about it — not as unreachable.
    let api = IngressView::test("shop-api")
        .in_ns("acme")
        .with_issuer("letsencrypt-prod")
        .tls_secret("shop.example.com", "shop-api-tls");
    let issued_cert = CertificateView::of(&api);
    let shop = shop();
    let mut never = CertificateView::of(&shop);
    never.not_after = None;
    let mut w = World::new()
        .certificate(issued_cert)
        .certificate(never)
        .ingress(api)
        .ingress(shop);
    let mut o = resets("192.0.2.1", "shop");
    o.sources.push(ProbeSource {
        namespace: "acme".into(),
        kind: "Ingress".into(),
        name: "shop-api".into(),
    });
    w.data.probes = Arc::new(vec![o]);
    let found = probe_findings(&w);
    assert_eq!(
        found
            .iter()
            .map(|f| (f.rule, f.name.to_string()))
            .collect::<Vec<_>>(),
        [(Rule::ProbeNoCertificate, "shop-tls".to_string())],
        "{found:#?}"
    );
}

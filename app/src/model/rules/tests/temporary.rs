//! `cert.temporary-certificate`: a first issuance that serves cert-manager's temporary
//! certificate is said as such — not as an untrusted or wrong certificate, nor as a
//! Certificate "issued by another issuer".

use std::sync::Arc;

use chrono::Duration;

use super::shop;
use crate::model::certificate::CertificateView;
use crate::model::probe::{Observation, ProbeSource, ServedCertificate, TlsObservation, Untrusted};
use crate::model::rules::fixtures::{ago, cond, now, World};
use crate::model::Rule;

/// A Certificate of `shop` in its first issuance with the temporary certificate's times:
/// never issued, Issuing=True, Ready=False `IncorrectIssuer` (a ClusterIssuer).
fn first_issuance() -> CertificateView {
    let mut c = CertificateView::of(&shop()).issuing();
    c.revision = None;
    c.created = ago(Duration::minutes(3));
    c.not_before = ago(Duration::minutes(2));
    c.not_after = Some(now() + Duration::days(90) - Duration::minutes(2));
    c.renewal_time = Some(now() + Duration::days(60));
    c.ready = Some(cond(
        "Ready",
        "False",
        "IncorrectIssuer",
        "Issuing certificate as Secret was previously issued by \"Issuer.cert-manager.io/\"",
        ago(Duration::minutes(2)),
    ));
    c
}

fn temporary_served() -> Observation {
    Observation {
        host: "shop.example.com".into(),
        address: "192.0.2.1".parse().unwrap(),
        sources: vec![ProbeSource {
            namespace: "acme".into(),
            kind: "Ingress".into(),
            name: "shop".into(),
        }],
        since: now() - Duration::minutes(1),
        tls: Some(TlsObservation {
            leaf: ServedCertificate {
                subject: "serialNumber=1234567890".into(),
                names: vec!["shop.example.com".into()],
                issuer: "CN=cert-manager.local".into(),
                serial: "0B".into(),
                not_before: now() - Duration::minutes(2),
                not_after: now() + Duration::days(90),
                sha256: "ef".repeat(32),
            },
            chain_len: 1,
            untrusted: Some(Untrusted::UnknownIssuer("unknown issuer".into())),
            version: "TLSv1.3".into(),
        }),
        tls_error: None,
        needs_proxy_header: false,
        acme: None,
        acme_error: None,
    }
}

#[test]
fn a_first_issuance_with_the_temporary_certificate_is_said_as_such() {
    let mut w = World::new().certificate(first_issuance()).ingress(shop());
    w.data.probes = Arc::new(vec![temporary_served()]);
    let found = w.findings();
    let temporary: Vec<_> = found
        .iter()
        .filter(|f| f.rule == Rule::CertTemporaryCertificate)
        .collect();
    assert_eq!(temporary.len(), 1, "{found:#?}");
    let f = temporary[0];
    assert_eq!(f.severity, crate::model::Severity::Warning);
    assert!(f.title.contains("first issuance"), "{}", f.title);
    assert!(f.message.contains("cert-manager.local"), "{}", f.message);
    assert!(
        f.message
            .contains("Observed: clients get it for shop.example.com on 192.0.2.1"),
        "{}",
        f.message
    );
    assert!(f.message.contains("IncorrectIssuer"), "{}", f.message);
    // One statement of it: not also untrusted, wrong, or not ready for another issuer.
    for other in [
        Rule::ProbeUntrusted,
        Rule::ProbeWrongCertificate,
        Rule::CertNotReady,
    ] {
        assert!(w.fired(other).is_empty(), "{other}: {found:#?}");
    }
}

#[test]
fn under_an_issuer_a_ready_temporary_certificate_is_still_told() {
    // Under a namespaced Issuer readiness passes: Ready=True while clients get it.
    let mut c = first_issuance().failing(1, Duration::minutes(5));
    c.ready = Some(cond(
        "Ready",
        "True",
        "Ready",
        "Certificate is up to date and has not expired",
        ago(Duration::minutes(2)),
    ));
    let w = World::new().certificate(c).ingress(shop());
    let found = w.fired(Rule::CertTemporaryCertificate);
    assert_eq!(found.len(), 1);
    let f = w
        .findings()
        .into_iter()
        .find(|f| f.rule == Rule::CertTemporaryCertificate)
        .unwrap();
    assert!(f.title.contains("failed"), "{}", f.title);
    assert!(f.remediation.contains("then renew"), "{}", f.remediation);
}

#[test]
fn an_issued_or_adopted_certificate_is_not_temporary() {
    // Issued once (a revision): a renewal in flight keeps the issued certificate.
    let mut renewing = first_issuance();
    renewing.revision = Some(1);
    let w = World::new().certificate(renewing).ingress(shop());
    assert!(w.fired(Rule::CertTemporaryCertificate).is_empty());
    // Adopted from a Secret older than the Certificate, renewing: not temporary.
    let mut adopted = first_issuance();
    adopted.not_before = ago(Duration::days(40));
    let w = World::new().certificate(adopted).ingress(shop());
    assert!(w.fired(Rule::CertTemporaryCertificate).is_empty());
    // Without the annotation cert-manager writes no temporary certificate.
    let mut plain = first_issuance();
    plain.issue_temporary = false;
    let w = World::new().certificate(plain).ingress(shop());
    assert!(w.fired(Rule::CertTemporaryCertificate).is_empty());
    assert_eq!(w.fired(Rule::CertNotReady).len(), 1);
}

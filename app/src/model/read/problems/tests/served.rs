//! Harm judged by what hosts serve, where no Certificate tells it.

use chrono::Duration;

use super::{everything, problems_of};
use crate::model::ingress::IngressView;
use crate::model::rules::fixtures::World;
use crate::model::{Rule, Severity};

/// An Ingress that no Certificate serves (ingress-shim refuses its annotations) while its
/// Secret still holds a trusted certificate the host serves: its clients fail when that
/// certificate ends, not now — and now when nothing trusted is served.
#[test]
fn a_host_serving_a_trusted_certificate_no_certificate_renews_fails_at_its_expiry() {
    use crate::model::probe::{Observation, ServedCertificate, TlsObservation};
    let now = crate::model::rules::fixtures::now();
    let jupyter = IngressView::test("jupyter")
        .in_ns("ml")
        .with_issuer("letsencrypt-prod")
        .with_issuer_conflict("both may not be set")
        .tls("jupyter.example.com");
    let w = World::new().ingress(jupyter);
    let urgency = |w: &World| {
        let p = problems_of(w, &everything());
        let p = p
            .iter()
            .find(|p| p.cause == Rule::IngressCertificateMissing)
            .expect("the missing Certificate");
        p.urgency.clone()
    };
    let unserved = urgency(&w);
    assert_eq!(unserved.severity, Severity::Critical);
    assert!(unserved.clients_failing_since.is_some(), "{unserved:?}");

    let served = |untrusted| Observation {
        host: "jupyter.example.com".into(),
        address: "192.0.2.1".parse().unwrap(),
        sources: Vec::new(),
        since: now,
        tls: Some(TlsObservation {
            leaf: ServedCertificate {
                subject: "CN=jupyter.example.com".into(),
                names: vec!["jupyter.example.com".into()],
                issuer: "CN=R10".into(),
                serial: "0C".into(),
                not_before: now - Duration::days(74),
                not_after: now + Duration::days(16),
                sha256: "ab".into(),
            },
            chain_len: 2,
            untrusted,
            version: "TLSv1.3".into(),
        }),
        tls_error: None,
        needs_proxy_header: false,
        acme: None,
        acme_error: None,
    };
    let mut w = w;
    w.data.probes = std::sync::Arc::new(vec![served(None)]);
    let later = urgency(&w);
    assert_eq!(later.severity, Severity::Warning, "{later:?}");
    assert_eq!(later.clients_failing_since, None);
    assert_eq!(later.clients_fail_at, Some(now + Duration::days(16)));
    // One address serving something untrusted: clients there fail now.
    let mut v6 = served(Some(crate::model::probe::Untrusted::UnknownIssuer(
        "self-signed".into(),
    )));
    v6.address = "2001:db8::1".parse().unwrap();
    w.data.probes = std::sync::Arc::new(vec![served(None), v6]);
    assert_eq!(urgency(&w).severity, Severity::Critical);
}

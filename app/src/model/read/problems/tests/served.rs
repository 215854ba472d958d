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

/// Stacked causes: the certificate is issued and good for 59 more days but names only
/// `www`, the bare host is served another certificate, and the challenge path is redirected
/// (edit-in-place missing). The host failing now leads, critical; the missing fix, which
/// only breaks the next renewal, follows as a warning with its date.
#[test]
fn a_host_failing_now_leads_a_cause_that_only_breaks_the_next_renewal() {
    use super::{finding, problems_from};
    use crate::model::certificate::CertificateView;
    let mut initech = IngressView::test("initech")
        .in_ns("acme")
        .with_issuer("letsencrypt-prod")
        .tls("www.initech.example");
    let mut tls = initech.tls.to_vec();
    tls[0].hosts = std::sync::Arc::from(["initech.example".into(), "www.initech.example".into()]);
    initech.tls = tls.into();
    let cert = CertificateView::of(&initech)
        .dns(&["www.initech.example"])
        .expiring(Duration::days(59), Duration::days(-29));
    let w = World::new().certificate(cert).ingress(initech);
    let mut findings = w.findings();
    assert!(
        findings
            .iter()
            .any(|f| f.rule == Rule::IngressEditInPlaceMissing),
        "{findings:#?}"
    );
    let mut mismatch = finding(
        Rule::ProbeNameMismatch,
        "Ingress",
        "initech",
        "https://initech.example serves a certificate that does not name it",
    );
    mismatch.severity = crate::model::Severity::Critical;
    findings.push(mismatch);
    let problems = problems_from(&w, &findings);
    let lead = &problems[0];
    assert_eq!(lead.cause, Rule::CertHostsNotCovered, "{problems:#?}");
    assert_eq!(lead.urgency.severity, Severity::Critical);
    assert!(lead.urgency.clients_failing_since.is_some());
    assert!(lead
        .symptoms
        .iter()
        .any(|f| f.rule == Rule::ProbeNameMismatch));
    let renewal = problems
        .iter()
        .find(|p| p.cause == Rule::IngressEditInPlaceMissing)
        .expect("the missing fix is a problem of its own");
    assert_eq!(renewal.urgency.severity, Severity::Warning, "{renewal:#?}");
    assert!(renewal.urgency.clients_fail_at.is_some());
    assert!(renewal
        .symptoms
        .iter()
        .all(|f| f.rule != Rule::ProbeNameMismatch && f.rule != Rule::CertHostsNotCovered));
}

/// A certificate that expired because nothing can renew it (its issuer is missing) is the
/// missing issuer's harm: one problem, critical, never "being issued".
#[test]
fn an_expiry_the_root_explains_stays_under_the_root() {
    use crate::model::certificate::CertificateView;
    let wiki = IngressView::test("wiki")
        .in_ns("initech")
        .with_issuer("team-le")
        .tls("wiki.initech.example");
    let cert = CertificateView::of(&wiki)
        .expiring(Duration::days(-2), Duration::days(32))
        .not_ready("Expired", Duration::days(2));
    let w = World::new().certificate(cert).ingress(wiki);
    let problems = problems_of(&w, &everything());
    let about_wiki: Vec<_> = problems
        .iter()
        .filter(|p| p.hosts.iter().any(|h| &**h == "wiki.initech.example"))
        .collect();
    assert_eq!(about_wiki.len(), 1, "{problems:#?}");
    let p = about_wiki[0];
    assert_eq!(p.cause, Rule::IssuerMissing);
    assert_eq!(p.urgency.severity, Severity::Critical);
    assert_eq!(p.confirming, None);
    assert!(
        p.symptoms.iter().any(|f| f.rule == Rule::CertExpired),
        "{p:#?}"
    );
}

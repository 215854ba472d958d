//! "Confirming": a problem being fixed reads so only while nothing is wrong but the wait,
//! and only when someone asked for the new attempt.

use chrono::Duration;

use super::*;

#[test]
fn a_fixed_chain_reads_confirming_until_its_certificate_is_issued_and_served() {
    use crate::model::rules::fixtures::cond;
    let shop = IngressView::test("shop")
        .in_ns("acme")
        .with_issuer("letsencrypt-prod")
        .edit_in_place("true")
        .tls("shop.example.com");
    let issuer = cluster_issuer(
        "letsencrypt-prod",
        crate::model::issuer::LE_PRODUCTION,
        true,
    );
    let now = crate::model::rules::fixtures::now();
    // cert-manager's own retry when its backoff ends, nothing changed: not a fix under way.
    let on_its_own = CertificateView::of(&shop)
        .failing(1, Duration::hours(1))
        .issuing()
        .not_ready("Failed", Duration::hours(1));
    let w = World::new()
        .issuer(issuer.clone())
        .certificate(on_its_own)
        .ingress(shop.clone());
    let problems = problems_of(&w, &everything());
    assert!(!problems.is_empty());
    assert!(
        problems.iter().all(|p| p.confirming.is_none()),
        "{problems:#?}"
    );
    // The fix is applied (it renews): the last attempt failed, a new one is under way,
    // nothing fails.
    let retrying = CertificateView::of(&shop)
        .failing(1, Duration::hours(1))
        .renewed()
        .not_ready("Failed", Duration::hours(1));
    let w = World::new()
        .issuer(issuer.clone())
        .certificate(retrying.clone())
        .ingress(shop.clone());
    let problems = problems_of(&w, &everything());
    assert_eq!(problems.len(), 1, "{problems:#?}");
    let p = &problems[0];
    assert_eq!(
        p.confirming.as_deref(),
        Some("a new certificate is being issued after the last attempt failed")
    );
    assert_eq!(p.urgency.severity, Severity::Info, "not counted as broken");
    // The CA's limit joins: a new certificate does not end that, so nothing is confirming
    // any more — for the problem and for each chain, so a tenant reads the same.
    let limit = Finding {
        rule: Rule::AcmeRateLimitBudget,
        kind: crate::model::Kind::Certificate.into(),
        ..finding(
            Rule::AcmeRateLimitBudget,
            "Certificate",
            "shop-tls",
            "5/5 certificates for the exact set used",
        )
    };
    for view in [everything(), tenant(&["acme"])] {
        let seen = problems_of(&w, &view);
        let joined = join_fleet(&seen, std::slice::from_ref(&limit), now);
        assert_eq!(joined.len(), 1);
        assert_eq!(joined[0].confirming, None);
        assert_ne!(
            joined[0].urgency.severity,
            Severity::Info,
            "{:#?}",
            joined[0]
        );
        assert!(
            joined[0]
                .affected
                .iter()
                .all(|a| a.urgency.severity == joined[0].urgency.severity),
            "{:#?}",
            joined[0].affected
        );
    }
    // The new attempt's challenge fails: broken again.
    let failing_again = failing(World::new().issuer(issuer.clone()), shop.clone());
    assert!(problems_of(&failing_again, &everything())
        .iter()
        .all(|p| p.confirming.is_none()));
    // Issued moments ago while the host still served the old one: awaiting the host.
    let mut just_issued = CertificateView::of(&shop);
    just_issued.ready = Some(cond(
        "Ready",
        "True",
        "Ready",
        "Certificate is up to date and has not expired",
        Some(now - Duration::seconds(10)),
    ));
    let served_old = || {
        let mut f = finding(
            Rule::ProbeWrongCertificate,
            "Certificate",
            "shop-tls",
            "https://shop.example.com serves an older certificate",
        );
        f.since = Some(now - Duration::hours(2));
        f
    };
    let w = World::new()
        .issuer(issuer.clone())
        .certificate(just_issued)
        .ingress(shop.clone());
    let findings = std::sync::Arc::new(vec![served_old()]);
    let p = &cluster_problems(&w.facts, &w.data, &findings, now)[0];
    assert_eq!(
        p.confirming.as_deref(),
        Some("the certificate is issued; waiting to see the host serve it")
    );
    // Long after: what the host serves is what clients get — broken.
    let mut long_ago = CertificateView::of(&shop);
    long_ago.ready = Some(cond(
        "Ready",
        "True",
        "Ready",
        "Certificate is up to date and has not expired",
        Some(now - Duration::minutes(10)),
    ));
    let w = World::new()
        .issuer(issuer)
        .certificate(long_ago)
        .ingress(shop);
    let p = &cluster_problems(&w.facts, &w.data, &findings, now)[0];
    assert_eq!(p.confirming, None);
    assert_eq!(p.urgency.severity, Severity::Critical);
}

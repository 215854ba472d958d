//! Findings grouped into problems: one root cause with its symptoms, merged across the
//! chains it breaks, and built only from what the caller sees.

use chrono::Duration;

use super::*;
use crate::model::certificate::CertificateView;
use crate::model::ingress::IngressView;
use crate::model::read::Visibility;
use crate::model::rules::fixtures::{attempt, cluster_issuer, World};
use crate::model::scope::{Grant, Scope};

const NOT_FOUND: &str =
    "Waiting for HTTP-01 challenge propagation: wrong status code '404', expected '200'";

/// `ing` with its certificate issuing and one pending challenge failing with a 404.
fn failing(w: World, ing: IngressView) -> World {
    let cert = CertificateView::of(&ing)
        .issuing()
        .not_ready("DoesNotExist", Duration::minutes(30));
    let attempt = attempt(
        &cert,
        "pending",
        None,
        Some(("pending", NOT_FOUND, Duration::minutes(20))),
    );
    w.attempt(attempt).certificate(cert).ingress(ing)
}

fn problems_of(w: &World, scope: &Scope) -> Vec<Problem> {
    let findings = w.findings();
    let visible = Visibility::of(scope, &w.facts.name).expect("the cluster is visible");
    let mine: Vec<&Finding> = findings.iter().filter(|f| visible.finding(f)).collect();
    cluster_problems(&w.facts, &w.data, &mine)
}

fn everything() -> Scope {
    Scope::everything()
}

fn tenant(namespaces: &[&str]) -> Scope {
    Scope::from_grants(vec![Grant {
        clusters: vec!["*".into()],
        namespaces: namespaces.iter().map(|n| n.to_string()).collect(),
    }])
}

#[test]
fn a_missing_fix_and_everything_it_breaks_are_one_problem_naming_both_hosts() {
    let shop = IngressView::test("shop")
        .in_ns("acme")
        .with_issuer("letsencrypt-prod")
        .tls("shop.example.com");
    // A second host on the same certificate.
    let mut shop = shop;
    let mut tls = shop.tls.to_vec();
    tls[0].hosts = std::sync::Arc::from(["shop.example.com".into(), "www.shop.example.com".into()]);
    shop.tls = tls.into();
    let w = failing(World::new(), shop);
    let findings = w.findings();
    assert!(findings.len() >= 3, "several symptoms: {findings:#?}");
    let problems = problems_of(&w, &everything());
    assert_eq!(problems.len(), 1, "{problems:#?}");
    let p = &problems[0];
    assert_eq!(p.cause, "ingress.edit-in-place-missing");
    assert_eq!(
        p.hosts.to_vec(),
        vec![
            Text::from("shop.example.com"),
            Text::from("www.shop.example.com")
        ]
    );
    assert_eq!(&*p.objects[0].kind, "Ingress");
    assert_eq!(&*p.objects[0].name, "shop");
    assert!(p
        .symptoms
        .iter()
        .any(|f| f.rule == "acme.challenge-failing"));
    assert_eq!(
        p.symptoms.len() + 1,
        findings.len(),
        "every finding is in it once"
    );
    assert_eq!(p.urgency.severity, Severity::Critical);
    assert_eq!(p.action.label, "Apply the fix");
    assert_eq!(p.action.href.as_deref(), Some("/ingresses/zrh/acme/shop"));
    assert!(p
        .diagnosis
        .starts_with("Let's Encrypt cannot reach the HTTP-01 challenge"));
    assert_eq!(p.namespaces.to_vec(), vec![Text::from("acme")]);
}

/// Two tenants' Ingresses behind one ClusterIssuer that is not ready.
fn issuer_down() -> World {
    let mut w = World::new().issuer(cluster_issuer(
        "letsencrypt-prod",
        crate::model::issuer::LE_PRODUCTION,
        false,
    ));
    // Distinct names: the fixtures derive uids from names.
    for (ns, name, host) in [
        ("acme", "shop", "shop.acme.example"),
        ("globex", "site", "www.globex.example"),
    ] {
        let ing = IngressView::test(name)
            .in_ns(ns)
            .with_issuer("letsencrypt-prod")
            .edit_in_place("true")
            .tls(host);
        let cert = CertificateView::of(&ing).not_ready("Pending", Duration::hours(2));
        w = w.certificate(cert).ingress(ing);
    }
    w
}

#[test]
fn an_issuer_behind_many_ingresses_is_one_problem_with_its_blast_radius() {
    let w = issuer_down();
    let problems = problems_of(&w, &everything());
    let p = problems
        .iter()
        .find(|p| p.cause == "issuer.not-ready")
        .unwrap_or_else(|| panic!("{problems:#?}"));
    assert_eq!(
        p.namespaces.to_vec(),
        vec![Text::from("acme"), Text::from("globex")]
    );
    assert_eq!(p.hosts.len(), 2);
    assert_eq!(&*p.objects[0].kind, "ClusterIssuer");
    assert_eq!(p.objects.len(), 3, "the issuer and both Ingresses");
    assert!(
        problems.iter().all(|q| q.cause == "issuer.not-ready"),
        "the Certificates that are not ready are its symptoms: {problems:#?}"
    );
}

#[test]
fn a_tenant_gets_problems_from_what_they_see_only() {
    let w = issuer_down();
    let problems = problems_of(&w, &tenant(&["acme"]));
    assert!(!problems.is_empty());
    for p in &problems {
        assert_ne!(
            p.cause, "issuer.not-ready",
            "the ClusterIssuer's finding is not theirs"
        );
        assert_eq!(p.namespaces.to_vec(), vec![Text::from("acme")]);
        assert!(p.hosts.iter().all(|h| h.contains("acme")), "{:?}", p.hosts);
        assert!(p.objects.iter().all(|o| &*o.namespace == "acme"));
        let text = serde_json::to_string(p).unwrap();
        assert!(!text.contains("globex"), "{text}");
    }
}

#[test]
fn a_chain_without_a_cause_is_rooted_at_its_deepest_symptom() {
    let ing = IngressView::test("api")
        .in_ns("acme")
        .with_issuer("letsencrypt-prod")
        .edit_in_place("true")
        .tls("api.example.com");
    let cert = CertificateView::of(&ing)
        .issuing()
        .not_ready("DoesNotExist", Duration::hours(2));
    let attempt = attempt(
        &cert,
        "pending",
        None,
        Some((
            "pending",
            "dial tcp: lookup api.example.com: no such host",
            Duration::hours(1),
        )),
    );
    // Solved in place, as the annotation asks: nothing is misconfigured.
    let attempt = (
        attempt.0,
        attempt.1,
        attempt.2.map(|c| crate::model::certificate::ChallengeView {
            in_place_ingress: Some("api".into()),
            ..c
        }),
    );
    let w = World::new().attempt(attempt).certificate(cert).ingress(ing);
    let problems = problems_of(&w, &everything());
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert_eq!(problems[0].cause, "acme.challenge-failing");
    assert!(problems[0]
        .symptoms
        .iter()
        .any(|f| f.rule == "cert.not-ready"));
}

#[test]
fn hosts_match_exactly_or_as_a_parent_domain() {
    let w = issuer_down();
    let p = &problems_of(&w, &everything())[0];
    assert!(p.has_host("shop.acme.example"));
    assert!(p.has_host("ACME.example."));
    assert!(!p.has_host("hop.acme.example"));
    assert!(!p.has_host("example.org"));
}

#[test]
fn problems_are_most_urgent_first_and_ids_are_stable() {
    let shop = IngressView::test("shop")
        .in_ns("acme")
        .with_issuer("letsencrypt-prod")
        .tls("shop.example.com");
    let quiet = IngressView::test("blog")
        .in_ns("acme")
        .with_issuer("letsencrypt-staging")
        .edit_in_place("true")
        .tls("blog.example.com");
    let w = failing(World::new(), shop)
        .certificate(CertificateView::of(&quiet))
        .ingress(quiet);
    let a = problems_of(&w, &everything());
    let b = problems_of(&w, &everything());
    assert!(a.len() >= 2, "{a:#?}");
    assert_eq!(a[0].urgency.severity, Severity::Critical);
    assert!(a
        .windows(2)
        .all(|p| p[0].urgency.severity <= p[1].urgency.severity));
    let ids = |ps: &[Problem]| ps.iter().map(|p| p.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&a), ids(&b));
}

#[test]
fn a_missing_issuer_named_by_many_ingresses_is_one_problem() {
    let mut w = World::new();
    for (ns, name, host) in [
        ("acme", "shop", "shop.acme.example"),
        ("globex", "site", "www.globex.example"),
        ("initech", "portal", "portal.initech.example"),
    ] {
        w = w.ingress(
            IngressView::test(name)
                .in_ns(ns)
                .with_issuer("letsencrypt-gone")
                .tls(host),
        );
    }
    let problems = problems_of(&w, &everything());
    let missing: Vec<&Problem> = problems
        .iter()
        .filter(|p| p.cause == "issuer.missing")
        .collect();
    assert_eq!(missing.len(), 1, "{problems:#?}");
    let p = missing[0];
    assert_eq!(p.hosts.len(), 3);
    assert_eq!(p.namespaces.len(), 3);
    assert_eq!(
        p.symptoms
            .iter()
            .filter(|f| f.rule == "issuer.missing")
            .count(),
        2,
        "the other Ingresses' reports of it"
    );
    // A tenant sees the one of their namespace only.
    let theirs = problems_of(&w, &tenant(&["acme"]));
    assert_eq!(theirs.len(), 1);
    assert_eq!(
        theirs[0].hosts.to_vec(),
        vec![Text::from("shop.acme.example")]
    );
}

#[test]
fn the_fleets_budget_findings_join_the_problem_of_their_certificate() {
    // A Certificate failing to issue, with nothing in its chain that says why.
    let ing = IngressView::test("promo")
        .in_ns("globex")
        .with_issuer("letsencrypt-prod")
        .edit_in_place("true")
        .tls("promo.example.com");
    let cert = CertificateView::of(&ing).failing(2, Duration::minutes(30));
    let w = World::new().certificate(cert).ingress(ing);
    let problems = problems_of(&w, &everything());
    assert_eq!(problems.len(), 1, "{problems:#?}");
    let budget = |severity: Severity, name: &str| Finding {
        rule: "acme.rate-limit-budget",
        severity,
        cluster: "zrh".into(),
        namespace: "globex".into(),
        kind: "Certificate".into(),
        name: name.into(),
        title: "5/5 certificates for the exact set used".into(),
        message: "m".into(),
        remediation: "r".into(),
        since: None,
    };
    // Reached: the CA refuses, so that is the root; the failing issuance its symptom.
    let joined = join_fleet(&problems, &[budget(Severity::Critical, "promo-tls")]);
    assert_eq!(joined.len(), 1);
    assert_eq!(joined[0].cause, "acme.rate-limit-budget");
    assert!(joined[0]
        .symptoms
        .iter()
        .any(|f| f.rule == "cert.issuance-failing"));
    // Near: a symptom of the problem, not its root; about nothing here: its own problem.
    let joined = join_fleet(
        &problems,
        &[
            budget(Severity::Warning, "promo-tls"),
            budget(Severity::Warning, "elsewhere-tls"),
        ],
    );
    assert_eq!(joined.len(), 2);
    assert_eq!(joined[0].cause, "cert.issuance-failing");
    assert!(joined[0]
        .symptoms
        .iter()
        .any(|f| f.rule == "acme.rate-limit-budget"));
    assert_eq!(&*joined[1].root.name, "elsewhere-tls");
    // The cache's problem itself is untouched.
    assert_eq!(problems[0].cause, "cert.issuance-failing");
}

/// A finding of `rule` about `kind`/`name` in namespace `acme` (cluster-wide when `kind` is
/// `Cluster`), titled `title`.
fn finding(rule: &'static str, kind: &str, name: &str, title: &str) -> Finding {
    Finding {
        rule,
        severity: Severity::Critical,
        cluster: "zrh".into(),
        namespace: if kind == "Cluster" { "" } else { "acme" }.into(),
        kind: kind.into(),
        name: name.into(),
        title: title.into(),
        message: format!("{title}.").into(),
        remediation: "r".into(),
        since: None,
    }
}

#[test]
fn the_load_balancers_failures_are_one_problem_or_the_clusters_own() {
    let a = IngressView::test("a").in_ns("acme").tls("a.example.com");
    let b = IngressView::test("b").in_ns("acme").tls("b.example.com");
    let w = World::new().ingress(a).ingress(b);
    let v6 = |name: &str| {
        finding(
            "probe.unreachable",
            "Ingress",
            name,
            "IPv6 clients get no answer from x while the other family works",
        )
    };
    let proxy = |name: &str| {
        finding(
            "probe.proxy-protocol",
            "Ingress",
            name,
            "x answers only clients that send a PROXY protocol header",
        )
    };
    let alone = [v6("a"), v6("b"), proxy("a"), proxy("b")];
    let refs: Vec<&Finding> = alone.iter().collect();
    let problems = cluster_problems(&w.facts, &w.data, &refs);
    // One problem per rule (and family), each naming both Ingresses.
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(
        problems.iter().all(|p| p.objects.len() == 2),
        "{problems:#?}"
    );
    // The cluster's PROXY protocol on an IPv4-only load balancer explains them all.
    let cluster = finding(
        "cluster.ipv6-proxy-protocol",
        "Cluster",
        "zrh",
        "PROXY protocol on an IPv4-only cluster",
    );
    let with: Vec<&Finding> = std::iter::once(&cluster).chain(alone.iter()).collect();
    let problems = cluster_problems(&w.facts, &w.data, &with);
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert_eq!(problems[0].cause, "cluster.ipv6-proxy-protocol");
    assert_eq!(problems[0].symptoms.len(), 4);
    assert!(
        problems[0]
            .diagnosis
            .contains("(observed: IPv6 clients get no answer"),
        "{}",
        problems[0].diagnosis
    );
}

#[test]
fn what_the_probe_saw_backs_only_a_root_that_explains_it() {
    let shop = IngressView::test("shop")
        .in_ns("acme")
        .with_issuer("letsencrypt-prod")
        .tls("shop.example.com");
    let w = failing(World::new(), shop);
    let mut findings = w.findings();
    // A redirect on the challenge path backs the missing fix ...
    findings.push(finding(
        "probe.acme-path-redirected",
        "Ingress",
        "shop",
        "http://shop.example.com/.well-known/acme-challenge/ is redirected to HTTPS",
    ));
    let refs: Vec<&Finding> = findings.iter().collect();
    let problems = cluster_problems(&w.facts, &w.data, &refs);
    let p = problems
        .iter()
        .find(|p| p.cause == "ingress.edit-in-place-missing")
        .expect("the missing fix");
    assert!(
        p.diagnosis.contains("(observed: http://shop.example.com"),
        "{}",
        p.diagnosis
    );
    assert!(
        p.evidence.contains("Observed by the probe"),
        "{}",
        p.evidence
    );
    // ... an expired served copy does not.
    let mut findings = w.findings();
    findings.push(finding(
        "probe.expired",
        "Certificate",
        "shop-tls",
        "https://shop.example.com serves an expired certificate",
    ));
    let refs: Vec<&Finding> = findings.iter().collect();
    let problems = cluster_problems(&w.facts, &w.data, &refs);
    let p = problems
        .iter()
        .find(|p| p.cause == "ingress.edit-in-place-missing")
        .expect("the missing fix");
    assert!(!p.diagnosis.contains("observed"), "{}", p.diagnosis);
}

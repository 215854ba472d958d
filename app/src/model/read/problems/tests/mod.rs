//! Findings grouped into problems: one root cause with its symptoms, merged across the
//! chains it breaks, and built only from what the caller sees.

use crate::model::Rule;
use chrono::Duration;

use super::*;
use crate::model::certificate::CertificateView;
use crate::model::ingress::IngressView;
use crate::model::read::Visibility;
use crate::model::rules::fixtures::{attempt, cluster_issuer, World};
use crate::model::scope::{Access, Grant, Role};
use crate::model::View;

mod policies;

const NOT_FOUND: &str =
    "Waiting for HTTP-01 challenge propagation: wrong status code '404', expected '200'";

/// `ing` with its certificate issuing and one pending challenge failing with a 404.
pub(super) fn failing(w: World, ing: IngressView) -> World {
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

/// The problems of `w` as `view` sees them: judged once over the whole cluster, then told
/// through the view, as the server does.
pub(super) fn problems_of(w: &World, view: &View) -> Vec<Problem> {
    let findings = std::sync::Arc::new(w.findings());
    let visible = Visibility::of(view, &w.facts.name).expect("the cluster is visible");
    let mut seen: Vec<Problem> = checked(w, &findings)
        .iter()
        .filter_map(|p| p.seen_by(&visible))
        .collect();
    sort(&mut seen);
    seen
}

/// The problems of `w` built from `findings` (its own, with what a test adds), at the
/// fixtures' now.
pub(super) fn problems_from(w: &World, findings: &[Finding]) -> Vec<Problem> {
    checked(w, &std::sync::Arc::new(findings.to_vec()))
}

/// The problems, and for every test the check that making only the chains of namespaces
/// with findings gives the same as making every chain of the cluster.
fn checked(w: &World, findings: &std::sync::Arc<Vec<Finding>>) -> Vec<Problem> {
    let now = crate::model::rules::fixtures::now();
    let problems = cluster_problems(&w.facts, &w.data, findings, now);
    let every_chain = super::problems(&w.facts, &w.data, findings, now, super::Chains::All);
    assert_eq!(
        problems, every_chain,
        "the chains with findings make other problems than every chain"
    );
    problems
}

pub(super) fn everything() -> View {
    View::whole_fleet(["zrh"])
}

pub(super) fn tenant(namespaces: &[&str]) -> View {
    let grant = Grant {
        clusters: vec!["*".into()],
        namespaces: namespaces.iter().map(|n| n.to_string()).collect(),
    };
    View::new(&Access::new(vec![(Role::Viewer, grant)]), ["zrh"])
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
    assert_eq!(p.cause, Rule::IngressEditInPlaceMissing);
    assert_eq!(
        p.hosts.to_vec(),
        vec![
            Text::from("shop.example.com"),
            Text::from("www.shop.example.com")
        ]
    );
    assert_eq!(p.objects[0].kind.name(), "Ingress");
    assert_eq!(&*p.objects[0].name, "shop");
    assert!(p
        .symptoms
        .iter()
        .any(|f| f.rule == Rule::AcmeChallengeFailing));
    assert_eq!(
        p.symptoms.len() + 1,
        findings.len(),
        "every finding is in it once"
    );
    // Renewal fails while the certificate still has 70 days: clients fail then, a warning.
    assert_eq!(p.urgency.severity, Severity::Warning);
    assert_eq!(p.urgency.clients_fail_at, p.urgency.expires);
    assert!(p.urgency.clients_fail_at.is_some());
    assert_eq!(p.urgency.clients_failing_since, None);
    assert_eq!(p.action.label, "Add edit-in-place");
    assert_eq!(p.action.href.as_deref(), Some("/ingresses/zrh/acme/shop"));
    assert!(p
        .diagnosis
        .starts_with("Let's Encrypt cannot reach the HTTP-01 challenge"));
    assert_eq!(p.namespaces.to_vec(), vec![Text::from("acme")]);
}

/// Two tenants' Ingresses behind one ClusterIssuer that is not ready.
pub(super) fn issuer_down() -> World {
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
        .find(|p| p.cause == Rule::IssuerNotReady)
        .unwrap_or_else(|| panic!("{problems:#?}"));
    assert_eq!(
        p.namespaces.to_vec(),
        vec![Text::from("acme"), Text::from("globex")]
    );
    assert_eq!(p.hosts.len(), 2);
    assert_eq!(p.objects[0].kind.name(), "ClusterIssuer");
    assert_eq!(p.objects.len(), 3, "the issuer and both Ingresses");
    assert!(
        problems.iter().all(|q| q.cause == Rule::IssuerNotReady),
        "the Certificates that are not ready are its symptoms: {problems:#?}"
    );
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
            gateway_parents: None,
            ..c
        }),
    );
    let w = World::new().attempt(attempt).certificate(cert).ingress(ing);
    let problems = problems_of(&w, &everything());
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert_eq!(problems[0].cause, Rule::AcmeChallengeFailing);
    assert!(problems[0]
        .symptoms
        .iter()
        .any(|f| f.rule == Rule::CertNotReady));
    // A Challenge has no page: the button opens the chain's Ingress, and says so.
    assert_eq!(problems[0].root.kind, crate::model::Kind::Challenge);
    let action = &problems[0].action;
    assert_eq!(
        (action.label.as_str(), action.href.as_deref()),
        ("Open Ingress api", Some("/ingresses/zrh/acme/api"))
    );
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
    assert_eq!(a[0].cause, Rule::IngressEditInPlaceMissing);
    assert_eq!(a[0].urgency.severity, Severity::Warning);
    assert!(a
        .windows(2)
        .all(|p| p[0].urgency.severity <= p[1].urgency.severity));
    let ids = |ps: &[Problem]| ps.iter().map(|p| p.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&a), ids(&b));
}

/// Two problems as urgent as each other: the one with the larger blast radius first.
#[test]
fn a_tie_breaks_by_blast_radius() {
    let shop = IngressView::test("shop")
        .in_ns("acme")
        .with_issuer("letsencrypt-prod")
        .tls("shop.example.com");
    let w = failing(World::new(), shop);
    let one = problems_of(&w, &everything()).remove(0);
    let mut wide = one.clone();
    wide.id = "zz-later-by-id".into();
    wide.hosts = std::sync::Arc::from(vec![Text::from("a.example"), Text::from("b.example")]);
    let mut list = vec![one.clone(), wide];
    sort(&mut list);
    assert_eq!(list[0].hosts.len(), 2, "{list:#?}");
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
        .filter(|p| p.cause == Rule::IssuerMissing)
        .collect();
    assert_eq!(missing.len(), 1, "{problems:#?}");
    let p = missing[0];
    assert_eq!(p.hosts.len(), 3);
    assert_eq!(p.namespaces.len(), 3);
    assert_eq!(
        p.symptoms
            .iter()
            .filter(|f| f.rule == Rule::IssuerMissing)
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
        rule: Rule::AcmeRateLimitBudget,
        severity,
        cluster: "zrh".into(),
        namespace: "globex".into(),
        kind: crate::model::Kind::Certificate.into(),
        name: name.into(),
        title: "5/5 certificates for the exact set used".into(),
        message: "m".into(),
        remediation: "r".into(),
        since: None,
        commands: None,
        host: None,
    };
    // Reached: the CA refuses, so that is the root; the failing issuance its symptom.
    let joined = join_fleet(
        &problems,
        &[budget(Severity::Critical, "promo-tls")],
        crate::model::rules::fixtures::now(),
    );
    assert_eq!(joined.len(), 1);
    assert_eq!(joined[0].cause, Rule::AcmeRateLimitBudget);
    // Each chain is judged again with it: what a reader told only their chains reads is
    // what the whole problem reads.
    let chains = Urgency::worst(joined[0].affected.iter().map(|a| &a.urgency)).unwrap();
    assert_eq!(joined[0].urgency, chains, "{:#?}", joined[0]);
    assert!(joined[0]
        .symptoms
        .iter()
        .any(|f| f.rule == Rule::CertIssuanceFailing));
    // Near: a symptom of the problem, not its root; about nothing here: its own problem.
    let joined = join_fleet(
        &problems,
        &[
            budget(Severity::Warning, "promo-tls"),
            budget(Severity::Warning, "elsewhere-tls"),
        ],
        crate::model::rules::fixtures::now(),
    );
    assert_eq!(joined.len(), 2);
    assert_eq!(joined[0].cause, Rule::CertIssuanceFailing);
    assert!(joined[0]
        .symptoms
        .iter()
        .any(|f| f.rule == Rule::AcmeRateLimitBudget));
    assert_eq!(&*joined[1].root.name, "elsewhere-tls");
    // The cache's problem itself is untouched.
    assert_eq!(problems[0].cause, Rule::CertIssuanceFailing);
}

/// A finding of `rule` about `kind`/`name` in namespace `acme` (cluster-wide when `kind` is
/// `Cluster`), titled `title`.
pub(super) fn finding(rule: Rule, kind: &str, name: &str, title: &str) -> Finding {
    Finding {
        rule,
        severity: Severity::Critical,
        cluster: "zrh".into(),
        namespace: if kind == "Cluster" { "" } else { "acme" }.into(),
        kind: crate::model::Kind::from_name(kind)
            .map_or(crate::model::Subject::Cluster, Into::into),
        name: name.into(),
        title: title.into(),
        message: format!("{title}.").into(),
        remediation: "r".into(),
        since: None,
        commands: None,
        host: None,
    }
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
        Rule::ProbeAcmePathRedirected,
        "Ingress",
        "shop",
        "http://shop.example.com/.well-known/acme-challenge/ is redirected to HTTPS",
    ));
    let problems = problems_from(&w, &findings);
    let p = problems
        .iter()
        .find(|p| p.cause == Rule::IngressEditInPlaceMissing)
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
        Rule::ProbeExpired,
        "Certificate",
        "shop-tls",
        "https://shop.example.com serves an expired certificate",
    ));
    let problems = problems_from(&w, &findings);
    let p = problems
        .iter()
        .find(|p| p.cause == Rule::IngressEditInPlaceMissing)
        .expect("the missing fix");
    assert!(!p.diagnosis.contains("observed"), "{}", p.diagnosis);
}

#[test]
fn a_host_whose_clients_fail_now_ranks_above_one_that_fails_in_four_days() {
    let shop = IngressView::test("shop")
        .in_ns("acme")
        .with_issuer("letsencrypt-prod")
        .tls("shop.example.com");
    let wiki = IngressView::test("wiki")
        .in_ns("acme")
        .with_issuer("letsencrypt-prod")
        .edit_in_place("true")
        .tls("wiki.example.com");
    // shop was never issued and its challenge fails: its clients get no certificate now.
    let w = failing(World::new(), shop);
    let mut w = w;
    for c in w.data.certificates.values_mut() {
        std::sync::Arc::make_mut(c).not_after = None;
    }
    // wiki's renewal fails with four days left.
    let expiring = CertificateView::of(&wiki)
        .expiring(Duration::days(4), Duration::days(26))
        .failing(3, Duration::hours(1));
    let w = w.certificate(expiring).ingress(wiki);
    let mut problems = problems_of(&w, &everything());
    sort(&mut problems);
    let hosts: Vec<&str> = problems.iter().map(|p| &*p.hosts[0]).collect();
    assert_eq!(
        hosts,
        ["shop.example.com", "wiki.example.com"],
        "{problems:#?}"
    );
    let (now, later) = (&problems[0].urgency, &problems[1].urgency);
    assert_eq!(now.severity, Severity::Critical);
    assert!(now.clients_failing_since.is_some());
    assert_eq!(later.severity, Severity::Critical);
    assert_eq!(later.clients_failing_since, None);
    assert_eq!(
        later.clients_fail_at,
        Some(crate::model::rules::fixtures::now() + Duration::days(4))
    );
}

#[test]
fn every_ingress_asking_for_a_certificate_without_cert_manager_folds_under_that_cause() {
    use crate::model::cluster::KindState;
    use crate::model::kind::Kind;
    let mut w = World::new().kind_state(Kind::Certificate, KindState::NotInstalled);
    for (name, host) in [
        ("jupyter", "jupyter.lab.example"),
        ("wiki", "wiki.lab.example"),
    ] {
        w = w.ingress(
            IngressView::test(name)
                .in_ns("acme")
                .with_issuer("letsencrypt-prod")
                .tls(host),
        );
    }
    let mut findings = w.findings();
    // What clients get there: the controller's fallback certificate.
    findings.push(finding(
        Rule::ProbeNameMismatch,
        "Ingress",
        "jupyter",
        "https://jupyter.lab.example serves a certificate that does not name it",
    ));
    let problems = problems_from(&w, &findings);
    assert_eq!(problems.len(), 1, "{problems:#?}");
    let p = &problems[0];
    assert_eq!(p.cause, Rule::ClusterCertManagerMissing);
    assert_eq!(p.hosts.len(), 2);
    assert!(p.symptoms.iter().any(|f| f.rule == Rule::ProbeNameMismatch));
    // Its clients get no certificate now: harm, however mild the rule's own severity.
    assert_eq!(p.urgency.severity, Severity::Critical);
    assert!(p.urgency.clients_failing_since.is_some());
    // The button names the page it opens: the Ingress whose page explains it.
    assert_eq!(p.action.label, format!("Open Ingress {}", p.root.name));
    assert_eq!(
        p.action.href.as_deref(),
        Some(&*format!(
            "/ingresses/{}/{}/{}",
            p.root.cluster, p.root.namespace, p.root.name
        ))
    );
}

mod confirming;
mod network;
mod readers;
mod refs;
mod served;

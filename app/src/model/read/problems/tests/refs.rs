//! A problem holds its findings by reference into the cluster's list of findings.

use super::*;

#[test]
fn a_problem_holds_its_findings_in_the_clusters_list_and_reads_as_them() {
    let w = issuer_down();
    let findings = std::sync::Arc::new(w.findings());
    let problems = cluster_problems(
        &w.facts,
        &w.data,
        &findings,
        crate::model::rules::fixtures::now(),
    );
    let p = problems
        .iter()
        .find(|p| !p.symptoms.is_empty())
        .expect("a problem with symptoms");
    for f in std::iter::once(&p.root).chain(p.symptoms.iter()) {
        assert!(
            findings.iter().any(|g| std::ptr::eq(g, &**f)),
            "{} is the list's own finding, not a copy",
            f.title
        );
    }
    // The pages and the API read it as the finding itself.
    let json = serde_json::to_value(p).unwrap();
    assert_eq!(json["root"], serde_json::to_value(&*p.root).unwrap());
    assert_eq!(
        json["symptoms"][0],
        serde_json::to_value(&*p.symptoms[0]).unwrap()
    );
}

#[test]
#[should_panic(expected = "must come from the list")]
fn a_finding_from_elsewhere_cannot_be_held_by_reference() {
    let findings = std::sync::Arc::new(issuer_down().findings());
    let copy = findings[0].clone();
    FindingRef::of(&findings, &copy);
}

/// A refusal of the CA is waited out: its advice is told as advice, never as a button.
#[test]
fn waiting_is_advice_not_an_action() {
    use super::{finding, problems_from};
    use crate::model::rules::fixtures::World;
    use crate::model::Rule;
    let w = World::new();
    let refused = finding(
        Rule::AcmeRateLimited,
        "Certificate",
        "promo-tls",
        "Let's Encrypt rate limit hit for Certificate promo-tls",
    );
    let problems = problems_from(&w, &[refused]);
    assert!(problems[0].action.wait, "{:?}", problems[0].action);
    let fix = finding(
        Rule::IngressEditInPlaceMissing,
        "Ingress",
        "shop",
        "Ingress shop lacks the edit-in-place annotation",
    );
    assert!(!problems_from(&w, &[fix])[0].action.wait);
}

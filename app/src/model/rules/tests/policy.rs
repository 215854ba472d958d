//! The `policy.*` rules, positive and negative: a policy that sets edit-in-place, judged by
//! the Ingresses it leaves without it.

use serde_json::json;

use super::*;

const MANAGER: &str = "managed-resource:edit-in-place";

/// The seed's policy: every Ingress of every namespace (`selector` narrows it), the
/// annotation in its template.
fn spec(selector: Option<serde_json::Value>) -> serde_json::Value {
    let mut resource =
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "namespace": ""});
    if let Some(s) = selector {
        resource["labelSelector"] = s;
    }
    json!({
        "serviceAccountRef": {"name": "edit-in-place"},
        "context": [{"name": "ingresses", "resource": resource}],
        "template": "[{metadata: {annotations: {'acme.cert-manager.io/http01-edit-in-place': 'true'}}} for i in []]",
    })
}

fn asking(name: &str) -> IngressView {
    IngressView::test(name)
        .in_ns("shop")
        .with_issuer("letsencrypt-prod")
        .tls(&format!("{name}.example.com"))
}

fn with(world: World, ingresses: Vec<IngressView>) -> World {
    ingresses.into_iter().fold(world, |w, i| {
        w.certificate(CertificateView::of(&i)).ingress(i)
    })
}

#[test]
fn a_failing_policy_is_one_finding_on_the_policy_for_every_ingress_it_leaves() {
    let w = with(
        World::new()
            .policy(spec(None), "TemplateError")
            .event("ManagedResource", "platform", "edit-in-place", "TemplateError", "Reconcile error: TemplateError: failed to render template: RUNTIME ERROR: field does not exist: ingress"),
        vec![asking("a"), asking("b"), asking("c").edit_in_place_by("true", MANAGER)],
    );
    assert_eq!(
        w.fired(Rule::PolicyNotReady),
        one("critical", "ManagedResource", "edit-in-place"),
        "one finding, on the policy"
    );
    let f = w
        .findings()
        .into_iter()
        .find(|f| f.rule == Rule::PolicyNotReady)
        .unwrap();
    assert!(
        f.message.contains("2 Ingresses it covers lack"),
        "{}",
        f.message
    );
    assert!(
        f.message.contains("shop/a, shop/b") && !f.message.contains("shop/c"),
        "{}",
        f.message
    );
    assert!(
        f.message.contains("field does not exist: ingress"),
        "the event quoted: {}",
        f.message
    );
    assert!(
        f.remediation.contains("Fix the template") && f.remediation.contains("stop-gap"),
        "{}",
        f.remediation
    );
    // Each Ingress's own finding names the policy and calls a patch a stop-gap.
    let a = w
        .findings()
        .into_iter()
        .find(|f| f.rule == Rule::IngressEditInPlaceMissing && &*f.name == "a")
        .unwrap();
    assert!(a.message.contains("Espejote ManagedResource platform/edit-in-place is meant to set it here and is TemplateError"), "{}", a.message);
    assert!(
        a.remediation
            .starts_with("Repair the Espejote ManagedResource platform/edit-in-place"),
        "{}",
        a.remediation
    );
}

#[test]
fn a_ready_policy_or_one_that_covers_nothing_lacking_is_no_problem() {
    let ready = with(
        World::new().policy(spec(None), "Ready"),
        vec![asking("a").edit_in_place_by("true", MANAGER)],
    );
    for rule in [
        Rule::PolicyNotReady,
        Rule::PolicyMissingCoverage,
        Rule::PolicyConflictsWithFix,
    ] {
        assert!(ready.fired(rule).is_empty(), "{rule:?}");
    }
    // Failing, but nothing it covers needs it now: a warning, not critical.
    let idle = World::new().policy(spec(None), "ApplyError");
    assert_eq!(
        idle.fired(Rule::PolicyNotReady),
        one("warning", "ManagedResource", "edit-in-place")
    );
    // A policy whose template never names the annotation is not judged.
    let other = with(
        World::new().policy(json!({"context": [{"name": "i", "resource": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "namespace": ""}}], "template": "[]"}), "TemplateError"),
        vec![asking("a")],
    );
    assert!(other.fired(Rule::PolicyNotReady).is_empty());
    let a = other
        .findings()
        .into_iter()
        .find(|f| f.rule == Rule::IngressEditInPlaceMissing)
        .unwrap();
    assert!(!a.message.contains("ManagedResource"), "{}", a.message);
}

#[test]
fn a_selector_that_misses_new_ingresses_is_missing_coverage() {
    let w = with(
        World::new().policy(
            spec(Some(json!({"matchLabels": {"tls": "letsencrypt"}}))),
            "Ready",
        ),
        vec![
            asking("old")
                .label("tls", "letsencrypt")
                .edit_in_place_by("true", MANAGER),
            asking("new"),
        ],
    );
    assert_eq!(
        w.fired(Rule::PolicyMissingCoverage),
        one("critical", "ManagedResource", "edit-in-place")
    );
    let f = w
        .findings()
        .into_iter()
        .find(|f| f.rule == Rule::PolicyMissingCoverage)
        .unwrap();
    assert!(
        f.message
            .contains("label selector (tls=letsencrypt) leaves out new"),
        "{}",
        f.message
    );
    assert!(w.fired(Rule::PolicyNotReady).is_empty());
    // With no Ingress of the namespace set by the policy, an unselected one is not its.
    let alone = with(
        World::new().policy(
            spec(Some(json!({"matchLabels": {"tls": "letsencrypt"}}))),
            "Ready",
        ),
        vec![asking("new")],
    );
    assert!(alone.fired(Rule::PolicyMissingCoverage).is_empty());
    // Nor one asking another issuer, nor the one it set itself when the selector misses it.
    let selector = || spec(Some(json!({"matchLabels": {"tls": "letsencrypt"}})));
    let beside = with(
        World::new().policy(selector(), "Ready"),
        vec![
            asking("old").edit_in_place_by("true", MANAGER),
            asking("new").with_issuer("private-ca"),
        ],
    );
    assert!(beside.fired(Rule::PolicyMissingCoverage).is_empty());
    let two = with(
        World::new().policy(selector(), "Ready"),
        vec![
            asking("old").edit_in_place_by("true", MANAGER),
            asking("older").edit_in_place_by("true", MANAGER),
            asking("new"),
        ],
    );
    let f = two
        .findings()
        .into_iter()
        .find(|f| f.rule == Rule::PolicyMissingCoverage)
        .expect("fired");
    assert!(f.message.contains("leaves out new"), "{}", f.message);
}

#[test]
fn a_policy_holding_another_value_conflicts_with_the_fix() {
    let w = with(
        World::new().policy(spec(None), "Ready"),
        vec![asking("a").edit_in_place_by("false", MANAGER)],
    );
    assert_eq!(
        w.fired(Rule::PolicyConflictsWithFix),
        one("critical", "ManagedResource", "edit-in-place")
    );
    // Someone else's value is the Ingress's own finding, not the policy's.
    let theirs = with(
        World::new().policy(spec(None), "Ready"),
        vec![asking("a").edit_in_place_by("false", "kubectl-edit")],
    );
    assert!(theirs.fired(Rule::PolicyConflictsWithFix).is_empty());
    assert_eq!(
        theirs.fired(Rule::IngressEditInPlaceInvalid),
        one("warning", "Ingress", "a")
    );
}

/// Kyverno's mutate rule that adds the annotation to Ingresses (`targets`: also the
/// existing ones, in the background).
fn cluster_policy(existing: bool) -> serde_json::Value {
    let mut mutate = json!({"patchStrategicMerge": {"metadata": {"annotations": {"+(acme.cert-manager.io/http01-edit-in-place)": "true"}}}});
    if existing {
        mutate["targets"] = json!([{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress"}]);
        mutate["mutateExistingOnPolicyUpdate"] = json!(true);
    }
    json!({"rules": [{"name": "edit-in-place", "match": {"any": [{"resources": {"kinds": ["Ingress"]}}]}, "mutate": mutate}]})
}

fn ready(status: bool) -> serde_json::Value {
    json!({"conditions": [{"type": "Ready", "status": if status { "True" } else { "False" }, "reason": if status { "Succeeded" } else { "Failed" }, "message": if status { "Ready" } else { "Not Ready" }}]})
}

#[test]
fn a_kyverno_policy_not_ready_is_the_root_of_the_ingresses_it_leaves() {
    let w = with(
        World::new().kyverno(Kind::ClusterPolicy, cluster_policy(true), ready(false)),
        vec![asking("a"), asking("b")],
    );
    assert_eq!(
        w.fired(Rule::PolicyNotReady),
        one("critical", "ClusterPolicy", "add-edit-in-place")
    );
    let f = w
        .findings()
        .into_iter()
        .find(|f| f.rule == Rule::PolicyNotReady)
        .unwrap();
    assert!(
        f.title
            .contains("Kyverno ClusterPolicy add-edit-in-place is Not ready: Not Ready"),
        "{}",
        f.title
    );
    assert!(
        f.remediation
            .contains("kubectl get clusterpolicy add-edit-in-place -o yaml"),
        "{}",
        f.remediation
    );
    let a = w
        .findings()
        .into_iter()
        .find(|f| f.rule == Rule::IngressEditInPlaceMissing && &*f.name == "a")
        .unwrap();
    assert!(
        a.message
            .contains("Kyverno ClusterPolicy add-edit-in-place is meant to set it here"),
        "{}",
        a.message
    );
    // A mutate rule that does not name the annotation is not judged.
    let other = with(
        World::new().kyverno(
            Kind::ClusterPolicy,
            json!({"rules": [{"name": "r", "match": {"any": [{"resources": {"kinds": ["Ingress"]}}]}, "mutate": {"patchStrategicMerge": {"metadata": {"labels": {"team": "x"}}}}}]}),
            ready(false),
        ),
        vec![asking("a")],
    );
    assert!(other.fired(Rule::PolicyNotReady).is_empty());
}

#[test]
fn a_ready_kyverno_policy_that_mutates_on_admission_only_misses_older_ingresses() {
    let w = with(
        World::new().kyverno(Kind::ClusterPolicy, cluster_policy(false), ready(true)),
        vec![asking("old")],
    );
    assert_eq!(
        w.fired(Rule::PolicyMissingCoverage),
        one("critical", "ClusterPolicy", "add-edit-in-place")
    );
    let f = w
        .findings()
        .into_iter()
        .find(|f| f.rule == Rule::PolicyMissingCoverage)
        .unwrap();
    assert!(
        f.message.contains("mutates on admission only"),
        "{}",
        f.message
    );
    assert!(
        f.remediation.starts_with("Enable background mutation"),
        "{}",
        f.remediation
    );
    // With background mutation, the wait is the background scan's.
    let background = with(
        World::new().kyverno(Kind::ClusterPolicy, cluster_policy(true), ready(true)),
        vec![asking("old")],
    );
    let f = background
        .findings()
        .into_iter()
        .find(|f| f.rule == Rule::PolicyMissingCoverage)
        .unwrap();
    assert!(f.message.contains("background scan"), "{}", f.message);
    // Covered and set: nothing.
    let fine = with(
        World::new().kyverno(Kind::ClusterPolicy, cluster_policy(true), ready(true)),
        vec![asking("old").edit_in_place_by("true", "kubectl-edit")],
    );
    assert!(fine.fired(Rule::PolicyMissingCoverage).is_empty());
}

#[test]
fn a_mutating_policy_reads_its_readiness_and_whether_it_mutates_existing_ingresses() {
    let spec = |existing: bool| {
        json!({"matchConstraints": {"resourceRules": [{"apiGroups": ["networking.k8s.io"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["ingresses"]}]},
               "evaluation": {"mutateExisting": {"enabled": existing}},
               "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "Object{metadata: Object.metadata{annotations: {'acme.cert-manager.io/http01-edit-in-place': 'true'}}}"}}]})
    };
    let not_ready = with(
        World::new().kyverno(Kind::MutatingPolicy, spec(true), json!({"conditionStatus": {"ready": false, "message": "Policy is not configured in the webhook."}})),
        vec![asking("a")],
    );
    assert_eq!(
        not_ready.fired(Rule::PolicyNotReady),
        one("critical", "MutatingPolicy", "add-edit-in-place")
    );
    let admission = with(
        World::new().kyverno(
            Kind::MutatingPolicy,
            spec(false),
            json!({"conditionStatus": {"ready": true, "message": ""}}),
        ),
        vec![asking("a")],
    );
    let f = admission
        .findings()
        .into_iter()
        .find(|f| f.rule == Rule::PolicyMissingCoverage)
        .unwrap();
    assert!(
        f.message.contains("mutates on admission only"),
        "{}",
        f.message
    );
}

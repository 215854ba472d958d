//! A broken policy is one problem for every Ingress it leaves without edit-in-place, told to
//! a tenant through their own Ingress.

use serde_json::json;

use super::*;

fn broken_policy() -> World {
    let w = World::new()
        .policy(
            json!({
                "serviceAccountRef": {"name": "edit-in-place"},
                "context": [{"name": "ingresses", "resource": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "namespace": ""}}],
                "template": "'acme.cert-manager.io/http01-edit-in-place'",
            }),
            "ServiceAccountError",
        )
        .event("ManagedResource", "platform", "edit-in-place", "ServiceAccountError", "Reconcile error: ServiceAccountError: token request for \"system:serviceaccount:platform:edit-in-place\" failed: serviceaccounts \"edit-in-place\" not found");
    let w = failing(
        w,
        IngressView::test("shop")
            .in_ns("acme")
            .with_issuer("letsencrypt-prod")
            .tls("shop.acme.example"),
    );
    failing(
        w,
        IngressView::test("site")
            .in_ns("globex")
            .with_issuer("letsencrypt-prod")
            .tls("www.globex.example"),
    )
}

#[test]
fn a_broken_policy_is_one_problem_rooted_at_the_policy() {
    let w = broken_policy();
    let problems = problems_of(&w, &everything());
    assert_eq!(problems.len(), 1, "{problems:#?}");
    let p = &problems[0];
    assert_eq!(p.cause, Rule::PolicyNotReady);
    assert_eq!(p.objects[0].kind.name(), "ManagedResource");
    assert_eq!(&*p.objects[0].name, "edit-in-place");
    assert_eq!(p.affected.len(), 2, "both Ingresses: {:#?}", p.affected);
    assert_eq!(p.action.label, "Repair the policy");
    assert_eq!(
        p.action.href.as_deref(),
        Some("/policies/zrh/platform/edit-in-place")
    );
    assert!(
        p.evidence
            .contains("serviceaccounts \"edit-in-place\" not found"),
        "{}",
        p.evidence
    );
    assert!(
        p.symptoms
            .iter()
            .any(|f| f.rule == Rule::IngressEditInPlaceMissing),
        "the Ingresses' own findings are its symptoms"
    );
}

#[test]
fn a_tenant_is_told_through_their_own_ingress() {
    let w = broken_policy();
    let problems = problems_of(&w, &tenant(&["acme"]));
    assert_eq!(problems.len(), 1, "{problems:#?}");
    let p = &problems[0];
    assert_eq!(p.cause, Rule::IngressEditInPlaceMissing);
    assert!(
        p.evidence.contains("Espejote ManagedResource platform/edit-in-place is meant to set it here and is ServiceAccountError"),
        "{}",
        p.evidence
    );
    let text = serde_json::to_string(p).unwrap();
    assert!(!text.contains("globex"), "{text}");
    assert!(
        !text.contains("token request"),
        "the platform's event is not the tenant's: {text}"
    );
}

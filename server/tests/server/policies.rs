//! The policy behind the annotation, through kubesim's Espejote: a ManagedResource that
//! cannot run leaves every new Ingress without edit-in-place — one problem on the board,
//! rooted at the policy, cleared when the policy is repaired (not by patching Ingresses);
//! a tenant sees the policy only through its own Ingresses; a cluster without Espejote
//! shows nothing of it.

use serde_json::{json, Value};

use crate::helpers::*;

/// Adds edit-in-place to every Ingress that asks a ClusterIssuer for a certificate.
const TEMPLATE: &str = r#"
local esp = import 'espejote.libsonnet';
local asks(i) = std.objectHas(std.get(i.metadata, 'annotations', {}), 'cert-manager.io/cluster-issuer');
[
  {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: {
      name: i.metadata.name,
      namespace: i.metadata.namespace,
      annotations: { 'acme.cert-manager.io/http01-edit-in-place': 'true' },
    },
  }
  for i in esp.context().ingresses
  if asks(i)
]
"#;

fn create_in(app: &TestApp, group: &str, plural: &str, ns: Option<&str>, obj: Value) {
    let c = &app.fleet.clusters[0].cluster;
    let rt = c.resolve(group, plural).unwrap();
    c.create(&rt, ns, obj, &kubesim::WriteOpts::system())
        .unwrap();
}

/// Two tenants' Ingresses behind Cilium's HTTPS enforcement, and the platform's policy,
/// whose ServiceAccount does not exist yet.
fn platform_with_a_broken_policy(app: &TestApp) {
    crate::restart::behind_https_enforcement(app);
    for ns in ["platform", "acme-shop", "globex-web"] {
        create_in(
            app,
            "",
            "namespaces",
            None,
            json!({"metadata": {"name": ns}}),
        );
    }
    for (ns, name, host) in [
        ("acme-shop", "shop", "shop.acme.example"),
        ("globex-web", "site", "www.globex.example"),
    ] {
        create_in(
            app,
            "networking.k8s.io",
            "ingresses",
            Some(ns),
            json!({"metadata": {"name": name, "annotations": {"cert-manager.io/cluster-issuer": "letsencrypt-prod"}},
                   "spec": {"ingressClassName": "cilium", "rules": [{"host": host}], "tls": [{"hosts": [host], "secretName": format!("{name}-tls")}]}}),
        );
    }
    create_in(
        app,
        "rbac.authorization.k8s.io",
        "clusterroles",
        None,
        json!({"metadata": {"name": "espejote-edit-in-place"}, "rules": [{"apiGroups": ["networking.k8s.io"], "resources": ["ingresses"], "verbs": ["get", "list", "watch", "patch"]}]}),
    );
    create_in(
        app,
        "rbac.authorization.k8s.io",
        "clusterrolebindings",
        None,
        json!({"metadata": {"name": "espejote-edit-in-place"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "espejote-edit-in-place"},
               "subjects": [{"kind": "ServiceAccount", "name": "edit-in-place", "namespace": "platform"}]}),
    );
    create_in(
        app,
        "espejote.io",
        "managedresources",
        Some("platform"),
        json!({"apiVersion": "espejote.io/v1alpha1", "kind": "ManagedResource",
               "metadata": {"name": "edit-in-place"},
               "spec": {"serviceAccountRef": {"name": "edit-in-place"},
                        "context": [{"name": "ingresses", "resource": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "namespace": ""}}],
                        "triggers": [{"name": "ingress", "watchContextResource": {"name": "ingresses"}}],
                        "template": TEMPLATE}}),
    );
}

fn of_cause<'v>(problems: &'v Value, cause: &str) -> Vec<&'v Value> {
    problems["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["cause"] == cause)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_broken_policy_is_one_problem_and_repairing_it_clears_it() {
    let app = app_with(&["zrh-prod"])
        .with_controllers()
        .with_policies()
        .auth(crate::tenancy::auth("127.0.0.1/32").await)
        .await;
    app.wait_ready().await;
    platform_with_a_broken_policy(&app);
    let support = |path: &str| {
        let path = path.to_string();
        let app = &app;
        async move {
            app.get_as(&path, "sue", "support")
                .await
                .json::<Value>()
                .await
                .unwrap()
        }
    };
    app.eventually("the broken policy is one problem on the board", || async {
        let problems = support("/api/v1/problems?per_page=100").await;
        let policy = of_cause(&problems, "policy.not-ready");
        // The two tenants' Ingresses and `default/web`.
        policy.len() == 1
            && policy[0]["affected"]
                .as_array()
                .is_some_and(|a| a.len() == 3)
            && of_cause(&problems, "ingress.edit-in-place-missing").is_empty()
    })
    .await;
    let problems = support("/api/v1/problems?per_page=100").await;
    let p = of_cause(&problems, "policy.not-ready")[0];
    assert_eq!(p["action"]["label"], "Repair the policy");
    assert_eq!(
        p["action"]["href"],
        "/policies/zrh-prod/platform/edit-in-place"
    );
    assert!(
        p["evidence"]
            .as_str()
            .unwrap()
            .contains("ServiceAccountError"),
        "{p:#}"
    );
    let policies = support("/api/v1/policies").await;
    assert_eq!(policies["total"], 1, "{policies:#}");
    let row = &policies["items"][0];
    assert_eq!(
        (&row["status"], &row["covered"], &row["lacking"]),
        (&json!("ServiceAccountError"), &json!(3), &json!(3))
    );
    let page = app
        .get_as(
            "/policies/zrh-prod/platform/edit-in-place",
            "sue",
            "support",
        )
        .await
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("Create ServiceAccount edit-in-place in namespace platform"),
        "the change to make is on the page"
    );
    assert!(
        page.contains("serviceaccounts \"edit-in-place\" not found"),
        "its event is quoted"
    );

    // The tenant sees the policy through its own Ingress, and nothing of the neighbour's.
    let tenant: Value = app
        .get_as("/api/v1/policies", "carol", "customer-acme")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(tenant["items"][0]["covered"], 1, "{tenant:#}");
    let detail = app
        .get_as(
            "/api/v1/policies/zrh-prod/platform/edit-in-place",
            "carol",
            "customer-acme",
        )
        .await
        .text()
        .await
        .unwrap();
    assert!(
        !detail.contains("globex") && !detail.contains("serviceaccounts"),
        "{detail}"
    );
    let theirs: Value = app
        .get_as("/api/v1/problems", "carol", "customer-acme")
        .await
        .json()
        .await
        .unwrap();
    let own = of_cause(&theirs, "ingress.edit-in-place-missing");
    assert_eq!(own.len(), 1, "{theirs:#}");
    assert!(own[0]["evidence"]
        .as_str()
        .unwrap()
        .contains("Espejote ManagedResource platform/edit-in-place is meant to set it here and is ServiceAccountError"));

    // The Ingress's page leads to the policy; its own fix is offered as a stop-gap, and
    // its preview says the policy stays the owner.
    let ingress_page = app
        .get_as("/ingresses/zrh-prod/acme-shop/shop", "sue", "support")
        .await
        .text()
        .await
        .unwrap();
    assert!(ingress_page.contains("Repair the policy: Espejote ManagedResource platform/edit-in-place is ServiceAccountError"), "{ingress_page}");
    assert!(ingress_page.contains("href=\"/policies/zrh-prod/platform/edit-in-place\""));
    assert!(ingress_page.contains("Preview: add edit-in-place here as a stop-gap"));
    assert!(ingress_page.contains("the Espejote ManagedResource platform/edit-in-place is meant to set it (ServiceAccountError)"));
    // A tenant does not see the platform's namespace: the policy's owners repair it, and
    // their own move — the patch on their Ingress — is the button, said to be a stop-gap.
    let tenant_page = app
        .get_as("/ingresses/zrh-prod/acme-shop/shop", "olga", "acme-ops")
        .await
        .text()
        .await
        .unwrap();
    assert!(!tenant_page.contains("Repair the policy"), "{tenant_page}");
    assert!(
        tenant_page.contains("data-testid=\"policy-owners\""),
        "{tenant_page}"
    );
    assert!(
        tenant_page.contains("its owners repair it"),
        "{tenant_page}"
    );
    assert!(
        !tenant_page.contains("data-testid=\"stop-gap\""),
        "{tenant_page}"
    );
    assert!(tenant_page.contains("Preview: add edit-in-place here as a stop-gap"));
    let preview: Value = app
        .post_as(
            "/api/v1/ingresses/zrh-prod/acme-shop/shop/edit-in-place",
            "sue",
            "support",
            json!({"dry_run": true}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert!(
        preview["steps"][0]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("a stop-gap: the Espejote ManagedResource platform/edit-in-place (ServiceAccountError) remains the owner"),
        "{preview:#}"
    );

    // Repaired in the cluster: its ServiceAccount exists; Espejote sets the annotation as
    // its own field manager and the problem is gone.
    create_in(
        &app,
        "",
        "serviceaccounts",
        Some("platform"),
        json!({"metadata": {"name": "edit-in-place"}}),
    );
    app.eventually(
        "the repaired policy sets the annotation and the problem clears",
        || async {
            let problems = support("/api/v1/problems?per_page=100").await;
            let shop = support("/api/v1/ingresses/zrh-prod/acme-shop/shop").await;
            of_cause(&problems, "policy.not-ready").is_empty()
                && shop["ingress"]["edit_in_place_managers"]
                    == json!(["managed-resource:edit-in-place"])
        },
    )
    .await;
    let row = &support("/api/v1/policies").await["items"][0];
    assert_eq!(
        (&row["status"], &row["lacking"]),
        (&json!("Ready"), &json!(0))
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cluster_without_espejote_shows_nothing_of_policies() {
    let app = app_with(&["zrh-prod"]).with_controllers().await;
    app.wait_ready().await;
    crate::restart::behind_https_enforcement(&app);
    app.eventually("the Ingress's own finding is there", || async {
        app.json("/api/v1/findings?rule=ingress.edit-in-place-missing")
            .await["total"]
            == 1
    })
    .await;
    let findings = app.json("/api/v1/findings?per_page=500").await.to_string();
    assert!(!findings.contains("policy."), "{findings}");
    assert!(!findings.contains("ManagedResource"), "{findings}");
    assert_eq!(app.json("/api/v1/policies").await["total"], 0);
    let clusters = app.json("/api/v1/clusters").await.to_string();
    assert!(
        !clusters.contains("\"error\""),
        "an absent CRD is no error: {clusters}"
    );
    assert_eq!(
        app.get("/policies/zrh-prod/platform/edit-in-place")
            .await
            .status(),
        404
    );
    app.stop().await;
}

/// Kyverno has no controller in kubesim: the test writes the policy's status as Kyverno's
/// webhook controller would (`updatePolicyStatuses`: condition `Ready`).
#[tokio::test(flavor = "multi_thread")]
async fn a_kyverno_cluster_policy_not_ready_is_the_root_and_admission_only_misses_older_ingresses()
{
    let app = app_with(&["zrh-prod"])
        .with_controllers()
        .with_policies()
        .await;
    app.wait_ready().await;
    crate::restart::behind_https_enforcement(&app);
    create_in(
        &app,
        "kyverno.io",
        "clusterpolicies",
        None,
        json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "add-edit-in-place"},
               "spec": {"rules": [{"name": "edit-in-place", "match": {"any": [{"resources": {"kinds": ["Ingress"]}}]},
                                   "mutate": {"patchStrategicMerge": {"metadata": {"annotations": {"+(acme.cert-manager.io/http01-edit-in-place)": "true"}}}}}]}}),
    );
    let status = |ready: bool| {
        json!({"conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" },
                               "reason": if ready { "Succeeded" } else { "Failed" }, "message": if ready { "Ready" } else { "Not Ready" },
                               "lastTransitionTime": "2026-12-07T00:00:00Z"}]})
    };
    let set_status = |ready: bool| {
        let c = &app.fleet.clusters[0].cluster;
        let rt = c.resolve("kyverno.io", "clusterpolicies").unwrap();
        let opts = kubesim::WriteOpts {
            status: true,
            ..kubesim::WriteOpts::system()
        };
        c.merge_patch(
            &rt,
            None,
            "add-edit-in-place",
            &json!({"status": status(ready)}),
            &opts,
        )
        .unwrap();
    };
    set_status(false);
    // Kyverno's background controller reports a failed mutation regarding the policy; for
    // a cluster-scoped policy the Event is kept in `default` and its reference has no
    // namespace (kyverno `pkg/event/events.go` `NewBackgroundFailedEvent`,
    // `pkg/event/controller.go`), read here as the core/v1 Event the API serves.
    create_in(
        &app,
        "",
        "events",
        Some("default"),
        json!({"metadata": {"name": "add-edit-in-place.187f3a"},
               "involvedObject": {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "name": "add-edit-in-place"},
               "reason": "PolicyError", "type": "Warning", "source": {"component": "kyverno-mutate"},
               "message": "policy add-edit-in-place/edit-in-place error: failed to mutate existing resource acme-shop/shop: ingresses.networking.k8s.io \"shop\" is forbidden",
               "lastTimestamp": "2026-12-07T00:00:00Z"}),
    );
    app.eventually("the policy that is not ready is the root", || async {
        let problems = app.json("/api/v1/problems").await;
        of_cause(&problems, "policy.not-ready")
            .first()
            .is_some_and(|p| {
                p["objects"][0]["kind"] == "ClusterPolicy"
                    && p["action"]["href"] == "/policies/zrh-prod/_/add-edit-in-place"
                    && p["evidence"].as_str().is_some_and(|e| {
                        e.contains("Its last Warning event (PolicyError): policy add-edit-in-place/edit-in-place error")
                    })
            })
    })
    .await;
    let page = app.get("/policies/zrh-prod/_/add-edit-in-place").await;
    assert_eq!(page.status(), 200);
    let page = page.text().await.unwrap();
    assert!(
        page.contains("ClusterPolicy add-edit-in-place") && page.contains("Not ready: Not Ready"),
        "{page}"
    );
    // Its events, kept in `default` for a cluster-scoped policy, are on its page.
    let detail = app
        .json("/api/v1/policies/zrh-prod/_/add-edit-in-place")
        .await;
    assert_eq!(detail["events"][0]["reason"], "PolicyError", "{detail:#}");
    // Ready, but it mutates on admission only: the Ingress made before it lacks it.
    set_status(true);
    app.eventually(
        "an admission-only policy misses the older Ingress",
        || async {
            let problems = app.json("/api/v1/problems").await;
            of_cause(&problems, "policy.missing-coverage")
                .first()
                .is_some_and(|p| {
                    p["evidence"]
                        .as_str()
                        .is_some_and(|e| e.contains("mutates on admission only"))
                })
                && of_cause(&problems, "policy.not-ready").is_empty()
        },
    )
    .await;
    let row = &app.json("/api/v1/policies").await["items"][0];
    assert_eq!(
        (&row["kind"], &row["ready"], &row["lacking"]),
        (&json!("ClusterPolicy"), &json!(true), &json!(1))
    );
    app.stop().await;
}

/// A ManagedResource in `platform` over every namespace's Ingresses, rendering `template`,
/// its ServiceAccount and rights in place; `selector` narrows its context.
fn working_policy(app: &TestApp, template: &str, selector: Option<Value>) {
    create_in(
        app,
        "",
        "namespaces",
        None,
        json!({"metadata": {"name": "platform"}}),
    );
    create_in(
        app,
        "",
        "serviceaccounts",
        Some("platform"),
        json!({"metadata": {"name": "edit-in-place"}}),
    );
    create_in(
        app,
        "rbac.authorization.k8s.io",
        "clusterroles",
        None,
        json!({"metadata": {"name": "espejote-edit-in-place"}, "rules": [{"apiGroups": ["networking.k8s.io"], "resources": ["ingresses"], "verbs": ["get", "list", "watch", "patch"]}]}),
    );
    create_in(
        app,
        "rbac.authorization.k8s.io",
        "clusterrolebindings",
        None,
        json!({"metadata": {"name": "espejote-edit-in-place"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "espejote-edit-in-place"},
               "subjects": [{"kind": "ServiceAccount", "name": "edit-in-place", "namespace": "platform"}]}),
    );
    let mut resource =
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "namespace": ""});
    if let Some(s) = selector {
        resource["labelSelector"] = s;
    }
    create_in(
        app,
        "espejote.io",
        "managedresources",
        Some("platform"),
        json!({"apiVersion": "espejote.io/v1alpha1", "kind": "ManagedResource",
               "metadata": {"name": "edit-in-place"},
               "spec": {"serviceAccountRef": {"name": "edit-in-place"},
                        "context": [{"name": "ingresses", "resource": resource}],
                        "template": template}}),
    );
}

/// Ingress `default/<name>` asking the production ClusterIssuer, with `labels`.
fn labelled_ingress(app: &TestApp, name: &str, labels: Value) {
    let host = format!("{name}.example.com");
    create_in(
        app,
        "networking.k8s.io",
        "ingresses",
        Some("default"),
        json!({"metadata": {"name": name, "labels": labels, "annotations": {"cert-manager.io/cluster-issuer": "letsencrypt-prod"}},
               "spec": {"ingressClassName": "cilium", "rules": [{"host": host}], "tls": [{"hosts": [host], "secretName": format!("{name}-tls")}]}}),
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_selector_that_misses_newer_ingresses_is_the_policys_to_widen() {
    let app = app_with(&["zrh-prod"])
        .with_controllers()
        .with_policies()
        .await;
    app.wait_ready().await;
    crate::restart::behind_https_enforcement(&app);
    labelled_ingress(&app, "old", json!({"tls": "letsencrypt"}));
    labelled_ingress(&app, "new", json!({}));
    working_policy(
        &app,
        TEMPLATE,
        Some(json!({"matchLabels": {"tls": "letsencrypt"}})),
    );
    app.eventually("the policy's selector misses the newer Ingress", || async {
        let problems = app.json("/api/v1/problems").await;
        of_cause(&problems, "policy.missing-coverage")
            .first()
            .is_some_and(|p| {
                p["evidence"]
                    .as_str()
                    .is_some_and(|e| e.contains("label selector (tls=letsencrypt) leaves out new"))
            })
    })
    .await;
    // Labelled as the policy selects, it is covered, and the finding goes.
    let c = &app.fleet.clusters[0].cluster;
    c.merge_patch(
        &c.resolve("networking.k8s.io", "ingresses").unwrap(),
        Some("default"),
        "new",
        &json!({"metadata": {"labels": {"tls": "letsencrypt"}}}),
        &kubesim::WriteOpts::system(),
    )
    .unwrap();
    // (`default/web`, unlabelled, stays missed.)
    app.eventually("the labelled Ingress is covered", || async {
        let problems = app.json("/api/v1/problems").await;
        let missed = of_cause(&problems, "policy.missing-coverage");
        missed.len() == 1
            && !missed[0]["evidence"]
                .as_str()
                .unwrap_or_default()
                .contains("default/new")
            && app.json("/api/v1/policies").await["items"][0]["lacking"] == 1
    })
    .await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_policy_that_sets_a_value_cert_manager_ignores_conflicts_with_the_fix() {
    let app = app_with(&["zrh-prod"])
        .with_controllers()
        .with_policies()
        .await;
    app.wait_ready().await;
    crate::restart::behind_https_enforcement(&app);
    // "True": cert-manager enables edit-in-place for "true" only.
    working_policy(&app, &TEMPLATE.replace("': 'true'", "': 'True'"), None);
    app.eventually("the value the policy holds is its problem", || async {
        let problems = app.json("/api/v1/problems").await;
        of_cause(&problems, "policy.conflicts-with-fix")
            .first()
            .is_some_and(|p| p["objects"][0]["kind"] == "ManagedResource")
    })
    .await;
    // Lookout does not fight the policy's field manager: the fix is not offered.
    let page = app
        .get("/ingresses/zrh-prod/default/web")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        page.contains(
            "the annotation is owned by another field manager (managed-resource:edit-in-place)"
        ),
        "{page}"
    );
    assert!(!page.contains("Preview: add edit-in-place"), "{page}");
    // The template repaired: "true", and nothing of the conflict is left.
    let c = &app.fleet.clusters[0].cluster;
    c.merge_patch(
        &c.resolve("espejote.io", "managedresources").unwrap(),
        Some("platform"),
        "edit-in-place",
        &json!({"spec": {"template": TEMPLATE}}),
        &kubesim::WriteOpts::system(),
    )
    .unwrap();
    app.eventually("the repaired value clears the conflict", || async {
        let problems = app.json("/api/v1/problems").await;
        of_cause(&problems, "policy.conflicts-with-fix").is_empty()
            && app.json("/api/v1/ingresses/zrh-prod/default/web").await["ingress"]["edit_in_place"]
                == "true"
    })
    .await;
    app.stop().await;
}

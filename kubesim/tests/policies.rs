//! Espejote's ManagedResource controller as kubesim runs it, through the HTTP API with
//! kube-rs and a manual clock: the annotation applied as `managed-resource:<name>`, and each
//! way the policy breaks told by `status.status` and a Warning event, as upstream does.

use kube::api::{ListParams, Patch, PatchParams};
use serde_json::{json, Value};

mod support;
use support::sim::Sim;

/// Adds edit-in-place to every Ingress that asks a ClusterIssuer for its certificate — the
/// seed's platform policy, written for Espejote.
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

fn managed_resource(template: &str, extra: Value) -> Value {
    let mut mr = json!({
        "apiVersion": "espejote.io/v1alpha1",
        "kind": "ManagedResource",
        "metadata": {"name": "edit-in-place", "namespace": "platform"},
        "spec": {
            "serviceAccountRef": {"name": "edit-in-place"},
            "context": [{"name": "ingresses", "resource": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "namespace": ""}}],
            "triggers": [{"name": "ingress", "watchContextResource": {"name": "ingresses"}}],
            "template": template,
        }
    });
    if let (Some(spec), Some(extra)) = (mr["spec"].as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            spec.insert(k.clone(), v.clone());
        }
    }
    mr
}

/// The cluster with Espejote installed, its namespace and ServiceAccount (when `account`),
/// and a role over Ingresses with `verbs` bound to it.
async fn with_espejote(account: bool, verbs: &[&str]) -> Sim {
    let sim = Sim::start().await;
    kubesim::fleet::install_policy_crds(&sim.fleet.clusters[0].cluster);
    sim.setup(support::sim::http01(), true).await;
    sim.create(
        "",
        "Namespace",
        "namespaces",
        None,
        json!({"metadata": {"name": "platform"}}),
    )
    .await;
    if account {
        sim.create(
            "",
            "ServiceAccount",
            "serviceaccounts",
            Some("platform"),
            json!({"metadata": {"name": "edit-in-place"}}),
        )
        .await;
    }
    sim.create(
        "rbac.authorization.k8s.io",
        "ClusterRole",
        "clusterroles",
        None,
        json!({"metadata": {"name": "espejote-edit-in-place"}, "rules": [{"apiGroups": ["networking.k8s.io"], "resources": ["ingresses"], "verbs": verbs}]}),
    )
    .await;
    sim.create(
        "rbac.authorization.k8s.io",
        "ClusterRoleBinding",
        "clusterrolebindings",
        None,
        json!({"metadata": {"name": "espejote-edit-in-place"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "espejote-edit-in-place"},
               "subjects": [{"kind": "ServiceAccount", "name": "edit-in-place", "namespace": "platform"}]}),
    )
    .await;
    sim
}

/// The ManagedResources of namespace `platform` (Espejote serves `v1alpha1`).
fn policies(sim: &Sim) -> kube::Api<kube::api::DynamicObject> {
    let resource = kube::core::ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk("espejote.io", "v1alpha1", "ManagedResource"),
        "managedresources",
    );
    kube::Api::namespaced_with(sim.client.clone(), "platform", &resource)
}

async fn create_policy(sim: &Sim, mr: Value) {
    let mr: kube::api::DynamicObject = serde_json::from_value(mr).unwrap();
    policies(sim)
        .create(&kube::api::PostParams::default(), &mr)
        .await
        .unwrap();
}

async fn status(sim: &Sim) -> String {
    let mr = policies(sim).get("edit-in-place").await.unwrap();
    mr.data["status"]["status"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The Warning events about the ManagedResource: (reason, message).
async fn warnings(sim: &Sim) -> Vec<(String, String)> {
    sim.api("", "Event", "events", Some("platform"))
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| {
            e.data["involvedObject"]["name"] == "edit-in-place" && e.data["type"] == "Warning"
        })
        .map(|e| {
            (
                e.data["reason"].as_str().unwrap_or_default().to_string(),
                e.data["message"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

async fn ingress(sim: &Sim, name: &str) -> Value {
    sim.get(
        "networking.k8s.io",
        "Ingress",
        "ingresses",
        Some("shop"),
        name,
    )
    .await
    .unwrap()
}

/// Who owns the annotation in an Ingress's managedFields.
fn owners(ingress: &Value) -> Vec<String> {
    ingress["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| {
            f["fieldsV1"]["f:metadata"]["f:annotations"]
                .get("f:acme.cert-manager.io/http01-edit-in-place")
                .is_some()
        })
        .map(|f| {
            format!(
                "{} ({})",
                f["manager"].as_str().unwrap(),
                f["operation"].as_str().unwrap()
            )
        })
        .collect()
}

#[tokio::test]
async fn a_managed_resource_applies_the_annotation_as_its_own_field_manager() {
    let sim = with_espejote(true, &["get", "list", "watch", "patch"]).await;
    sim.ingress("shop", "shop.example.com", false).await;
    create_policy(&sim, managed_resource(TEMPLATE, json!({}))).await;
    sim.run(1);
    assert_eq!(status(&sim).await, "Ready");
    let shop = ingress(&sim, "shop").await;
    assert_eq!(
        shop["metadata"]["annotations"]["acme.cert-manager.io/http01-edit-in-place"],
        "true"
    );
    assert_eq!(owners(&shop), ["managed-resource:edit-in-place (Apply)"]);
    // Nothing more to do: another pass writes nothing.
    let version = shop["metadata"]["resourceVersion"].clone();
    sim.run(2);
    assert_eq!(
        ingress(&sim, "shop").await["metadata"]["resourceVersion"],
        version
    );
    // A new Ingress is covered at the next pass; one without an issuer is left alone.
    sim.ingress("blog", "blog.example.com", false).await;
    sim.create(
        "networking.k8s.io",
        "Ingress",
        "ingresses",
        Some("shop"),
        json!({"metadata": {"name": "plain"}, "spec": {"rules": [{"host": "plain.example.com"}]}}),
    )
    .await;
    sim.run(1);
    assert_eq!(
        owners(&ingress(&sim, "blog").await),
        ["managed-resource:edit-in-place (Apply)"]
    );
    assert!(ingress(&sim, "plain").await["metadata"]["annotations"].is_null());
    assert!(warnings(&sim).await.is_empty(), "no event on success");
}

#[tokio::test]
async fn a_missing_service_account_is_a_service_account_error_until_it_exists() {
    let sim = with_espejote(false, &["get", "list", "watch", "patch"]).await;
    sim.ingress("shop", "shop.example.com", false).await;
    create_policy(&sim, managed_resource(TEMPLATE, json!({}))).await;
    sim.run(1);
    assert_eq!(status(&sim).await, "ServiceAccountError");
    let events = warnings(&sim).await;
    assert!(
        events.iter().any(|(reason, message)| reason == "ServiceAccountError"
            && message.starts_with("Reconcile error: ServiceAccountError: token request for \"system:serviceaccount:platform:edit-in-place\" failed")),
        "{events:?}"
    );
    assert!(ingress(&sim, "shop").await["metadata"]["annotations"]
        .get("acme.cert-manager.io/http01-edit-in-place")
        .is_none());
    sim.create(
        "",
        "ServiceAccount",
        "serviceaccounts",
        Some("platform"),
        json!({"metadata": {"name": "edit-in-place"}}),
    )
    .await;
    sim.run(1);
    assert_eq!(status(&sim).await, "Ready");
}

#[tokio::test]
async fn without_rights_to_list_the_caches_wait_then_the_controller_fails_to_start() {
    let sim = with_espejote(true, &["patch"]).await;
    sim.ingress("shop", "shop.example.com", false).await;
    create_policy(
        &sim,
        managed_resource(TEMPLATE, json!({"cacheSyncTimeout": "30s"})),
    )
    .await;
    sim.run(1);
    assert_eq!(status(&sim).await, "WaitingForCacheSync");
    assert!(
        warnings(&sim).await.is_empty(),
        "waiting is transient: no event"
    );
    sim.run(31);
    assert_eq!(status(&sim).await, "ControllerStartError");
    assert!(warnings(&sim)
        .await
        .iter()
        .any(|(r, m)| r == "ControllerStartError"
            && m.contains("timed out waiting for cache to be synced")));
}

#[tokio::test]
async fn a_template_that_fails_or_returns_no_objects_is_told_apart() {
    let sim = with_espejote(true, &["get", "list", "watch", "patch"]).await;
    sim.ingress("shop", "shop.example.com", false).await;
    // A misspelt context name: the evaluation fails.
    create_policy(
        &sim,
        managed_resource(
            &TEMPLATE.replace("context().ingresses", "context().ingress"),
            json!({}),
        ),
    )
    .await;
    sim.run(1);
    assert_eq!(status(&sim).await, "TemplateError");
    let events = warnings(&sim).await;
    assert!(
        events.iter().any(|(r, m)| r == "TemplateError"
            && m.starts_with("Reconcile error: TemplateError: failed to render template:")
            && m.contains("ingress")),
        "{events:?}"
    );
    // A template returning a string is not a list of objects.
    let api = policies(&sim);
    api.patch(
        "edit-in-place",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"template": "'true'"}})),
    )
    .await
    .unwrap();
    sim.run(1);
    assert_eq!(status(&sim).await, "TemplateReturnError");
    // A broken configuration: two contexts of one name.
    api.patch(
        "edit-in-place",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"template": TEMPLATE, "context": [
            {"name": "ingresses", "resource": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress"}},
            {"name": "ingresses", "resource": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress"}}]}})),
    )
    .await
    .unwrap();
    sim.run(1);
    assert_eq!(status(&sim).await, "DependencyConfigurationError");
}

#[tokio::test]
async fn a_refused_or_conflicting_apply_is_an_apply_error_and_force_takes_the_field_over() {
    // May list and watch, may not patch.
    let sim = with_espejote(true, &["get", "list", "watch"]).await;
    sim.ingress("shop", "shop.example.com", false).await;
    create_policy(&sim, managed_resource(TEMPLATE, json!({}))).await;
    sim.run(1);
    assert_eq!(status(&sim).await, "ApplyError");
    let events = warnings(&sim).await;
    assert!(
        events.iter().any(|(r, m)| r == "ApplyError" && m.contains("cannot patch resource \"ingresses\" in API group \"networking.k8s.io\" in the namespace \"shop\"")),
        "{events:?}"
    );
    // With the right, but another manager holds the annotation at another value.
    let role = sim.api(
        "rbac.authorization.k8s.io",
        "ClusterRole",
        "clusterroles",
        None,
    );
    role.patch(
        "espejote-edit-in-place",
        &PatchParams::default(),
        &Patch::Merge(json!({"rules": [{"apiGroups": ["networking.k8s.io"], "resources": ["ingresses"], "verbs": ["get", "list", "watch", "patch"]}]})),
    )
    .await
    .unwrap();
    sim.api("networking.k8s.io", "Ingress", "ingresses", Some("shop"))
        .patch(
            "shop",
            &PatchParams::apply("team-shop"),
            &Patch::Apply(json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "shop", "annotations": {"acme.cert-manager.io/http01-edit-in-place": "false"}}})),
        )
        .await
        .unwrap();
    sim.run(1);
    assert_eq!(status(&sim).await, "ApplyError");
    assert!(warnings(&sim)
        .await
        .iter()
        .any(|(_, m)| m.contains("conflict") && m.contains("team-shop")));
    // `force: true` takes the field over.
    policies(&sim)
        .patch(
            "edit-in-place",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"applyOptions": {"force": true}}})),
        )
        .await
        .unwrap();
    sim.run(1);
    assert_eq!(status(&sim).await, "Ready");
    let shop = ingress(&sim, "shop").await;
    assert_eq!(
        shop["metadata"]["annotations"]["acme.cert-manager.io/http01-edit-in-place"],
        "true"
    );
    assert_eq!(owners(&shop), ["managed-resource:edit-in-place (Apply)"]);
}

#[tokio::test]
async fn the_policy_kinds_are_served_only_where_installed() {
    let sim = Sim::start().await;
    assert!(
        policies(&sim).list(&ListParams::default()).await.is_err(),
        "not installed: not served"
    );
    kubesim::fleet::install_policy_crds(&sim.fleet.clusters[0].cluster);
    for (group, version, kind, plural) in [
        (
            "espejote.io",
            "v1alpha1",
            "ManagedResource",
            "managedresources",
        ),
        ("kyverno.io", "v1", "ClusterPolicy", "clusterpolicies"),
        ("kyverno.io", "v1", "Policy", "policies"),
        (
            "policies.kyverno.io",
            "v1beta1",
            "MutatingPolicy",
            "mutatingpolicies",
        ),
    ] {
        let resource = kube::core::ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk(group, version, kind),
            plural,
        );
        let api: kube::Api<kube::api::DynamicObject> =
            kube::Api::all_with(sim.client.clone(), &resource);
        assert!(
            api.list(&ListParams::default()).await.is_ok(),
            "{kind} served"
        );
    }
}

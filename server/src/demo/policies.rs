//! gva-prod's platform policy: an Espejote ManagedResource sets edit-in-place on every
//! Ingress of the newer team's namespace that asks a ClusterIssuer for a certificate — and
//! its template has a typo, so Espejote fails with `TemplateError` and the team's Ingresses
//! lack the annotation: one problem on the board, rooted at the policy. Fixing the template
//! in the cluster (`kubectl -n platform edit managedresource edit-in-place`: `ingress` →
//! `ingresses`) clears it.

use serde_json::json;

use super::scenarios::issuer;
use super::seeder::Seeder;

/// The policy's template, with the typo the story is about (`context().ingress`: the
/// context is named `ingresses`).
pub(super) const BROKEN_TEMPLATE: &str = r#"local esp = import 'espejote.libsonnet';
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
  for i in esp.context().ingress
  if asks(i)
]
"#;

pub(super) async fn geneva(s: &Seeder) -> anyhow::Result<()> {
    s.namespaces(&["platform", "umbrella-web"]).await?;
    s.object(
        ("", "v1", "ServiceAccount", "serviceaccounts"),
        Some("platform"),
        json!({"metadata": {"name": "edit-in-place"}}),
    )
    .await?;
    s.object(
        ("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles"),
        None,
        json!({"metadata": {"name": "espejote-edit-in-place"}, "rules": [{"apiGroups": ["networking.k8s.io"], "resources": ["ingresses"], "verbs": ["get", "list", "watch", "patch"]}]}),
    )
    .await?;
    s.object(
        ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings"),
        None,
        json!({"metadata": {"name": "espejote-edit-in-place"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "espejote-edit-in-place"},
               "subjects": [{"kind": "ServiceAccount", "name": "edit-in-place", "namespace": "platform"}]}),
    )
    .await?;
    s.object(
        ("espejote.io", "v1alpha1", "ManagedResource", "managedresources"),
        Some("platform"),
        json!({"metadata": {"name": "edit-in-place"},
               "spec": {"serviceAccountRef": {"name": "edit-in-place"},
                        "context": [{"name": "ingresses", "resource": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "namespace": "umbrella-web"}}],
                        "triggers": [{"name": "ingress", "watchContextResource": {"name": "ingresses"}}],
                        "template": BROKEN_TEMPLATE}}),
    )
    .await?;
    // The newer team's Ingresses: they count on the policy for edit-in-place.
    for (name, host) in [
        ("www", "www.umbrella.example"),
        ("store", "store.umbrella.example"),
        ("careers", "careers.umbrella.example"),
    ] {
        s.ingress(
            "umbrella-web",
            name,
            &[host],
            issuer("letsencrypt-prod"),
            Some("cilium"),
            None,
        )
        .await?;
    }
    Ok(())
}

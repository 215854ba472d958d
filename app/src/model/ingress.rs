//! The compact view of an Ingress: what the rules and pages need, nothing more.

use chrono::{DateTime, Utc};
use k8s_openapi::api::networking::v1::Ingress;
use serde::Serialize;

/// `acme.cert-manager.io/http01-edit-in-place`.
pub const EDIT_IN_PLACE: &str = "acme.cert-manager.io/http01-edit-in-place";
/// `cert-manager.io/cluster-issuer`.
pub const CLUSTER_ISSUER: &str = "cert-manager.io/cluster-issuer";
/// `cert-manager.io/issuer`.
pub const ISSUER: &str = "cert-manager.io/issuer";
/// The legacy class annotation, still honoured by controllers.
pub const CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";

/// Which issuer an Ingress asks cert-manager for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IssuerRef {
    /// `Issuer` or `ClusterIssuer`.
    pub kind: String,
    pub name: String,
}

/// One `spec.tls` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TlsEntry {
    pub hosts: Vec<String>,
    pub secret_name: Option<String>,
}

/// An Ingress, projected.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IngressView {
    pub cluster: String,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    /// `spec.ingressClassName`, else the legacy annotation.
    pub class: Option<String>,
    /// Hosts of `spec.rules`, in order, without duplicates.
    pub hosts: Vec<String>,
    pub tls: Vec<TlsEntry>,
    pub issuer: Option<IssuerRef>,
    /// The raw value of the edit-in-place annotation, if present.
    pub edit_in_place: Option<String>,
    /// Load-balancer addresses from status.
    pub addresses: Vec<String>,
    pub created: Option<DateTime<Utc>>,
}

impl IngressView {
    /// Projects an Ingress of `cluster`; None when it has no name.
    pub fn project(cluster: &str, ing: &Ingress) -> Option<Self> {
        let meta = &ing.metadata;
        let annotations = meta.annotations.as_ref();
        let annotation = |k: &str| annotations.and_then(|a| a.get(k)).cloned();
        let spec = ing.spec.as_ref();
        let mut hosts: Vec<String> = Vec::new();
        for rule in spec.and_then(|s| s.rules.as_ref()).into_iter().flatten() {
            if let Some(h) = &rule.host {
                if !hosts.contains(h) {
                    hosts.push(h.clone());
                }
            }
        }
        let tls = spec
            .and_then(|s| s.tls.as_ref())
            .into_iter()
            .flatten()
            .map(|t| TlsEntry {
                hosts: t.hosts.clone().unwrap_or_default(),
                secret_name: t.secret_name.clone(),
            })
            .collect();
        let issuer = annotation(CLUSTER_ISSUER)
            .map(|name| IssuerRef {
                kind: "ClusterIssuer".into(),
                name,
            })
            .or_else(|| {
                annotation(ISSUER).map(|name| IssuerRef {
                    kind: "Issuer".into(),
                    name,
                })
            });
        let addresses = ing
            .status
            .as_ref()
            .and_then(|s| s.load_balancer.as_ref())
            .and_then(|lb| lb.ingress.as_ref())
            .into_iter()
            .flatten()
            .filter_map(|i| i.ip.clone().or_else(|| i.hostname.clone()))
            .collect();
        Some(IngressView {
            cluster: cluster.to_string(),
            namespace: meta.namespace.clone().unwrap_or_default(),
            name: meta.name.clone()?,
            uid: meta.uid.clone().unwrap_or_default(),
            class: spec
                .and_then(|s| s.ingress_class_name.clone())
                .or_else(|| annotation(CLASS_ANNOTATION)),
            hosts,
            tls,
            issuer,
            edit_in_place: annotation(EDIT_IN_PLACE),
            addresses,
            created: meta
                .creation_timestamp
                .as_ref()
                .and_then(|t| DateTime::from_timestamp(t.0.as_second(), 0)),
        })
    }

    /// Whether `q` (case-insensitive) appears in the name, namespace or a host.
    pub fn matches_text(&self, q: &str) -> bool {
        let q = q.to_ascii_lowercase();
        self.name.to_ascii_lowercase().contains(&q)
            || self.namespace.to_ascii_lowercase().contains(&q)
            || self
                .hosts
                .iter()
                .any(|h| h.to_ascii_lowercase().contains(&q))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ingress(v: serde_json::Value) -> Ingress {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn projection_keeps_hosts_tls_issuer_and_annotation() {
        let ing = ingress(serde_json::json!({
            "metadata": {"name": "shop", "namespace": "acme", "uid": "u1",
                "annotations": {CLUSTER_ISSUER: "letsencrypt", EDIT_IN_PLACE: "true"},
                "managedFields": [{"manager": "kubectl", "operation": "Apply"}]},
            "spec": {"ingressClassName": "cilium",
                "rules": [{"host": "shop.example.com"}, {"host": "shop.example.com"}, {"host": "www.example.com"}],
                "tls": [{"hosts": ["shop.example.com"], "secretName": "shop-tls"}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}
        }));
        let v = IngressView::project("zrh", &ing).unwrap();
        assert_eq!(v.hosts, vec!["shop.example.com", "www.example.com"]);
        assert_eq!(
            v.issuer,
            Some(IssuerRef {
                kind: "ClusterIssuer".into(),
                name: "letsencrypt".into()
            })
        );
        assert_eq!(v.edit_in_place.as_deref(), Some("true"));
        assert_eq!(v.tls[0].secret_name.as_deref(), Some("shop-tls"));
        assert_eq!(v.class.as_deref(), Some("cilium"));
        assert_eq!(v.addresses, vec!["192.0.2.1"]);
        assert!(v.matches_text("WWW.example"));
    }

    #[test]
    fn legacy_class_annotation_and_namespaced_issuer() {
        let ing = ingress(serde_json::json!({
            "metadata": {"name": "blog", "namespace": "acme",
                "annotations": {CLASS_ANNOTATION: "nginx", ISSUER: "acme-le"}}
        }));
        let v = IngressView::project("zrh", &ing).unwrap();
        assert_eq!(v.class.as_deref(), Some("nginx"));
        assert_eq!(v.issuer.unwrap().kind, "Issuer");
        assert!(v.hosts.is_empty());
    }
}

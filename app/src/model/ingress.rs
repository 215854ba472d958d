//! The compact view of an Ingress: what the rules and pages need, nothing more.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;
use serde_json::Value;

use super::interner::Interner;
use super::object::{annotation, annotation_managers, at, created, str_at};
use super::text::{Rare, Seldom, Text, Texts, Uid};

/// `acme.cert-manager.io/http01-edit-in-place`.
pub const EDIT_IN_PLACE: &str = "acme.cert-manager.io/http01-edit-in-place";
/// `cert-manager.io/cluster-issuer`.
pub(crate) const CLUSTER_ISSUER: &str = "cert-manager.io/cluster-issuer";
/// `cert-manager.io/issuer`.
pub(crate) const ISSUER: &str = "cert-manager.io/issuer";
/// `kubernetes.io/tls-acme`: ingress-shim's default trigger (`--auto-certificate-annotations`).
pub(crate) const TLS_ACME: &str = "kubernetes.io/tls-acme";
/// `cert-manager.io/issuer-kind` (external issuers).
pub(crate) const ISSUER_KIND: &str = "cert-manager.io/issuer-kind";
/// `cert-manager.io/issuer-group` (external issuers).
pub(crate) const ISSUER_GROUP: &str = "cert-manager.io/issuer-group";
/// The legacy class annotation, still honoured by controllers.
pub(crate) const CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";
/// Cilium's per-Ingress HTTPS redirect switch.
pub(crate) const FORCE_HTTPS: &str = "ingress.cilium.io/force-https";
/// Cilium's load-balancer mode for one Ingress: `dedicated` or `shared`.
pub(crate) const LB_MODE: &str = "ingress.cilium.io/loadbalancer-mode";
/// The older spelling Cilium still reads when [`LB_MODE`] is absent.
pub(crate) const LB_MODE_ALIAS: &str = "io.cilium.ingress/loadbalancer-mode";

pub use super::refs::IssuerRef;

/// One `spec.tls` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TlsEntry {
    pub hosts: Texts,
    pub secret_name: Option<Text>,
}

/// An Ingress, projected.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IngressView {
    pub cluster: Text,
    pub namespace: Text,
    pub name: Text,
    pub uid: Uid,
    /// `spec.ingressClassName`, else the legacy annotation.
    pub class: Option<Text>,
    /// Hosts of `spec.rules`, in order, without duplicates.
    pub hosts: Texts,
    pub tls: Box<[TlsEntry]>,
    /// Shared by the objects that name the same issuer.
    pub issuer: Option<Arc<IssuerRef>>,
    /// `kubernetes.io/tls-acme` is true as Go's `strconv.ParseBool` reads it: ingress-shim
    /// makes Certificates for it with cert-manager's default issuer
    /// (`--default-issuer-name/-kind/-group`, which Lookout cannot see; the issuer is then
    /// read from the Certificate it made), or refuses it with `BadConfig` without one.
    pub tls_acme: bool,
    /// The raw value of the edit-in-place annotation, if present.
    pub edit_in_place: Option<Text>,
    /// Field managers owning the edit-in-place annotation (from managedFields).
    pub edit_in_place_managers: Texts,
    /// What few Ingresses carry: a conflict or refusal of ingress-shim, Cilium's annotations.
    #[serde(flatten)]
    pub rare: Rare<IngressRare>,
    /// `metadata.labels`: ingress-shim gives them to the Certificate, where an issuer's
    /// solver selector (`matchLabels`) reads them.
    pub labels: Arc<[(Text, Text)]>,
    /// Load-balancer addresses from status.
    pub addresses: Texts,
    pub created: Option<DateTime<Utc>>,
    /// When its spec or metadata were last written (see [`crate::model::object::last_changed`]).
    pub changed: Option<DateTime<Utc>>,
}

/// The fields of an Ingress that few carry (see [`Rare`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct IngressRare {
    /// Why ingress-shim cannot tell which issuer the annotations mean (it then makes no
    /// Certificate), in its own words; None when they are consistent.
    pub issuer_conflict: Option<Text>,
    /// Why ingress-shim refuses a per-certificate annotation (duration, private key…), in its
    /// words; None when it accepts them or the Ingress asks for no certificate.
    pub shim_refusal: Option<Text>,
    /// The raw value of `ingress.cilium.io/force-https`, if present.
    pub force_https: Option<Text>,
    /// The raw value of `ingress.cilium.io/loadbalancer-mode`, if present.
    pub lb_mode: Option<Text>,
}

impl Seldom for IngressRare {
    const EMPTY: &'static Self = &IngressRare {
        issuer_conflict: None,
        shim_refusal: None,
        force_https: None,
        lb_mode: None,
    };
}

impl IngressView {
    /// Projects an Ingress of `cluster` from its metadata and body; None without a name.
    pub fn project(
        cluster: &str,
        meta: &ObjectMeta,
        data: &Value,
        strings: &mut Interner,
    ) -> Option<Self> {
        let mut hosts: Vec<Text> = Vec::new();
        for rule in at(data, "/spec/rules")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(h) = rule.get("host").and_then(Value::as_str) {
                if !hosts.iter().any(|x| &**x == h) {
                    hosts.push(strings.get(h));
                }
            }
        }
        let tls = at(data, "/spec/tls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|t| {
                let hosts = t
                    .get("hosts")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|h| h.as_str().map(|h| strings.get(h)))
                            .collect()
                    })
                    .unwrap_or_default();
                TlsEntry {
                    hosts: strings.list(hosts),
                    secret_name: t
                        .get("secretName")
                        .and_then(Value::as_str)
                        .map(|s| strings.get(s)),
                }
            })
            .collect();
        let addresses = at(data, "/status/loadBalancer/ingress")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|i| {
                i.get("ip")
                    .or_else(|| i.get("hostname"))
                    .and_then(Value::as_str)
                    .map(|a| strings.get(a))
            })
            .collect();
        let addresses = strings.list(addresses);
        let mut note = |key: &str| annotation(meta, key).map(|v| strings.get(&v));
        let (edit_in_place, force_https) = (note(EDIT_IN_PLACE), note(FORCE_HTTPS));
        // Cilium reads the first of the two keys that is present
        // (`operator/pkg/ingress/annotations`, `annotation.Get`).
        let lb_mode = note(LB_MODE).or_else(|| note(LB_MODE_ALIAS));
        let labels = meta
            .labels
            .iter()
            .flatten()
            .map(|(k, v)| (strings.get(k), strings.get(v)))
            .collect();
        let class = str_at(data, "/spec/ingressClassName")
            .or_else(|| annotation(meta, CLASS_ANNOTATION))
            .map(|c| strings.get(&c));
        Some(IngressView {
            cluster: strings.get(cluster),
            namespace: strings.get(meta.namespace.as_deref().unwrap_or_default()),
            name: strings.get(meta.name.as_deref()?),
            uid: Uid::parse(meta.uid.as_deref().unwrap_or_default()),
            class,
            hosts: strings.list(hosts),
            tls,
            issuer: requested_issuer(meta, strings),
            tls_acme: annotation(meta, TLS_ACME)
                .is_some_and(|v| super::infra::go_bool(&v) == Some(true)),
            rare: Rare::new(IngressRare {
                issuer_conflict: issuer_conflict(meta).map(|e| strings.get(&e)),
                shim_refusal: meta
                    .annotations
                    .as_ref()
                    .and_then(|a| super::shim::invalid_annotation(|k| a.get(k).map(String::as_str)))
                    .map(|e| strings.get(&e)),
                force_https,
                lb_mode,
            }),
            edit_in_place,
            labels,
            edit_in_place_managers: {
                let managers = annotation_managers(meta, EDIT_IN_PLACE, strings);
                strings.list(managers)
            },
            addresses,
            created: created(meta),
            changed: crate::model::object::last_changed(meta),
        })
    }

    /// Whether ingress-shim is asked to make Certificates for it: an issuer annotation
    /// (consistent or not), or `kubernetes.io/tls-acme` (cert-manager
    /// `pkg/controller/certificate-shim/sync.go`, `hasShimAnnotation`).
    pub fn asks_for_certificate(&self) -> bool {
        self.issuer.is_some() || self.rare.issuer_conflict.is_some() || self.tls_acme
    }

    /// How it asks, for texts: the issuer it names, else the annotation.
    pub fn asks_how(&self) -> String {
        match &self.issuer {
            Some(r) => format!("names {} {}", r.kind, r.name),
            None if self.tls_acme => {
                "asks with kubernetes.io/tls-acme (cert-manager's default issuer)".to_string()
            }
            None => "names an issuer".to_string(),
        }
    }

    /// Whether `q` (case-insensitive) appears in the name, namespace or a host.
    pub fn matches_text(&self, q: &str) -> bool {
        let has = |s: &str| super::text::contains_ignore_ascii_case(s, q);
        has(&self.name)
            || has(&self.namespace)
            || self.hosts.iter().any(|h| has(h))
            || self.tls.iter().flat_map(|t| t.hosts.iter()).any(|h| has(h))
    }

    /// Every host the Ingress serves or asks TLS for.
    pub fn all_hosts(&self) -> Vec<Text> {
        let mut all = self.hosts.to_vec();
        for h in self.tls.iter().flat_map(|t| t.hosts.iter()) {
            if !all.contains(h) {
                all.push(h.clone());
            }
        }
        all
    }
}

/// The issuer that ingress-shim (or gateway-shim) would use, from the annotations.
pub(crate) fn requested_issuer(
    meta: &ObjectMeta,
    strings: &mut Interner,
) -> Option<Arc<IssuerRef>> {
    let kind = annotation(meta, ISSUER_KIND);
    let group = annotation(meta, ISSUER_GROUP);
    let r = if let Some(name) = annotation(meta, CLUSTER_ISSUER) {
        IssuerRef {
            kind: strings.get("ClusterIssuer"),
            name: strings.get(&name),
            group: strings.get("cert-manager.io"),
        }
    } else {
        let name = annotation(meta, ISSUER)?;
        IssuerRef {
            kind: strings.get(kind.as_deref().unwrap_or("Issuer")),
            name: strings.get(&name),
            group: strings.get(group.as_deref().unwrap_or("cert-manager.io")),
        }
    };
    Some(strings.issuer(r))
}

/// Why ingress-shim refuses the issuer annotations of an object that has one, worded as it
/// words it (cert-manager `pkg/controller/certificate-shim/sync.go`, `issuerForIngressLike`):
/// an empty name, `issuer` with `cluster-issuer`, or `cluster-issuer` with `issuer-kind` or
/// `issuer-group`.
fn issuer_conflict(meta: &ObjectMeta) -> Option<String> {
    let has = |k: &str| annotation(meta, k);
    let (issuer, cluster) = (has(ISSUER), has(CLUSTER_ISSUER));
    if issuer.is_none() && cluster.is_none() {
        return None;
    }
    let name = cluster.as_ref().or(issuer.as_ref());
    let mut errors = Vec::new();
    if name.is_none_or(|n| n.is_empty()) {
        errors.push("failed to determine issuer name to be used for ingress resource".to_string());
    }
    let both = |a: &str, b: &str| format!("both {a:?} and {b:?} may not be set");
    if issuer.is_some() && cluster.is_some() {
        errors.push(both(ISSUER, CLUSTER_ISSUER));
    }
    if cluster.is_some() && has(ISSUER_GROUP).is_some() {
        errors.push(both(CLUSTER_ISSUER, ISSUER_GROUP));
    }
    if cluster.is_some() && has(ISSUER_KIND).is_some() {
        errors.push(both(CLUSTER_ISSUER, ISSUER_KIND));
    }
    (!errors.is_empty()).then(|| errors.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn project(v: Value) -> IngressView {
        let meta: ObjectMeta = serde_json::from_value(v["metadata"].clone()).unwrap();
        IngressView::project("zrh", &meta, &v, &mut Interner::default()).unwrap()
    }

    #[test]
    fn conflicting_issuer_annotations_are_worded_as_ingress_shim_words_them() {
        let v = project(json!({
            "metadata": {"name": "shop", "namespace": "acme",
                "annotations": {CLUSTER_ISSUER: "le", ISSUER: "local", ISSUER_KIND: "Issuer"}},
        }));
        assert_eq!(
            v.rare.issuer_conflict.as_deref(),
            Some("both \"cert-manager.io/issuer\" and \"cert-manager.io/cluster-issuer\" may not be set, both \"cert-manager.io/cluster-issuer\" and \"cert-manager.io/issuer-kind\" may not be set")
        );
        let fine = project(
            json!({"metadata": {"name": "shop", "annotations": {ISSUER: "local", ISSUER_KIND: "Issuer"}}}),
        );
        assert_eq!(fine.rare.issuer_conflict, None);
        let none = project(json!({"metadata": {"name": "shop"}}));
        assert_eq!(none.rare.issuer_conflict, None);
    }

    /// Cilium reads `ingress.cilium.io/loadbalancer-mode`, else its older alias.
    #[test]
    fn the_load_balancer_mode_is_read_from_either_spelling() {
        let mode = |annotations: Value| {
            project(json!({"metadata": {"name": "shop", "annotations": annotations}}))
                .rare
                .lb_mode
                .clone()
        };
        assert_eq!(
            mode(json!({LB_MODE_ALIAS: "shared"})).as_deref(),
            Some("shared")
        );
        assert_eq!(
            mode(json!({LB_MODE: "dedicated", LB_MODE_ALIAS: "shared"})).as_deref(),
            Some("dedicated"),
            "the current spelling wins"
        );
        assert_eq!(mode(json!({})), None);
    }

    #[test]
    fn projection_keeps_hosts_tls_issuer_and_annotation() {
        let v = project(json!({
            "metadata": {"name": "shop", "namespace": "acme", "uid": "u1",
                "annotations": {CLUSTER_ISSUER: "letsencrypt", EDIT_IN_PLACE: "true", FORCE_HTTPS: "disabled"}},
            "spec": {"ingressClassName": "cilium",
                "rules": [{"host": "shop.example.com"}, {"host": "shop.example.com"}, {"host": "www.example.com"}],
                "tls": [{"hosts": ["shop.example.com"], "secretName": "shop-tls"}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}
        }));
        assert_eq!(
            &*v.hosts,
            [
                Text::from("shop.example.com"),
                Text::from("www.example.com")
            ]
        );
        assert_eq!(&*v.issuer.as_ref().unwrap().kind, "ClusterIssuer");
        assert_eq!(v.edit_in_place.as_deref(), Some("true"));
        assert_eq!(v.rare.force_https.as_deref(), Some("disabled"));
        assert_eq!(v.tls[0].secret_name.as_deref(), Some("shop-tls"));
        assert_eq!(v.class.as_deref(), Some("cilium"));
        assert_eq!(&*v.addresses, [Text::from("192.0.2.1")]);
        assert!(v.matches_text("WWW.example"));
    }

    #[test]
    fn wrong_types_are_treated_as_absent() {
        let v = project(json!({
            "metadata": {"name": "odd", "namespace": "acme", "annotations": {ISSUER: "acme-le", ISSUER_KIND: "AWSPCAIssuer", ISSUER_GROUP: "awspca.cert-manager.io"}},
            "spec": {"rules": "not a list", "tls": [{"hosts": "x", "secretName": 5}]},
            "status": {"loadBalancer": {"ingress": [{"ip": 7}]}}
        }));
        assert!(v.hosts.is_empty());
        assert_eq!(
            &*v.tls,
            [TlsEntry {
                hosts: Default::default(),
                secret_name: None
            }]
        );
        assert!(v.addresses.is_empty());
        let issuer = v.issuer.unwrap();
        assert_eq!(
            (&*issuer.kind, &*issuer.group),
            ("AWSPCAIssuer", "awspca.cert-manager.io")
        );
        assert!(!IssuerRef {
            kind: "AWSPCAIssuer".into(),
            name: "x".into(),
            group: "awspca.cert-manager.io".into()
        }
        .is_cert_manager());
    }

    #[test]
    fn legacy_class_annotation_and_namespaced_issuer() {
        let v = project(
            json!({"metadata": {"name": "blog", "namespace": "acme", "annotations": {CLASS_ANNOTATION: "nginx", ISSUER: "acme-le"}}}),
        );
        assert_eq!(v.class.as_deref(), Some("nginx"));
        assert_eq!(&*v.issuer.unwrap().kind, "Issuer");
    }
}

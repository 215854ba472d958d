//! The watched kinds of DESIGN.md §4 and where each one's projections live.

use std::sync::Arc;

use kube::api::DynamicObject;
use kube::core::{ApiResource, GroupVersionKind};
use lookout_app::model::certificate::{
    CertificateRequestView, CertificateView, ChallengeView, OrderView,
};
use lookout_app::model::data::{ClusterData, Key, Views};
use lookout_app::model::infra::{
    CiliumConfig, EventView, GatewayView, IngressClassView, LoadBalancerView,
};
use lookout_app::model::issuer::IssuerView;
use lookout_app::model::text::Interner;
use lookout_app::model::IngressView;

/// One watched kind.
#[derive(Debug, Clone, Copy)]
pub struct KindSpec {
    /// Shown in the UI and used in metrics.
    pub kind: &'static str,
    pub group: &'static str,
    pub version: &'static str,
    pub plural: &'static str,
    /// Declared by a CRD that may be absent.
    pub crd: bool,
    /// Watch one namespace only.
    pub namespace: Option<&'static str>,
    /// Watch with this field selector.
    pub field_selector: Option<&'static str>,
}

impl KindSpec {
    pub fn api_resource(&self) -> ApiResource {
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(self.group, self.version, self.kind),
            self.plural,
        )
    }

    /// `cert-manager.io/v1`, or `v1` for the core group.
    pub fn group_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

const fn core(kind: &'static str, group: &'static str, plural: &'static str) -> KindSpec {
    KindSpec {
        kind,
        group,
        version: "v1",
        plural,
        crd: false,
        namespace: None,
        field_selector: None,
    }
}

const fn custom(kind: &'static str, group: &'static str, plural: &'static str) -> KindSpec {
    KindSpec {
        kind,
        group,
        version: "v1",
        plural,
        crd: true,
        namespace: None,
        field_selector: None,
    }
}

/// Every kind Lookout watches in each cluster.
pub const KINDS: &[KindSpec] = &[
    core("Ingress", "networking.k8s.io", "ingresses"),
    core("IngressClass", "networking.k8s.io", "ingressclasses"),
    core("Service", "", "services"),
    KindSpec {
        namespace: Some("kube-system"),
        field_selector: Some("metadata.name=cilium-config"),
        ..core("ConfigMap", "", "configmaps")
    },
    core("Event", "", "events"),
    custom("Certificate", "cert-manager.io", "certificates"),
    custom(
        "CertificateRequest",
        "cert-manager.io",
        "certificaterequests",
    ),
    custom("Issuer", "cert-manager.io", "issuers"),
    custom("ClusterIssuer", "cert-manager.io", "clusterissuers"),
    custom("Order", "acme.cert-manager.io", "orders"),
    custom("Challenge", "acme.cert-manager.io", "challenges"),
    custom("Gateway", "gateway.networking.k8s.io", "gateways"),
];

/// The key of an object, sharing the interned namespace and name with its view.
fn key(obj: &DynamicObject, strings: &mut Interner) -> Key {
    (
        strings.get(obj.metadata.namespace.as_deref().unwrap_or_default()),
        strings.get(obj.metadata.name.as_deref().unwrap_or_default()),
    )
}

fn put<V>(
    map: &mut Views<V>,
    obj: &DynamicObject,
    strings: &mut Interner,
    view: Option<V>,
) -> bool {
    let k = key(obj, strings);
    match view {
        Some(v) => {
            map.insert(k, Arc::new(v));
            true
        }
        None => {
            map.remove(&k);
            false
        }
    }
}

/// Why an object cannot be cached at all, if it cannot: without a name it has no key.
/// Everything else is projected as far as it goes (a malformed field becomes empty).
pub fn unusable(obj: &DynamicObject) -> Option<&'static str> {
    match obj.metadata.name.as_deref() {
        None | Some("") => Some("no metadata.name"),
        Some(_) => None,
    }
}

/// Projects `obj` of `kind` into `data`; false when it was skipped (unusable or not needed).
pub fn apply(
    kind: &str,
    cluster: &str,
    data: &mut ClusterData,
    obj: &DynamicObject,
    strings: &mut Interner,
) -> bool {
    let (m, d) = (&obj.metadata, &obj.data);
    // The views, their strings and map entries stay: allocated apart (see memory::cached).
    crate::memory::cached(|| match kind {
        "Ingress" => {
            let v = IngressView::project(cluster, m, d, strings);
            put(&mut data.ingresses, obj, strings, v)
        }
        "IngressClass" => put(
            &mut data.ingress_classes,
            obj,
            strings,
            IngressClassView::project(m, d),
        ),
        "Service" => put(
            &mut data.load_balancers,
            obj,
            strings,
            LoadBalancerView::project(m, d),
        ),
        "ConfigMap" => {
            data.cilium = Some(CiliumConfig::project(d));
            true
        }
        "Event" => put(&mut data.events, obj, strings, EventView::project(m, d)),
        "Certificate" => {
            let v = CertificateView::project(cluster, m, d, strings);
            put(&mut data.certificates, obj, strings, v)
        }
        "CertificateRequest" => {
            let v = CertificateRequestView::project(m, d, strings);
            put(&mut data.requests, obj, strings, v)
        }
        "Issuer" => {
            let v = IssuerView::project("Issuer", m, d, strings);
            put(&mut data.issuers, obj, strings, v)
        }
        "ClusterIssuer" => {
            let v = IssuerView::project("ClusterIssuer", m, d, strings);
            put(&mut data.cluster_issuers, obj, strings, v)
        }
        "Order" => {
            let v = OrderView::project(m, d, strings);
            put(&mut data.orders, obj, strings, v)
        }
        "Challenge" => {
            let v = ChallengeView::project(m, d, strings);
            put(&mut data.challenges, obj, strings, v)
        }
        "Gateway" => {
            let v = GatewayView::project(m, d, strings);
            put(&mut data.gateways, obj, strings, v)
        }
        _ => false,
    })
}

/// Removes a deleted object of `kind`.
pub fn remove(kind: &str, data: &mut ClusterData, obj: &DynamicObject) {
    let k = lookout_app::model::data::key(
        obj.metadata.namespace.as_deref().unwrap_or_default(),
        obj.metadata.name.as_deref().unwrap_or_default(),
    );
    match kind {
        "Ingress" => drop(data.ingresses.remove(&k)),
        "IngressClass" => drop(data.ingress_classes.remove(&k)),
        "Service" => drop(data.load_balancers.remove(&k)),
        "ConfigMap" => data.cilium = None,
        "Event" => drop(data.events.remove(&k)),
        "Certificate" => drop(data.certificates.remove(&k)),
        "CertificateRequest" => drop(data.requests.remove(&k)),
        "Issuer" => drop(data.issuers.remove(&k)),
        "ClusterIssuer" => drop(data.cluster_issuers.remove(&k)),
        "Order" => drop(data.orders.remove(&k)),
        "Challenge" => drop(data.challenges.remove(&k)),
        "Gateway" => drop(data.gateways.remove(&k)),
        _ => {}
    }
}

/// Moves one kind's views from a finished relist into the live data. The maps are rebuilt in
/// bulk on the way: a map filled one insert at a time in key order (as a list arrives) leaves
/// its B-tree nodes a little over half full; built in bulk they are full.
pub fn replace(kind: &str, data: &mut ClusterData, relisted: &mut ClusterData) {
    fn compact<V>(views: &mut Views<V>) -> Views<V> {
        crate::memory::cached(|| std::mem::take(views).into_iter().collect())
    }
    match kind {
        "Ingress" => data.ingresses = compact(&mut relisted.ingresses),
        "IngressClass" => data.ingress_classes = compact(&mut relisted.ingress_classes),
        "Service" => data.load_balancers = compact(&mut relisted.load_balancers),
        "ConfigMap" => data.cilium = relisted.cilium.take(),
        "Event" => data.events = compact(&mut relisted.events),
        "Certificate" => data.certificates = compact(&mut relisted.certificates),
        "CertificateRequest" => data.requests = compact(&mut relisted.requests),
        "Issuer" => data.issuers = compact(&mut relisted.issuers),
        "ClusterIssuer" => data.cluster_issuers = compact(&mut relisted.cluster_issuers),
        "Order" => data.orders = compact(&mut relisted.orders),
        "Challenge" => data.challenges = compact(&mut relisted.challenges),
        "Gateway" => data.gateways = compact(&mut relisted.gateways),
        _ => {}
    }
}

/// How many objects of `kind` are cached.
pub fn count(kind: &str, data: &ClusterData) -> usize {
    match kind {
        "Ingress" => data.ingresses.len(),
        "IngressClass" => data.ingress_classes.len(),
        "Service" => data.load_balancers.len(),
        "ConfigMap" => usize::from(data.cilium.is_some()),
        "Event" => data.events.len(),
        "Certificate" => data.certificates.len(),
        "CertificateRequest" => data.requests.len(),
        "Issuer" => data.issuers.len(),
        "ClusterIssuer" => data.cluster_issuers.len(),
        "Order" => data.orders.len(),
        "Challenge" => data.challenges.len(),
        "Gateway" => data.gateways.len(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(v: serde_json::Value) -> DynamicObject {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn only_an_object_without_a_name_is_unusable() {
        let nameless = object(serde_json::json!({"metadata": {"namespace": "x"}}));
        assert_eq!(unusable(&nameless), Some("no metadata.name"));
        let empty = object(serde_json::json!({"metadata": {"name": ""}}));
        assert_eq!(unusable(&empty), Some("no metadata.name"));
        // Everything else is projected as far as it goes, however odd the rest.
        let odd = object(serde_json::json!({"metadata": {"name": "ok"}, "spec": 7, "status": "?"}));
        assert_eq!(unusable(&odd), None);
        let mut data = ClusterData::default();
        let mut strings = Interner::default();
        assert!(apply("Ingress", "c", &mut data, &odd, &mut strings));
        assert_eq!(count("Ingress", &data), 1);
    }
}

#[cfg(test)]
mod fuzz {
    //! Hostile objects: the field names the projections read, with values of any type and
    //! shape (wrong types, huge strings, bad timestamps, non-ASCII). Projection, the rules and
    //! the Ingress rows must never panic, and an object either lands or is skipped.

    use proptest::prelude::*;
    use serde_json::{json, Map, Value};

    use super::*;

    /// The names the projections look for, and a few they do not.
    const FIELDS: &[&str] = &[
        "spec",
        "status",
        "rules",
        "host",
        "tls",
        "hosts",
        "secretName",
        "ingressClassName",
        "conditions",
        "type",
        "status",
        "reason",
        "message",
        "lastTransitionTime",
        "notAfter",
        "notBefore",
        "renewalTime",
        "revision",
        "failedIssuanceAttempts",
        "lastFailureTime",
        "dnsNames",
        "commonName",
        "issuerRef",
        "name",
        "kind",
        "group",
        "acme",
        "server",
        "loadBalancer",
        "ingress",
        "ip",
        "hostname",
        "controller",
        "state",
        "presented",
        "processing",
        "dnsName",
        "request",
        "listeners",
        "protocol",
        "data",
        "x",
        "\u{1F512}",
    ];

    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(|f| json!(f)),
            prop::sample::select(vec![
                "True",
                "False",
                "Ready",
                "Issuing",
                "2026-13-45T99:00:00Z",
                "2026-01-01T00:00:00Z",
                "",
                "letsencrypt-prod",
                "ClusterIssuer",
                "Issuer",
                "bücher.example",
                "*.example.com",
                "https://acme-v02.api.letsencrypt.org/directory",
                "valid",
                "pending",
            ])
            .prop_map(Value::from),
            "\\PC{0,40}".prop_map(Value::from),
        ]
    }

    /// An annotation value: usual, or 200 KiB and more.
    fn annotation() -> impl Strategy<Value = Value> {
        prop_oneof![
            leaf(),
            (1usize..3).prop_map(|n| Value::from("a".repeat(n * 200 * 1024))),
        ]
    }

    fn value() -> impl Strategy<Value = Value> {
        leaf().prop_recursive(5, 96, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec((prop::sample::select(FIELDS), inner), 0..6).prop_map(|kv| {
                    Value::Object(
                        kv.into_iter()
                            .map(|(k, v)| (k.to_string(), v))
                            .collect::<Map<_, _>>(),
                    )
                }),
            ]
        })
    }

    /// A well-formed body of `kind` (spec and status), for the mutations to break.
    fn template(kind: &str) -> Value {
        let cond = json!([{"type": "Ready", "status": "False", "reason": "Pending", "message": "m", "lastTransitionTime": "2026-01-01T00:00:00Z"}]);
        let issuer = json!({"name": "le", "kind": "ClusterIssuer", "group": "cert-manager.io"});
        match kind {
            "Ingress" => {
                json!({"spec": {"ingressClassName": "cilium", "rules": [{"host": "a.example.com"}, {"host": "b.example.com"}],
                                 "tls": [{"hosts": ["a.example.com"], "secretName": "a-tls"}]},
                        "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}, {"hostname": "lb.example"}]}}})
            }
            "Certificate" => {
                json!({"spec": {"secretName": "a-tls", "dnsNames": ["a.example.com"], "commonName": "a.example.com", "issuerRef": issuer},
                                     "status": {"conditions": cond, "notBefore": "2026-01-01T00:00:00Z", "notAfter": "2026-04-01T00:00:00Z",
                                                "renewalTime": "2026-03-01T00:00:00Z", "revision": 2, "failedIssuanceAttempts": 1, "lastFailureTime": "2026-01-02T00:00:00Z"}})
            }
            "CertificateRequest" => {
                json!({"spec": {"issuerRef": issuer, "request": "AAAA"}, "status": {"conditions": cond, "failureTime": "2026-01-02T00:00:00Z"}})
            }
            "Order" => {
                json!({"spec": {"issuerRef": issuer, "dnsNames": ["a.example.com"]}, "status": {"state": "pending", "reason": "r", "url": "u"}})
            }
            "Challenge" => {
                json!({"spec": {"dnsName": "a.example.com", "type": "HTTP-01", "issuerRef": issuer, "solver": {"http01": {"ingress": {"name": "x"}}}},
                                   "status": {"state": "pending", "presented": true, "processing": true, "reason": "Waiting for HTTP-01 challenge propagation"}})
            }
            "Issuer" | "ClusterIssuer" => {
                json!({"spec": {"acme": {"server": "https://acme-v02.api.letsencrypt.org/directory", "solvers": [{"http01": {"ingress": {"ingressClassName": "cilium"}}}]}},
                                                 "status": {"conditions": cond}})
            }
            "Service" => {
                json!({"spec": {"type": "LoadBalancer", "ipFamilies": ["IPv4"]}, "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}})
            }
            "IngressClass" => json!({"spec": {"controller": "cilium.io/ingress-controller"}}),
            "Gateway" => {
                json!({"spec": {"gatewayClassName": "cilium", "listeners": [{"name": "https", "hostname": "a.example.com", "protocol": "HTTPS", "port": 443}]}})
            }
            "ConfigMap" => {
                json!({"data": {"enforce-ingress-https": "true", "enable-ingress-proxy-protocol": "false"}})
            }
            "Event" => {
                json!({"type": "Warning", "reason": "Failed", "message": "m", "count": 3, "lastTimestamp": "2026-01-01T00:00:00Z",
                               "involvedObject": {"kind": "Certificate", "name": "a", "namespace": "ns"}})
            }
            _ => json!({}),
        }
    }

    /// JSON pointers of every node under `v`.
    fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => m.iter().for_each(|(k, v)| {
                let p = format!("{at}/{k}");
                out.push(p.clone());
                pointers(v, p, out)
            }),
            Value::Array(a) => a.iter().enumerate().for_each(|(i, v)| {
                let p = format!("{at}/{i}");
                out.push(p.clone());
                pointers(v, p, out)
            }),
            _ => {}
        }
    }

    /// `template(kind)` with each mutation applied: the node at a pointer replaced by a hostile
    /// value, or removed.
    fn mutated(kind: &str, mutations: &[(usize, Option<Value>)]) -> Value {
        let mut body = template(kind);
        for (which, replacement) in mutations {
            let mut all = Vec::new();
            pointers(&body, String::new(), &mut all);
            if all.is_empty() {
                break;
            }
            let at = &all[which % all.len()];
            match replacement {
                Some(v) => *body.pointer_mut(at).expect("a pointer of this body") = v.clone(),
                None => {
                    let (parent, key) = at.rsplit_once('/').expect("a pointer has a slash");
                    match body.pointer_mut(parent) {
                        Some(Value::Object(m)) => {
                            m.remove(key);
                        }
                        Some(Value::Array(a)) => {
                            a.remove(key.parse::<usize>().expect("an index"));
                        }
                        _ => {}
                    }
                }
            }
        }
        body
    }

    /// An object of `kind` with a valid name and hostile everything else.
    fn object(kind: &'static str, i: usize, body: Value, annotation: Value) -> DynamicObject {
        let mut o = json!({
            "apiVersion": "v1", "kind": kind,
            "metadata": {"name": format!("o-{i}"), "namespace": "ns", "uid": format!("uid-{i}"),
                         "annotations": {"cert-manager.io/cluster-issuer": "le",
                                          "acme.cert-manager.io/http01-edit-in-place": "true",
                                          "x": "y"}},
        });
        if let Value::Object(fields) = body {
            for (k, v) in fields {
                if k != "metadata" && k != "apiVersion" && k != "kind" {
                    o[k] = v;
                }
            }
        }
        if let Value::String(s) = annotation {
            o["metadata"]["annotations"]["x"] = Value::from(s);
        }
        serde_json::from_value(o).expect("the envelope is a valid object")
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn hostile_objects_never_panic_and_never_hide_a_neighbour(
            bodies in prop::collection::vec(
                (0..KINDS.len(), prop::collection::vec((any::<usize>(), prop::option::of(value())), 0..4), value(), annotation()),
                1..12,
            )
        ) {
            let mut data = ClusterData::default();
            let mut strings = Interner::default();
            // A well-formed Ingress next to the hostile ones must always be there.
            let good = object("Ingress", 9999, json!({"spec": {"rules": [{"host": "ok.example.com"}]}}), Value::Null);
            prop_assert!(apply("Ingress", "c", &mut data, &good, &mut strings));
            for (i, (k, mutations, random, annotation)) in bodies.into_iter().enumerate() {
                let kind = KINDS[k].kind;
                // Every third object is random structure; the others are real objects broken
                // in a few places.
                let body = if i % 3 == 2 { random } else { mutated(kind, &mutations) };
                let obj = object(kind, i, body, annotation);
                let _ = apply(kind, "c", &mut data, &obj, &mut strings);
                let _ = count(kind, &data);
            }
            prop_assert!(data.ingresses.values().any(|v| &*v.name == "o-9999"));
            let facts = lookout_app::model::data::ClusterFacts {
                name: "c".into(),
                state: lookout_app::model::SyncState::Synced,
                kinds: Vec::new(),
                overrides: Default::default(),
            };
            let findings = lookout_app::model::rules::evaluate(
                &facts,
                &data,
                chrono::Utc::now(),
                &Default::default(),
            );
            let rows = super::super::read::ingress_rows(&findings, &facts, &data);
            prop_assert!(rows.values().flatten().any(|r| &*r.ingress.name == "o-9999"));
        }
    }
}

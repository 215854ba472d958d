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

/// Projects `obj` of `kind` into `data`; false when it was skipped (unusable or not needed).
pub fn apply(
    kind: &str,
    cluster: &str,
    data: &mut ClusterData,
    obj: &DynamicObject,
    strings: &mut Interner,
) -> bool {
    let (m, d) = (&obj.metadata, &obj.data);
    match kind {
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
    }
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

/// Moves one kind's views from a finished relist into the live data.
pub fn replace(kind: &str, data: &mut ClusterData, relisted: &mut ClusterData) {
    use std::mem::take;
    match kind {
        "Ingress" => data.ingresses = take(&mut relisted.ingresses),
        "IngressClass" => data.ingress_classes = take(&mut relisted.ingress_classes),
        "Service" => data.load_balancers = take(&mut relisted.load_balancers),
        "ConfigMap" => data.cilium = relisted.cilium.take(),
        "Event" => data.events = take(&mut relisted.events),
        "Certificate" => data.certificates = take(&mut relisted.certificates),
        "CertificateRequest" => data.requests = take(&mut relisted.requests),
        "Issuer" => data.issuers = take(&mut relisted.issuers),
        "ClusterIssuer" => data.cluster_issuers = take(&mut relisted.cluster_issuers),
        "Order" => data.orders = take(&mut relisted.orders),
        "Challenge" => data.challenges = take(&mut relisted.challenges),
        "Gateway" => data.gateways = take(&mut relisted.gateways),
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

//! What fronts the Ingresses: IngressClasses, Cilium's config and load-balancer Services,
//! Gateways, and the Events about watched objects.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;
use serde_json::Value;

use super::ingress::{requested_issuer, IssuerRef};
use super::interner::Interner;
use super::object::{annotation, at, created, parse_time, str_at, strings_at};

/// Cilium's ingress controller string.
pub(crate) const CILIUM_CONTROLLER: &str = "cilium.io/ingress-controller";

/// An IngressClass.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IngressClassView {
    pub name: String,
    pub controller: Option<String>,
    pub is_default: bool,
}

impl IngressClassView {
    pub fn project(meta: &ObjectMeta, data: &Value) -> Option<Self> {
        Some(IngressClassView {
            name: meta.name.clone()?,
            controller: str_at(data, "/spec/controller"),
            is_default: annotation(meta, "ingressclass.kubernetes.io/is-default-class").as_deref()
                == Some("true"),
        })
    }
}

/// A Cilium bool setting as Go's `strconv.ParseBool` reads it (Cilium's flags and
/// `cilium-config` keys are Go bools): `1 t T TRUE true True` and `0 f F FALSE false False`;
/// anything else is not a bool.
pub fn go_bool(v: &str) -> Option<bool> {
    match v {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// `ingress.cilium.io/force-https` as Cilium's operator reads it
/// (`GetAnnotationForceHTTPSEnabled`): `enabled` or `disabled`, or a Go bool; any other value
/// counts as no annotation, so the cluster's `enforce-ingress-https` decides.
pub fn force_https_annotation(v: &str) -> Option<bool> {
    match v {
        "enabled" => Some(true),
        "disabled" => Some(false),
        other => go_bool(other),
    }
}

/// The settings of `kube-system/cilium-config` that matter here.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CiliumConfig {
    /// Whether the ConfigMap exists at all.
    pub present: bool,
    /// `enforce-ingress-https` (Cilium's default is true when absent).
    pub enforce_https: Option<bool>,
    /// `enable-ingress-proxy-protocol`.
    pub proxy_protocol: Option<bool>,
    /// `enable-gateway-api-proxy-protocol`: the Gateway API listeners' own flag (cilium/cilium
    /// `operator/pkg/gateway-api/cell.go`).
    pub gateway_proxy_protocol: Option<bool>,
    /// `ingress-default-lb-mode` (the operator's default is dedicated).
    pub default_lb_mode: Option<LbMode>,
}

/// Cilium's load-balancer mode for an Ingress (cilium/cilium
/// `operator/pkg/ingress/ingress.go`: the `ingress.cilium.io/loadbalancer-mode` annotation,
/// else `ingress-default-lb-mode`, default `dedicated`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LbMode {
    /// Each Ingress gets its own LoadBalancer Service and address.
    Dedicated,
    /// Every shared-mode Ingress is served by one Service; hosts merge into one virtual host.
    Shared,
}

impl LbMode {
    /// The mode a value names; anything else is not a mode (Cilium falls back to its
    /// default).
    pub fn parse(v: &str) -> Option<Self> {
        match v {
            "dedicated" => Some(LbMode::Dedicated),
            "shared" => Some(LbMode::Shared),
            _ => None,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            LbMode::Dedicated => "dedicated",
            LbMode::Shared => "shared",
        }
    }
}

impl CiliumConfig {
    pub fn project(data: &Value) -> Self {
        let key = |k: &str| {
            at(data, &format!("/data/{k}"))
                .and_then(Value::as_str)
                .and_then(go_bool)
        };
        CiliumConfig {
            present: true,
            enforce_https: key("enforce-ingress-https"),
            proxy_protocol: key("enable-ingress-proxy-protocol"),
            gateway_proxy_protocol: key("enable-gateway-api-proxy-protocol"),
            default_lb_mode: at(data, "/data/ingress-default-lb-mode")
                .and_then(Value::as_str)
                .and_then(LbMode::parse),
        }
    }
}

/// A LoadBalancer Service fronting an ingress controller (e.g. `kube-system/cilium-ingress`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LoadBalancerView {
    pub namespace: String,
    pub name: String,
    /// `spec.ipFamilies` (`IPv4`, `IPv6`).
    pub ip_families: Vec<String>,
    pub addresses: Vec<String>,
}

impl LoadBalancerView {
    /// Only LoadBalancer Services named like Cilium's ingress Services are kept.
    pub fn project(meta: &ObjectMeta, data: &Value) -> Option<Self> {
        let name = meta.name.clone()?;
        if str_at(data, "/spec/type").as_deref() != Some("LoadBalancer")
            || !name.starts_with("cilium-ingress")
        {
            return None;
        }
        Some(LoadBalancerView {
            namespace: meta.namespace.clone().unwrap_or_default(),
            name,
            ip_families: strings_at(data, "/spec/ipFamilies"),
            addresses: at(data, "/status/loadBalancer/ingress")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|i| i.get("ip").and_then(Value::as_str).map(str::to_string))
                .collect(),
        })
    }

    /// Whether the Service is IPv4 only (by its families, else by its addresses).
    pub fn ipv4_only(&self) -> bool {
        if !self.ip_families.is_empty() {
            return self.ip_families.iter().all(|f| f == "IPv4");
        }
        !self.addresses.is_empty() && self.addresses.iter().all(|a| !a.contains(':'))
    }
}

/// A Gateway listener that terminates TLS.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ListenerView {
    pub name: String,
    pub hostname: Option<String>,
    pub protocol: String,
    /// `port`.
    pub port: u16,
    /// The Secrets of `tls.certificateRefs`, each in its own namespace (the Gateway's when
    /// the reference names none).
    pub certificate_refs: Vec<SecretRef>,
    /// Its conditions in `status.listeners` (`Accepted`, `Programmed`, `ResolvedRefs`) as
    /// the Gateway's controller reports them; empty until it has.
    pub conditions: Vec<super::object::Condition>,
}

/// Which namespaces' routes a listener admits (`allowedRoutes.namespaces.from`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum RoutesFrom {
    /// The Gateway's own (the default).
    Same,
    All,
    /// Those a label selector picks: Lookout does not read namespaces' labels.
    Selector,
}

/// A plain-HTTP listener of a Gateway: where an HTTP-01 solver's HTTPRoute can be served.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HttpListener {
    pub name: String,
    /// None: every host.
    pub hostname: Option<String>,
    pub port: u16,
    pub from: RoutesFrom,
}

impl HttpListener {
    /// Whether it serves `host`: every host, the same name, or a `*.` suffix as the Gateway
    /// API defines it (any number of labels in front, not the bare domain).
    pub fn serves(&self, host: &str) -> bool {
        match self.hostname.as_deref() {
            None | Some("") => true,
            Some(h) => super::route::hostname_matches(h, host),
        }
    }
}

/// A Secret a Gateway listener references for its certificate.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct SecretRef {
    pub namespace: String,
    pub name: String,
}

impl SecretRef {
    /// `name`, or `namespace/name` when it is not in `home`.
    pub fn shown_from(&self, home: &str) -> String {
        if self.namespace == home {
            self.name.clone()
        } else {
            format!("{}/{}", self.namespace, self.name)
        }
    }
}

/// A Gateway with its TLS listeners.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GatewayView {
    pub namespace: String,
    pub name: String,
    /// `spec.gatewayClassName`.
    pub class: String,
    pub issuer: Option<Arc<IssuerRef>>,
    pub listeners: Vec<ListenerView>,
    /// Its `HTTP` listeners.
    pub http_listeners: Vec<HttpListener>,
    /// `status.addresses[].value`: IP addresses or hostnames.
    pub addresses: Vec<String>,
    pub created: Option<DateTime<Utc>>,
}

impl GatewayView {
    pub fn project(meta: &ObjectMeta, data: &Value, strings: &mut Interner) -> Option<Self> {
        let statuses: Vec<&Value> = at(data, "/status/listeners")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .collect();
        let listeners = at(data, "/spec/listeners")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|l| {
                let name = l.get("name")?.as_str()?;
                let conditions = statuses
                    .iter()
                    .find(|s| s.get("name").and_then(Value::as_str) == Some(name))
                    .map(|s| super::object::conditions_at(s, "/conditions", strings))
                    .unwrap_or_default();
                Some(ListenerView {
                    conditions,
                    name: name.to_string(),
                    hostname: l
                        .get("hostname")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    protocol: l
                        .get("protocol")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    port: l
                        .get("port")
                        .and_then(Value::as_u64)
                        .and_then(|p| u16::try_from(p).ok())
                        .unwrap_or_default(),
                    certificate_refs: at(l, "/tls/certificateRefs")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter(|r| {
                            r.get("kind")
                                .and_then(Value::as_str)
                                .is_none_or(|k| k == "Secret")
                        })
                        .filter_map(|r| {
                            Some(SecretRef {
                                namespace: r
                                    .get("namespace")
                                    .and_then(Value::as_str)
                                    .filter(|n| !n.is_empty())
                                    .or(meta.namespace.as_deref())
                                    .unwrap_or_default()
                                    .to_string(),
                                name: r.get("name")?.as_str()?.to_string(),
                            })
                        })
                        .collect(),
                })
            })
            .filter(|l: &ListenerView| !l.certificate_refs.is_empty())
            .collect();
        Some(GatewayView {
            namespace: meta.namespace.clone().unwrap_or_default(),
            name: meta.name.clone()?,
            class: str_at(data, "/spec/gatewayClassName").unwrap_or_default(),
            issuer: requested_issuer(meta, strings),
            listeners,
            http_listeners: at(data, "/spec/listeners")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|l| l.get("protocol").and_then(Value::as_str) == Some("HTTP"))
                .filter_map(|l| {
                    Some(HttpListener {
                        name: l.get("name")?.as_str()?.to_string(),
                        hostname: l
                            .get("hostname")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                        port: l
                            .get("port")
                            .and_then(Value::as_u64)
                            .and_then(|p| u16::try_from(p).ok())
                            .unwrap_or_default(),
                        from: match at(l, "/allowedRoutes/namespaces/from").and_then(Value::as_str)
                        {
                            Some("All") => RoutesFrom::All,
                            Some("Selector") => RoutesFrom::Selector,
                            _ => RoutesFrom::Same,
                        },
                    })
                })
                .collect(),
            addresses: at(data, "/status/addresses")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|a| a.get("value").and_then(Value::as_str).map(str::to_string))
                .collect(),
            created: created(meta),
        })
    }
}

/// A Kubernetes Event about a watched object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EventView {
    pub namespace: String,
    pub name: String,
    /// Kind, namespace and name of the object the event is about: an Event about a
    /// cluster-scoped object (a ClusterIssuer, a ClusterPolicy) is kept in namespace
    /// `default`, its object's namespace is empty (client-go's recorders, `makeEvent`).
    pub object_kind: String,
    pub object_namespace: String,
    pub object_name: String,
    /// `Normal` or `Warning`.
    pub event_type: String,
    pub reason: String,
    pub message: String,
    pub count: i64,
    pub last_seen: Option<DateTime<Utc>>,
}

/// The kept kinds whose objects have no namespace.
const CLUSTER_SCOPED: &[&str] = &["ClusterIssuer", "ClusterPolicy", "MutatingPolicy"];

/// The kinds whose Events are kept.
pub(crate) const EVENT_KINDS: &[&str] = &[
    "Ingress",
    "ManagedResource",
    "ClusterPolicy",
    "Policy",
    "MutatingPolicy",
    "Certificate",
    "CertificateRequest",
    "Order",
    "Challenge",
    "Issuer",
    "ClusterIssuer",
    "Gateway",
];

impl EventView {
    pub fn project(meta: &ObjectMeta, data: &Value) -> Option<Self> {
        let kind =
            str_at(data, "/involvedObject/kind").or_else(|| str_at(data, "/regarding/kind"))?;
        if !EVENT_KINDS.contains(&kind.as_str()) {
            return None;
        }
        let last_seen = [
            "/lastTimestamp",
            "/eventTime",
            "/series/lastObservedTime",
            "/firstTimestamp",
        ]
        .iter()
        .find_map(|p| at(data, p).and_then(Value::as_str).and_then(parse_time))
        .or_else(|| created(meta));
        let namespace = meta.namespace.clone().unwrap_or_default();
        let object_namespace = str_at(data, "/involvedObject/namespace")
            .or_else(|| str_at(data, "/regarding/namespace"))
            .unwrap_or_else(|| {
                if CLUSTER_SCOPED.contains(&kind.as_str()) {
                    String::new()
                } else {
                    namespace.clone()
                }
            });
        Some(EventView {
            namespace,
            name: meta.name.clone()?,
            object_namespace,
            object_kind: kind,
            object_name: str_at(data, "/involvedObject/name")
                .or_else(|| str_at(data, "/regarding/name"))
                .unwrap_or_default(),
            event_type: str_at(data, "/type").unwrap_or_else(|| "Normal".into()),
            reason: str_at(data, "/reason").unwrap_or_default(),
            message: str_at(data, "/message")
                .or_else(|| str_at(data, "/note"))
                .unwrap_or_default(),
            count: at(data, "/count").and_then(Value::as_i64).unwrap_or(1),
            last_seen,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(v: &Value) -> ObjectMeta {
        serde_json::from_value(v["metadata"].clone()).unwrap()
    }

    #[test]
    fn cilium_settings_are_go_bools() {
        let c = CiliumConfig::project(
            &json!({"data": {"enforce-ingress-https": "True", "enable-ingress-proxy-protocol": "0"}}),
        );
        assert_eq!(
            (c.enforce_https, c.proxy_protocol),
            (Some(true), Some(false))
        );
        // Not Go bools: the operator would not read them as one.
        for v in ["enabled", "yes", "on", "no", " true", "tRUE", ""] {
            assert_eq!(go_bool(v), None, "{v:?}");
        }
    }

    #[test]
    fn force_https_takes_enabled_disabled_or_a_go_bool_and_nothing_else() {
        for (v, want) in [
            ("enabled", Some(true)),
            ("disabled", Some(false)),
            ("true", Some(true)),
            ("F", Some(false)),
            ("1", Some(true)),
            // Counted as no annotation by Cilium.
            ("yes", None),
            ("on", None),
            ("Enabled", None),
            ("off", None),
        ] {
            assert_eq!(force_https_annotation(v), want, "{v:?}");
        }
    }

    #[test]
    fn only_cilium_load_balancers_are_kept() {
        let lb = json!({"metadata": {"name": "cilium-ingress", "namespace": "kube-system"}, "spec": {"type": "LoadBalancer", "ipFamilies": ["IPv4"]}});
        assert!(LoadBalancerView::project(&meta(&lb), &lb)
            .unwrap()
            .ipv4_only());
        let other = json!({"metadata": {"name": "postgres"}, "spec": {"type": "LoadBalancer"}});
        assert!(LoadBalancerView::project(&meta(&other), &other).is_none());
        let dual = json!({"metadata": {"name": "cilium-ingress"}, "spec": {"type": "LoadBalancer"}, "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}, {"ip": "2001:db8::1"}]}}});
        assert!(!LoadBalancerView::project(&meta(&dual), &dual)
            .unwrap()
            .ipv4_only());
    }

    #[test]
    fn gateway_keeps_tls_listeners_only() {
        let g = json!({"metadata": {"name": "gw", "namespace": "web", "annotations": {"cert-manager.io/cluster-issuer": "le"}},
        "spec": {"listeners": [
            {"name": "http", "protocol": "HTTP", "port": 80},
            {"name": "https", "protocol": "HTTPS", "port": 443, "hostname": "a.example.com", "tls": {"certificateRefs": [{"name": "a-tls"}, {"name": "b-tls", "namespace": "certs"}]}}
        ]}});
        let v = GatewayView::project(&meta(&g), &g, &mut Interner::default()).unwrap();
        assert_eq!(v.listeners.len(), 1);
        assert_eq!(v.listeners[0].port, 443);
        let refs: Vec<String> = v.listeners[0]
            .certificate_refs
            .iter()
            .map(|r| r.shown_from("web"))
            .collect();
        assert_eq!(refs, vec!["a-tls", "certs/b-tls"]);
        assert_eq!(&*v.issuer.unwrap().name, "le");
    }

    #[test]
    fn events_about_other_kinds_are_dropped() {
        let e = json!({"metadata": {"name": "e1", "namespace": "acme"}, "involvedObject": {"kind": "Pod", "name": "x"}});
        assert!(EventView::project(&meta(&e), &e).is_none());
        let e = json!({"metadata": {"name": "e2", "namespace": "acme"}, "involvedObject": {"kind": "Challenge", "name": "c"},
                       "type": "Warning", "reason": "Failed", "message": "m", "count": 3, "lastTimestamp": "2026-01-01T00:00:00Z"});
        let v = EventView::project(&meta(&e), &e).unwrap();
        assert_eq!((v.count, v.reason.as_str()), (3, "Failed"));
    }
}

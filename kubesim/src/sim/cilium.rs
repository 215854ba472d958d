//! Cilium's ingress controller: in shared load-balancer mode the `kube-system/cilium-ingress`
//! load balancer's addresses are copied into the Ingress's status; in dedicated mode (the
//! default) each Ingress gets its own address; HTTPS enforcement (cluster-wide or per
//! Ingress) decides whether HTTP-01 challenges can be served.

use serde_json::{json, Value};

use super::{go_bool, s, Api};

const MANAGER: &str = "cilium-operator-generic";
/// Cilium's IngressClass controller string.
pub const CONTROLLER: &str = "cilium.io/ingress-controller";

/// `ingress.cilium.io/force-https` as Cilium's operator reads it (cilium/cilium
/// `operator/pkg/ingress/annotations/annotations.go`, `GetAnnotationForceHTTPSEnabled`):
/// `enabled`, `disabled`, or a Go bool; anything else is as if the annotation were absent.
fn force_https(v: &str) -> Option<bool> {
    if v == "enabled" {
        return Some(true);
    }
    if v == "disabled" {
        return Some(false);
    }
    go_bool(v)
}

/// Whether an Ingress is served by Cilium (its class, or Cilium being the default class).
pub(crate) fn is_cilium(api: &Api<'_>, ing: &Value) -> bool {
    let class = s(ing, "/spec/ingressClassName")
        .or_else(|| s(ing, "/metadata/annotations/kubernetes.io~1ingress.class"));
    let classes = api.list("networking.k8s.io", "ingressclasses");
    match class {
        Some(c) => {
            c == "cilium"
                || classes.iter().any(|ic| {
                    s(ic, "/metadata/name") == Some(c)
                        && s(ic, "/spec/controller") == Some(CONTROLLER)
                })
        }
        None => classes.iter().any(|ic| {
            s(ic, "/spec/controller") == Some(CONTROLLER)
                && s(
                    ic,
                    "/metadata/annotations/ingressclass.kubernetes.io~1is-default-class",
                ) == Some("true")
        }),
    }
}

/// Whether plain HTTP to this Ingress's TLS hosts is redirected to HTTPS.
pub(crate) fn enforces_https(api: &Api<'_>, ing: &Value) -> bool {
    if !is_cilium(api, ing) {
        return false;
    }
    if let Some(v) =
        s(ing, "/metadata/annotations/ingress.cilium.io~1force-https").and_then(force_https)
    {
        return v;
    }
    let config = api.get("", "configmaps", Some("kube-system"), "cilium-config");
    config
        .as_ref()
        .and_then(|c| s(c, "/data/enforce-ingress-https"))
        .and_then(go_bool)
        .unwrap_or(true)
}

/// Whether Cilium gives an Ingress its own load balancer (cilium/cilium
/// `operator/pkg/ingress/ingress_reconcile.go` isEffectiveLoadbalancerModeDedicated): the
/// `ingress.cilium.io/loadbalancer-mode` annotation (or, when it is absent, its older alias
/// `io.cilium.ingress/loadbalancer-mode`: `operator/pkg/ingress/annotations/annotations.go`)
/// when it is `dedicated` or `shared`, else cilium-config's `ingress-default-lb-mode`, else
/// dedicated (the operator's default).
pub(crate) fn dedicated(api: &Api<'_>, ing: &Value) -> bool {
    match lb_mode_annotation(ing) {
        Some("dedicated") => true,
        Some("shared") => false,
        _ => {
            let config = api.get("", "configmaps", Some("kube-system"), "cilium-config");
            config
                .as_ref()
                .and_then(|c| s(c, "/data/ingress-default-lb-mode"))
                != Some("shared")
        }
    }
}

/// Whether the ingress listeners accept only PROXY-protocol connections
/// (`enable-ingress-proxy-protocol`): in-cluster requests such as cert-manager's self-check
/// then fail (cert-manager#466).
pub(crate) fn proxy_protocol(api: &Api<'_>) -> bool {
    config_flag(api, "enable-ingress-proxy-protocol")
}

/// Whether Cilium's Gateway API listeners accept only PROXY protocol: a flag of its own,
/// `enable-gateway-api-proxy-protocol` (default false), apart from the Ingress one
/// (cilium/cilium `operator/pkg/gateway-api/cell.go`, `ListenerConfig.UseProxyProtocol`).
pub(crate) fn gateway_proxy_protocol(api: &Api<'_>) -> bool {
    config_flag(api, "enable-gateway-api-proxy-protocol")
}

fn config_flag(api: &Api<'_>, key: &str) -> bool {
    let config = api.get("", "configmaps", Some("kube-system"), "cilium-config");
    config
        .as_ref()
        .and_then(|c| s(c, &format!("/data/{key}")))
        .and_then(go_bool)
        .unwrap_or(false)
}

/// Whether plain HTTP to `host` is redirected: Cilium merges every Ingress of a host into
/// one virtual host, so one enforcing Ingress redirects them all (cilium/cilium#35347).
pub(crate) fn host_redirects(api: &Api<'_>, host: &str) -> bool {
    api.list("networking.k8s.io", "ingresses")
        .iter()
        .any(|ing| {
            tls_hosts_of(ing)
                .iter()
                .any(|h| h.eq_ignore_ascii_case(host))
                && enforces_https(api, ing)
        })
}

/// One path of an Ingress rule as Envoy matches it, as Cilium translates its type
/// (`operator/pkg/model/ingestion/ingress.go`): `Exact` equal to the request's path; `Prefix`
/// a whole-segment prefix of it (`/` matches every path); `ImplementationSpecific` a regular
/// expression the whole path must match (Envoy's `safe_regex`; one that does not compile
/// matches nothing here). A rule without `http` has no route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RoutePath {
    path: String,
    kind: PathKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PathKind {
    Exact,
    Prefix,
    Regex,
}

impl RoutePath {
    /// The paths of `host`'s rules in one Ingress.
    pub(crate) fn of_host(ing: &Value, host: &str) -> Vec<RoutePath> {
        ing.pointer("/spec/rules")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|r| {
                r.get("host")
                    .and_then(Value::as_str)
                    .is_some_and(|h| h.eq_ignore_ascii_case(host))
            })
            .flat_map(|r| {
                r.pointer("/http/paths")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default()
            })
            .map(|p| RoutePath {
                path: p
                    .get("path")
                    .and_then(Value::as_str)
                    .unwrap_or("/")
                    .to_string(),
                kind: match p.get("pathType").and_then(Value::as_str) {
                    Some("Exact") => PathKind::Exact,
                    Some("ImplementationSpecific") => PathKind::Regex,
                    _ => PathKind::Prefix,
                },
            })
            .collect()
    }

    /// Every path under `path` (a catch-all for `/`).
    pub(crate) fn prefix(path: &str) -> RoutePath {
        RoutePath {
            path: path.to_string(),
            kind: PathKind::Prefix,
        }
    }

    pub(crate) fn matches(&self, path: &str) -> bool {
        match self.kind {
            PathKind::Exact => self.path == path,
            PathKind::Regex => {
                regex::Regex::new(&format!("^(?:{})$", self.path)).is_ok_and(|re| re.is_match(path))
            }
            PathKind::Prefix => {
                let trimmed = self.path.trim_end_matches('/');
                trimmed.is_empty() || path == trimmed || path.starts_with(&format!("{trimmed}/"))
            }
        }
    }

    /// A solver's path (added to the Ingress in place, or on the solver's own Ingress).
    pub(crate) fn is_solver(&self) -> bool {
        self.solver_token().is_some()
    }

    /// The token of a solver's path.
    pub(crate) fn solver_token(&self) -> Option<&str> {
        self.path.strip_prefix("/.well-known/acme-challenge/")
    }

    pub(crate) fn path(&self) -> &str {
        &self.path
    }
}

fn is_solver_ingress(ing: &Value) -> bool {
    s(ing, "/metadata/name").is_some_and(|n| n.starts_with("cm-acme-http-solver-"))
}

/// Whether an application route of `host` over HTTPS (a path of one of the Ingresses that
/// give it TLS, not a solver's: Cilium's `envoyHTTPSRoutes`) matches `path`. The
/// application then answers the challenge path — usually 200 with its own page.
pub(crate) fn app_route_matches(api: &Api<'_>, host: &str, path: &str) -> bool {
    api.list("networking.k8s.io", "ingresses")
        .iter()
        .filter(|ing| !is_solver_ingress(ing))
        .filter(|ing| {
            tls_hosts_of(ing)
                .iter()
                .any(|h| h.eq_ignore_ascii_case(host))
        })
        .flat_map(|ing| RoutePath::of_host(ing, host))
        .any(|r| !r.is_solver() && r.matches(path))
}

/// Whether plain HTTP to `host`'s `path` is answered with the redirect: Cilium builds the
/// HTTP listener's virtual host of a redirected host from the routes of the Ingresses that
/// serve it over TLS (cilium/cilium `operator/pkg/model/translation/envoy_virtual_host.go`,
/// `envoyHTTPSRoutes`), so a path none of them routes gets Envoy's bare 404 — and a solver
/// route on an Ingress without TLS is not on that virtual host at all.
pub(crate) fn redirect_covers(api: &Api<'_>, host: &str, path: &str) -> bool {
    api.list("networking.k8s.io", "ingresses")
        .iter()
        .filter(|ing| {
            tls_hosts_of(ing)
                .iter()
                .any(|h| h.eq_ignore_ascii_case(host))
        })
        .flat_map(|ing| RoutePath::of_host(ing, host))
        .any(|r| r.matches(path))
}

/// Whether the Secret the listener would serve for `host` exists: that of the first TLS
/// entry naming the host, in its Ingress's namespace.
pub(crate) fn tls_secret_exists(api: &Api<'_>, host: &str) -> bool {
    api.list("networking.k8s.io", "ingresses")
        .iter()
        .find_map(|ing| {
            let ns = s(ing, "/metadata/namespace")?;
            ing.pointer("/spec/tls")
                .and_then(Value::as_array)?
                .iter()
                .find(|t| {
                    t.get("hosts")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .any(|h| h.eq_ignore_ascii_case(host))
                })
                .map(|t| (ns.to_string(), s(t, "/secretName").map(str::to_string)))
        })
        .is_some_and(|(ns, secret)| {
            secret.is_some_and(|name| api.get("", "secrets", Some(&ns), &name).is_some())
        })
}

/// The hosts of an Ingress's TLS entries.
pub(crate) fn tls_hosts_of(ing: &Value) -> Vec<String> {
    ing.pointer("/spec/tls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|t| {
            t.get("hosts")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_ascii_lowercase)
        })
        .collect()
}

/// Assigns load-balancer addresses. With `loopback` they are loopback addresses kubesim's
/// [`super::edge`] serves, each with `::1` beside it (the load balancer in front is
/// dual-stack, whatever the cluster's own families are).
pub(super) fn reconcile(api: &Api<'_>, loopback: bool) {
    let Some(lb) = api.get("", "services", Some("kube-system"), "cilium-ingress") else {
        return;
    };
    let mut addresses: Vec<Value> = lb
        .pointer("/status/loadBalancer/ingress")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if addresses.is_empty() {
        // LB IPAM: a stable address per cluster, and IPv6 when the Service is dual-stack.
        let n = super::hash(0, &[&api.cluster.name]) % 200 + 10;
        if loopback {
            addresses.push(json!({"ip": format!("127.1.{n}.1")}));
            addresses.push(json!({"ip": "::1"}));
        } else {
            addresses.push(json!({"ip": format!("192.0.2.{n}")}));
        }
        let families: Vec<&str> = lb
            .pointer("/spec/ipFamilies")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if families.contains(&"IPv6") && !loopback {
            addresses.push(json!({"ip": format!("2001:db8::{n:x}")}));
        }
        api.patch_status(
            "",
            "services",
            Some("kube-system"),
            "cilium-ingress",
            &json!({"status": {"loadBalancer": {"ingress": addresses}}}),
            MANAGER,
        );
    }
    for ing in api.list("networking.k8s.io", "ingresses") {
        let has = ing
            .pointer("/status/loadBalancer/ingress")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
        if has || !is_cilium(api, &ing) {
            continue;
        }
        let ns = s(&ing, "/metadata/namespace");
        let name = s(&ing, "/metadata/name").unwrap_or_default();
        // Dedicated: its own Service and address; shared: the shared one's.
        let own = dedicated(api, &ing).then(|| {
            let h = super::hash(0, &[&api.cluster.name, ns.unwrap_or_default(), name]);
            if loopback {
                let (a, b) = ((h / 250) % 250 + 1, h % 250 + 1);
                json!([{"ip": format!("127.2.{a}.{b}")}, {"ip": "::1"}])
            } else {
                let n = h % 250 + 2;
                json!([{"ip": format!("198.51.100.{n}")}])
            }
        });
        api.patch_status(
            "networking.k8s.io",
            "ingresses",
            ns,
            name,
            &json!({"status": {"loadBalancer": {"ingress": own.unwrap_or_else(|| json!(addresses))}}}),
            MANAGER,
        );
    }
}

/// The Ingress's load-balancer mode annotation: the first present of the current key and
/// its alias (`annotation.Get` takes the first key that exists, whatever its value).
fn lb_mode_annotation(ing: &Value) -> Option<&str> {
    let annotations = ing.pointer("/metadata/annotations")?;
    [
        "ingress.cilium.io/loadbalancer-mode",
        "io.cilium.ingress/loadbalancer-mode",
    ]
    .iter()
    .find_map(|key| annotations.get(*key))
    .and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_types_match_as_ciliums_envoy_routes_them() {
        let ing = serde_json::json!({"spec": {"rules": [{"host": "a.example", "http": {"paths": [
            {"path": "/", "pathType": "ImplementationSpecific"},
            {"path": "/api/v[0-9]+", "pathType": "ImplementationSpecific"},
            {"path": "/shop/", "pathType": "Prefix"},
            {"path": "/exact", "pathType": "Exact"},
            {"path": "/bad(", "pathType": "ImplementationSpecific"},
        ]}}]}});
        let routes = RoutePath::of_host(&ing, "A.example");
        let matched = |path: &str| routes.iter().filter(|r| r.matches(path)).count();
        // A regular expression the whole path must match: `/` is `/` alone, not a prefix.
        assert_eq!(matched("/"), 1);
        assert_eq!(matched("/.well-known/acme-challenge/t"), 0);
        assert_eq!(matched("/api/v12"), 1);
        assert_eq!(matched("/api/v12/x"), 0);
        // Prefixes by whole segments; exact paths alone.
        assert_eq!(matched("/shop"), 1);
        assert_eq!(matched("/shop/cart"), 1);
        assert_eq!(matched("/shopping"), 0);
        assert_eq!(matched("/exact"), 1);
        assert_eq!(matched("/exact/x"), 0);
        // A pattern that does not compile matches nothing.
        assert_eq!(matched("/bad("), 0);
    }

    #[test]
    fn the_load_balancer_mode_has_an_older_alias() {
        let ing = |a: Value| serde_json::json!({"metadata": {"annotations": a}});
        let alias = ing(serde_json::json!({"io.cilium.ingress/loadbalancer-mode": "shared"}));
        assert_eq!(lb_mode_annotation(&alias), Some("shared"));
        let both = ing(serde_json::json!({
            "ingress.cilium.io/loadbalancer-mode": "bogus",
            "io.cilium.ingress/loadbalancer-mode": "shared",
        }));
        assert_eq!(
            lb_mode_annotation(&both),
            Some("bogus"),
            "the first present key"
        );
        assert_eq!(
            lb_mode_annotation(&serde_json::json!({"metadata": {}})),
            None
        );
    }

    #[test]
    fn force_https_reads_as_ciliums_operator_reads_it() {
        assert_eq!(force_https("enabled"), Some(true));
        assert_eq!(force_https("disabled"), Some(false));
        assert_eq!(force_https("TRUE"), Some(true));
        assert_eq!(force_https("f"), Some(false));
        for ignored in ["yes", "no", "on", "off", "Enabled", " true"] {
            assert_eq!(force_https(ignored), None, "{ignored:?}");
        }
        assert_eq!(go_bool("enabled"), None, "not a bool flag value");
    }
}

//! Cilium's Gateway listeners on the edge. Each Gateway of Cilium's class with loopback
//! addresses serves, per TLS listener its controller accepted (one with an invalid reference
//! is left out of Envoy, so its name gets no chain and the handshake is reset), the
//! certificate of the listener's first `certificateRefs` Secret for the listener's hostname
//! (cilium/cilium `operator/pkg/model/translation/gateway-api/translator.go`, one filter
//! chain per listener matched by its hostname).
//!
//! On port 80, the HTTPRoutes attached to the Gateway that answer the host: a solver route
//! (cert-manager's `cm-acme-http-solver-…`) answers its token's exact path with the key; a
//! `RequestRedirect` rule of another route answers the rest of what it matches with a
//! redirect; anything else 404. An `Exact` path wins over a prefix, so the solver's path is
//! answered even behind a catch-all redirect (Gateway API `apis/v1/httproute_types.go`,
//! match precedence).

use std::collections::HashMap;
use std::net::IpAddr;

use serde_json::Value;

use super::super::{s, Api};

const GROUP: &str = "gateway.networking.k8s.io";

/// One TLS host of a Gateway on its addresses, and how its port-80 listener answers.
pub(super) struct GatewayHost {
    pub addresses: Vec<IpAddr>,
    pub host: String,
    /// The listener's first certificate reference (namespace, name).
    pub secret: (String, String),
    /// ACME paths a solver route serves: path → key authorization.
    pub solver: HashMap<String, String>,
    /// Whether a route's `RequestRedirect` answers the host's other paths on port 80.
    pub redirect: bool,
}

/// Every accepted TLS listener with a hostname of every Cilium Gateway with a loopback
/// address; `keys` maps a challenge token to its key authorization.
pub(super) fn hosts(api: &Api<'_>, keys: &HashMap<String, String>) -> Vec<GatewayHost> {
    if !api.serves(GROUP, "gateways") {
        return Vec::new();
    }
    let routes = api.list(GROUP, "httproutes");
    let mut out = Vec::new();
    for gw in api.list(GROUP, "gateways") {
        let addresses: Vec<IpAddr> = gw
            .pointer("/status/addresses")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|a| s(a, "/value")?.parse().ok())
            .filter(|ip: &IpAddr| ip.is_loopback())
            .collect();
        if addresses.is_empty() {
            continue;
        }
        let gw_ns = s(&gw, "/metadata/namespace").unwrap_or_default();
        let gw_name = s(&gw, "/metadata/name").unwrap_or_default();
        let attached: Vec<&Value> = routes
            .iter()
            .filter(|r| attaches(r, gw_ns, gw_name))
            .collect();
        for l in gw
            .pointer("/spec/listeners")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let (Some(host), Some(first)) = (
                s(l, "/hostname").filter(|h| !h.starts_with('*')),
                l.pointer("/tls/certificateRefs/0"),
            ) else {
                continue;
            };
            if !accepted(&gw, s(l, "/name").unwrap_or_default()) {
                continue;
            }
            let host = host.to_ascii_lowercase();
            let answering: Vec<&&Value> = attached.iter().filter(|r| answers(r, &host)).collect();
            let solver = answering
                .iter()
                .filter(|r| is_solver(r))
                .flat_map(|r| exact_paths(r))
                .filter_map(|path| {
                    let token = path.strip_prefix("/.well-known/acme-challenge/")?;
                    Some((path.clone(), keys.get(token)?.clone()))
                })
                .collect();
            let redirect = answering
                .iter()
                .filter(|r| !is_solver(r))
                .any(|r| redirects(r));
            out.push(GatewayHost {
                addresses: addresses.clone(),
                host,
                secret: (
                    s(first, "/namespace").unwrap_or(gw_ns).to_string(),
                    s(first, "/name").unwrap_or_default().to_string(),
                ),
                solver,
                redirect,
            });
        }
    }
    out
}

/// Whether the controller accepted listener `name` (its status says `Accepted=True`).
fn accepted(gw: &Value, name: &str) -> bool {
    gw.pointer("/status/listeners")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|l| s(l, "/name") == Some(name))
        .flat_map(|l| {
            l.get("conditions")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .any(|c| s(&c, "/type") == Some("Accepted") && s(&c, "/status") == Some("True"))
}

/// Whether route `r` names Gateway `ns/name` among its parents (its namespace by default).
fn attaches(r: &Value, ns: &str, name: &str) -> bool {
    let route_ns = s(r, "/metadata/namespace").unwrap_or_default();
    r.pointer("/spec/parentRefs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|p| {
            s(p, "/kind").unwrap_or("Gateway") == "Gateway"
                && s(p, "/name") == Some(name)
                && s(p, "/namespace").unwrap_or(route_ns) == ns
        })
}

/// Whether route `r` answers `host`: no hostnames, the same name, or a `*.` suffix.
fn answers(r: &Value, host: &str) -> bool {
    let names: Vec<&str> = r
        .pointer("/spec/hostnames")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    names.is_empty()
        || names
            .iter()
            .any(|n| super::super::gateway::hostname_admits(n, host))
}

fn is_solver(r: &Value) -> bool {
    s(r, "/metadata/name").is_some_and(|n| n.starts_with("cm-acme-http-solver-"))
}

/// The `Exact` paths route `r` matches.
fn exact_paths(r: &Value) -> Vec<String> {
    matches_of(r)
        .filter(|m| s(m, "/path/type") == Some("Exact"))
        .filter_map(|m| s(m, "/path/value").map(String::from))
        .collect()
}

fn matches_of(r: &Value) -> impl Iterator<Item = &Value> {
    r.pointer("/spec/rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|rule| {
            rule.get("matches")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
}

/// Whether a rule of route `r` with a `RequestRedirect` filter matches every path (no
/// matches, or a `PathPrefix` of `/`): the redirect catches the challenge path.
fn redirects(r: &Value) -> bool {
    r.pointer("/spec/rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|rule| {
            rule.get("filters")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|f| s(f, "/type") == Some("RequestRedirect"))
        })
        .any(|rule| {
            let matches: Vec<&Value> = rule
                .get("matches")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .collect();
            matches.is_empty()
                || matches.iter().any(|m| {
                    m.get("path").is_none()
                        || (s(m, "/path/type").unwrap_or("PathPrefix") == "PathPrefix"
                            && s(m, "/path/value").unwrap_or("/") == "/")
                })
        })
}

//! Cilium's Gateway API controller, as far as a Gateway's status goes: each listener's
//! `Accepted`, `ResolvedRefs` and `Programmed` conditions from its TLS certificate
//! references, and the Gateway's own `Accepted` and `Programmed`
//! (cilium/cilium `operator/pkg/gateway-api/gateway_reconcile.go`: `validateListener`,
//! `setListenerStatus`, `setAddressStatus`; `operator/pkg/gateway-api/helpers/referencegrants.go`).
//!
//! A certificate reference must name a Secret (group `""`, kind `Secret`), be permitted —
//! the Gateway's own namespace, or a ReferenceGrant in the Secret's namespace from
//! `Gateway` in the Gateway's namespace to that Secret (or every Secret) — and the Secret
//! must hold PEM in `tls.crt` and `tls.key`. The first reference that fails makes the
//! listener invalid: `ResolvedRefs=False` (`RefNotPermitted`, or `InvalidCertificateRef`),
//! `Accepted=False` (`Invalid`); a listener is `Programmed` only when accepted and the
//! Gateway has an address. With its edge (the demo, Lookout's tests) kubesim gives each
//! Cilium Gateway a loopback address the edge serves; without it, `status.addresses` is
//! kept as written, as on a cluster with no load-balancer provider.

use base64::Engine;
use serde_json::{json, Value};

use super::letsencrypt::rfc3339;
use super::{s, Api};

const GROUP: &str = "gateway.networking.k8s.io";
const MANAGER: &str = "cilium-operator-generic";
/// Cilium's GatewayClass controller name.
pub const CONTROLLER: &str = "io.cilium/gateway-controller";

/// One pass over every Gateway of a Cilium GatewayClass.
pub(crate) fn reconcile(api: &Api<'_>, loopback: bool) {
    if !api.serves(GROUP, "gateways") {
        return;
    }
    let classes = api.list(GROUP, "gatewayclasses");
    let grants = api.list(GROUP, "referencegrants");
    for gw in api.list(GROUP, "gateways") {
        let class = s(&gw, "/spec/gatewayClassName").unwrap_or_default();
        let cilium = class == "cilium"
            || classes.iter().any(|c| {
                s(c, "/metadata/name") == Some(class)
                    && s(c, "/spec/controllerName") == Some(CONTROLLER)
            });
        if !cilium {
            continue;
        }
        let status = status_of(api, &gw, &grants, loopback);
        if same_conditions(gw.get("status"), &status) {
            continue;
        }
        let (ns, name) = (
            s(&gw, "/metadata/namespace"),
            s(&gw, "/metadata/name").unwrap_or_default(),
        );
        api.patch_status(
            GROUP,
            "gateways",
            ns,
            name,
            &json!({"status": status}),
            MANAGER,
        );
    }
}

/// Whether a listener's or route's hostname admits `host`: the same name, or for `*.suffix`
/// any name of one or more labels before it, without regard to case (Gateway API
/// `apis/v1/shared_types.go` `Hostname`).
pub(crate) fn hostname_admits(pattern: &str, host: &str) -> bool {
    match pattern.strip_prefix('*') {
        Some(suffix) => {
            host.len() > suffix.len()
                && host.as_bytes()[host.len() - suffix.len()..]
                    .eq_ignore_ascii_case(suffix.as_bytes())
        }
        None => pattern.eq_ignore_ascii_case(host),
    }
}

/// The address the load balancer in front of the Gateway's Service gets, where kubesim
/// serves its listeners (a loopback address of its own, and `::1`): Cilium makes the
/// Service `cilium-gateway-<name>` of type LoadBalancer and copies its load-balancer
/// addresses into `status.addresses` (`setAddressStatus`). kubesim writes the address
/// directly and makes no Service.
fn assigned(api: &Api<'_>, gw: &Value) -> Value {
    let h = super::hash(
        0,
        &[
            &api.cluster.name,
            "gateway",
            s(gw, "/metadata/namespace").unwrap_or_default(),
            s(gw, "/metadata/name").unwrap_or_default(),
        ],
    );
    let (a, b) = ((h / 250) % 250 + 1, h % 250 + 1);
    json!([{"type": "IPAddress", "value": format!("127.3.{a}.{b}")},
           {"type": "IPAddress", "value": "::1"}])
}

/// Why a listener is invalid, if it is: (`ResolvedRefs` reason, the detail Cilium adds to
/// `Accepted`'s message).
fn invalid(
    api: &Api<'_>,
    gw: &Value,
    listener: &Value,
    grants: &[Value],
) -> Option<(&'static str, String)> {
    let gw_ns = s(gw, "/metadata/namespace").unwrap_or_default();
    for r in listener
        .pointer("/tls/certificateRefs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let group = s(r, "/group").unwrap_or_default();
        let kind = s(r, "/kind").unwrap_or("Secret");
        if !group.is_empty() || kind != "Secret" {
            return Some((
                "InvalidCertificateRef",
                "Invalid CertificateRef, must be a Secret.".into(),
            ));
        }
        let name = s(r, "/name").unwrap_or_default();
        let ns = s(r, "/namespace").unwrap_or(gw_ns);
        if ns != gw_ns && !granted(grants, gw_ns, ns, name) {
            return Some((
                "RefNotPermitted",
                "Invalid CertificateRef, not permitted.".into(),
            ));
        }
        let secret = api.get("", "secrets", Some(ns), name);
        let pem = |key: &str| {
            secret
                .as_ref()
                .and_then(|s| s.pointer(&format!("/data/{key}")))
                .and_then(Value::as_str)
                .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
                .is_some_and(|b| String::from_utf8_lossy(&b).contains("-----BEGIN "))
        };
        if secret.is_none() {
            return Some((
                "InvalidCertificateRef",
                format!("Invalid CertificateRef, secrets \"{name}\" not found"),
            ));
        }
        if !pem("tls.crt") {
            return Some((
                "InvalidCertificateRef",
                "Invalid CertificateRef, PEM format error in TLS Certificate".into(),
            ));
        }
        if !pem("tls.key") {
            return Some((
                "InvalidCertificateRef",
                "Invalid CertificateRef, PEM format error in TLS Key".into(),
            ));
        }
    }
    None
}

/// Whether a ReferenceGrant in `to_ns` lets Gateways of `from_ns` use Secret `name`.
fn granted(grants: &[Value], from_ns: &str, to_ns: &str, name: &str) -> bool {
    grants
        .iter()
        .filter(|g| s(g, "/metadata/namespace") == Some(to_ns))
        .any(|g| {
            let from = g
                .pointer("/spec/from")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|f| {
                    s(f, "/group") == Some(GROUP)
                        && s(f, "/kind") == Some("Gateway")
                        && s(f, "/namespace") == Some(from_ns)
                });
            let to = g
                .pointer("/spec/to")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|t| {
                    s(t, "/group").unwrap_or_default().is_empty()
                        && s(t, "/kind") == Some("Secret")
                        && s(t, "/name").is_none_or(|n| n == name)
                });
            from && to
        })
}

fn condition(
    kind: &str,
    ok: bool,
    reason: &str,
    message: &str,
    generation: &Value,
    now: &str,
) -> Value {
    json!({"type": kind, "status": if ok { "True" } else { "False" }, "reason": reason,
           "message": message, "observedGeneration": generation, "lastTransitionTime": now})
}

/// The status Cilium writes for `gw` now.
fn status_of(api: &Api<'_>, gw: &Value, grants: &[Value], loopback: bool) -> Value {
    let now = rfc3339(api.now);
    let generation = gw
        .pointer("/metadata/generation")
        .cloned()
        .unwrap_or(json!(1));
    let mut addresses = gw
        .pointer("/status/addresses")
        .cloned()
        .unwrap_or(json!([]));
    if loopback && addresses.as_array().is_none_or(|a| a.is_empty()) {
        addresses = assigned(api, gw);
    }
    let addressed = addresses.as_array().is_some_and(|a| !a.is_empty());
    let mut accepted_any = false;
    let listeners: Vec<Value> = gw
        .pointer("/spec/listeners")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|l| {
            let c = |kind, ok, reason, message: &str| condition(kind, ok, reason, message, &generation, &now);
            let conditions = match invalid(api, gw, l, grants) {
                Some((reason, detail)) => vec![
                    c("Accepted", false, "Invalid", &format!("Listener not valid. {detail}")),
                    c("Programmed", false, "Pending", "Address not ready yet"),
                    c("ResolvedRefs", false, reason, if reason == "RefNotPermitted" { "CertificateRef is not permitted" } else { "Invalid CertificateRef" }),
                ],
                None => {
                    accepted_any = true;
                    vec![
                        c("Accepted", true, "Accepted", "Listener Accepted"),
                        if addressed {
                            c("Programmed", true, "Programmed", "Listener Programmed")
                        } else {
                            c("Programmed", false, "Pending", "Address not ready yet")
                        },
                        c("ResolvedRefs", true, "ResolvedRefs", "Resolved Refs"),
                    ]
                }
            };
            json!({"name": l.get("name").cloned().unwrap_or(Value::Null), "attachedRoutes": 0,
                   "supportedKinds": [{"group": GROUP, "kind": "HTTPRoute"}], "conditions": conditions})
        })
        .collect();
    let c =
        |kind, ok, reason, message: &str| condition(kind, ok, reason, message, &generation, &now);
    let conditions = if accepted_any {
        vec![
            c(
                "Accepted",
                true,
                "Accepted",
                "Gateway successfully scheduled",
            ),
            if addressed {
                c("Programmed", true, "Programmed", "Gateway Programmed")
            } else {
                c(
                    "Programmed",
                    false,
                    "AddressNotAssigned",
                    "Gateway waiting for address",
                )
            },
        ]
    } else {
        vec![
            c(
                "Accepted",
                false,
                "ListenersNotValid",
                "No Accepted Listeners",
            ),
            c(
                "Programmed",
                false,
                "ListenersNotValid",
                "No Accepted Listeners",
            ),
        ]
    };
    json!({"addresses": addresses, "conditions": conditions, "listeners": listeners})
}

/// Whether `old` already says what `new` says (times aside): nothing to write.
fn same_conditions(old: Option<&Value>, new: &Value) -> bool {
    let strip = |v: &Value| -> Value {
        let mut v = v.clone();
        let drop_times = |cs: &mut Value| {
            for c in cs.as_array_mut().into_iter().flatten() {
                if let Some(o) = c.as_object_mut() {
                    o.remove("lastTransitionTime");
                }
            }
        };
        drop_times(&mut v["conditions"]);
        for l in v["listeners"].as_array_mut().into_iter().flatten() {
            drop_times(&mut l["conditions"]);
        }
        v
    };
    old.is_some_and(|o| o.get("conditions").is_some() && strip(o) == strip(new))
}

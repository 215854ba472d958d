//! cert-manager's gateway-shim: one Certificate per Secret the TLS listeners of an annotated
//! Gateway reference, named after it and owned by the Gateway, its dnsNames the listeners'
//! hostnames (cert-manager `pkg/controller/certificate-shim/sync.go`:
//! `handleGatewayAPIListeners`, `validateGatewayListenerBlock`, `splitHosts`,
//! `setIssuerSpecificConfig`; `pkg/controller/certificate-shim/gateways/controller.go`).
//!
//! Only `cert-manager.io/issuer` or `cert-manager.io/cluster-issuer` make it sync a Gateway
//! (`kubernetes.io/tls-acme` is for Ingresses alone). A listener counts when its protocol is
//! `HTTPS` or `TLS`, its TLS mode is not `Passthrough` and it is not named in
//! `cert-manager.io/ignore-tls-listeners`; one without a hostname, TLS, certificateRefs or
//! mode `Terminate`, or whose reference names another group, kind or namespace, is skipped
//! with a Warning `BadConfig` ("Skipped a listener block: …", apimachinery's field errors).
//! Each Certificate carries `acme.cert-manager.io/http01-parentrefkind: Gateway` and
//! `acme.cert-manager.io/http01-parentrefname: <gateway>`, which its Orders pass on to the
//! HTTP-01 solver's HTTPRoute.

use serde_json::{json, Value};

use super::shim::{
    bad_config, certificate_spec_from_annotations, issuer_ref, sync_certificates, DefaultIssuer,
    Shimmed,
};
use super::{s, Api};

const GROUP: &str = "gateway.networking.k8s.io";

/// Why gateway-shim skips listener `i`, in apimachinery's words (several joined as `[a, b]`);
/// None when it is usable.
fn invalid_listener(i: usize, l: &Value, namespace: &str) -> Option<String> {
    let path = format!("spec.listeners[{i}]");
    let mut errors = Vec::new();
    if s(l, "/hostname").is_none_or(str::is_empty) {
        errors.push(format!(
            "{path}.hostname: Required value: the hostname cannot be empty"
        ));
    }
    let Some(tls) = l.get("tls").filter(|t| !t.is_null()) else {
        errors.push(format!(
            "{path}.tls: Required value: the TLS block cannot be empty"
        ));
        return Some(joined(errors));
    };
    let refs = tls
        .get("certificateRefs")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if refs.is_empty() {
        errors.push(format!(
            "{path}.tls.certificateRef: Required value: listener has no certificateRefs"
        ));
    }
    for (j, r) in refs.iter().enumerate() {
        let at = format!("{path}.tls.certificateRef[{j}]");
        let group = s(r, "/group").unwrap_or_default();
        if !["", "core"].contains(&group) {
            errors.push(format!(
                "{at}.group: Unsupported value: {group:?}: supported values: \"core\", \"\""
            ));
        }
        let kind = s(r, "/kind").unwrap_or_default();
        if !["", "Secret"].contains(&kind) {
            errors.push(format!(
                "{at}.kind: Unsupported value: {kind:?}: supported values: \"Secret\", \"\""
            ));
        }
        if let Some(other) = s(r, "/namespace").filter(|n| *n != namespace) {
            errors.push(format!("{at}.namespace: Invalid value: {other:?}: cross-namespace secret references are not allowed in listeners"));
        }
    }
    match s(tls, "/mode") {
        None => errors.push(format!(
            "{path}.tls.mode: Required value: the mode field is required"
        )),
        Some("Terminate") => {}
        Some(mode) => errors.push(format!(
            "{path}.tls.mode: Unsupported value: {mode:?}: supported values: \"Terminate\""
        )),
    }
    (!errors.is_empty()).then(|| joined(errors))
}

fn joined(mut errors: Vec<String>) -> String {
    if errors.len() == 1 {
        errors.pop().unwrap_or_default()
    } else {
        format!("[{}]", errors.join(", "))
    }
}

/// The Secrets a Gateway's listeners want, each with its de-duplicated hostnames in the
/// order first seen; a skipped listener's `BadConfig` recorded.
fn wanted(api: &Api<'_>, gw: &Value) -> Vec<(String, Value)> {
    let ns = s(gw, "/metadata/namespace").unwrap_or_default();
    let ignored: Vec<&str> = s(
        gw,
        "/metadata/annotations/cert-manager.io~1ignore-tls-listeners",
    )
    .map(|v| v.split(',').map(str::trim).collect())
    .unwrap_or_default();
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for (i, l) in gw
        .pointer("/spec/listeners")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        if !matches!(s(l, "/protocol"), Some("HTTPS" | "TLS"))
            || s(l, "/tls/mode") == Some("Passthrough")
            || s(l, "/name").is_some_and(|n| ignored.contains(&n))
        {
            continue;
        }
        if let Some(why) = invalid_listener(i, l, ns) {
            bad_config(
                api,
                gw,
                "Gateway",
                &format!("Skipped a listener block: {why}"),
            );
            continue;
        }
        let host = s(l, "/hostname").unwrap_or_default().to_string();
        for r in l
            .pointer("/tls/certificateRefs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(name) = s(r, "/name") else { continue };
            match out.iter_mut().find(|(n, _)| n == name) {
                Some((_, hosts)) if !hosts.contains(&host) => hosts.push(host.clone()),
                Some(_) => {}
                None => out.push((name.to_string(), vec![host.clone()])),
            }
        }
    }
    out.into_iter().map(|(n, h)| (n, json!(h))).collect()
}

/// One pass over every Gateway.
pub(super) fn reconcile(api: &Api<'_>, default: Option<&DefaultIssuer>, certificates: &[Value]) {
    if !api.serves(GROUP, "gateways") {
        return;
    }
    for gw in api.list(GROUP, "gateways") {
        let annotated = ["issuer", "cluster-issuer"]
            .iter()
            .any(|k| s(&gw, &format!("/metadata/annotations/cert-manager.io~1{k}")).is_some());
        if !annotated {
            continue;
        }
        let issuer = match issuer_ref(&gw, default) {
            None => continue,
            Some(Ok(issuer)) => issuer,
            Some(Err(why)) => {
                bad_config(api, &gw, "Gateway", &why);
                continue;
            }
        };
        let Ok(extra_spec) = certificate_spec_from_annotations(&gw) else {
            continue;
        };
        let wanted = wanted(api, &gw);
        let name = s(&gw, "/metadata/name").unwrap_or_default();
        let shimmed = Shimmed {
            obj: &gw,
            kind: "Gateway",
            api_version: "gateway.networking.k8s.io/v1",
            issuer,
            extra_spec,
            annotations: json!({"acme.cert-manager.io/http01-parentrefkind": "Gateway",
                                "acme.cert-manager.io/http01-parentrefname": name}),
        };
        sync_certificates(api, certificates, &shimmed, &wanted);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listener_gateway_shim_cannot_use_is_told_in_apimachinerys_words() {
        let l = json!({"name": "a", "protocol": "HTTPS", "hostname": "a.example",
                       "tls": {"mode": "Terminate", "certificateRefs": [{"name": "a-tls", "namespace": "certs"}]}});
        assert_eq!(
            invalid_listener(1, &l, "web").as_deref(),
            Some("spec.listeners[1].tls.certificateRef[0].namespace: Invalid value: \"certs\": cross-namespace secret references are not allowed in listeners")
        );
        let l = json!({"name": "a", "protocol": "HTTPS", "tls": {"certificateRefs": [{"name": "a-tls"}]}});
        assert_eq!(
            invalid_listener(0, &l, "web").as_deref(),
            Some("[spec.listeners[0].hostname: Required value: the hostname cannot be empty, spec.listeners[0].tls.mode: Required value: the mode field is required]")
        );
        let fine = json!({"name": "a", "protocol": "HTTPS", "hostname": "a.example",
                          "tls": {"mode": "Terminate", "certificateRefs": [{"name": "a-tls", "namespace": "web", "kind": "Secret", "group": ""}]}});
        assert_eq!(invalid_listener(0, &fine, "web"), None);
    }
}

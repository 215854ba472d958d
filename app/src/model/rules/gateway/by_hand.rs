//! The Gateway rules' remedies written in full, for a person to run by hand or commit to
//! Git: a port-80 listener for a solver route that reaches none, a Gateway solver for a host
//! whose port-80 redirect an Ingress solver cannot pass, the ReferenceGrant a listener's
//! certificate of another namespace needs. Not Lookout actions: a shared
//! Gateway's listeners and an issuer's solvers change what every tenant of them gets — a
//! platform's decision, which the finding leaves to its owner with the exact change.

use crate::model::certificate::{CertificateView, ParentRef};
use crate::model::infra::{GatewayView, HttpListener, ListenerView};
use crate::model::issuer::IssuerView;

/// The listener a parent Gateway of the Challenge's own namespace lacks, as the lines that
/// add it by server-side apply: protocol HTTP, port 80, the host — named as the parentRef's
/// `sectionName` asks, else `acme-http01`. The API server merges a Gateway's listeners by
/// name (`x-kubernetes-list-map-keys: name`), so the others are kept. None when a port-80
/// listener already serves the host (the parentRef misses it: its `sectionName` or `port` is
/// the fix), when the parentRef asks for another port, or when the name is taken by a
/// listener of another kind — applying would change that one.
pub(super) fn port_80_listener(gw: &GatewayView, p: &ParentRef, host: &str) -> Option<String> {
    use crate::model::text::{shell_word, yaml_string};
    if p.port.is_some_and(|port| port != 80)
        || gw
            .http_listeners
            .iter()
            .any(|l| l.port == 80 && l.serves(host))
    {
        return None;
    }
    let name = p.section.as_deref().unwrap_or("acme-http01");
    let taken = gw.listeners.iter().any(|l| *l.name == *name)
        || gw.http_listeners.iter().any(|l| *l.name == *name);
    if taken
        || ![name, host, &gw.namespace, &gw.name]
            .into_iter()
            .all(dns_like)
    {
        return None;
    }
    Some(format!(
        "# Gateway {ns}/{gw_name} gets a port-80 HTTP listener for {host}, where the solver's route attaches; its other listeners stay (listeners merge by name)\n\
         kubectl apply --server-side --field-manager=lookout -f - <<'EOF'\n\
         apiVersion: gateway.networking.k8s.io/v1\n\
         kind: Gateway\n\
         metadata:\n  namespace: {ns_yaml}\n  name: {gw_yaml}\n\
         spec:\n  listeners:\n  - name: {name_yaml}\n    protocol: HTTP\n    port: 80\n    hostname: {host_yaml}\n\
         EOF\n\
         kubectl -n {ns_word} get gateway {gw_word} -o jsonpath='{{.status.listeners[?(@.name==\"{name}\")].conditions}}'",
        ns = gw.namespace,
        gw_name = gw.name,
        ns_yaml = yaml_string(&gw.namespace),
        gw_yaml = yaml_string(&gw.name),
        name_yaml = yaml_string(name),
        host_yaml = yaml_string(host),
        ns_word = shell_word(&gw.namespace),
        gw_word = shell_word(&gw.name),
    ))
}

/// The lines that give `issuer` a solver answering `host` through listener `l` of `gw`:
/// an `http01.gatewayHTTPRoute` solver with `parentRefs` to the listener, selected by
/// `dnsNames: [host]` — the most specific selector, so cert-manager picks it over the
/// Ingress solver for this host alone (cert-manager `pkg/controller/acmeorders/selectors/`, as
/// `solvers::pick` reads it). A JSON patch appends it: `spec.acme.solvers` is an atomic
/// list, which an apply would replace whole. Then the Certificate issues again when it is
/// not ready (its attempt in flight keeps the solver it was given).
pub(super) fn gateway_solver(
    issuer: &IssuerView,
    gw: &GatewayView,
    l: &HttpListener,
    host: &str,
    c: &CertificateView,
) -> Option<String> {
    use crate::model::text::shell_word;
    let issuer_ns = issuer.namespace.as_deref().unwrap_or("");
    let names = [
        host,
        &*l.name,
        &*gw.namespace,
        &*gw.name,
        &*issuer.name,
        &*c.namespace,
        &*c.name,
    ];
    if !names.into_iter().all(dns_like) || !(issuer_ns.is_empty() || dns_like(issuer_ns)) {
        return None;
    }
    let patch = serde_json::json!([{
        "op": "add",
        "path": "/spec/acme/solvers/-",
        "value": {
            "selector": {"dnsNames": [host]},
            "http01": {"gatewayHTTPRoute": {"parentRefs": [{
                "group": "gateway.networking.k8s.io",
                "kind": "Gateway",
                "namespace": &*gw.namespace,
                "name": &*gw.name,
                "sectionName": &*l.name,
                "port": 80,
            }]}},
        },
    }]);
    let target = if issuer_ns.is_empty() {
        format!("clusterissuer {}", issuer.name)
    } else {
        format!("-n {issuer_ns} issuer {}", issuer.name)
    };
    let mut lines = vec![
        format!("# {} {} gets a solver for {host} that attaches its route to Gateway {}/{} (listener {}), where the challenge's exact path wins over the redirect; selected by dnsNames, it is picked over the Ingress solver for this host alone", issuer.kind, issuer.name, gw.namespace, gw.name, l.name),
        format!("kubectl patch {target} --type=json -p {}", shell_word(&patch.to_string())),
    ];
    if !c.is_ready() {
        lines.push("# the attempt under way keeps its Ingress solver: issue again (if it is still issuing, delete its CertificateRequest instead)".into());
        lines.push(format!("cmctl renew -n {} {}", c.namespace, c.name));
    }
    Some(lines.join("\n"))
}

/// Whether `s` is spelt as a Kubernetes name or a host may be (lower-case letters, digits,
/// `-` and `.`): what the API server admits there. Lines for a person to paste into a shell
/// are written only from such words — a cluster's objects may hold anything.
fn dns_like(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
}

/// The ReferenceGrants that let listener `l` of `gw` use its certificates of other
/// namespaces, applied server-side: one in each Secret's namespace, from Gateways of the
/// Gateway's namespace to that Secret by name (Gateway API `apis/v1beta1/referencegrant_types.go`;
/// `v1beta1` is served wherever ReferenceGrants are). None when a name is not one an API
/// server admits.
pub(super) fn reference_grants(gw: &GatewayView, l: &ListenerView) -> Option<String> {
    use crate::model::text::yaml_string;
    let foreign: Vec<_> = l
        .certificate_refs
        .iter()
        .filter(|r| r.namespace != gw.namespace)
        .collect();
    if foreign.is_empty() {
        return None;
    }
    let mut lines = Vec::new();
    for r in foreign {
        let grant = format!("{}-gateways-{}", gw.namespace, r.name);
        if ![&*r.namespace, &*r.name, &*gw.namespace, &*grant]
            .into_iter()
            .all(dns_like)
        {
            return None;
        }
        lines.push(format!(
            "# namespace {ns} lets the Gateways of namespace {from} use Secret {name}\n\
             kubectl apply --server-side --field-manager=lookout -f - <<'EOF'\n\
             apiVersion: gateway.networking.k8s.io/v1beta1\n\
             kind: ReferenceGrant\n\
             metadata:\n  namespace: {ns_yaml}\n  name: {grant_yaml}\n\
             spec:\n  from:\n  - group: gateway.networking.k8s.io\n    kind: Gateway\n    namespace: {from_yaml}\n\
             \x20 to:\n  - group: \"\"\n    kind: Secret\n    name: {name_yaml}\n\
             EOF",
            ns = r.namespace,
            from = gw.namespace,
            name = r.name,
            ns_yaml = yaml_string(&r.namespace),
            grant_yaml = yaml_string(&grant),
            from_yaml = yaml_string(&gw.namespace),
            name_yaml = yaml_string(&r.name),
        ));
    }
    Some(lines.join("\n"))
}

//! How an HTTP-01 Challenge is solved: the issuer's solver picked for a name and the Order's
//! overrides applied, presented as cert-manager's solver presents it and cleaned up after.

use super::*;

/// The solver of a new Challenge: the issuer's solver picked for the name with the Order's
/// ingress overrides applied, as cert-manager's `partialChallengeSpecForAuthorization` and
/// `applyIngressParameterAnnotationOverrides` (`pkg/controller/acmeorders/util.go`) do. It is
/// computed on every pass of the Order (`acme.rs` `challenges` replaces a pending Challenge
/// whose solver changed); annotating the Certificate changes nothing for it (the Order's
/// annotations were copied at creation). Upstream's words when there is none: no solver
/// fits the name (a wildcard with HTTP-01 solvers only), or more than one override.
pub(super) fn solver_for(issuer: &Value, order: &Value, dns: &str) -> Result<Value, String> {
    let mut solver = pick_solver(issuer, order, dns)
        .ok_or("no configured challenge solvers can be used for this challenge")?;
    let annotation = |key: &str| {
        order
            .pointer(&format!(
                "/metadata/annotations/acme.cert-manager.io~1{key}"
            ))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let name = annotation("http01-override-ingress-name");
    let class = annotation("http01-override-ingress-class");
    let class_name = annotation("http01-override-ingress-ingressclassname");
    if [&name, &class, &class_name]
        .iter()
        .filter(|a| a.is_some())
        .count()
        > 1
    {
        return Err(
            "may not specify more than one of: name, class, ingressClassName override annotations"
                .into(),
        );
    }
    if let Some(ingress) = solver
        .pointer_mut("/http01/ingress")
        .and_then(Value::as_object_mut)
    {
        if name.is_some() || class.is_some() || class_name.is_some() {
            ingress.remove("class");
            ingress.remove("ingressClassName");
            ingress.remove("name");
        }
        if let Some(n) = name {
            ingress.insert("name".into(), json!(n));
        }
        if let Some(c) = class {
            ingress.insert("class".into(), json!(c));
        }
        if let Some(c) = class_name {
            ingress.insert("ingressClassName".into(), json!(c));
        }
    }
    gateway_parent_override(&mut solver, order)?;
    Ok(solver)
}

/// The Order's `acme.cert-manager.io/http01-parentref{kind,name,namespace}` annotations
/// (from a Certificate gateway-shim made) on a `gatewayHTTPRoute` solver, as cert-manager's
/// `applyGatewayAPIAnnotationParentRefOverride` (`pkg/controller/acmeorders/util.go`) puts
/// them: an issuer parentRef to the same target (namespace and name, kind unset or equal) is
/// dropped and the annotated one appended, without a sectionName; one of kind and name alone
/// is refused; no parentRefs at all is refused.
fn gateway_parent_override(solver: &mut Value, order: &Value) -> Result<(), String> {
    let Some(route) = solver
        .pointer_mut("/http01/gatewayHTTPRoute")
        .and_then(Value::as_object_mut)
    else {
        return Ok(());
    };
    let annotation = |key: &str| {
        s(
            order,
            &format!("/metadata/annotations/acme.cert-manager.io~1{key}"),
        )
    };
    let (name, kind) = (
        annotation("http01-parentrefname"),
        annotation("http01-parentrefkind"),
    );
    if name.is_some() != kind.is_some() {
        return Err(
            "cannot specify only one of parentRefName, parentRefKind override annotations".into(),
        );
    }
    let mut parents: Vec<Value> = route
        .get("parentRefs")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if let (Some(name), Some(kind)) = (name, kind) {
        let namespace = annotation("http01-parentrefnamespace")
            .filter(|n| !n.is_empty())
            .or_else(|| s(order, "/metadata/namespace"))
            .unwrap_or_default();
        parents.retain(|p| {
            let same = s(p, "/namespace") == Some(namespace)
                && s(p, "/name") == Some(name)
                && s(p, "/kind").is_none_or(|k| k == kind);
            !same
        });
        parents.push(json!({"name": name, "namespace": namespace, "kind": kind}));
    }
    if parents.is_empty() {
        return Err("must specify parentRefs either through annotations or solver config".into());
    }
    route.insert("parentRefs".into(), Value::Array(parents));
    Ok(())
}

/// Whether the solver HTTPRoute of a challenge for `dns` in namespace `ns` is served where
/// Let's Encrypt asks: some parentRef (a Gateway of Cilium's class that exists) has a
/// listener of protocol `HTTP` on port 80 that the reference selects (`sectionName`,
/// `port`), whose hostname matches `dns` (a `*.` hostname as a suffix) and whose
/// `allowedRoutes.namespaces.from` admits `ns` (`Same` by default; `Selector` against the
/// namespace's labels). Cilium attaches a route to every listener that admits it
/// (`operator/pkg/gateway-api/routechecks`); the Gateway API's matching rules are
/// `apis/v1/gateway_types.go` (`Listener.Hostname`, `AllowedRoutes`).
pub(super) fn gateway_route_served(api: &Api<'_>, solver: &Value, ns: &str, dns: &str) -> bool {
    let parents = solver
        .pointer("/http01/gatewayHTTPRoute/parentRefs")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let gateways = api.list("gateway.networking.k8s.io", "gateways");
    let namespace_labels = |name: &str| {
        api.get("", "namespaces", None, name)
            .and_then(|n| n.pointer("/metadata/labels").cloned())
            .unwrap_or(json!({}))
    };
    parents.iter().any(|p| {
        if s(p, "/kind").is_some_and(|k| k != "Gateway") {
            return false;
        }
        let gw_ns = s(p, "/namespace").unwrap_or(ns);
        let Some(gw) = gateways.iter().find(|g| {
            s(g, "/metadata/namespace") == Some(gw_ns) && s(g, "/metadata/name") == s(p, "/name")
        }) else {
            return false;
        };
        gw.pointer("/spec/listeners")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|l| {
                let port = l.get("port").and_then(Value::as_u64);
                let host_ok = match s(l, "/hostname") {
                    None | Some("") => true,
                    Some(h) => super::super::gateway::hostname_admits(h, dns),
                };
                let admitted = match s(l, "/allowedRoutes/namespaces/from").unwrap_or("Same") {
                    "All" => true,
                    "Selector" => {
                        let labels = namespace_labels(ns);
                        l.pointer("/allowedRoutes/namespaces/selector/matchLabels")
                            .and_then(Value::as_object)
                            .into_iter()
                            .flatten()
                            .all(|(k, v)| labels.get(k) == Some(v))
                    }
                    _ => gw_ns == ns,
                };
                s(l, "/protocol") == Some("HTTP")
                    && port == Some(80)
                    && s(p, "/sectionName").is_none_or(|n| s(l, "/name") == Some(n))
                    && p.get("port")
                        .and_then(Value::as_u64)
                        .is_none_or(|q| port == Some(q))
                    && host_ok
                    && admitted
            })
    })
}

/// The issuer's solver for `dns` as cert-manager's `solverpicker.Pick`
/// (`pkg/util/solverpicker/solverpicker.go`) chooses it: the authorization offers HTTP-01
/// only for a name that is not a wildcard; a solver's selector must match (all
/// `matchLabels` on the Order's labels, the name in `dnsNames`, the name in a `dnsZones`
/// zone); a `dnsNames` match beats none, then the longest zone, then the most labels; a
/// solver without a selector is taken only when nothing was chosen before it.
fn pick_solver(issuer: &Value, order: &Value, dns: &str) -> Option<Value> {
    let labels = order
        .pointer("/metadata/labels")
        .cloned()
        .unwrap_or(json!({}));
    let mut best: Option<(&Value, (u8, usize, usize))> = None;
    for solver in issuer
        .pointer("/spec/acme/solvers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let http = solver.get("http01").is_some();
        if !(http && !dns.starts_with("*.") || solver.get("dns01").is_some()) {
            continue;
        }
        let score = match solver.get("selector").filter(|v| !v.is_null()) {
            None => (0, 0, 0),
            Some(sel) => {
                let wanted = sel.get("matchLabels").and_then(Value::as_object);
                if !wanted
                    .into_iter()
                    .flatten()
                    .all(|(k, v)| labels.get(k) == Some(v))
                {
                    continue;
                }
                let names = string_list(sel, "dnsNames");
                let named = names.contains(&dns);
                if !names.is_empty() && !named {
                    continue;
                }
                let zones = string_list(sel, "dnsZones");
                let zone = zones
                    .iter()
                    .filter(|z| dns == **z || dns.ends_with(&format!(".{z}")))
                    .map(|z| z.split('.').count())
                    .max()
                    .unwrap_or(0);
                if !zones.is_empty() && zone == 0 {
                    continue;
                }
                (u8::from(named), zone, wanted.map_or(0, |w| w.len()))
            }
        };
        if best.is_none_or(|(_, b)| score > b) {
            best = Some((solver, score));
        }
    }
    best.map(|(s, _)| s.clone())
}

/// The solver's field manager: cert-manager's challenges controller updates without one, so
/// the API server names it after its user agent.
const SOLVER_MANAGER: &str = "cert-manager-challenges";

/// The path the solver answers, as `ingressPath` builds it (`pkg/issuer/acme/http/ingress.go`;
/// pathType `Exact` with the ACMEHTTP01IngressPathTypeExact gate, on by default).
fn solver_path(token: &str, service: &str) -> Value {
    json!({"path": format!("/.well-known/acme-challenge/{token}"), "pathType": "Exact",
           "backend": {"service": {"name": service, "port": {"number": 8089}}}})
}

/// The strings of a list field of a solver selector.
fn string_list<'v>(sel: &'v Value, key: &str) -> Vec<&'v str> {
    sel.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// `spec.rules` of an Ingress, None when it does not exist.
fn ingress_rules(api: &Api<'_>, ns: &str, name: &str) -> Option<Vec<Value>> {
    let ing = api.get("networking.k8s.io", "ingresses", Some(ns), name)?;
    Some(
        ing.pointer("/spec/rules")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
    )
}

/// Presents an HTTP-01 challenge as cert-manager's solver does: with `http01.ingress.name`
/// it adds the token's path to the rule of that host on that Ingress (an Update, first in
/// the rule's paths: `addChallengePathToIngress`); otherwise it creates a separate Ingress
/// `cm-acme-http-solver-…` owned by the Challenge, with the solver's class
/// (`createIngress`). The solver pod and Service are not simulated; the Service's name is.
pub(super) fn present_solver(api: &Api<'_>, world: &World, ch: &Value, solver: &Value) {
    if solver.pointer("/http01/gatewayHTTPRoute").is_some() {
        present_route(api, world, ch, solver);
        return;
    }
    let Some(cfg) = solver.pointer("/http01/ingress") else {
        return;
    };
    let (ns, ch_name) = ns_name(ch);
    let dns = s(ch, "/spec/dnsName").unwrap_or_default();
    let token = s(ch, "/spec/token").unwrap_or_default();
    let suffix = hash(world.seed, &[ns, ch_name, "solver"]) % 100_000;
    let service = format!("cm-acme-http-solver-{suffix:05}");
    let path = solver_path(token, &service);
    if let Some(target) = s(cfg, "/name").filter(|n| !n.is_empty()) {
        let Some(mut rules) = ingress_rules(api, ns, target) else {
            return;
        };
        match rules.iter_mut().find(|r| r["host"] == dns) {
            Some(rule) => {
                let paths = rule
                    .pointer_mut("/http/paths")
                    .and_then(Value::as_array_mut);
                match paths {
                    Some(paths) if paths.iter().any(|p| p["path"] == path["path"]) => return,
                    Some(paths) => paths.insert(0, path),
                    None => rule["http"] = json!({"paths": [path]}),
                }
            }
            None => rules.push(json!({"host": dns, "http": {"paths": [path]}})),
        }
        api.patch(
            "networking.k8s.io",
            "ingresses",
            Some(ns),
            target,
            &json!({"spec": {"rules": rules}}),
            SOLVER_MANAGER,
        );
        return;
    }
    let mut annotations =
        json!({"nginx.ingress.kubernetes.io/whitelist-source-range": "0.0.0.0/0,::/0"});
    let mut spec = json!({"rules": [{"host": dns, "http": {"paths": [path]}}]});
    if let Some(class) = s(cfg, "/ingressClassName") {
        spec["ingressClassName"] = json!(class);
    } else if let Some(class) = s(cfg, "/class") {
        annotations["kubernetes.io/ingress.class"] = json!(class);
    }
    let ingress = json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": service, "namespace": ns, "annotations": annotations,
            "labels": {"acme.cert-manager.io/http01-solver": "true", "acme.cert-manager.io/http-domain": (hash(world.seed, &[dns]) % 1_000_000_000).to_string(), "acme.cert-manager.io/http-token": (hash(world.seed, &[token]) % 1_000_000_000).to_string()},
            "ownerReferences": [{"apiVersion": "acme.cert-manager.io/v1", "kind": "Challenge", "name": ch_name, "uid": ch.pointer("/metadata/uid"), "controller": true, "blockOwnerDeletion": true}]},
        "spec": spec,
    });
    api.create(
        "networking.k8s.io",
        "ingresses",
        Some(ns),
        ingress,
        SOLVER_MANAGER,
    );
}

/// Undoes [`present_solver`] once the challenge is final: the token's path leaves the edited
/// Ingress (an Update), a separate solver Ingress is deleted (`cleanupIngresses`).
pub(super) fn clean_up_solver(api: &Api<'_>, ch: &Value, solver: &Value) {
    if solver.pointer("/http01/gatewayHTTPRoute").is_some() {
        delete_owned(api, ch, "gateway.networking.k8s.io", "httproutes");
        return;
    }
    let Some(cfg) = solver.pointer("/http01/ingress") else {
        return;
    };
    let (ns, _) = ns_name(ch);
    let token = s(ch, "/spec/token").unwrap_or_default();
    let wanted = format!("/.well-known/acme-challenge/{token}");
    if let Some(target) = s(cfg, "/name").filter(|n| !n.is_empty()) {
        let Some(mut rules) = ingress_rules(api, ns, target) else {
            return;
        };
        let mut changed = false;
        for rule in &mut rules {
            if let Some(paths) = rule
                .pointer_mut("/http/paths")
                .and_then(Value::as_array_mut)
            {
                let before = paths.len();
                paths.retain(|p| p["path"] != wanted.as_str());
                changed |= paths.len() != before;
            }
        }
        if changed {
            api.patch(
                "networking.k8s.io",
                "ingresses",
                Some(ns),
                target,
                &json!({"spec": {"rules": rules}}),
                SOLVER_MANAGER,
            );
        }
        return;
    }
    delete_owned(api, ch, "networking.k8s.io", "ingresses");
}

/// Deletes the objects of `group`/`plural` in the Challenge's namespace that it owns: its
/// solver Ingress or HTTPRoute.
fn delete_owned(api: &Api<'_>, ch: &Value, group: &str, plural: &str) {
    let (ns, _) = ns_name(ch);
    for object in api.list(group, plural) {
        let owned = object
            .pointer("/metadata/ownerReferences/0/uid")
            .is_some_and(|u| Some(u) == ch.pointer("/metadata/uid"));
        if owned && s(&object, "/metadata/namespace") == Some(ns) {
            api.delete(
                group,
                plural,
                Some(ns),
                s(&object, "/metadata/name").unwrap_or_default(),
            );
        }
    }
}

/// Presents a `gatewayHTTPRoute` challenge as cert-manager does (`pkg/issuer/acme/http/httproute.go`
/// `createHTTPRoute`, `generateHTTPRouteSpec`): an HTTPRoute `cm-acme-http-solver-…` owned by
/// the Challenge, with the solver's parentRefs and labels, the challenge's host, and one rule
/// matching the token's path exactly to the solver Service on port 8089.
fn present_route(api: &Api<'_>, world: &World, ch: &Value, solver: &Value) {
    if !api.serves("gateway.networking.k8s.io", "httproutes") {
        return;
    }
    let (ns, ch_name) = ns_name(ch);
    let dns = s(ch, "/spec/dnsName").unwrap_or_default();
    let token = s(ch, "/spec/token").unwrap_or_default();
    let suffix = hash(world.seed, &[ns, ch_name, "solver"]) % 100_000;
    let service = format!("cm-acme-http-solver-{suffix:05}");
    let cfg = solver
        .pointer("/http01/gatewayHTTPRoute")
        .cloned()
        .unwrap_or(json!({}));
    let mut labels = cfg.get("labels").cloned().unwrap_or(json!({}));
    labels["acme.cert-manager.io/http01-solver"] = json!("true");
    labels["acme.cert-manager.io/http-domain"] =
        json!((hash(world.seed, &[dns]) % 1_000_000_000).to_string());
    labels["acme.cert-manager.io/http-token"] =
        json!((hash(world.seed, &[token]) % 1_000_000_000).to_string());
    let route = json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": {"name": service, "namespace": ns, "labels": labels,
            "ownerReferences": [{"apiVersion": "acme.cert-manager.io/v1", "kind": "Challenge", "name": ch_name, "uid": ch.pointer("/metadata/uid"), "controller": true, "blockOwnerDeletion": true}]},
        "spec": {
            "parentRefs": cfg.get("parentRefs").cloned().unwrap_or(json!([])),
            "hostnames": [dns],
            "rules": [{"matches": [{"path": {"type": "Exact", "value": format!("/.well-known/acme-challenge/{token}")}}],
                       "backendRefs": [{"group": "", "kind": "Service", "name": service, "namespace": ns, "port": 8089, "weight": 1}]}],
        },
    });
    api.create(
        "gateway.networking.k8s.io",
        "httproutes",
        Some(ns),
        route,
        SOLVER_MANAGER,
    );
}

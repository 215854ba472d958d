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
fn template(kind: Kind) -> Value {
    let cond = json!([{"type": "Ready", "status": "False", "reason": "Pending", "message": "m", "lastTransitionTime": "2026-01-01T00:00:00Z"}]);
    let issuer = json!({"name": "le", "kind": "ClusterIssuer", "group": "cert-manager.io"});
    match kind {
        Kind::Ingress => {
            json!({"spec": {"ingressClassName": "cilium", "rules": [{"host": "a.example.com"}, {"host": "b.example.com"}],
                             "tls": [{"hosts": ["a.example.com"], "secretName": "a-tls"}]},
                    "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}, {"hostname": "lb.example"}]}}})
        }
        Kind::Certificate => {
            json!({"spec": {"secretName": "a-tls", "dnsNames": ["a.example.com"], "commonName": "a.example.com", "issuerRef": issuer},
                                 "status": {"conditions": cond, "notBefore": "2026-01-01T00:00:00Z", "notAfter": "2026-04-01T00:00:00Z",
                                            "renewalTime": "2026-03-01T00:00:00Z", "revision": 2, "failedIssuanceAttempts": 1, "lastFailureTime": "2026-01-02T00:00:00Z"}})
        }
        Kind::CertificateRequest => {
            json!({"spec": {"issuerRef": issuer, "request": "AAAA"}, "status": {"conditions": cond, "failureTime": "2026-01-02T00:00:00Z"}})
        }
        Kind::Order => {
            json!({"spec": {"issuerRef": issuer, "dnsNames": ["a.example.com"]}, "status": {"state": "pending", "reason": "r", "url": "u"}})
        }
        Kind::Challenge => {
            json!({"spec": {"dnsName": "a.example.com", "type": "HTTP-01", "issuerRef": issuer, "solver": {"http01": {"ingress": {"name": "x"}}}},
                               "status": {"state": "pending", "presented": true, "processing": true, "reason": "Waiting for HTTP-01 challenge propagation"}})
        }
        Kind::Issuer | Kind::ClusterIssuer => {
            json!({"spec": {"acme": {"server": "https://acme-v02.api.letsencrypt.org/directory", "solvers": [{"http01": {"ingress": {"ingressClassName": "cilium"}}}]}},
                                             "status": {"conditions": cond}})
        }
        Kind::Service => {
            json!({"spec": {"type": "LoadBalancer", "ipFamilies": ["IPv4"]}, "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}})
        }
        Kind::IngressClass => json!({"spec": {"controller": "cilium.io/ingress-controller"}}),
        Kind::Gateway => {
            json!({"spec": {"gatewayClassName": "cilium", "listeners": [{"name": "https", "hostname": "a.example.com", "protocol": "HTTPS", "port": 443}]}})
        }
        Kind::HTTPRoute => {
            json!({"spec": {"parentRefs": [{"name": "edge", "sectionName": "http", "port": 80}], "hostnames": ["a.example.com"],
                            "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                                       "filters": [{"type": "RequestRedirect", "requestRedirect": {"scheme": "https", "statusCode": 301}}]}]},
                   "status": {"parents": [{"parentRef": {"name": "edge"}, "conditions": cond}]}})
        }
        Kind::ManagedResource => {
            json!({"spec": {"serviceAccountRef": {"name": "tls"}, "applyOptions": {"fieldManager": "m", "force": true},
                            "context": [{"name": "ingresses", "resource": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "namespace": "",
                                          "labelSelector": {"matchLabels": {"a": "b"}, "matchExpressions": [{"key": "k", "operator": "In", "values": ["v"]}]},
                                          "matchNames": ["x"], "ignoreNames": ["y"]}}],
                            "template": "acme.cert-manager.io/http01-edit-in-place"},
                   "status": {"status": "Ready"}})
        }
        Kind::ClusterPolicy | Kind::Policy => {
            json!({"spec": {"background": false, "rules": [{"name": "r", "match": {"any": [{"resources": {"kinds": ["Ingress"], "namespaces": ["a"], "names": ["n"], "selector": {"matchLabels": {"a": "b"}}}}]},
                                                            "mutate": {"targets": [{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress"}], "patchStrategicMerge": {"metadata": {"annotations": {"+(acme.cert-manager.io/http01-edit-in-place)": "true"}}}}}]},
                   "status": {"conditions": [{"type": "Ready", "status": "False", "message": "Not Ready"}]}})
        }
        Kind::MutatingPolicy => {
            json!({"spec": {"matchConstraints": {"resourceRules": [{"apiGroups": ["networking.k8s.io"], "resources": ["ingresses"]}], "objectSelector": {"matchLabels": {"a": "b"}}},
                            "evaluation": {"mutateExisting": {"enabled": true}},
                            "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "acme.cert-manager.io/http01-edit-in-place"}}]},
                   "status": {"conditionStatus": {"ready": false, "message": "m"}}})
        }
        Kind::ConfigMap => {
            json!({"data": {"enforce-ingress-https": "true", "enable-ingress-proxy-protocol": "false"}})
        }
        Kind::Event => {
            json!({"type": "Warning", "reason": "Failed", "message": "m", "count": 3, "lastTimestamp": "2026-01-01T00:00:00Z",
                           "involvedObject": {"kind": "Certificate", "name": "a", "namespace": "ns"}})
        }
    }
}

/// JSON pointers of every node under `v`.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => m.iter().for_each(|(k, v)| {
            // RFC 6901: a key's `~` and `/` escaped (annotation keys hold slashes).
            let p = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
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
fn mutated(kind: Kind, mutations: &[(usize, Option<Value>)]) -> Value {
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
                        m.remove(&key.replace("~1", "/").replace("~0", "~"));
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
fn object(kind: &'static str, i: usize, body: Value, annotation: Value) -> Object {
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
            (0..WATCHED.len(), prop::collection::vec((any::<usize>(), prop::option::of(value())), 0..4), value(), annotation()),
            1..12,
        )
    ) {
        let mut data = ClusterData::default();
        let mut strings = Interner::default();
        // A well-formed Ingress next to the hostile ones must always be there.
        let good = object("Ingress", 9999, json!({"spec": {"rules": [{"host": "ok.example.com"}]}}), Value::Null);
        prop_assert!(watched(Kind::Ingress).apply("c", &mut data, &good, &mut strings));
        for (i, (k, mutations, random, annotation)) in bodies.into_iter().enumerate() {
            let kind = WATCHED[k].kind();
            // Every third object is random structure; the others are real objects broken
            // in a few places.
            let body = if i % 3 == 2 { random } else { mutated(kind, &mutations) };
            let obj = object(kind.name(), i, body, annotation);
            let _ = WATCHED[k].apply("c", &mut data, &obj, &mut strings);
            let _ = WATCHED[k].count(&data);
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
        let rows = lookout_app::model::read::lists::ingress_rows(&findings, &facts, &data);
        prop_assert!(rows.values().flat_map(|r| r.iter()).any(|r| &*r.ingress.name == "o-9999"));
    }
}

//! kubesim's own compact table of the cert-manager and Gateway API kinds, installed as
//! minimal CustomResourceDefinitions (no schema) for the demo and for users.

use serde_json::{json, Value};

/// One kind of the table: group, versions (storage first), kind, plural, scope, short names.
struct Kind {
    group: &'static str,
    versions: &'static [&'static str],
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    short: &'static [&'static str],
}

const CERT_MANAGER: &[Kind] = &[
    Kind {
        group: "cert-manager.io",
        versions: &["v1"],
        kind: "Certificate",
        plural: "certificates",
        namespaced: true,
        short: &["cert", "certs"],
    },
    Kind {
        group: "cert-manager.io",
        versions: &["v1"],
        kind: "CertificateRequest",
        plural: "certificaterequests",
        namespaced: true,
        short: &["cr", "crs"],
    },
    Kind {
        group: "cert-manager.io",
        versions: &["v1"],
        kind: "Issuer",
        plural: "issuers",
        namespaced: true,
        short: &[],
    },
    Kind {
        group: "cert-manager.io",
        versions: &["v1"],
        kind: "ClusterIssuer",
        plural: "clusterissuers",
        namespaced: false,
        short: &[],
    },
    Kind {
        group: "acme.cert-manager.io",
        versions: &["v1"],
        kind: "Order",
        plural: "orders",
        namespaced: true,
        short: &[],
    },
    Kind {
        group: "acme.cert-manager.io",
        versions: &["v1"],
        kind: "Challenge",
        plural: "challenges",
        namespaced: true,
        short: &[],
    },
];

const GATEWAY_API: &[Kind] = &[
    Kind {
        group: "gateway.networking.k8s.io",
        versions: &["v1", "v1beta1"],
        kind: "GatewayClass",
        plural: "gatewayclasses",
        namespaced: false,
        short: &["gc"],
    },
    Kind {
        group: "gateway.networking.k8s.io",
        versions: &["v1", "v1beta1"],
        kind: "Gateway",
        plural: "gateways",
        namespaced: true,
        short: &["gtw"],
    },
    Kind {
        group: "gateway.networking.k8s.io",
        versions: &["v1", "v1beta1"],
        kind: "HTTPRoute",
        plural: "httproutes",
        namespaced: true,
        short: &[],
    },
    Kind {
        group: "gateway.networking.k8s.io",
        versions: &["v1beta1", "v1"],
        kind: "ReferenceGrant",
        plural: "referencegrants",
        namespaced: true,
        short: &["refgrant"],
    },
    Kind {
        group: "gateway.networking.k8s.io",
        versions: &["v1"],
        kind: "ListenerSet",
        plural: "listenersets",
        namespaced: true,
        short: &["lset"],
    },
];

fn definition(k: &Kind) -> Value {
    let versions: Vec<Value> = k
        .versions
        .iter()
        .enumerate()
        .map(|(i, v)| {
            json!({
                "name": v, "served": true, "storage": i == 0,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                "subresources": {"status": {}},
            })
        })
        .collect();
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{}.{}", k.plural, k.group)},
        "spec": {
            "group": k.group,
            "names": {
                "kind": k.kind, "listKind": format!("{}List", k.kind), "plural": k.plural,
                "singular": k.kind.to_ascii_lowercase(), "shortNames": k.short,
            },
            "scope": if k.namespaced { "Namespaced" } else { "Cluster" },
            "versions": versions,
        }
    })
}

/// The cert-manager CRDs (cert-manager.io and acme.cert-manager.io).
pub fn cert_manager() -> Vec<Value> {
    CERT_MANAGER.iter().map(definition).collect()
}

/// The Gateway API CRDs (standard channel kinds).
pub fn gateway_api() -> Vec<Value> {
    GATEWAY_API.iter().map(definition).collect()
}

//! kubesim's own compact table of the cert-manager, Gateway API and annotation-policy kinds
//! (Espejote, Kyverno), installed as minimal CustomResourceDefinitions (no schema) for the
//! demo and for users.

use serde_json::{json, Value};

/// One kind of the table: group, versions (storage first), kind, plural, scope, short names.
struct Kind {
    group: &'static str,
    versions: &'static [&'static str],
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    short: &'static [&'static str],
    /// `additionalPrinterColumns`: name, type, JSONPath (upstream's CRDs' own).
    columns: &'static [(&'static str, &'static str, &'static str)],
}

const CERT_MANAGER: &[Kind] = &[
    Kind {
        group: "cert-manager.io",
        versions: &["v1"],
        kind: "Certificate",
        plural: "certificates",
        namespaced: true,
        short: &["cert", "certs"],
        columns: &[],
    },
    Kind {
        group: "cert-manager.io",
        versions: &["v1"],
        kind: "CertificateRequest",
        plural: "certificaterequests",
        namespaced: true,
        short: &["cr", "crs"],
        columns: &[],
    },
    Kind {
        group: "cert-manager.io",
        versions: &["v1"],
        kind: "Issuer",
        plural: "issuers",
        namespaced: true,
        short: &[],
        columns: &[],
    },
    Kind {
        group: "cert-manager.io",
        versions: &["v1"],
        kind: "ClusterIssuer",
        plural: "clusterissuers",
        namespaced: false,
        short: &[],
        columns: &[],
    },
    Kind {
        group: "acme.cert-manager.io",
        versions: &["v1"],
        kind: "Order",
        plural: "orders",
        namespaced: true,
        short: &[],
        columns: &[],
    },
    Kind {
        group: "acme.cert-manager.io",
        versions: &["v1"],
        kind: "Challenge",
        plural: "challenges",
        namespaced: true,
        short: &[],
        columns: &[],
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
        columns: &[],
    },
    Kind {
        group: "gateway.networking.k8s.io",
        versions: &["v1", "v1beta1"],
        kind: "Gateway",
        plural: "gateways",
        namespaced: true,
        short: &["gtw"],
        // gateway-api `config/crd/standard/gateway.networking.k8s.io_gateways.yaml`.
        columns: &[
            ("Class", "string", ".spec.gatewayClassName"),
            ("Address", "string", ".status.addresses[*].value"),
            (
                "Programmed",
                "string",
                ".status.conditions[?(@.type==\"Programmed\")].status",
            ),
            ("Age", "date", ".metadata.creationTimestamp"),
        ],
    },
    Kind {
        group: "gateway.networking.k8s.io",
        versions: &["v1", "v1beta1"],
        kind: "HTTPRoute",
        plural: "httproutes",
        namespaced: true,
        short: &[],
        columns: &[],
    },
    Kind {
        group: "gateway.networking.k8s.io",
        versions: &["v1beta1", "v1"],
        kind: "ReferenceGrant",
        plural: "referencegrants",
        namespaced: true,
        short: &["refgrant"],
        columns: &[],
    },
    Kind {
        group: "gateway.networking.k8s.io",
        versions: &["v1"],
        kind: "ListenerSet",
        plural: "listenersets",
        namespaced: true,
        short: &["lset"],
        columns: &[],
    },
];

/// Kyverno's ClusterPolicy and Policy columns (`api/kyverno/v1/clusterpolicy_types.go`
/// printcolumn markers, the priority-0 ones).
const KYVERNO_COLUMNS: &[(&str, &str, &str)] = &[
    ("ADMISSION", "boolean", ".spec.admission"),
    ("BACKGROUND", "boolean", ".spec.background"),
    (
        "READY",
        "string",
        ".status.conditions[?(@.type == \"Ready\")].status",
    ),
    ("AGE", "date", ".metadata.creationTimestamp"),
    (
        "MESSAGE",
        "string",
        ".status.conditions[?(@.type == \"Ready\")].message",
    ),
];

/// The policy engines that set annotations on Ingresses: Espejote's ManagedResource
/// (vshn/espejote `config/crd/bases/espejote.io_managedresources.yaml`), Kyverno's
/// ClusterPolicy and Policy (kyverno/kyverno `config/crds/kyverno/`) and MutatingPolicy
/// (`config/crds/policies.kyverno.io/`, stored as v1beta1).
const POLICIES: &[Kind] = &[
    Kind {
        group: "espejote.io",
        versions: &["v1alpha1"],
        kind: "ManagedResource",
        plural: "managedresources",
        namespaced: true,
        short: &[],
        columns: &[
            ("Status", "string", ".status.status"),
            ("Age", "date", ".metadata.creationTimestamp"),
        ],
    },
    Kind {
        group: "kyverno.io",
        versions: &["v1", "v2beta1"],
        kind: "ClusterPolicy",
        plural: "clusterpolicies",
        namespaced: false,
        short: &["cpol"],
        columns: KYVERNO_COLUMNS,
    },
    Kind {
        group: "kyverno.io",
        versions: &["v1", "v2beta1"],
        kind: "Policy",
        plural: "policies",
        namespaced: true,
        short: &["pol"],
        columns: KYVERNO_COLUMNS,
    },
    Kind {
        group: "policies.kyverno.io",
        versions: &["v1beta1", "v1", "v1alpha1"],
        kind: "MutatingPolicy",
        plural: "mutatingpolicies",
        namespaced: false,
        short: &["mpol"],
        columns: &[
            ("Age", "date", ".metadata.creationTimestamp"),
            ("Ready", "boolean", ".status.conditionStatus.ready"),
        ],
    },
];

fn definition(k: &Kind) -> Value {
    let versions: Vec<Value> = k
        .versions
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let columns: Vec<Value> = k
                .columns
                .iter()
                .map(|(name, kind, path)| json!({"name": name, "type": kind, "jsonPath": path}))
                .collect();
            let mut version = json!({
                "name": v, "served": true, "storage": i == 0,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                "subresources": {"status": {}},
            });
            if !columns.is_empty() {
                version["additionalPrinterColumns"] = Value::Array(columns);
            }
            version
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

/// The annotation-policy CRDs: Espejote and Kyverno.
pub fn policies() -> Vec<Value> {
    POLICIES.iter().map(definition).collect()
}

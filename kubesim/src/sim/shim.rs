//! cert-manager's ingress-shim: one Certificate per TLS entry of an annotated Ingress, named
//! after its secretName and owned by the Ingress; the edit-in-place override annotations only
//! when the Certificate is created (DOMAIN.md §1.8).

use serde_json::{json, Value};

use super::{s, Api};

const MANAGER: &str = "cert-manager-ingress-shim";

fn issuer_ref(ing: &Value) -> Option<Value> {
    let ann = |k: &str| {
        s(
            ing,
            &format!("/metadata/annotations/{}", k.replace('/', "~1")),
        )
        .map(str::to_string)
    };
    if let Some(name) = ann("cert-manager.io/cluster-issuer") {
        return Some(json!({"name": name, "kind": "ClusterIssuer", "group": "cert-manager.io"}));
    }
    let name = ann("cert-manager.io/issuer")?;
    Some(
        json!({"name": name, "kind": ann("cert-manager.io/issuer-kind").unwrap_or_else(|| "Issuer".into()),
                "group": ann("cert-manager.io/issuer-group").unwrap_or_else(|| "cert-manager.io".into())}),
    )
}

fn owned_by(obj: &Value, uid: &str) -> bool {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|r| r["controller"] == json!(true) && r["uid"].as_str() == Some(uid))
}

pub(super) fn reconcile(api: &Api<'_>) {
    let certificates = api.list("cert-manager.io", "certificates");
    for ing in api.list("networking.k8s.io", "ingresses") {
        let Some(issuer) = issuer_ref(&ing) else {
            continue;
        };
        let ns = s(&ing, "/metadata/namespace").unwrap_or_default();
        let ing_name = s(&ing, "/metadata/name").unwrap_or_default();
        let uid = s(&ing, "/metadata/uid").unwrap_or_default();
        let edit_in_place = s(
            &ing,
            "/metadata/annotations/acme.cert-manager.io~1http01-edit-in-place",
        ) == Some("true");
        let mut wanted: Vec<String> = Vec::new();
        for tls in ing
            .pointer("/spec/tls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let (Some(secret), Some(hosts)) = (
                tls.get("secretName").and_then(Value::as_str),
                tls.get("hosts").and_then(Value::as_array),
            ) else {
                continue;
            };
            if hosts.is_empty() || wanted.iter().any(|w| w == secret) {
                continue;
            }
            wanted.push(secret.to_string());
            let existing = certificates.iter().find(|c| {
                s(c, "/metadata/namespace") == Some(ns) && s(c, "/metadata/name") == Some(secret)
            });
            match existing {
                None => {
                    let mut annotations = json!({});
                    if edit_in_place {
                        annotations = json!({"acme.cert-manager.io/http01-override-ingress-name": ing_name, "cert-manager.io/issue-temporary-certificate": "true"});
                    }
                    let cert = json!({
                        "apiVersion": "cert-manager.io/v1", "kind": "Certificate",
                        "metadata": {"name": secret, "namespace": ns, "annotations": annotations, "labels": ing.pointer("/metadata/labels").cloned().unwrap_or(json!({})),
                            "ownerReferences": [{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": ing_name, "uid": uid, "controller": true, "blockOwnerDeletion": true}]},
                        "spec": {"secretName": secret, "dnsNames": hosts, "issuerRef": issuer, "usages": ["digital signature", "key encipherment"]},
                    });
                    if api
                        .create("cert-manager.io", "certificates", Some(ns), cert, MANAGER)
                        .is_some()
                    {
                        api.event(
                            &ing,
                            "Ingress",
                            "Normal",
                            "CreateCertificate",
                            &format!("Successfully created Certificate \"{secret}\""),
                            "cert-manager-ingress-shim",
                        );
                    }
                }
                // Annotations are not compared: only the spec is kept in line (DOMAIN.md §1.8).
                Some(c) if owned_by(c, uid) => {
                    if c.pointer("/spec/dnsNames") != Some(&Value::Array(hosts.clone()))
                        || c.pointer("/spec/issuerRef") != Some(&issuer)
                    {
                        api.patch(
                            "cert-manager.io",
                            "certificates",
                            Some(ns),
                            secret,
                            &json!({"spec": {"dnsNames": hosts, "issuerRef": issuer}}),
                            MANAGER,
                        );
                        api.event(
                            &ing,
                            "Ingress",
                            "Normal",
                            "UpdateCertificate",
                            &format!("Successfully updated Certificate \"{secret}\""),
                            "cert-manager-ingress-shim",
                        );
                    }
                }
                Some(_) => {}
            }
        }
        for c in certificates
            .iter()
            .filter(|c| s(c, "/metadata/namespace") == Some(ns) && owned_by(c, uid))
        {
            let name = s(c, "/metadata/name").unwrap_or_default();
            if !wanted.iter().any(|w| w == name) {
                api.delete("cert-manager.io", "certificates", Some(ns), name);
                api.event(
                    &ing,
                    "Ingress",
                    "Normal",
                    "DeleteCertificate",
                    &format!("Successfully deleted unrequired Certificate \"{name}\""),
                    "cert-manager-ingress-shim",
                );
            }
        }
    }
}

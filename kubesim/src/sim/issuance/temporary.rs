//! cert-manager's temporary certificate. A Certificate annotated
//! `cert-manager.io/issue-temporary-certificate: "true"` (ingress-shim sets it with the
//! edit-in-place override) gets a certificate signed by a throwaway `cert-manager.local` CA in
//! its Secret while its request is pending, so the listener has something to serve — and an
//! HTTP-01 challenge redirected to HTTPS completes its TLS handshake.
//!
//! Upstream: `pkg/controller/certificates/issuing/temporary.go` (`ensureTemporaryCertificate`:
//! only once the request has a Ready condition that is neither Failed nor Issued, and only
//! while the Secret is missing or lacks data — `NewTemporaryCertificatePolicyChain`;
//! event `Issuing` "Issued temporary certificate"), `pkg/util/pki/temporarycertificate.go`,
//! `internal/secret.go` (the Secret gets the certificate-name and certificate-details
//! annotations, no issuer annotations). The readiness controller
//! (`readiness_controller.go`) then copies the temporary certificate's times into the
//! status and judges it with `NewReadinessPolicyChain`: the Secret's missing issuer
//! annotations match only a namespaced `Issuer` of the default group
//! (`pkg/api/util/issuers.go` `SecretIssuerAnnotationsMatch`), so under a ClusterIssuer
//! Ready is False with `IncorrectIssuer`, under an Issuer it is True.

use base64::Engine;
use chrono::Duration;
use serde_json::{json, Value};

use super::{cond, go_duration, names, ns_name, ISSUING};
use crate::sim::{s, Api};

/// `cert-manager.io/issue-temporary-certificate`.
pub(crate) const ANNOTATION: &str = "cert-manager.io/issue-temporary-certificate";

/// Whether a Secret holds both halves of a key pair (`SecretIsMissingData`).
pub(super) fn has_data(secret: &Value) -> bool {
    ["tls.crt", "tls.key"].iter().all(|k| {
        s(secret, &format!("/data/{k}"))
            .and_then(|v| base64::engine::general_purpose::STANDARD.decode(v).ok())
            .is_some_and(|v| !v.is_empty())
    })
}

/// Writes the temporary certificate when the Certificate asks for one and its Secret has
/// none to serve; true when it did (the pass ends there, as upstream's does).
pub(super) fn ensure(api: &Api<'_>, cert: &Value) -> bool {
    let annotation = format!("/metadata/annotations/{}", ANNOTATION.replace('/', "~1"));
    if s(cert, &annotation) != Some("true") {
        return false;
    }
    let (ns, name) = ns_name(cert);
    let secret_name = s(cert, "/spec/secretName").unwrap_or(name);
    let existing = api.get("", "secrets", Some(ns), secret_name);
    if existing.as_ref().is_some_and(has_data) {
        return false;
    }
    let lifetime = s(cert, "/spec/duration")
        .and_then(go_duration)
        .unwrap_or(Duration::days(90));
    let all = names(cert);
    let (not_before, not_after) = (api.now, api.now + lifetime);
    let Some((crt, key)) =
        crate::sim::pki::temporary(&all, s(cert, "/spec/commonName"), not_before, not_after)
    else {
        return false;
    };
    let metadata = json!({"name": secret_name, "namespace": ns,
        "labels": {"controller.cert-manager.io/fao": "true"},
        "annotations": {"cert-manager.io/certificate-name": name,
            "cert-manager.io/common-name": s(cert, "/spec/commonName").unwrap_or_default(),
            "cert-manager.io/alt-names": all.join(","), "cert-manager.io/ip-sans": "", "cert-manager.io/uri-sans": "",
            "cert-manager.io/issuer-name": null, "cert-manager.io/issuer-kind": null, "cert-manager.io/issuer-group": null}});
    let data = json!({"tls.crt": crt, "tls.key": key});
    if existing.is_some() {
        api.patch(
            "",
            "secrets",
            Some(ns),
            secret_name,
            &json!({"metadata": metadata, "data": data}),
            ISSUING,
        );
    } else {
        let mut metadata = metadata.clone();
        if let Some(a) = metadata["annotations"].as_object_mut() {
            a.retain(|_, v| !v.is_null());
        }
        api.create(
            "",
            "secrets",
            Some(ns),
            json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls", "metadata": metadata, "data": data}),
            ISSUING,
        );
    }
    api.event(
        cert,
        "Certificate",
        "Normal",
        "Issuing",
        "Issued temporary certificate",
        "cert-manager-certificates-issuing",
    );
    // The readiness controller's pass over the new Secret: its absent issuer annotations
    // judged as for any Secret.
    let ready = match super::trigger::issuer_mismatch(&json!({"metadata": metadata}), cert) {
        None => cond(
            "Ready",
            "True",
            "Ready",
            "Certificate is up to date and has not expired",
        ),
        Some(previous) => cond(
            "Ready",
            "False",
            "IncorrectIssuer",
            &format!("Issuing certificate as Secret was previously issued by \"{previous}\""),
        ),
    };
    super::readiness::record(api, cert, ready, not_before, not_after);
    true
}

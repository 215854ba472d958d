//! cert-manager's readiness controller for a Secret it did not issue here: a Certificate
//! created over a Secret that already holds a valid certificate for its names, from its
//! issuer, is Ready with `notBefore`, `notAfter` and `renewalTime` read from that
//! certificate — no new issuance until the renewal time comes (then the trigger renews it
//! while the old certificate keeps being served).
//!
//! Upstream: `pkg/controller/certificates/readiness/readiness_controller.go` (`ProcessItem`
//! sets the times from the Secret's X.509 certificate) and the policy chains of
//! `internal/controller/certificates/policies/policies.go` / `checks.go`
//! (`SecretIsMissingData`, `SecretIssuerAnnotationsMismatch`,
//! `SecretCertificateNameAnnotationsMismatch`, `currentSecretValidForSpec`,
//! `CurrentCertificateHasExpired`). A Secret that fails any of these checks is not adopted
//! and is replaced by an issuance, as upstream's trigger chain would (`IncorrectIssuer` and
//! `MissingData` as upstream words them; kubesim words the other refusals `DoesNotExist`).

use base64::Engine;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::{cond, names, ns_name, renew_before, with_condition, CM};
use crate::sim::letsencrypt::rfc3339;
use crate::sim::{s, Api};

const READINESS: &str = "cert-manager-certificates-readiness";

/// What an issued certificate in a Secret says of itself.
struct Issued {
    not_before: DateTime<Utc>,
    not_after: DateTime<Utc>,
    names: Vec<String>,
}

fn issued(secret: &Value) -> Option<Issued> {
    let data = |key: &str| {
        s(secret, &format!("/data/{}", key.replace('/', "~1")))
            .and_then(|v| base64::engine::general_purpose::STANDARD.decode(v).ok())
            .filter(|v| !v.is_empty())
    };
    // SecretIsMissingData: both halves of the key pair.
    data("tls.key")?;
    let pem = data("tls.crt")?;
    let (_, pem) = x509_parser::pem::parse_x509_pem(&pem).ok()?;
    let cert = pem.parse_x509().ok()?;
    let at = |t: x509_parser::time::ASN1Time| DateTime::from_timestamp(t.timestamp(), 0);
    let names = cert
        .subject_alternative_name()
        .ok()
        .flatten()
        .map(|san| {
            san.value
                .general_names
                .iter()
                .filter_map(|n| match n {
                    x509_parser::extensions::GeneralName::DNSName(d) => Some(d.to_string()),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    Some(Issued {
        not_before: at(cert.validity().not_before)?,
        not_after: at(cert.validity().not_after)?,
        names,
    })
}

/// Adopts the certificate already in the Secret when upstream's checks pass: the
/// Certificate becomes Ready with the times of that certificate. True when adopted.
pub(super) fn adopt(api: &Api<'_>, cert: &Value, secret: Option<&Value>) -> bool {
    let Some(secret) = secret else { return false };
    let Some(issued) = issued(secret) else {
        return false;
    };
    let annotation = |key: &str| {
        s(
            secret,
            &format!("/metadata/annotations/cert-manager.io~1{key}"),
        )
    };
    let name = ns_name(cert).1;
    // SecretIssuerAnnotationsMismatch (absent annotations match only a namespaced Issuer)
    // and SecretCertificateNameAnnotationsMismatch (when set, it names this Certificate).
    let issuer_matches = super::trigger::issuer_mismatch(secret, cert).is_none();
    let name_matches = annotation("certificate-name").is_none_or(|n| n == name);
    // currentSecretValidForSpec: the issued names are the spec's names.
    let mut wanted = names(cert);
    let mut have = issued.names.clone();
    wanted.sort();
    have.sort();
    // CurrentCertificateHasExpired.
    let valid = api.now < issued.not_after;
    if !(issuer_matches && name_matches && wanted == have && valid) {
        return false;
    }
    let ready = cond(
        "Ready",
        "True",
        "Ready",
        "Certificate is up to date and has not expired",
    );
    record(api, cert, ready, issued.not_before, issued.not_after);
    true
}

/// The readiness controller's write: the Ready condition and the times of the certificate
/// in the Secret, its renewal time as `renewaltime.go` computes it
/// (`readiness_controller.go` `ProcessItem`).
pub(super) fn record(
    api: &Api<'_>,
    cert: &Value,
    ready: Value,
    not_before: DateTime<Utc>,
    not_after: DateTime<Utc>,
) {
    let (ns, name) = ns_name(cert);
    let renewal = not_after - renew_before(cert, not_after - not_before);
    let conditions = with_condition(cert, ready, &[], api.now);
    api.patch_status(
        CM,
        "certificates",
        Some(ns),
        name,
        &json!({"status": {"conditions": conditions, "notBefore": rfc3339(not_before),
            "notAfter": rfc3339(not_after), "renewalTime": rfc3339(renewal)}}),
        READINESS,
    );
}

//! cert-manager's trigger controller: whether a Certificate that is not issuing must be
//! issued again, and whether a failed one waits out its backoff first.

use base64::Engine;
use chrono::{DateTime, Duration, Utc};
use serde_json::Value;

use super::{go_duration, names, ns_name, temporary, CM};
use crate::sim::letsencrypt::rfc3339;
use crate::sim::{s, time, Api};

/// The first re-issue reason of upstream's trigger chain that applies
/// (`internal/controller/certificates/policies/policies.go` `NewTriggerPolicyChain`, in its
/// order): the Secret missing or without data, issued by another issuer
/// (`SecretIssuerAnnotationsMismatch`, annotations that are absent match only a namespaced
/// Issuer of the default group), for another Certificate, for other names, or due for renewal.
pub(super) fn trigger(
    cert: &Value,
    secret: Option<&Value>,
    never_issued: bool,
    now: DateTime<Utc>,
) -> Option<(&'static str, String)> {
    let does_not_exist = || {
        Some((
            "DoesNotExist",
            "Issuing certificate as Secret does not exist".to_string(),
        ))
    };
    let Some(secret) = secret else {
        return does_not_exist();
    };
    if !temporary::has_data(secret) {
        return Some((
            "MissingData",
            "Issuing certificate as Secret does not contain a certificate".to_string(),
        ));
    }
    let annotation = |key: &str| {
        s(
            secret,
            &format!("/metadata/annotations/cert-manager.io~1{key}"),
        )
    };
    if let Some(previous) = issuer_mismatch(secret, cert) {
        return Some((
            "IncorrectIssuer",
            format!("Issuing certificate as Secret was previously issued by \"{previous}\""),
        ));
    }
    if annotation("certificate-name").is_some_and(|n| Some(n) != s(cert, "/metadata/name")) {
        return Some((
            "IncorrectCertificate",
            format!(
                "Secret was issued for \"{}\". If this message is not transient, you might have two conflicting Certificates pointing to the same secret.",
                annotation("certificate-name").unwrap_or_default()
            ),
        ));
    }
    if annotation("alt-names").is_some_and(|n| n != names(cert).join(",")) {
        return Some((
            "RequestChanged",
            "Fields on existing CertificateRequest resource not up to date: [spec.dnsNames]"
                .to_string(),
        ));
    }
    if never_issued {
        // A Secret the readiness controller would not adopt for another reason (its names,
        // its expiry): kubesim words that trigger as a missing certificate.
        return does_not_exist();
    }
    time(cert, "/status/renewalTime")
        .filter(|rt| now >= *rt)
        .map(|rt| {
            (
                "Renewing",
                format!(
                    "Renewing certificate as renewal was scheduled at {}",
                    rfc3339(rt)
                ),
            )
        })
}

/// The issuer a Secret's annotations name (`Kind.group/name`) when it is not the
/// Certificate's, as upstream's `SecretIssuerAnnotationsMatch` (`pkg/api/util/issuers.go`)
/// decides: absent annotations match only a namespaced `Issuer` of the default group; kinds
/// and groups default before they are compared.
pub(super) fn issuer_mismatch(secret: &Value, cert: &Value) -> Option<String> {
    let annotation = |key: &str| {
        s(
            secret,
            &format!("/metadata/annotations/cert-manager.io~1{key}"),
        )
    };
    let (name, kind, group) = (
        annotation("issuer-name"),
        annotation("issuer-kind"),
        annotation("issuer-group"),
    );
    let kind_of = |k: Option<&str>| k.filter(|k| !k.is_empty()).unwrap_or("Issuer").to_string();
    let group_of = |g: Option<&str>| g.filter(|g| !g.is_empty()).unwrap_or(CM).to_string();
    let name_differs = (name.is_some() || kind.is_some() || group.is_some())
        && name.unwrap_or_default() != s(cert, "/spec/issuerRef/name").unwrap_or_default();
    let differs = name_differs
        || kind_of(kind) != kind_of(s(cert, "/spec/issuerRef/kind"))
        || group_of(group) != group_of(s(cert, "/spec/issuerRef/group"));
    differs.then(|| {
        format!(
            "{}.{}/{}",
            kind_of(kind),
            group_of(group),
            name.unwrap_or_default()
        )
    })
}

/// Whether the Certificate's spec differs from the request of its failed attempt (the next
/// revision's): its issuer, names or duration (`pki.RequestMatchesSpec`, read by
/// `shouldBackoffReissuingOnFailure`). Then re-issuing does not wait for the backoff.
pub(super) fn spec_changed_since(api: &Api<'_>, cert: &Value) -> bool {
    let (ns, name) = ns_name(cert);
    let next = cert
        .pointer("/status/revision")
        .and_then(Value::as_i64)
        .unwrap_or(0)
        + 1;
    let Some(cr) = api.get(
        CM,
        "certificaterequests",
        Some(ns),
        &format!("{name}-{next}"),
    ) else {
        return false;
    };
    let issuer = |obj: &Value| {
        (
            s(obj, "/spec/issuerRef/name")
                .unwrap_or_default()
                .to_string(),
            s(obj, "/spec/issuerRef/kind")
                .filter(|k| !k.is_empty())
                .unwrap_or("Issuer")
                .to_string(),
            s(obj, "/spec/issuerRef/group")
                .filter(|g| !g.is_empty())
                .unwrap_or(CM)
                .to_string(),
        )
    };
    let duration = |obj: &Value| {
        s(obj, "/spec/duration")
            .and_then(go_duration)
            .unwrap_or(Duration::days(90))
    };
    let mut wanted = names(cert);
    wanted.sort();
    let mut requested = requested_names(s(&cr, "/spec/request").unwrap_or_default());
    requested.sort();
    issuer(&cr) != issuer(cert) || duration(&cr) != duration(cert) || requested != wanted
}

/// The DNS names a request's CSR (base64 of its PEM) asks for.
fn requested_names(b64: &str) -> Vec<String> {
    use x509_parser::extensions::{GeneralName, ParsedExtension};
    use x509_parser::prelude::FromDer;
    let Ok(pem) = base64::engine::general_purpose::STANDARD.decode(b64) else {
        return Vec::new();
    };
    let Ok((_, pem)) = x509_parser::pem::parse_x509_pem(&pem) else {
        return Vec::new();
    };
    let Ok((_, csr)) =
        x509_parser::certification_request::X509CertificationRequest::from_der(&pem.contents)
    else {
        return Vec::new();
    };
    csr.requested_extensions()
        .into_iter()
        .flatten()
        .filter_map(|e| match e {
            ParsedExtension::SubjectAlternativeName(san) => Some(san),
            _ => None,
        })
        .flat_map(|san| san.general_names.iter())
        .filter_map(|n| match n {
            GeneralName::DNSName(d) => Some(d.to_string()),
            _ => None,
        })
        .collect()
}

//! cert-manager's trigger controller: whether a Certificate that is not issuing must be
//! issued again, and whether a failed one waits out its backoff first.

use base64::Engine;
use chrono::{DateTime, Duration, Utc};
use serde_json::Value;

use super::{go_duration, names, ns_name, CM};
use crate::sim::letsencrypt::rfc3339;
use crate::sim::{s, time, Api};

/// The first re-issue reason of upstream's trigger chain that applies
/// (`internal/controller/certificates/policies/policies.go` `NewTriggerPolicyChain`, in its
/// order): the Secret missing or without data, a key pair that does not load or match
/// (`SecretPublicKeysDiffer`), issued by another issuer (`SecretIssuerAnnotationsMismatch`,
/// annotations that are absent match only a namespaced Issuer of the default group), for
/// another Certificate, for other names, a key that is not the current request's
/// (`SecretPublicKeyDiffersFromCurrentCertificateRequest`), or due for renewal by the
/// certificate in the Secret (`CurrentCertificateNearingExpiry`).
pub(super) fn trigger(
    api: &Api<'_>,
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
    if let Some(missing) = missing_data(secret) {
        return Some(("MissingData", missing.to_string()));
    }
    if let Some((reason, message)) = key_pair_differs(secret) {
        return Some((reason, message));
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
    if let Some(message) = differs_from_current_request(api, cert, secret) {
        return Some(("SecretMismatch", message));
    }
    if never_issued {
        // A Secret the readiness controller would not adopt for another reason (its names,
        // its expiry): kubesim words that trigger as a missing certificate.
        return does_not_exist();
    }
    // CurrentCertificateNearingExpiry: the renewal time of the certificate in the Secret.
    secret_renewal_time(cert, secret)
        .or_else(|| time(cert, "/status/renewalTime"))
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

/// `SecretIsMissingData`: the message when a half of the key pair is absent or empty.
fn missing_data(secret: &Value) -> Option<&'static str> {
    let present = |key: &str| data(secret, key).is_some_and(|v| !v.is_empty());
    if secret.get("data").is_none_or(Value::is_null) {
        Some("Issuing certificate as Secret does not contain any data")
    } else if !present("tls.key") {
        Some("Issuing certificate as Secret does not contain a private key")
    } else if !present("tls.crt") {
        Some("Issuing certificate as Secret does not contain a certificate")
    } else {
        None
    }
}

/// A data field of a Secret, decoded.
fn data(secret: &Value, key: &str) -> Option<Vec<u8>> {
    s(secret, &format!("/data/{key}"))
        .and_then(|v| base64::engine::general_purpose::STANDARD.decode(v).ok())
}

/// The SubjectPublicKeyInfo of the Secret's private key, or why it does not load.
fn secret_public_key(secret: &Value) -> Result<Vec<u8>, String> {
    use rcgen::PublicKeyData;
    let pem = data(secret, "tls.key").unwrap_or_default();
    let pem =
        String::from_utf8(pem).map_err(|_| "error decoding private key PEM block".to_string())?;
    rcgen::KeyPair::from_pem(&pem)
        .map(|k| k.subject_public_key_info())
        .map_err(|_| "error decoding private key PEM block".to_string())
}

/// `SecretPublicKeysDiffer`: the key or the certificate does not load, or the key is not the
/// certificate's (`InvalidKeyPair`, `InvalidCertificate`, upstream's wording).
fn key_pair_differs(secret: &Value) -> Option<(&'static str, String)> {
    let key = match secret_public_key(secret) {
        Ok(key) => key,
        Err(e) => {
            return Some((
                "InvalidKeyPair",
                format!("Issuing certificate as Secret contains invalid private key data: {e}"),
            ))
        }
    };
    let pem = data(secret, "tls.crt").unwrap_or_default();
    let leaf = x509_parser::pem::parse_x509_pem(&pem)
        .ok()
        .and_then(|(_, pem)| {
            Some(
                pem.parse_x509()
                    .ok()?
                    .tbs_certificate
                    .subject_pki
                    .raw
                    .to_vec(),
            )
        });
    let Some(leaf) = leaf else {
        return Some((
            "InvalidCertificate",
            "Issuing certificate as Secret contains an invalid certificate: error decoding certificate PEM block".to_string(),
        ));
    };
    (leaf != key).then(|| {
        (
            "InvalidKeyPair",
            "Issuing certificate as Secret contains a private key that does not match the certificate".to_string(),
        )
    })
}

/// `SecretPublicKeyDiffersFromCurrentCertificateRequest`: the Secret's key is not the one
/// of the request that issued the current revision (when that request still exists).
fn differs_from_current_request(api: &Api<'_>, cert: &Value, secret: &Value) -> Option<String> {
    use x509_parser::prelude::FromDer;
    let (ns, name) = ns_name(cert);
    let revision = cert.pointer("/status/revision").and_then(Value::as_i64)?;
    let cr = api.get(
        CM,
        "certificaterequests",
        Some(ns),
        &format!("{name}-{revision}"),
    )?;
    let pem = base64::engine::general_purpose::STANDARD
        .decode(s(&cr, "/spec/request")?)
        .ok()?;
    let (_, pem) = x509_parser::pem::parse_x509_pem(&pem).ok()?;
    let (_, csr) =
        x509_parser::certification_request::X509CertificationRequest::from_der(&pem.contents)
            .ok()?;
    let requested = csr.certification_request_info.subject_pki.raw.to_vec();
    let key = secret_public_key(secret).ok()?;
    (requested != key).then(|| {
        "Secret contains a private key that does not match the current CertificateRequest"
            .to_string()
    })
}

/// When the certificate in the Secret is due for renewal (`renewaltime.go`, from its own
/// notBefore and notAfter and the Certificate's renewBefore).
fn secret_renewal_time(cert: &Value, secret: &Value) -> Option<DateTime<Utc>> {
    let pem = data(secret, "tls.crt")?;
    let (_, pem) = x509_parser::pem::parse_x509_pem(&pem).ok()?;
    let leaf = pem.parse_x509().ok()?;
    let at = |t: x509_parser::time::ASN1Time| DateTime::from_timestamp(t.timestamp(), 0);
    let (not_before, not_after) = (
        at(leaf.validity().not_before)?,
        at(leaf.validity().not_after)?,
    );
    Some(not_after - super::renew_before(cert, not_after - not_before))
}

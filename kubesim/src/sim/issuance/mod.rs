//! Issuance as cert-manager does it: a trigger (`trigger.rs`) sets `Issuing=True`; a
//! CertificateRequest (`<name>-<revision>`, with the revision annotations and a real CSR) is
//! reviewed by the approver ([`crate::sim::approver`]: approved, left waiting, or denied);
//! while it is pending the Secret gets cert-manager's temporary certificate when asked for
//! (`temporary.rs`); it leads to an ACME Order and one Challenge per name, processed as the
//! [`scheduler`] gives them slots; success writes the Secret and the Certificate's status
//! (`notBefore`, `notAfter`, `renewalTime` at 2/3 of the lifetime, `revision`); failure (or a
//! denial) sets `Issuing=False`, `failedIssuanceAttempts` and `lastFailureTime`, and the next
//! attempt waits 1h·2^(n−1), at most 32h, unless the spec changed. Challenges are deleted
//! after success and requests pruned to one.

use base64::Engine;
use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Value};

use super::letsencrypt::{rfc3339, Server};
use super::{cilium, hash, s, time, Api, World};

mod acme;
mod readiness;
pub mod scheduler;
mod solver;
mod temporary;
mod trigger;

use trigger::{spec_changed_since, trigger};

pub use acme::account_of;
use acme::acme;
pub(crate) use acme::APP_PAGE;

const ISSUING: &str = "cert-manager-certificates-issuing";
const TRIGGER: &str = "cert-manager-certificates-trigger";
const REQUESTS: &str = "cert-manager-certificaterequests-issuer-acme";
const ORDERS: &str = "cert-manager-orders";
const CHALLENGES: &str = "cert-manager-challenges";
const CM: &str = "cert-manager.io";
const ACME: &str = "acme.cert-manager.io";

/// When a presented HTTP-01 challenge's self-check first runs.
const PRESENT_AFTER: i64 = 2;
/// When a passing self-check lets the CA validate.
const VALIDATE_AFTER: i64 = 5;

fn condition<'v>(obj: &'v Value, kind: &str) -> Option<&'v Value> {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c["type"] == kind)
}

fn is(obj: &Value, kind: &str, status: &str) -> bool {
    condition(obj, kind).is_some_and(|c| c["status"] == status)
}

/// The conditions list with `new` replacing the condition of its type (and `drop` removed).
fn with_condition(obj: &Value, new: Value, drop: &[&str], now: DateTime<Utc>) -> Value {
    let kind = new["type"].as_str().unwrap_or_default().to_string();
    let mut list: Vec<Value> = obj
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    list.retain(|c| !drop.contains(&c["type"].as_str().unwrap_or_default()));
    let mut new = new;
    let changed = list
        .iter()
        .find(|c| c["type"] == kind.as_str())
        .is_none_or(|old| old["status"] != new["status"]);
    let last = if changed {
        json!(rfc3339(now))
    } else {
        list.iter()
            .find(|c| c["type"] == kind.as_str())
            .map(|c| c["lastTransitionTime"].clone())
            .unwrap_or(json!(rfc3339(now)))
    };
    new["lastTransitionTime"] = last;
    new["observedGeneration"] = obj
        .pointer("/metadata/generation")
        .cloned()
        .unwrap_or(json!(1));
    match list.iter_mut().find(|c| c["type"] == kind.as_str()) {
        Some(c) => *c = new,
        None => list.push(new),
    }
    Value::Array(list)
}

fn cond(kind: &str, status: &str, reason: &str, message: &str) -> Value {
    json!({"type": kind, "status": status, "reason": reason, "message": message})
}

fn names(cert: &Value) -> Vec<String> {
    let mut out: Vec<String> = cert
        .pointer("/spec/dnsNames")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|n| n.as_str().map(str::to_string))
        .collect();
    if let Some(cn) = s(cert, "/spec/commonName") {
        if !out.iter().any(|n| n == cn) {
            out.push(cn.to_string());
        }
    }
    out
}

/// A real PKCS#10 request for the names, base64 of its PEM as cert-manager stores it.
fn csr(names: &[String]) -> String {
    match super::pki::request(names) {
        Some(pem) => base64::engine::general_purpose::STANDARD.encode(pem),
        None => {
            tracing::warn!("could not build a CSR; leaving spec.request empty");
            String::new()
        }
    }
}

/// Parses Go durations like `2160h`, `90m`, `1h30m`.
pub(crate) fn go_duration(s: &str) -> Option<Duration> {
    let mut total = Duration::zero();
    let mut num = String::new();
    for c in s.chars() {
        if c.is_ascii_digit() || c == '.' {
            num.push(c);
            continue;
        }
        let n: f64 = num.parse().ok()?;
        num.clear();
        total += match c {
            'h' => Duration::milliseconds((n * 3_600_000.0) as i64),
            'm' => Duration::milliseconds((n * 60_000.0) as i64),
            's' => Duration::milliseconds((n * 1000.0) as i64),
            _ => return None,
        };
    }
    num.is_empty().then_some(total)
}

fn backoff(attempts: i64) -> Duration {
    let exp = attempts.clamp(1, 10) - 1;
    Duration::hours(1 << exp).min(Duration::hours(32))
}

/// pkg/util/pki/renewaltime.go desiredRenewalTime: renewBefore when within the lifetime,
/// else renewBeforePercentage of it when in (0, 100), else a third.
fn renew_before(cert: &Value, lifetime: Duration) -> Duration {
    let percentage = cert
        .pointer("/spec/renewBeforePercentage")
        .and_then(Value::as_i64)
        .filter(|p| (1..100).contains(p));
    s(cert, "/spec/renewBefore")
        .and_then(go_duration)
        .filter(|rb| *rb > Duration::zero() && *rb < lifetime)
        .or_else(|| percentage.map(|p| lifetime * i32::try_from(p).unwrap_or(33) / 100))
        .unwrap_or(lifetime / 3)
}

pub(super) fn reconcile(api: &Api<'_>, world: &World) {
    for cert in api.list(CM, "certificates") {
        certificate(api, world, &cert);
    }
    let max = match world.max_concurrent_challenges {
        0 => scheduler::DEFAULT_MAX_CONCURRENT,
        n => n,
    };
    scheduler::schedule(api, max);
}

fn ns_name(obj: &Value) -> (&str, &str) {
    (
        s(obj, "/metadata/namespace").unwrap_or_default(),
        s(obj, "/metadata/name").unwrap_or_default(),
    )
}

fn certificate(api: &Api<'_>, world: &World, cert: &Value) {
    let now = api.now;
    let (ns, name) = ns_name(cert);
    if is(cert, "Issuing", "True") {
        return attempt(api, world, cert);
    }
    let not_after = time(cert, "/status/notAfter");
    let secret = s(cert, "/spec/secretName").and_then(|sn| api.get("", "secrets", Some(ns), sn));
    if not_after.is_none() && readiness::adopt(api, cert, secret.as_ref()) {
        return;
    }
    let trigger = trigger(api, cert, secret.as_ref(), not_after.is_none(), now);
    if let Some((reason, message)) = trigger {
        let attempts = cert
            .pointer("/status/failedIssuanceAttempts")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        // trigger_controller.go shouldBackoffReissuingOnFailure: every trigger waits out the
        // backoff after a failure — unless the spec changed since the failed request.
        let waiting = attempts > 0
            && time(cert, "/status/lastFailureTime").is_some_and(|lf| now < lf + backoff(attempts))
            && !spec_changed_since(api, cert);
        if !waiting {
            let mut conditions =
                with_condition(cert, cond("Issuing", "True", reason, &message), &[], now);
            if not_after.is_none() || reason != "Renewing" {
                // The readiness controller's verdict on the same Secret: its chain has every
                // check of the trigger's but the renewal time.
                conditions = with_condition(
                    &json!({"status": {"conditions": conditions}}),
                    cond("Ready", "False", reason, &message),
                    &[],
                    now,
                );
            }
            api.patch_status(
                CM,
                "certificates",
                Some(ns),
                name,
                &json!({"status": {"conditions": conditions}}),
                TRIGGER,
            );
            api.event(
                cert,
                "Certificate",
                "Normal",
                "Issuing",
                &message,
                "cert-manager-certificates-trigger",
            );
            return;
        }
    }
    if let Some(na) = not_after.filter(|na| *na <= now) {
        if !condition(cert, "Ready").is_some_and(|c| c["reason"] == "Expired") {
            let message = format!(
                "Certificate expired on {}",
                na.format("%a, %d %b %Y %H:%M:%S UTC")
            );
            let conditions =
                with_condition(cert, cond("Ready", "False", "Expired", &message), &[], now);
            api.patch_status(
                CM,
                "certificates",
                Some(ns),
                name,
                &json!({"status": {"conditions": conditions}}),
                "cert-manager-certificates-readiness",
            );
        }
    }
}

/// One issuance attempt in flight.
fn attempt(api: &Api<'_>, world: &World, cert: &Value) {
    let (ns, name) = ns_name(cert);
    let revision = cert
        .pointer("/status/revision")
        .and_then(Value::as_i64)
        .unwrap_or(0)
        + 1;
    let cr_name = format!("{name}-{revision}");
    let started = condition(cert, "Issuing")
        .and_then(|c| c["lastTransitionTime"].as_str())
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc));
    let existing = api.get(CM, "certificaterequests", Some(ns), &cr_name);
    // A request that failed before this attempt started is replaced.
    let stale = existing.as_ref().is_some_and(|cr| {
        is(cr, "Ready", "False")
            && condition(cr, "Ready").is_some_and(|c| c["reason"] == "Failed")
            && time(cr, "/status/failureTime") < started
    });
    if stale {
        api.delete(CM, "certificaterequests", Some(ns), &cr_name);
    }
    let cr = match existing.filter(|_| !stale) {
        Some(cr) => cr,
        None => {
            // The Certificate's annotations are copied when the request is made, and only
            // then (BuildAnnotationsToCopy in requestmanager_controller.go; the default
            // --copied-annotation-prefixes leave out kubectl's, Flux's and Argo CD's).
            let mut annotations = copied_annotations(cert);
            annotations.insert(
                "cert-manager.io/certificate-revision".into(),
                json!(revision.to_string()),
            );
            annotations.insert("cert-manager.io/certificate-name".into(), json!(name));
            annotations.insert(
                "cert-manager.io/private-key-secret-name".into(),
                json!(format!(
                    "{name}-{}",
                    hash(world.seed, &[ns, name]) % 100_000
                )),
            );
            let request = json!({
                "apiVersion": "cert-manager.io/v1", "kind": "CertificateRequest",
                "metadata": {"name": cr_name, "namespace": ns,
                    "labels": cert.pointer("/metadata/labels").cloned().unwrap_or(json!({})),
                    "annotations": annotations,
                    "ownerReferences": [{"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "name": name, "uid": cert.pointer("/metadata/uid"), "controller": true, "blockOwnerDeletion": true}]},
                "spec": {"request": csr(&names(cert)), "issuerRef": cert.pointer("/spec/issuerRef"), "usages": cert.pointer("/spec/usages"), "duration": cert.pointer("/spec/duration").cloned().unwrap_or(json!("2160h0m0s"))},
            });
            let Some(created) = api.create(
                CM,
                "certificaterequests",
                Some(ns),
                request,
                "cert-manager-certificates-request-manager",
            ) else {
                return;
            };
            // The approver's review: approved at once, left unapproved, or denied.
            super::approver::review(api, &world.approver, created, &names(cert))
        }
    };
    // A denied request: cert-manager's request controller marks it Ready=False `Denied`,
    // and the issuing controller fails the attempt with the Denied condition's reason and
    // message (`certificaterequests/sync.go`, `util/reporter.go` `Denied`,
    // `issuing_controller.go` `failIssueCertificate`) — again after each backoff, as the
    // request stays.
    if let Some(denied) = condition(&cr, "Denied")
        .filter(|c| c["status"] == "True")
        .cloned()
    {
        if !condition(&cr, "Ready").is_some_and(|c| c["reason"] == "Denied") {
            set_request(
                api,
                &cr,
                "False",
                "Denied",
                "The CertificateRequest was denied by an approval controller",
                true,
            );
        }
        return fail(
            api,
            cert,
            denied["reason"].as_str().unwrap_or("Denied"),
            denied["message"].as_str().unwrap_or_default(),
        );
    }
    // Not approved: nothing signs it, no Ready condition, no temporary certificate.
    if !is(&cr, "Approved", "True") {
        return;
    }
    if is(&cr, "Ready", "True") {
        return complete(api, cert, &cr);
    }
    if let Some(failed) = condition(&cr, "Ready").filter(|c| c["reason"] == "Failed") {
        return fail(
            api,
            cert,
            "Failed",
            failed["message"].as_str().unwrap_or_default(),
        );
    }
    // A pending request (one with a Ready condition): the temporary certificate first.
    if condition(&cr, "Ready").is_some() && temporary::ensure(api, cert) {
        return;
    }
    acme(api, world, cert, &cr);
}

/// The annotations cert-manager copies from a Certificate to its CertificateRequest.
fn copied_annotations(cert: &Value) -> serde_json::Map<String, Value> {
    const NOT_COPIED: [&str; 3] = [
        "kubectl.kubernetes.io/",
        "fluxcd.io/",
        "argocd.argoproj.io/",
    ];
    cert.pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(k, _)| !NOT_COPIED.iter().any(|p| k.starts_with(p)))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn set_request(api: &Api<'_>, cr: &Value, status: &str, reason: &str, message: &str, failed: bool) {
    let (ns, name) = ns_name(cr);
    let current = condition(cr, "Ready");
    if current.is_some_and(|c| c["reason"] == reason && c["message"] == message) {
        return;
    }
    let mut patch = json!({"status": {"conditions": with_condition(cr, cond("Ready", status, reason, message), &[], api.now)}});
    if failed {
        patch["status"]["failureTime"] = json!(rfc3339(api.now));
    }
    api.patch_status(CM, "certificaterequests", Some(ns), name, &patch, REQUESTS);
}

/// Success: Secret metadata, Certificate status, cleanup.
fn complete(api: &Api<'_>, cert: &Value, cr: &Value) {
    let (ns, name) = ns_name(cert);
    let now = api.now;
    let revision: i64 = s(
        cr,
        "/metadata/annotations/cert-manager.io~1certificate-revision",
    )
    .and_then(|r| r.parse().ok())
    .unwrap_or(1);
    let lifetime = s(cert, "/spec/duration")
        .and_then(go_duration)
        .unwrap_or(Duration::days(90));
    let renew_before = renew_before(cert, lifetime);
    let (not_before, not_after) = (now, now + lifetime);
    let secret_name = s(cert, "/spec/secretName").unwrap_or(name);
    let all = names(cert);
    // The signed chain: on the request (`status.certificate`, public) and in the Secret.
    let signed = signed_chain(api, cr, &all, not_before, not_after);
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
        "metadata": {"name": secret_name, "namespace": ns, "labels": {"controller.cert-manager.io/fao": "true"},
            "annotations": {"cert-manager.io/certificate-name": name, "cert-manager.io/issuer-name": s(cert, "/spec/issuerRef/name"),
                "cert-manager.io/issuer-kind": s(cert, "/spec/issuerRef/kind").unwrap_or("Issuer"), "cert-manager.io/issuer-group": "cert-manager.io",
                "cert-manager.io/common-name": all.first(), "cert-manager.io/alt-names": all.join(","), "cert-manager.io/ip-sans": "", "cert-manager.io/uri-sans": ""}}});
    let mut secret = secret;
    if let Some((chain, key)) = &signed {
        secret["data"] = json!({"tls.crt": chain, "tls.key": key, "ca.crt": ""});
    }
    if api.get("", "secrets", Some(ns), secret_name).is_some() {
        let mut patch = json!({"metadata": secret["metadata"]});
        if signed.is_some() {
            patch["data"] = secret["data"].clone();
        }
        api.patch("", "secrets", Some(ns), secret_name, &patch, ISSUING);
    } else {
        api.create("", "secrets", Some(ns), secret, ISSUING);
    }
    let ready = cond(
        "Ready",
        "True",
        "Ready",
        "Certificate is up to date and has not expired",
    );
    let conditions = with_condition(cert, ready, &["Issuing"], now);
    let status = json!({"status": {"conditions": conditions, "notBefore": rfc3339(not_before), "notAfter": rfc3339(not_after),
        "renewalTime": rfc3339(not_after - renew_before), "revision": revision, "failedIssuanceAttempts": null, "lastFailureTime": null}});
    api.patch_status(CM, "certificates", Some(ns), name, &status, ISSUING);
    api.event(
        cert,
        "Certificate",
        "Normal",
        "Issuing",
        "The certificate has been successfully issued",
        "cert-manager-certificates-issuing",
    );
    // Challenges go after success; requests are pruned to the latest (owners cascade).
    let cr_name = s(cr, "/metadata/name").unwrap_or_default();
    for ch in api.list(ACME, "challenges").iter().filter(|c| {
        s(c, "/metadata/namespace") == Some(ns)
            && s(c, "/metadata/ownerReferences/0/name").is_some_and(|o| o.starts_with(cr_name))
    }) {
        api.delete(
            ACME,
            "challenges",
            Some(ns),
            s(ch, "/metadata/name").unwrap_or_default(),
        );
    }
    for old in api.list(CM, "certificaterequests") {
        let (ons, oname) = ns_name(&old);
        if ons == ns
            && oname != cr_name
            && s(&old, "/metadata/ownerReferences/0/uid") == s(cert, "/metadata/uid")
        {
            api.delete(CM, "certificaterequests", Some(ns), oname);
        }
    }
}

/// Signs the leaf of a successful request with the hierarchy of its issuer (Let's
/// Encrypt production or staging, else the private CA) and records it on the request as
/// cert-manager does (`status.certificate`, base64 of the PEM chain). Returns the chain and
/// the key for the Secret.
fn signed_chain(
    api: &Api<'_>,
    cr: &Value,
    names: &[String],
    not_before: DateTime<Utc>,
    not_after: DateTime<Utc>,
) -> Option<(String, String)> {
    let (ns, cr_name) = ns_name(cr);
    let issuer = match s(cr, "/spec/issuerRef/kind") {
        Some("ClusterIssuer") => {
            api.get(CM, "clusterissuers", None, s(cr, "/spec/issuerRef/name")?)
        }
        _ => api.get(CM, "issuers", Some(ns), s(cr, "/spec/issuerRef/name")?),
    };
    let hierarchy = match issuer
        .as_ref()
        .and_then(|i| s(i, "/spec/acme/server"))
        .and_then(Server::from_url)
    {
        Some(Server::Production) => super::pki::Hierarchy::Production,
        Some(Server::Staging) => super::pki::Hierarchy::Staging,
        None => super::pki::Hierarchy::Private,
    };
    let serial = hash(0, &[ns, cr_name, &rfc3339(not_before)]);
    let (chain, key) = super::pki::issue(hierarchy, names, not_before, not_after, serial)?;
    api.patch_status(
        CM,
        "certificaterequests",
        Some(ns),
        cr_name,
        &json!({"status": {"certificate": chain}}),
        REQUESTS,
    );
    Some((chain, key))
}

/// Failure: `Issuing=False` with the request's condition's reason (`Failed`, or the
/// approver's for a denial), one more failed attempt, the backoff starts.
fn fail(api: &Api<'_>, cert: &Value, reason: &str, cr_message: &str) {
    let (ns, name) = ns_name(cert);
    let attempts = cert
        .pointer("/status/failedIssuanceAttempts")
        .and_then(Value::as_i64)
        .unwrap_or(0)
        + 1;
    let message =
        format!("The certificate request has failed to complete and will be retried: {cr_message}");
    let conditions = with_condition(
        cert,
        cond("Issuing", "False", reason, &message),
        &[],
        api.now,
    );
    let status = json!({"status": {"conditions": conditions, "failedIssuanceAttempts": attempts, "lastFailureTime": rfc3339(api.now)}});
    api.patch_status(CM, "certificates", Some(ns), name, &status, ISSUING);
    api.event(
        cert,
        "Certificate",
        "Warning",
        reason,
        &message,
        "cert-manager-certificates-issuing",
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_parse() {
        assert_eq!(go_duration("2160h0m0s"), Some(Duration::days(90)));
        assert_eq!(go_duration("2m"), Some(Duration::minutes(2)));
        assert_eq!(go_duration("1h30m"), Some(Duration::minutes(90)));
        assert_eq!(go_duration("soon"), None);
    }

    #[test]
    fn backoff_doubles_to_32_hours() {
        assert_eq!(backoff(1), Duration::hours(1));
        assert_eq!(backoff(3), Duration::hours(4));
        assert_eq!(backoff(7), Duration::hours(32));
    }

    #[test]
    fn a_csr_is_real_pem() {
        let b64 = csr(&["shop.example.com".to_string()]);
        let pem = String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(b64)
                .unwrap(),
        )
        .unwrap();
        assert!(
            pem.starts_with("-----BEGIN CERTIFICATE REQUEST-----"),
            "{pem}"
        );
    }
}

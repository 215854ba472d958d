//! cert-manager's ingress-shim: one Certificate per TLS entry of an annotated Ingress, named
//! after its secretName and owned by the Ingress; the edit-in-place override annotations only
//! when the Certificate is created (DOMAIN.md §1.8). An Ingress that names one secretName in
//! two TLS entries is refused whole with a `BadConfig` event, as cert-manager's
//! `pkg/controller/certificate-shim/sync.go` does (`validateIngressLike`,
//! `checkForDuplicateSecretNames`).

use serde_json::{json, Value};

use super::{s, Api};

const MANAGER: &str = "cert-manager-ingress-shim";

/// cert-manager's `--default-issuer-name`, `--default-issuer-kind` and
/// `--default-issuer-group`: what an Ingress with only `kubernetes.io/tls-acme` gets.
/// Upstream's defaults are an empty name, kind `Issuer`, group `cert-manager.io`
/// (`internal/apis/config/controller/v1alpha1/defaults.go`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefaultIssuer {
    pub name: String,
    pub kind: String,
    pub group: String,
}

impl DefaultIssuer {
    /// `Kind/name` or `Kind.group/name` (`ClusterIssuer/letsencrypt-prod`).
    pub fn parse(s: &str) -> Result<Self, String> {
        let (kind_group, name) = s
            .split_once('/')
            .ok_or_else(|| format!("{s:?} is not Kind/name or Kind.group/name"))?;
        let (kind, group) = kind_group
            .split_once('.')
            .unwrap_or((kind_group, "cert-manager.io"));
        if kind.is_empty() || name.is_empty() || group.is_empty() {
            return Err(format!("{s:?} is not Kind/name or Kind.group/name"));
        }
        Ok(DefaultIssuer {
            name: name.into(),
            kind: kind.into(),
            group: group.into(),
        })
    }
}

/// Whether ingress-shim syncs an Ingress: an issuer annotation is present, or
/// `kubernetes.io/tls-acme` (the default of `--auto-certificate-annotations`) is true as Go's
/// `strconv.ParseBool` reads it (`sync.go`, `hasShimAnnotation`).
fn has_shim_annotation(ing: &Value) -> bool {
    let ann = |k: &str| {
        s(
            ing,
            &format!("/metadata/annotations/{}", k.replace('/', "~1")),
        )
    };
    ann("cert-manager.io/issuer").is_some()
        || ann("cert-manager.io/cluster-issuer").is_some()
        || ann("kubernetes.io/tls-acme").is_some_and(|v| super::go_bool(v) == Some(true))
}

/// The issuer a synced Ingress asks for, from its annotations over the defaults; None when
/// ingress-shim does not sync it; Err with ingress-shim's words when they contradict each
/// other or name no issuer (cert-manager `pkg/controller/certificate-shim/sync.go`,
/// `issuerForIngressLike`).
pub(super) fn issuer_ref(
    ing: &Value,
    default: Option<&DefaultIssuer>,
) -> Option<Result<Value, String>> {
    if !has_shim_annotation(ing) {
        return None;
    }
    let ann = |k: &str| {
        s(
            ing,
            &format!("/metadata/annotations/{}", k.replace('/', "~1")),
        )
        .map(str::to_string)
    };
    let (issuer, cluster) = (
        ann("cert-manager.io/issuer"),
        ann("cert-manager.io/cluster-issuer"),
    );
    let (kind, group) = (
        ann("cert-manager.io/issuer-kind"),
        ann("cert-manager.io/issuer-group"),
    );
    let fallback = default.map(|d| d.name.clone()).unwrap_or_default();
    let name = cluster.clone().or(issuer.clone()).unwrap_or(fallback);
    let mut errors: Vec<String> = Vec::new();
    if name.is_empty() {
        errors.push("failed to determine issuer name to be used for ingress resource".into());
    }
    let both = |a: &str, b: &str| format!("both \"{a}\" and \"{b}\" may not be set");
    if issuer.is_some() && cluster.is_some() {
        errors.push(both(
            "cert-manager.io/issuer",
            "cert-manager.io/cluster-issuer",
        ));
    }
    if cluster.is_some() && group.is_some() {
        errors.push(both(
            "cert-manager.io/cluster-issuer",
            "cert-manager.io/issuer-group",
        ));
    }
    if cluster.is_some() && kind.is_some() {
        errors.push(both(
            "cert-manager.io/cluster-issuer",
            "cert-manager.io/issuer-kind",
        ));
    }
    if !errors.is_empty() {
        return Some(Err(format!(
            "Could not determine issuer for ingress due to bad annotations: {}",
            errors.join(", ")
        )));
    }
    // The defaults' group stays unless `issuer-group` says otherwise; their kind gives way to
    // either issuer annotation.
    let default_group = default.map_or("cert-manager.io".to_string(), |d| d.group.clone());
    let default_kind = match default {
        Some(d) if issuer.is_none() => d.kind.clone(),
        _ => "Issuer".to_string(),
    };
    Some(Ok(if cluster.is_some() {
        json!({"name": name, "kind": "ClusterIssuer", "group": default_group})
    } else {
        json!({"name": name, "kind": kind.unwrap_or(default_kind),
               "group": group.unwrap_or(default_group)})
    }))
}

fn owned_by(obj: &Value, uid: &str) -> bool {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|r| r["controller"] == json!(true) && r["uid"].as_str() == Some(uid))
}

/// Why ingress-shim refuses an Ingress whose TLS entries repeat a secretName, worded as its
/// validation error reads (apimachinery's field error `<path>: Invalid value: "<value>":
/// <detail>`, several joined as `[a, b]`); None when every secretName is used once.
fn repeated_secret_names(ing: &Value) -> Option<String> {
    let tls = ing.pointer("/spec/tls")?.as_array()?;
    let names: Vec<&str> = tls
        .iter()
        .map(|t| {
            t.get("secretName")
                .and_then(Value::as_str)
                .unwrap_or_default()
        })
        .collect();
    let mut errors = Vec::new();
    let mut reported: Vec<&str> = Vec::new();
    for (i, name) in names.iter().enumerate() {
        if reported.contains(name) {
            continue;
        }
        if let Some(j) = names.iter().skip(i + 1).position(|n| n == name) {
            reported.push(name);
            errors.push(format!(
                "spec.tls[{i}].secretName: Invalid value: {name:?}: this secret name must only appear in a single TLS entry but is also used in spec.tls[{}].secretName",
                i + 1 + j
            ));
        }
    }
    match errors.len() {
        0 => None,
        1 => errors.pop(),
        _ => Some(format!("[{}]", errors.join(", "))),
    }
}

/// Why ingress-shim skips TLS entry `i` (`pkg/controller/certificate-shim/sync.go`
/// `validateIngressTLSBlock`: hosts and secretName are required), in apimachinery's words
/// (`spec.tls[0].hosts: Required value`, several as `[a, b]`); None when it is usable.
fn invalid_tls_block(i: usize, tls: &Value) -> Option<String> {
    let empty = |field: &str| match tls.get(field) {
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::String(s)) => s.is_empty(),
        _ => true,
    };
    let errors: Vec<String> = ["hosts", "secretName"]
        .into_iter()
        .filter(|f| empty(f))
        .map(|f| format!("spec.tls[{i}].{f}: Required value"))
        .collect();
    match errors.len() {
        0 => None,
        1 => errors.into_iter().next(),
        _ => Some(format!("[{}]", errors.join(", "))),
    }
}

/// Whether ingress-shim updates an owned Certificate to `spec` and `labels`
/// (`pkg/controller/certificate-shim/sync.go` `certNeedsUpdate`): its labels, commonName,
/// dnsNames in order, secretName, issuerRef name and kind, revisionHistoryLimit, the private
/// key's algorithm, encoding, rotation policy and (but for Ed25519) size, duration and
/// renewBefore — nothing else (not its annotations, not `usages`).
fn needs_update(existing: &Value, spec: &Value, labels: &Value) -> bool {
    let have = |path: &str| existing.pointer(path).filter(|v| !v.is_null());
    let want = |path: &str| {
        spec.pointer(path.strip_prefix("/spec").unwrap_or(path))
            .filter(|v| !v.is_null())
    };
    let empty = json!({});
    let labels_differ = existing.pointer("/metadata/labels").unwrap_or(&empty) != labels;
    let key_text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_string();
    let algorithm = key_text(want("/spec/privateKey/algorithm"));
    let mut compared = vec![
        "/spec/commonName",
        "/spec/dnsNames",
        "/spec/secretName",
        "/spec/issuerRef/name",
        "/spec/issuerRef/kind",
        "/spec/revisionHistoryLimit",
        "/spec/privateKey/algorithm",
        "/spec/privateKey/encoding",
        "/spec/privateKey/rotationPolicy",
        "/spec/duration",
        "/spec/renewBefore",
    ];
    if algorithm != "Ed25519" {
        compared.push("/spec/privateKey/size");
    }
    labels_differ || compared.into_iter().any(|p| have(p) != want(p))
}

/// A merge patch that makes the object at `current` equal to `wanted`: every key of
/// `current` that `wanted` lacks is removed (ingress-shim replaces the spec and labels whole).
fn replacing(current: Option<&Value>, wanted: &Value) -> Value {
    let mut patch = wanted.clone();
    if let (Some(Value::Object(old)), Value::Object(new)) = (current, &mut patch) {
        for k in old.keys() {
            if !new.contains_key(k) {
                new.insert(k.clone(), Value::Null);
            }
        }
    }
    patch
}

/// Records a `BadConfig` Warning about `ing`, once (the same event is not repeated on every
/// pass).
pub(super) fn bad_config(api: &Api<'_>, ing: &Value, kind: &str, message: &str) {
    let uid = s(ing, "/metadata/uid");
    let known = api.list("", "events").iter().any(|e| {
        s(e, "/involvedObject/uid") == uid
            && s(e, "/reason") == Some("BadConfig")
            && s(e, "/message") == Some(message)
    });
    if !known {
        api.event(ing, kind, "Warning", "BadConfig", message, MANAGER);
    }
}

/// The Certificate spec fields an Ingress's per-certificate annotations set, or why
/// ingress-shim refuses them (`pkg/controller/certificate-shim/helper.go`
/// translateAnnotations: the whole Ingress then gets no Certificate and no event).
pub(super) fn certificate_spec_from_annotations(
    ing: &Value,
) -> Result<serde_json::Map<String, Value>, String> {
    let get = |k: &str| s(ing, &format!("/metadata/annotations/cert-manager.io~1{k}"));
    let mut spec = serde_json::Map::new();
    for (key, field, minimum) in [
        ("duration", "duration", chrono::Duration::hours(1)),
        ("renew-before", "renewBefore", chrono::Duration::minutes(5)),
    ] {
        if let Some(v) = get(key) {
            let d = super::issuance::go_duration(v)
                .ok_or_else(|| format!("invalid ingress annotation \"cert-manager.io/{key}\": time: invalid duration {v:?}"))?;
            if d < minimum {
                return Err(format!(
                    "invalid ingress annotation \"cert-manager.io/{key}\": {field} too short"
                ));
            }
            spec.insert(field.into(), json!(v));
        }
    }
    if let Some(v) = get("renew-before-percentage") {
        let p: i32 = v.parse().map_err(|_| {
            format!("invalid ingress annotation \"cert-manager.io/renew-before-percentage\": strconv.ParseInt: parsing {v:?}: invalid syntax")
        })?;
        spec.insert("renewBeforePercentage".into(), json!(p));
    }
    if let Some(v) = get("private-key-algorithm") {
        if !["RSA", "ECDSA", "Ed25519"].contains(&v) {
            return Err(format!("invalid ingress annotation \"cert-manager.io/private-key-algorithm\": invalid private key algorithm {v:?}"));
        }
        spec.insert("privateKey".into(), json!({"algorithm": v}));
    }
    Ok(spec)
}

pub(super) fn reconcile(api: &Api<'_>, default: Option<&DefaultIssuer>) {
    let certificates = api.list("cert-manager.io", "certificates");
    for ing in api.list("networking.k8s.io", "ingresses") {
        let issuer = match issuer_ref(&ing, default) {
            None => continue,
            Some(Ok(issuer)) => issuer,
            Some(Err(why)) => {
                // Refused: nothing is created, updated or deleted for this Ingress.
                bad_config(api, &ing, "Ingress", &why);
                continue;
            }
        };
        if let Some(why) = repeated_secret_names(&ing) {
            // The whole Ingress is refused: nothing is created, updated or deleted for it.
            bad_config(api, &ing, "Ingress", &why);
            continue;
        }
        let Ok(extra_spec) = certificate_spec_from_annotations(&ing) else {
            // Refused without an event: cert-manager only logs it and retries.
            continue;
        };
        let ing_name = s(&ing, "/metadata/name").unwrap_or_default();
        let edit_in_place = s(
            &ing,
            "/metadata/annotations/acme.cert-manager.io~1http01-edit-in-place",
        ) == Some("true");
        let mut wanted: Vec<(String, Value)> = Vec::new();
        for (i, tls) in ing
            .pointer("/spec/tls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            if let Some(why) = invalid_tls_block(i, tls) {
                bad_config(api, &ing, "Ingress", &format!("Skipped a TLS block: {why}"));
                continue;
            }
            let (Some(secret), Some(hosts)) = (
                tls.get("secretName").and_then(Value::as_str),
                tls.get("hosts").filter(|h| h.is_array()),
            ) else {
                continue;
            };
            if wanted.iter().any(|(w, _)| w == secret) {
                continue;
            }
            wanted.push((secret.to_string(), hosts.clone()));
        }
        let annotations = if edit_in_place {
            json!({"acme.cert-manager.io/http01-override-ingress-name": ing_name, "cert-manager.io/issue-temporary-certificate": "true"})
        } else {
            json!({})
        };
        let shimmed = Shimmed {
            obj: &ing,
            kind: "Ingress",
            api_version: "networking.k8s.io/v1",
            issuer,
            extra_spec,
            annotations,
        };
        sync_certificates(api, &certificates, &shimmed, &wanted);
    }
    super::gateway_shim::reconcile(api, default, &certificates);
}

/// An object a shim issues for (an Ingress, a Gateway), and what its Certificates get.
pub(super) struct Shimmed<'a> {
    pub obj: &'a Value,
    pub kind: &'static str,
    pub api_version: &'static str,
    pub issuer: Value,
    /// Spec fields from its per-certificate annotations.
    pub extra_spec: serde_json::Map<String, Value>,
    /// The annotations a new Certificate gets.
    pub annotations: Value,
}

/// Keeps the Certificates `shimmed` owns in line with `wanted` (Secret name → dnsNames), as
/// `buildCertificates` and `sync` in cert-manager's `pkg/controller/certificate-shim/sync.go`
/// do: one created per Secret without a Certificate, an owned one updated when a field
/// `certNeedsUpdate` compares differs, one not owned left alone, an owned one no longer
/// wanted deleted.
pub(super) fn sync_certificates(
    api: &Api<'_>,
    certificates: &[Value],
    shimmed: &Shimmed<'_>,
    wanted: &[(String, Value)],
) {
    let obj = shimmed.obj;
    let ns = s(obj, "/metadata/namespace").unwrap_or_default();
    let name = s(obj, "/metadata/name").unwrap_or_default();
    let uid = s(obj, "/metadata/uid").unwrap_or_default();
    let source = if shimmed.kind == "Ingress" {
        "cert-manager-ingress-shim"
    } else {
        "cert-manager-gateway-shim"
    };
    // Labels are the object's, without kubectl's applyset label (cert-manager#7306).
    let mut labels = obj
        .pointer("/metadata/labels")
        .cloned()
        .unwrap_or(json!({}));
    if let Some(l) = labels.as_object_mut() {
        l.remove("applyset.kubernetes.io/part-of");
    }
    for (secret, hosts) in wanted {
        let secret = secret.as_str();
        let existing = certificates.iter().find(|c| {
            s(c, "/metadata/namespace") == Some(ns) && s(c, "/metadata/name") == Some(secret)
        });
        let mut spec = json!({"secretName": secret, "dnsNames": hosts, "issuerRef": shimmed.issuer, "usages": ["digital signature", "key encipherment"]});
        for (k, v) in &shimmed.extra_spec {
            spec[k] = v.clone();
        }
        match existing {
            None => {
                let cert = json!({
                    "apiVersion": "cert-manager.io/v1", "kind": "Certificate",
                    "metadata": {"name": secret, "namespace": ns, "annotations": shimmed.annotations, "labels": labels,
                        "ownerReferences": [{"apiVersion": shimmed.api_version, "kind": shimmed.kind, "name": name, "uid": uid, "controller": true, "blockOwnerDeletion": true}]},
                    "spec": spec,
                });
                if api
                    .create("cert-manager.io", "certificates", Some(ns), cert, MANAGER)
                    .is_some()
                {
                    api.event(
                        obj,
                        shimmed.kind,
                        "Normal",
                        "CreateCertificate",
                        &format!("Successfully created Certificate \"{secret}\""),
                        source,
                    );
                }
            }
            // Annotations are not compared: the spec and labels are kept in line, replaced
            // whole when a field certNeedsUpdate compares differs (DOMAIN.md §1.8).
            Some(c) if owned_by(c, uid) => {
                if needs_update(c, &spec, &labels) {
                    api.patch(
                        "cert-manager.io",
                        "certificates",
                        Some(ns),
                        secret,
                        &json!({"metadata": {"labels": replacing(c.pointer("/metadata/labels"), &labels)},
                                "spec": replacing(c.pointer("/spec"), &spec)}),
                        MANAGER,
                    );
                    api.event(
                        obj,
                        shimmed.kind,
                        "Normal",
                        "UpdateCertificate",
                        &format!("Successfully updated Certificate \"{secret}\""),
                        source,
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
        let cert = s(c, "/metadata/name").unwrap_or_default();
        if !wanted.iter().any(|(w, _)| w == cert) {
            api.delete("cert-manager.io", "certificates", Some(ns), cert);
            api.event(
                obj,
                shimmed.kind,
                "Normal",
                "DeleteCertificate",
                &format!("Successfully deleted unrequired Certificate \"{cert}\""),
                source,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owned_certificate_is_updated_on_the_fields_cert_needs_update_compares() {
        let spec = json!({"secretName": "a-tls", "dnsNames": ["a.example"], "usages": ["digital signature"],
                          "issuerRef": {"name": "le", "kind": "ClusterIssuer", "group": "cert-manager.io"}});
        let labels = json!({"app": "shop"});
        let cert =
            |spec: Value, labels: Value| json!({"metadata": {"labels": labels}, "spec": spec});
        assert!(!needs_update(
            &cert(spec.clone(), labels.clone()),
            &spec,
            &labels
        ));
        // Fields it does not compare: usages, the issuer's group.
        let mut other = spec.clone();
        other["usages"] = json!(["server auth"]);
        other["issuerRef"]["group"] = json!("example.io");
        assert!(!needs_update(&cert(other, labels.clone()), &spec, &labels));
        // Fields it does: labels, a duration set by hand, dnsNames' order, the key size.
        assert!(needs_update(&cert(spec.clone(), json!({})), &spec, &labels));
        let mut by_hand = spec.clone();
        by_hand["duration"] = json!("2160h");
        assert!(needs_update(&cert(by_hand, labels.clone()), &spec, &labels));
        let mut reordered = spec.clone();
        reordered["dnsNames"] = json!(["b.example", "a.example"]);
        let mut two = spec.clone();
        two["dnsNames"] = json!(["a.example", "b.example"]);
        assert!(needs_update(
            &cert(reordered, labels.clone()),
            &two,
            &labels
        ));
        let mut sized = spec.clone();
        sized["privateKey"] = json!({"algorithm": "Ed25519", "size": 256});
        let mut ed = spec.clone();
        ed["privateKey"] = json!({"algorithm": "Ed25519"});
        assert!(
            !needs_update(&cert(sized, labels.clone()), &ed, &labels),
            "no size for Ed25519"
        );
        // The patch replaces the spec whole.
        let patch = replacing(
            Some(&json!({"secretName": "a-tls", "duration": "2160h"})),
            &json!({"secretName": "a-tls"}),
        );
        assert_eq!(patch, json!({"secretName": "a-tls", "duration": null}));
    }

    #[test]
    fn a_tls_block_without_hosts_or_secret_name_is_skipped_in_apimachinerys_words() {
        assert_eq!(
            invalid_tls_block(0, &json!({"secretName": "a-tls"})).as_deref(),
            Some("spec.tls[0].hosts: Required value")
        );
        assert_eq!(
            invalid_tls_block(2, &json!({"hosts": [], "secretName": ""})).as_deref(),
            Some("[spec.tls[2].hosts: Required value, spec.tls[2].secretName: Required value]")
        );
        assert_eq!(
            invalid_tls_block(0, &json!({"hosts": ["a.example"], "secretName": "a-tls"})),
            None
        );
    }

    #[test]
    fn contradicting_issuer_annotations_are_refused_in_ingress_shims_words() {
        let ing = json!({"metadata": {"annotations": {
            "cert-manager.io/cluster-issuer": "le", "cert-manager.io/issuer": "local"}}});
        assert_eq!(
            issuer_ref(&ing, None),
            Some(Err("Could not determine issuer for ingress due to bad annotations: both \"cert-manager.io/issuer\" and \"cert-manager.io/cluster-issuer\" may not be set".into()))
        );
        let external = json!({"metadata": {"annotations": {
            "cert-manager.io/issuer": "vault", "cert-manager.io/issuer-kind": "VaultIssuer",
            "cert-manager.io/issuer-group": "example.io"}}});
        assert_eq!(
            issuer_ref(&external, None),
            Some(Ok(
                json!({"name": "vault", "kind": "VaultIssuer", "group": "example.io"})
            ))
        );
        assert_eq!(issuer_ref(&json!({"metadata": {}}), None), None);
    }

    #[test]
    fn tls_acme_asks_for_the_default_issuer_or_is_refused_without_one() {
        let acme = |v: &str| json!({"metadata": {"annotations": {"kubernetes.io/tls-acme": v}}});
        let default = DefaultIssuer::parse("ClusterIssuer/letsencrypt-prod").unwrap();
        // Go's ParseBool: "True" and "1" are true; "yes" and "" are not, so no sync at all.
        for v in ["true", "True", "1", "t"] {
            assert_eq!(
                issuer_ref(&acme(v), Some(&default)),
                Some(Ok(
                    json!({"name": "letsencrypt-prod", "kind": "ClusterIssuer", "group": "cert-manager.io"})
                )),
                "{v}"
            );
        }
        for v in ["yes", "", "false", "on"] {
            assert_eq!(issuer_ref(&acme(v), Some(&default)), None, "{v}");
        }
        // Upstream's default name is empty: refused with BadConfig.
        assert_eq!(
            issuer_ref(&acme("true"), None),
            Some(Err("Could not determine issuer for ingress due to bad annotations: failed to determine issuer name to be used for ingress resource".into()))
        );
        // An explicit annotation wins over the default; issuer-kind over the default kind.
        let both = json!({"metadata": {"annotations": {"kubernetes.io/tls-acme": "true", "cert-manager.io/issuer": "local"}}});
        assert_eq!(
            issuer_ref(&both, Some(&default)),
            Some(Ok(
                json!({"name": "local", "kind": "Issuer", "group": "cert-manager.io"})
            ))
        );
        let external =
            DefaultIssuer::parse("AWSPCAClusterIssuer.awspca.cert-manager.io/pca").unwrap();
        assert_eq!(
            issuer_ref(&acme("true"), Some(&external)),
            Some(Ok(
                json!({"name": "pca", "kind": "AWSPCAClusterIssuer", "group": "awspca.cert-manager.io"})
            ))
        );
        assert!(DefaultIssuer::parse("letsencrypt").is_err());
    }

    #[test]
    fn per_certificate_annotations_set_the_spec_or_refuse_the_ingress() {
        let ing = |a: Value| json!({"metadata": {"annotations": a}});
        let spec = certificate_spec_from_annotations(&ing(json!({"cert-manager.io/duration": "2160h", "cert-manager.io/renew-before-percentage": "25"}))).unwrap();
        assert_eq!(spec["duration"], "2160h");
        assert_eq!(spec["renewBeforePercentage"], 25);
        let err =
            certificate_spec_from_annotations(&ing(json!({"cert-manager.io/duration": "90d"})))
                .unwrap_err();
        assert!(err.contains("cert-manager.io/duration"), "{err}");
        assert!(certificate_spec_from_annotations(&ing(
            json!({"cert-manager.io/renew-before": "1m"})
        ))
        .is_err());
        assert!(certificate_spec_from_annotations(&ing(
            json!({"cert-manager.io/private-key-algorithm": "rsa"})
        ))
        .is_err());
    }

    #[test]
    fn a_repeated_secret_name_is_worded_as_ingress_shims_validation() {
        let ing = json!({"spec": {"tls": [
            {"hosts": ["a.example.com"], "secretName": "a-tls"},
            {"hosts": ["b.example.com"], "secretName": "b-tls"},
            {"hosts": ["www.a.example.com"], "secretName": "a-tls"},
        ]}});
        assert_eq!(
            repeated_secret_names(&ing).as_deref(),
            Some("spec.tls[0].secretName: Invalid value: \"a-tls\": this secret name must only appear in a single TLS entry but is also used in spec.tls[2].secretName")
        );
        let fine = json!({"spec": {"tls": [{"secretName": "a-tls"}, {"secretName": "b-tls"}]}});
        assert_eq!(repeated_secret_names(&fine), None);
    }
}

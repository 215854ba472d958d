//! Certificates, CertificateRequests, Orders and Challenges, projected.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;
use serde_json::Value;

use super::failure::Failure;
use super::ingress::IssuerRef;
use super::interner::Interner;
use super::object::{
    annotation, at, condition, conditions_at, controller_owner, created, str_at, strings_at,
    time_at, Condition, Owner,
};
use super::text::{Rare, Seldom, Text, Texts, Uid};

/// `acme.cert-manager.io/http01-override-ingress-name`, set by ingress-shim at creation.
pub const OVERRIDE_INGRESS_NAME: &str = "acme.cert-manager.io/http01-override-ingress-name";
/// `cert-manager.io/issue-temporary-certificate`: cert-manager writes a temporary
/// certificate into the Secret while the first issuance runs (ingress-shim sets it with the
/// override).
pub const ISSUE_TEMPORARY_CERTIFICATE: &str = "cert-manager.io/issue-temporary-certificate";
/// `cert-manager.io/certificate-revision` on a CertificateRequest.
pub(crate) const REVISION: &str = "cert-manager.io/certificate-revision";

fn issuer_ref(data: &Value, pointer: &str, strings: &mut Interner) -> Option<Arc<IssuerRef>> {
    let r = at(data, pointer)?;
    let r = IssuerRef {
        name: strings.get(r.get("name")?.as_str()?),
        kind: strings.get(
            r.get("kind")
                .and_then(Value::as_str)
                .filter(|k| !k.is_empty())
                .unwrap_or("Issuer"),
        ),
        group: strings.get(
            r.get("group")
                .and_then(Value::as_str)
                .filter(|g| !g.is_empty())
                .unwrap_or("cert-manager.io"),
        ),
    };
    Some(strings.issuer(r))
}

/// A cert-manager Certificate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CertificateView {
    pub cluster: Text,
    pub namespace: Text,
    pub name: Text,
    pub uid: Uid,
    pub secret_name: Option<Text>,
    pub dns_names: Texts,
    /// Shared by the objects that name the same issuer.
    pub issuer: Option<Arc<IssuerRef>>,
    /// The controller owner (an Ingress or Gateway when made by a shim).
    pub owner: Option<Owner>,
    pub ready: Option<Condition>,
    pub not_before: Option<DateTime<Utc>>,
    pub not_after: Option<DateTime<Utc>>,
    pub renewal_time: Option<DateTime<Utc>>,
    pub revision: Option<i64>,
    /// What few Certificates carry: an issuance under way or failed.
    #[serde(flatten)]
    pub rare: Rare<CertificateRare>,
    /// The value of `acme.cert-manager.io/http01-override-ingress-name` (ingress-shim sets it
    /// on the Certificates of Ingresses with edit-in-place).
    pub override_ingress_name: Option<Text>,
    /// `cert-manager.io/issue-temporary-certificate: "true"`.
    pub issue_temporary: bool,
    pub created: Option<DateTime<Utc>>,
}

/// The fields of a Certificate that few carry (see [`Rare`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CertificateRare {
    /// The Issuing condition: there is one while an issuance is under way or after it
    /// failed.
    pub issuing: Option<Box<Condition>>,
    pub failed_issuance_attempts: Option<i64>,
    pub last_failure_time: Option<DateTime<Utc>>,
}

impl Seldom for CertificateRare {
    const EMPTY: &'static Self = &CertificateRare {
        issuing: None,
        failed_issuance_attempts: None,
        last_failure_time: None,
    };
}

/// A Certificate's Ready reason in plain words (cert-manager's policy violation reasons,
/// `internal/controller/certificates/policies/constants.go`); None for a reason not known.
pub fn plain_reason(reason: &str) -> Option<&'static str> {
    Some(match reason {
        "DoesNotExist" => "no certificate yet (its Secret does not exist)",
        "MissingData" => "its Secret lacks the certificate or the key",
        "InvalidKeyPair" => "the Secret's key does not match its certificate",
        "InvalidCertificate" => "the Secret's certificate cannot be read",
        "InvalidCertificateRequest" => "the request's CSR cannot be read",
        "SecretMismatch" => "the Secret's key does not match the spec",
        "IncorrectIssuer" => "issued by another issuer",
        "IncorrectCertificate" => "its Secret belongs to another Certificate",
        "RequestChanged" => "the spec changed since the last request",
        "Renewing" => "due for renewal",
        "Expired" => "expired",
        "Disabled" => "renewal turned off",
        "SecretTemplateMismatch"
        | "SecretManagedMetadataMismatch"
        | "SecretOwnerRefMismatch"
        | "AdditionalOutputFormatsMismatch" => "its Secret's metadata is being brought in line",
        "WindowError" | "ARIError" => "the renewal time could not be worked out",
        _ => return None,
    })
}

impl CertificateView {
    pub fn project(
        cluster: &str,
        meta: &ObjectMeta,
        data: &Value,
        strings: &mut Interner,
    ) -> Option<Self> {
        let conditions = conditions_at(data, "/status/conditions", strings);
        let mut dns_names: Vec<Text> = strings_at(data, "/spec/dnsNames")
            .iter()
            .map(|n| strings.get(n))
            .collect();
        if let Some(cn) = str_at(data, "/spec/commonName") {
            if !dns_names.iter().any(|n| **n == *cn) {
                dns_names.push(strings.get(&cn));
            }
        }
        Some(CertificateView {
            cluster: strings.get(cluster),
            namespace: strings.get(meta.namespace.as_deref().unwrap_or_default()),
            name: strings.get(meta.name.as_deref()?),
            uid: Uid::parse(meta.uid.as_deref().unwrap_or_default()),
            secret_name: str_at(data, "/spec/secretName").map(|s| strings.get(&s)),
            dns_names: strings.list(dns_names),
            issuer: issuer_ref(data, "/spec/issuerRef", strings),
            owner: controller_owner(meta, strings),
            ready: condition(&conditions, "Ready"),
            not_before: time_at(data, "/status/notBefore"),
            not_after: time_at(data, "/status/notAfter"),
            renewal_time: time_at(data, "/status/renewalTime"),
            revision: at(data, "/status/revision").and_then(Value::as_i64),
            rare: Rare::new(CertificateRare {
                issuing: condition(&conditions, "Issuing").map(Box::new),
                failed_issuance_attempts: at(data, "/status/failedIssuanceAttempts")
                    .and_then(Value::as_i64),
                last_failure_time: time_at(data, "/status/lastFailureTime"),
            }),
            override_ingress_name: annotation(meta, OVERRIDE_INGRESS_NAME).map(|s| strings.get(&s)),
            issue_temporary: annotation(meta, ISSUE_TEMPORARY_CERTIFICATE).as_deref()
                == Some("true"),
            created: created(meta),
        })
    }

    /// Whether the Ready condition is True.
    pub fn is_ready(&self) -> bool {
        self.ready.as_ref().is_some_and(Condition::is_true)
    }

    /// Whether its status times are those of cert-manager's temporary certificate: it asks
    /// for one, has never been issued (no `status.revision`), a first issuance runs or has
    /// failed, and its `notBefore` is not older than the Certificate (a certificate adopted
    /// from a Secret made before it is). cert-manager's readiness copies the temporary
    /// certificate's times into the status (`issuing/temporary.go`,
    /// `readiness_controller.go`): a 90-day `notAfter` for a certificate never issued.
    pub fn holds_temporary(&self) -> bool {
        const SKEW: chrono::Duration = chrono::Duration::minutes(1);
        self.issue_temporary
            && self.revision.is_none()
            && self.not_after.is_some()
            && (self.is_issuing() || self.rare.failed_issuance_attempts.is_some_and(|n| n >= 1))
            && match (self.not_before, self.created) {
                (Some(nb), Some(created)) => nb + SKEW >= created,
                _ => true,
            }
    }

    /// The `notAfter` of a certificate cert-manager issued or adopted: None while it has
    /// none, or holds only its temporary one.
    pub fn issued_not_after(&self) -> Option<DateTime<Utc>> {
        self.not_after.filter(|_| !self.holds_temporary())
    }

    /// Whether a (re-)issuance is in flight.
    pub fn is_issuing(&self) -> bool {
        self.rare.issuing.as_deref().is_some_and(Condition::is_true)
    }

    /// Whether `host` is covered by a dnsName (including a one-label wildcard).
    pub fn covers(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        self.dns_names.iter().any(|n| {
            let n = n.to_ascii_lowercase();
            n == host
                || n.strip_prefix("*.").is_some_and(|base| {
                    host.split_once('.')
                        .is_some_and(|(first, rest)| !first.is_empty() && rest == base)
                })
        })
    }
}

/// A CertificateRequest: one issuance attempt.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CertificateRequestView {
    pub namespace: Text,
    pub name: Text,
    pub uid: Uid,
    pub owner: Option<Owner>,
    /// `cert-manager.io/certificate-revision`.
    pub revision: Option<i64>,
    /// The names requested, read from the CSR in `spec.request`.
    pub names: Texts,
    /// Shared by the objects that name the same issuer.
    pub issuer: Option<Arc<IssuerRef>>,
    pub ready: Option<Condition>,
    pub failure_time: Option<DateTime<Utc>>,
    pub created: Option<DateTime<Utc>>,
    /// The leaf of `status.certificate`, once issued (public; Secret data is never read).
    pub issued: Option<Box<super::probe::IssuedLeaf>>,
    /// `Approved=True`: an approver (cert-manager's own, approver-policy, a person) let it
    /// be signed.
    pub approved: bool,
    /// `Denied=True`, with the approver's reason and message.
    pub denied: Option<Box<Condition>>,
}

impl CertificateRequestView {
    /// Neither approved nor denied: nothing signs it until an approver decides.
    pub fn awaits_approval(&self) -> bool {
        !self.approved && self.denied.is_none()
    }

    pub fn project(meta: &ObjectMeta, data: &Value, strings: &mut Interner) -> Option<Self> {
        let conditions = conditions_at(data, "/status/conditions", strings);
        Some(CertificateRequestView {
            namespace: strings.get(meta.namespace.as_deref().unwrap_or_default()),
            name: strings.get(meta.name.as_deref()?),
            uid: Uid::parse(meta.uid.as_deref().unwrap_or_default()),
            owner: controller_owner(meta, strings),
            revision: annotation(meta, REVISION).and_then(|r| r.parse().ok()),
            names: {
                let names =
                    super::csr::requested_names(&str_at(data, "/spec/request").unwrap_or_default())
                        .iter()
                        .map(|n| strings.get(n))
                        .collect();
                strings.list(names)
            },
            issuer: issuer_ref(data, "/spec/issuerRef", strings),
            ready: condition(&conditions, "Ready"),
            failure_time: time_at(data, "/status/failureTime"),
            created: created(meta),
            issued: at(data, "/status/certificate")
                .and_then(Value::as_str)
                .and_then(super::probe::IssuedLeaf::of),
            approved: condition(&conditions, "Approved").is_some_and(|c| c.is_true()),
            denied: condition(&conditions, "Denied")
                .filter(Condition::is_true)
                .map(Box::new),
        })
    }
}

/// An ACME Order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OrderView {
    pub namespace: Text,
    pub name: Text,
    pub uid: Uid,
    pub owner: Option<Owner>,
    /// `valid`, `ready`, `pending`, `processing`, `invalid`, `expired`, `errored`, or empty.
    pub state: Text,
    pub reason: Option<Text>,
    pub dns_names: Vec<Text>,
    /// `spec.replaces`: an ARI renewal of that certificate (exempt from the new-order limits).
    pub replaces: bool,
    pub failure_time: Option<DateTime<Utc>>,
    pub created: Option<DateTime<Utc>>,
}

impl OrderView {
    pub fn project(meta: &ObjectMeta, data: &Value, strings: &mut Interner) -> Option<Self> {
        Some(OrderView {
            namespace: strings.get(meta.namespace.as_deref().unwrap_or_default()),
            name: strings.get(meta.name.as_deref()?),
            uid: Uid::parse(meta.uid.as_deref().unwrap_or_default()),
            owner: controller_owner(meta, strings),
            state: strings.get(str_at(data, "/status/state").as_deref().unwrap_or_default()),
            reason: str_at(data, "/status/reason")
                .filter(|r| !r.is_empty())
                .map(|r| strings.get(&r)),
            dns_names: strings_at(data, "/spec/dnsNames")
                .iter()
                .map(|n| strings.get(n))
                .collect(),
            replaces: str_at(data, "/spec/replaces").is_some_and(|r| !r.is_empty()),
            failure_time: time_at(data, "/status/failureTime"),
            created: created(meta),
        })
    }
}

/// An ACME Challenge (one per identifier of an Order).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChallengeView {
    pub namespace: Text,
    pub name: Text,
    pub uid: Uid,
    pub owner: Option<Owner>,
    pub dns_name: Text,
    /// `HTTP-01` or `DNS-01`.
    pub challenge_type: Text,
    pub state: Text,
    pub reason: Option<Text>,
    pub presented: bool,
    pub processing: bool,
    pub created: Option<DateTime<Utc>>,
    /// `spec.solver.http01.ingress.name`: the Ingress the solver edits in place. cert-manager
    /// fixes the solver when it creates the Challenge (from the Order's annotations), so this
    /// — not the Ingress's annotation today — says how this challenge is served.
    pub in_place_ingress: Option<Text>,
    /// `spec.solver.http01.gatewayHTTPRoute.parentRefs`: where the solver's HTTPRoute
    /// attaches (cert-manager puts the Certificate's `http01-parentref*` annotations in
    /// them when it makes the Challenge); None for another solver.
    pub gateway_parents: Option<Box<[ParentRef]>>,
    /// Why it fails, classified from `status.reason`: set while it is not `valid` and has a
    /// reason (a failing self-check, or the CA's verdict).
    pub failure: Option<Failure>,
}

/// A Gateway API `parentRef`: the Gateway (or ListenerSet) a route attaches to, and which of
/// its listeners.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ParentRef {
    /// `Gateway` unless said otherwise.
    pub kind: Text,
    /// The route's own namespace unless said otherwise.
    pub namespace: Text,
    pub name: Text,
    /// `sectionName`: one listener by name.
    pub section: Option<Text>,
    pub port: Option<u16>,
}

impl ParentRef {
    /// From a `parentRefs` entry of a route in namespace `own`.
    pub fn project(r: &Value, own: &str, strings: &mut Interner) -> Option<ParentRef> {
        let text = |k: &str| r.get(k).and_then(Value::as_str).filter(|v| !v.is_empty());
        Some(ParentRef {
            kind: strings.get(text("kind").unwrap_or("Gateway")),
            namespace: strings.get(text("namespace").unwrap_or(own)),
            name: strings.get(text("name")?),
            section: text("sectionName").map(|s| strings.get(s)),
            port: r
                .get("port")
                .and_then(Value::as_u64)
                .and_then(|p| u16::try_from(p).ok()),
        })
    }
}

impl ChallengeView {
    /// Waiting for one of cert-manager's challenge slots: not processing, no state, not
    /// presented, no reason (`acmechallenges/scheduler`).
    pub fn queued(&self) -> bool {
        !self.processing && self.state.is_empty() && !self.presented && self.reason.is_none()
    }

    pub fn project(meta: &ObjectMeta, data: &Value, strings: &mut Interner) -> Option<Self> {
        let state = str_at(data, "/status/state").unwrap_or_default();
        let reason = str_at(data, "/status/reason").filter(|r| !r.is_empty());
        Some(ChallengeView {
            namespace: strings.get(meta.namespace.as_deref().unwrap_or_default()),
            name: strings.get(meta.name.as_deref()?),
            uid: Uid::parse(meta.uid.as_deref().unwrap_or_default()),
            owner: controller_owner(meta, strings),
            dns_name: strings.get(str_at(data, "/spec/dnsName").as_deref().unwrap_or_default()),
            challenge_type: strings.get(str_at(data, "/spec/type").as_deref().unwrap_or_default()),
            state: strings.get(&state),
            failure: Failure::of_challenge(&state, reason.as_deref()),
            in_place_ingress: str_at(data, "/spec/solver/http01/ingress/name")
                .filter(|n| !n.is_empty())
                .map(|n| strings.get(&n)),
            gateway_parents: at(data, "/spec/solver/http01/gatewayHTTPRoute").map(|route| {
                let own = meta.namespace.as_deref().unwrap_or_default();
                at(route, "/parentRefs")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|r| ParentRef::project(r, own, strings))
                    .collect()
            }),
            reason: reason.as_deref().map(|r| strings.get(r)),
            presented: at(data, "/status/presented")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            processing: at(data, "/status/processing")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            created: created(meta),
        })
    }

    /// `invalid` or `errored`: the CA (or cert-manager) gave up on it.
    pub fn has_failed(&self) -> bool {
        &*self.state == "invalid" || &*self.state == "errored"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(v: &Value) -> ObjectMeta {
        serde_json::from_value(v["metadata"].clone()).unwrap()
    }

    #[test]
    fn certificate_projection_reads_status_and_owner() {
        let v = json!({
            "metadata": {"name": "shop-tls", "namespace": "acme", "annotations": {OVERRIDE_INGRESS_NAME: "shop"},
                "ownerReferences": [{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "shop", "uid": "u1", "controller": true}]},
            "spec": {"secretName": "shop-tls", "dnsNames": ["shop.example.com"], "issuerRef": {"name": "le", "kind": "ClusterIssuer"}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}], "notAfter": "2026-03-01T00:00:00Z",
                       "renewalTime": "2026-01-30T00:00:00Z", "revision": 2, "failedIssuanceAttempts": 1}
        });
        let c = CertificateView::project("zrh", &meta(&v), &v, &mut Interner::default()).unwrap();
        assert!(c.is_ready() && !c.is_issuing());
        assert_eq!(&*c.owner.unwrap().name, "shop");
        assert_eq!(&*c.issuer.unwrap().group, "cert-manager.io");
        assert_eq!(c.revision, Some(2));
        assert_eq!(c.rare.failed_issuance_attempts, Some(1));
        assert_eq!(c.override_ingress_name.as_deref(), Some("shop"));
    }

    #[test]
    fn wildcards_cover_exactly_one_label() {
        let v = json!({"metadata": {"name": "w"}, "spec": {"dnsNames": ["*.example.com", "example.com"]}});
        let c = CertificateView::project("zrh", &meta(&v), &v, &mut Interner::default()).unwrap();
        assert!(c.covers("shop.example.com") && c.covers("EXAMPLE.com"));
        assert!(!c.covers("a.b.example.com") && !c.covers("example.org"));
    }

    #[test]
    fn challenge_and_order_projection() {
        let v = json!({"metadata": {"name": "c1", "namespace": "acme", "ownerReferences": [{"apiVersion": "acme.cert-manager.io/v1", "kind": "Order", "name": "o1", "uid": "o", "controller": true}]},
                       "spec": {"dnsName": "shop.example.com", "type": "HTTP-01"},
                       "status": {"state": "invalid", "reason": "404", "presented": true, "processing": false}});
        let c = ChallengeView::project(&meta(&v), &v, &mut Interner::default()).unwrap();
        assert!(c.has_failed() && c.presented);
        assert_eq!(&*c.owner.unwrap().name, "o1");
        let o = json!({"metadata": {"name": "o1"}, "status": {"state": "errored", "reason": ""}});
        let o = OrderView::project(&meta(&o), &o, &mut Interner::default()).unwrap();
        assert_eq!(&*o.state, "errored");
        assert!(o.reason.is_none());
    }
}

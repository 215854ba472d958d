//! Approval of CertificateRequests. By default cert-manager's own approver approves every
//! request at once (`pkg/controller/certificaterequests/approver`). A cluster that runs
//! approver-policy instead leaves a request no policy applies to unapproved for ever (a
//! Normal `Unprocessed` event, "Request is not applicable for any policy so ignoring") and
//! denies one its policies refuse (`Denied=True`, reason `policy.cert-manager.io`, `No policy
//! approved this request: [<policy>: <why>]`, a Warning `Denied` event) — cert-manager
//! `approver-policy` `pkg/internal/controllers/certificaterequests.go`,
//! `pkg/internal/approver/manager/review.go`. kubesim is told which requests to leave or to
//! deny by patterns over `<namespace>/<request name>` (`*` matches any run of characters).

use serde_json::{json, Value};

use super::letsencrypt::rfc3339;
use super::{s, Api};

/// The policy name kubesim's denials quote.
pub const POLICY: &str = "allowed-domains";

/// Which requests are not approved at once.
#[derive(Debug, Clone, Default)]
pub struct Approver {
    /// Requests left without an Approved or Denied condition.
    pub unapproved: Vec<String>,
    /// Requests denied.
    pub deny: Vec<String>,
}

/// What the approver does with one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Approve,
    LeaveUnapproved,
    Deny,
}

impl Approver {
    pub fn decide(&self, namespace: &str, name: &str) -> Decision {
        let subject = format!("{namespace}/{name}");
        if self.deny.iter().any(|p| glob(p, &subject)) {
            Decision::Deny
        } else if self.unapproved.iter().any(|p| glob(p, &subject)) {
            Decision::LeaveUnapproved
        } else {
            Decision::Approve
        }
    }
}

/// `*` matches any run of characters; everything else matches itself.
pub fn glob(pattern: &str, text: &str) -> bool {
    let Some((first, rest)) = pattern.split_once('*') else {
        return pattern == text;
    };
    let Some(mut left) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = rest.split('*').collect();
    for (i, part) in parts.iter().enumerate() {
        if i == parts.len() - 1 {
            return left.ends_with(part) && left.len() >= part.len();
        }
        match left.find(part) {
            Some(at) => left = &left[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// Reviews a request just made: the approval condition (or none) and the events of the
/// controllers involved. Returns the request as it is afterwards.
pub(super) fn review(api: &Api<'_>, approver: &Approver, cr: Value, names: &[String]) -> Value {
    let ns = s(&cr, "/metadata/namespace")
        .unwrap_or_default()
        .to_string();
    let name = s(&cr, "/metadata/name").unwrap_or_default().to_string();
    let now = rfc3339(api.now);
    let (condition, event) = match approver.decide(&ns, &name) {
        Decision::Approve => (
            json!({"type": "Approved", "status": "True", "reason": "cert-manager.io", "message": "Certificate request has been approved by cert-manager.io", "lastTransitionTime": now}),
            None,
        ),
        Decision::LeaveUnapproved => {
            api.event(
                &cr,
                "CertificateRequest",
                "Normal",
                "Unprocessed",
                "Request is not applicable for any policy so ignoring",
                "policy.cert-manager.io",
            );
            // cert-manager's request controller, on every sync of an unapproved request
            // (`pkg/controller/certificaterequests/sync.go`).
            api.event(
                &cr,
                "CertificateRequest",
                "Normal",
                "WaitingForApproval",
                "Not signing CertificateRequest until it is Approved",
                "cert-manager-certificaterequests-issuer-acme",
            );
            return cr;
        }
        Decision::Deny => {
            let message = format!(
                "No policy approved this request: [{POLICY}: spec.allowed.dnsNames.values: Invalid value: {}: *.internal.example]",
                serde_json::to_string(names).unwrap_or_default()
            );
            (
                json!({"type": "Denied", "status": "True", "reason": "policy.cert-manager.io", "message": message, "lastTransitionTime": now}),
                Some(message),
            )
        }
    };
    if let Some(message) = &event {
        api.event(
            &cr,
            "CertificateRequest",
            "Warning",
            "Denied",
            message,
            "policy.cert-manager.io",
        );
    }
    let manager = if event.is_some() {
        "approver-policy"
    } else {
        "cert-manager-certificaterequests-approver"
    };
    api.patch_status(
        "cert-manager.io",
        "certificaterequests",
        Some(&ns),
        &name,
        &json!({"status": {"conditions": [condition]}}),
        manager,
    )
    .unwrap_or(cr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_namespace_and_name() {
        assert!(glob("team-ml/*", "team-ml/model-tls-1"));
        assert!(!glob("team-ml/*", "team-lab/model-tls-1"));
        assert!(glob("*/legacy-*-1", "shop/legacy-tls-1"));
        assert!(!glob("*/legacy-*-1", "shop/legacy-tls-2"));
        assert!(glob("shop/web-tls-1", "shop/web-tls-1"));
        assert!(!glob("shop/web-tls", "shop/web-tls-1"));
        let a = Approver {
            unapproved: vec!["team-ml/*".into()],
            deny: vec!["*/denied-*".into()],
        };
        assert_eq!(a.decide("team-ml", "x-1"), Decision::LeaveUnapproved);
        assert_eq!(a.decide("team-ml", "denied-1"), Decision::Deny);
        assert_eq!(a.decide("shop", "x-1"), Decision::Approve);
    }
}

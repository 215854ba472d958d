//! `cert.awaiting-approval`, `cert.request-denied`: a CertificateRequest is signed only once an
//! approver approves it. cert-manager's own approver does so at once; a cluster running
//! approver-policy leaves a request no policy applies to unapproved for ever (event
//! `Unprocessed`), and denies one its policies refuse — the Certificate then fails with the
//! policy's reason and message, again after each backoff, since the denied request stays
//! until the spec changes (cert-manager `certificaterequests/sync.go`,
//! `issuing_controller.go` `failIssueCertificate`, `requestmanager_controller.go`;
//! approver-policy `pkg/internal/approver/manager/review.go`).

use chrono::Duration;

use super::{at, span, About, Ctx};
use crate::model::finding::{Severity, Subject};
use crate::model::kind::Kind;
use crate::model::rule::Rule;

/// How long a request may wait for an approver before it is a finding: cert-manager's own
/// approver answers within seconds.
pub const APPROVAL_EXPECTED_WITHIN: Duration = Duration::minutes(2);

pub(super) fn check(ctx: &mut Ctx<'_>) {
    let now = ctx.now;
    let data = ctx.idx.data;
    // Only an issuance in flight or failed has a request an approver holds up.
    let attempting = data
        .certificates
        .values()
        .filter(|c| c.is_issuing() || c.rare.failed_issuance_attempts.is_some_and(|n| n >= 1));
    for c in attempting {
        let Some(r) = ctx.idx.next_request(c) else {
            continue;
        };
        let about = About {
            namespace: &c.namespace,
            kind: Subject::Object(Kind::Certificate),
            name: &c.name,
        };
        if let Some(denied) = r.denied.as_deref() {
            let reason = denied.reason.as_deref().unwrap_or("(no reason)");
            let message = denied.message.as_deref().unwrap_or("");
            let attempts = c.rare.failed_issuance_attempts.unwrap_or(0);
            ctx.push(
                Rule::CertRequestDenied,
                Severity::Critical,
                about,
                format!(
                    "CertificateRequest {} of {} was denied {}",
                    r.name,
                    c.name,
                    if reason == "policy.cert-manager.io" {
                        "by approver-policy".to_string()
                    } else {
                        format!("({reason})")
                    }
                ),
                format!(
                    "The approver said: \"{message}\" (Denied=True on CertificateRequest {}, reason {reason}). cert-manager fails the issuance with it (failedIssuanceAttempts {attempts}) and fails it again after each backoff: the denied request stays until the Certificate's spec changes.",
                    r.name
                ),
                "Make the Certificate ask for what the policy allows (its names, issuer, duration, key — the denial says which field), or ask the platform team to allow it in a CertificateRequestPolicy; a changed spec makes cert-manager replace the denied request at once. Renewing alone fails the same way.",
                denied.last_transition.or(r.created),
            );
            continue;
        }
        let waiting = r.created.map(|t| now - t);
        if r.awaits_approval()
            && r.ready.is_none()
            && c.is_issuing()
            && waiting.is_some_and(|w| w > APPROVAL_EXPECTED_WITHIN)
        {
            ctx.push(
                Rule::CertAwaitingApproval,
                Severity::Warning,
                about,
                format!("CertificateRequest {} of {} waits for approval", r.name, c.name),
                format!(
                    "CertificateRequest {} was made at {} ({} ago) and has neither an Approved nor a Denied condition, so nothing signs it and no ACME order is made. cert-manager's own approver approves at once; with approver-policy a request that no CertificateRequestPolicy applies to is left unapproved for ever (event Unprocessed: \"Request is not applicable for any policy so ignoring\").",
                    r.name,
                    r.created.map(at).unwrap_or_default(),
                    waiting.map(span).unwrap_or_default()
                ),
                "Bind a CertificateRequestPolicy that covers this request (its issuer, namespace and names), or approve it by hand: cmctl approve -n <namespace> <request>. Without approver-policy, check that cert-manager's controller runs its approver (--controllers must not drop certificaterequests-approver).",
                r.created,
            );
        }
    }
}

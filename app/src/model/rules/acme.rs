//! `acme.*`: Orders and Challenges.

use std::collections::BTreeSet;

use super::{at, span, About, Ctx};
use crate::model::certificate::ChallengeView;
use crate::model::finding::Severity;
use crate::model::reasons::{is_rate_limited, parse_retry_after, ChallengeFailure};
use crate::model::text::Text;
use crate::model::thresholds::Thresholds;

/// Whether a Challenge counts as failing: final failure, or a self-check failing too long.
pub(crate) fn challenge_failing(
    ch: &ChallengeView,
    now: chrono::DateTime<chrono::Utc>,
    t: &Thresholds,
) -> bool {
    if ch.has_failed() {
        return true;
    }
    let self_check = ch
        .reason
        .as_deref()
        .is_some_and(|r| r.contains("propagation") || r.contains("self check"));
    self_check
        && ch.presented
        && ch
            .created
            .is_some_and(|c| now - c > t.challenge_failing_after)
}

pub(super) fn check(ctx: &mut Ctx<'_>) {
    let now = ctx.now;
    let data = ctx.idx.data;
    for ch in data.challenges.values() {
        let about = || About {
            namespace: &ch.namespace,
            kind: "Challenge",
            name: &ch.name,
        };
        let age = ch.created.map(|c| now - c);
        if challenge_failing(ch, now, ctx.t) {
            let reason = ch
                .reason
                .clone()
                .unwrap_or_else(|| "(no reason given)".into());
            let class = ChallengeFailure::classify(&reason);
            let what = if ch.has_failed() {
                format!("is {}", ch.state)
            } else {
                format!(
                    "has failed its self-check for {}",
                    age.map(span).unwrap_or_default()
                )
            };
            ctx.push(
                "acme.challenge-failing",
                Severity::Critical,
                about(),
                format!(
                    "{} challenge for {} failing: {}",
                    ch.challenge_type,
                    ch.dns_name,
                    class.label()
                ),
                format!(
                    "The challenge {what}: {}. Reason: {reason}",
                    class.explanation()
                ),
                remediation(class),
                ch.created,
            );
        } else if matches!(&*ch.state, "" | "pending" | "processing")
            && age.is_some_and(|a| a > ctx.t.challenge_stuck_after)
        {
            ctx.push(
                "acme.challenge-stuck",
                Severity::Warning,
                about(),
                format!("Challenge for {} stuck in {:?} for {}", ch.dns_name, if ch.state.is_empty() { "unknown" } else { &ch.state }, age.map(span).unwrap_or_default()),
                format!("state {:?}, presented {}, processing {}, reason: {}", ch.state, ch.presented, ch.processing, ch.reason.as_deref().unwrap_or("(none)")),
                "Check cert-manager's controller logs and the solver pod/service; a challenge that is never presented usually means the solver could not be created (RBAC, quota) or cert-manager is overloaded (max 60 concurrent challenges).",
                ch.created,
            );
        }
    }

    // Rate limits surface on the Order (errored) and its CertificateRequest (Failed).
    let mut reported: BTreeSet<(String, String)> = BTreeSet::new();
    for o in data.orders.values() {
        let Some(reason) = o.reason.as_deref().filter(|r| is_rate_limited(r)) else {
            continue;
        };
        if !matches!(&*o.state, "errored" | "invalid" | "") {
            continue;
        }
        let cert = ctx
            .idx
            .request_of_order(o)
            .and_then(|r| ctx.idx.certificate_of_request(r));
        let (kind, name) = match cert {
            Some(c) => ("Certificate", c.name.clone()),
            None => ("Order", o.name.clone()),
        };
        if !reported.insert((o.namespace.to_string(), name.to_string())) {
            continue;
        }
        push_rate_limited(
            ctx,
            &o.namespace,
            kind,
            &name,
            reason,
            o.failure_time.or(o.created),
        );
    }
    for r in data.requests.values() {
        let Some(message) = r
            .ready
            .as_ref()
            .filter(|c| c.reason.as_deref() == Some("Failed"))
            .and_then(|c| c.message.as_deref())
            .filter(|m| is_rate_limited(m))
        else {
            continue;
        };
        let cert_name = ctx.idx.certificate_of_request(r).map(|c| c.name.clone());
        let (kind, name) = match &cert_name {
            Some(n) => ("Certificate", n.clone()),
            None => ("CertificateRequest", r.name.clone()),
        };
        if !reported.insert((r.namespace.to_string(), name.to_string())) {
            continue;
        }
        push_rate_limited(
            ctx,
            &r.namespace,
            kind,
            &name,
            message,
            r.failure_time.or(r.created),
        );
    }
}

fn push_rate_limited(
    ctx: &mut Ctx<'_>,
    namespace: &Text,
    kind: &str,
    name: &Text,
    text: &str,
    since: Option<chrono::DateTime<chrono::Utc>>,
) {
    let retry = parse_retry_after(text);
    let when = match retry {
        Some(t) if t > ctx.now => format!(
            "Let's Encrypt accepts new orders again at {} (in {}).",
            at(t),
            span(t - ctx.now)
        ),
        Some(t) => format!(
            "The limit lifted at {}; the next attempt can succeed.",
            at(t)
        ),
        None => "The message names no retry time.".to_string(),
    };
    ctx.push(
        "acme.rate-limited",
        Severity::Critical,
        About { namespace, kind, name },
        format!("Let's Encrypt rate limit hit for {kind} {name}"),
        format!("{when} ACME said: {text}"),
        "Do not renew or recreate the Certificate before the retry time: every attempt counts against the same limit. Fix whatever caused repeated issuance (failing challenges, a Certificate being recreated), and consolidate names if you issue many certificates for one registered domain.",
        since,
    );
}

fn remediation(class: ChallengeFailure) -> &'static str {
    match class {
        ChallengeFailure::RedirectToHttps | ChallengeFailure::NotFound => "Behind Cilium with HTTPS enforcement, set acme.cert-manager.io/http01-edit-in-place: \"true\" on the Ingress so the challenge is served by the Ingress itself; if the Certificate already exists, also add acme.cert-manager.io/http01-override-ingress-name to it. Then renew.",
        ChallengeFailure::Timeout | ChallengeFailure::ConnectionRefused => "Make port 80 of the host's address reachable from the internet (firewall, load balancer listeners); behind PROXY protocol the in-cluster self-check may fail — see cert-manager#466.",
        ChallengeFailure::Dns => "Point the host's DNS record at the ingress load balancer address, then renew.",
        ChallengeFailure::Caa => "Add a CAA record allowing letsencrypt.org for the domain, or remove the restrictive one.",
        ChallengeFailure::Other => "Read the ACME error in the reason and the Challenge's events; fix the cause, then renew.",
    }
}

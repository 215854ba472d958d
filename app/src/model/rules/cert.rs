//! `cert.*`: Certificates.

use crate::model::finding::Subject;
use crate::model::kind::Kind;
use crate::model::rule::Rule;
use chrono::Duration;

use super::{at, span, About, Ctx};
use crate::model::finding::Severity;
use crate::model::issuer::AcmeServer;
use crate::model::text::Text;
use crate::model::thresholds::next_retry;

pub(super) fn check(ctx: &mut Ctx<'_>) {
    let now = ctx.now;
    let data = ctx.idx.data;
    for c in data.certificates.values() {
        let about = || About {
            namespace: &c.namespace,
            kind: Subject::Object(Kind::Certificate),
            name: &c.name,
        };
        let expired = c.not_after.is_some_and(|na| na <= now);
        if let (true, Some(not_after)) = (expired, c.not_after) {
            ctx.push(
                Rule::CertExpired,
                Severity::Critical,
                about(),
                format!("Certificate {} expired {} ago", c.name, span(now - not_after)),
                format!("status.notAfter is {}; clients now reject {}.", at(not_after), c.dns_names.join(", ")),
                "Find out why renewal failed (see the issuance findings and the chain below), fix the cause, then renew the Certificate.",
                Some(not_after),
            );
        }

        if let (false, Some(not_after)) = (expired, c.not_after) {
            let left = not_after - now;
            let lifetime = c.not_before.map(|nb| not_after - nb);
            let late_renewal = c.renewal_time.filter(|rt| now > *rt + ctx.t.renewal_grace);
            let no_schedule = c.renewal_time.is_none() && lifetime.is_some_and(|l| left < l / 3);
            let under_floor = ctx.t.expiry_floor.is_some_and(|f| left < f);
            if late_renewal.is_some() || no_schedule || under_floor {
                let severity = if left < ctx.t.expiry_critical {
                    Severity::Critical
                } else {
                    Severity::Warning
                };
                let why = match (late_renewal, no_schedule) {
                    (Some(rt), _) => format!("renewal was due at {} (status.renewalTime) and has not happened", at(rt)),
                    (None, true) => "no renewal is scheduled (status.renewalTime is absent) and less than a third of its lifetime is left".to_string(),
                    _ => "it is under the configured expiry floor".to_string(),
                };
                ctx.push(
                    Rule::CertExpiring,
                    severity,
                    about(),
                    format!("Certificate {} expires in {}", c.name, span(left)),
                    format!("notAfter is {}; {why}.{}", at(not_after), lifetime.map(|l| format!(" Lifetime: {}.", span(l))).unwrap_or_default()),
                    "Check why renewal did not happen (issuance findings, the latest CertificateRequest and Order), fix it, then renew the Certificate.",
                    late_renewal.or(Some(not_after - lifetime.map(|l| l / 3).unwrap_or(Duration::zero()))),
                );
            }
        }

        // The temporary certificate's Ready (IncorrectIssuer, or True) is told by
        // `cert.temporary-certificate` ([`temporary_certificates`]).
        if !c.is_ready() && !expired && !c.holds_temporary() {
            let since = c
                .ready
                .as_ref()
                .and_then(|r| r.last_transition)
                .or(c.created);
            let long = since.is_some_and(|s| now - s > ctx.t.not_ready_critical_after);
            let (reason, message) = c
                .ready
                .as_ref()
                .map(|r| {
                    (
                        r.reason.clone().unwrap_or_else(|| "(no reason)".into()),
                        r.message.clone().unwrap_or_else(|| Text::from("")),
                    )
                })
                .unwrap_or(("(no Ready condition yet)".into(), Text::from("")));
            ctx.push(
                Rule::CertNotReady,
                if long { Severity::Critical } else { Severity::Warning },
                about(),
                format!("Certificate {} is not ready: {reason}", c.name),
                format!("Ready is {} with reason {reason}: {message}", c.ready.as_ref().map(|r| &*r.status).unwrap_or("absent")),
                "Follow the chain: the current CertificateRequest, its Order and Challenges say what is blocking issuance.",
                since,
            );
        }

        if let Some(n) = c.rare.failed_issuance_attempts.filter(|n| *n >= 1) {
            let issuing = c
                .rare
                .issuing
                .as_ref()
                .map(|i| {
                    format!(
                        " Issuing is {} ({}): {}",
                        i.status,
                        i.reason.as_deref().unwrap_or(""),
                        i.message.as_deref().unwrap_or("")
                    )
                })
                .unwrap_or_default();
            let retry = c.rare.last_failure_time.map(|lf| next_retry(lf, n, ctx.t));
            // cert-manager skips the backoff when the spec no longer matches the failed
            // request (`shouldBackoffReissuingOnFailure`): a new issuer or new names.
            let changed = spec_changed_since_failure(ctx, c);
            let when = match (&changed, retry) {
                (Some(what), _) => format!("now, without waiting for the backoff: the {what} changed since the failed request"),
                (None, Some(r)) => format!("{} (1h·2^(n−1), at most 32h)", at(r)),
                (None, None) => "an unknown time (1h·2^(n−1), at most 32h)".into(),
            };
            ctx.push(
                Rule::CertIssuanceFailing,
                Severity::Critical,
                about(),
                format!("Issuance of {} has failed {}", c.name, crate::model::text::count(usize::try_from(n).unwrap_or(0), "time", "times")),
                format!(
                    "status.failedIssuanceAttempts is {n}, lastFailureTime {}. cert-manager retries {when}.{issuing}",
                    c.rare.last_failure_time.map(at).unwrap_or_else(|| "unknown".into()),
                ),
                "Fix the cause shown by the failed CertificateRequest/Order/Challenge, then renew to retry now instead of waiting for the backoff (mind the Let's Encrypt budget).",
                c.rare.last_failure_time,
            );
        }

        if ctx.idx.facts.overrides.production {
            let issuer = c
                .issuer
                .as_ref()
                .and_then(|r| ctx.idx.issuer(&c.namespace, r));
            if let Some(i) = issuer.filter(|i| i.server == AcmeServer::LetsEncryptStaging) {
                ctx.push(
                    Rule::CertStagingIssuer,
                    Severity::Warning,
                    about(),
                    format!("Certificate {} comes from Let's Encrypt staging (untrusted)", c.name),
                    format!("Its issuer {} {} uses {} — browsers do not trust staging certificates.", i.kind, i.name, i.acme_server_url.as_deref().unwrap_or("")),
                    "Point the Ingress/Certificate at a production issuer (e.g. cert-manager.io/cluster-issuer: letsencrypt-prod).",
                    None,
                );
            }
        }
    }

    // Hosts of an Ingress's TLS entry that its Certificate does not cover.
    for ing in data.ingresses.values() {
        for t in &ing.tls {
            let Some(c) = t
                .secret_name
                .as_deref()
                .and_then(|s| ctx.idx.certificate_for(ing, s))
            else {
                continue;
            };
            let missing: Vec<&Text> = t.hosts.iter().filter(|h| !c.covers(h)).collect();
            if missing.is_empty() {
                continue;
            }
            let missing_text = missing.iter().map(|h| &***h).collect::<Vec<_>>().join(", ");
            ctx.push(
                Rule::CertHostsNotCovered,
                Severity::Warning,
                About { namespace: &ing.namespace, kind: Subject::Object(Kind::Ingress), name: &ing.name },
                format!("{missing_text} not covered by Certificate {}", c.name),
                format!("The TLS entry with secretName {} lists {}, but the Certificate's dnsNames are {}.", c.secret_name.as_deref().unwrap_or(""), t.hosts.join(", "), c.dns_names.join(", ")),
                "If ingress-shim owns the Certificate it updates dnsNames itself; otherwise add the hosts to the Certificate's dnsNames (or give the host its own TLS entry and Secret).",
                None,
            );
        }
    }
}

/// `cert.temporary-certificate`: the first issuance runs (or has failed) and the Secret holds
/// cert-manager's temporary certificate, signed by `cert-manager.local`; the status times are
/// its, and Ready reads `IncorrectIssuer` under a ClusterIssuer (True under an Issuer)
/// because of it. Clients get an untrusted certificate until the real one is issued. A rule
/// across namespaces: it quotes what the probe saw on the host.
pub(super) fn temporary_certificates(ctx: &mut Ctx<'_>) {
    let data = ctx.idx.data;
    for c in data.certificates.values().filter(|c| c.holds_temporary()) {
        temporary_certificate(ctx, c);
    }
}

fn temporary_certificate(ctx: &mut Ctx<'_>, c: &crate::model::certificate::CertificateView) {
    let observed: Vec<String> = ctx
        .idx
        .data
        .probes
        .iter()
        .filter(|o| c.covers(&o.host))
        .filter(|o| o.tls.as_ref().is_some_and(|t| t.leaf.is_temporary()))
        .map(|o| format!("{} on {}", o.host, o.address))
        .collect();
    let observed = if observed.is_empty() {
        String::new()
    } else {
        format!(" Observed: clients get it for {}.", observed.join(", "))
    };
    let ready = c
        .ready
        .as_ref()
        .map(|r| {
            format!(
                "{} ({})",
                r.status,
                r.reason.as_deref().unwrap_or("no reason")
            )
        })
        .unwrap_or_else(|| "absent".into());
    let failed = c.rare.failed_issuance_attempts.filter(|n| *n >= 1);
    let (title, remedy) = match failed {
        Some(_) => (
            format!("The first issuance of {} failed: clients still get cert-manager's temporary certificate", c.name),
            "Fix what failed the first issuance (the findings below: the request, Order and Challenges), then renew; the issued certificate replaces the temporary one. cert-manager does not retry by itself before the backoff ends — under a namespaced Issuer not before the temporary certificate's renewal time.",
        ),
        None => (
            format!("The first issuance of {} is in progress: clients get cert-manager's temporary certificate", c.name),
            "Nothing to do while the issuance runs: the issued certificate replaces the temporary one. If it lasts, the request, Order and Challenges below say what holds it.",
        ),
    };
    let about = About {
        namespace: &c.namespace,
        kind: Subject::Object(Kind::Certificate),
        name: &c.name,
    };
    ctx.push(
        Rule::CertTemporaryCertificate,
        Severity::Warning,
        about,
        title,
        format!(
            "cert-manager.io/issue-temporary-certificate is \"true\" and no certificate has been issued yet (no status.revision): while the first request is pending cert-manager writes a certificate signed by cert-manager.local, which no client trusts, into the Secret {} and copies its times into the status (notAfter {}). Ready is {ready} because of it.{observed}",
            c.secret_name.as_deref().unwrap_or("(none)"),
            c.not_after.map(at).unwrap_or_else(|| "(none)".into()),
        ),
        remedy,
        c.not_before,
    );
}

/// What of the Certificate's spec differs from the request of its failed attempt (the next
/// revision's): its issuer or its names. cert-manager then re-issues without the backoff
/// (`trigger_controller.go` `shouldBackoffReissuingOnFailure`, `pki.RequestMatchesSpec`).
fn spec_changed_since_failure(
    ctx: &Ctx<'_>,
    c: &crate::model::certificate::CertificateView,
) -> Option<&'static str> {
    let r = ctx.idx.next_request(c)?;
    if r.issuer.is_some() && c.issuer.is_some() && r.issuer != c.issuer {
        return Some("issuer");
    }
    let mut wanted: Vec<String> = c.dns_names.iter().map(|n| n.to_ascii_lowercase()).collect();
    let mut asked: Vec<String> = r.names.iter().map(|n| n.to_ascii_lowercase()).collect();
    wanted.sort();
    asked.sort();
    (!asked.is_empty() && wanted != asked).then_some("names")
}

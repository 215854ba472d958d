//! `acme.*`: Orders and Challenges.

use crate::model::finding::Subject;
use crate::model::kind::Kind;
use crate::model::rule::Rule;
use std::collections::BTreeSet;

use super::{at, span, About, Ctx};
use crate::model::certificate::ChallengeView;
use crate::model::failure::{Failure, FailureClass};
use crate::model::finding::Severity;
use crate::model::infra::LbMode;
use crate::model::reasons::{is_rate_limited, parse_retry_after};
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
    // A pending challenge carries a failure when something goes wrong: the self-check
    // failing ("Waiting for HTTP-01 challenge propagation: …") or the solver not being
    // presented ("Error presenting challenge: …", cert-manager's acmechallenges/sync.go) —
    // not when its reason only tells how it goes (a solver that waits instead of
    // self-checking: `Failure::of_challenge`).
    ch.failure.is_some()
        && ch
            .created
            .is_some_and(|c| now - c > t.challenge_failing_after)
}

/// `acme.no-solver`: a pending Order without Challenges whose controller reported, in a
/// Warning `Solver` event, that no solver of the issuer fits its names (a wildcard with
/// HTTP-01 solvers only, selectors that exclude a name) or that it carries more than one
/// override annotation. cert-manager then makes no Challenge and the Order and its request
/// stay pending for ever (`acmeorders/sync.go` `buildPartialRequiredChallenges`).
fn no_solver(ctx: &mut Ctx<'_>) {
    let data = ctx.idx.data;
    for o in data.orders.values() {
        if !matches!(&*o.state, "" | "pending") || !ctx.idx.challenges_of(o).is_empty() {
            continue;
        }
        let Some(event) = ctx
            .idx
            .events_of("Order", &o.namespace, &o.name, 3)
            .into_iter()
            .find(|e| e.reason == "Solver" && e.event_type == "Warning")
        else {
            continue;
        };
        let message = event.message.clone();
        let since = event.last_seen.or(o.created);
        let certificate = ctx
            .idx
            .request_of_order(o)
            .and_then(|r| ctx.idx.certificate_of_request(r));
        let wildcards: Vec<&str> = o
            .dns_names
            .iter()
            .filter(|n| n.starts_with("*."))
            .map(|n| &**n)
            .collect();
        let remedy = if message.contains("more than one of") {
            "Keep one of the override annotations (http01-override-ingress-name, -class, -ingressclassname) on the Certificate, then restart the issuance: the Order's annotations are copied from the request, which copied the Certificate's when it was made."
        } else if !wildcards.is_empty() {
            "A wildcard name can only be validated by DNS-01: add a dns01 solver to the issuer (with a selector for the zone), or drop the wildcard from the Certificate's names; then restart the issuance."
        } else {
            "Give the issuer a solver whose selector (dnsNames, dnsZones, matchLabels) matches every name of the Certificate, or change the Certificate's names; then restart the issuance."
        };
        let (namespace, kind, name) = match certificate {
            Some(c) => (&c.namespace, Subject::Object(Kind::Certificate), &c.name),
            None => (&o.namespace, Subject::Object(Kind::Order), &o.name),
        };
        let title = format!(
            "No solver of the issuer can validate {}",
            if wildcards.is_empty() {
                o.dns_names.join(", ")
            } else {
                wildcards.join(", ")
            }
        );
        let evidence = format!(
            "Order {} is pending with no Challenge: cert-manager's Order controller said (Warning Solver) \"{message}\". It makes no Challenge, and the Order and its request stay pending for ever.",
            o.name
        );
        ctx.push(
            Rule::AcmeNoSolver,
            Severity::Critical,
            About {
                namespace,
                kind,
                name,
            },
            title,
            evidence,
            remedy,
            since,
        );
    }
}

pub(super) fn check(ctx: &mut Ctx<'_>) {
    no_solver(ctx);
    let now = ctx.now;
    let data = ctx.idx.data;
    for ch in data.challenges.values() {
        let about = || About {
            namespace: &ch.namespace,
            kind: Subject::Object(Kind::Challenge),
            name: &ch.name,
        };
        let age = ch.created.map(|c| now - c);
        if challenge_failing(ch, now, ctx.t) {
            let reason = ch.reason.as_deref().unwrap_or("(no reason given)");
            let failure = ch
                .failure
                .clone()
                .unwrap_or_else(|| Failure::classify(reason));
            let what = if ch.has_failed() {
                format!("is {}", ch.state)
            } else {
                format!(
                    "has failed its self-check for {}",
                    age.map(span).unwrap_or_default()
                )
            };
            let diagnosis = diagnose(ctx, ch, &failure);
            ctx.push(
                Rule::AcmeChallengeFailing,
                Severity::Critical,
                about(),
                format!(
                    "{} challenge for {} failing: {}",
                    ch.challenge_type, ch.dns_name, failure.label
                ),
                format!(
                    "The challenge {what}: {}. {}Reason: {reason}",
                    failure.explanation, diagnosis.evidence
                ),
                &diagnosis.remediation,
                ch.created,
            );
        } else if ch.queued() {
            if age.is_some_and(|a| a > ctx.t.challenge_queued_after) {
                ctx.push(
                    Rule::AcmeChallengesQueued,
                    Severity::Warning,
                    about(),
                    format!("Challenge for {} queued behind cert-manager's limit of concurrent challenges", ch.dns_name),
                    format!(
                        "Challenge {} has waited {} for a slot: it is not being processed (status.processing false, no state, no reason). cert-manager processes at most --max-concurrent-challenges at once (60 by default), oldest first and one per name and type; while other challenges hold every slot — in a mass incident, failing ones that retry for ever — the rest wait, and nothing is wrong with them yet.",
                        ch.name,
                        age.map(span).unwrap_or_default()
                    ),
                    "Fix what makes the processing challenges fail (the cluster's failing challenges): each one that passes, or whose Certificate is fixed or removed, frees a slot for the oldest waiting one. The platform team can raise --max-concurrent-challenges on cert-manager's controller.",
                    ch.created,
                );
            }
        } else if matches!(&*ch.state, "" | "pending" | "processing")
            && age.is_some_and(|a| a > ctx.t.challenge_stuck_after)
        {
            ctx.push(
                Rule::AcmeChallengeStuck,
                Severity::Warning,
                about(),
                format!("Challenge for {} stuck in {:?} for {}", ch.dns_name, if ch.state.is_empty() { "unknown" } else { &ch.state }, age.map(span).unwrap_or_default()),
                format!("state {:?}, presented {}, processing {}, reason: {}", ch.state, ch.presented, ch.processing, ch.reason.as_deref().unwrap_or("(none)")),
                "Check cert-manager's controller: it is processing this challenge and has said nothing about it for this long — its logs say why (a sync that keeps erroring, e.g. an issuer that cannot be read, or a controller that is not running).",
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
            Some(c) => (Kind::Certificate, c.name.clone()),
            None => (Kind::Order, o.name.clone()),
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
            Some(n) => (Kind::Certificate, n.clone()),
            None => (Kind::CertificateRequest, r.name.clone()),
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
    kind: Kind,
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
    let failure = Failure::classify(text);
    let about = About {
        namespace,
        kind: Subject::Object(kind),
        name,
    };
    // Which limit, from Boulder's words: a paused name and the per-account order limit have
    // rules of their own.
    if crate::model::reasons::names_paused(text) {
        ctx.push(
            Rule::AcmePaused,
            Severity::Critical,
            about,
            format!("Let's Encrypt paused the names of {kind} {name} for this account"),
            format!("Observed: the CA refuses every new order for these names from this ACME account after a long run of failed validations. ACME said: {text}"),
            "Fix why validation fails first (the Challenge's failure), then unpause at the URL in the message (Let's Encrypt's self-service portal, signed in as the account), then restart the issuance.",
            since,
        );
        return;
    }
    let (rule, title) = if text.contains("too many new orders") {
        (
            Rule::AcmeOrdersBudget,
            format!("Let's Encrypt refuses new orders from the account of {kind} {name}"),
        )
    } else {
        (
            Rule::AcmeRateLimited,
            format!(
                "Let's Encrypt rate limit hit for {kind} {name}: {}",
                failure.label
            ),
        )
    };
    ctx.push(
        rule,
        Severity::Critical,
        about,
        title,
        format!("{} {when} ACME said: {text}", failure.explanation),
        "Do not renew or recreate the Certificate before the retry time: every attempt counts against the same limit. Fix whatever caused repeated issuance (failing challenges, a Certificate being recreated), and consolidate names if you issue many certificates for one registered domain.",
        since,
    );
}

/// Whether a redirect to HTTPS explains a failing HTTP-01 challenge solved by a separate
/// solver Ingress (the case edit-in-place fixes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Redirect {
    /// Not this challenge's problem, or not one a redirect explains.
    No,
    /// The text itself shows the redirect.
    Observed,
    /// The text shows what an HTTPS listener answers (404, another page), and the Ingress is
    /// behind Cilium's HTTPS enforcement, or in Cilium's dedicated load-balancer mode where
    /// the separate solver Ingress gets an address of its own (`suspect`).
    Likely,
}

pub(super) fn redirect_evidence(ch: &ChallengeView, suspect: bool) -> Redirect {
    if !ch.challenge_type.eq_ignore_ascii_case("HTTP-01") || ch.in_place_ingress.is_some() {
        return Redirect::No;
    }
    match ch.failure.as_ref().map(|f| f.class) {
        Some(FailureClass::Redirected) => Redirect::Observed,
        Some(FailureClass::NotFound | FailureClass::WrongContent) if suspect => Redirect::Likely,
        _ => Redirect::No,
    }
}

/// What a failing challenge's context adds to its text: whether the cause is the missing
/// edit-in-place (observed or likely, with the evidence), and what to do.
struct Diagnosis {
    evidence: String,
    remediation: String,
}

/// Reads a failure in its context. A redirect to HTTPS is evidence in the text itself; a
/// bare 404 (or another page answering) is not, and becomes "likely a redirect" only when
/// the Ingress behind it is a Cilium Ingress with HTTPS enforcement and the challenge is
/// solved by a separate solver Ingress (cert-manager DOMAIN §9.2: its self-check follows
/// redirects, so it reports what the HTTPS listener answered).
fn diagnose(ctx: &Ctx<'_>, ch: &ChallengeView, failure: &Failure) -> Diagnosis {
    let idx = &ctx.idx;
    let request = idx
        .order_of_challenge(ch)
        .and_then(|o| idx.request_of_order(o));
    let certificate = request.and_then(|r| idx.certificate_of_request(r));
    let ingress = certificate.and_then(|c| idx.ingress_of(c));
    let http01 = ch.challenge_type.eq_ignore_ascii_case("HTTP-01");
    let plain = Diagnosis {
        evidence: String::new(),
        remediation: remediation(failure.class).to_string(),
    };
    if !http01 {
        return plain;
    }
    // A Gateway's solver route behind Gateway listeners that take PROXY protocol only: the
    // self-check hairpins to the Gateway's address from inside the cluster, without the
    // header, and is cut off.
    let cut_off = matches!(
        failure.class,
        FailureClass::ConnectionReset | FailureClass::Timeout
    );
    let gateway_proxy = idx
        .data
        .cilium()
        .and_then(|c| c.gateway_proxy_protocol)
        .unwrap_or(false);
    if ch.gateway_parents.is_some() && cut_off && gateway_proxy {
        return Diagnosis {
            evidence: "Cilium's Gateway API listeners accept only PROXY protocol (kube-system/cilium-config enable-gateway-api-proxy-protocol: true): cert-manager's self-check connects from inside the cluster to the Gateway's address without the header and is cut off, while Let's Encrypt's requests come through the load balancer that adds it (cert-manager#466). The Ingress flag, enable-ingress-proxy-protocol, does not decide this. ".to_string(),
            remediation: "Let in-cluster connections to the Gateway's address go through the load balancer that adds the header (a provider setting that publishes a hostname, or ipMode: Proxy, on the Gateway's Service instead of an IP short-circuited to Envoy), or turn off enable-gateway-api-proxy-protocol if the load balancer does not need it; then restart the issuance.".to_string(),
        };
    }
    if let Some(in_place) = &ch.in_place_ingress {
        if failure.class == FailureClass::Redirected {
            return Diagnosis {
                evidence: format!("The challenge is already solved in place on Ingress {in_place}, yet the request was redirected: that Ingress itself redirects plain HTTP. "),
                remediation: format!("Find what redirects http://{}/.well-known/acme-challenge/ on Ingress {in_place} (ingress.cilium.io/force-https, an ssl-redirect annotation, a policy) and exempt that path.", ch.dns_name),
            };
        }
        return plain;
    }
    let enforced = ingress
        .map(|ing| (ing, idx.controller_of(ing)))
        .filter(|(_, c)| {
            c.cilium && (c.enforce_https == Some(true) || c.lb_mode == Some(LbMode::Dedicated))
        });
    let evidence = match (redirect_evidence(ch, enforced.is_some()), &enforced) {
        (Redirect::Observed, _) => "Observed: the request for the token was redirected to HTTPS, and this challenge is solved by a separate solver Ingress (its spec.solver names no Ingress to edit in place). ".to_string(),
        (Redirect::Likely, Some((ing, c))) if c.enforce_https != Some(true) => format!(
            "Likely the solver's own address: the text names no URL, but Ingress {} is a Cilium Ingress in dedicated load-balancer mode, where the separate solver Ingress cert-manager made for this challenge gets a load balancer of its own — the host's DNS points at the application's, whose listener has no route for the token (cert-manager#6805). ",
            ing.name
        ),
        (Redirect::Likely, Some((ing, c))) => format!(
            "Likely a redirect to HTTPS: the text names no URL, but Ingress {} is a Cilium Ingress with HTTPS enforcement on ({}) and this challenge is solved by a separate solver Ingress (its spec.solver names no Ingress to edit in place); cert-manager's self-check follows the redirect and reports what the HTTPS listener answers. ",
            ing.name, c.enforce_https_source
        ),
        _ => return plain,
    };
    let restart = match (certificate, request) {
        (Some(c), _) if c.rare.issuing.as_ref().is_some_and(|i| &*i.status != "True") || c.rare.issuing.is_none() => format!("then renew Certificate {} (it is in backoff; cmctl renew does the same)", c.name),
        (_, Some(r)) if ch.failure.as_ref().is_some_and(|_| ch.has_failed()) => format!("then restart the issuance by deleting CertificateRequest {}: this challenge failed, so its order cannot succeed; renew is refused while Issuing=True, and cert-manager makes a new request from the annotated Certificate", r.name),
        (_, Some(r)) => format!("then have cert-manager solve this challenge again on the Ingress: annotate its Order {} with acme.cert-manager.io/http01-override-ingress-name (the fix does) — the Order's controller replaces a pending challenge whose solver changes, with the same request and no new order; the Certificate's annotations alone reach only the next request. If the challenge fails first, restart the issuance by deleting CertificateRequest {}", ch.owner.as_ref().map(|o| o.name.to_string()).unwrap_or_default(), r.name),
        _ => "then restart the issuance (delete the in-flight CertificateRequest)".to_string(),
    };
    let target = ingress.map(|i| i.name.to_string());
    let remediation = match (target, certificate) {
        (Some(ing), Some(c)) => format!(
            "Set acme.cert-manager.io/http01-edit-in-place: \"true\" on Ingress {ing} and acme.cert-manager.io/http01-override-ingress-name: {ing} (with cert-manager.io/issue-temporary-certificate: \"true\") on Certificate {}, {restart}. Lookout's \"Add edit-in-place\" on the Ingress does all of it.",
            c.name
        ),
        _ => format!("Serve the challenge in place: set acme.cert-manager.io/http01-edit-in-place: \"true\" on the Ingress and acme.cert-manager.io/http01-override-ingress-name on its Certificate, {restart}."),
    };
    Diagnosis {
        evidence,
        remediation,
    }
}

/// What to do about a failure when its context adds nothing.
fn remediation(class: FailureClass) -> &'static str {
    use FailureClass::*;
    match class {
        Redirected => "Exempt /.well-known/acme-challenge/ from the host's HTTPS redirect (behind Cilium: acme.cert-manager.io/http01-edit-in-place: \"true\" on the Ingress), then restart the issuance.",
        NotFound => "Check that the ingress controller routes http://<host>/.well-known/acme-challenge/<token> to cert-manager's solver: the solver Ingress's class (the issuer's http01.ingress.class or ingressClassName), and that DNS points at this controller.",
        WrongStatus => "Fetch the challenge URL from outside and see who answers (CDN, WAF, authentication, a load balancer without healthy backends); the solver must get the request.",
        WrongContent => "Fetch the challenge URL and see which backend answers instead of the solver (an app catch-all route, a default backend, a CDN).",
        Timeout | ConnectionRefused | ConnectionReset => "Make port 80 of the host's address reachable (firewall, security group, load balancer listeners and health checks); behind PROXY protocol the in-cluster self-check fails while outside clients work — see cert-manager#466.",
        Tls => "Give the host a certificate while the real one is issued (cert-manager.io/issue-temporary-certificate: \"true\"), or exempt the challenge path from the HTTPS redirect.",
        Dns => "Point the host's DNS record at the ingress load balancer's address, then restart the issuance.",
        Caa => "Add a CAA record allowing letsencrypt.org for the domain, or remove the restrictive one.",
        RateLimited => "Wait for the time in the message; every retry before it counts against the same limit. Fix what made issuance repeat.",
        Rejected => "Read the refusal: the CA will not issue for a forbidden name, and an admission webhook names the rule it applied.",
        Dns01 => "Check the DNS-01 solver: the provider credentials and permissions, the zone it picked, and that the TXT record is visible on the zone's authoritative servers.",
        SecondaryValidation => "Let the challenge path be reached from anywhere: allow /.well-known/acme-challenge/ on port 80 through every firewall, WAF and geo or IP allow-list in front of the host (Let's Encrypt's vantage points are not published), and check the name resolves to the same address from several regions; then restart the issuance.",
        Other => "Read the ACME error in the reason and the Challenge's events; fix the cause, then restart the issuance.",
    }
}

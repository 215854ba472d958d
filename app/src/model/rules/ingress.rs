//! `ingress.*`: the Ingresses themselves.

use crate::model::finding::Subject;
use crate::model::rule::Rule;
use std::collections::{BTreeMap, HashMap};

use super::acme::{challenge_failing, redirect_evidence, Redirect};
use super::{span, About, Ctx};
use crate::model::certificate::CertificateView;
use crate::model::chain::{AnnotationStatus, ControllerInfo};
use crate::model::finding::Severity;
use crate::model::infra::LbMode;
use crate::model::ingress::IngressView;
use crate::model::ingress::EDIT_IN_PLACE;
use crate::model::kind::Kind;
use crate::model::solvers::{pick, SolverKind};
use crate::model::text::Text;

pub(super) fn check(ctx: &mut Ctx<'_>) {
    let now = ctx.now;
    let data = ctx.idx.data;
    let facts = ctx.idx.facts;
    for ing in data.ingresses.values() {
        let about = || About {
            namespace: &ing.namespace,
            kind: Subject::Object(Kind::Ingress),
            name: &ing.name,
        };
        let controller = ctx.idx.controller_of(ing);
        let https = match controller.enforce_https {
            Some(true) => format!(
                "HTTPS enforcement is on ({})",
                controller.enforce_https_source
            ),
            Some(false) => format!(
                "HTTPS enforcement is off ({})",
                controller.enforce_https_source
            ),
            None => format!("HTTPS enforcement is {}", controller.enforce_https_source),
        };
        // Where a separate solver Ingress fails: behind the redirect, or on its own address.
        let enforced = controller.cilium
            && (controller.enforce_https == Some(true)
                || controller.lb_mode == Some(LbMode::Dedicated));
        // The Ingress's challenges failing now in a way a redirect explains: the missing
        // (or ignored) annotation's fault.
        // And its Certificates whose last issuance failed, where the solver Ingress is
        // certain to be caught by the redirect: cert-manager keeps the failure in the status
        // until an issuance succeeds, while the failed Challenge may be gone (its request
        // is deleted when the retry starts) or the retry's not failing yet — and the retry
        // fails the same way.
        let failing = || -> Vec<String> {
            let certain = enforced && needs_edit_in_place(ctx, ing, &controller).is_some();
            let mut failing = Vec::new();
            for c in ctx.idx.certificates_of(ing) {
                let before = failing.len();
                failing.extend(
                    ctx.idx
                        .challenges_under(c)
                        .into_iter()
                        .filter(|ch| challenge_failing(ch, now, ctx.t))
                        .filter(|ch| redirect_evidence(ch, enforced) != Redirect::No)
                        .map(|ch| {
                            format!(
                                "{} ({})",
                                ch.dns_name,
                                ch.failure
                                    .as_ref()
                                    .map(|f| f.label.to_string())
                                    .or_else(|| ch.reason.as_deref().map(str::to_string))
                                    .unwrap_or_else(|| ch.state.to_string())
                            )
                        }),
                );
                if failing.len() == before && certain && failed_before(c) {
                    failing.push(format!(
                        "Certificate {} (its last issuance failed; cert-manager retries it the same way)",
                        c.name
                    ));
                }
            }
            failing
        };
        match ctx.idx.annotation_status(ing) {
            AnnotationStatus::Missing => {
                let failing = failing();
                // Needed as the issuer's solvers say, or shown by a challenge a redirect
                // breaks (also when the issuer cannot be read).
                let hosts = needs_edit_in_place(ctx, ing, &controller).or_else(|| {
                    (!failing.is_empty()).then(|| {
                        ing.tls
                            .iter()
                            .flat_map(|t| t.hosts.iter())
                            .map(|h| h.to_string())
                            .collect()
                    })
                });
                if let Some(hosts) = hosts {
                    let issuer = ing
                        .issuer
                        .as_ref()
                        .map(|r| format!("{} {}", r.kind, r.name))
                        .unwrap_or_default();
                    let why = match controller.lb_mode {
                        Some(LbMode::Shared) => "In Cilium's shared load-balancer mode the separate solver Ingress cert-manager makes merges into the host's virtual host, where the HTTPS redirect catches the challenge (cilium#35347).",
                        Some(LbMode::Dedicated) => "In Cilium's dedicated load-balancer mode (the operator's default) the separate solver Ingress cert-manager makes gets its own load balancer and address, which the host's DNS does not point at (cert-manager#6805).",
                        None => "The separate solver Ingress cert-manager makes is not served for this host by its controller.",
                    };
                    let mut message = if failing.is_empty() {
                        format!("The Ingress asks {issuer} for a certificate for {} and that issuer solves them with an HTTP-01 solver Ingress, but the Ingress lacks {EDIT_IN_PLACE}: \"true\"; {https}. {why}", hosts.join(", "))
                    } else {
                        format!("The Ingress asks {issuer} for a certificate for {} and that issuer solves them with an HTTP-01 solver Ingress, but the Ingress lacks {EDIT_IN_PLACE}: \"true\"; {https}. {why} Its issuance is failing now: {}.", hosts.join(", "), failing.join("; "))
                    };
                    let policy = policy_words(ctx, ing);
                    if let Some((said, _)) = &policy {
                        message.push(' ');
                        message.push_str(said);
                    }
                    ctx.push(
                        Rule::IngressEditInPlaceMissing,
                        if failing.is_empty() { Severity::Warning } else { Severity::Critical },
                        about(),
                        format!("Ingress {} lacks the edit-in-place annotation", ing.name),
                        message,
                        policy.as_ref().map_or("Set acme.cert-manager.io/http01-edit-in-place: \"true\" on the Ingress, acme.cert-manager.io/http01-override-ingress-name set to the Ingress's name on its existing Certificate (the Ingress annotation alone does not change it), and restart an issuance in flight (its challenge keeps its old solver) — Lookout's \"Add edit-in-place\" does all three.", |(_, remedy)| remedy),
                        ing.created,
                    );
                }
            }
            AnnotationStatus::Invalid { value } => {
                // cert-manager reads anything but "true" as false: where its challenges fail
                // behind the redirect, this is the missing annotation's critical case.
                let failing = failing();
                let message = if failing.is_empty() {
                    format!("cert-manager enables edit-in-place only for the exact string \"true\"; {value:?} counts as false.")
                } else {
                    format!("cert-manager enables edit-in-place only for the exact string \"true\"; {value:?} counts as false, so the separate solver Ingress is used. Its issuance is failing now: {}.", failing.join("; "))
                };
                ctx.push(
                    Rule::IngressEditInPlaceInvalid,
                    if failing.is_empty() {
                        Severity::Warning
                    } else {
                        Severity::Critical
                    },
                    about(),
                    format!("{EDIT_IN_PLACE} is {value:?}, not \"true\""),
                    message,
                    "Set the annotation to \"true\" (quoted) or remove it.",
                    None,
                )
            }
            AnnotationStatus::SetNotEffective {
                certificates,
                managers,
            } => {
                // The next challenge still uses the separate solver: where the last ones
                // failed behind the redirect, issuing again fails the same way.
                let failing = failing();
                let mut message = format!(
                    "The annotation is \"true\"{}, but {} {} {} acme.cert-manager.io/http01-override-ingress-name. ingress-shim adds it only when it creates a Certificate, so the next challenge still uses a separate solver Ingress.",
                    if managers.is_empty() { String::new() } else { format!(" (owned by {})", managers.join(", ")) },
                    crate::model::text::noun(certificates.len(), "Certificate", "Certificates"),
                    certificates.join(", "),
                    crate::model::text::noun(certificates.len(), "lacks", "lack")
                );
                if !failing.is_empty() {
                    message.push_str(&format!(
                        " Its issuance is failing now: {}.",
                        failing.join("; ")
                    ));
                }
                ctx.push(
                    Rule::IngressEditInPlaceNotEffective,
                    if failing.is_empty() { Severity::Warning } else { Severity::Critical },
                    about(),
                    format!("Edit-in-place is set but Certificate {} was created without it", certificates.join(", ")),
                    message,
                    "Put acme.cert-manager.io/http01-override-ingress-name, set to the Ingress's name (and cert-manager.io/issue-temporary-certificate: \"true\") on the Certificate, or delete the Certificate so ingress-shim recreates it with them.",
                    None,
                )
            }
            AnnotationStatus::Set { .. } => {
                // Set and on the Certificate — but a challenge made before still has the
                // solver it was created with (cert-manager fixes it at creation): it keeps
                // failing until its request is replaced.
                let stale: Vec<(String, String)> = ctx
                    .idx
                    .certificates_of(ing)
                    .into_iter()
                    .flat_map(|c| {
                        ctx.idx
                            .challenges_under(c)
                            .into_iter()
                            .map(move |ch| (c, ch))
                    })
                    .filter(|(_, ch)| {
                        ch.challenge_type.eq_ignore_ascii_case("HTTP-01")
                            && !matches!(&*ch.state, "valid")
                            && ch.in_place_ingress.as_deref() != Some(&*ing.name)
                            && challenge_failing(ch, now, ctx.t)
                    })
                    .map(|(c, ch)| (c.name.to_string(), ch.name.to_string()))
                    .collect();
                if !stale.is_empty() {
                    let (certs, challenges): (Vec<String>, Vec<String>) = stale.into_iter().unzip();
                    ctx.push(
                        Rule::IngressEditInPlaceNotEffective,
                        Severity::Critical,
                        about(),
                        format!("Edit-in-place is set, but failing challenge {} still uses a separate solver", challenges.join(", ")),
                        format!(
                            "The Ingress and Certificate {} carry edit-in-place, but Challenge {} was created before: its spec.solver names no Ingress to edit in place, and cert-manager never changes a Challenge's solver. It keeps failing until its CertificateRequest is replaced.",
                            certs.join(", "),
                            challenges.join(", ")
                        ),
                        "Restart the issuance: delete the in-flight CertificateRequest (\"Restart issuance\" on the Certificate's page); cert-manager makes a new one, and its challenge is solved in place. Renew is refused while Issuing=True.",
                        None,
                    );
                }
            }
            AnnotationStatus::NotRequested | AnnotationStatus::NotApplicable => {}
        }

        let tailscale = ing.class.as_deref() == Some("tailscale");
        let addressless = ing.addresses.is_empty()
            && ing
                .created
                .is_some_and(|c| now - c > ctx.t.no_address_after);
        if addressless && !tailscale {
            ctx.push(
                Rule::IngressNoAddress,
                Severity::Warning,
                about(),
                format!("Ingress {} has no load-balancer address", ing.name),
                format!("status.loadBalancer.ingress is empty {} after creation (class {}).", ing.created.map(|c| span(now - c)).unwrap_or_default(), controller.class.as_deref().unwrap_or("none")),
                "Check that the ingress controller handles this class and that its LoadBalancer Service got an address (LB IPAM pool, cloud quota).",
                ing.created,
            );
        } else if addressless {
            // The Tailscale operator publishes the hostname only once the certificate is
            // issued (or port 80 is advertised): a missing one is a certificate problem, not a
            // load balancer's.
            let tailnet = facts
                .overrides
                .tailnet
                .as_deref()
                .map(|t| format!(" in tailnet {t}"))
                .unwrap_or_default();
            ctx.push(
                Rule::IngressNoAddress,
                Severity::Warning,
                about(),
                format!("Tailscale Ingress {} has no hostname yet", ing.name),
                format!("The Tailscale operator publishes the Ingress's hostname only once its Let's Encrypt certificate is issued (or port 80 is advertised); {} after creation there is none{tailnet}. The usual cause is the tailnet's Let's Encrypt limit: 50 new certificates per 7 days for the whole tailnet, shared with other clusters and devices.", ing.created.map(|c| span(now - c)).unwrap_or_default()),
                "Read the Tailscale proxy's logs for the certificate error; if the tailnet is rate limited, wait for the time it names and hold back new Tailscale Ingresses (tailscale.cert-budget shows the tailnet's week).",
                ing.created,
            );
        }

        if let Some(class) = &ing.class {
            if facts.synced(Kind::IngressClass)
                && !data
                    .ingress_classes
                    .contains_key(&crate::model::data::key("", class))
            {
                ctx.push(
                    Rule::IngressUnknownClass,
                    Severity::Warning,
                    about(),
                    format!("Ingress class {class:?} does not exist"),
                    // Not the cluster's list of classes: a namespace's users need not see it.
                    format!("The Ingress names class {class:?}, and the cluster has no IngressClass of that name."),
                    "Fix spec.ingressClassName (or the kubernetes.io/ingress.class annotation); no controller serves this Ingress.",
                    None,
                );
            }
        }

        if facts.synced(Kind::Certificate) {
            for t in &ing.tls {
                let Some(secret) = &t.secret_name else {
                    continue;
                };
                if ctx
                    .idx
                    .certificates_writing(&ing.namespace, secret)
                    .is_empty()
                    && !ing.asks_for_certificate()
                {
                    ctx.push(
                        Rule::IngressUnmanagedTls,
                        Severity::Info,
                        about(),
                        format!("TLS Secret {secret} is not managed by cert-manager"),
                        format!("No Certificate in {} writes Secret {secret}: cert-manager does not renew it. Lookout reads its expiry only from what the probe sees served (a probe.* finding when it has expired or names other hosts).", ing.namespace),
                        "Nothing to do if the Secret is managed elsewhere; otherwise add a cert-manager issuer annotation so a Certificate manages it.",
                        None,
                    );
                }
            }
        }
    }
    shared_secrets(ctx);
    certificate_missing(ctx);
}

/// `ingress.shared-secret`: two TLS entries in one namespace with the same secretName.
/// ingress-shim names a Certificate after its secretName: within one Ingress a repeated
/// secretName fails validation and the whole Ingress gets no Certificate (a `BadConfig`
/// event); across Ingresses the first one's Certificate stands and the others are skipped
/// without an event (cert-manager `pkg/controller/certificate-shim/sync.go`:
/// `checkForDuplicateSecretNames`, and "refusing to update non-owned certificate").
/// The hosts of an Ingress whose HTTP-01 challenges would go through a separate solver
/// Ingress behind a controller that does not serve one for the host (Cilium; GKE's
/// ingress-gce): its issuer is an ACME issuer whose picked solver for the host is
/// `http01.ingress` without a fixed `name`. None when edit-in-place does not matter — DNS-01,
/// another controller, an issuer that is not ACME or not known (then `issuer.missing` speaks).
/// What an Ingress's finding says of the policy meant to set its annotation, and the
/// remedy then: repair the policy; a patch here is a stop-gap.
fn policy_words(ctx: &Ctx<'_>, ing: &IngressView) -> Option<(String, String)> {
    let (p, coverage) = crate::model::policy::responsible(ctx.idx.data, ctx.idx.setters(), ing)?;
    let said = match coverage {
        crate::model::policy::Coverage::Selected => format!(
            "The {} is meant to set it here and is {}.",
            p.label(),
            p.status_text()
        ),
        _ => format!(
            "The {} sets it on this namespace's other Ingresses of the same issuer, but its selector leaves this one out.",
            p.label()
        ),
    };
    let remedy = format!(
        "Repair the {} — the policy owns this annotation; its page says why it fails. \"Add edit-in-place\" here is a stop-gap: it sets the annotation, the override on the Certificate and restarts an issuance in flight, while the policy remains the owner.",
        p.label()
    );
    Some((said, remedy))
}

/// Whether `c`'s last issuance failed: cert-manager keeps `status.failedIssuanceAttempts`
/// until an issuance succeeds (`issuing_controller.go`), through the backoff and the retry.
pub(super) fn failed_before(c: &CertificateView) -> bool {
    c.rare.failed_issuance_attempts.is_some_and(|n| n >= 1)
}

pub(super) fn needs_edit_in_place(
    ctx: &Ctx<'_>,
    ing: &IngressView,
    controller: &ControllerInfo,
) -> Option<Vec<String>> {
    let gce = controller.controller.as_deref() == Some("k8s.io/ingress-gce")
        || controller.class.as_deref() == Some("gce");
    if !controller.cilium && !gce {
        return None;
    }
    let issuer = ctx.idx.issuer(&ing.namespace, ing.issuer.as_ref()?)?;
    let hosts: Vec<String> = ing
        .tls
        .iter()
        .flat_map(|t| t.hosts.iter())
        .filter(|host| {
            pick(&issuer.solvers, host, &ing.labels)
                .is_some_and(|s| s.kind == SolverKind::Http01Ingress && s.ingress_name.is_none())
        })
        .map(|h| h.to_string())
        .collect();
    (!hosts.is_empty()).then_some(hosts)
}

fn shared_secrets(ctx: &mut Ctx<'_>) {
    let mut by_secret: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for ing in ctx.idx.data.ingresses.values() {
        for t in &ing.tls {
            if let Some(s) = &t.secret_name {
                by_secret
                    .entry((ing.namespace.to_string(), s.to_string()))
                    .or_default()
                    .push(ing.name.to_string());
            }
        }
    }
    for ((ns, secret), users) in by_secret.into_iter().filter(|(_, u)| u.len() > 1) {
        let mut names = users.clone();
        names.dedup();
        for name in &names {
            let repeats_within = users.iter().filter(|u| *u == name).count() > 1;
            let others: Vec<&str> = names
                .iter()
                .filter(|n| *n != name)
                .map(String::as_str)
                .collect();
            let (title, message, remediation) = if repeats_within {
                (
                    format!("secretName {secret} is used by more than one TLS entry of this Ingress"),
                    format!("Ingress {ns}/{name} lists secretName {secret} in more than one TLS entry. ingress-shim makes one Certificate per TLS entry, named after its secretName, so it refuses the whole Ingress (Warning BadConfig: \"this secret name must only appear in a single TLS entry\") and makes no Certificate for any of its hosts."),
                    "Give each TLS entry its own secretName, or list all its hosts in one TLS entry.",
                )
            } else {
                (
                    format!("TLS Secret {secret} is also named by {}", others.join(", ")),
                    format!("In namespace {ns}, Ingresses {} all name secretName {secret}. ingress-shim names the Certificate after the secretName, so there is one Certificate {secret}, owned by whichever Ingress it saw first; for the others it refuses to update a Certificate it does not own and says nothing (no event). The hosts only those other Ingresses list get no certificate.", names.join(", ")),
                    "Give each Ingress its own secretName; or, if they serve the same hosts, let one Ingress own the TLS entry.",
                )
            };
            ctx.push(
                Rule::IngressSharedSecret,
                Severity::Warning,
                About {
                    namespace: &Text::from(ns.as_str()),
                    kind: Subject::Object(Kind::Ingress),
                    name: &Text::from(name.as_str()),
                },
                title,
                message,
                remediation,
                None,
            );
        }
    }
}

/// `ingress.certificate-missing`: the Ingress asks cert-manager for a certificate and
/// ingress-shim makes none — its issuer annotations contradict each other (it refuses them
/// with `BadConfig`, cert-manager `certificate-shim/sync.go` `issuerForIngressLike`), or it
/// has no `spec.tls` to make a Certificate from (`buildCertificates` works from the TLS
/// entries). A repeated secretName is `ingress.shared-secret`.
///
/// Beyond the refusals Lookout reads itself: an Ingress whose TLS entries have no Certificate
/// is reported at once when ingress-shim has a `BadConfig` event for it, whatever the event
/// says (it is quoted), and otherwise once it has stood unchanged for
/// `certificate_missing_after` — so a refusal Lookout does not model still shows.
fn certificate_missing(ctx: &mut Ctx<'_>) {
    if !ctx.idx.facts.synced(Kind::Certificate) {
        return;
    }
    for ing in ctx.idx.data.ingresses.values() {
        if !ing.asks_for_certificate() {
            continue;
        }
        let without: Vec<&str> = ing
            .tls
            .iter()
            .filter_map(|t| t.secret_name.as_deref())
            .filter(|s| ctx.idx.certificates_writing(&ing.namespace, s).is_empty())
            .collect();
        let (title, message, remediation) = match &ing.rare.issuer_conflict {
            // A Certificate made before the annotations went wrong still stands.
            Some(_) if without.is_empty() && !ing.tls.is_empty() => continue,
            Some(why) => (
                "Its issuer annotations contradict each other: no Certificate is made".to_string(),
                format!("ingress-shim refuses the annotations of Ingress {}/{} (Warning BadConfig: \"Could not determine issuer for ingress due to bad annotations: {why}\") and makes no Certificate, so no certificate is issued for {}.{}", ing.namespace, ing.name, if without.is_empty() { "its hosts".to_string() } else { format!("{} {}", crate::model::text::noun(without.len(), "Secret", "Secrets"), without.join(", ")) }, bad_config_events(ctx, ing)),
                "Keep one of cert-manager.io/cluster-issuer or cert-manager.io/issuer (issuer-kind and issuer-group go only with issuer), and give it a name.",
            ),
            None if ing.rare.shim_refusal.is_some() && !without.is_empty() => (
                "An annotation has a value ingress-shim refuses: no Certificate is made".to_string(),
                format!(
                    "ingress-shim stops at Ingress {}/{}: {}. It makes no Certificate for it (and updates none), so no certificate is issued for {} {}. No event says so; cert-manager's controller log does.{}",
                    ing.namespace,
                    ing.name,
                    ing.rare.shim_refusal.as_deref().unwrap_or_default(),
                    crate::model::text::noun(without.len(), "Secret", "Secrets"),
                    without.join(", "),
                    bad_config_events(ctx, ing)
                ),
                "Fix the annotation's value (Go durations such as 2160h, not 90d; RSA, ECDSA or Ed25519; PKCS1 or PKCS8; Never or Always), or remove it.",
            ),
            None if ing.tls.is_empty() => (
                "It asks for a certificate but has no TLS section".to_string(),
                format!("Ingress {}/{} {}, but ingress-shim makes Certificates only from spec.tls entries, and it has none: no certificate is requested and its hosts are served without one.", ing.namespace, ing.name, ing.asks_how()),
                "Add a spec.tls entry with the hosts and a secretName, or remove the issuer annotation.",
            ),
            // A secretName repeated within the Ingress is `ingress.shared-secret`'s.
            None if without.is_empty() || repeats_a_secret(ing) => continue,
            None => {
                let events = bad_config_events(ctx, ing);
                let waited = ing.changed.map(|c| ctx.now - c);
                let secrets = format!(
                    "{} {}",
                    crate::model::text::noun(without.len(), "Secret", "Secrets"),
                    without.join(", ")
                );
                if !events.is_empty() {
                    (
                        "ingress-shim refuses this Ingress: no Certificate is made".to_string(),
                        format!("ingress-shim reported a BadConfig for Ingress {}/{} and no Certificate writes its TLS {secrets}, so no certificate is issued for those hosts.{events}", ing.namespace, ing.name),
                        "Fix what the BadConfig event names in the Ingress (its TLS entries or its cert-manager.io annotations); ingress-shim makes the Certificate on the next change.",
                    )
                } else if waited.is_some_and(|w| w >= ctx.t.certificate_missing_after) {
                    (
                        "It asks for a certificate and none was made".to_string(),
                        format!("Ingress {}/{} {}, but {} after it last changed no Certificate writes its TLS {secrets}, and ingress-shim has left no event saying why. cert-manager's controller log (ingress-shim) says why; its hosts are served without a certificate meanwhile.", ing.namespace, ing.name, ing.asks_how(), crate::model::rules::span(waited.unwrap_or_default())),
                        "Read cert-manager's controller log for this Ingress (kubectl -n cert-manager logs deploy/cert-manager | grep <ingress name>); check that the controller runs with ingress-shim enabled and that the Ingress's annotations and TLS entries are what ingress-shim expects.",
                    )
                } else {
                    continue;
                }
            }
        };
        ctx.push(
            Rule::IngressCertificateMissing,
            Severity::Critical,
            About {
                namespace: &ing.namespace,
                kind: Subject::Object(Kind::Ingress),
                name: &ing.name,
            },
            title,
            message,
            remediation,
            None,
        );
    }
}

/// Whether a secretName appears in more than one of the Ingress's TLS entries.
fn repeats_a_secret(ing: &IngressView) -> bool {
    let names: Vec<&str> = ing
        .tls
        .iter()
        .filter_map(|t| t.secret_name.as_deref())
        .collect();
    names
        .iter()
        .enumerate()
        .any(|(i, n)| names[..i].contains(n))
}

/// The Ingress's latest `BadConfig` events, as evidence.
fn bad_config_events(ctx: &Ctx<'_>, ing: &IngressView) -> String {
    let events: Vec<String> = ctx
        .idx
        .events_of("Ingress", &ing.namespace, &ing.name, 3)
        .into_iter()
        .filter(|e| e.reason == "BadConfig")
        .map(|e| format!("\"{}\"", e.message))
        .collect();
    if events.is_empty() {
        String::new()
    } else {
        format!(" Its BadConfig events: {}.", events.join("; "))
    }
}

/// `ingress.shared-host-https-redirect`: several Ingresses on one host with HTTPS enforced —
/// unless the host is fixed: an Ingress of it has edit-in-place and none asks for a
/// certificate without it (the challenge is then solved on the certificate's own Ingress, so
/// the redirect reaches the solver over HTTPS: nothing is left to fix).
pub(super) fn shared_hosts(ctx: &mut Ctx<'_>) {
    // Per host: (namespace, name, HTTPS enforced, edit-in-place: Some(true) set, Some(false)
    // asks for a certificate without it, None neither).
    type Serving<'a> = (&'a str, &'a str, Option<bool>, Option<bool>);
    let data = ctx.idx.data;
    // The Ingresses of each host, then what each of a shared host's does.
    let mut ingresses_of: HashMap<Text, Vec<&IngressView>> = HashMap::new();
    for ing in data.ingresses.values() {
        for h in ing.all_hosts() {
            let host = match h.bytes().any(|b| b.is_ascii_uppercase()) {
                true => Text::from(h.to_ascii_lowercase().as_str()),
                false => h,
            };
            let on = ingresses_of.entry(host).or_default();
            if !on.last().is_some_and(|last| std::ptr::eq(*last, &**ing)) {
                on.push(ing);
            }
        }
    }
    let mut by_host: BTreeMap<Text, Vec<Serving<'_>>> = BTreeMap::new();
    for (host, ings) in ingresses_of.into_iter().filter(|(_, ings)| ings.len() > 1) {
        let serving = ings
            .into_iter()
            .map(|ing| {
                let fixed = match (ing.edit_in_place.as_deref(), &ing.issuer) {
                    (Some("true"), _) => Some(true),
                    (_, Some(_)) => Some(false),
                    (_, None) => None,
                };
                let enforce = ctx.idx.controller_of(ing).enforce_https;
                (&*ing.namespace, &*ing.name, enforce, fixed)
            })
            .collect();
        by_host.insert(host, serving);
    }
    for (host, ings) in by_host {
        // Fixed: the certificate's Ingress solves in place and none asks without the fix.
        let fixed = ings.iter().any(|(_, _, _, f)| *f == Some(true))
            && !ings.iter().any(|(_, _, _, f)| *f == Some(false));
        if ings.len() < 2 || !ings.iter().any(|(_, _, e, _)| *e == Some(true)) || fixed {
            continue;
        }
        for (ns, name, _, _) in &ings {
            // Names only from the finding's own namespace: whoever sees it may not see the
            // others' (a tenant would learn another tenant's objects from their host).
            let same: Vec<&str> = ings
                .iter()
                .filter(|(n2, _, _, _)| n2 == ns)
                .map(|(_, n, _, _)| *n)
                .collect();
            let elsewhere = ings.len() - same.len();
            let others = match elsewhere {
                0 => String::new(),
                1 => " and 1 Ingress in another namespace".to_string(),
                n => format!(" and {n} Ingresses in other namespaces"),
            };
            ctx.push(
                Rule::IngressSharedHostHttpsRedirect,
                Severity::Warning,
                About { namespace: &Text::from(*ns), kind: Subject::Object(Kind::Ingress), name: &Text::from(*name) },
                format!("{} Ingresses serve {host} with HTTPS enforced", ings.len()),
                format!("{host} is served by Ingress(es) {} in {ns}{others}. Cilium merges them into one virtual host, so one Ingress's HTTPS redirect applies to all of them — including cert-manager's /.well-known/acme-challenge path on a solver Ingress (cilium/cilium#35347).", same.join(", ")),
                "Use acme.cert-manager.io/http01-edit-in-place: \"true\" on the Ingress that owns the certificate, or serve the host from one Ingress.",
                None,
            );
        }
    }
}

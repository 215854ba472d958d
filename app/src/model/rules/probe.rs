//! `probe.*`: what the hosts serve, as the probe observed it, judged against the chain —
//! the certificate cert-manager issued (the current CertificateRequest's
//! `status.certificate`), the Certificate's `notAfter`, and whether the ACME path reaches a
//! solver. These are observations, not inferences: their evidence is what a client got.

use crate::model::finding::Subject;
use crate::model::kind::Kind;
use crate::model::rule::Rule;
use std::collections::BTreeMap;
use std::sync::Arc;

use super::{at, About, Ctx};
use crate::model::certificate::CertificateView;
use crate::model::finding::Severity;
use crate::model::probe::{IssuedLeaf, Observation, TlsObservation, Untrusted};
use crate::model::text::Text;

/// Let's Encrypt's staging intermediates are all named `(STAGING) …`.
const STAGING_MARK: &str = "(STAGING)";

pub(super) fn check(ctx: &mut Ctx<'_>) {
    let data = ctx.idx.data;
    let probes = data.probes.clone();
    // One host, every address it was probed on, per publishing object.
    let mut by_host: BTreeMap<(&str, &str, &str, &str), Vec<&Observation>> = BTreeMap::new();
    for o in probes.iter() {
        for s in &o.sources {
            by_host
                .entry((&s.namespace, &s.kind, &s.name, &o.host))
                .or_default()
                .push(o);
        }
    }
    for ((namespace, kind, name, host), seen) in by_host {
        let ingress = data
            .ingresses
            .get(&crate::model::data::key(namespace, name))
            .filter(|_| Kind::from_name(kind) == Some(Kind::Ingress));
        let certificate = ingress.and_then(|ing| {
            ing.tls
                .iter()
                .find(|t| t.hosts.iter().any(|h| &**h == host))
                .and_then(|t| t.secret_name.as_deref())
                .and_then(|s| ctx.idx.certificate_for(ing, s))
                .cloned()
        });
        let (ns, obj_kind, obj_name): (Text, Kind, Text) = match ingress {
            Some(i) => (i.namespace.clone(), Kind::Ingress, i.name.clone()),
            None => (namespace.into(), kind_name(kind), name.into()),
        };
        let asks_cert_manager = ingress.filter(|i| i.asks_for_certificate()).and_then(|i| {
            i.tls
                .iter()
                .find(|t| t.hosts.iter().any(|h| &**h == host))
                .and_then(|t| t.secret_name.clone())
        });
        let on = Probed {
            asks_cert_manager,
            edit_in_place: ingress
                .and_then(|i| i.edit_in_place.as_deref())
                .is_some_and(|v| v == "true"),
            host,
            namespace: ns,
            kind: obj_kind,
            name: obj_name,
            certificate,
        };
        let before = ctx.out.len();
        serving(ctx, &on, &seen);
        paths(ctx, &on, &seen);
        reachability(ctx, &on, &seen);
        // Each is about this host alone of its object's hosts.
        let host = ctx.strings.get(&on.host.to_ascii_lowercase());
        for f in &mut ctx.out[before..] {
            f.host = Some(host.clone());
        }
    }
}

/// The publisher's kind: a Gateway, else an Ingress.
fn kind_name(kind: &str) -> Kind {
    match Kind::from_name(kind) {
        Some(Kind::Gateway) => Kind::Gateway,
        _ => Kind::Ingress,
    }
}

/// A probed host and the objects its findings are about.
struct Probed<'a> {
    /// The publishing Ingress names an issuer: the Secret of its TLS entry for the host,
    /// which cert-manager is asked to write.
    asks_cert_manager: Option<Text>,
    /// The publishing Ingress has `acme.cert-manager.io/http01-edit-in-place: "true"`: the
    /// solver's path is on the same virtual host, so a redirect reaches it over HTTPS.
    edit_in_place: bool,
    host: &'a str,
    namespace: Text,
    kind: Kind,
    name: Text,
    certificate: Option<Arc<CertificateView>>,
}

impl Probed<'_> {
    /// The serving findings are the Certificate's when there is one, else the publisher's.
    fn certificate_or_publisher(&self) -> About<'_> {
        match &self.certificate {
            Some(c) => About {
                namespace: &c.namespace,
                kind: Subject::Object(Kind::Certificate),
                name: &c.name,
            },
            None => self.publisher(),
        }
    }

    fn publisher(&self) -> About<'_> {
        About {
            namespace: &self.namespace,
            kind: Subject::Object(self.kind),
            name: &self.name,
        }
    }
}

/// `192.0.2.1 and [2001:db8::1]`.
fn addresses(seen: &[&Observation]) -> String {
    let list: Vec<String> = seen
        .iter()
        .map(|o| match o.address {
            std::net::IpAddr::V6(a) => format!("[{a}]"),
            a => a.to_string(),
        })
        .collect();
    list.join(", ")
}

/// What the served leaf is, in a few words.
fn describe(t: &TlsObservation) -> String {
    format!(
        "serial {}, issuer \"{}\", names {}, valid until {}",
        t.leaf.serial,
        t.leaf.issuer,
        if t.leaf.names.is_empty() {
            "none".to_string()
        } else {
            t.leaf.names.join(", ")
        },
        at(t.leaf.not_after)
    )
}

/// The issued leaf of a Certificate: from its current request (the one of its revision, else
/// the newest that has one).
fn issued<'a>(ctx: &Ctx<'a>, c: &CertificateView) -> Option<&'a IssuedLeaf> {
    let requests = ctx.idx.requests_of(c);
    requests
        .iter()
        .find(|r| r.revision.is_some() && r.revision == c.revision && r.issued.is_some())
        .or_else(|| requests.iter().find(|r| r.issued.is_some()))
        .and_then(|r| r.issued.as_deref())
}

/// The SHA-256 of the current leaf of every other Certificate of this cluster whose dnsNames
/// cover `host` (`own`'s older leaves are not among them: serving one is a stale Secret).
fn others_covering(
    ctx: &Ctx<'_>,
    own: Option<&CertificateView>,
    host: &str,
) -> std::collections::HashSet<String> {
    ctx.idx
        .data
        .certificates
        .values()
        .filter(|c| own.is_none_or(|o| !(o.namespace == c.namespace && o.name == c.name)))
        .filter(|c| {
            c.dns_names
                .iter()
                .any(|n| crate::model::probe::name_matches(n, host))
        })
        .filter_map(|c| issued(ctx, c).map(|leaf| leaf.sha256.to_string()))
        .collect()
}

/// `probe.expired`, `probe.wrong-certificate`, `probe.name-mismatch`, `probe.untrusted`.
fn serving(ctx: &mut Ctx<'_>, on: &Probed<'_>, seen: &[&Observation]) {
    let now = ctx.now;
    let host = on.host;
    let cert = on.certificate.as_deref();
    // cert-manager's temporary certificate during the first issuance of the host's
    // Certificate is what should be served then: `cert.temporary-certificate` tells it.
    let first_issuance = cert.is_some_and(CertificateView::holds_temporary);
    let served: Vec<(&Observation, &TlsObservation)> = seen
        .iter()
        .filter_map(|o| o.tls.as_ref().map(|t| (*o, t)))
        .filter(|(_, t)| !(first_issuance && t.leaf.is_temporary()))
        .collect();
    let since = |list: &[&(&Observation, &TlsObservation)]| list.iter().map(|(o, _)| o.since).min();
    let said = cert
        .map(|c| {
            format!(
                " The Certificate {} says notAfter {} and Ready={}.",
                c.name,
                c.not_after.map(at).unwrap_or_else(|| "(none)".into()),
                c.ready
                    .as_ref()
                    .map(|r| r.status.to_string())
                    .unwrap_or_else(|| "unknown".into())
            )
        })
        .unwrap_or_default();

    let expired: Vec<_> = served
        .iter()
        .filter(|(_, t)| t.leaf.not_after <= now)
        .collect();
    if let Some((_, t)) = expired.first() {
        let list: Vec<&Observation> = expired.iter().map(|(o, _)| *o).collect();
        let stale = cert.is_some_and(|c| c.not_after.is_some_and(|na| na > now));
        let why = if stale {
            " cert-manager has a valid certificate, so the load balancer serves a stale copy: the Secret it reads was not updated, or the proxy has not reloaded it."
        } else {
            ""
        };
        ctx.push(
            Rule::ProbeExpired,
            Severity::Critical,
            on.certificate_or_publisher(),
            format!("https://{host} serves an expired certificate"),
            format!("Observed on {}: the served certificate ({}) expired {}.{said}{why}", addresses(&list), describe(t), at(t.leaf.not_after)),
            if stale {
                "Check the Secret the listener reads (Cilium copies it into the cilium-secrets namespace when enable-ingress-secrets-sync is on) and that it holds the renewed certificate; restart or resync the ingress controller if it does."
            } else if cert.is_none() {
                "No Certificate manages this Secret, so nothing renews it: put a valid certificate into it (whoever copied this one in), or have cert-manager manage it — add a cert-manager.io/cluster-issuer (or issuer) annotation to the Ingress."
            } else {
                "Renew the Certificate (fix what its issuance findings say first); the host serves the new one once the Secret is written."
            },
            since(&expired),
        );
    }

    // Another certificate than the issued one (the expired ones are told above) — unless it
    // is what another Certificate of this host issued, valid and trusted: two Ingresses of
    // one host with a Secret each, the controller serving one of them, which is what
    // clients should get.
    let issued = cert.and_then(|c| issued(ctx, c));
    let of_this_host = others_covering(ctx, cert, host);
    let other: Vec<_> = served
        .iter()
        .filter(|(_, t)| t.leaf.not_after > now)
        .filter(|(_, t)| !(t.untrusted.is_none() && of_this_host.contains(&*t.leaf.sha256)))
        .filter(|(_, t)| match (issued, cert) {
            (Some(i), _) => *i.sha256 != *t.leaf.sha256,
            // No issued leaf to compare: a Ready Certificate's notAfter must match.
            (None, Some(c)) => {
                c.ready.as_ref().is_some_and(|r| &*r.status == "True")
                    && c.not_after
                        .is_some_and(|na| (na - t.leaf.not_after).num_seconds().abs() > 1)
            }
            (None, None) => false,
        })
        .collect();
    if let (Some((_, t)), Some(c)) = (other.first(), cert) {
        let list: Vec<&Observation> = other.iter().map(|(o, _)| *o).collect();
        let which = if t.leaf.is_temporary() {
            "cert-manager's temporary certificate (the real one has not been issued yet)"
                .to_string()
        } else if !t.leaf.covers(host) {
            format!(
                "a certificate for other names (\"{}\"), not one for this host",
                t.leaf.subject
            )
        } else if t.leaf.self_signed() {
            format!("a self-signed certificate (\"{}\")", t.leaf.subject)
        } else if issued.is_some_and(|i| t.leaf.not_after < i.not_after)
            || c.not_after.is_some_and(|na| t.leaf.not_after < na)
        {
            "an older certificate for this host".to_string()
        } else {
            "another certificate for this host".to_string()
        };
        let expected = issued
            .map(|i| {
                format!(
                    "serial {}, SHA-256 {}…, valid until {}",
                    i.serial,
                    &i.sha256[..i.sha256.len().min(16)],
                    at(i.not_after)
                )
            })
            .or_else(|| c.not_after.map(|na| format!("valid until {}", at(na))))
            .unwrap_or_default();
        // A valid, trusted certificate for the host (an older one still in date) fails
        // no client yet: it needs attention before it expires. Anything else fails them.
        let still_good = t.untrusted.is_none() && t.leaf.covers(host) && !t.leaf.self_signed();
        // On Cilium's shared listener while Envoy refuses its updates, the filter chain for
        // the host still holds the Secret it had before.
        let refused = on.kind == Kind::Ingress
            && super::listener::refuses_updates(&ctx.idx, &on.namespace, &on.name);
        let (why, remediation) = if refused {
            (
                " Cilium's shared listener of this cluster refuses updates (a host on it has two TLS Secrets), so Envoy keeps the filter chains it accepted before: a change of this Ingress's Secret has not reached clients.",
                "Give every host of the shared listener one Secret (ingress.cilium-listener-conflict names the Ingresses you can see); Envoy then takes the listener update, with every change that waited.",
            )
        } else {
            (
                "",
                "Check that the listener serves the Secret the Certificate writes (spec.tls[].secretName of the Ingress, the Gateway listener's certificateRefs) and that the controller has synced it.",
            )
        };
        ctx.push(
            Rule::ProbeWrongCertificate,
            if still_good { Severity::Warning } else { Severity::Critical },
            on.certificate_or_publisher(),
            format!("https://{host} serves {}", if which.starts_with("an older") { "an older certificate" } else { "another certificate than the issued one" }),
            format!("Observed on {}: clients get {which}: {}. cert-manager issued {expected} for Certificate {}.{why}", addresses(&list), describe(t), c.name),
            remediation,
            since(&other),
        );
    }

    let mismatch: Vec<_> = served
        .iter()
        .filter(|(_, t)| {
            !t.leaf.covers(host) || matches!(t.untrusted, Some(Untrusted::NameMismatch(_)))
        })
        .collect();
    if let Some((_, t)) = mismatch.first() {
        let list: Vec<&Observation> = mismatch.iter().map(|(o, _)| *o).collect();
        ctx.push(
            Rule::ProbeNameMismatch,
            Severity::Critical,
            on.certificate_or_publisher(),
            format!("The certificate served for {host} does not name it"),
            format!("Observed on {}: the served certificate ({}) does not cover {host}; browsers refuse it.{said}", addresses(&list), describe(t)),
            // Advice never asks for what is already true: a Certificate that names the host
            // is not served, and issuing it again changes nothing clients get.
            if cert.is_some_and(|c| c.dns_names.iter().any(|n| crate::model::probe::name_matches(n, host))) {
                "The Certificate already names this host: the listener serves another certificate for it. Check that the controller serves the Secret the Certificate writes (spec.tls[].secretName of the Ingress, the Gateway listener's certificateRefs) and has synced it; renewing the Certificate does not change what clients get."
            } else if on.certificate.is_some() {
                "Make the host part of the Certificate's dnsNames (for an Ingress: list it under spec.tls[].hosts) and check that the listener serves that Certificate's Secret."
            } else {
                "No Certificate serves this host: put a certificate for it into the TLS Secret the Ingress names (spec.tls[].secretName), or let cert-manager make one (an issuer annotation on the Ingress, where cert-manager runs)."
            },
            since(&mismatch),
        );
    }

    // A certificate that does not name the host is told above, however trusted.
    let untrusted: Vec<_> = served
        .iter()
        .filter(|(_, t)| t.leaf.covers(host))
        .filter(|(_, t)| {
            matches!(
                t.untrusted,
                Some(Untrusted::UnknownIssuer(_) | Untrusted::Other(_) | Untrusted::NotYetValid(_))
            )
        })
        .collect();
    if let Some((_, t)) = untrusted.first() {
        let list: Vec<&Observation> = untrusted.iter().map(|(o, _)| *o).collect();
        let what = if matches!(t.untrusted, Some(Untrusted::NotYetValid(_))) {
            "a certificate that is not valid yet (its notBefore is after now: a clock out of step)"
        } else if t.leaf.issuer.contains(STAGING_MARK) {
            "a Let's Encrypt staging certificate (its issuer is a (STAGING) intermediate)"
        } else if t.leaf.is_temporary() {
            "cert-manager's temporary self-signed certificate (issue-temporary-certificate; the real one is not issued yet)"
        } else if t.leaf.self_signed() {
            "a self-signed certificate"
        } else {
            "a certificate whose issuer is not in the trusted roots"
        };
        let detail = match &t.untrusted {
            Some(Untrusted::UnknownIssuer(d) | Untrusted::Other(d) | Untrusted::NotYetValid(d)) => {
                d.as_str()
            }
            _ => "",
        };
        let severity = if ctx.idx.facts.overrides.production {
            Severity::Critical
        } else {
            Severity::Warning
        };
        ctx.push(
            Rule::ProbeUntrusted,
            severity,
            on.certificate_or_publisher(),
            format!("Clients do not trust what https://{host} serves"),
            format!("Observed on {}: {what} ({}); verifying it against the system roots failed: {detail}.{said}", addresses(&list), describe(t)),
            "Point the Certificate at a production issuer, or let the pending issuance finish (the temporary certificate is replaced when it does); a private CA's clients must trust its root.",
            since(&untrusted),
        );
    }
}

/// `probe.acme-path-redirected`.
fn paths(ctx: &mut Ctx<'_>, on: &Probed<'_>, seen: &[&Observation]) {
    let host = on.host;
    let redirected: Vec<&Observation> = seen
        .iter()
        .copied()
        .filter(|o| o.acme.as_ref().is_some_and(|a| a.redirected_to_https()))
        .collect();
    let Some(answer) = redirected.first().and_then(|o| o.acme.as_ref()) else {
        return;
    };
    // Only where cert-manager issues for the host: a certificate managed by hand never asks
    // for the challenge path.
    if on.certificate.is_none() {
        return;
    }
    // With edit-in-place the redirect is expected: Let's Encrypt follows it to the same
    // virtual host over HTTPS, where the solver's Exact path is routed (DOMAIN: Cilium and
    // cert-manager's HTTP-01; the HTTPS leg is not certificate-checked).
    if on.edit_in_place {
        return;
    }
    // The host's challenges failing now: the redirect is breaking this issuance, not only
    // the next renewal — and issuing again fails the same way until the solver is routed.
    // Or its last issuance failed and waits for the retry, which the redirect fails alike.
    let failing_now = on.certificate.as_ref().is_some_and(|c| {
        super::ingress::failed_before(c)
            || ctx.idx.challenges_under(c).into_iter().any(|ch| {
                ch.dns_name.eq_ignore_ascii_case(host)
                    && super::acme::challenge_failing(ch, ctx.now, ctx.t)
            })
    });
    // ingress-shim reads edit-in-place only for the Certificates it makes; a Certificate
    // made by hand takes the override on itself.
    let by_hand = on
        .certificate
        .as_ref()
        .is_some_and(|c| c.owner.as_ref().is_none_or(|o| &*o.kind != "Ingress"));
    let remediation = match (&on.certificate, by_hand) {
        (Some(c), true) => format!(
            "Put acme.cert-manager.io/http01-override-ingress-name: \"{}\" on Certificate {} (made by hand, so edit-in-place on the Ingress does not reach it): the solver is then routed on this Ingress's virtual host, which the redirect leads to over HTTPS (cilium/cilium#35347).",
            on.name, c.name
        ),
        _ => "Add edit-in-place: on the Ingress it routes the challenge path to the solver on the same virtual host (cilium/cilium#35347: force-https on another Ingress of the host still redirects).".to_string(),
    };
    ctx.push(
        Rule::ProbeAcmePathRedirected,
        if failing_now { Severity::Critical } else { Severity::Warning },
        on.publisher(),
        format!("http://{host}/.well-known/acme-challenge/ is redirected to HTTPS"),
        format!(
            "Observed on {}: GET http://{host}/.well-known/acme-challenge/<probe token> answered {} with Location {}. Let's Encrypt follows the redirect and reaches the HTTPS listener, not the solver, so HTTP-01 validation fails unless the solver is routed on this Ingress ({}).{}",
            addresses(&redirected),
            answer.status,
            answer.location.as_deref().unwrap_or_default(),
            if by_hand { "acme.cert-manager.io/http01-override-ingress-name on the Certificate" } else { "acme.cert-manager.io/http01-edit-in-place" },
            if failing_now { " Its issuance is failing now." } else { "" }
        ),
        &remediation,
        redirected.iter().map(|o| o.since).min(),
    );
}

/// `probe.no-certificate`: every address accepted the connection and then failed the TLS
/// handshake (reset, closed, or refused it) while the Secret the listener would serve
/// cannot exist yet — the host's Certificate has never been issued, or the Ingress asks
/// cert-manager for one and no Certificate has been made. Cilium's listener has no
/// certificate for such a host and resets the handshake until the Secret exists
/// (cilium/cilium#26988). That is the issuance failing as clients see it, not the load
/// balancer: said about the Certificate (else the Ingress), and not as `probe.unreachable`.
/// Returns whether the failure is explained so (also when another Certificate of the host,
/// never issued, explains it: that one's own publisher reports it).
fn no_certificate(ctx: &mut Ctx<'_>, on: &Probed<'_>, seen: &[&Observation]) -> bool {
    use crate::model::probe::ProbeError;
    let at_handshake = |o: &&Observation| {
        o.tls.is_none()
            && matches!(
                o.tls_error,
                Some(ProbeError::Reset | ProbeError::Closed | ProbeError::Handshake(_))
            )
    };
    if seen.is_empty() || !seen.iter().all(at_handshake) {
        return false;
    }
    let host = on.host;
    let why = match on.certificate.as_deref() {
        Some(c) if c.not_after.is_none() => format!(
            "The Certificate {} has never been issued (no notAfter), so the Secret {} it writes holds no certificate",
            c.name,
            c.secret_name.as_deref().unwrap_or("(none)")
        ),
        Some(_) => return never_issued_other(ctx, on),
        None => match &on.asks_cert_manager {
            Some(secret) => format!(
                "The Ingress asks cert-manager for a certificate, but no Certificate has been made, so nothing writes the Secret {secret}"
            ),
            None => return false,
        },
    };
    let what = match on.certificate.as_deref() {
        Some(c) => format!("{} has not been issued yet", c.name),
        None => "no Certificate has been made for it".to_string(),
    };
    let errors = failures(seen);
    ctx.push(
        Rule::ProbeNoCertificate,
        Severity::Critical,
        on.certificate_or_publisher(),
        format!("https://{host} serves no certificate: {what}"),
        format!(
            "Observed: the TLS handshake for {host} failed on every address — {}. {why}, and the listener has none for this host; Cilium resets the handshake until the Secret exists (cilium/cilium#26988). HTTPS clients get a connection error.",
            errors.join("; ")
        ),
        "Fix the Certificate's issuance — its findings say what holds it. Meanwhile cert-manager.io/issue-temporary-certificate: \"true\" (on the Certificate, or on the Ingress for ingress-shim) makes cert-manager write a temporary certificate, so the listener has one to serve until the real one is issued.",
        seen.iter().map(|o| o.since).min(),
    );
    true
}

/// Whether another Certificate of an Ingress that names `on.host` in its TLS entries has
/// never been issued: the listener may be reading that one's (missing) Secret for the host.
fn never_issued_other(ctx: &Ctx<'_>, on: &Probed<'_>) -> bool {
    let host = on.host;
    ctx.idx.data.ingresses.values().any(|ing| {
        ing.tls
            .iter()
            .filter(|t| t.hosts.iter().any(|h| &**h == host))
            .filter_map(|t| t.secret_name.as_deref())
            .filter_map(|s| ctx.idx.certificate_for(ing, s))
            .any(|c| {
                c.not_after.is_none()
                    && on
                        .certificate
                        .as_deref()
                        .is_some_and(|own| !(own.namespace == c.namespace && own.name == c.name))
            })
    })
}

/// `192.0.2.1: connection reset before an answer` per observation.
fn failures(seen: &[&Observation]) -> Vec<String> {
    seen.iter()
        .map(|o| {
            let error = o.tls_error.as_ref().map(|e| e.describe());
            format!("{}: {}", addresses(&[o]), error.unwrap_or_default())
        })
        .collect()
}

/// `probe.unreachable` per address family, `probe.proxy-protocol`.
fn reachability(ctx: &mut Ctx<'_>, on: &Probed<'_>, seen: &[&Observation]) {
    let host = on.host;
    let proxied: Vec<&Observation> = seen
        .iter()
        .copied()
        .filter(|o| o.needs_proxy_header)
        .collect();
    if !proxied.is_empty() {
        ctx.push(
            Rule::ProbeProxyProtocol,
            Severity::Warning,
            on.publisher(),
            format!("{host} answers only clients that send a PROXY protocol header"),
            format!("Observed on {}: plain connections were reset or closed before the TLS handshake; with a PROXY header the handshake succeeded. Anything that connects without the load balancer in between — in-cluster clients, cert-manager's HTTP-01 self-check — fails (cert-manager#466).", addresses(&proxied)),
            &format!(
                "Either every path to the listeners adds the PROXY header (the load balancer does, hairpin traffic does not), or turn off {} in cilium-config; tell Lookout with [probe] proxy_protocol when the header is intended.",
                // Cilium's Gateway listeners take PROXY protocol by a flag of their own.
                if on.kind == Kind::Gateway {
                    "enable-gateway-api-proxy-protocol"
                } else {
                    "enable-ingress-proxy-protocol"
                }
            ),
            proxied.iter().map(|o| o.since).min(),
        );
    }
    let failed = |o: &&Observation| o.tls.is_none() && !o.needs_proxy_header;
    if no_certificate(ctx, on, seen) {
        return;
    }
    let (v4, v6): (Vec<&Observation>, Vec<&Observation>) =
        seen.iter().copied().partition(|o| o.address.is_ipv4());
    let family_down = |list: &[&Observation]| !list.is_empty() && list.iter().all(failed);
    for (family, list, other_up) in [
        ("IPv4", &v4, !v6.is_empty() && !family_down(&v6)),
        ("IPv6", &v6, !v4.is_empty() && !family_down(&v4)),
    ] {
        if !family_down(list) {
            continue;
        }
        let errors = failures(list);
        let (title, severity, more) = if other_up {
            (
                format!("{family} clients get no answer from {host} while the other family works"),
                Severity::Critical,
                if family == "IPv6" {
                    " IPv6 clients fail while IPv4 works: with PROXY protocol in front of an IPv4-only cluster this is Cilium's known bug (cilium/cilium#42950, fixed by cilium/proxy#1944)."
                } else {
                    ""
                },
            )
        } else {
            (
                format!("https://{host} does not answer on {family}"),
                Severity::Critical,
                "",
            )
        };
        ctx.push(
            Rule::ProbeUnreachable,
            severity,
            on.publisher(),
            title,
            format!("Observed: every {family} address of {host} failed — {}.{more}", errors.join("; ")),
            "Check the load balancer and its listeners for this address family (the Service's ipFamilies and ipFamilyPolicy, the cloud load balancer, firewalls); the probe sees what clients at Lookout's network position see.",
            list.iter().map(|o| o.since).min(),
        );
    }
}

//! A Gateway listener its controller did not accept because a TLS certificate reference
//! does not resolve. Cilium checks each reference (a Secret, in the Gateway's namespace or
//! permitted by a ReferenceGrant in the Secret's, with PEM in `tls.crt` and `tls.key`), sets
//! `ResolvedRefs=False` (`RefNotPermitted` or `InvalidCertificateRef`) and `Accepted=False`
//! on the first that fails, and leaves the listener out of Envoy: clients of its hostname get
//! nothing from it (cilium/cilium `operator/pkg/gateway-api/gateway_reconcile.go`
//! `validateListener`, `setListenerStatus`; the reasons are the Gateway API's,
//! `apis/v1/gateway_types.go`). `gateway.reference-not-permitted` when the reference is not
//! permitted (the ReferenceGrant is the fix), `gateway.listener-not-ready` otherwise.
//!
//! A listener that is accepted serves the certificate in its Secret to clients asking for its
//! hostname (SNI); when the Certificate that writes that Secret does not name the hostname,
//! every client rejects it: `gateway.hostname-not-covered`. cert-manager's gateway-shim keeps
//! one Certificate per Secret whose dnsNames are the hostnames of every listener referencing
//! it (`pkg/controller/certificate-shim/sync.go`, `handleGatewayAPIListeners`), so on a
//! Gateway it issues for the gap is one it closes itself.

use super::{About, Ctx};

mod by_hand;
use crate::model::certificate::ChallengeView;
use crate::model::finding::{Severity, Subject};
use crate::model::infra::{GatewayView, HttpListener, ListenerView, RoutesFrom, SecretRef};
use crate::model::kind::Kind;
use crate::model::object::{condition, Condition};
use crate::model::route::{HttpRouteView, RouteRule};
use crate::model::rule::Rule;
use crate::model::text::Text;

pub(super) fn check(ctx: &mut Ctx<'_>) {
    let data = ctx.idx.data;
    for ch in data.challenges.values() {
        http01_route(ctx, ch);
    }
    for gw in data.gateways.values() {
        acme_path_redirected(ctx, gw);
        for l in &gw.listeners {
            hostname_covered(ctx, gw, l);
            let refs = condition(&l.conditions, "ResolvedRefs");
            let accepted = condition(&l.conditions, "Accepted");
            let failed = |c: &Option<Condition>| c.as_ref().is_some_and(|c| !c.is_true());
            if !failed(&refs) && !failed(&accepted) {
                continue;
            }
            let reason = refs
                .as_ref()
                .filter(|c| !c.is_true())
                .and_then(|c| c.reason.clone())
                .or_else(|| accepted.as_ref().and_then(|c| c.reason.clone()))
                .unwrap_or_default();
            let said = |c: &Option<Condition>, kind: &str| {
                c.as_ref().map(|c| {
                    format!(
                        "{kind} is {} ({}): {}",
                        c.status,
                        c.reason.as_deref().unwrap_or(""),
                        c.message.as_deref().unwrap_or("")
                    )
                })
            };
            let conditions: Vec<String> =
                [said(&refs, "ResolvedRefs"), said(&accepted, "Accepted")]
                    .into_iter()
                    .flatten()
                    .collect();
            let host = l.hostname.as_deref().unwrap_or("every host");
            let secrets = l
                .certificate_refs
                .iter()
                .map(|r| r.shown_from(&gw.namespace))
                .collect::<Vec<_>>()
                .join(", ");
            // A Secret cert-manager has not written yet: the listener waits for the issuance
            // (the Certificate's own findings say why), a symptom rather than the cause.
            let issuing = &*reason == "InvalidCertificateRef"
                && l.certificate_refs.iter().any(|r| {
                    ctx.idx
                        .certificates_writing(&r.namespace, &r.name)
                        .iter()
                        .any(|c| !c.is_ready())
                });
            let not_permitted = &*reason == "RefNotPermitted";
            // Accepted is False for another reason than its references (a port in use, an
            // unsupported protocol): said as such, with the controller's words.
            let refs_failed = failed(&refs);
            let remediation = match &*reason {
                _ if !refs_failed => format!("Read what its controller says ({reason}) and fix the listener in the Gateway: its port, protocol or hostname."),
                "RefNotPermitted" => {
                    let elsewhere: Vec<&SecretRef> = l
                        .certificate_refs
                        .iter()
                        .filter(|r| r.namespace != gw.namespace)
                        .collect();
                    let namespaces: Vec<&str> = elsewhere.iter().map(|r| r.namespace.as_str()).collect();
                    let names: Vec<&str> = elsewhere.iter().map(|r| r.name.as_str()).collect();
                    format!("Create a ReferenceGrant in {} from group gateway.networking.k8s.io, kind Gateway, namespace {} to group \"\", kind Secret, name {} — or keep the Secret in the Gateway's namespace: cert-manager's gateway-shim issues only into the Gateway's own namespace (it skips a listener whose reference names another, cert-manager#5610).", if namespaces.is_empty() { "the Secret's namespace".to_string() } else { format!("namespace {}", namespaces.join(", ")) }, gw.namespace, if names.is_empty() { secrets.clone() } else { names.join(", ") })
                }
                _ if issuing => format!("Wait for cert-manager to issue into Secret {secrets} (its Certificate is not ready yet: follow it), then the listener resolves."),
                _ => format!("Make Secret {secrets} exist in namespace {} with PEM in tls.crt and tls.key — cert-manager's gateway-shim writes it when the Gateway carries cert-manager.io/cluster-issuer or cert-manager.io/issuer — or fix the reference (group \"\", kind Secret, its name).", gw.namespace),
            };
            let (namespace, name): (Text, Text) =
                (gw.namespace.as_str().into(), gw.name.as_str().into());
            let about = About {
                namespace: &namespace,
                kind: Subject::Object(Kind::Gateway),
                name: &name,
            };
            let (rule, title) = if not_permitted {
                (
                    Rule::GatewayReferenceNotPermitted,
                    format!("Listener {} of Gateway {} may not use Secret {secrets} of another namespace", l.name, gw.name),
                )
            } else {
                (
                    Rule::GatewayListenerNotReady,
                    if refs_failed {
                        format!(
                            "Listener {} of Gateway {} does not resolve its certificate ({reason})",
                            l.name, gw.name
                        )
                    } else {
                        format!(
                            "Listener {} of Gateway {} is not accepted by its controller ({reason})",
                            l.name, gw.name
                        )
                    },
                )
            };
            ctx.push(
                rule,
                if issuing { Severity::Warning } else { Severity::Critical },
                about,
                title,
                format!(
                    "Listener {} ({host}, {}) references Secret {secrets}: {}. Its controller leaves a listener it did not accept out of the proxy, so clients of {host} get no TLS from it.",
                    l.name,
                    l.protocol,
                    conditions.join("; ")
                ),
                &remediation,
                refs.as_ref().or(accepted.as_ref()).and_then(|c| c.last_transition),
            );
            if let Some(h) = l.hostname.as_deref().filter(|h| !h.is_empty()) {
                ctx.for_host(h);
            }
            if not_permitted {
                if let Some(grants) = by_hand::reference_grants(gw, l) {
                    ctx.by_hand(grants);
                }
            }
        }
    }
}

/// `gateway.hostname-not-covered`: an accepted TLS listener whose hostname the Certificate
/// writing its Secret does not name. Critical when that Certificate has been issued (it is what
/// clients get now) and no shim of this Gateway will correct it; a warning while cert-manager's
/// gateway-shim owns it (it adds the hostname itself) or before the first issuance.
fn hostname_covered(ctx: &mut Ctx<'_>, gw: &GatewayView, l: &ListenerView) {
    let Some(host) = l.hostname.as_deref().filter(|h| !h.is_empty()) else {
        return;
    };
    if condition(&l.conditions, "Accepted").is_some_and(|c| !c.is_true()) {
        return; // Left out of the proxy: gateway.listener-not-ready says so.
    }
    let certificates: Vec<_> = l
        .certificate_refs
        .iter()
        .flat_map(|r| {
            ctx.idx
                .certificates_writing(&r.namespace, &r.name)
                .iter()
                .copied()
        })
        .collect();
    if certificates.is_empty() || certificates.iter().any(|c| c.covers(host)) {
        return;
    }
    let c = certificates[0];
    let shim_owned = c
        .owner
        .as_ref()
        .is_some_and(|o| &*o.kind == "Gateway" && &*o.name == gw.name.as_str())
        && &*c.namespace == gw.namespace.as_str();
    let severity = if c.is_ready() && !shim_owned {
        Severity::Critical
    } else {
        Severity::Warning
    };
    let secret = c.secret_name.as_deref().unwrap_or_default();
    let (namespace, name): (Text, Text) = (gw.namespace.as_str().into(), gw.name.as_str().into());
    let remediation = if shim_owned {
        format!("cert-manager's gateway-shim owns Certificate {} and adds {host} to its dnsNames on its next sync; if it does not, read the Gateway's BadConfig events (a listener it skipped).", c.name)
    } else {
        format!("Add {host} to spec.dnsNames of Certificate {}/{} (cert-manager issues again), or point listener {} at a Secret whose certificate names {host}. With cert-manager.io/cluster-issuer or cert-manager.io/issuer on the Gateway, cert-manager's gateway-shim keeps one Certificate per Secret naming every listener hostname that uses it.", c.namespace, c.name, l.name)
    };
    ctx.push(
        Rule::GatewayHostnameNotCovered,
        severity,
        About {
            namespace: &namespace,
            kind: Subject::Object(Kind::Gateway),
            name: &name,
        },
        format!(
            "{host} not covered by Certificate {} of listener {} of Gateway {}",
            c.name, l.name, gw.name
        ),
        format!(
            "Listener {} serves {host} with Secret {secret}, written by Certificate {}/{} whose dnsNames {}{}. Clients asking for {host} get a certificate for other names and refuse it.",
            l.name,
            c.namespace,
            c.name,
            // Another namespace's Certificate: its other names are that namespace's business.
            if &*c.namespace != gw.namespace.as_str() {
                format!("do not include {host}")
            } else if c.dns_names.is_empty() {
                "are none".to_string()
            } else {
                format!("are {}", c.dns_names.join(", "))
            },
            if c.is_ready() { "" } else { " (not issued yet)" },
        ),
        &remediation,
        None,
    );
    ctx.for_host(host);
}

/// `gateway.http01-route-unreachable`: an HTTP-01 challenge served by cert-manager's
/// `gatewayHTTPRoute` solver whose parentRefs lead to no Gateway listener that could answer
/// Let's Encrypt. cert-manager creates the solver's HTTPRoute with the Challenge's parentRefs
/// and the challenge's host, and never edits a Gateway (`pkg/issuer/acme/http/httproute.go`
/// `generateHTTPRouteSpec`); the route is served only by a listener of protocol `HTTP` that
/// its parentRef selects (`sectionName`, `port`), whose hostname matches the host and whose
/// `allowedRoutes` admits the route's namespace (Gateway API `apis/v1/gateway_types.go`,
/// `apis/v1/shared_types.go`), and Let's Encrypt asks on port 80 only. A ListenerSet parent,
/// or a listener admitting namespaces by label selector, is not judged.
fn http01_route(ctx: &mut Ctx<'_>, ch: &ChallengeView) {
    let Some(parents) = ch.gateway_parents.as_deref() else {
        return;
    };
    let finished = matches!(
        &*ch.state,
        "valid" | "invalid" | "errored" | "expired" | "deactivated" | "revoked"
    );
    if finished || &*ch.challenge_type != "HTTP-01" {
        return;
    }
    let host = &*ch.dns_name;
    let mut why: Vec<String> = Vec::new();
    let mut listener_fix = None;
    for p in parents {
        let named = format!("Gateway {}/{}", p.namespace, p.name);
        if &*p.kind != "Gateway" {
            return; // A ListenerSet: its listeners are not read.
        }
        // The finding is told to whoever reads the Challenge's namespace: a Gateway of
        // another namespace is named as the Challenge names it, and what it has — its
        // listeners, their hostnames, whether it exists — is left out.
        let foreign = *p.namespace != *ch.namespace;
        let unseen = || {
            format!("{named}, in another namespace, offers no listener that serves {host} over HTTP on port 80 to namespace {} (or does not exist)", ch.namespace)
        };
        let Some(gw) = ctx
            .idx
            .data
            .gateways
            .get(&crate::model::data::key(&p.namespace, &p.name))
        else {
            why.push(if foreign {
                unseen()
            } else {
                format!("{named} does not exist")
            });
            continue;
        };
        let selected: Vec<&HttpListener> = gw
            .http_listeners
            .iter()
            .filter(|l| p.section.as_deref().is_none_or(|s| s == l.name))
            .filter(|l| p.port.is_none_or(|port| port == l.port))
            .collect();
        let reachable = selected.iter().any(|l| {
            l.port == 80
                && l.serves(host)
                && (l.from != RoutesFrom::Same || gw.namespace == *ch.namespace)
        });
        if reachable {
            return; // Reachable, or admitted by a selector Lookout cannot read.
        }
        if foreign {
            why.push(unseen());
            continue;
        }
        if listener_fix.is_none() {
            listener_fix = by_hand::port_80_listener(gw, p, host);
        }
        if selected.is_empty() {
            why.push(match (&p.section, p.port) {
                (Some(s), _) => format!("{named} has no HTTP listener named {s}"),
                (None, Some(port)) => format!("{named} has no HTTP listener on port {port}"),
                (None, None) => format!("{named} has no HTTP listener"),
            });
            continue;
        }
        for l in selected {
            if l.port != 80 {
                why.push(format!(
                    "listener {} of {named} is on port {}, and Let's Encrypt asks on port 80",
                    l.name, l.port
                ));
            } else {
                // Not reachable, on port 80, in the Challenge's own namespace: the hostname.
                why.push(format!(
                    "listener {} of {named} serves hostname {}, not {host}",
                    l.name,
                    l.hostname.as_deref().unwrap_or_default()
                ));
            }
        }
    }
    if parents.is_empty() {
        why.push("it has no parentRefs at all".into());
    }
    let certificate = ctx
        .idx
        .order_of_challenge(ch)
        .and_then(|o| ctx.idx.request_of_order(o))
        .and_then(|r| ctx.idx.certificate_of_request(r));
    // A renewal failing while the old certificate still serves is not yet clients' harm.
    let severity = if certificate.is_some_and(|c| c.is_ready()) {
        Severity::Warning
    } else {
        Severity::Critical
    };
    let targets: Vec<String> = parents
        .iter()
        .map(|p| {
            let mut t = format!("{}/{}", p.namespace, p.name);
            if let Some(s) = &p.section {
                t.push_str(&format!(" (listener {s})"));
            }
            t
        })
        .collect();
    let ns = ch.namespace.clone();
    ctx.push(
        Rule::GatewayHttp01RouteUnreachable,
        severity,
        About {
            namespace: &ns,
            kind: Subject::Object(Kind::Challenge),
            name: &ch.name,
        },
        format!("HTTP-01 challenge for {host} reaches no port-80 listener"),
        format!(
            "The solver's HTTPRoute attaches to {}: {}. Let's Encrypt fetches http://{host}/.well-known/acme-challenge/… on port 80, where nothing routes it to the solver, so the challenge cannot pass.",
            if targets.is_empty() { "nothing".to_string() } else { targets.join(", ") },
            why.join("; ")
        ),
        &format!("Give the Gateway the host's DNS points at a listener with protocol HTTP, port 80, hostname {host} (or none) whose allowedRoutes admits namespace {} — the solver's route attaches to it as soon as it exists. Or point the solver elsewhere: the issuer's gatewayHTTPRoute.parentRefs, or (for a Certificate of a Gateway) cert-manager.io annotations on that Gateway; a pending Challenge keeps the parentRefs it was made with, so restart the issuance after changing them.", ch.namespace),
        ch.created,
    );
    if let Some(fix) = listener_fix {
        ctx.by_hand(fix);
    }
}

/// How specific a route's match is: its hostname's (exact 2, wildcard 1, none 0, with the
/// length), then its path's (exact 2, prefix 1, with the length).
type Precedence = ((u8, usize), (u8, usize));

/// A path of the ACME challenge, as Let's Encrypt asks for any token.
const ACME_PATH: &str = "/.well-known/acme-challenge/lookout-any-token";

/// The rule of the routes attached to listener `l` of `gw` that answers
/// `http://{host}{ACME_PATH}`, by the Gateway API's precedence (`apis/v1/httproute_types.go`:
/// across routes the most specific matching hostname, then an `Exact` path over the longest
/// `PathPrefix`; ties to the oldest route, then by namespace and name). cert-manager's solver
/// routes are left out: they answer one token each. A route its controller refused is left
/// out; a listener admitting namespaces by selector is taken to admit the route.
fn answering_rule<'d>(
    ctx: &Ctx<'d>,
    gw: &GatewayView,
    l: &HttpListener,
    host: &str,
) -> Option<(
    &'d crate::model::route::HttpRouteView,
    &'d crate::model::route::RouteRule,
)> {
    let mut best: Option<(Precedence, &HttpRouteView, &RouteRule)> = None;
    for r in ctx.idx.data.routes.values().filter(|r| !r.solver) {
        let attached = r.parents.iter().any(|p| {
            &*p.kind == "Gateway"
                && *p.namespace == *gw.namespace
                && *p.name == *gw.name
                && p.section.as_deref().is_none_or(|s| s == l.name)
                && p.port.is_none_or(|port| port == l.port)
        });
        let admitted = match l.from {
            RoutesFrom::Same => *r.namespace == *gw.namespace,
            RoutesFrom::All | RoutesFrom::Selector => true,
        };
        if !attached
            || !admitted
            || !r.answers(host)
            || r.accepted_by(&gw.namespace, &gw.name) == Some(false)
        {
            continue;
        }
        let host_rank = if r.hostnames.iter().any(|h| h.eq_ignore_ascii_case(host)) {
            (2, host.len())
        } else if r.hostnames.is_empty() {
            (0, 0)
        } else {
            let longest = r
                .hostnames
                .iter()
                .filter(|h| h.starts_with('*') && crate::model::route::hostname_matches(h, host))
                .map(|h| h.len())
                .max()
                .unwrap_or(0);
            (1, longest)
        };
        for rule in r.rules.iter().filter(|rule| rule.matches(ACME_PATH)) {
            let path_rank = if rule.paths.is_empty() {
                (1, 1)
            } else {
                rule.paths
                    .iter()
                    .filter(|m| m.matches(ACME_PATH))
                    .map(|m| {
                        if &*m.kind == "Exact" {
                            (2, m.value.len())
                        } else {
                            (1, m.value.len())
                        }
                    })
                    .max()
                    .unwrap_or((0, 0))
            };
            let rank = (host_rank, path_rank);
            let better = match &best {
                None => true,
                Some((b, br, _)) => {
                    rank > *b
                        || (rank == *b
                            && (r.created, &r.namespace, &r.name)
                                < (br.created, &br.namespace, &br.name))
                }
            };
            if better {
                best = Some((rank, r, rule));
            }
        }
    }
    best.map(|(_, r, rule)| (r, rule))
}

/// `gateway.acme-path-redirected`: a host a Gateway serves over TLS whose port-80 listener
/// answers the ACME challenge path with a route's redirect, while the host's Certificate is
/// validated over HTTP-01 by a solver that puts no route on this Gateway — an Ingress solver
/// (its Ingress is not behind the Gateway the host's DNS points at). Let's Encrypt follows
/// the redirect to the HTTPS listener, which has no route to the solver. A solver route on
/// the Gateway itself (gateway-shim's Certificates point theirs at it) wins over the redirect
/// by its exact path, so those are not judged; neither is an issuer with a solver selecting
/// by labels (Certificates' labels are not kept).
fn acme_path_redirected(ctx: &mut Ctx<'_>, gw: &GatewayView) {
    let mut judged: Vec<(Text, Text)> = Vec::new();
    for tls in &gw.listeners {
        let Some(host) = tls
            .hostname
            .as_deref()
            .filter(|h| !h.is_empty() && !h.starts_with('*'))
        else {
            continue;
        };
        let Some((l, (route, rule))) = gw
            .http_listeners
            .iter()
            .filter(|l| l.port == 80 && l.serves(host))
            .find_map(|l| answering_rule(ctx, gw, l, host).map(|a| (l, a)))
        else {
            continue;
        };
        let Some(redirect) = &rule.redirect else {
            continue;
        };
        let certificates: Vec<_> = tls
            .certificate_refs
            .iter()
            .flat_map(|r| {
                ctx.idx
                    .certificates_writing(&r.namespace, &r.name)
                    .iter()
                    .copied()
            })
            .filter(|c| c.covers(host))
            .collect();
        for c in certificates {
            if judged.contains(&(c.namespace.clone(), c.name.clone())) {
                continue;
            }
            let Some(issuer) = c
                .issuer
                .as_ref()
                .and_then(|i| ctx.idx.issuer(&c.namespace, i))
            else {
                continue;
            };
            if issuer.solvers.iter().any(|s| !s.match_labels.is_empty()) {
                continue;
            }
            let Some(solver) = crate::model::solvers::pick(&issuer.solvers, host, &[]) else {
                continue;
            };
            if solver.kind != crate::model::solvers::SolverKind::Http01Ingress {
                continue;
            }
            judged.push((c.namespace.clone(), c.name.clone()));
            let severity = if c.is_ready() {
                Severity::Warning
            } else {
                Severity::Critical
            };
            let scheme = redirect.scheme.as_deref().unwrap_or("the same scheme");
            let status = redirect.status.map(|s| format!(" {s}")).unwrap_or_default();
            // Told to whoever reads the Certificate's namespace: a Gateway or route of another
            // namespace (one whose listener was granted the Secret) is not named.
            let ours = |ns: &str| ns == &*c.namespace;
            let (gateway, listener) = if ours(&gw.namespace) {
                (
                    format!("Gateway {}/{}", gw.namespace, gw.name),
                    format!("its listener {} (port 80)", l.name),
                )
            } else {
                (
                    "a Gateway of another namespace".to_string(),
                    "its port-80 listener".to_string(),
                )
            };
            let route_named = if ours(&route.namespace) {
                format!("HTTPRoute {}/{}", route.namespace, route.name)
            } else {
                "an HTTPRoute of another namespace".to_string()
            };
            let title = if ours(&route.namespace) && ours(&gw.namespace) {
                format!(
                    "HTTP-01 for {host} is redirected by HTTPRoute {} on Gateway {}",
                    route.name, gw.name
                )
            } else {
                format!("HTTP-01 for {host} is redirected by its Gateway's port-80 route")
            };
            let remedy = if ours(&gw.namespace) {
                format!("Gateway {}/{}'s listener {}", gw.namespace, gw.name, l.name)
            } else {
                "the port-80 listener of the Gateway that serves it (its owners know its name)"
                    .to_string()
            };
            ctx.push(
                Rule::GatewayAcmePathRedirected,
                severity,
                About {
                    namespace: &c.namespace,
                    kind: Subject::Object(Kind::Certificate),
                    name: &c.name,
                },
                title,
                format!(
                    "Certificate {} is validated over HTTP-01 by an Ingress solver of {} {}. Let's Encrypt asks http://{host}/.well-known/acme-challenge/… at {host}'s {gateway}, where {listener} answers with the redirect{status} to {scheme} of {route_named}; the solver's Ingress is not behind that Gateway, so the challenge ends on the HTTPS listener with no route to the solver.",
                    c.name, issuer.kind, issuer.name
                ),
                &format!("Let the Gateway solve it: give {} {} a solver for {host} that attaches to {remedy} — http01.gatewayHTTPRoute with those parentRefs, selected by dnsNames [{host}], which cert-manager picks over the Ingress solver for this host alone. The solver's route carries the challenge's exact path, which takes precedence over the redirect (keep the redirect: it is then harmless). Annotating the Gateway does not move this Certificate: cert-manager's gateway-shim leaves alone a Certificate another object owns. A route of your own cannot reach an Ingress solver's pod, whose Service changes with each challenge.", issuer.kind, issuer.name),
                None,
            );
            if ours(&gw.namespace) && !solver.dns_names.iter().any(|n| **n == *host) {
                if let Some(fix) = by_hand::gateway_solver(issuer, gw, l, host, c) {
                    ctx.by_hand(fix);
                }
            }
        }
    }
}

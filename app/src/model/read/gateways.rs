//! The Gateways list (`/gateways`): each TLS listener of each Gateway the reader sees — its
//! hostname, the Secret it serves, the Certificate that writes that Secret, and what the
//! Gateway's controller says of it — with the health the rules judged for its Gateway. One
//! row per listener, so the page, the JSON and the CSV read alike.
//!
//! A Gateway's own page (`/gateways/{cluster}/{namespace}/{name}`) follows each listener to
//! the Secret it serves and the Certificates writing it, with the controller's words, the
//! findings and the events about the Gateway.

use serde::Serialize;

use super::problems::Health;
use super::Visibility;
use crate::model::chain::Index;
use crate::model::finding::{Finding, Severity, Subject};
use crate::model::infra::{EventView, GatewayView, ListenerView};
use crate::model::kind::Kind;
use crate::model::object::condition;
use crate::model::text::Text;

/// Filters of the Gateways list.
pub type GatewayQuery = super::views::NamedQuery;

/// One TLS listener of a Gateway.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ListenerRow {
    pub cluster: Text,
    pub namespace: Text,
    pub gateway: Text,
    /// `spec.gatewayClassName`.
    pub class: Text,
    pub listener: Text,
    /// None: every host.
    pub hostname: Option<Text>,
    pub protocol: Text,
    /// The Secrets of its `tls.certificateRefs`: by name, `namespace/name` when in another
    /// namespace than the Gateway's.
    pub secrets: Vec<Text>,
    /// The Certificate writing that Secret in the Gateway's namespace, and whether it is
    /// ready.
    pub certificate: Option<Text>,
    pub certificate_ready: Option<bool>,
    /// What its controller says: `Accepted`, `ResolvedRefs`, `Programmed` as `True`,
    /// `False` or `Unknown`, None before the controller has written a status.
    pub accepted: Option<&'static str>,
    pub resolved_refs: Option<&'static str>,
    pub programmed: Option<&'static str>,
    /// The reason of the first of `ResolvedRefs`, `Accepted`, `Programmed` that is not
    /// `True`.
    pub reason: Option<Text>,
    /// The Gateway's `status.addresses`.
    pub addresses: Vec<Text>,
    /// The most severe finding about its Gateway; None: healthy.
    pub severity: Option<Severity>,
}

/// The rows of one cluster's Gateways `visible` may see and `q` selects, into `out`.
pub fn gateway_rows(
    visible: &Visibility<'_>,
    cluster: &str,
    idx: &Index<'_>,
    health: &Health,
    q: &GatewayQuery,
    out: &mut Vec<ListenerRow>,
) {
    let text = q.q.as_deref().map(str::to_ascii_lowercase);
    for gw in idx.data.gateways.values() {
        if !visible.namespace(&gw.namespace)
            || q.namespace.as_deref().is_some_and(|ns| gw.namespace != ns)
        {
            continue;
        }
        let certificates = idx.gateway_certificates(gw);
        let severity = health
            .get(&(
                Subject::Object(Kind::Gateway),
                Text::from(gw.namespace.as_str()),
                Text::from(gw.name.as_str()),
            ))
            .copied();
        for l in &gw.listeners {
            let matches = text.as_deref().is_none_or(|t| {
                gw.name.to_ascii_lowercase().contains(t)
                    || l.hostname
                        .as_deref()
                        .is_some_and(|h| h.to_ascii_lowercase().contains(t))
            });
            if !matches {
                continue;
            }
            let certificate = certificates
                .iter()
                .find(|(name, _)| *name == l.name)
                .and_then(|(_, certs)| certs.first());
            out.push(row(
                cluster,
                gw,
                l,
                certificate.map(|c| (&c.name, c.is_ready())),
                severity,
            ));
        }
    }
}

fn row(
    cluster: &str,
    gw: &GatewayView,
    l: &ListenerView,
    certificate: Option<(&Text, bool)>,
    severity: Option<Severity>,
) -> ListenerRow {
    let said = |kind: &str| condition(&l.conditions, kind);
    let status = |kind: &str| said(kind).map(|c| c.status.as_str());
    // Why, from the most telling condition: its references, then acceptance, then the rest.
    let reason = ["ResolvedRefs", "Accepted", "Programmed"]
        .iter()
        .filter_map(|k| said(k))
        .find(|c| !c.is_true())
        .and_then(|c| c.reason);
    ListenerRow {
        cluster: Text::from(cluster),
        namespace: Text::from(gw.namespace.as_str()),
        gateway: Text::from(gw.name.as_str()),
        class: Text::from(gw.class.as_str()),
        listener: Text::from(l.name.as_str()),
        hostname: l.hostname.as_deref().map(Text::from),
        protocol: Text::from(l.protocol.as_str()),
        secrets: l
            .certificate_refs
            .iter()
            .map(|r| Text::from(r.shown_from(&gw.namespace).as_str()))
            .collect(),
        certificate: certificate.map(|(n, _)| n.clone()),
        certificate_ready: certificate.map(|(_, ready)| ready),
        accepted: status("Accepted"),
        resolved_refs: status("ResolvedRefs"),
        programmed: status("Programmed"),
        reason,
        addresses: gw
            .addresses
            .iter()
            .map(|a| Text::from(a.as_str()))
            .collect(),
        severity,
    }
}

/// The Gateways list's page: the most severe first, then in configuration order of
/// clusters, namespace, Gateway and listener.
pub fn gateway_page(
    mut rows: Vec<ListenerRow>,
    q: &GatewayQuery,
    clusters: &[String],
) -> crate::model::Page<ListenerRow> {
    let at = |c: &str| clusters.iter().position(|n| n == c).unwrap_or(usize::MAX);
    rows.sort_by(|a, b| {
        (a.severity.is_none(), a.severity)
            .cmp(&(b.severity.is_none(), b.severity))
            .then(at(&a.cluster).cmp(&at(&b.cluster)))
            .then_with(|| a.namespace.cmp(&b.namespace))
            .then_with(|| a.gateway.cmp(&b.gateway))
            .then_with(|| a.listener.cmp(&b.listener))
    });
    crate::model::Page::of(rows, q.page.max(1), q.per_page.max(1))
}

/// A Gateway's page: its listeners followed to their certificates.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GatewayDetail {
    pub cluster: Text,
    pub namespace: Text,
    pub name: Text,
    /// `spec.gatewayClassName`.
    pub class: Text,
    /// The issuer its cert-manager annotations name (`ClusterIssuer letsencrypt-prod`);
    /// None: cert-manager's gateway-shim issues nothing for it.
    pub issuer: Option<String>,
    /// Its `status.addresses`.
    pub addresses: Vec<Text>,
    /// The most severe finding about it; None: healthy.
    pub severity: Option<Severity>,
    pub listeners: Vec<ListenerDetail>,
    /// Its plain-HTTP listeners (where HTTP-01 is answered) with the routes attached.
    pub http_listeners: Vec<HttpListenerDetail>,
    /// The findings about it the reader may see.
    pub findings: Vec<Finding>,
    /// Its events, newest first.
    pub events: Vec<EventView>,
}

/// One TLS listener on a Gateway's page.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ListenerDetail {
    pub name: Text,
    /// None: every host.
    pub hostname: Option<Text>,
    pub protocol: Text,
    pub port: u16,
    /// Its Secrets: by name, `namespace/name` when in another namespace than the Gateway's.
    pub secrets: Vec<Text>,
    /// Its conditions as the controller wrote them: type, status, reason, message.
    pub conditions: Vec<crate::model::object::Condition>,
    /// The Certificates writing its Secrets that the reader may see.
    pub certificates: Vec<ListenerCertificate>,
}

/// A plain-HTTP listener on a Gateway's page.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HttpListenerDetail {
    pub name: Text,
    /// None: every host.
    pub hostname: Option<Text>,
    pub port: u16,
    /// `allowedRoutes.namespaces.from`: `Same`, `All` or `Selector`.
    pub admits: &'static str,
    /// The HTTPRoutes attached to it that the reader may see.
    pub routes: Vec<AttachedRoute>,
}

/// An HTTPRoute attached to a listener.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AttachedRoute {
    pub namespace: Text,
    pub name: Text,
    /// Its hostnames; empty: every host of the listener.
    pub hostnames: Vec<Text>,
    /// One of its rules redirects (`RequestRedirect`).
    pub redirects: bool,
    /// cert-manager's HTTP-01 solver route.
    pub solver: bool,
    /// What the Gateway's controller said: accepted, refused, or None (not yet).
    pub accepted: Option<bool>,
}

/// A Certificate writing a listener's Secret.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ListenerCertificate {
    pub namespace: Text,
    pub name: Text,
    pub ready: bool,
    pub dns_names: Vec<Text>,
    /// Whether its dnsNames name the listener's hostname (a listener for every host: true).
    pub covers_hostname: bool,
    pub not_after: Option<chrono::DateTime<chrono::Utc>>,
    /// The most severe problem reaching it; None: healthy.
    pub severity: Option<Severity>,
}

/// The page of Gateway `namespace/name` of one cluster, when `visible` may see it.
pub fn gateway_detail(
    visible: &Visibility<'_>,
    cluster: &str,
    idx: &Index<'_>,
    findings: &[Finding],
    health: &Health,
    (namespace, name): (&str, &str),
) -> Option<GatewayDetail> {
    if !visible.namespace(namespace) {
        return None;
    }
    let gw = idx
        .data
        .gateways
        .get(&crate::model::data::key(namespace, name))?;
    let severity_of = |kind: Kind, ns: &str, name: &str| {
        health
            .get(&(Subject::Object(kind), Text::from(ns), Text::from(name)))
            .copied()
    };
    let listeners = gw
        .listeners
        .iter()
        .map(|l| ListenerDetail {
            name: Text::from(l.name.as_str()),
            hostname: l.hostname.as_deref().map(Text::from),
            protocol: Text::from(l.protocol.as_str()),
            port: l.port,
            secrets: l
                .certificate_refs
                .iter()
                .map(|r| Text::from(r.shown_from(&gw.namespace).as_str()))
                .collect(),
            conditions: l.conditions.clone(),
            certificates: l
                .certificate_refs
                .iter()
                .filter(|r| visible.namespace(&r.namespace))
                .flat_map(|r| idx.certificates_writing(&r.namespace, &r.name).iter())
                .map(|c| ListenerCertificate {
                    namespace: c.namespace.clone(),
                    name: c.name.clone(),
                    ready: c.is_ready(),
                    dns_names: c.dns_names.iter().cloned().collect(),
                    covers_hostname: l.hostname.as_deref().is_none_or(|h| c.covers(h)),
                    not_after: c.not_after,
                    severity: severity_of(Kind::Certificate, &c.namespace, &c.name),
                })
                .collect(),
        })
        .collect();
    let http_listeners = gw
        .http_listeners
        .iter()
        .map(|l| HttpListenerDetail {
            name: Text::from(l.name.as_str()),
            hostname: l.hostname.as_deref().map(Text::from),
            port: l.port,
            admits: match l.from {
                crate::model::infra::RoutesFrom::Same => "Same",
                crate::model::infra::RoutesFrom::All => "All",
                crate::model::infra::RoutesFrom::Selector => "Selector",
            },
            routes: idx
                .data
                .routes
                .values()
                .filter(|r| visible.namespace(&r.namespace))
                .filter(|r| {
                    r.parents.iter().any(|p| {
                        &*p.kind == "Gateway"
                            && *p.namespace == *gw.namespace
                            && *p.name == *gw.name
                            && p.section.as_deref().is_none_or(|s| s == l.name)
                            && p.port.is_none_or(|port| port == l.port)
                    })
                })
                .map(|r| AttachedRoute {
                    namespace: r.namespace.clone(),
                    name: r.name.clone(),
                    hostnames: r.hostnames.clone(),
                    redirects: r.rules.iter().any(|rule| rule.redirect.is_some()),
                    solver: r.solver,
                    accepted: r.accepted_by(&gw.namespace, &gw.name),
                })
                .collect(),
        })
        .collect();
    Some(GatewayDetail {
        http_listeners,
        cluster: Text::from(cluster),
        namespace: Text::from(gw.namespace.as_str()),
        name: Text::from(gw.name.as_str()),
        class: Text::from(gw.class.as_str()),
        issuer: gw.issuer.as_ref().map(|i| format!("{} {}", i.kind, i.name)),
        addresses: gw
            .addresses
            .iter()
            .map(|a| Text::from(a.as_str()))
            .collect(),
        severity: severity_of(Kind::Gateway, &gw.namespace, &gw.name),
        listeners,
        findings: findings
            .iter()
            .filter(|f| {
                f.kind == Subject::Object(Kind::Gateway)
                    && *f.namespace == *gw.namespace
                    && *f.name == *gw.name
                    && visible.finding(f)
            })
            .cloned()
            .collect(),
        events: idx.events_of("Gateway", &gw.namespace, &gw.name, 20),
    })
}

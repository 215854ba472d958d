//! `issuer.*`: references to Issuers and ClusterIssuers.

use crate::model::finding::Subject;
use crate::model::rule::Rule;
use std::collections::BTreeMap;

use super::{About, Ctx};
use crate::model::finding::Severity;
use crate::model::ingress::IssuerRef;
use crate::model::kind::Kind;
use crate::model::text::Text;

/// Who references each issuer that is not ready: (kind, namespace — empty for a
/// ClusterIssuer —, name) to "Ingress ns/name" and "Certificate ns/name", in that order.
type Users = BTreeMap<(String, String, String), Vec<String>>;

/// `issuer.missing` on each Ingress and Certificate, and `issuer.not-ready` on the namespaced
/// Issuers they reference: what one namespace's objects say, read from that namespace alone.
/// A ClusterIssuer's readiness gathers its users from every namespace
/// ([`check_cluster_issuers`]).
pub(super) fn check_namespaced(ctx: &mut Ctx<'_>) {
    let facts = ctx.idx.facts;
    if !(facts.synced(Kind::Issuer) && facts.synced(Kind::ClusterIssuer)) {
        return;
    }
    let data = ctx.idx.data;
    let mut users = Users::new();
    for ing in data.ingresses.values() {
        let Some(r) = ing.issuer.as_ref().filter(|r| r.is_cert_manager()) else {
            continue;
        };
        if !r.cluster_scoped() {
            note_user(ctx, &mut users, &ing.namespace, r, || {
                format!("Ingress {}/{}", ing.namespace, ing.name)
            });
        }
        if ctx.idx.issuer(&ing.namespace, r).is_none() {
            ctx.push(
                Rule::IssuerMissing,
                Severity::Critical,
                About { namespace: &ing.namespace, kind: Subject::Object(Kind::Ingress), name: &ing.name },
                format!("{} {} does not exist", r.kind, r.name),
                format!("The Ingress asks for {} {:?}{}, which does not exist in {}; no certificate can be issued.", r.kind, r.name, if r.watched_kind() == Some(Kind::Issuer) { format!(" in namespace {}", ing.namespace) } else { String::new() }, facts.name),
                "Fix the issuer annotation (cert-manager.io/cluster-issuer or cert-manager.io/issuer) or create the issuer.",
                None,
            );
        }
    }
    for c in data.certificates.values() {
        let Some(r) = c.issuer.as_ref().filter(|r| r.is_cert_manager()) else {
            continue;
        };
        if !r.cluster_scoped() {
            note_user(ctx, &mut users, &c.namespace, r, || {
                format!("Certificate {}/{}", c.namespace, c.name)
            });
        }
        let reported_on_ingress = ctx
            .idx
            .ingress_of(c)
            .is_some_and(|i| i.issuer.as_ref() == Some(r));
        if ctx.idx.issuer(&c.namespace, r).is_none() && !reported_on_ingress {
            ctx.push(
                Rule::IssuerMissing,
                Severity::Critical,
                About {
                    namespace: &c.namespace,
                    kind: Subject::Object(Kind::Certificate),
                    name: &c.name,
                },
                format!("{} {} does not exist", r.kind, r.name),
                format!(
                    "spec.issuerRef names {} {:?}, which does not exist in {}.",
                    r.kind, r.name, facts.name
                ),
                "Fix spec.issuerRef or create the issuer.",
                None,
            );
        }
    }
    not_ready(ctx, users);
}

/// `issuer.not-ready` on the ClusterIssuers that are not ready, with their users in every
/// namespace.
pub(super) fn check_cluster_issuers(ctx: &mut Ctx<'_>) {
    let facts = ctx.idx.facts;
    if !(facts.synced(Kind::Issuer) && facts.synced(Kind::ClusterIssuer)) {
        return;
    }
    let data = ctx.idx.data;
    if data.cluster_issuers.values().all(|i| i.is_ready()) {
        return;
    }
    let mut users = Users::new();
    for ing in data.ingresses.values() {
        if let Some(r) = ing
            .issuer
            .as_ref()
            .filter(|r| r.is_cert_manager() && r.cluster_scoped())
        {
            note_user(ctx, &mut users, &ing.namespace, r, || {
                format!("Ingress {}/{}", ing.namespace, ing.name)
            });
        }
    }
    for c in data.certificates.values() {
        if let Some(r) = c
            .issuer
            .as_ref()
            .filter(|r| r.is_cert_manager() && r.cluster_scoped())
        {
            note_user(ctx, &mut users, &c.namespace, r, || {
                format!("Certificate {}/{}", c.namespace, c.name)
            });
        }
    }
    not_ready(ctx, users);
}

/// Notes `user` of the issuer `r` names from `namespace`, when that issuer exists and is not
/// ready (only those are reported).
fn note_user(
    ctx: &Ctx<'_>,
    users: &mut Users,
    namespace: &str,
    r: &IssuerRef,
    user: impl FnOnce() -> String,
) {
    if ctx.idx.issuer(namespace, r).is_none_or(|i| i.is_ready()) {
        return;
    }
    let ns = if r.cluster_scoped() { "" } else { namespace };
    users
        .entry((r.kind.to_string(), ns.to_string(), r.name.to_string()))
        .or_default()
        .push(user());
}

/// `issuer.not-ready` on each issuer of `users`.
fn not_ready(ctx: &mut Ctx<'_>, users: Users) {
    for ((kind, ns, name), users) in users {
        let r = IssuerRef {
            kind: Text::from(kind.as_str()),
            name: Text::from(name.as_str()),
            group: Text::from("cert-manager.io"),
        };
        let Some(issuer) = ctx.idx.issuer(&ns, &r) else {
            continue;
        };
        if issuer.is_ready() {
            continue;
        }
        let (status, reason, message) = issuer
            .ready
            .as_ref()
            .map(|c| {
                (
                    c.status.to_string(),
                    c.reason.as_deref().unwrap_or_default().to_string(),
                    c.message.as_deref().unwrap_or_default().to_string(),
                )
            })
            .unwrap_or(("absent".into(), String::new(), String::new()));
        ctx.push(
            Rule::IssuerNotReady,
            Severity::Critical,
            About { namespace: &Text::from(ns.as_str()), kind: Kind::from_name(&kind).map_or(Subject::Object(Kind::Issuer), Subject::Object), name: &Text::from(name.as_str()) },
            // The title names nothing of the namespaces that use it: a namespace-scoped reader
            // whose Certificate names this issuer is told it as it is.
            format!("{kind} {name} is not ready{}", if reason.is_empty() { String::new() } else { format!(" ({reason})") }),
            format!("Ready is {status} ({reason}): {message}. {} on it: {}.", crate::model::text::count(users.len(), "object depends", "objects depend"), users.join(", ")),
            "Check the issuer's ACME account registration (server URL, email, account key Secret) and its events; issuance through it cannot succeed until it is Ready.",
            issuer.ready.as_ref().and_then(|c| c.last_transition),
        );
    }
}

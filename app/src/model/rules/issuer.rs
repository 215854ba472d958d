//! `issuer.*`: references to Issuers and ClusterIssuers.

use crate::model::finding::Subject;
use crate::model::rule::Rule;
use std::collections::BTreeMap;

use super::{About, Ctx};
use crate::model::finding::Severity;
use crate::model::ingress::IssuerRef;
use crate::model::kind::Kind;
use crate::model::text::Text;

pub(super) fn check(ctx: &mut Ctx<'_>) {
    let facts = ctx.idx.facts;
    if !(facts.synced(Kind::Issuer) && facts.synced(Kind::ClusterIssuer)) {
        return;
    }
    let data = ctx.idx.data;
    // Every referenced issuer, with who references it.
    let mut referenced: BTreeMap<(String, String, String), Vec<String>> = BTreeMap::new();
    let key = |ns: &str, r: &IssuerRef| {
        (
            r.kind.to_string(),
            if r.cluster_scoped() {
                String::new()
            } else {
                ns.to_string()
            },
            r.name.to_string(),
        )
    };

    for ing in data.ingresses.values() {
        let Some(r) = ing.issuer.as_ref().filter(|r| r.is_cert_manager()) else {
            continue;
        };
        referenced
            .entry(key(&ing.namespace, r))
            .or_default()
            .push(format!("Ingress {}/{}", ing.namespace, ing.name));
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
        referenced
            .entry(key(&c.namespace, r))
            .or_default()
            .push(format!("Certificate {}/{}", c.namespace, c.name));
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

    for ((kind, ns, name), users) in referenced {
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
            format!("{kind} {name} is not ready; {} on it", crate::model::text::count(users.len(), "object depends", "objects depend")),
            format!("Ready is {status} ({reason}): {message}. Used by: {}.", users.join(", ")),
            "Check the issuer's ACME account registration (server URL, email, account key Secret) and its events; issuance through it cannot succeed until it is Ready.",
            issuer.ready.as_ref().and_then(|c| c.last_transition),
        );
    }
}

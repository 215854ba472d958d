//! `ingress.cilium-listener-conflict`: in Cilium's shared load-balancer mode every Ingress is
//! one Envoy listener, with one filter chain per TLS Secret matched by server name. Two
//! Ingresses (or two TLS entries) giving one host different Secrets make two filter chains
//! with the same match; Envoy refuses the whole listener update, and from then on no change
//! to any Ingress of the shared listener applies (cilium/cilium#45925; Cilium's
//! `operator/pkg/model/translation/envoy_listener.go` `NewHTTPListener` builds one filter chain
//! per Secret, matched by its hostnames).

use std::collections::{BTreeMap, BTreeSet};

use super::{About, Ctx};
use crate::model::chain::Index;
use crate::model::finding::{Severity, Subject};
use crate::model::infra::LbMode;
use crate::model::ingress::IngressView;
use crate::model::kind::Kind;
use crate::model::rule::Rule;
use crate::model::text::Text;

/// Per host on the cluster's shared listener: the (namespace, Secret) pairs its TLS
/// entries name, and who names them (namespace, Ingress, Secret).
type SharedHosts = (
    BTreeMap<String, BTreeSet<(Text, Text)>>,
    BTreeMap<String, Vec<(Text, Text, Text)>>,
);

fn shared_hosts(idx: &Index<'_>) -> SharedHosts {
    let mut secrets: BTreeMap<String, BTreeSet<(Text, Text)>> = BTreeMap::new();
    let mut naming: BTreeMap<String, Vec<(Text, Text, Text)>> = BTreeMap::new();
    for ing in idx.data.ingresses.values() {
        if !on_shared_listener(idx, ing) {
            continue;
        }
        for t in &ing.tls {
            let Some(secret) = &t.secret_name else {
                continue;
            };
            for h in t.hosts.iter() {
                let host = h.to_ascii_lowercase();
                secrets
                    .entry(host.clone())
                    .or_default()
                    .insert((ing.namespace.clone(), secret.clone()));
                naming.entry(host).or_default().push((
                    ing.namespace.clone(),
                    ing.name.clone(),
                    secret.clone(),
                ));
            }
        }
    }
    (secrets, naming)
}

fn on_shared_listener(idx: &Index<'_>, ing: &IngressView) -> bool {
    let controller = idx.controller_of(ing);
    controller.cilium && controller.lb_mode == Some(LbMode::Shared)
}

/// Whether the Ingress `namespace/name` is on a shared listener whose updates Envoy refuses
/// (some host on it has two Secrets): a change of its TLS Secret has not reached clients.
pub(super) fn refuses_updates(idx: &Index<'_>, namespace: &str, name: &str) -> bool {
    let on_it = idx
        .data
        .ingresses
        .values()
        .any(|i| &*i.namespace == namespace && &*i.name == name && on_shared_listener(idx, i));
    on_it && shared_hosts(idx).0.values().any(|pairs| pairs.len() > 1)
}

pub(super) fn check(ctx: &mut Ctx<'_>) {
    let (secrets, mut naming) = shared_hosts(&ctx.idx);
    for (host, pairs) in secrets.into_iter().filter(|(_, p)| p.len() > 1) {
        let named = naming.remove(&host).unwrap_or_default();
        let mut told: BTreeSet<(Text, Text)> = BTreeSet::new();
        for (ns, name, _) in &named {
            if !told.insert((ns.clone(), name.clone())) {
                continue;
            }
            // Names only from the finding's own namespace; the others are counted.
            let own: BTreeSet<String> = named
                .iter()
                .filter(|(n, _, _)| n == ns)
                .map(|(_, i, s)| format!("{i} (Secret {s})"))
                .collect();
            let elsewhere = pairs.iter().filter(|(n, _)| n != ns).count();
            let others = match elsewhere {
                0 => String::new(),
                1 => ", and 1 more Secret in another namespace".to_string(),
                n => format!(", and {n} more Secrets in other namespaces"),
            };
            ctx.push(
                Rule::IngressCiliumListenerConflict,
                Severity::Warning,
                About {
                    namespace: ns,
                    kind: Subject::Object(Kind::Ingress),
                    name,
                },
                format!("{host} has {} TLS Secrets on Cilium's shared listener", pairs.len()),
                format!(
                    "In Cilium's shared load-balancer mode the TLS entries for {host} name different Secrets: {}{others}. Cilium makes one filter chain per Secret with the same server name, Envoy refuses the listener update as a duplicate match, and no later change to any Ingress of the shared listener takes effect — a renewed certificate, a new Ingress, a fix (cilium/cilium#45925).",
                    own.into_iter().collect::<Vec<_>>().join(", ")
                ),
                "Give the host one Secret: name the same secretName in every TLS entry for it (one Certificate for the host), or move one Ingress to the dedicated load-balancer mode (ingress.cilium.io/loadbalancer-mode: dedicated).",
                None,
            );
        }
    }
}

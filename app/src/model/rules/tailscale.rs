//! `tailscale.cert-budget`: new Tailscale Ingress hostnames in one tailnet near Let's
//! Encrypt's 50 new certificates per registered domain per 7 days. `<tailnet>.ts.net` is its
//! own registered domain on the Public Suffix List, so the budget is the tailnet's — shared by
//! every cluster (and device) in it: counted across the fleet, not per cluster
//! (tailscale/tailscale `cmd/k8s-operator/ingress-for-pg.go`: the operator publishes a
//! hostname only once the certificate is issued or port 80 is advertised, so an Ingress the
//! CA refused has none; it is attributed to its cluster's configured `tailnet`).

use crate::model::rule::Rule;
use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};

use crate::model::budget::registered_domain;
use crate::model::data::{ClusterData, ClusterFacts};
use crate::model::finding::{Finding, Severity};

/// The per-registered-domain capacity and the share at which the rule warns.
const CAPACITY: usize = 50;
const WARN_AT: usize = 40;

/// A Tailscale Ingress created in the last 7 days, with its tailnet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TailnetIngress {
    pub cluster: String,
    pub namespace: String,
    pub name: String,
    pub tailnet: String,
    /// Whether the operator published its hostname (its certificate was issued).
    pub named: bool,
    pub created: DateTime<Utc>,
}

/// The Tailscale Ingresses of one cluster created since `now − 7 days` whose tailnet is
/// known: from the published hostname, else from the cluster's configured tailnet.
pub fn recent_ingresses(
    facts: &ClusterFacts,
    data: &ClusterData,
    now: DateTime<Utc>,
) -> Vec<TailnetIngress> {
    let since = now - Duration::days(7);
    data.ingresses
        .values()
        .filter(|ing| ing.class.as_deref() == Some("tailscale"))
        .filter_map(|ing| {
            let created = ing.created.filter(|c| *c >= since)?;
            let host = ing.addresses.iter().find(|a| a.ends_with(".ts.net"));
            let tailnet = host
                .map(|h| registered_domain(h))
                .or_else(|| facts.overrides.tailnet.clone())?;
            Some(TailnetIngress {
                cluster: facts.name.to_string(),
                namespace: ing.namespace.to_string(),
                name: ing.name.to_string(),
                tailnet,
                named: host.is_some(),
                created,
            })
        })
        .collect()
}

/// For each tailnet whose new hostnames this week, across the fleet, near the limit: one
/// finding per namespace with a new Tailscale Ingress in it, on that namespace's newest — so
/// every tenant spending from the tailnet is told, and whether a tenant is told never depends
/// on when someone else created one.
pub fn findings(ingresses: &[TailnetIngress]) -> Vec<Finding> {
    let mut per_tailnet: BTreeMap<&str, Vec<&TailnetIngress>> = BTreeMap::new();
    for i in ingresses {
        per_tailnet.entry(&i.tailnet).or_default().push(i);
    }
    per_tailnet
        .into_iter()
        .flat_map(|(tailnet, all)| {
            let named = all.iter().filter(|i| i.named).count();
            let waiting = all.len() - named;
            let mut newest: BTreeMap<(&str, &str), &TailnetIngress> = BTreeMap::new();
            if named >= WARN_AT {
                for i in &all {
                    let slot = newest.entry((&i.cluster, &i.namespace)).or_insert(i);
                    if (i.created, &i.name) > (slot.created, &slot.name) {
                        *slot = i;
                    }
                }
            }
            newest.into_values().map(move |newest| (tailnet, named, waiting, newest))
        })
        .map(|(tailnet, named, waiting, newest)| {
            let waiting = if waiting > 0 {
                format!(" {waiting} more are still without a hostname: the operator publishes one only once the certificate is issued, so these are likely refused by the limit.")
            } else {
                String::new()
            };
            Finding {
                rule: Rule::TailscaleCertBudget,
                severity: if named >= CAPACITY { Severity::Critical } else { Severity::Warning },
                cluster: newest.cluster.as_str().into(),
                namespace: newest.namespace.as_str().into(),
                kind: crate::model::Subject::Object(crate::model::Kind::Ingress),
                name: newest.name.as_str().into(),
                title: format!("{named} new Tailscale hostnames in {tailnet} this week (limit {CAPACITY})").into(),
                message: format!(
                    // How many clusters, or which, is not said: the finding is read by whoever
                    // sees its Ingress, who may see no other cluster of the tailnet.
                    "{named} Tailscale Ingresses with hostnames under {tailnet} were created in the last 7 days across this fleet. Each new hostname needs a new Let's Encrypt certificate, and {tailnet} is one registered domain: {CAPACITY} new certificates per 7 days, shared with every other cluster and device in the tailnet.{waiting}"
                )
                .into(),
                remediation: "Hold back new Tailscale Ingresses in this tailnet for a few days, or reuse hostnames; renewals (ARI) are exempt, new names are not.".into(),
                since: Some(newest.created),
                commands: None,
                host: None,
            }
        })
        .collect()
}

//! `tailscale.cert-budget`: new Tailscale Ingress hostnames in one tailnet near Let's
//! Encrypt's 50 certificates per registered domain per 7 days (`<tailnet>.ts.net` is its own
//! registered domain on the Public Suffix List; ARI renewals are exempt, new names are not).

use std::collections::BTreeMap;

use chrono::Duration;

use super::{About, Ctx};
use crate::model::budget::registered_domain;
use crate::model::finding::Severity;
use crate::model::text::Text;

/// The per-registered-domain capacity and the share at which the rule warns.
const CAPACITY: usize = 50;
const WARN_AT: usize = 40;

pub(super) fn check(ctx: &mut Ctx<'_>) {
    let since = ctx.now - Duration::days(7);
    let mut per_tailnet: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for ing in ctx.idx.data.ingresses.values() {
        if ing.class.as_deref() != Some("tailscale") || ing.created.is_none_or(|c| c < since) {
            continue;
        }
        for host in ing.addresses.iter().filter(|a| a.ends_with(".ts.net")) {
            per_tailnet
                .entry(registered_domain(host))
                .or_default()
                .push((ing.namespace.to_string(), ing.name.to_string()));
        }
    }
    for (tailnet, ingresses) in per_tailnet.into_iter().filter(|(_, v)| v.len() >= WARN_AT) {
        let (ns, name) = ingresses.last().cloned().unwrap_or_default();
        ctx.push(
            "tailscale.cert-budget",
            Severity::Warning,
            About { namespace: &Text::from(ns.as_str()), kind: "Ingress", name: &Text::from(name.as_str()) },
            format!("{} new Tailscale hostnames in {tailnet} this week (limit {CAPACITY})", ingresses.len()),
            format!(
                "{} Tailscale Ingresses with hostnames under {tailnet} were created in the last 7 days. Each new hostname needs a new Let's Encrypt certificate, and {tailnet} is one registered domain: {CAPACITY} new certificates per 7 days.",
                ingresses.len()
            ),
            "Hold back new Tailscale Ingresses in this tailnet for a few days, or reuse hostnames; renewals (ARI) are exempt, new names are not.",
            None,
        );
    }
}

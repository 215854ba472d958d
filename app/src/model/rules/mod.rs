//! The health rules of DESIGN.md §5 (except the two that need history). Each rule reads the
//! correlated cluster state and emits findings with evidence and a remediation.

mod acme;
mod approval;
mod cert;
mod cluster;
mod gateway;
mod ingress;
mod issuer;
mod listener;
mod policy;
mod probe;
pub mod tailscale;

use chrono::{DateTime, SecondsFormat, Utc};

use super::chain::Index;
use super::data::{ClusterData, ClusterFacts};
use super::finding::{sort_by_urgency, Finding, Severity, Subject};
use super::interner::Interner;
use super::rule::Rule;
use super::text::Text;
use super::thresholds::Thresholds;

/// What a rule needs, and where it puts its findings.
pub(crate) struct Ctx<'a> {
    pub idx: Index<'a>,
    pub now: DateTime<Utc>,
    pub t: &'a Thresholds,
    pub out: Vec<Finding>,
    /// One copy of each name, title, message and remediation the findings repeat: a cluster
    /// where every Ingress names the same missing issuer holds one copy of the text, not
    /// thousands.
    strings: Interner,
}

/// The object a finding is about. Its namespace and name are the view's own shared strings,
/// so a finding holds no copy of them.
pub(crate) struct About<'s> {
    pub namespace: &'s Text,
    pub kind: Subject,
    pub name: &'s Text,
}

impl Ctx<'_> {
    #[allow(clippy::too_many_arguments)]
    pub fn push(
        &mut self,
        rule: Rule,
        severity: Severity,
        about: About<'_>,
        title: String,
        message: String,
        remediation: &str,
        since: Option<DateTime<Utc>>,
    ) {
        let s = &mut self.strings;
        self.out.push(Finding {
            rule,
            severity,
            cluster: s.get(&self.idx.facts.name),
            namespace: about.namespace.clone(),
            kind: about.kind,
            name: about.name.clone(),
            title: s.get(&title),
            message: s.get(&message),
            remediation: s.get(remediation),
            since,
            commands: None,
            host: None,
        });
    }

    /// The last finding pushed, with `commands` doing its remediation by hand.
    pub fn by_hand(&mut self, commands: String) {
        if let Some(f) = self.out.last_mut() {
            f.commands = Some(commands.into());
        }
    }

    /// The last finding pushed, about `host` alone of its object's hosts.
    pub fn for_host(&mut self, host: &str) {
        let host = self.strings.get(&host.to_ascii_lowercase());
        if let Some(f) = self.out.last_mut() {
            f.host = Some(host);
        }
    }
}

/// A time as evidence: RFC 3339 UTC.
pub(crate) fn at(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// A duration as evidence: `3d 4h`, `2h 5m`, `45m`.
pub(crate) fn span(d: chrono::Duration) -> String {
    let mins = d.num_minutes().abs();
    let (days, hours, m) = (mins / 1440, (mins % 1440) / 60, mins % 60);
    match (days, hours) {
        (0, 0) => format!("{m}m"),
        (0, h) => format!("{h}h {m}m"),
        (d, h) => format!("{d}d {h}h"),
    }
}

/// Evaluates every rule on one cluster; findings sorted by urgency.
pub fn evaluate(
    facts: &ClusterFacts,
    data: &ClusterData,
    now: DateTime<Utc>,
    t: &Thresholds,
) -> Vec<Finding> {
    let Split {
        mut namespaced,
        across,
    } = evaluate_split(facts, data, now, t, Rules::All);
    namespaced.extend(across);
    sort_by_urgency(&mut namespaced);
    namespaced
}

/// Which rules to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rules {
    /// The rules whose findings about a namespace's objects read only that namespace (and the
    /// cluster-scoped objects and facts): run on one namespace's data, they give that
    /// namespace's findings, so a change is evaluated again for its namespace alone.
    Namespaced,
    /// The rules that read across namespaces — the cluster's own findings (reachability,
    /// the load balancers of every namespace), a ClusterIssuer that is not ready with its
    /// users everywhere, hosts shared by Ingresses of several namespaces, what the probe
    /// saw (one host may be published from several namespaces), and Gateways (their
    /// certificates, and the routes attached to them, may live in other namespaces) — run on
    /// the whole cluster.
    Across,
    All,
}

/// Whether `f` is a finding of the rules across namespaces ([`Rules::Across`]).
pub fn across_namespaces(f: &Finding) -> bool {
    match f.rule {
        Rule::ClusterUnreachable
        | Rule::ClusterIpv6ProxyProtocol
        | Rule::IngressSharedHostHttpsRedirect
        | Rule::IngressCiliumListenerConflict
        // It quotes what the probe saw on the Certificate's hosts.
        | Rule::CertTemporaryCertificate
        | Rule::ProbeWrongCertificate
        | Rule::ProbeExpired
        | Rule::ProbeNameMismatch
        | Rule::ProbeUntrusted
        | Rule::ProbeNoCertificate
        | Rule::ProbeAcmePathRedirected
        | Rule::ProbeUnreachable
        | Rule::ProbeProxyProtocol
        // A policy in one namespace covers Ingresses in others.
        | Rule::PolicyNotReady
        | Rule::PolicyMissingCoverage
        | Rule::PolicyConflictsWithFix
        // A listener's certificate, and the Gateway a solver's route attaches to, may be in
        // another namespace than the Gateway, or the challenge.
        | Rule::GatewayListenerNotReady
        | Rule::GatewayReferenceNotPermitted
        | Rule::GatewayHostnameNotCovered
        | Rule::GatewayHttp01RouteUnreachable
        | Rule::GatewayAcmePathRedirected => true,
        // A ClusterIssuer's, with its users in every namespace.
        Rule::IssuerNotReady => f.namespace.is_empty(),
        _ => false,
    }
}

/// Findings of the two kinds of rules, each in the order the rules emit them (unsorted).
#[derive(Debug, Default)]
pub struct Split {
    pub namespaced: Vec<Finding>,
    pub across: Vec<Finding>,
}

/// Evaluates `rules` on one cluster's `data` (for [`Rules::Namespaced`], the data may hold
/// one namespace's objects only: see [`ClusterData::namespace`]).
pub fn evaluate_split(
    facts: &ClusterFacts,
    data: &ClusterData,
    now: DateTime<Utc>,
    t: &Thresholds,
    rules: Rules,
) -> Split {
    let mut ctx = Ctx {
        idx: Index::new(facts, data),
        now,
        t,
        out: Vec::new(),
        strings: Interner::default(),
    };
    let mut split = Split::default();
    if rules != Rules::Across {
        cluster::check_namespaced(&mut ctx);
        cert::check(&mut ctx);
        approval::check(&mut ctx);
        acme::check(&mut ctx);
        issuer::check_namespaced(&mut ctx);
        ingress::check(&mut ctx);
        // Kept until the next change: without the slack of its growth.
        split.namespaced = std::mem::take(&mut ctx.out);
        split.namespaced.shrink_to_fit();
    }
    if rules != Rules::Namespaced {
        cluster::check_cluster(&mut ctx);
        issuer::check_cluster_issuers(&mut ctx);
        ingress::shared_hosts(&mut ctx);
        listener::check(&mut ctx);
        cert::temporary_certificates(&mut ctx);
        policy::check(&mut ctx);
        gateway::check(&mut ctx);
        probe::check(&mut ctx);
        split.across = std::mem::take(&mut ctx.out);
        split.across.shrink_to_fit();
    }
    split
}

#[cfg(test)]
pub(crate) mod fixtures;
#[cfg(test)]
mod tests;

//! Which findings no chain took join which problem: the probe's observations of a host as
//! the evidence of what explains them, the load balancer's as one problem (or the cluster's
//! own), and a problem that another explains folded into it.

use std::collections::BTreeMap;

use super::{object_of, problem_id, Gathering};
use crate::model::rule::Rule;
use crate::model::{Finding, Kind, Severity};

/// Whether what a probe rule observed is evidence for a root rule (the root explains it).
pub(super) fn supports(probe: Rule, root: Rule) -> bool {
    match probe {
        Rule::ProbeAcmePathRedirected => {
            REDIRECTED.contains(&root) || root == Rule::IngressSharedHostHttpsRedirect
        }
        Rule::ProbeUnreachable => {
            matches!(
                root,
                Rule::ClusterIpv6ProxyProtocol
                    | Rule::IngressNoAddress
                    | Rule::GatewayListenerNotReady
                    | Rule::GatewayReferenceNotPermitted
            )
        }
        Rule::ProbeProxyProtocol => {
            matches!(
                root,
                Rule::ClusterIpv6ProxyProtocol | Rule::IngressNoAddress
            )
        }
        Rule::ProbeUntrusted => root == Rule::CertStagingIssuer,
        Rule::ProbeExpired => matches!(root, Rule::CertExpired | Rule::CertExpiring),
        Rule::ProbeNameMismatch | Rule::ProbeWrongCertificate => {
            matches!(
                root,
                Rule::CertHostsNotCovered
                    | Rule::IngressSharedSecret
                    | Rule::GatewayHostnameNotCovered
            )
        }
        _ => false,
    }
}

/// What the probe saw on one host of a Gateway, explained by that host's listener: the
/// Gateway listener finding about the same Gateway and host that it is evidence for (a
/// listener its controller left out answers nothing; one serving a certificate without the
/// host's name gets a name mismatch). The observation joins that finding's problem.
pub(super) fn gateway_cause<'f>(f: &Finding, findings: &[&'f Finding]) -> Option<&'f Finding> {
    if f.kind != Kind::Gateway || f.host.is_none() {
        return None;
    }
    findings.iter().copied().find(|c| {
        c.kind == f.kind
            && c.cluster == f.cluster
            && c.namespace == f.namespace
            && c.name == f.name
            && c.host == f.host
            && c.rule.id().starts_with("gateway.")
            && supports(f.rule, c.rule)
    })
}

/// Findings about the load balancer rather than one chain (every host on an address fails
/// alike): one problem per cluster, rule and address family — or the cluster's own
/// `cluster.ipv6-proxy-protocol` problem, which explains them.
pub(super) fn network_key(f: &Finding, findings: &[&Finding]) -> Option<String> {
    if !matches!(f.rule, Rule::ProbeUnreachable | Rule::ProbeProxyProtocol) {
        return None;
    }
    let ipv6 = f.title.contains("IPv6");
    // The cluster-wide finding is about Cilium's Ingress listeners (their flag, their
    // Services): a Gateway's listeners take PROXY protocol by a flag of their own.
    if (ipv6 || f.rule == Rule::ProbeProxyProtocol) && f.kind == Kind::Ingress {
        if let Some(cluster_wide) = findings
            .iter()
            .find(|c| c.rule == Rule::ClusterIpv6ProxyProtocol && c.cluster == f.cluster)
        {
            return Some(problem_id(cluster_wide));
        }
    }
    Some(format!("{}\0{}\0{ipv6}", f.cluster, f.rule))
}

/// Roots that a redirect on the host explains.
const REDIRECTED: &[Rule] = &[
    Rule::IngressEditInPlaceMissing,
    Rule::IngressEditInPlaceNotEffective,
    Rule::IngressEditInPlaceInvalid,
    Rule::AcmeChallengeFailing,
];

/// Another Ingress on the same host with HTTPS enforced (a second Ingress of the app, or
/// cert-manager's solver Ingress) is why that host's challenge is redirected: its
/// `ingress.shared-host-https-redirect` joins the problem of the challenge it breaks, in the
/// same namespace, instead of being a problem of its own.
pub(super) fn fold_shared_hosts(gathered: &mut BTreeMap<String, Gathering<'_>>) {
    let shared: Vec<String> = gathered
        .iter()
        .filter(|(_, g)| g.root.rule == Rule::IngressSharedHostHttpsRedirect)
        .map(|(k, _)| k.clone())
        .collect();
    for key in shared {
        let target = {
            let s = &gathered[&key];
            gathered
                .iter()
                .find(|(k, g)| {
                    **k != key
                        && REDIRECTED.contains(&g.root.rule)
                        && g.root.namespace == s.root.namespace
                        && g.hosts.intersection(&s.hosts).next().is_some()
                })
                .map(|(k, _)| k.clone())
        };
        if let Some(target) = target {
            merge(gathered, &key, &target);
        }
    }
}

/// A listener that waits for cert-manager to write its Secret (`gateway.listener-not-ready`
/// while a Certificate writing it is not ready, a warning) is a symptom of why that
/// Certificate is not issued: it joins the problem of the never-issued chain of its host, in
/// its namespace, with what the probe saw of it.
pub(super) fn fold_waiting_listeners(gathered: &mut BTreeMap<String, Gathering<'_>>) {
    let waiting: Vec<String> = gathered
        .iter()
        .filter(|(_, g)| {
            g.root.rule == Rule::GatewayListenerNotReady
                && g.root.severity == Severity::Warning
                && g.root.host.is_some()
        })
        .map(|(k, _)| k.clone())
        .collect();
    for key in waiting {
        let target = {
            let w = &gathered[&key];
            let host = w.root.host.clone().expect("filtered on its host");
            gathered
                .iter()
                .find(|(k, g)| {
                    **k != key
                        && g.unissued
                        && g.root.namespace == w.root.namespace
                        && g.hosts.contains(&host)
                })
                .map(|(k, _)| k.clone())
        };
        if let Some(target) = target {
            merge(gathered, &key, &target);
        }
    }
}

/// Problem `from` joins problem `into`: its root and symptoms become `into`'s symptoms.
fn merge(gathered: &mut BTreeMap<String, Gathering<'_>>, from: &str, into: &str) {
    let s = gathered
        .remove(from)
        .expect("the problem to merge is gathered");
    let t = gathered
        .get_mut(into)
        .expect("the problem merged into is gathered");
    t.add(s.root);
    for f in s.symptoms {
        t.add(f);
    }
    t.hosts.extend(s.hosts);
    t.heads.insert(object_of(s.root));
    t.heads.extend(s.heads);
    t.expires(s.expires);
    t.unissued |= s.unissued;
    t.issuance.extend(s.issuance);
    for (head, reach) in s.reached {
        t.reached.entry(head).or_default().join(reach);
    }
}

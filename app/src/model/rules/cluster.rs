//! `cluster.*`: the cluster itself.

use super::{About, Ctx};
use crate::model::cluster::{KindState, SyncState};
use crate::model::finding::Severity;
use crate::model::finding::Subject;
use crate::model::kind::Kind;
use crate::model::rule::Rule;
use crate::model::text::Text;

/// The cluster's own findings: whether it is reachable, and PROXY protocol on an IPv4-only
/// cluster (which reads the load balancers of every namespace).
pub(super) fn check_cluster(ctx: &mut Ctx<'_>) {
    let facts = ctx.idx.facts;
    let (cluster, name) = (Text::from(""), Text::from(facts.name.as_str()));
    let about = || About {
        namespace: &cluster,
        kind: Subject::Cluster,
        name: &name,
    };
    match &facts.state {
        SyncState::Stale { since, error } => ctx.push(
            Rule::ClusterUnreachable,
            Severity::Critical,
            about(),
            format!("Cluster {} is unreachable; data shown is from {}", facts.name, super::at(*since)),
            format!("The watch of {} failed: {error}. Pages show the state as of the last successful sync ({}).", facts.name, super::at(*since)),
            "Check that the API server is up and reachable from Lookout, and that its credentials (kubeconfig token or service account) are still valid. Lookout retries with backoff on its own.",
            Some(*since),
        ),
        SyncState::Failed { error } => ctx.push(
            Rule::ClusterUnreachable,
            Severity::Critical,
            about(),
            format!("Cluster {} could not be reached", facts.name),
            format!("Lookout has no data for {}: {error}", facts.name),
            "Check the cluster's kubeconfig and context in Lookout's config, that the API server is reachable from Lookout, and that the credentials are accepted.",
            None,
        ),
        _ => {}
    }

    let proxy = facts.overrides.proxy_protocol.or(ctx
        .idx
        .data
        .cilium()
        .and_then(|c| c.proxy_protocol));
    let lbs: Vec<_> = ctx.idx.data.load_balancers.values().collect();
    if proxy == Some(true) && !lbs.is_empty() && lbs.iter().all(|l| l.ipv4_only()) {
        let names: Vec<String> = lbs
            .iter()
            .map(|l| {
                format!(
                    "{}/{} ({})",
                    l.namespace,
                    l.name,
                    if l.ip_families.is_empty() {
                        l.addresses.join(", ")
                    } else {
                        l.ip_families.join(", ")
                    }
                )
            })
            .collect();
        ctx.push(
            Rule::ClusterIpv6ProxyProtocol,
            Severity::Warning,
            about(),
            "PROXY protocol on an IPv4-only cluster: IPv6 clients may fail".to_string(),
            format!(
                "enable-ingress-proxy-protocol is true and the ingress load balancers are single-stack IPv4: {}. Behind a load balancer that accepts IPv6 and forwards it with PROXY protocol, Cilium's Envoy stalls IPv6 clients (cilium/cilium#42950; fixed in cilium/proxy#1944).",
                names.join("; ")
            ),
            "Test an IPv6 client against an affected host. Upgrade to a Cilium release whose cilium-envoy carries cilium/proxy#1944, or turn PROXY protocol off on the load balancer and in Cilium, or make the cluster dual-stack.",
            None,
        );
    }
}

/// `cluster.cert-manager-missing`, on each Ingress that asks for a certificate (namespaced:
/// each Ingress's finding reads only the Ingress and the cluster's facts).
pub(super) fn check_namespaced(ctx: &mut Ctx<'_>) {
    let facts = ctx.idx.facts;
    // Reported on each Ingress that asks for a certificate, so that whoever sees the Ingress
    // learns why it has none (and nothing about anyone else's Ingresses); the board makes
    // them one problem per cluster.
    if matches!(facts.kind(Kind::Certificate), Some(KindState::NotInstalled)) {
        let asking: Vec<_> = ctx
            .idx
            .data
            .ingresses
            .values()
            .filter(|i| i.asks_for_certificate())
            .cloned()
            .collect();
        for ing in asking {
            ctx.push(
                Rule::ClusterCertManagerMissing,
                Severity::Warning,
                About {
                    namespace: &ing.namespace,
                    kind: Subject::Object(Kind::Ingress),
                    name: &ing.name,
                },
                format!("cert-manager is not installed in {}, yet Ingress {} asks for a certificate", facts.name, ing.name),
                format!("The CRD certificates.cert-manager.io is not served by {}, yet Ingress {}/{} {}. Nothing will issue its certificate, so its TLS hosts get none.", facts.name, ing.namespace, ing.name, ing.asks_how()),
                "Install cert-manager (with its CRDs) in this cluster, or remove the issuer annotations from Ingresses that should not get certificates.",
                ing.created,
            );
        }
    }
}

//! One cluster's cached state: every watched kind, projected, keyed by (namespace, name).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;

use super::certificate::{CertificateRequestView, CertificateView, ChallengeView, OrderView};
use super::cluster::{KindState, KindStatus, SyncState};
use super::infra::{CiliumConfig, EventView, GatewayView, IngressClassView, LoadBalancerView};
use super::ingress::IngressView;
use super::issuer::IssuerView;
use super::kind::Kind;
use super::text::Text;

/// `(namespace, name)`; the namespace is empty for cluster-scoped objects. Shares the
/// view's own strings, so a map entry costs no extra text.
pub type Key = (Text, Text);

/// The key of `namespace`/`name`, for lookups.
pub fn key(namespace: &str, name: &str) -> Key {
    (Text::from(namespace), Text::from(name))
}

/// A map of one kind's views.
pub type Views<V> = BTreeMap<Key, Arc<V>>;

/// Everything cached for one cluster.
#[derive(Debug, Clone, Default)]
pub struct ClusterData {
    pub ingresses: Views<IngressView>,
    pub ingress_classes: Views<IngressClassView>,
    pub load_balancers: Views<LoadBalancerView>,
    /// `kube-system/cilium-config`, when it exists (the watch selects it alone; see
    /// [`ClusterData::cilium`]).
    pub cilium_configs: Views<CiliumConfig>,
    pub certificates: Views<CertificateView>,
    pub requests: Views<CertificateRequestView>,
    pub orders: Views<OrderView>,
    pub challenges: Views<ChallengeView>,
    pub issuers: Views<IssuerView>,
    pub cluster_issuers: Views<IssuerView>,
    pub gateways: Views<GatewayView>,
    pub routes: Views<super::route::HttpRouteView>,
    /// Espejote's ManagedResources: the policies that may set the edit-in-place annotation
    /// (kept whole in every namespace's part: a policy in one namespace covers Ingresses in
    /// others).
    pub policies: Views<super::policy::PolicyView>,
    /// Kyverno's ClusterPolicies, Policies and MutatingPolicies (kept whole likewise).
    pub cluster_policies: Views<super::policy::PolicyView>,
    pub kyverno_policies: Views<super::policy::PolicyView>,
    pub mutating_policies: Views<super::policy::PolicyView>,
    pub events: Views<EventView>,
    /// What the probe saw on the hosts' load-balancer addresses (not a watched kind: the
    /// server's probe sets it).
    pub probes: super::probe::Observations,
}

impl ClusterData {
    /// `kube-system/cilium-config`, when it exists.
    pub fn cilium(&self) -> Option<&CiliumConfig> {
        self.cilium_configs.values().next().map(|c| &**c)
    }

    /// Every policy that may set the annotation: Espejote's, then Kyverno's.
    pub fn all_policies(&self) -> impl Iterator<Item = &std::sync::Arc<super::policy::PolicyView>> {
        self.policies
            .values()
            .chain(self.cluster_policies.values())
            .chain(self.kyverno_policies.values())
            .chain(self.mutating_policies.values())
    }

    /// The namespaces that hold objects of a namespaced kind.
    pub fn namespaces(&self) -> std::collections::BTreeSet<Text> {
        fn of<V>(views: &Views<V>, out: &mut std::collections::BTreeSet<Text>) {
            let mut last: Option<&Text> = None;
            for (ns, _) in views.keys() {
                if last != Some(ns) && !ns.is_empty() {
                    out.insert(ns.clone());
                }
                last = Some(ns);
            }
        }
        let mut out = std::collections::BTreeSet::new();
        of(&self.ingresses, &mut out);
        of(&self.load_balancers, &mut out);
        of(&self.certificates, &mut out);
        of(&self.requests, &mut out);
        of(&self.orders, &mut out);
        of(&self.challenges, &mut out);
        of(&self.issuers, &mut out);
        of(&self.gateways, &mut out);
        of(&self.routes, &mut out);
        of(&self.events, &mut out);
        out
    }

    /// What the namespaced rules read to judge `namespace`'s objects: its objects of every
    /// namespaced kind, every cluster-scoped object and cilium-config (the views are shared;
    /// only the maps are new).
    pub fn namespace(&self, namespace: &str) -> ClusterData {
        self.namespaces_part(&[namespace])
    }

    /// The objects of `namespaces` of every namespaced kind, every cluster-scoped object,
    /// cilium-config and what the probe saw.
    pub fn namespaces_part(&self, namespaces: &[&str]) -> ClusterData {
        fn part<V>(views: &Views<V>, namespaces: &[&str]) -> Views<V> {
            let mut out = Views::new();
            for namespace in namespaces {
                out.extend(
                    views
                        .range(key(namespace, "")..)
                        .take_while(|((ns, _), _)| &**ns == *namespace)
                        .map(|(k, v)| (k.clone(), v.clone())),
                );
            }
            out
        }
        ClusterData {
            ingresses: part(&self.ingresses, namespaces),
            ingress_classes: self.ingress_classes.clone(),
            load_balancers: part(&self.load_balancers, namespaces),
            cilium_configs: self.cilium_configs.clone(),
            certificates: part(&self.certificates, namespaces),
            requests: part(&self.requests, namespaces),
            orders: part(&self.orders, namespaces),
            challenges: part(&self.challenges, namespaces),
            issuers: part(&self.issuers, namespaces),
            cluster_issuers: self.cluster_issuers.clone(),
            gateways: part(&self.gateways, namespaces),
            routes: part(&self.routes, namespaces),
            policies: self.policies.clone(),
            cluster_policies: self.cluster_policies.clone(),
            kyverno_policies: self.kyverno_policies.clone(),
            mutating_policies: self.mutating_policies.clone(),
            events: part(&self.events, namespaces),
            probes: self.probes.clone(),
        }
    }
}

/// Per-cluster settings from Lookout's config that override what the cluster says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClusterOverrides {
    /// Overrides `enforce-ingress-https` of cilium-config.
    pub enforce_https: Option<bool>,
    /// Overrides `enable-ingress-proxy-protocol` of cilium-config.
    pub proxy_protocol: Option<bool>,
    /// Production clusters get `cert.staging-issuer`.
    pub production: bool,
    /// The Tailscale tailnet (`<name>.ts.net`) of its Tailscale Ingresses, when configured.
    pub tailnet: Option<String>,
}

impl Default for ClusterOverrides {
    fn default() -> Self {
        ClusterOverrides {
            enforce_https: None,
            proxy_protocol: None,
            production: true,
            tailnet: None,
        }
    }
}

/// What the rules know about a cluster besides its objects.
#[derive(Debug, Clone)]
pub struct ClusterFacts {
    pub name: String,
    pub state: SyncState,
    pub kinds: Vec<KindStatus>,
    pub overrides: ClusterOverrides,
}

impl ClusterFacts {
    /// The state of one watched kind, if it is watched.
    pub fn kind(&self, kind: Kind) -> Option<&KindState> {
        self.kinds.iter().find(|k| k.kind == kind).map(|k| &k.state)
    }

    /// Whether a kind is installed and listed (its data can be trusted to be complete).
    pub fn synced(&self, kind: Kind) -> bool {
        matches!(self.kind(kind), Some(KindState::Synced))
    }
}

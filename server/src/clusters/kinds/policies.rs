//! The policies that may set the edit-in-place annotation — Espejote's ManagedResources and
//! Kyverno's ClusterPolicies, Policies and MutatingPolicies — each a [`Projection`] into its
//! map of `ClusterData`, all projected by [`PolicyView::of`].

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use lookout_app::model::data::{ClusterData, Views};
use lookout_app::model::interner::Interner;
use lookout_app::model::policy::PolicyView;
use lookout_app::model::Kind;
use serde_json::Value;

use super::{Projection, Source};

/// One policy kind: its name here, its `Kind`, where it is served and its map.
macro_rules! policy_kind {
    ($(#[$doc:meta])* $name:ident: $kind:ident at $group:literal $version:literal $plural:literal in $field:ident) => {
        $(#[$doc])*
        pub(crate) struct $name;

        impl Projection for $name {
            const KIND: Kind = Kind::$kind;
            const API: Source = Source {
                version: $version,
                ..Source::custom($group, $plural)
            };
            type View = PolicyView;

            fn project(
                _cluster: &str,
                meta: &ObjectMeta,
                data: &Value,
                strings: &mut Interner,
            ) -> Option<PolicyView> {
                PolicyView::of(Self::KIND, meta, data, strings)
            }

            fn views(data: &ClusterData) -> &Views<PolicyView> {
                &data.$field
            }

            fn views_mut(data: &mut ClusterData) -> &mut Views<PolicyView> {
                &mut data.$field
            }
        }
    };
}

policy_kind!(
    /// Espejote's ManagedResources (`espejote.io/v1alpha1`).
    ManagedResources: ManagedResource at "espejote.io" "v1alpha1" "managedresources" in policies
);
policy_kind!(
    /// Kyverno's ClusterPolicies (`kyverno.io/v1`).
    ClusterPolicies: ClusterPolicy at "kyverno.io" "v1" "clusterpolicies" in cluster_policies
);
policy_kind!(
    /// Kyverno's namespaced Policies (`kyverno.io/v1`).
    KyvernoPolicies: Policy at "kyverno.io" "v1" "policies" in kyverno_policies
);
policy_kind!(
    /// Kyverno's MutatingPolicies (`policies.kyverno.io`, stored as `v1beta1`).
    MutatingPolicies: MutatingPolicy at "policies.kyverno.io" "v1beta1" "mutatingpolicies" in mutating_policies
);

//! The watched kinds of DESIGN.md §4: for each, where its objects come from, how one becomes a
//! compact view and where the views live. Adding a kind is one [`Projection`] and one line in
//! `WATCHED`, both in `projections.rs` (plus its variant in `lookout_app::model::Kind` and its
//! map in `ClusterData`); the watcher, the sync state and `/metrics` follow from it.

use std::marker::PhantomData;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::{ApiResource, GroupVersionKind};
use lookout_app::model::data::{ClusterData, Key, Views};
use lookout_app::model::history::HistoryEvent;
use lookout_app::model::interner::Interner;
use lookout_app::model::Kind;
use serde_json::Value;

/// Where the API server serves a kind, and how much of it Lookout watches.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Source {
    pub group: &'static str,
    pub version: &'static str,
    pub plural: &'static str,
    /// Declared by a CRD that may be absent (looked for before watching).
    pub crd: bool,
    /// Watch one namespace only.
    pub namespace: Option<&'static str>,
    /// Watch with this field selector.
    pub field_selector: Option<&'static str>,
}

impl Source {
    const fn core(group: &'static str, plural: &'static str) -> Source {
        Source {
            group,
            version: "v1",
            plural,
            crd: false,
            namespace: None,
            field_selector: None,
        }
    }

    const fn custom(group: &'static str, plural: &'static str) -> Source {
        Source {
            crd: true,
            ..Source::core(group, plural)
        }
    }

    pub(super) fn resource(&self, kind: Kind) -> ApiResource {
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(self.group, self.version, kind.name()),
            self.plural,
        )
    }

    /// `cert-manager.io/v1`, or `v1` for the core group.
    pub(super) fn group_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

/// One watched kind, typed: how an object becomes a view and which map of [`ClusterData`]
/// holds the views.
pub(crate) trait Projection: Send + Sync + 'static {
    const KIND: Kind;
    const API: Source;
    type View: Send + Sync + 'static;

    /// The compact view of an object, or None when Lookout does not need it.
    fn project(
        cluster: &str,
        meta: &ObjectMeta,
        data: &Value,
        strings: &mut Interner,
    ) -> Option<Self::View>;

    fn views(data: &ClusterData) -> &Views<Self::View>;

    fn views_mut(data: &mut ClusterData) -> &mut Views<Self::View>;

    /// What the history records of a view as it now is (or was, when `deleted`); None for
    /// kinds the history does not keep.
    fn history(
        _cluster: &str,
        _view: &Arc<Self::View>,
        _deleted: bool,
        _data: &ClusterData,
    ) -> Option<HistoryEvent> {
        None
    }

    /// What the history keeps of this kind.
    const KEPT: Kept = Kept::Nothing;
}

/// What the history keeps of a kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kept {
    Nothing,
    /// Each state a live object is seen in (a Certificate's readiness).
    States,
    /// Each state, and when the object was deleted: after a relist the history learns which
    /// of them went unseen.
    Objects,
}

/// What the watcher needs of a kind, without its types (one watcher serves every kind).
pub(crate) trait Watched: Send + Sync {
    fn kind(&self) -> Kind;
    fn api(&self) -> Source;
    /// Projects `obj` into `data`; false when it was skipped (not needed).
    fn apply(
        &self,
        cluster: &str,
        data: &mut ClusterData,
        obj: &Object,
        strings: &mut Interner,
    ) -> bool;
    /// Removes a deleted object.
    fn remove(&self, data: &mut ClusterData, obj: &Object);
    /// Moves this kind's views from a finished relist into the live data. The map is rebuilt
    /// in bulk on the way: filled one insert at a time in key order (as a list arrives) its
    /// B-tree nodes are a little over half full; built in bulk they are full.
    fn replace(&self, data: &mut ClusterData, relisted: &mut ClusterData);
    /// How many objects of this kind are cached.
    fn count(&self, data: &ClusterData) -> usize;
    /// The history event of `obj`: its view as cached in `cached` (one projection serves the
    /// cache and the history), or, once deleted and no longer cached, a fresh projection.
    /// `live` is the cluster's current data, for what the event adds from other kinds.
    fn history(
        &self,
        cluster: &str,
        obj: &Object,
        deleted: bool,
        cached: &ClusterData,
        live: &ClusterData,
    ) -> Option<HistoryEvent>;
    /// What the history keeps of this kind.
    fn kept(&self) -> Kept;
}

/// A [`Projection`] as a [`Watched`] kind.
struct Of<P>(PhantomData<P>);

impl<P: Projection> Watched for Of<P> {
    fn kind(&self) -> Kind {
        P::KIND
    }

    fn api(&self) -> Source {
        P::API
    }

    fn apply(
        &self,
        cluster: &str,
        data: &mut ClusterData,
        obj: &Object,
        strings: &mut Interner,
    ) -> bool {
        // The views, their strings and map entries stay: allocated apart (see memory::cached).
        crate::memory::cached(|| {
            let view = P::project(cluster, &obj.metadata, &obj.data, strings);
            let k = key(obj, strings);
            let views = P::views_mut(data);
            match view {
                Some(v) => {
                    views.insert(k, Arc::new(v));
                    true
                }
                None => {
                    views.remove(&k);
                    false
                }
            }
        })
    }

    fn remove(&self, data: &mut ClusterData, obj: &Object) {
        drop(P::views_mut(data).remove(&lookup(obj)));
    }

    fn replace(&self, data: &mut ClusterData, relisted: &mut ClusterData) {
        let fresh = std::mem::take(P::views_mut(relisted));
        *P::views_mut(data) = crate::memory::cached(|| fresh.into_iter().collect());
    }

    fn count(&self, data: &ClusterData) -> usize {
        P::views(data).len()
    }

    fn history(
        &self,
        cluster: &str,
        obj: &Object,
        deleted: bool,
        cached: &ClusterData,
        live: &ClusterData,
    ) -> Option<HistoryEvent> {
        match P::KEPT {
            Kept::Nothing => return None,
            Kept::States if deleted => return None,
            Kept::States | Kept::Objects => {}
        }
        let view = if deleted {
            let mut strings = Interner::default();
            Arc::new(P::project(cluster, &obj.metadata, &obj.data, &mut strings)?)
        } else {
            P::views(cached).get(&lookup(obj))?.clone()
        };
        P::history(cluster, &view, deleted, live)
            .map(|e| e.at_revision(obj.metadata.resource_version.as_deref()))
    }

    fn kept(&self) -> Kept {
        P::KEPT
    }
}

/// The key of an object, sharing the interned namespace and name with its view.
fn key(obj: &Object, strings: &mut Interner) -> Key {
    (
        strings.get(obj.metadata.namespace.as_deref().unwrap_or_default()),
        strings.get(obj.metadata.name.as_deref().unwrap_or_default()),
    )
}

/// The key of an object, for a lookup.
fn lookup(obj: &Object) -> Key {
    lookout_app::model::data::key(
        obj.metadata.namespace.as_deref().unwrap_or_default(),
        obj.metadata.name.as_deref().unwrap_or_default(),
    )
}

/// Why an object cannot be cached at all, if it cannot: without a name it has no key.
/// Everything else is projected as far as it goes (a malformed field becomes empty).
pub(super) fn unusable(obj: &Object) -> Option<&'static str> {
    match obj.metadata.name.as_deref() {
        None | Some("") => Some("no metadata.name"),
        Some(_) => None,
    }
}

mod object;
mod policies;
mod projections;

pub(crate) use object::Object;

pub(crate) use projections::WATCHED;

/// How many kinds each cluster watches.
pub fn watched_kinds() -> usize {
    WATCHED.len()
}

/// The watched kind `kind`.
#[cfg(test)]
pub(crate) fn watched(kind: Kind) -> &'static dyn Watched {
    *WATCHED
        .iter()
        .find(|w| w.kind() == kind)
        .expect("every kind is watched")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_watched_once() {
        let mut watched: Vec<Kind> = WATCHED.iter().map(|w| w.kind()).collect();
        watched.sort();
        assert_eq!(watched, Kind::ALL);
    }

    fn object(v: serde_json::Value) -> Object {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn only_an_object_without_a_name_is_unusable() {
        let nameless = object(serde_json::json!({"metadata": {"namespace": "x"}}));
        assert_eq!(unusable(&nameless), Some("no metadata.name"));
        let empty = object(serde_json::json!({"metadata": {"name": ""}}));
        assert_eq!(unusable(&empty), Some("no metadata.name"));
        // Everything else is projected as far as it goes, however odd the rest.
        let odd = object(serde_json::json!({"metadata": {"name": "ok"}, "spec": 7, "status": "?"}));
        assert_eq!(unusable(&odd), None);
        let mut data = ClusterData::default();
        let mut strings = Interner::default();
        let ingresses = watched(Kind::Ingress);
        assert!(ingresses.apply("c", &mut data, &odd, &mut strings));
        assert_eq!(ingresses.count(&data), 1);
    }
}

#[cfg(test)]
mod fuzz;

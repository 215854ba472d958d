//! One cluster's cache: the projected views of every watched kind, the strings they share,
//! the lists in progress, and the change counters that key what is derived from them. Only
//! the record's [`apply`](super::record::ClusterRecord::apply) changes it (and the probe
//! worker, which sets what it saw of the hosts).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};

use lookout_app::model::data::ClusterData;
use lookout_app::model::interner::Interner;
use lookout_app::model::read::Visibility;
use lookout_app::model::text::Uid;
use lookout_app::model::Kind;

/// A list in progress: filled as its pages arrive, swapped in whole when it is complete, so
/// pages never see half a list.
#[derive(Default)]
pub(super) struct Relist {
    pub(super) data: ClusterData,
    /// Objects the projection did not keep (not needed).
    pub(super) skipped: usize,
    /// UIDs seen, for the history's deletions (kinds whose objects it records).
    pub(super) live: Vec<Uid>,
    /// When the list began.
    pub(super) started: Option<chrono::DateTime<chrono::Utc>>,
}

/// See [`Cache::changes`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Changes {
    pub(super) epoch: u64,
    pub(super) namespaces: HashMap<String, u64>,
}

impl Changes {
    /// The generation of the cluster-scoped objects.
    pub(super) fn cluster_scoped(&self) -> u64 {
        self.namespaces.get("").copied().unwrap_or_default()
    }
}

#[derive(Default)]
pub(super) struct Cache {
    data: RwLock<ClusterData>,
    /// Shared copies of the strings the views repeat.
    strings: Mutex<Interner>,
    /// Each kind's list in progress.
    relists: Mutex<BTreeMap<Kind, Relist>>,
    /// Bumped on every change of data or state; keys the derived data.
    generation: AtomicU64,
    /// Changes per namespace ("" for cluster-scoped objects), and of everything at once
    /// (relists, sync state): what a namespace-scoped caller's live revision is made of, so
    /// that it does not move with other namespaces' activity.
    namespace_generations: Mutex<HashMap<String, u64>>,
    /// Changes per cluster-scoped object (a ClusterIssuer, an IngressClass) and per platform
    /// ConfigMap: a namespace-scoped caller's revision follows only those its own objects
    /// reach (and the platform's configuration, which judges everyone's).
    object_generations: Mutex<HashMap<(Kind, String), u64>>,
    epoch: AtomicU64,
}

impl Cache {
    /// Reads the cached data.
    pub(super) fn read<T>(&self, f: impl FnOnce(&ClusterData) -> T) -> T {
        f(&self.data.read().expect("data lock"))
    }

    /// Changes the cached data with the interner at hand (projections) and bumps the
    /// generation; the caller says afterwards what changed ([`Cache::touch_namespace`],
    /// [`Cache::touch_all`]).
    pub(super) fn write<T>(&self, f: impl FnOnce(&mut ClusterData, &mut Interner) -> T) -> T {
        let mut strings = self.strings.lock().expect("interner lock");
        let out = f(&mut self.data.write().expect("data lock"), &mut strings);
        self.generation.fetch_add(1, Ordering::Release);
        out
    }

    /// Runs `f` on `kind`'s list in progress (started if there is none) with the interner and
    /// the live data at hand.
    pub(super) fn relist<T>(
        &self,
        kind: Kind,
        f: impl FnOnce(&mut Relist, &mut Interner, &ClusterData) -> T,
    ) -> T {
        let mut relists = self.relists.lock().expect("relists lock");
        let mut strings = self.strings.lock().expect("interner lock");
        let live = self.data.read().expect("data lock");
        f(relists.entry(kind).or_default(), &mut strings, &live)
    }

    /// Forgets `kind`'s list in progress (a new list starts).
    pub(super) fn drop_relist(&self, kind: Kind) {
        self.relists.lock().expect("relists lock").remove(&kind);
    }

    /// Takes `kind`'s completed list out (empty when none was started).
    pub(super) fn take_relist(&self, kind: Kind) -> Relist {
        self.relists
            .lock()
            .expect("relists lock")
            .remove(&kind)
            .unwrap_or_default()
    }

    /// Forgets interned strings no view uses any more (after a relist).
    pub(super) fn prune_strings(&self) {
        self.strings.lock().expect("interner lock").prune();
    }

    /// Something changed that is not in the data (the sync state): the derived data is
    /// computed again.
    pub(super) fn bump(&self) {
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// The generation of the data and state.
    pub(super) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// An object of `namespace` (None: cluster-scoped) changed. Moves the generation again:
    /// derived data computed between the write and this call is computed again, with the
    /// namespace among those that changed.
    pub(super) fn touch_namespace(&self, namespace: Option<&str>) {
        *self
            .namespace_generations
            .lock()
            .expect("namespace generations lock")
            .entry(namespace.unwrap_or_default().to_string())
            .or_default() += 1;
        self.bump();
    }

    /// The cluster-scoped object (or platform ConfigMap) `kind`/`name` changed; also call
    /// [`Cache::touch_namespace`] with None.
    pub(super) fn touch_cluster_object(&self, kind: Kind, name: &str) {
        *self
            .object_generations
            .lock()
            .expect("object generations lock")
            .entry((kind, name.to_string()))
            .or_default() += 1;
    }

    /// Everything may have changed (a relist, a sync state).
    pub(super) fn touch_all(&self) {
        self.epoch.fetch_add(1, Ordering::Release);
        self.bump();
    }

    /// What has changed where, as counters: the epoch (everything at once) and each
    /// namespace's generation ("" for cluster-scoped objects). Read before the data they
    /// describe: data read afterwards is at least as new.
    pub(super) fn changes(&self) -> Changes {
        let epoch = self.epoch.load(Ordering::Acquire);
        let namespaces = self
            .namespace_generations
            .lock()
            .expect("namespace generations lock")
            .clone();
        Changes { epoch, namespaces }
    }

    /// A number that moves when something `visible` sees changes: the whole generation for
    /// who sees all of the cluster; else its epoch, the generations of the visible namespaces,
    /// and those of the cluster-scoped objects its objects reach
    /// ([`Visibility::cluster_scoped_reached`]) and of the platform's ConfigMaps — not
    /// another tenant's ClusterIssuer.
    pub(super) fn visible_generation(&self, visible: &Visibility<'_>) -> u64 {
        use std::hash::{Hash, Hasher};
        if visible.whole_cluster() {
            return self.generation();
        }
        let reached = self.read(|d| visible.cluster_scoped_reached(d));
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.epoch.load(Ordering::Acquire).hash(&mut h);
        {
            let gens = self
                .namespace_generations
                .lock()
                .expect("namespace generations lock");
            let mut seen: Vec<(&String, &u64)> = gens
                .iter()
                .filter(|(ns, _)| !ns.is_empty() && visible.namespace(ns))
                .collect();
            seen.sort();
            seen.hash(&mut h);
        }
        let objects = self
            .object_generations
            .lock()
            .expect("object generations lock");
        let mut seen: Vec<(&(Kind, String), &u64)> = objects
            .iter()
            .filter(|((kind, name), _)| {
                *kind == Kind::ConfigMap || reached.iter().any(|(k, n)| k == kind && **n == **name)
            })
            .collect();
        seen.sort();
        seen.hash(&mut h);
        h.finish()
    }
}

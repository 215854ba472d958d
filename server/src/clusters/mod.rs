//! The cluster registry: one record per configured cluster, each with its own kube client,
//! watchers, sync state and cached views. Clusters fail independently.

mod watch;

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use chrono::{DateTime, Utc};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::Client;
use lookout_app::model::{
    ClusterView, IngressView, KindState, KindStatus, ObjectKey, Page, Scope, SyncState,
};
use lookout_app::ports::{FleetReader, IngressQuery};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::config::ClusterConfig;
use crate::store::sync_events::SyncEvent;

/// How a cluster is reached: a client, or why none could be built.
pub struct ClusterSource {
    pub name: String,
    pub client: Result<Client, String>,
}

/// Builds a kube client for each configured cluster; a bad one is reported, not fatal.
pub async fn connect(configs: &[ClusterConfig]) -> Vec<ClusterSource> {
    let mut out = Vec::new();
    for c in configs {
        let client = build_client(c).await;
        if let Err(e) = &client {
            tracing::error!(cluster = %c.name, error = %e, "cannot build a client for this cluster");
        }
        out.push(ClusterSource {
            name: c.name.clone(),
            client,
        });
    }
    out
}

async fn build_client(c: &ClusterConfig) -> Result<Client, String> {
    let mut config = if c.in_cluster {
        kube::Config::incluster().map_err(|e| format!("in-cluster configuration: {e}"))?
    } else {
        let path = c.kubeconfig.as_ref().ok_or("no kubeconfig configured")?;
        let kubeconfig =
            Kubeconfig::read_from(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        let options = KubeConfigOptions {
            context: c.context.clone(),
            ..Default::default()
        };
        kube::Config::from_custom_kubeconfig(kubeconfig, &options)
            .await
            .map_err(|e| {
                format!(
                    "kubeconfig {} context {:?}: {e}",
                    path.display(),
                    c.context.as_deref().unwrap_or("(current)")
                )
            })?
    };
    config.connect_timeout = Some(Duration::from_secs(10));
    Client::try_from(config).map_err(|e| format!("building the client: {e}"))
}

/// What is known about one cluster's sync.
#[derive(Debug)]
struct SyncRecord {
    state: SyncState,
    last_sync: Option<DateTime<Utc>>,
    last_error: Option<String>,
    kinds: BTreeMap<&'static str, KindStatus>,
}

/// One configured cluster.
pub struct ClusterRecord {
    pub name: String,
    sync: RwLock<SyncRecord>,
    /// Ingresses by (namespace, name), projected as they arrive.
    ingresses: RwLock<BTreeMap<(String, String), Arc<IngressView>>>,
    events: mpsc::Sender<SyncEvent>,
}

impl ClusterRecord {
    fn new(name: String, events: mpsc::Sender<SyncEvent>) -> Self {
        ClusterRecord {
            name,
            sync: RwLock::new(SyncRecord {
                state: SyncState::Connecting,
                last_sync: None,
                last_error: None,
                kinds: BTreeMap::new(),
            }),
            ingresses: RwLock::new(BTreeMap::new()),
            events,
        }
    }

    /// Changes the state of one kind and recomputes the cluster's state from all kinds.
    fn set_kind(&self, kind: &'static str, state: KindState, objects: usize) {
        let now = Utc::now();
        let mut s = self.sync.write().expect("sync lock");
        if let KindState::Error { error } = &state {
            s.last_error = Some(error.clone());
        }
        s.kinds.insert(
            kind,
            KindStatus {
                kind: kind.to_string(),
                state,
                objects,
            },
        );
        let error = s.kinds.values().find_map(|k| match &k.state {
            KindState::Error { error } => Some(error.clone()),
            _ => None,
        });
        let all_synced = s
            .kinds
            .values()
            .all(|k| matches!(k.state, KindState::Synced | KindState::NotInstalled));
        let next = match (error, s.last_sync) {
            (Some(error), Some(since)) => SyncState::Stale { since, error },
            (Some(error), None) => SyncState::Failed { error },
            (None, _) if all_synced => SyncState::Synced,
            (None, _) => s.state.clone(),
        };
        if matches!(next, SyncState::Synced) {
            s.last_sync = Some(now);
        }
        if std::mem::discriminant(&next) != std::mem::discriminant(&s.state) {
            tracing::info!(cluster = %self.name, from = s.state.label(), to = next.label(), "cluster sync state changed");
            let error = match &next {
                SyncState::Stale { error, .. } | SyncState::Failed { error } => Some(error.clone()),
                _ => None,
            };
            let ev = SyncEvent {
                cluster: self.name.clone(),
                state: next.label(),
                error,
                at: now,
            };
            if let Err(e) = self.events.try_send(ev) {
                tracing::warn!(cluster = %self.name, error = %e, "the sync-event writer is behind; this state change is not recorded");
            }
        }
        s.state = next;
    }

    /// Marks the data as current (an event arrived on a healthy watch).
    fn touch(&self) {
        let mut s = self.sync.write().expect("sync lock");
        if matches!(s.state, SyncState::Synced) {
            s.last_sync = Some(Utc::now());
        }
    }

    fn fail(&self, error: String) {
        self.set_kind("Cluster", KindState::Error { error }, 0);
    }

    fn view(&self, scope: &Scope) -> ClusterView {
        let s = self.sync.read().expect("sync lock");
        let ingresses = self
            .ingresses
            .read()
            .expect("ingress lock")
            .keys()
            .filter(|(ns, _)| scope.sees(&self.name, ns))
            .count();
        ClusterView {
            name: self.name.clone(),
            state: s.state.clone(),
            last_sync: s.last_sync,
            last_error: s.last_error.clone(),
            kinds: s
                .kinds
                .values()
                .filter(|k| k.kind != "Cluster")
                .cloned()
                .collect(),
            ingresses,
        }
    }

    /// Whether the first sync attempt has ended.
    pub fn settled(&self) -> bool {
        self.sync.read().expect("sync lock").state.settled()
    }
}

/// Every configured cluster, in configuration order.
pub struct Registry {
    clusters: Vec<Arc<ClusterRecord>>,
    tasks: std::sync::Mutex<Vec<JoinHandle<()>>>,
}

impl Registry {
    /// Starts the watchers of every cluster that has a client.
    pub fn start(
        sources: Vec<ClusterSource>,
        events: mpsc::Sender<SyncEvent>,
        shutdown: CancellationToken,
    ) -> Arc<Registry> {
        let mut clusters = Vec::new();
        let mut tasks = Vec::new();
        for source in sources {
            let record = Arc::new(ClusterRecord::new(source.name.clone(), events.clone()));
            match source.client {
                Ok(client) => {
                    record.set_kind("Ingress", KindState::Listing, 0);
                    tasks.push(tokio::spawn(watch::ingresses(
                        record.clone(),
                        client,
                        shutdown.clone(),
                    )));
                }
                Err(e) => record.fail(e),
            }
            clusters.push(record);
        }
        Arc::new(Registry {
            clusters,
            tasks: std::sync::Mutex::new(tasks),
        })
    }

    /// Ready once every cluster has synced or failed at least once.
    pub fn ready(&self) -> bool {
        self.clusters.iter().all(|c| c.settled())
    }

    /// Names of clusters that are not settled yet, for `/readyz`.
    pub fn pending(&self) -> Vec<String> {
        self.clusters
            .iter()
            .filter(|c| !c.settled())
            .map(|c| c.name.clone())
            .collect()
    }

    /// Waits for every watcher to end (after the shutdown token was cancelled).
    pub async fn stopped(&self) {
        let tasks: Vec<JoinHandle<()>> =
            std::mem::take(&mut *self.tasks.lock().expect("task lock"));
        for t in tasks {
            if let Err(e) = t.await {
                tracing::error!(error = %e, "a watcher task ended abnormally");
            }
        }
    }

    fn visible(&self, scope: &Scope) -> impl Iterator<Item = &Arc<ClusterRecord>> {
        let scope = scope.clone();
        self.clusters
            .iter()
            .filter(move |c| scope.sees_cluster(&c.name))
    }
}

impl FleetReader for Registry {
    fn clusters(&self, scope: &Scope) -> Vec<ClusterView> {
        self.visible(scope).map(|c| c.view(scope)).collect()
    }

    fn ingresses(&self, scope: &Scope, query: &IngressQuery) -> Page<IngressView> {
        let mut all = Vec::new();
        for c in self.visible(scope) {
            if query.cluster.as_ref().is_some_and(|q| q != &c.name) {
                continue;
            }
            let map = c.ingresses.read().expect("ingress lock");
            for ((ns, _), view) in map.iter() {
                if !scope.sees(&c.name, ns) || query.namespace.as_ref().is_some_and(|q| q != ns) {
                    continue;
                }
                if query.q.as_ref().is_some_and(|q| !view.matches_text(q)) {
                    continue;
                }
                all.push(view.as_ref().clone());
            }
        }
        Page::of(all, query.page.max(1), query.per_page.max(1))
    }

    fn ingress(&self, scope: &Scope, key: &ObjectKey) -> Option<IngressView> {
        if !scope.sees(&key.cluster, &key.namespace) {
            return None;
        }
        let c = self.clusters.iter().find(|c| c.name == key.cluster)?;
        let map = c.ingresses.read().expect("ingress lock");
        map.get(&(key.namespace.clone(), key.name.clone()))
            .map(|v| v.as_ref().clone())
    }
}

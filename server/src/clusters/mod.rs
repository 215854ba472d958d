//! The cluster registry: one record per configured cluster, each with its own kube client,
//! one watcher per kind, sync state and cached views. Clusters fail independently.

pub(crate) mod access;
mod cache;
mod client;
mod complaints;
mod counters;
mod derived;
mod kinds;
pub(crate) mod probes;
pub(crate) mod read;
mod record;
mod stream;
mod sync;
mod watch;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::Client;
use lookout_app::model::data::ClusterOverrides;
use lookout_app::model::thresholds::Thresholds;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use kinds::watched_kinds;
pub(crate) use record::ClusterRecord;

use crate::clock::Now;
use crate::config::ClusterConfig;
use lookout_app::model::cluster::SyncEvent;
use lookout_app::model::history::HistoryEvent;

/// An error with its causes, as far as its own words do not say them already: a client's
/// `client error (Connect)` alone does not tell a refused connection from an unknown CA.
pub(crate) fn with_causes(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let said = cause.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        source = cause.source();
    }
    text
}

/// How a cluster is reached: a client, or why none could be built.
pub struct ClusterSource {
    pub name: String,
    pub client: Result<Client, String>,
    pub overrides: ClusterOverrides,
}

/// Builds a kube client for each configured cluster; a bad one is reported, not fatal.
pub async fn connect(configs: &[ClusterConfig]) -> Vec<ClusterSource> {
    let mut kubeconfigs = Kubeconfigs::default();
    let mut out = Vec::new();
    for c in configs {
        let client = client_with(c, &mut kubeconfigs).await;
        if let Err(e) = &client {
            tracing::error!(cluster = %c.name, error = %e, "cannot build a client for this cluster");
        }
        out.push(ClusterSource {
            name: c.name.clone(),
            client,
            overrides: c.overrides(),
        });
    }
    out
}

pub(crate) async fn build_client(c: &ClusterConfig) -> Result<Client, String> {
    client_with(c, &mut Kubeconfigs::default()).await
}

/// Kubeconfig files read once each. A fleet's clusters are often contexts of one file: read
/// and parsed per cluster, 300 contexts cost 300 parses of a file that lists all 300 (a
/// second of a fleet's start).
#[derive(Default)]
struct Kubeconfigs(HashMap<PathBuf, Result<Kubeconfig, String>>);

impl Kubeconfigs {
    /// The file at `path` with only `context` (its current context when None), that context's
    /// cluster and its user: what kube reads of it for one client.
    fn for_context(&mut self, path: &Path, context: Option<&str>) -> Result<Kubeconfig, String> {
        let whole = self.0.entry(path.to_path_buf()).or_insert_with(|| {
            Kubeconfig::read_from(path).map_err(|e| format!("reading {}: {e}", path.display()))
        });
        let whole = whole.as_ref().map_err(Clone::clone)?;
        let Some(name) = context.or(whole.current_context.as_deref()) else {
            // kube says what is missing.
            return Ok(whole.clone());
        };
        let contexts: Vec<_> = whole
            .contexts
            .iter()
            .filter(|c| c.name == name)
            .cloned()
            .collect();
        let wanted = |field: fn(&kube::config::Context) -> Option<&str>, of: &str| {
            contexts
                .iter()
                .filter_map(|c| c.context.as_ref())
                .any(|c| field(c) == Some(of))
        };
        Ok(Kubeconfig {
            clusters: (whole.clusters.iter())
                .filter(|c| wanted(|c| Some(c.cluster.as_str()), &c.name))
                .cloned()
                .collect(),
            auth_infos: (whole.auth_infos.iter())
                .filter(|u| wanted(|c| c.user.as_deref(), &u.name))
                .cloned()
                .collect(),
            contexts,
            preferences: whole.preferences.clone(),
            current_context: whole.current_context.clone(),
            extensions: whole.extensions.clone(),
            kind: whole.kind.clone(),
            api_version: whole.api_version.clone(),
            other: whole.other.clone(),
        })
    }
}

async fn client_with(c: &ClusterConfig, kubeconfigs: &mut Kubeconfigs) -> Result<Client, String> {
    let mut config = if c.in_cluster {
        kube::Config::incluster().map_err(|e| format!("in-cluster configuration: {e}"))?
    } else {
        let path = c.kubeconfig.as_ref().ok_or("no kubeconfig configured")?;
        let kubeconfig = kubeconfigs.for_context(path, c.context.as_deref())?;
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
    // kube's built-in retry answers 429, 503 and 504 by retrying the same request up to 15
    // times with a delay growing to 1000 s, out of sight: a watch would sit in it for hours
    // (e.g. resuming from a version the server no longer has: 504 ResourceVersionTooLarge)
    // while its kind looked synced, and an action would hang. The watchers back off and
    // honour Retry-After themselves, with the error shown; an action reports it at once.
    config.default_retry = false;
    client::build(config)
}

/// How the watchers behave.
#[derive(Clone)]
pub struct WatchSettings {
    pub thresholds: Thresholds,
    /// How often an absent CRD is looked for again.
    pub crd_recheck: Duration,
    /// How long a list or discovery may go unanswered before the kind is in error (the
    /// request itself goes on: kube's read timeout is minutes, for watches).
    pub list_timeout: Duration,
    /// The clock of rules, sync times, history and pages.
    pub now: Now,
    /// How long the ACME history is kept.
    pub history_retention: chrono::Duration,
    /// How often the Let's Encrypt budgets are recomputed from the history.
    pub budget_interval: Duration,
    /// How long a cluster's findings are served unchanged when its data did not change;
    /// after that they are recomputed in the background (time-based rules move on).
    pub findings_ttl: Duration,
    /// How many kinds may relist at a time across the fleet (see [`watch::RelistGate`]).
    pub relist_concurrency: usize,
}

impl Default for WatchSettings {
    fn default() -> Self {
        WatchSettings {
            thresholds: Thresholds::default(),
            crd_recheck: Duration::from_secs(300),
            list_timeout: Duration::from_secs(60),
            now: crate::clock::wall_clock(),
            history_retention: chrono::Duration::days(180),
            budget_interval: Duration::from_secs(30),
            findings_ttl: Duration::from_secs(5),
            relist_concurrency: 8,
        }
    }
}

/// Lists one Ingress every `list_timeout` (at most every 15 s): an idle watch on a server
/// that stopped answering would otherwise look healthy forever, and a list reaches the
/// server's storage, which `/version` would not. A probe that fails or gets no answer within
/// `list_timeout` puts the cluster in error; answers restart the watches that need it (see
/// `ClusterRecord::probed`).
async fn probe(
    record: Arc<ClusterRecord>,
    client: Client,
    list_timeout: Duration,
    shutdown: CancellationToken,
) {
    let every = list_timeout.min(Duration::from_secs(15));
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
        let ingresses: kube::Api<k8s_openapi::api::networking::v1::Ingress> =
            kube::Api::all(client.clone());
        let one = kube::api::ListParams::default().limit(1);
        let answer = tokio::select! {
            _ = shutdown.cancelled() => return,
            a = tokio::time::timeout(list_timeout, ingresses.list(&one)) => a,
        };
        record.probed(match answer {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(format!("listing Ingresses failed: {}", with_causes(&e))),
            Err(_) => Err(format!(
                "the API server did not answer a list of Ingresses within {}s (watch.list_timeout)",
                list_timeout.as_secs_f64()
            )),
        });
    }
}

/// Every configured cluster, in configuration order.
pub struct Registry {
    clusters: Vec<Arc<ClusterRecord>>,
    /// The clock pages and rules use.
    pub now: Now,
    /// The history writer's queue, for its depth in `/metrics`.
    history: Option<mpsc::Sender<HistoryEvent>>,
    /// The fleet's Let's Encrypt budgets (their findings are the board's too).
    budgets: Arc<crate::fleet::Budgets>,
    tasks: std::sync::Mutex<Vec<JoinHandle<()>>>,
    /// Relists take turns through it; `/metrics` reads it.
    pub relists: Arc<watch::RelistGate>,
    /// The fleet's change counter: keys [`Whole`].
    changes: crate::fleet::Changes,
    /// What a caller who sees the whole fleet reads on every page, kept briefly.
    whole: std::sync::Mutex<Option<Arc<Whole>>>,
    /// The probe's last round, as its worker reports it.
    pub probes: Arc<probes::ProbeStatus>,
}

/// What a caller who sees everything reads on every page (the sync strip) and the board:
/// made once while the fleet's revision stays, for at most [`WHOLE_FOR`], so that a page's
/// cost does not grow with the number of clusters however many readers there are.
pub(crate) struct Whole {
    revision: u64,
    at: std::time::Instant,
    pub clusters: Arc<Vec<lookout_app::model::ClusterView>>,
    /// Every problem, the fleet's findings joined.
    pub problems: Vec<lookout_app::model::read::problems::Problem>,
}

/// How long [`Whole`] is served while nothing changed (times on it — "synced just now" — move
/// on, and time-based findings are recomputed in the background).
const WHOLE_FOR: Duration = Duration::from_secs(1);

impl Registry {
    /// Starts one watcher per kind for every cluster that has a client.
    pub fn start(
        sources: Vec<ClusterSource>,
        settings: WatchSettings,
        events: mpsc::Sender<SyncEvent>,
        history: Option<mpsc::Sender<HistoryEvent>>,
        fleet: (crate::fleet::Changes, Arc<crate::fleet::Budgets>),
        shutdown: CancellationToken,
    ) -> Arc<Registry> {
        let (changes, budgets) = fleet;
        let thresholds = Arc::new(settings.thresholds);
        let mut clusters = Vec::new();
        let mut tasks = Vec::new();
        let relists = Arc::new(watch::RelistGate::new(settings.relist_concurrency));
        for source in sources {
            let record = Arc::new(
                ClusterRecord::new(
                    source.name.clone(),
                    source.overrides,
                    thresholds.clone(),
                    settings.now.clone(),
                    events.clone(),
                    history.clone(),
                    changes.clone(),
                )
                .with_findings_ttl(settings.findings_ttl),
            );
            match source.client {
                Ok(client) => {
                    for kind in kinds::WATCHED {
                        record.set_kind(kind.kind(), lookout_app::model::KindState::Listing, 0);
                    }
                    tasks.push(tokio::spawn(probe(
                        record.clone(),
                        client.clone(),
                        settings.list_timeout,
                        shutdown.clone(),
                    )));
                    for kind in kinds::WATCHED {
                        tasks.push(tokio::spawn(watch::run(
                            record.clone(),
                            client.clone(),
                            *kind,
                            watch::Timing {
                                crd_recheck: settings.crd_recheck,
                                list_timeout: settings.list_timeout,
                                relists: relists.clone(),
                            },
                            shutdown.clone(),
                        )));
                    }
                }
                Err(e) => record.fail(e),
            }
            clusters.push(record);
        }
        Arc::new(Registry {
            clusters,
            now: settings.now.clone(),
            budgets,
            history,
            tasks: std::sync::Mutex::new(tasks),
            relists,
            changes,
            whole: std::sync::Mutex::new(None),
            probes: Arc::default(),
        })
    }

    /// The whole fleet's clusters and problems as `view` — a caller's who sees everything
    /// ([`read`] asks) — sees them (as any such caller does), made at most once per
    /// revision and second.
    fn whole(&self, view: &lookout_app::model::View) -> Arc<Whole> {
        let revision = self.changes.revision();
        let mut kept = self.whole.lock().expect("whole lock");
        if let Some(w) = kept.as_ref() {
            if w.revision == revision && w.at.elapsed() < WHOLE_FOR {
                return w.clone();
            }
        }
        let w = Arc::new(Whole {
            revision,
            at: std::time::Instant::now(),
            clusters: Arc::new(self.cluster_views(view)),
            problems: self.all_problems(view),
        });
        *kept = Some(w.clone());
        w
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

    /// Events waiting for the history writer.
    pub fn history_queue_depth(&self) -> usize {
        self.history
            .as_ref()
            .map(|tx| tx.max_capacity() - tx.capacity())
            .unwrap_or(0)
    }

    /// Every budget of the fleet, whoever may see it: for the rules and the actions' previews.
    pub fn fleet_budgets(&self) -> Vec<lookout_app::model::budget::Budget> {
        self.budgets.all()
    }

    /// The budgets as `view` may see them (their findings are built from these).
    pub fn budgets_for(
        &self,
        view: &lookout_app::model::View,
    ) -> Vec<lookout_app::model::budget::Budget> {
        lookout_app::ports::BudgetReader::budgets(self.budgets.as_ref(), view)
    }

    /// `tailscale.cert-budget`: new Tailscale hostnames per tailnet, counted across every
    /// cluster (a tailnet's Let's Encrypt budget is shared by all of them).
    pub fn tailnet_findings(&self) -> Vec<lookout_app::model::Finding> {
        let recent: Vec<_> = self
            .clusters
            .iter()
            .flat_map(|c| c.tailnet_ingresses().iter().cloned().collect::<Vec<_>>())
            .collect();
        lookout_app::model::rules::tailscale::findings(&recent)
    }

    /// The whole fleet's view, for Lookout's own fleet-wide work (metrics, the judgement of
    /// whether an action would fail) — never a caller's.
    pub fn whole_fleet(&self) -> lookout_app::model::View {
        lookout_app::model::View::whole_fleet(self.clusters.iter().map(|c| c.name.as_str()))
    }

    /// The cluster names, in configuration order.
    pub fn cluster_names(&self) -> Vec<String> {
        self.clusters.iter().map(|c| c.name.clone()).collect()
    }

    /// The records, in configuration order.
    pub fn records(&self) -> &[Arc<ClusterRecord>] {
        &self.clusters
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kubeconfig file is read once, and each cluster's client sees only its context, that
    /// context's cluster and user: the rest of the file is not copied 300 times.
    #[test]
    fn each_context_gets_its_own_part_of_one_file_read_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kubeconfig");
        std::fs::write(
            &path,
            "apiVersion: v1\nkind: Config\ncurrent-context: a\n\
             clusters:\n- name: ca\n  cluster: {server: 'https://a.example:6443'}\n\
             - name: cb\n  cluster: {server: 'https://b.example:6443'}\n\
             users:\n- name: ua\n  user: {token: ta}\n- name: ub\n  user: {token: tb}\n\
             contexts:\n- name: a\n  context: {cluster: ca, user: ua}\n\
             - name: b\n  context: {cluster: cb, user: ub}\n",
        )
        .unwrap();
        let mut files = Kubeconfigs::default();
        let b = files.for_context(&path, Some("b")).unwrap();
        let names = |k: &Kubeconfig| {
            (
                k.contexts
                    .iter()
                    .map(|c| c.name.clone())
                    .collect::<Vec<_>>(),
                k.clusters
                    .iter()
                    .map(|c| c.name.clone())
                    .collect::<Vec<_>>(),
                k.auth_infos
                    .iter()
                    .map(|u| u.name.clone())
                    .collect::<Vec<_>>(),
            )
        };
        assert_eq!(
            names(&b),
            (vec!["b".into()], vec!["cb".into()], vec!["ub".into()])
        );
        // Without a context: the file's current one.
        let current = files.for_context(&path, None).unwrap();
        assert_eq!(names(&current).0, vec!["a".to_string()]);
        assert_eq!(current.current_context.as_deref(), Some("a"));
        // Read once: the file's later changes are not seen by this start.
        std::fs::remove_file(&path).unwrap();
        assert!(files.for_context(&path, Some("a")).is_ok());
        // A context the file lacks is kube's error, as before.
        let missing = files.for_context(&path, Some("zzz")).unwrap();
        assert!(missing.contexts.is_empty());
        // A file that cannot be read is an error naming it.
        let err = Kubeconfigs::default()
            .for_context(&dir.path().join("absent"), None)
            .unwrap_err();
        assert!(err.contains("absent"), "{err}");
    }
}

//! Watch pipelines: one per kind of each cluster, with kube's default backoff. A watcher turns
//! kube's events into [`Step`]s for its cluster's record, which owns what follows from them;
//! the watcher keeps only the timing (list deadlines, the relist gate, Retry-After, starting
//! over). Every stream carries `cluster` and `kind` in its span; no error is dropped silently.
//! A kind whose CRD is absent has no watch: it is reported as not installed and looked for
//! again periodically.

use std::sync::Arc;
use std::time::Duration;

use crate::clusters::kinds::Object;
use futures::StreamExt;
use kube::runtime::watcher::Event;
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Client};
use lookout_app::model::KindState;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::kinds::{Source, Watched};
use super::record::{ClusterRecord, Step};

/// Objects per page of a list. Each page is read whole and decoded into a tree before its
/// objects are projected, and a fleet starting up has every kind of every cluster listing at
/// once: pages of 100 instead of kube's 500 keep that peak (and the fresh memory the kernel
/// must zero for it) a fifth as large, for a few more requests per list.
const LIST_PAGE: u32 = 100;

/// Whether the API server serves a kind at `api` (its CRD is installed).
async fn served(client: &Client, api: &Source) -> Result<Served, kube::Error> {
    match client.list_api_group_resources(&api.group_version()).await {
        Ok(list) if list.resources.iter().any(|r| r.name == api.plural) => Ok(Served::Yes),
        Ok(_) => Ok(Served::No),
        Err(kube::Error::Api(s)) if s.code == 404 => {
            // Not at our version: is the group there at others?
            let groups = client.list_api_groups().await?;
            let versions: Vec<String> = groups
                .groups
                .iter()
                .filter(|g| g.name == api.group)
                .flat_map(|g| g.versions.iter().map(|v| v.group_version.clone()))
                .collect();
            Ok(if versions.is_empty() {
                Served::No
            } else {
                Served::OtherVersions(versions)
            })
        }
        Err(e) => Err(e),
    }
}

/// Whether a CRD-declared kind is served at the version Lookout reads.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Served {
    Yes,
    No,
    /// The group is served at these group/versions only.
    OtherVersions(Vec<String>),
}

/// How one watch run ended.
enum Ended {
    Shutdown,
    /// The kind disappeared (its CRD was deleted).
    Gone,
    /// Start over with fresh requests: a list went unanswered, or the API server answers
    /// again after it did not (requests sent meanwhile may hang for minutes).
    Restart,
}

/// How long the watch of a kind waits for things.
#[derive(Debug, Clone)]
pub(super) struct Timing {
    /// How often an absent CRD is looked for again.
    pub crd_recheck: Duration,
    /// How long a list or discovery may go unanswered before the kind is in error.
    pub list_timeout: Duration,
    /// The fleet-wide limit on relists at a time.
    pub relists: Arc<RelistGate>,
}

/// Limits how many kinds relist at a time across the fleet. A relist holds the kind's new
/// list beside the data it replaces until it is done, so a 410 storm (or a network blip that
/// ends every watch at once) relisting everything together would briefly need up to twice
/// the cache and hit every API server at the same moment; through the gate they take turns.
/// First lists at start do not wait (there is nothing to double).
#[derive(Debug)]
pub struct RelistGate {
    slots: tokio::sync::Semaphore,
    in_progress: std::sync::atomic::AtomicUsize,
    waited: std::sync::atomic::AtomicU64,
}

impl RelistGate {
    pub fn new(slots: usize) -> Self {
        RelistGate {
            slots: tokio::sync::Semaphore::new(slots.max(1)),
            in_progress: Default::default(),
            waited: Default::default(),
        }
    }

    /// Waits for a slot; the relist holds it until the guard is dropped.
    async fn enter(self: &Arc<Self>) -> RelistSlot {
        use std::sync::atomic::Ordering::Relaxed;
        let permit = match self.slots.try_acquire() {
            Ok(p) => p,
            Err(_) => {
                self.waited.fetch_add(1, Relaxed);
                self.slots
                    .acquire()
                    .await
                    .expect("the gate is never closed")
            }
        };
        permit.forget();
        self.in_progress.fetch_add(1, Relaxed);
        RelistSlot(self.clone())
    }

    /// Relists now in progress.
    pub fn in_progress(&self) -> usize {
        self.in_progress.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Relists that had to wait for a slot, since start.
    pub fn waited(&self) -> u64 {
        self.waited.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// A relist's slot in the [`RelistGate`].
struct RelistSlot(Arc<RelistGate>);

impl Drop for RelistSlot {
    fn drop(&mut self) {
        self.0
            .in_progress
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        self.0.slots.add_permits(1);
    }
}

/// Watches one kind of one cluster until `shutdown`.
pub(super) async fn run(
    record: Arc<ClusterRecord>,
    client: Client,
    kind: &'static dyn Watched,
    timing: Timing,
    shutdown: CancellationToken,
) {
    let recheck = timing.crd_recheck;
    let api = kind.api();
    let span = tracing::info_span!("watch", cluster = %record.name, kind = kind.kind().name());
    async move {
        loop {
            if api.crd {
                let discovered = tokio::select! {
                    _ = shutdown.cancelled() => return,
                    d = tokio::time::timeout(timing.list_timeout, Box::pin(served(&client, &api))) => d,
                };
                let discovered = match discovered {
                    Ok(d) => d,
                    Err(_) => {
                        let after = timing.list_timeout;
                        let what = "discovery";
                        Box::pin(record.apply(kind, Step::Unanswered { what, after })).await;
                        Err(kube::Error::Service(
                            "discovery timed out".to_string().into(),
                        ))
                    }
                };
                let absent = match discovered {
                    Ok(Served::Yes) => None,
                    Ok(Served::No) => Some(KindState::NotInstalled),
                    Ok(Served::OtherVersions(served)) => Some(KindState::UnsupportedVersion {
                        reads: api.group_version(),
                        served,
                    }),
                    Err(e) => {
                        // Discovery failed (cluster down): the watcher below reports it and backs off.
                        tracing::debug!(error = %e, "discovery failed; starting the watch anyway");
                        None
                    }
                };
                if let Some(state) = absent {
                    Box::pin(record.apply(kind, Step::Absent(state))).await;
                    tokio::select! {
                        _ = shutdown.cancelled() => return,
                        _ = tokio::time::sleep(recheck) => continue,
                    }
                }
            }
            match Box::pin(watch(&record, &client, kind, &timing, &shutdown)).await {
                Ended::Shutdown => return,
                Ended::Restart => continue,
                // Discovery may still list a kind whose CRD was just deleted: a moment before
                // looking again, not a tight loop of discovery, list and 404.
                Ended::Gone => tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tokio::time::sleep(Duration::from_secs(1)) => continue,
                },
            }
        }
    }
    .instrument(span)
    .await
}

async fn watch(
    record: &Arc<ClusterRecord>,
    client: &Client,
    kind: &'static dyn Watched,
    timing: &Timing,
    shutdown: &CancellationToken,
) -> Ended {
    let spec = kind.api();
    let list_timeout = timing.list_timeout;
    // Held from a relist's start to its end (see RelistGate).
    let mut slot: Option<RelistSlot> = None;
    let ar = spec.resource(kind.kind());
    let api: Api<Object> = match spec.namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    };
    let source = super::stream::Source {
        url_path: <Object as kube::Resource>::url_path(&ar, spec.namespace),
        api,
        client: client.clone(),
        field_selector: spec.field_selector.map(str::to_string),
        page_size: LIST_PAGE,
    };
    let stream = super::stream::watcher(source).default_backoff();
    let mut stream = std::pin::pin!(stream);
    // While a list is in progress: by when its next object must have come; None otherwise.
    // An inactivity limit, not a total one: a slow list of a large cluster keeps going.
    let mut list_deadline = Some(tokio::time::Instant::now() + list_timeout);
    let mut reconnected = record.reconnects();
    loop {
        let event = tokio::select! {
            _ = shutdown.cancelled() => return Ended::Shutdown,
            ev = stream.next() => ev,
            _ = sleep_until(list_deadline) => {
                let (what, after) = ("list", list_timeout);
                Box::pin(record.apply(kind, Step::Unanswered { what, after })).await;
                return Ended::Restart;
            }
            _ = reconnected.changed() => {
                let all = reconnected.borrow_and_update().1;
                if all || matches!(record.kind_state(kind.kind()), Some(KindState::Error { .. })) {
                    return Ended::Restart;
                }
                continue;
            }
        };
        let Some(event) = event else {
            return Ended::Shutdown;
        };
        let step = match &event {
            Ok(Event::Init) => {
                // The list request goes out when the stream is polled next: a relist of a
                // kind that has synced waits for its turn first.
                if slot.is_none()
                    && matches!(
                        record.kind_state(kind.kind()),
                        Some(KindState::Synced | KindState::Error { .. })
                    )
                {
                    slot = tokio::select! {
                        _ = shutdown.cancelled() => return Ended::Shutdown,
                        s = timing.relists.enter() => Some(s),
                    };
                }
                list_deadline = Some(tokio::time::Instant::now() + list_timeout);
                Step::Listing
            }
            Ok(Event::InitApply(obj)) => {
                list_deadline = Some(tokio::time::Instant::now() + list_timeout);
                Step::Listed(obj)
            }
            Ok(Event::InitDone) => {
                list_deadline = None;
                Step::Relisted
            }
            Ok(Event::Apply(obj)) => Step::Applied(obj),
            Ok(Event::Delete(obj)) => Step::Deleted(obj),
            Err(e) if is_gone(e) => {
                // The normal end of a too-old watch: the watcher relists by itself.
                tracing::debug!(error = %e, "resource version expired; relisting");
                continue;
            }
            Err(e) if is_too_large(e) => {
                // The API server's versions went back (restarted on a restored or new etcd):
                // resuming from ours can never succeed, and the watcher would retry it forever.
                tracing::warn!(error = %e, "the API server's resource versions are behind ours; listing again");
                return Ended::Restart;
            }
            Err(e) if spec.crd && is_not_found(e) => {
                tracing::info!("the kind is no longer served");
                return Ended::Gone;
            }
            Err(e) => {
                // The server did answer: the list's inactivity limit starts again, so a real
                // error is not replaced by "no answer" while the watcher backs off.
                list_deadline = list_deadline.map(|_| tokio::time::Instant::now() + list_timeout);
                Step::Failed {
                    logged: super::with_causes(e),
                    shown: describe(e, &spec),
                }
            }
        };
        let relisted = matches!(step, Step::Relisted);
        let failed = matches!(step, Step::Failed { .. });
        Box::pin(record.apply(kind, step)).await;
        if relisted || failed {
            // The old data is replaced: the next relist may start. Or the list failed: the
            // watcher backs off and lists again, taking a turn again, so that a cluster
            // whose lists keep failing does not hold a slot of the gate while it fails.
            slot = None;
        }
        // Waiting for the history writer (a full queue) is not the API server's silence.
        list_deadline = list_deadline.map(|_| tokio::time::Instant::now() + list_timeout);
        if let Some(after) = event.as_ref().err().and_then(retry_after) {
            // The server said when to come back (429); kube's own retry is off (see
            // build_client), so the watcher waits here: no request before that.
            tracing::info!(?after, "throttled; waiting as the API server asked");
            tokio::select! {
                _ = shutdown.cancelled() => return Ended::Shutdown,
                _ = tokio::time::sleep(after) => {}
            }
            list_deadline = list_deadline.map(|_| tokio::time::Instant::now() + list_timeout);
        }
    }
}

/// The API server's answer inside a watcher error, if there is one.
fn status_of(e: &watcher::Error) -> Option<&kube::core::Status> {
    match e {
        watcher::Error::InitialListFailed(kube::Error::Api(s))
        | watcher::Error::WatchStartFailed(kube::Error::Api(s))
        | watcher::Error::WatchFailed(kube::Error::Api(s)) => Some(s),
        watcher::Error::WatchError(s) => Some(s),
        _ => None,
    }
}

/// What a failed watch tells the people who run Lookout. A refusal names the verb and the
/// resource that Lookout's identity lacks, and where its rights are declared, before the API
/// server's own words: "cannot watch certificaterequests.cert-manager.io: forbidden …".
fn describe(e: &watcher::Error, spec: &Source) -> String {
    let Some(status) = status_of(e).filter(|s| s.code == 403) else {
        return super::with_causes(e);
    };
    let verb = match e {
        watcher::Error::InitialListFailed(_) => "list",
        _ => "watch",
    };
    let resource = if spec.group.is_empty() {
        spec.plural.to_string()
    } else {
        format!("{}.{}", spec.plural, spec.group)
    };
    let scope = spec
        .namespace
        .map(|ns| format!(" in namespace {ns}"))
        .unwrap_or_default();
    format!(
        "cannot {verb} {resource}{scope}: forbidden. Lookout needs list and watch on it \
         (deploy/kubernetes/base/rbac-read.yaml; `lookout check-access` lists every missing \
         right). The API server said: {}",
        status.message
    )
}

/// How long a 429 asked the client to wait (`details.retryAfterSeconds`), at most 10 minutes.
fn retry_after(e: &watcher::Error) -> Option<Duration> {
    let status = status_of(e)?;
    let seconds = status.details.as_ref()?.retry_after_seconds;
    (status.code == 429 && seconds > 0).then(|| Duration::from_secs(u64::from(seconds.min(600))))
}

/// Sleeps until `deadline`; forever without one.
async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// A resource version newer than the server's (cause `ResourceVersionTooLarge`).
fn is_too_large(e: &watcher::Error) -> bool {
    status_of(e).is_some_and(|s| {
        s.details.as_ref().is_some_and(|d| {
            d.causes
                .iter()
                .any(|c| c.reason == "ResourceVersionTooLarge")
        }) || s.message.starts_with("Too large resource version")
    })
}

/// A 410 Gone: a watch resumed from a version the server no longer has, or a list's continue
/// token that expired between pages. Either way the watcher lists again by itself.
fn is_gone(e: &watcher::Error) -> bool {
    status_of(e).is_some_and(|s| s.code == 410)
}

fn is_not_found(e: &watcher::Error) -> bool {
    match e {
        watcher::Error::InitialListFailed(kube::Error::Api(s))
        | watcher::Error::WatchStartFailed(kube::Error::Api(s)) => s.code == 404,
        watcher::Error::WatchError(s) => s.code == 404,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(v: serde_json::Value) -> Box<kube::core::Status> {
        Box::new(serde_json::from_value(v).unwrap())
    }

    #[tokio::test(start_paused = true)]
    async fn relists_take_turns_through_the_gate() {
        let gate = Arc::new(RelistGate::new(2));
        let most = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let started = tokio::time::Instant::now();
        let relists: Vec<_> = (0..5)
            .map(|_| {
                let (gate, most) = (gate.clone(), most.clone());
                tokio::spawn(async move {
                    let _slot = gate.enter().await;
                    most.fetch_max(gate.in_progress(), std::sync::atomic::Ordering::Relaxed);
                    // A relist that takes a second.
                    tokio::time::sleep(Duration::from_secs(1)).await;
                })
            })
            .collect();
        for r in relists {
            r.await.unwrap();
        }
        assert_eq!(most.load(std::sync::atomic::Ordering::Relaxed), 2);
        assert_eq!(gate.waited(), 3, "three had to wait for a slot");
        assert_eq!(gate.in_progress(), 0, "every slot is given back");
        assert_eq!(
            started.elapsed(),
            Duration::from_secs(3),
            "two at a time: three rounds"
        );
    }

    /// Every watch of every cluster is a task for as long as Lookout runs (3,600 of them at
    /// 300 clusters), and a task's future is as large as the most any of its awaits holds:
    /// the parts that live briefly — discovery, a step handed to the record, the watch
    /// between two restarts — are boxed, so an idle watch holds only what it waits on.
    #[tokio::test]
    async fn a_watch_task_holds_little_while_it_waits() {
        let record = Arc::new(ClusterRecord::new(
            "zrh".into(),
            Default::default(),
            Default::default(),
            crate::clock::wall_clock(),
            tokio::sync::mpsc::channel(16).0,
            None,
            Default::default(),
        ));
        let client =
            Client::try_from(kube::Config::new("http://127.0.0.1:1".parse().unwrap())).unwrap();
        let timing = Timing {
            crd_recheck: Duration::from_secs(60),
            list_timeout: Duration::from_secs(60),
            relists: Arc::new(RelistGate::new(2)),
        };
        let shutdown = CancellationToken::new();
        for kind in super::super::kinds::WATCHED {
            let task = run(
                record.clone(),
                client.clone(),
                *kind,
                Timing {
                    relists: timing.relists.clone(),
                    ..timing
                },
                shutdown.clone(),
            );
            let watching = watch(&record, &client, *kind, &timing, &shutdown);
            // Sizes in a test (debug) build; a release build's are larger (10,280 bytes for
            // the task before the boxing, in this compiler).
            let (task, watching) = (
                std::mem::size_of_val(&task),
                std::mem::size_of_val(&watching),
            );
            assert!(
                task <= 1024,
                "a watch task holds {task} bytes while it waits"
            );
            assert!(
                watching <= 3400,
                "a watch holds {watching} bytes while it waits"
            );
        }
    }

    #[test]
    fn a_429_says_how_long_to_wait_and_nothing_else_does() {
        let throttled =
            status(serde_json::json!({"code": 429, "details": {"retryAfterSeconds": 3}}));
        let e = watcher::Error::InitialListFailed(kube::Error::Api(throttled.clone()));
        assert_eq!(retry_after(&e), Some(Duration::from_secs(3)));
        assert_eq!(
            retry_after(&watcher::Error::WatchError(throttled)),
            Some(Duration::from_secs(3))
        );
        let huge =
            status(serde_json::json!({"code": 429, "details": {"retryAfterSeconds": 86400}}));
        assert_eq!(
            retry_after(&watcher::Error::WatchError(huge)),
            Some(Duration::from_secs(600))
        );
        let no_details = status(serde_json::json!({"code": 429}));
        assert_eq!(retry_after(&watcher::Error::WatchError(no_details)), None);
        let other = status(serde_json::json!({"code": 500, "details": {"retryAfterSeconds": 3}}));
        assert_eq!(retry_after(&watcher::Error::WatchError(other)), None);
        assert_eq!(retry_after(&watcher::Error::NoResourceVersion), None);
    }
}

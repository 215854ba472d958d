//! What each cluster's own authorizer lets a signed-in person do (`auth.access_source =
//! "kubernetes"` or `"both"`), asked with `SubjectAccessReview` for their user and groups —
//! the question `kubectl auth can-i --as … --as-group …` asks, answered by whatever
//! authorizes that cluster (RBAC, a webhook), without Lookout holding impersonation rights.
//!
//! Per cluster: may they `list` Ingresses and Certificates cluster-wide? Then they see the
//! whole cluster. Else, namespace by namespace among the namespaces that hold an Ingress or a
//! Certificate Lookout watches (a namespace without either shows nothing anyway) and where a
//! RoleBinding names the person, one of their groups or `system:authenticated` (the
//! cluster's RoleBindings are listed once per TTL for everyone; where Lookout may not list
//! them, every such namespace is asked about): they see those where both are allowed. They may act where they may also `patch` Ingresses and
//! Certificates, `update` `certificates/status` and `delete` CertificateRequests — what
//! Lookout's actions write. A cluster that cannot answer (unreachable, or Lookout may not
//! create SubjectAccessReviews) grants nothing, and the reason is kept to be shown.
//!
//! Requests arriving together for a person not yet asked about (a page, its live stream)
//! share one round of questions. Answers are kept per person (user and groups) for
//! `auth.access_ttl`; one older than half
//! of it is asked again in the background while the kept one serves, so a page waits on
//! reviews only for a person's first page (or after a pause longer than the TTL). At most
//! `auth.access_reviews_in_flight` reviews are open at once, over all clusters.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::api::{Api, ListParams, PostParams};
use kube::Client;
use lookout_app::model::view::{Namespaces, Sight};
use tokio::sync::Semaphore;

use crate::clusters::Registry;

/// One question: a verb on a resource (group, resource, subresource).
#[derive(Debug, Clone, Copy)]
struct Question {
    verb: &'static str,
    group: &'static str,
    resource: &'static str,
    subresource: &'static str,
}

const fn q(verb: &'static str, group: &'static str, resource: &'static str) -> Question {
    Question {
        verb,
        group,
        resource,
        subresource: "",
    }
}

/// What seeing a namespace takes.
const READ: [Question; 2] = [
    q("list", "networking.k8s.io", "ingresses"),
    q("list", "cert-manager.io", "certificates"),
];

/// What acting there takes: what the fix, renew and restart write.
const ACT: [Question; 4] = [
    q("patch", "networking.k8s.io", "ingresses"),
    q("patch", "cert-manager.io", "certificates"),
    Question {
        verb: "update",
        group: "cert-manager.io",
        resource: "certificates",
        subresource: "status",
    },
    q("delete", "cert-manager.io", "certificaterequests"),
];

/// The group of every authenticated user.
const AUTHENTICATED: &str = "system:authenticated";

/// Who is asked about: a user and their groups (sorted, without repeats).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Person {
    user: String,
    groups: Vec<String>,
}

/// What the clusters answered about one person.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    /// What they see and where they act, per cluster that grants anything.
    pub sights: BTreeMap<String, Sight>,
    /// Clusters that could not answer, with why.
    pub unanswered: BTreeMap<String, String>,
    /// Some cluster had not answered when a first page stopped waiting for it: kept only
    /// until the next request, which asks again in the background.
    pub partial: bool,
}

/// How long a person's first page waits for the clusters' answers: a silent cluster is
/// shown as unanswered rather than hold every first page (and `/readyz`) for the reviews'
/// own 10 s; asking goes on in the background.
const FIRST_ANSWER: Duration = Duration::from_secs(2);

struct Kept {
    at: Instant,
    answer: Arc<Answer>,
    refreshing: bool,
}

/// One cluster's RoleBindings, by subject: ("User" | "Group", name) → namespaces.
struct Bindings {
    by_subject: HashMap<(String, String), BTreeSet<String>>,
}

/// When a cluster's RoleBindings were listed, and what came back (None: not allowed).
type Listed = (Instant, Option<Arc<Bindings>>);

/// A round of questions about one person under way, awaited by every request that needs it.
type Asking = futures::future::Shared<futures::future::BoxFuture<'static, Arc<Answer>>>;

/// The clusters' answers, kept per person.
pub struct AccessReviews {
    clients: Vec<(String, Client)>,
    registry: Arc<Registry>,
    ttl: Duration,
    in_flight: Arc<Semaphore>,
    kept: Mutex<HashMap<Person, Kept>>,
    /// Rounds under way for people with nothing kept yet.
    asking: Mutex<HashMap<Person, Asking>>,
    /// Each cluster's RoleBindings, listed at most once per TTL (None: may not be listed).
    bindings: tokio::sync::Mutex<HashMap<String, Listed>>,
    /// Reviews sent since start (`/metrics`, the benchmark).
    sent: AtomicU64,
    /// Per cluster, why it last could not answer (logged when that changes: people are not
    /// told which cluster or why, Lookout's operators are).
    complaints: Mutex<HashMap<String, Option<String>>>,
}

impl AccessReviews {
    pub fn new(
        clients: Vec<(String, Client)>,
        registry: Arc<Registry>,
        ttl: Duration,
        in_flight: usize,
    ) -> Arc<AccessReviews> {
        Arc::new(AccessReviews {
            clients,
            registry,
            ttl,
            in_flight: Arc::new(Semaphore::new(in_flight.max(1))),
            kept: Mutex::default(),
            asking: Mutex::default(),
            bindings: tokio::sync::Mutex::default(),
            sent: AtomicU64::new(0),
            complaints: Mutex::default(),
        })
    }

    /// What the clusters grant `user` with `groups`: the kept answer while it is younger
    /// than the TTL (asked again in the background past half of it), else asked now.
    ///
    /// The names are Kubernetes' as the sign-in gives them, with two guards: a user named
    /// `system:…` (the API server's own identities, ServiceAccounts) is granted nothing, and
    /// groups named `system:…` (`system:masters`…) are dropped — a sign-in must not claim
    /// what only the cluster's own authenticators may give. Every person is
    /// `system:authenticated`, as the API server makes every authenticated user.
    pub async fn answer(self: &Arc<Self>, user: &str, groups: &[String]) -> Arc<Answer> {
        if user.starts_with("system:") || user.is_empty() {
            return Arc::new(Answer::default());
        }
        let person = Person {
            user: user.to_string(),
            groups: groups
                .iter()
                .filter(|g| !g.starts_with("system:"))
                .cloned()
                .chain([AUTHENTICATED.to_string()])
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect(),
        };
        let refresh = {
            let mut kept = self.kept.lock().expect("access reviews");
            match kept.get_mut(&person) {
                Some(k) if k.at.elapsed() < self.ttl => {
                    let stale = k.at.elapsed() >= self.ttl / 2 && !k.refreshing;
                    if stale {
                        k.refreshing = true;
                    }
                    Some((k.answer.clone(), stale))
                }
                _ => None,
            }
        };
        match refresh {
            Some((answer, stale)) => {
                if stale {
                    let me = self.clone();
                    tokio::spawn(async move {
                        let fresh = me.ask(&person, None).await;
                        me.keep(person, fresh);
                    });
                }
                answer
            }
            None => self.asked_once(person).await,
        }
    }

    /// Asks about `person` unless a round for them is under way, then awaits that round.
    async fn asked_once(self: &Arc<Self>, person: Person) -> Arc<Answer> {
        use futures::FutureExt;
        let round = {
            let mut asking = self.asking.lock().expect("access reviews");
            asking
                .entry(person.clone())
                .or_insert_with(|| {
                    let me = self.clone();
                    async move {
                        let fresh = me.ask(&person, Some(FIRST_ANSWER)).await;
                        me.keep(person.clone(), fresh.clone());
                        me.asking.lock().expect("access reviews").remove(&person);
                        fresh
                    }
                    .boxed()
                    .shared()
                })
                .clone()
        };
        round.await
    }

    /// Forgets what was kept about `user` (they signed in again: their groups may differ).
    pub fn forget(&self, user: &str) {
        self.kept
            .lock()
            .expect("access reviews")
            .retain(|p, _| p.user != user);
    }

    /// Reviews sent since start.
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    fn keep(&self, person: Person, answer: Arc<Answer>) {
        // A partial answer is stale at once: the next request gets it without waiting and
        // asks again in the background, without the first page's cap.
        let at = if answer.partial {
            Instant::now()
                .checked_sub(self.ttl / 2)
                .unwrap_or_else(Instant::now)
        } else {
            Instant::now()
        };
        self.kept.lock().expect("access reviews").insert(
            person,
            Kept {
                at,
                answer,
                refreshing: false,
            },
        );
    }

    /// What every cluster answers about `person`; with `cap`, a cluster that has not
    /// answered within it is unanswered for now and the answer partial.
    async fn ask(&self, person: &Person, cap: Option<Duration>) -> Arc<Answer> {
        let asked = self.clients.iter().map(|(name, client)| async move {
            let one = self.cluster(name, client, person);
            let result = match cap {
                Some(cap) => tokio::time::timeout(cap, one).await.map_err(|_| ()),
                None => Ok(one.await),
            };
            (name.clone(), result)
        });
        let mut answer = Answer::default();
        for (name, result) in futures::future::join_all(asked).await {
            // (A cluster the first page stopped waiting for is judged by the round that
            // goes on in the background.)
            if let Ok(r) = &result {
                self.complain(&name, r.as_ref().err());
            }
            match result {
                Ok(Ok(Some(sight))) => {
                    answer.sights.insert(name, sight);
                }
                Ok(Ok(None)) => {}
                Ok(Err(why)) => {
                    answer.unanswered.insert(name, why);
                }
                Err(()) => {
                    answer.partial = true;
                    answer.unanswered.insert(
                        name,
                        format!(
                            "the cluster has not answered access reviews within {} s; asking goes on",
                            FIRST_ANSWER.as_secs()
                        ),
                    );
                }
            }
        }
        Arc::new(answer)
    }

    /// Logs a cluster that cannot answer access reviews, and its recovery, once per change.
    fn complain(&self, cluster: &str, why: Option<&String>) {
        let mut all = self.complaints.lock().expect("access reviews");
        let last = all.entry(cluster.to_string()).or_default();
        if last.as_ref() == why {
            return;
        }
        match why {
            Some(why) => {
                tracing::warn!(cluster, why = %why, "the cluster cannot answer access reviews: people see nothing of it")
            }
            None => tracing::info!(cluster, "the cluster answers access reviews again"),
        }
        *last = why.cloned();
    }

    /// What one cluster grants the person; Err when it cannot say.
    async fn cluster(
        &self,
        name: &str,
        client: &Client,
        person: &Person,
    ) -> Result<Option<Sight>, String> {
        if self.all(client, person, &READ, None).await? {
            let act = if self.all(client, person, &ACT, None).await? {
                Some(Namespaces::Every)
            } else {
                // Reading the whole cluster, acting may still be granted in some namespaces
                // (a RoleBinding there): where `kubectl auth can-i` says yes, so does Lookout.
                let namespaces = self.candidates(name, client, person).await;
                let asked = namespaces.iter().map(|ns| async move {
                    Ok::<_, String>(
                        self.all(client, person, &ACT, Some(ns))
                            .await?
                            .then(|| ns.clone()),
                    )
                });
                let mut act = Vec::new();
                for r in futures::future::join_all(asked).await {
                    act.extend(r?);
                }
                (!act.is_empty()).then(|| Namespaces::named(act))
            };
            return Ok(Some(Sight {
                read: Namespaces::Every,
                act,
            }));
        }
        let namespaces = self.candidates(name, client, person).await;
        let asked = namespaces.iter().map(|ns| async move {
            if !self.all(client, person, &READ, Some(ns)).await? {
                return Ok::<_, String>(None);
            }
            let act = self.all(client, person, &ACT, Some(ns)).await?;
            Ok(Some((ns.clone(), act)))
        });
        let mut read = Vec::new();
        let mut act = Vec::new();
        for r in futures::future::join_all(asked).await {
            if let Some((ns, may_act)) = r? {
                if may_act {
                    act.push(ns.clone());
                }
                read.push(ns);
            }
        }
        if read.is_empty() {
            return Ok(None);
        }
        Ok(Some(Sight {
            read: Namespaces::named(read),
            act: (!act.is_empty()).then(|| Namespaces::named(act)),
        }))
    }

    /// The namespaces worth asking about: those holding what Lookout watches, narrowed to
    /// those where a RoleBinding names the person (when the RoleBindings can be listed).
    async fn candidates(&self, cluster: &str, client: &Client, person: &Person) -> Vec<String> {
        let watched = self.watched_namespaces(cluster);
        let Some(bindings) = self.bindings(cluster, client).await else {
            return watched;
        };
        let mut named: BTreeSet<&str> = BTreeSet::new();
        let subjects = std::iter::once(("User", person.user.as_str()))
            .chain(person.groups.iter().map(|g| ("Group", g.as_str())));
        for (kind, name) in subjects {
            if let Some(ns) = bindings
                .by_subject
                .get(&(kind.to_string(), name.to_string()))
            {
                named.extend(ns.iter().map(String::as_str));
            }
        }
        watched
            .into_iter()
            .filter(|ns| named.contains(ns.as_str()))
            .collect()
    }

    /// The cluster's RoleBindings by subject, listed again once older than the TTL; None
    /// when they cannot be listed.
    async fn bindings(&self, cluster: &str, client: &Client) -> Option<Arc<Bindings>> {
        let mut all = self.bindings.lock().await;
        if let Some((at, b)) = all.get(cluster) {
            if at.elapsed() < self.ttl {
                return b.clone();
            }
        }
        let listed = tokio::time::timeout(
            Duration::from_secs(10),
            Api::<RoleBinding>::all(client.clone()).list(&ListParams::default()),
        )
        .await;
        let fresh = match listed {
            Ok(Ok(list)) => {
                let mut by_subject: HashMap<(String, String), BTreeSet<String>> = HashMap::new();
                for rb in list.items {
                    let Some(ns) = rb.metadata.namespace.clone() else {
                        continue;
                    };
                    for s in rb.subjects.into_iter().flatten() {
                        by_subject
                            .entry((s.kind, s.name))
                            .or_default()
                            .insert(ns.clone());
                    }
                }
                Some(Arc::new(Bindings { by_subject }))
            }
            _ => None,
        };
        all.insert(cluster.to_string(), (Instant::now(), fresh.clone()));
        fresh
    }

    /// The namespaces of `cluster` holding an Ingress or a Certificate Lookout watches.
    fn watched_namespaces(&self, cluster: &str) -> Vec<String> {
        let Some(record) = self.registry.records().iter().find(|r| r.name == cluster) else {
            return Vec::new();
        };
        record.read(|d| {
            d.ingresses
                .keys()
                .chain(d.certificates.keys())
                .map(|(ns, _)| ns.to_string())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect()
        })
    }

    /// Whether every question is allowed (asked together; the first refusal decides).
    async fn all(
        &self,
        client: &Client,
        person: &Person,
        questions: &[Question],
        namespace: Option<&str>,
    ) -> Result<bool, String> {
        let asked = questions
            .iter()
            .map(|q| self.allowed(client, person, *q, namespace));
        let answers = futures::future::try_join_all(asked).await?;
        Ok(answers.into_iter().all(|a| a))
    }

    async fn allowed(
        &self,
        client: &Client,
        person: &Person,
        q: Question,
        namespace: Option<&str>,
    ) -> Result<bool, String> {
        let _slot = self
            .in_flight
            .acquire()
            .await
            .map_err(|_| "shutting down".to_string())?;
        self.sent.fetch_add(1, Ordering::Relaxed);
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(person.user.clone()),
                groups: Some(person.groups.clone()),
                resource_attributes: Some(ResourceAttributes {
                    verb: Some(q.verb.to_string()),
                    group: Some(q.group.to_string()),
                    resource: Some(q.resource.to_string()),
                    subresource: (!q.subresource.is_empty()).then(|| q.subresource.to_string()),
                    namespace: namespace.map(str::to_string),
                    ..ResourceAttributes::default()
                }),
                ..SubjectAccessReviewSpec::default()
            },
            ..SubjectAccessReview::default()
        };
        let answer = tokio::time::timeout(
            Duration::from_secs(10),
            Api::<SubjectAccessReview>::all(client.clone()).create(&PostParams::default(), &review),
        )
        .await
        .map_err(|_| "the cluster did not answer an access review within 10 s".to_string())?
        .map_err(|e| match e {
            kube::Error::Api(s) => format!("the cluster refused an access review: {}", s.message),
            other => format!("the cluster could not be asked: {other}"),
        })?;
        Ok(answer.status.is_some_and(|s| s.allowed))
    }
}

//! The fixes Lookout applies, each previewed with `dryRun=All` first, checked against the
//! caller's scope, and recorded in the audit log:
//!
//! - **edit-in-place** on an Ingress: server-side apply of just that annotation as field
//!   manager `lookout`, never forced; when its Certificate exists without the override
//!   annotation, the two annotations ingress-shim would have set go on the Certificate too
//!   (DOMAIN.md §1.8: the Ingress annotation alone does not change an existing Certificate);
//! - **undo**: apply again with an empty intent, so only what Lookout owns is removed;
//! - **renew** as `cmctl renew` does it: `Issuing=True`, reason `ManuallyTriggered`, on the
//!   status subresource with a resourceVersion precondition, after a Let's Encrypt budget
//!   check;
//! - **restart** an issuance stuck with a pending challenge: delete the in-flight
//!   CertificateRequest, so that cert-manager makes a new one from the Certificate as it is
//!   now (the fix ends with it, or with a renew when the Certificate is in backoff);
//! - **bulk** runs of the first and the third over a namespace, a cluster or everything the
//!   caller sees, with per-item outcomes and progress.

mod bulk;
mod edit_in_place;
mod person;
mod records;
mod renew;
pub(crate) mod requests;
mod restart;

/// The Kubernetes rights the actions use, as (verb, group, resource, subresource, what for):
/// what `lookout check-access` asks for unless `read_only`, and what
/// `deploy/kubernetes/base/rbac-actions.yaml` grants.
pub(crate) const RIGHTS: &[(&str, &str, &str, &str, &str)] = &[
    (
        "get",
        "networking.k8s.io",
        "ingresses",
        "",
        "the fix reads the Ingress",
    ),
    (
        "patch",
        "networking.k8s.io",
        "ingresses",
        "",
        "the fix applies its annotation",
    ),
    (
        "get",
        "cert-manager.io",
        "certificates",
        "",
        "the fix and renew read the Certificate",
    ),
    (
        "patch",
        "cert-manager.io",
        "certificates",
        "",
        "the fix applies the overrides",
    ),
    (
        "update",
        "cert-manager.io",
        "certificates",
        "status",
        "renew",
    ),
    (
        "delete",
        "cert-manager.io",
        "certificaterequests",
        "",
        "restart issuance",
    ),
    (
        "patch",
        "acme.cert-manager.io",
        "orders",
        "",
        "the fix re-solves a pending challenge in place",
    ),
];

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use lookout_app::actions::{
    ActionKind, ActionRecord, FinalProgress, Outcome, Step, EDIT_IN_PLACE,
    ISSUE_TEMPORARY_CERTIFICATE, OTHER_OVERRIDES, OVERRIDE_INGRESS_NAME,
};
use lookout_app::model::budget::{impact, Impact, Planned};
use lookout_app::model::read::views::{
    CertificateDetail, CertificateQuery, IngressQuery, ProblemQuery,
};
use lookout_app::model::ObjectKey;
use lookout_app::ports::FleetReader;
use serde_json::json;

use self::requests::{CallError, Kind};
use crate::clusters::Registry;
use crate::store::audit::{self, AuditLog};

/// How many previews and results are kept for `/actions/{id}` (the audit log keeps all).
const REMEMBERED: usize = 500;
/// How often a renew re-reads the Certificate when it changed under it.
const RENEW_ATTEMPTS: usize = 5;

pub(crate) use crate::auth::Caller;

/// The objects a bulk run covers: the rows of one list under its filters, read as that
/// list reads them (the filters given as its query string are kept in the record).
#[derive(Debug, Clone)]
pub enum BulkTarget {
    Board(ProblemQuery),
    Ingresses(IngressQuery),
    Certificates(CertificateQuery),
}

impl BulkTarget {
    pub fn cluster(&self) -> Option<&str> {
        match self {
            BulkTarget::Board(q) => q.cluster.as_deref(),
            BulkTarget::Ingresses(q) => q.cluster.as_deref(),
            BulkTarget::Certificates(q) => q.cluster.as_deref(),
        }
    }

    pub fn namespace(&self) -> Option<&str> {
        match self {
            BulkTarget::Board(q) => q.namespace.as_deref(),
            BulkTarget::Ingresses(q) => q.namespace.as_deref(),
            BulkTarget::Certificates(q) => q.namespace.as_deref(),
        }
    }

    pub fn list(&self) -> lookout_app::actions::BulkList {
        use lookout_app::actions::BulkList;
        match self {
            BulkTarget::Board(_) => BulkList::Board,
            BulkTarget::Ingresses(_) => BulkList::Ingresses,
            BulkTarget::Certificates(_) => BulkList::Certificates,
        }
    }
}

/// Why an action could not even start.
#[derive(Debug)]
pub enum ActionError {
    /// The object does not exist or is outside the caller's scope (indistinguishable).
    NotFound(String),
    /// `read_only = true`.
    ReadOnly,
    /// The caller sees the object but their role does not let them change it.
    Forbidden(String),
}

/// Runs actions and remembers their previews and results.
pub struct Actions {
    registry: Arc<Registry>,
    /// Woken as a bulk run makes progress (its page updates live).
    changes: crate::fleet::Changes,
    /// What a renew would cost is checked against these.
    budgets: Arc<crate::fleet::Budgets>,
    clients: HashMap<String, kube::Client>,
    audit: AuditLog,
    read_only: bool,
    /// Send every request as the person who asked (`actions.impersonate`).
    impersonate: bool,
    records: Mutex<VecDeque<Arc<Mutex<ActionRecord>>>>,
    /// Where records are also kept for other replicas (and restarts): the database's read
    /// pool, and the task that stores them in order.
    stored: Option<(crate::store::Pool, crate::store::action_records::Saver)>,
}

fn step(kind: Kind, ns: &str, name: &str, change: impl Into<String>) -> Step {
    Step {
        kind: kind.model(),
        namespace: ns.into(),
        name: name.into(),
        change: change.into(),
        diff: Vec::new(),
        outcome: Outcome::Ok,
        message: None,
    }
}

/// A random id for `/actions/{id}`.
fn new_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// Owners of a field, in words: `"argocd-controller" (Apply)`.
fn owners_text(owners: &[(String, String)]) -> String {
    owners
        .iter()
        .map(|(m, op)| format!("\"{m}\" ({op})"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Actions {
    pub fn new(
        registry: Arc<Registry>,
        fleet: (crate::fleet::Changes, Arc<crate::fleet::Budgets>),
        clients: HashMap<String, kube::Client>,
        audit: AuditLog,
        read_only: bool,
    ) -> Self {
        Actions {
            registry,
            changes: fleet.0,
            budgets: fleet.1,
            clients,
            audit,
            read_only,
            impersonate: false,
            records: Mutex::new(VecDeque::new()),
            stored: None,
        }
    }

    /// Records are also stored in the database (read through `reader`, written by `saver`
    /// in order), so that any replica shows any replica's previews and results.
    pub fn stored_in(
        mut self,
        reader: crate::store::Pool,
        saver: crate::store::action_records::Saver,
    ) -> Self {
        self.stored = Some((reader, saver));
        self
    }

    /// Actions are sent as the person who asks for them (`actions.impersonate`).
    pub fn impersonating(mut self, impersonate: bool) -> Self {
        self.impersonate = impersonate;
        self
    }

    /// Whether actions are disabled (`read_only = true`).
    pub fn read_only(&self) -> bool {
        self.read_only
    }

    /// A preview or result: remembered here, or stored by another replica (or before a
    /// restart). A database that cannot be read answers as if the record were not there.
    pub async fn get(&self, id: &str) -> Option<ActionRecord> {
        if let Some(r) = self.shared(id) {
            return Some(r.lock().expect("record lock").clone());
        }
        let (reader, _) = self.stored.as_ref()?;
        match crate::store::action_records::load(reader, id).await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, %id, "an action's record could not be read");
                None
            }
        }
    }

    /// Keeps how the action `id` (a record, or an item of a bulk run) settled, once: the
    /// remembered record and the stored one carry it from then on. A record no longer
    /// remembered here (another replica's, or older than the last 500) is not changed: its
    /// follow-through is made again for each reader.
    pub fn keep_settled(&self, id: &str, settled: &FinalProgress) {
        let found = {
            let records = self.records.lock().expect("records lock");
            records.iter().find_map(|shared| {
                let mut r = shared.lock().expect("record lock");
                let target = if r.id == id {
                    Some(&mut *r)
                } else {
                    r.items.iter_mut().find(|i| i.id == id)
                };
                match target {
                    Some(t) if t.final_progress.is_none() => {
                        t.final_progress = Some(settled.clone());
                        Some(Some(r.clone()))
                    }
                    Some(_) => Some(None),
                    None => None,
                }
            })
        };
        if let Some(Some(record)) = found {
            self.store(&record);
        }
    }

    /// Stores the record's current state for other replicas.
    fn store(&self, record: &ActionRecord) {
        if let Some((_, saver)) = &self.stored {
            let _ = saver.send((record.clone(), None));
        }
    }

    /// Where the actor's own remembered actions stand (id, items done, outcome): what the
    /// live revision of a namespace-scoped caller includes, so that their bulk run's page
    /// follows its progress without anyone else's runs moving it.
    pub fn progress_of(&self, actor: &str) -> Vec<(String, usize, Outcome)> {
        self.records
            .lock()
            .expect("records lock")
            .iter()
            .filter_map(|r| {
                let r = r.lock().expect("record lock");
                (r.actor == actor).then(|| (r.id.clone(), r.items.len(), r.outcome))
            })
            .collect()
    }

    fn shared(&self, id: &str) -> Option<Arc<Mutex<ActionRecord>>> {
        self.records
            .lock()
            .expect("records lock")
            .iter()
            .find(|r| r.lock().expect("record lock").id == id)
            .cloned()
    }

    /// Remembers a new record and stores it before the caller is answered (the page it is
    /// sent to next may be served by another replica) — waiting at most two seconds: a
    /// database that is down does not hold up an action, it only keeps the record from the
    /// other replicas.
    async fn keep(&self, record: ActionRecord) -> Arc<Mutex<ActionRecord>> {
        if let Some((_, saver)) = &self.stored {
            let (done, stored) = tokio::sync::oneshot::channel();
            // While the database refuses writes, nothing waits for it.
            let done = (!self.audit.health.failing()).then_some(done);
            if saver.send((record.clone(), done)).is_ok() {
                let _ = tokio::time::timeout(std::time::Duration::from_secs(2), stored).await;
            }
        }
        self.remember(record)
    }

    fn remember(&self, record: ActionRecord) -> Arc<Mutex<ActionRecord>> {
        let shared = Arc::new(Mutex::new(record));
        let mut records = self.records.lock().expect("records lock");
        records.push_back(shared.clone());
        while records.len() > REMEMBERED {
            records.pop_front();
        }
        shared
    }

    fn now(&self) -> DateTime<Utc> {
        (self.registry.now)()
    }

    /// The client `caller`'s action on `cluster` is sent with: the cluster's own, or under
    /// impersonation one that sends every request as the caller.
    fn client(&self, caller: &Caller, cluster: &str) -> Result<kube::Client, String> {
        let base = self
            .clients
            .get(cluster)
            .ok_or_else(|| format!("cluster {cluster} has no working client"))?;
        if self.impersonate {
            person::client_as(base, caller)
        } else {
            Ok(base.clone())
        }
    }

    /// The client for `caller`'s action on `key`, or the failed step that says why there is
    /// none.
    fn client_or_step(
        &self,
        caller: &Caller,
        key: &ObjectKey,
        kind: Kind,
        change: &str,
    ) -> Result<kube::Client, Box<Step>> {
        self.client(caller, &key.cluster).map_err(|e| {
            let mut s = step(kind, &key.namespace, &key.name, change);
            s.outcome = Outcome::Error;
            s.message = Some(e);
            Box::new(s)
        })
    }

    /// The Ingress an action changes: actions must be on, the caller must see the Ingress
    /// (else it does not exist for them) and may change it.
    fn ingress_to_change(
        &self,
        caller: &Caller,
        key: &ObjectKey,
    ) -> Result<lookout_app::model::read::views::IngressDetail, ActionError> {
        self.check_writable()?;
        let detail = self
            .registry
            .ingress(&caller.view, key)
            .ok_or_else(|| not_found("Ingress", key))?;
        may_act(caller, key)?;
        Ok(detail)
    }

    fn check_writable(&self) -> Result<(), ActionError> {
        if self.read_only {
            Err(ActionError::ReadOnly)
        } else {
            Ok(())
        }
    }

    /// Writes the audit row of a record (held and written later when the database refuses
    /// it now: the action already happened).
    async fn audit(&self, r: &ActionRecord) {
        let diff = r.diff_text();
        self.audit
            .append(audit::NewEntry {
                at: r.at,
                actor: r.actor.clone(),
                action: r.action.label().into(),
                cluster: r.cluster.clone(),
                namespace: r.namespace.clone(),
                kind: r.kind.name().into(),
                name: r.name.clone(),
                dry_run: r.dry_run,
                diff: (!diff.is_empty()).then_some(diff),
                outcome: r.outcome.label().into(),
                error: r.error_text(),
            })
            .await;
    }

    fn record(
        &self,
        caller: &Caller,
        action: ActionKind,
        kind: lookout_app::model::Kind,
        key: &ObjectKey,
        dry_run: bool,
    ) -> ActionRecord {
        ActionRecord {
            id: new_id(),
            action,
            dry_run,
            cluster: key.cluster.to_string(),
            namespace: key.namespace.to_string(),
            name: key.name.clone(),
            kind,
            actor: caller.actor().to_string(),
            sent_as: self.impersonate.then(|| person::describe(caller)),
            at: self.now(),
            outcome: Outcome::Ok,
            message: String::new(),
            steps: Vec::new(),
            budget: Vec::new(),
            needs_confirmation: false,
            items: Vec::new(),
            total: 0,
            scope: None,
            skipped: Vec::new(),
            from_preview: None,
            progress: Vec::new(),
            settled: None,
            settled_at: None,
            final_progress: None,
        }
    }

    /// Finishes a single-object record: outcome from its steps, audit row, remembered. An
    /// item of a bulk run is kept in its run, and audited only when it really ran.
    async fn finish(&self, mut r: ActionRecord, item: bool) -> ActionRecord {
        if r.outcome != Outcome::Refused {
            r.outcome = r
                .steps
                .iter()
                .fold(Outcome::Unchanged, |o, s| o.worst(s.outcome));
        }
        if r.message.is_empty() {
            r.message = summary(&r);
        }
        if !item || !r.dry_run {
            self.audit(&r).await;
        }
        if !item {
            self.keep(r.clone()).await;
        }
        r
    }
}

/// Whether the caller's role lets them change objects in `namespace` of `cluster` (None:
/// in any namespace of it). Every action, single or a bulk run's item, asks this.
fn acts_in(caller: &Caller, cluster: &str, namespace: Option<&str>) -> bool {
    match namespace {
        Some(ns) => caller.view.may_act(cluster, ns),
        None => caller.view.may_act_in(cluster),
    }
}

/// Whether the caller's role lets them change objects in the key's namespace.
fn may_act(caller: &Caller, key: &ObjectKey) -> Result<(), ActionError> {
    if acts_in(caller, &key.cluster, Some(&key.namespace)) {
        Ok(())
    } else {
        Err(ActionError::Forbidden(format!(
            "{} may look at {}/{} in {} but not change it (the role there is viewer)",
            caller.actor(),
            key.namespace,
            key.name,
            key.cluster
        )))
    }
}

fn not_found(kind: &str, key: &ObjectKey) -> ActionError {
    ActionError::NotFound(format!(
        "There is no {kind} {}/{} in cluster {}.",
        key.namespace, key.name, key.cluster
    ))
}

/// A step that failed on a call to the cluster.
fn failed(mut s: Step, e: CallError) -> Step {
    let (outcome, message) = match e {
        CallError::NotFound => (Outcome::NotFound, "the object does not exist".to_string()),
        CallError::Conflict(m) => (Outcome::Conflict, m),
        CallError::Stale => (
            Outcome::Error,
            "the object changed meanwhile; try again".into(),
        ),
        CallError::Other(m) => (Outcome::Error, m),
    };
    s.outcome = outcome;
    s.message = Some(message);
    s
}

fn budget_message(r: &ActionRecord) -> String {
    let over: Vec<String> = r
        .budget
        .iter()
        .filter(|b| b.exceeds)
        .map(|b| {
            format!(
                "{} {} would be {} of {}",
                b.limit_label(),
                b.key,
                b.after,
                b.capacity
            )
        })
        .collect();
    format!(
        "Not run: it would exceed a Let's Encrypt budget ({}). Confirm the budget to run it anyway; Let's Encrypt will refuse the issuances over the limit.",
        over.join("; ")
    )
}

/// One sentence for a single-object record.
fn summary(r: &ActionRecord) -> String {
    // Objects, not steps: a plan may change one object twice (annotate, then renew).
    let mut objects: Vec<String> = Vec::new();
    for step in r.steps.iter().filter(|s| s.outcome == Outcome::Ok) {
        let object = format!("{} {}", step.kind, step.name);
        if !objects.contains(&object) {
            objects.push(object);
        }
    }
    let what = lookout_app::model::text::and_list(&objects);
    match r.outcome {
        Outcome::Ok if r.dry_run => format!("Would change {what}; nothing has changed yet."),
        Outcome::Ok => format!("Changed {what}."),
        Outcome::Unchanged => {
            "Nothing to change: everything already is as this action would make it.".into()
        }
        other => {
            let words = r.error_text().unwrap_or_else(|| "see the steps".into());
            match (&r.sent_as, person::refusal(&words)) {
                (Some(_), Some(person::Refusal::Person)) => format!(
                    "Refused by cluster {}: it does not let you make this change (the steps below quote it). Ask its administrators for that right in namespace {} — every right the actions use is in the example role lookout-tls-operator — or hand this to someone who has it.",
                    r.cluster, r.namespace
                ),
                (Some(_), Some(person::Refusal::Lookout)) => format!(
                    "Refused by cluster {}: Lookout may not act as you there ({words}). Its ServiceAccount needs impersonate on users and groups; `lookout check-access` lists what is missing.",
                    r.cluster
                ),
                _ => format!("{}: {words}", other.label()),
            }
        }
    }
}

trait LimitLabel {
    fn limit_label(&self) -> &'static str;
}

impl LimitLabel for lookout_app::model::budget::Impact {
    fn limit_label(&self) -> &'static str {
        match self.limit {
            lookout_app::model::budget::Limit::RegisteredDomain => "new certificates for",
            lookout_app::model::budget::Limit::ExactSet => "certificates for the exact set",
            lookout_app::model::budget::Limit::FailedAuthorizations => "failed authorizations for",
            lookout_app::model::budget::Limit::NewOrders => "new orders by",
            lookout_app::model::budget::Limit::Paused => "paused by Let's Encrypt:",
        }
    }
}

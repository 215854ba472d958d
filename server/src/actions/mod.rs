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
//! - **bulk** runs of the first and the third over a namespace, a cluster or everything the
//!   caller sees, with per-item outcomes and progress.

pub mod kube;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use lookout_app::actions::{
    ActionKind, ActionRecord, Outcome, Step, EDIT_IN_PLACE, ISSUE_TEMPORARY_CERTIFICATE,
    OTHER_OVERRIDES, OVERRIDE_INGRESS_NAME,
};
use lookout_app::model::budget::{impact, Planned};
use lookout_app::model::chain::AnnotationStatus;
use lookout_app::model::read::views::{CertificateDetail, CertificateQuery, IngressQuery};
use lookout_app::model::ObjectKey;
use lookout_app::ports::FleetReader;
use serde_json::json;

use self::kube::{CallError, Kind};
use crate::clusters::Registry;
use crate::store::audit::{self, AuditLog};

/// How many previews and results are kept for `/actions/{id}` (the audit log keeps all).
const REMEMBERED: usize = 500;
/// How often a renew re-reads the Certificate when it changed under it.
const RENEW_ATTEMPTS: usize = 5;

pub use crate::auth::Caller;

/// The objects a bulk run covers (both empty: everything the caller sees).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BulkTarget {
    pub cluster: Option<String>,
    pub namespace: Option<String>,
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
    clients: HashMap<String, ::kube::Client>,
    audit: AuditLog,
    read_only: bool,
    records: Mutex<VecDeque<Arc<Mutex<ActionRecord>>>>,
}

fn step(kind: Kind, ns: &str, name: &str, change: impl Into<String>) -> Step {
    Step {
        kind: kind.name().into(),
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
        clients: HashMap<String, ::kube::Client>,
        audit: AuditLog,
        read_only: bool,
    ) -> Self {
        Actions {
            registry,
            clients,
            audit,
            read_only,
            records: Mutex::new(VecDeque::new()),
        }
    }

    /// Whether actions are disabled (`read_only = true`).
    pub fn read_only(&self) -> bool {
        self.read_only
    }

    /// A remembered preview or result.
    pub fn get(&self, id: &str) -> Option<ActionRecord> {
        self.shared(id)
            .map(|r| r.lock().expect("record lock").clone())
    }

    fn shared(&self, id: &str) -> Option<Arc<Mutex<ActionRecord>>> {
        self.records
            .lock()
            .expect("records lock")
            .iter()
            .find(|r| r.lock().expect("record lock").id == id)
            .cloned()
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

    fn client(&self, cluster: &str) -> Result<&::kube::Client, String> {
        self.clients
            .get(cluster)
            .ok_or_else(|| format!("cluster {cluster} has no working client"))
    }

    /// The cluster's client, or the failed step that says there is none.
    fn client_or_step(
        &self,
        key: &ObjectKey,
        kind: Kind,
        change: &str,
    ) -> Result<::kube::Client, Box<Step>> {
        self.client(&key.cluster).cloned().map_err(|e| {
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
            .ingress(&caller.scope, key)
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
                kind: r.kind.clone(),
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
        kind: &str,
        key: &ObjectKey,
        dry_run: bool,
    ) -> ActionRecord {
        ActionRecord {
            id: new_id(),
            action,
            dry_run,
            cluster: key.cluster.clone(),
            namespace: key.namespace.clone(),
            name: key.name.clone(),
            kind: kind.into(),
            actor: caller.actor().to_string(),
            at: self.now(),
            outcome: Outcome::Ok,
            message: String::new(),
            steps: Vec::new(),
            budget: Vec::new(),
            needs_confirmation: false,
            items: Vec::new(),
            total: 0,
            offer_renew: None,
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
            self.remember(r.clone());
        }
        r
    }

    /// Adds `acme.cert-manager.io/http01-edit-in-place: "true"` to an Ingress, and the
    /// override annotations to its Certificates that lack them.
    pub async fn edit_in_place(
        &self,
        caller: &Caller,
        key: &ObjectKey,
        dry_run: bool,
    ) -> Result<ActionRecord, ActionError> {
        self.edit_in_place_as(caller, key, dry_run, false).await
    }

    async fn edit_in_place_as(
        &self,
        caller: &Caller,
        key: &ObjectKey,
        dry_run: bool,
        item: bool,
    ) -> Result<ActionRecord, ActionError> {
        let detail = self.ingress_to_change(caller, key)?;
        let mut r = self.record(caller, ActionKind::EditInPlace, "Ingress", key, dry_run);
        let client = match self.client_or_step(key, Kind::Ingress, "set the annotation") {
            Ok(c) => c,
            Err(s) => {
                r.steps.push(*s);
                return Ok(self.finish(r, item).await);
            }
        };
        r.steps.push(self.ingress_step(&client, key, dry_run).await);
        if r.steps[0].outcome == Outcome::NotFound {
            return Err(not_found("Ingress", key));
        }
        for tls in &detail.tls {
            let Some(chain) = &tls.certificate else {
                continue;
            };
            let cert = &chain.certificate;
            r.steps.push(
                self.certificate_override_step(
                    &client,
                    &key.namespace,
                    &cert.name,
                    &key.name,
                    dry_run,
                )
                .await,
            );
            let failing = cert.ready.as_ref().is_none_or(|c| &*c.status != "True")
                || cert.failed_issuance_attempts.unwrap_or(0) > 0;
            if failing && r.offer_renew.is_none() {
                r.offer_renew = Some(cert.name.to_string());
            }
        }
        Ok(self.finish(r, item).await)
    }

    async fn ingress_step(&self, client: &::kube::Client, key: &ObjectKey, dry_run: bool) -> Step {
        let mut s = step(
            Kind::Ingress,
            &key.namespace,
            &key.name,
            format!("set {EDIT_IN_PLACE}: \"true\" (server-side apply, field manager lookout)"),
        );
        let live = match kube::get(client, Kind::Ingress, &key.namespace, &key.name).await {
            Ok(o) => o,
            Err(e) => return failed(s, e),
        };
        let before = kube::annotations(&live);
        if before.get(EDIT_IN_PLACE).map(String::as_str) == Some("true") {
            s.outcome = Outcome::Unchanged;
            let owners = kube::annotation_owners(&live, EDIT_IN_PLACE);
            s.message = Some(format!(
                "already \"true\" (owned by {})",
                owners_text(&owners)
            ));
            return s;
        }
        let want = BTreeMap::from([(EDIT_IN_PLACE.to_string(), "true".to_string())]);
        match kube::apply_annotations(
            client,
            Kind::Ingress,
            &key.namespace,
            &key.name,
            &want,
            dry_run,
        )
        .await
        {
            Ok(after) => {
                s.diff = kube::annotation_diff(&before, &kube::annotations(&after));
                s
            }
            Err(CallError::Conflict(message)) => {
                let owners = kube::annotation_owners(&live, EDIT_IN_PLACE);
                s.outcome = Outcome::Conflict;
                s.message = Some(if owners.is_empty() {
                    message
                } else {
                    format!(
                        "the annotation is {:?} and owned by field manager {}; Lookout does not force. Change it where that manager gets it from (e.g. the manifest in Git), or have it give the field up.",
                        before.get(EDIT_IN_PLACE).cloned().unwrap_or_default(),
                        owners_text(&owners)
                    )
                });
                s
            }
            Err(e) => failed(s, e),
        }
    }

    /// The override annotations on a Certificate, unless it has them or a conflicting one.
    async fn certificate_override_step(
        &self,
        client: &::kube::Client,
        ns: &str,
        cert: &str,
        ingress: &str,
        dry_run: bool,
    ) -> Step {
        let mut s = step(
            Kind::Certificate,
            ns,
            cert,
            format!("set {OVERRIDE_INGRESS_NAME}: {ingress:?} and {ISSUE_TEMPORARY_CERTIFICATE}: \"true\", as ingress-shim would have"),
        );
        let live = match kube::get(client, Kind::Certificate, ns, cert).await {
            Ok(o) => o,
            Err(e) => return failed(s, e),
        };
        let before = kube::annotations(&live);
        match before.get(OVERRIDE_INGRESS_NAME) {
            Some(v) if v == ingress => {
                s.outcome = Outcome::Unchanged;
                s.message = Some("the Certificate already names this Ingress".into());
                return s;
            }
            Some(other) => {
                s.outcome = Outcome::Refused;
                s.message = Some(format!(
                    "{OVERRIDE_INGRESS_NAME} already names Ingress {other:?}; Lookout leaves it alone"
                ));
                return s;
            }
            None => {}
        }
        if let Some(other) = OTHER_OVERRIDES.iter().find(|k| before.contains_key(**k)) {
            s.outcome = Outcome::Refused;
            s.message = Some(format!(
                "the Certificate has {other}; only one of the override annotations may be present or cert-manager fails the Order. Remove it first."
            ));
            return s;
        }
        let want = BTreeMap::from([
            (OVERRIDE_INGRESS_NAME.to_string(), ingress.to_string()),
            (ISSUE_TEMPORARY_CERTIFICATE.to_string(), "true".to_string()),
        ]);
        match kube::apply_annotations(client, Kind::Certificate, ns, cert, &want, dry_run).await {
            Ok(after) => {
                s.diff = kube::annotation_diff(&before, &kube::annotations(&after));
                s
            }
            Err(CallError::Conflict(message)) => {
                let owners: Vec<_> = want
                    .keys()
                    .flat_map(|k| kube::annotation_owners(&live, k))
                    .collect();
                s.outcome = Outcome::Conflict;
                s.message = Some(if owners.is_empty() {
                    message
                } else {
                    format!(
                        "owned by field manager {}; Lookout does not force",
                        owners_text(&owners)
                    )
                });
                s
            }
            Err(e) => failed(s, e),
        }
    }

    /// Gives up every field Lookout owns on the Ingress and its Certificates.
    pub async fn undo_edit_in_place(
        &self,
        caller: &Caller,
        key: &ObjectKey,
        dry_run: bool,
    ) -> Result<ActionRecord, ActionError> {
        let detail = self.ingress_to_change(caller, key)?;
        let mut r = self.record(caller, ActionKind::UndoEditInPlace, "Ingress", key, dry_run);
        let client = match self.client_or_step(key, Kind::Ingress, "remove Lookout's fields") {
            Ok(c) => c,
            Err(s) => {
                r.steps.push(*s);
                return Ok(self.finish(r, false).await);
            }
        };
        let mut objects = vec![(Kind::Ingress, key.name.clone())];
        objects.extend(
            detail
                .tls
                .iter()
                .filter_map(|t| t.certificate.as_ref())
                .map(|c| (Kind::Certificate, c.certificate.name.to_string())),
        );
        for (kind, name) in objects {
            let s = self
                .give_up_step(&client, kind, &key.namespace, &name, dry_run)
                .await;
            if kind == Kind::Ingress && s.outcome == Outcome::NotFound {
                return Err(not_found("Ingress", key));
            }
            r.steps.push(s);
        }
        Ok(self.finish(r, false).await)
    }

    async fn give_up_step(
        &self,
        client: &::kube::Client,
        kind: Kind,
        ns: &str,
        name: &str,
        dry_run: bool,
    ) -> Step {
        let mut s = step(
            kind,
            ns,
            name,
            "remove what field manager lookout owns (apply with the keys omitted)",
        );
        let live = match kube::get(client, kind, ns, name).await {
            Ok(o) => o,
            Err(e) => return failed(s, e),
        };
        if !kube::lookout_owns_something(&live) {
            s.outcome = Outcome::Unchanged;
            s.message = Some("Lookout owns nothing here".into());
            return s;
        }
        let before = kube::annotations(&live);
        match kube::apply_annotations(client, kind, ns, name, &BTreeMap::new(), dry_run).await {
            Ok(after) => {
                s.diff = kube::annotation_diff(&before, &kube::annotations(&after));
                if s.diff.is_empty() {
                    s.message = Some("other managers also own these fields; they stay".into());
                }
                s
            }
            Err(e) => failed(s, e),
        }
    }

    /// What renewing these Certificates costs of the budgets.
    fn planned(detail: &CertificateDetail) -> Option<Planned> {
        let server = detail.chain.issuer.as_ref()?.acme_server_url.clone()?;
        let c = &detail.chain.certificate;
        Some(Planned {
            server: server.to_string(),
            names: c.dns_names.iter().map(|n| n.to_string()).collect(),
            renewal: c.not_after.is_some() || c.revision.is_some(),
        })
    }

    /// Triggers re-issuance like `cmctl renew`, after the budget check.
    pub async fn renew(
        &self,
        caller: &Caller,
        key: &ObjectKey,
        dry_run: bool,
        confirm_budget: bool,
    ) -> Result<ActionRecord, ActionError> {
        self.renew_as(caller, key, dry_run, confirm_budget, false)
            .await
    }

    async fn renew_as(
        &self,
        caller: &Caller,
        key: &ObjectKey,
        dry_run: bool,
        confirm_budget: bool,
        item: bool,
    ) -> Result<ActionRecord, ActionError> {
        self.check_writable()?;
        let detail = self
            .registry
            .certificate(&caller.scope, key)
            .ok_or_else(|| not_found("Certificate", key))?;
        may_act(caller, key)?;
        let mut r = self.record(caller, ActionKind::Renew, "Certificate", key, dry_run);
        r.budget = impact(
            &self.registry.fleet_budgets(),
            &Self::planned(&detail).into_iter().collect::<Vec<_>>(),
        );
        r.needs_confirmation = r.budget.iter().any(|b| b.exceeds);
        if r.needs_confirmation && !confirm_budget && !dry_run {
            r.outcome = Outcome::Refused;
            r.message = budget_message(&r);
            return Ok(self.finish(r, item).await);
        }
        let s = match self.client_or_step(key, Kind::Certificate, "set Issuing=True") {
            Ok(client) => self.renew_step(&client, key, dry_run).await,
            Err(s) => *s,
        };
        if s.outcome == Outcome::NotFound {
            return Err(not_found("Certificate", key));
        }
        r.steps.push(s);
        Ok(self.finish(r, item).await)
    }

    async fn renew_step(&self, client: &::kube::Client, key: &ObjectKey, dry_run: bool) -> Step {
        let mut s = step(
            Kind::Certificate,
            &key.namespace,
            &key.name,
            "set condition Issuing=True, reason ManuallyTriggered, on the status (as cmctl renew)",
        );
        for _ in 0..RENEW_ATTEMPTS {
            let mut live =
                match kube::get(client, Kind::Certificate, &key.namespace, &key.name).await {
                    Ok(o) => o,
                    Err(e) => return failed(s, e),
                };
            let conditions: Vec<serde_json::Value> = live
                .data
                .pointer("/status/conditions")
                .and_then(|c| c.as_array())
                .cloned()
                .unwrap_or_default();
            let issuing = conditions.iter().find(|c| c["type"] == "Issuing");
            if let Some(i) = issuing.filter(|i| i["status"] == "True") {
                s.outcome = Outcome::Refused;
                s.message = Some(format!(
                    "already being issued (Issuing=True, {}); cert-manager ignores another trigger",
                    i["reason"].as_str().unwrap_or("no reason")
                ));
                return s;
            }
            let mut next: Vec<serde_json::Value> = conditions
                .iter()
                .filter(|c| c["type"] != "Issuing")
                .cloned()
                .collect();
            next.push(json!({
                "type": "Issuing",
                "status": "True",
                "reason": "ManuallyTriggered",
                "message": "Certificate re-issuance manually triggered",
                "lastTransitionTime": self.now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                "observedGeneration": live.metadata.generation.unwrap_or(0),
            }));
            s.diff = match issuing {
                Some(old) => vec![
                    format!(
                        "- status.conditions[Issuing]: {} ({})",
                        old["status"].as_str().unwrap_or(""),
                        old["reason"].as_str().unwrap_or("")
                    ),
                    "+ status.conditions[Issuing]: True (ManuallyTriggered)".into(),
                ],
                None => vec!["+ status.conditions[Issuing]: True (ManuallyTriggered)".into()],
            };
            if !live.data["status"].is_object() {
                live.data["status"] = json!({});
            }
            live.data["status"]["conditions"] = json!(next);
            match kube::replace_status(client, Kind::Certificate, &live, dry_run).await {
                Ok(_) => return s,
                Err(CallError::Stale) => continue,
                Err(e) => return failed(s, e),
            }
        }
        s.outcome = Outcome::Error;
        s.message = Some(format!(
            "the Certificate kept changing; gave up after {RENEW_ATTEMPTS} attempts"
        ));
        s
    }

    /// The Ingresses a bulk edit-in-place covers: those that ask for a certificate and lack
    /// the annotation, or have it without effect.
    fn bulk_ingresses(&self, caller: &Caller, target: &BulkTarget) -> Vec<ObjectKey> {
        self.registry
            .ingresses(
                &caller.scope,
                &IngressQuery {
                    cluster: target.cluster.clone(),
                    namespace: target.namespace.clone(),
                    page: 1,
                    per_page: usize::MAX,
                    ..Default::default()
                },
            )
            .items
            .into_iter()
            .filter(|r| {
                matches!(
                    r.annotation,
                    AnnotationStatus::Missing | AnnotationStatus::SetNotEffective { .. }
                ) && caller.act.sees(&r.ingress.cluster, &r.ingress.namespace)
            })
            .map(|r| ObjectKey {
                cluster: r.ingress.cluster.to_string(),
                namespace: r.ingress.namespace.to_string(),
                name: r.ingress.name.to_string(),
            })
            .collect()
    }

    /// The Certificates a bulk renew covers: those that are not ready or failing.
    fn bulk_certificates(&self, caller: &Caller, target: &BulkTarget) -> Vec<CertificateDetail> {
        let mut keys: Vec<ObjectKey> = Vec::new();
        for status in ["not-ready", "failing"] {
            let page = self.registry.certificates(
                &caller.scope,
                &CertificateQuery {
                    cluster: target.cluster.clone(),
                    namespace: target.namespace.clone(),
                    status: Some(status.into()),
                    page: 1,
                    per_page: usize::MAX,
                    ..Default::default()
                },
            );
            for row in page.items.into_iter().filter(|r| {
                caller
                    .act
                    .sees(&r.certificate.cluster, &r.certificate.namespace)
            }) {
                let k = ObjectKey {
                    cluster: row.certificate.cluster.to_string(),
                    namespace: row.certificate.namespace.to_string(),
                    name: row.certificate.name.to_string(),
                };
                if !keys.contains(&k) {
                    keys.push(k);
                }
            }
        }
        keys.iter()
            .filter_map(|k| self.registry.certificate(&caller.scope, k))
            .collect()
    }

    /// Plans a bulk run: the record with its total and, for renew, the budget impact of all
    /// items together. Nothing runs yet.
    pub fn plan_bulk(
        &self,
        caller: &Caller,
        action: ActionKind,
        target: &BulkTarget,
        dry_run: bool,
    ) -> Result<(ActionRecord, Vec<ObjectKey>), ActionError> {
        self.check_writable()?;
        if caller.act.is_empty() {
            return Err(ActionError::Forbidden(format!(
                "{} may not run actions (no rule gives them the operator role)",
                caller.actor()
            )));
        }
        let key = ObjectKey {
            cluster: target.cluster.clone().unwrap_or_default(),
            namespace: target.namespace.clone().unwrap_or_default(),
            name: String::new(),
        };
        let (kind, keys, budget) = match action {
            ActionKind::BulkRenew => {
                let certs = self.bulk_certificates(caller, target);
                let planned: Vec<Planned> = certs.iter().filter_map(Self::planned).collect();
                let keys = certs
                    .iter()
                    .map(|d| ObjectKey {
                        cluster: d.chain.certificate.cluster.to_string(),
                        namespace: d.chain.certificate.namespace.to_string(),
                        name: d.chain.certificate.name.to_string(),
                    })
                    .collect();
                (
                    "Certificate",
                    keys,
                    impact(&self.registry.fleet_budgets(), &planned),
                )
            }
            _ => ("Ingress", self.bulk_ingresses(caller, target), Vec::new()),
        };
        let mut r = self.record(caller, action, kind, &key, dry_run);
        r.total = keys.len();
        r.needs_confirmation = budget.iter().any(|b| b.exceeds);
        r.budget = budget;
        r.outcome = Outcome::Running;
        r.message = format!("{} of {} items done", 0, keys.len());
        self.remember(r.clone());
        Ok((r, keys))
    }

    /// Runs a planned bulk action item by item, updating the remembered record as it goes
    /// (the live page shows the progress). Returns the finished record.
    pub async fn run_bulk(
        &self,
        caller: &Caller,
        record: ActionRecord,
        keys: Vec<ObjectKey>,
        confirm_budget: bool,
    ) -> ActionRecord {
        let shared = self
            .shared(&record.id)
            .unwrap_or_else(|| self.remember(record.clone()));
        let dry_run = record.dry_run;
        if record.action == ActionKind::BulkRenew
            && record.needs_confirmation
            && !confirm_budget
            && !dry_run
        {
            let done = {
                let mut r = shared.lock().expect("record lock");
                r.outcome = Outcome::Refused;
                r.message = budget_message(&r);
                r.clone()
            };
            self.audit(&done).await;
            self.registry.touch();
            return done;
        }
        for key in keys {
            let item = match record.action {
                ActionKind::BulkRenew => self.renew_as(caller, &key, dry_run, true, true).await,
                _ => self.edit_in_place_as(caller, &key, dry_run, true).await,
            };
            let item = item.unwrap_or_else(|e| {
                let mut r = self.record(caller, record.action, &record.kind, &key, dry_run);
                r.outcome = match e {
                    ActionError::NotFound(_) => Outcome::NotFound,
                    ActionError::ReadOnly | ActionError::Forbidden(_) => Outcome::Refused,
                };
                r.message = "the object is gone".into();
                r
            });
            {
                let mut r = shared.lock().expect("record lock");
                r.items.push(item);
                r.message = format!("{} of {} items done", r.items.len(), r.total);
            }
            self.registry.touch();
        }
        let done = {
            let mut r = shared.lock().expect("record lock");
            let failed = r.items.iter().filter(|i| !i.outcome.succeeded()).count();
            r.outcome = if failed == 0 {
                Outcome::Ok
            } else {
                Outcome::Partial
            };
            r.message = format!(
                "{}{} of {} items ok{}",
                if dry_run { "Preview: " } else { "" },
                r.items.len() - failed,
                r.items.len(),
                if failed > 0 {
                    format!(", {failed} not")
                } else {
                    String::new()
                }
            );
            r.clone()
        };
        self.audit(&done).await;
        self.registry.touch();
        done
    }
}

/// Whether the caller's role lets them change objects in the key's namespace.
fn may_act(caller: &Caller, key: &ObjectKey) -> Result<(), ActionError> {
    if caller.act.sees(&key.cluster, &key.namespace) {
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
    let n = r.steps.iter().filter(|s| s.outcome == Outcome::Ok).count();
    match r.outcome {
        Outcome::Ok if r.dry_run => format!("Would change {n} object(s); nothing has changed yet."),
        Outcome::Ok => format!("Changed {n} object(s)."),
        Outcome::Unchanged => {
            "Nothing to change: everything already is as this action would make it.".into()
        }
        other => format!(
            "{}: {}",
            other.label(),
            r.error_text().unwrap_or_else(|| "see the steps".into())
        ),
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
        }
    }
}

//! Bulk runs: edit-in-place or renew over the rows of a list under its filters (the board,
//! the Ingresses, the Certificates) — the single action many times: each item judged as its
//! own page judges it, those it would be refused or fail on left out with why — previewed as
//! a whole, with per-item outcomes and progress.

use super::*;
use lookout_app::actions::{BulkScope, Skipped};
use lookout_app::model::read::offer::{self, Offer};
use lookout_app::model::read::problems::{Problem, ProblemObject};
use lookout_app::model::read::views::CertificateStatus;
use lookout_app::model::Kind as ObjectKind;

/// The problems that judge a bulk run's items: each namespace's, judged on the whole cluster
/// as the single action judges them, and the same as the caller is told them (for the words).
#[derive(Default)]
struct Judge {
    by_namespace: HashMap<(String, String), (Vec<Problem>, Vec<Problem>)>,
}

impl Judge {
    fn of<'j>(
        &'j mut self,
        actions: &Actions,
        caller: &Caller,
        key: &ObjectKey,
    ) -> &'j (Vec<Problem>, Vec<Problem>) {
        self.by_namespace
            .entry((key.cluster.to_string(), key.namespace.to_string()))
            .or_insert_with(|| {
                let q = ProblemQuery {
                    cluster: Some(key.cluster.to_string()),
                    namespace: Some(key.namespace.to_string()),
                    page: 1,
                    per_page: usize::MAX,
                    ..Default::default()
                };
                let everything = actions.registry.whole_fleet();
                let whole = actions.registry.problems(&everything, &q).page.items;
                let seen = actions.registry.problems(&caller.view, &q).page.items;
                (whole, seen)
            })
    }
}

/// Why an item is skipped, in the caller's words: a blocking problem as they are told it,
/// or, when its root is not theirs to see, that it is the platform's.
fn skip_reason(offer: &Offer<'_>, seen: &[Problem]) -> String {
    match offer {
        Offer::Blocked(p) => match seen.iter().find(|s| s.id == p.id) {
            Some(told) => Offer::Blocked(told).why_not().unwrap_or_default(),
            None => "it would fail the same way until a cause outside what you see is fixed (the cluster's operators see it)".into(),
        },
        other => other.why_not().unwrap_or_default(),
    }
}

fn left_alone(kind: ObjectKind, key: &ObjectKey, why: String) -> Skipped {
    Skipped {
        object: ProblemObject {
            cluster: key.cluster.as_str().into(),
            namespace: key.namespace.as_str().into(),
            kind: kind.into(),
            name: key.name.as_str().into(),
        },
        why,
    }
}

/// A previewed item whose object is no longer there (or no longer the caller's to see).
const GONE: &str = "it is gone since the preview";
/// A previewed item that no longer needs the action.
const DONE_SINCE: &str = "it no longer needs this since the preview";

fn key_of(cluster: &str, namespace: &str, name: &str) -> ObjectKey {
    ObjectKey {
        cluster: cluster.into(),
        namespace: namespace.into(),
        name: name.to_string(),
    }
}

impl Actions {
    /// The objects of `kind` in the target's list, in its order, once each: the objects of
    /// the board's problems under its filters, or the rows of the list under its filters.
    fn listed(&self, caller: &Caller, target: &BulkTarget, kind: ObjectKind) -> Vec<ObjectKey> {
        let mut keys: Vec<ObjectKey> = Vec::new();
        let mut add = |k: ObjectKey| {
            if !keys.contains(&k) {
                keys.push(k);
            }
        };
        match target {
            BulkTarget::Board(q) => {
                let q = ProblemQuery {
                    page: 1,
                    per_page: usize::MAX,
                    ..q.clone()
                };
                for p in self.registry.problems(&caller.view, &q).page.items {
                    for o in p.objects.iter().filter(|o| o.kind == kind) {
                        add(key_of(&o.cluster, &o.namespace, &o.name));
                    }
                }
            }
            BulkTarget::Ingresses(q) if kind == ObjectKind::Ingress => {
                let q = IngressQuery {
                    page: 1,
                    per_page: usize::MAX,
                    ..q.clone()
                };
                for r in self.registry.ingresses(&caller.view, &q).items {
                    add(key_of(
                        &r.ingress.cluster,
                        &r.ingress.namespace,
                        &r.ingress.name,
                    ));
                }
            }
            BulkTarget::Certificates(q) if kind == ObjectKind::Certificate => {
                let q = CertificateQuery {
                    page: 1,
                    per_page: usize::MAX,
                    ..q.clone()
                };
                for r in self.registry.certificates(&caller.view, &q).items {
                    add(key_of(
                        &r.certificate.cluster,
                        &r.certificate.namespace,
                        &r.certificate.name,
                    ));
                }
            }
            _ => {}
        }
        keys.retain(|k| acts_in(caller, &k.cluster, Some(&k.namespace)));
        keys
    }

    /// The objects a run judges, in order, and those it leaves alone before judging. Over
    /// the list as it is now: every row of `kind`. From a preview: exactly the items the
    /// preview showed it would do; an item whose preview failed, and a row that joined the
    /// list since, are left alone with why (preview again to include them).
    fn candidates(
        &self,
        caller: &Caller,
        target: &BulkTarget,
        kind: ObjectKind,
        previewed: Option<&ActionRecord>,
    ) -> (Vec<ObjectKey>, Vec<Skipped>) {
        let listed = self.listed(caller, target, kind);
        let Some(preview) = previewed else {
            return (listed, Vec::new());
        };
        let key_of_item = |i: &ActionRecord| key_of(&i.cluster, &i.namespace, &i.name);
        let mut skipped = Vec::new();
        let mut keys = Vec::new();
        for item in &preview.items {
            let key = key_of_item(item);
            if !acts_in(caller, &key.cluster, Some(&key.namespace)) {
                continue;
            }
            if item.outcome.succeeded() {
                keys.push(key);
            } else {
                let why = item.error_text().unwrap_or_else(|| item.message.clone());
                skipped.push(left_alone(
                    kind,
                    &key,
                    format!("its preview did not pass ({}): {why}", item.outcome.label()),
                ));
            }
        }
        let known = |k: &ObjectKey| {
            preview.items.iter().any(|i| key_of_item(i) == *k)
                || preview
                    .skipped
                    .iter()
                    .any(|s| key_of(&s.object.cluster, &s.object.namespace, &s.object.name) == *k)
        };
        for key in listed.iter().filter(|k| !known(k)) {
            skipped.push(left_alone(
                kind,
                key,
                "it joined the list after the preview; preview again to include it".into(),
            ));
        }
        (keys, skipped)
    }

    /// The Ingresses a bulk edit-in-place covers — those of the list the fix is for, judged
    /// one by one as the Ingress's own page judges them — and those it leaves alone, with why.
    fn bulk_ingresses(
        &self,
        caller: &Caller,
        target: &BulkTarget,
        previewed: Option<&ActionRecord>,
    ) -> (Vec<ObjectKey>, Vec<Skipped>) {
        let (keys, mut skipped) = self.candidates(caller, target, ObjectKind::Ingress, previewed);
        let (mut run, mut judge) = (Vec::new(), Judge::default());
        for key in keys {
            let Some(detail) = self.registry.ingress(&caller.view, &key) else {
                if previewed.is_some() {
                    skipped.push(left_alone(ObjectKind::Ingress, &key, GONE.into()));
                }
                continue;
            };
            let (whole, seen) = judge.of(self, caller, &key);
            let about: Vec<Problem> = whole
                .iter()
                .filter(|p| p.concerns(ObjectKind::Ingress, &key.namespace, &key.name))
                .cloned()
                .collect();
            match offer::edit_in_place(&detail.ingress, &detail.annotation, &about) {
                Offer::Offered => run.push(key),
                Offer::NotNeeded if previewed.is_some() => {
                    skipped.push(left_alone(ObjectKind::Ingress, &key, DONE_SINCE.into()))
                }
                Offer::NotNeeded => {}
                other => skipped.push(left_alone(
                    ObjectKind::Ingress,
                    &key,
                    skip_reason(&other, seen),
                )),
            }
        }
        (run, skipped)
    }

    /// The Certificates a bulk renew covers — those of the list that are not ready or
    /// failing, judged one by one as a single renew judges them — and those it leaves alone.
    fn bulk_certificates(
        &self,
        caller: &Caller,
        target: &BulkTarget,
        previewed: Option<&ActionRecord>,
    ) -> (Vec<CertificateDetail>, Vec<Skipped>) {
        let (keys, mut skipped) =
            self.candidates(caller, target, ObjectKind::Certificate, previewed);
        let (mut run, mut judge) = (Vec::new(), Judge::default());
        for key in keys {
            let Some(detail) = self.registry.certificate(&caller.view, &key) else {
                if previewed.is_some() {
                    skipped.push(left_alone(ObjectKind::Certificate, &key, GONE.into()));
                }
                continue;
            };
            let c = &detail.chain.certificate;
            let wants = CertificateStatus::NotReady.holds(c, &detail.findings, self.now())
                || CertificateStatus::Failing.holds(c, &detail.findings, self.now());
            if !wants {
                if previewed.is_some() {
                    skipped.push(left_alone(ObjectKind::Certificate, &key, DONE_SINCE.into()));
                }
                continue;
            }
            let (whole, seen) = judge.of(self, caller, &key);
            match offer::issue_again(c, detail.ingress.as_deref(), whole) {
                Offer::Offered => run.push(detail),
                other => skipped.push(left_alone(
                    ObjectKind::Certificate,
                    &key,
                    skip_reason(&other, seen),
                )),
            }
        }
        (run, skipped)
    }

    /// Plans a bulk run: the record with its total (the items the single action would do),
    /// the items left alone with why, and for renew the budget impact of the items run — the
    /// skipped are charged nothing. Nothing runs yet.
    pub async fn plan_bulk(
        &self,
        caller: &Caller,
        action: ActionKind,
        target: &BulkTarget,
        scope: BulkScope,
        dry_run: bool,
        previewed: Option<&ActionRecord>,
    ) -> Result<(ActionRecord, Vec<ObjectKey>), ActionError> {
        self.check_writable()?;
        if !caller.view.may_act_anywhere() {
            return Err(ActionError::Forbidden(format!(
                "{} may not run actions (no rule gives them the operator role)",
                caller.actor()
            )));
        }
        // A target outside where the caller may act is, for them, a target that does not
        // exist: no record and no audit row lands in another scope's log. A cluster the
        // config does not name does not exist for anyone (a grant of `*` matches any text).
        let known = self.registry.cluster_names();
        let clusters = match target.cluster() {
            Some(c) if known.iter().any(|k| k == c) => vec![c.to_string()],
            Some(_) => Vec::new(),
            None => known,
        };
        let reachable = clusters
            .iter()
            .any(|c| acts_in(caller, c, target.namespace()));
        if !reachable {
            return Err(ActionError::NotFound(format!(
                "There is nothing {} you may change.",
                match (target.cluster(), target.namespace()) {
                    (Some(c), Some(ns)) => format!("in namespace {ns} of cluster {c}"),
                    (Some(c), None) => format!("in cluster {c}"),
                    (None, Some(ns)) => format!("in a namespace {ns}"),
                    (None, None) => "anywhere".to_string(),
                }
            )));
        }
        let key = ObjectKey {
            cluster: target.cluster().unwrap_or_default().into(),
            namespace: target.namespace().unwrap_or_default().into(),
            name: String::new(),
        };
        let (kind, keys, skipped, budget) = match action {
            ActionKind::BulkRenew => {
                let (certs, skipped) = self.bulk_certificates(caller, target, previewed);
                let planned: Vec<Planned> = certs.iter().filter_map(|c| self.planned(c)).collect();
                let keys = certs
                    .iter()
                    .map(|d| ObjectKey {
                        cluster: d.chain.certificate.cluster.as_ref().into(),
                        namespace: d.chain.certificate.namespace.as_ref().into(),
                        name: d.chain.certificate.name.to_string(),
                    })
                    .collect();
                (
                    ObjectKind::Certificate,
                    keys,
                    skipped,
                    self.impact_for(caller, &planned),
                )
            }
            _ => {
                let (keys, skipped) = self.bulk_ingresses(caller, target, previewed);
                (ObjectKind::Ingress, keys, skipped, Vec::new())
            }
        };
        let mut r = self.record(caller, action, kind, &key, dry_run);
        r.total = keys.len();
        r.scope = Some(scope);
        r.skipped = skipped;
        r.from_preview = previewed.map(|p| p.id.clone());
        r.needs_confirmation = budget.iter().any(|b| b.exceeds);
        r.budget = budget;
        r.outcome = Outcome::Running;
        r.message = format!("{} of {} items done", 0, keys.len());
        self.keep(r.clone()).await;
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
            self.store(&done);
            self.audit(&done).await;
            self.changes.touch();
            return done;
        }
        for key in keys {
            let item = match record.action {
                ActionKind::BulkRenew => self.renew_as(caller, &key, dry_run, true, true).await,
                _ => self.edit_in_place_as(caller, &key, dry_run, true).await,
            };
            let item = item.unwrap_or_else(|e| {
                let mut r = self.record(caller, record.action, record.kind, &key, dry_run);
                r.outcome = match e {
                    ActionError::NotFound(_) => Outcome::NotFound,
                    ActionError::ReadOnly | ActionError::Forbidden(_) => Outcome::Refused,
                };
                r.message = "the object is gone".into();
                r
            });
            let now = {
                let mut r = shared.lock().expect("record lock");
                r.items.push(item);
                r.message = format!("{} of {} items done", r.items.len(), r.total);
                r.clone()
            };
            self.store(&now);
            self.changes.touch();
        }
        let done = {
            let mut r = shared.lock().expect("record lock");
            let failed = r.items.iter().filter(|i| !i.outcome.succeeded()).count();
            r.outcome = if failed == 0 {
                Outcome::Ok
            } else {
                Outcome::Partial
            };
            let left = match r.skipped.len() {
                0 => String::new(),
                n => format!("; {n} left alone"),
            };
            r.message = if r.items.is_empty() && !r.skipped.is_empty() {
                format!(
                    "{}nothing to run{left}: each would be refused or fail the same way",
                    if dry_run { "Preview: " } else { "" },
                )
            } else {
                format!(
                    "{}{} of {} items ok{}{left}",
                    if dry_run { "Preview: " } else { "" },
                    r.items.len() - failed,
                    r.items.len(),
                    if failed > 0 {
                        format!(", {failed} not")
                    } else {
                        String::new()
                    }
                )
            };
            r.clone()
        };
        self.store(&done);
        self.audit(&done).await;
        self.changes.touch();
        done
    }
}

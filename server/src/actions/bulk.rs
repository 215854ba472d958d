//! Bulk runs: edit-in-place or renew over a namespace, a cluster or everything the caller
//! sees, previewed as a whole, with per-item outcomes and progress.

use super::*;
use lookout_app::model::read::views::CertificateStatus;

impl Actions {
    /// The Ingresses a bulk edit-in-place covers: those that ask for a certificate and lack
    /// the annotation, or have it without effect.
    fn bulk_ingresses(&self, caller: &Caller, target: &BulkTarget) -> Vec<ObjectKey> {
        self.registry
            .ingresses(
                &caller.view,
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
                ) && caller
                    .view
                    .may_act(&r.ingress.cluster, &r.ingress.namespace)
            })
            .map(|r| ObjectKey {
                cluster: r.ingress.cluster.as_ref().into(),
                namespace: r.ingress.namespace.as_ref().into(),
                name: r.ingress.name.to_string(),
            })
            .collect()
    }

    /// The Certificates a bulk renew covers: those that are not ready or failing.
    fn bulk_certificates(&self, caller: &Caller, target: &BulkTarget) -> Vec<CertificateDetail> {
        let mut keys: Vec<ObjectKey> = Vec::new();
        for status in [CertificateStatus::NotReady, CertificateStatus::Failing] {
            let page = self.registry.certificates(
                &caller.view,
                &CertificateQuery {
                    cluster: target.cluster.clone(),
                    namespace: target.namespace.clone(),
                    status: Some(status),
                    page: 1,
                    per_page: usize::MAX,
                    ..Default::default()
                },
            );
            for row in page.items.into_iter().filter(|r| {
                caller
                    .view
                    .may_act(&r.certificate.cluster, &r.certificate.namespace)
            }) {
                let k = ObjectKey {
                    cluster: row.certificate.cluster.as_ref().into(),
                    namespace: row.certificate.namespace.as_ref().into(),
                    name: row.certificate.name.to_string(),
                };
                if !keys.contains(&k) {
                    keys.push(k);
                }
            }
        }
        keys.iter()
            .filter_map(|k| self.registry.certificate(&caller.view, k))
            .collect()
    }

    /// Plans a bulk run: the record with its total and, for renew, the budget impact of all
    /// items together. Nothing runs yet.
    pub async fn plan_bulk(
        &self,
        caller: &Caller,
        action: ActionKind,
        target: &BulkTarget,
        dry_run: bool,
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
        let clusters = match &target.cluster {
            Some(c) if known.contains(c) => vec![c.clone()],
            Some(_) => Vec::new(),
            None => known,
        };
        let reachable = clusters.iter().any(|c| match &target.namespace {
            Some(ns) => caller.view.may_act(c, ns),
            None => caller.view.may_act_in(c),
        });
        if !reachable {
            return Err(ActionError::NotFound(format!(
                "There is nothing {} you may change.",
                match (&target.cluster, &target.namespace) {
                    (Some(c), Some(ns)) => format!("in namespace {ns} of cluster {c}"),
                    (Some(c), None) => format!("in cluster {c}"),
                    (None, Some(ns)) => format!("in a namespace {ns}"),
                    (None, None) => "anywhere".to_string(),
                }
            )));
        }
        let key = ObjectKey {
            cluster: target.cluster.clone().unwrap_or_default().into(),
            namespace: target.namespace.clone().unwrap_or_default().into(),
            name: String::new(),
        };
        let (kind, keys, budget) = match action {
            ActionKind::BulkRenew => {
                let certs = self.bulk_certificates(caller, target);
                let planned: Vec<Planned> = certs.iter().filter_map(|c| self.planned(c)).collect();
                let keys = certs
                    .iter()
                    .map(|d| ObjectKey {
                        cluster: d.chain.certificate.cluster.as_ref().into(),
                        namespace: d.chain.certificate.namespace.as_ref().into(),
                        name: d.chain.certificate.name.to_string(),
                    })
                    .collect();
                ("Certificate", keys, self.impact_for(caller, &planned))
            }
            _ => ("Ingress", self.bulk_ingresses(caller, target), Vec::new()),
        };
        let mut r = self.record(caller, action, kind, &key, dry_run);
        r.total = keys.len();
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
                let mut r = self.record(caller, record.action, &record.kind, &key, dry_run);
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
        self.store(&done);
        self.audit(&done).await;
        self.changes.touch();
        done
    }
}

//! Renewing a Certificate as `cmctl renew` does, after a Let's Encrypt budget check.

use super::*;

impl Actions {
    /// What planned issuances cost of the budgets, as the caller may see it.
    pub(super) fn impact_for(&self, caller: &Caller, planned: &[Planned]) -> Vec<Impact> {
        self.budgets.impact_seen(&caller.view, planned)
    }

    /// The record of an action that issues a Certificate again (renew, restart): actions on,
    /// the Certificate visible, the caller allowed to act, and the budget check — the record
    /// comes back `Refused` (not yet finished) when it would exceed a budget unconfirmed.
    pub(super) fn certificate_record(
        &self,
        caller: &Caller,
        key: &ObjectKey,
        action: ActionKind,
        dry_run: bool,
        confirm_budget: bool,
    ) -> Result<ActionRecord, ActionError> {
        self.check_writable()?;
        let detail = self
            .registry
            .certificate(&caller.view, key)
            .ok_or_else(|| not_found("Certificate", key))?;
        may_act(caller, key)?;
        let mut r = self.record(caller, action, Kind::Certificate.model(), key, dry_run);
        r.budget = self.impact_for(
            caller,
            &self.planned(&detail).into_iter().collect::<Vec<_>>(),
        );
        r.needs_confirmation = r.budget.iter().any(|b| b.exceeds);
        if let Some(cause) = self.unfixed_cause(
            caller,
            key,
            &detail.chain.certificate,
            detail.ingress.as_deref(),
        ) {
            r.outcome = Outcome::Refused;
            r.message = cause;
        } else if r.needs_confirmation && !confirm_budget && !dry_run {
            r.outcome = Outcome::Refused;
            r.message = budget_message(&r);
        }
        Ok(r)
    }

    /// Why issuing the Certificate again now would fail the same way, if it would: the root
    /// cause of a problem it is part of, and what to fix first.
    fn unfixed_cause(
        &self,
        caller: &Caller,
        key: &ObjectKey,
        certificate: &lookout_app::model::certificate::CertificateView,
        ingress: Option<&str>,
    ) -> Option<String> {
        let q = lookout_app::model::read::views::ProblemQuery {
            cluster: Some(key.cluster.to_string()),
            namespace: Some(key.namespace.to_string()),
            // Every problem of the namespace, not a page of them: in a namespace with more
            // than a page, the Certificate's own could be on a later one.
            page: 1,
            per_page: usize::MAX,
            ..Default::default()
        };
        // Whether it would fail does not depend on who asks: judged on the whole cluster (a
        // ClusterIssuer that is not ready blocks a tenant's renew too). What is said does.
        let everything = self.registry.whole_fleet();
        let problems = lookout_app::ports::FleetReader::problems(&*self.registry, &everything, &q);
        let lookout_app::model::read::offer::Offer::Blocked(p) =
            lookout_app::model::read::offer::issue_again(
                certificate,
                ingress,
                &problems.page.items,
            )
        else {
            return None;
        };
        let p = p.clone();
        // Told as the caller may see it: the same problem in their own list, with its root
        // when that is theirs to see. A root in a namespace is the same root when it is the
        // same rule about the same object (its words may move on between the two reads: a
        // retry time, a newer revision of the cluster); a cluster-scoped root (an issuer) is
        // told to a reader of part of the cluster in other words, so it must read the same.
        let same_root = |told: &lookout_app::model::Finding| {
            if p.root.needs_whole_cluster() {
                *told == *p.root
            } else {
                told.rule == p.root.rule
                    && told.kind == p.root.kind
                    && told.namespace == p.root.namespace
                    && told.name == p.root.name
            }
        };
        let visible = lookout_app::ports::FleetReader::problems(&*self.registry, &caller.view, &q)
            .page
            .items
            .iter()
            .any(|told| told.id == p.id && same_root(&told.root));
        if !visible {
            // A cluster-scoped root (the issuer): its readiness is the tenant's business,
            // its details and who else depends on it are not.
            return Some(
                "Issuing again now would fail the same way: the issuer this Certificate uses is not usable right now (missing or not ready). The cluster's operators see the details; issue again once it is fixed.".into(),
            );
        }
        let place = p.action.href.map(|h| format!(" ({h})")).unwrap_or_default();
        Some(format!(
            "Issuing again now would fail the same way and spend Let's Encrypt's budgets: {}. Fix that first — {}{place} — then issue again.",
            p.diagnosis,
            p.action.label.to_lowercase()
        ))
    }

    /// What renewing these Certificates costs of the budgets.
    pub(super) fn planned(&self, detail: &CertificateDetail) -> Option<Planned> {
        let issuer = detail.chain.issuer.as_ref()?;
        let server = issuer.acme_server_url.clone()?;
        let c = &detail.chain.certificate;
        let names: Vec<String> = c.dns_names.iter().map(|n| n.to_string()).collect();
        Some(Planned {
            server: server.to_string(),
            account: Some(lookout_app::model::budget::account(
                &c.cluster,
                &c.namespace,
                &issuer.kind,
                &issuer.name,
            )),
            // A renewal for Let's Encrypt: this exact set issued in the last 120 days — the
            // Certificate's notBefore is its latest issuance; the history may know a later one.
            renewal: lookout_app::model::budget::is_renewal(
                &server,
                &names,
                c.not_before,
                self.now(),
                &self.budgets.all(),
            ),
            names,
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

    pub(super) async fn renew_as(
        &self,
        caller: &Caller,
        key: &ObjectKey,
        dry_run: bool,
        confirm_budget: bool,
        item: bool,
    ) -> Result<ActionRecord, ActionError> {
        let mut r =
            self.certificate_record(caller, key, ActionKind::Renew, dry_run, confirm_budget)?;
        if r.outcome == Outcome::Refused {
            return Ok(self.finish(r, item).await);
        }
        let s = match self.client_or_step(caller, key, Kind::Certificate, "set Issuing=True") {
            Ok(client) => self.renew_step(&client, key, dry_run).await,
            Err(s) => *s,
        };
        if s.outcome == Outcome::NotFound {
            return Err(not_found("Certificate", key));
        }
        r.steps.push(s);
        Ok(self.finish(r, item).await)
    }

    pub(super) async fn renew_step(
        &self,
        client: &kube::Client,
        key: &ObjectKey,
        dry_run: bool,
    ) -> Step {
        let mut s = step(
            Kind::Certificate,
            &key.namespace,
            &key.name,
            "set condition Issuing=True, reason ManuallyTriggered, on the status (as cmctl renew)",
        );
        for _ in 0..RENEW_ATTEMPTS {
            let mut live =
                match requests::get(client, Kind::Certificate, &key.namespace, &key.name).await {
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
            match requests::replace_status(client, Kind::Certificate, &live, dry_run).await {
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
}

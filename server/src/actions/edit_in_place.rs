//! Adding edit-in-place to an Ingress (and the override annotations to its Certificate, and
//! the restart of an issuance that would otherwise keep its old solver), and undoing it.

use super::*;

impl Actions {
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

    /// The fix as one plan, applied all or nothing: the Ingress annotation, then for each of
    /// its Certificates the override annotations and what the issuance needs (restart the
    /// request in flight, renew one in backoff, or nothing). Every step is first tried as a
    /// dry run; a real run changes nothing unless every step can be done.
    pub(super) async fn edit_in_place_as(
        &self,
        caller: &Caller,
        key: &ObjectKey,
        dry_run: bool,
        item: bool,
    ) -> Result<ActionRecord, ActionError> {
        let detail = self.ingress_to_change(caller, key)?;
        let mut r = self.record(
            caller,
            ActionKind::EditInPlace,
            Kind::Ingress.model(),
            key,
            dry_run,
        );
        let client = match self.client_or_step(caller, key, Kind::Ingress, "set the annotation") {
            Ok(c) => c,
            Err(s) => {
                r.steps.push(*s);
                return Ok(self.finish(r, item).await);
            }
        };
        let certificates: Vec<CertificateDetail> = detail
            .tls
            .iter()
            .filter_map(|t| t.certificate.as_ref())
            .filter_map(|chain| {
                self.registry.certificate(
                    &caller.view,
                    &ObjectKey {
                        cluster: key.cluster.clone(),
                        namespace: key.namespace.clone(),
                        name: chain.certificate.name.to_string(),
                    },
                )
            })
            .collect();
        let preview = self.fix_steps(&client, key, &certificates, true).await;
        if preview[0].outcome == Outcome::NotFound {
            return Err(not_found("Ingress", key));
        }
        // A policy meant to set it stays its owner: said on the step that sets it.
        let stop_gap = |steps: &mut Vec<Step>| {
            if let (Some(p), Some(s)) = (&detail.policy, steps.first_mut()) {
                if s.outcome.succeeded() && s.outcome != Outcome::Unchanged {
                    let said = s
                        .message
                        .take()
                        .map(|m| format!("{m}; "))
                        .unwrap_or_default();
                    s.message = Some(format!(
                        "{said}a stop-gap: the {} ({}) remains the owner of this annotation — repair it so it sets the annotation on every Ingress it covers",
                        p.label, p.status
                    ));
                }
            }
        };
        if dry_run {
            r.steps = preview;
            stop_gap(&mut r.steps);
            return Ok(self.finish(r, item).await);
        }
        if let Some(blocker) = preview.iter().find(|s| !s.outcome.succeeded()) {
            let why = format!(
                "{} {}/{} cannot be done ({}: {})",
                blocker.kind,
                blocker.namespace,
                blocker.name,
                blocker.outcome.label(),
                blocker.message.clone().unwrap_or_default()
            );
            r.message = format!("Nothing was changed: {why}. The fix is applied whole or not at all; resolve that step and run it again.");
            r.steps = preview
                .into_iter()
                .map(|mut s| {
                    if s.outcome.succeeded() {
                        s.outcome = Outcome::Refused;
                        s.message = Some(format!("not applied, because {why}"));
                        s.diff.clear();
                    }
                    s
                })
                .collect();
            return Ok(self.finish(r, item).await);
        }
        r.steps = self.fix_steps(&client, key, &certificates, false).await;
        stop_gap(&mut r.steps);
        Ok(self.finish(r, item).await)
    }

    /// The fix's steps, in order, as a dry run or for real.
    async fn fix_steps(
        &self,
        client: &kube::Client,
        key: &ObjectKey,
        certificates: &[CertificateDetail],
        dry_run: bool,
    ) -> Vec<Step> {
        let mut steps = vec![self.ingress_step(client, key, dry_run).await];
        if steps[0].outcome == Outcome::NotFound {
            return steps;
        }
        for cert in certificates {
            let name = cert.chain.certificate.name.to_string();
            steps.push(
                self.certificate_override_step(client, &key.namespace, &name, &key.name, dry_run)
                    .await,
            );
            steps.push(
                self.issuance_step(client, key, cert, &key.name, dry_run)
                    .await,
            );
        }
        steps
    }

    async fn ingress_step(&self, client: &kube::Client, key: &ObjectKey, dry_run: bool) -> Step {
        let mut s = step(
            Kind::Ingress,
            &key.namespace,
            &key.name,
            format!("set {EDIT_IN_PLACE}: \"true\" (server-side apply, field manager lookout)"),
        );
        let live = match requests::get(client, Kind::Ingress, &key.namespace, &key.name).await {
            Ok(o) => o,
            Err(e) => return failed(s, e),
        };
        let before = requests::annotations(&live);
        if before.get(EDIT_IN_PLACE).map(String::as_str) == Some("true") {
            s.outcome = Outcome::Unchanged;
            let owners = requests::annotation_owners(&live, EDIT_IN_PLACE);
            s.message = Some(format!(
                "already \"true\" (owned by {})",
                owners_text(&owners)
            ));
            return s;
        }
        let want = BTreeMap::from([(EDIT_IN_PLACE.to_string(), "true".to_string())]);
        match requests::apply_annotations(
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
                s.diff = requests::annotation_diff(&before, &requests::annotations(&after));
                s
            }
            Err(CallError::Conflict(message)) => {
                let owners = requests::annotation_owners(&live, EDIT_IN_PLACE);
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
        client: &kube::Client,
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
        let live = match requests::get(client, Kind::Certificate, ns, cert).await {
            Ok(o) => o,
            Err(e) => return failed(s, e),
        };
        let before = requests::annotations(&live);
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
        match requests::apply_annotations(client, Kind::Certificate, ns, cert, &want, dry_run).await
        {
            Ok(after) => {
                s.diff = requests::annotation_diff(&before, &requests::annotations(&after));
                s
            }
            Err(CallError::Conflict(message)) => {
                let owners: Vec<_> = want
                    .keys()
                    .flat_map(|k| requests::annotation_owners(&live, k))
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
        let mut r = self.record(
            caller,
            ActionKind::UndoEditInPlace,
            Kind::Ingress.model(),
            key,
            dry_run,
        );
        let client =
            match self.client_or_step(caller, key, Kind::Ingress, "remove Lookout's fields") {
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
        client: &kube::Client,
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
        let live = match requests::get(client, kind, ns, name).await {
            Ok(o) => o,
            Err(e) => return failed(s, e),
        };
        if !requests::lookout_owns_something(&live) {
            s.outcome = Outcome::Unchanged;
            s.message = Some("Lookout owns nothing here".into());
            return s;
        }
        let before = requests::annotations(&live);
        match requests::apply_annotations(client, kind, ns, name, &BTreeMap::new(), dry_run).await {
            Ok(after) => {
                s.diff = requests::annotation_diff(&before, &requests::annotations(&after));
                if s.diff.is_empty() {
                    s.message = Some("other managers also own these fields; they stay".into());
                }
                s
            }
            Err(e) => failed(s, e),
        }
    }
}

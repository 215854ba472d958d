//! Restarting an issuance that cannot heal: cert-manager fixes a Challenge's solver when it
//! creates it, from annotations copied Certificate → CertificateRequest → Order at their
//! creation (DOMAIN §9.1). A pending challenge therefore keeps the solver it was made with;
//! only a new CertificateRequest, made from the Certificate as it is now, brings new
//! overrides to a challenge. Deleting the in-flight request (its Order and Challenges go with
//! it) makes cert-manager's request manager create the next one at once, while `Issuing`
//! stays True. A Certificate in backoff (`Issuing` not True) is renewed instead, as
//! `cmctl renew` does.
//!
//! The fix prefers a lighter last step when cert-manager allows it: its Order controller
//! computes the Challenges a pending Order needs on every sync from the issuer and the
//! Order's own annotations, and replaces a pending Challenge whose solver changed
//! (`pkg/controller/acmeorders/sync.go`). So while the in-flight Order is pending and none of
//! its Challenges has failed, the fix annotates the Order with the override instead: the same
//! ACME order and authorization, no new request, no new order spent from Let's Encrypt's
//! budget. If no Challenge on the Ingress appears within [`REQUEST_WAIT`], it restarts the
//! request after all.

use super::*;

/// What a Certificate's issuance needs after the overrides, read from the live objects.
enum Needed {
    /// A request in flight that predates the override: delete it (name, uid).
    Delete { request: String, uid: String },
    /// Its Order is pending with no failed Challenge: annotate the Order (name) with the
    /// override, cert-manager re-solves in place. `request`/`uid` for the fallback.
    Resolve {
        order: String,
        request: String,
        uid: String,
    },
    /// In backoff or not ready, no request in flight: renew.
    Renew,
    /// Nothing now, for the reason given.
    Nothing(String),
    /// `Issuing=True` and cert-manager has not made the request yet: it makes it from the
    /// Certificate as it then reads it — which may be from before the override was written.
    NotYet,
}

/// How long a real fix waits for cert-manager to make a request it is about to make, to
/// check that the request carries the override (and restart it if not).
const REQUEST_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The in-flight request of a Certificate: owned by it, for the revision being issued
/// (`status.revision + 1`), as cert-manager's request manager names it.
fn in_flight<'o>(
    cert: &kube::api::DynamicObject,
    requests: &'o [kube::api::DynamicObject],
) -> Option<&'o kube::api::DynamicObject> {
    let uid = cert.metadata.uid.as_deref()?;
    let next = cert
        .data
        .pointer("/status/revision")
        .and_then(serde_json::Value::as_i64)
        .unwrap_or(0)
        + 1;
    requests.iter().find(|r| {
        let owned = controller(r).is_some_and(|o| o.uid == uid);
        let revision = r
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("cert-manager.io/certificate-revision"))
            .and_then(|v| v.parse::<i64>().ok());
        owned && revision == Some(next) && r.metadata.deletion_timestamp.is_none()
    })
}

/// The owner reference marked as the object's controller.
fn controller(
    obj: &kube::api::DynamicObject,
) -> Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference> {
    obj.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
}

fn issuing(cert: &kube::api::DynamicObject) -> bool {
    cert.data
        .pointer("/status/conditions")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Issuing" && c["status"] == "True")
}

/// Whether the Certificate needs another attempt: failures counted, or not Ready.
fn failing(cert: &kube::api::DynamicObject) -> bool {
    let status = &cert.data["status"];
    let ready = status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True");
    status["failedIssuanceAttempts"].as_i64().unwrap_or(0) > 0
        || status.get("lastFailureTime").is_some_and(|t| !t.is_null())
        || !ready
}

impl Actions {
    /// Reads what the issuance of `cert` needs. `override_for`: the Ingress the fix points
    /// the Certificate at (a request that already carries it is left alone); `None` for the
    /// plain restart, which replaces any request in flight.
    async fn needed(
        client: &kube::Client,
        ns: &str,
        cert: &str,
        override_for: Option<&str>,
    ) -> Result<Needed, CallError> {
        let live = requests::get(client, Kind::Certificate, ns, cert).await?;
        if issuing(&live) {
            let all = requests::list(client, Kind::CertificateRequest, ns).await?;
            let Some(request) = in_flight(&live, &all) else {
                return Ok(Needed::NotYet);
            };
            let name = request.metadata.name.clone().unwrap_or_default();
            let carries = override_for.is_some_and(|ingress| {
                requests::annotations(request)
                    .get(OVERRIDE_INGRESS_NAME)
                    .map(String::as_str)
                    == Some(ingress)
            });
            if carries {
                return Ok(Needed::Nothing(format!(
                    "CertificateRequest {name} in flight already carries {OVERRIDE_INGRESS_NAME}"
                )));
            }
            let uid = request.metadata.uid.clone().unwrap_or_default();
            if let Some(ingress) = override_for {
                if let Some(order) = Self::re_solvable(client, ns, &uid, ingress).await? {
                    return Ok(Needed::Resolve {
                        order,
                        request: name,
                        uid,
                    });
                }
            }
            return Ok(Needed::Delete { request: name, uid });
        }
        if failing(&live) {
            Ok(Needed::Renew)
        } else {
            Ok(Needed::Nothing(
                "the certificate is valid and not being issued; its next renewal uses the overrides".into(),
            ))
        }
    }

    /// The Order of request `uid` when cert-manager can re-solve its Challenges in place: it
    /// is pending (not failed, not done) and none of its Challenges failed. None when the
    /// request has no Order yet, or it already carries the override with a Challenge on
    /// `ingress` (nothing left for the Order: the request is then restarted).
    async fn re_solvable(
        client: &kube::Client,
        ns: &str,
        request_uid: &str,
        ingress: &str,
    ) -> Result<Option<String>, CallError> {
        let controlled_by =
            |o: &kube::api::DynamicObject, uid: &str| controller(o).is_some_and(|r| r.uid == uid);
        let orders = requests::list(client, Kind::Order, ns).await?;
        let Some(order) = orders.iter().find(|o| controlled_by(o, request_uid)) else {
            return Ok(None);
        };
        let state = order.data["status"]["state"].as_str().unwrap_or_default();
        if !matches!(state, "" | "pending") || order.metadata.deletion_timestamp.is_some() {
            return Ok(None);
        }
        let order_uid = order.metadata.uid.clone().unwrap_or_default();
        let challenges = requests::list(client, Kind::Challenge, ns).await?;
        let mine: Vec<_> = challenges
            .iter()
            .filter(|c| controlled_by(c, &order_uid))
            .collect();
        let failed = mine.iter().any(|c| {
            matches!(
                c.data["status"]["state"].as_str(),
                Some("invalid" | "errored" | "expired")
            )
        });
        let on_ingress = |c: &&&kube::api::DynamicObject| {
            c.data["spec"]["solver"]["http01"]["ingress"]["name"].as_str() == Some(ingress)
        };
        if failed || mine.is_empty() || mine.iter().all(|c| on_ingress(&c)) {
            return Ok(None);
        }
        Ok(order.metadata.name.clone())
    }

    /// Annotates the in-flight Order with the override: cert-manager's Order controller
    /// replaces its pending Challenges with ones solved on `ingress`.
    async fn re_solve_step(
        client: &kube::Client,
        ns: &str,
        order: &str,
        ingress: &str,
        dry_run: bool,
    ) -> Step {
        let mut s = step(
            Kind::Order,
            ns,
            order,
            format!("have cert-manager solve the pending challenge on Ingress {ingress}: annotate the in-flight ACME Order; its controller replaces the Challenge in place — the same order and authorization, no new request, no new order spent from Let's Encrypt's budget"),
        );
        let wanted: BTreeMap<String, String> =
            [(OVERRIDE_INGRESS_NAME.to_string(), ingress.to_string())].into();
        match requests::apply_annotations(client, Kind::Order, ns, order, &wanted, dry_run).await {
            Ok(_) => {
                s.diff = vec![format!(
                    "+ metadata.annotations[\"{OVERRIDE_INGRESS_NAME}\"]: \"{ingress}\""
                )];
                s
            }
            Err(e) => failed(s, e),
        }
    }

    /// After annotating the Order: whether a Challenge solved on `ingress` appears within
    /// [`REQUEST_WAIT`].
    async fn re_solved(client: &kube::Client, ns: &str, order: &str, ingress: &str) -> bool {
        let until = tokio::time::Instant::now() + REQUEST_WAIT;
        while tokio::time::Instant::now() < until {
            if let Ok(all) = requests::list(client, Kind::Challenge, ns).await {
                let seen = all.iter().any(|c| {
                    controller(c).is_some_and(|r| r.name == order)
                        && c.data["spec"]["solver"]["http01"]["ingress"]["name"].as_str()
                            == Some(ingress)
                });
                if seen {
                    return true;
                }
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
        false
    }

    /// After the in-flight request `old_uid` was deleted: what cert-manager made next, in
    /// words, once it can be told — its next request and that request's Order, or that the
    /// Order waits for its predecessor's (same name: cert-manager computes it from the
    /// request's name and spec) to be removed by Kubernetes' garbage collector. Bounded by
    /// [`REQUEST_WAIT`].
    async fn next_attempt(client: &kube::Client, ns: &str, cert: &str, old_uid: &str) -> String {
        let until = tokio::time::Instant::now() + REQUEST_WAIT;
        let mut seen: Option<String> = None;
        while tokio::time::Instant::now() < until {
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            let Ok(live) = requests::get(client, Kind::Certificate, ns, cert).await else {
                continue;
            };
            let Ok(all) = requests::list(client, Kind::CertificateRequest, ns).await else {
                continue;
            };
            let Some(next) =
                in_flight(&live, &all).filter(|r| r.metadata.uid.as_deref() != Some(old_uid))
            else {
                continue;
            };
            let (name, uid) = (
                next.metadata.name.clone().unwrap_or_default(),
                next.metadata.uid.clone().unwrap_or_default(),
            );
            seen = Some(name.clone());
            let Ok(orders) = requests::list(client, Kind::Order, ns).await else {
                continue;
            };
            let owner = |o: &kube::api::DynamicObject| {
                controller(o)
                    .filter(|r| r.kind == "CertificateRequest")
                    .map(|r| (r.name.clone(), r.uid.clone()))
            };
            if let Some(own) = orders
                .iter()
                .find(|o| owner(o).is_some_and(|(_, u)| u == uid))
            {
                return format!(
                    "cert-manager made CertificateRequest {name} and its Order {}",
                    own.metadata.name.as_deref().unwrap_or_default()
                );
            }
            if let Some(old) = orders
                .iter()
                .find(|o| owner(o).is_some_and(|(n, u)| n == name && u != uid))
            {
                return format!(
                    "cert-manager made CertificateRequest {name}; its Order waits for the old Order {} to be removed — it holds the name cert-manager gives the new one, and Kubernetes' garbage collector removes it shortly after the deleted request (cert-manager retries until then)",
                    old.metadata.name.as_deref().unwrap_or_default()
                );
            }
        }
        match seen {
            Some(name) => format!("cert-manager made CertificateRequest {name}; its Order is not there yet"),
            None => format!("cert-manager has not made the next request within {} s; it makes it from the Certificate as it is now", REQUEST_WAIT.as_secs()),
        }
    }

    /// Deletes the in-flight request, with its uid as a precondition.
    async fn delete_request_step(
        client: &kube::Client,
        ns: &str,
        cert: &str,
        request: &str,
        uid: &str,
        dry_run: bool,
    ) -> Step {
        let mut s = step(
            Kind::CertificateRequest,
            ns,
            request,
            format!("restart the issuance of Certificate {cert}: delete its in-flight CertificateRequest (with its Order and Challenges); cert-manager makes a new one from the Certificate as it is now"),
        );
        match requests::delete(client, Kind::CertificateRequest, ns, request, uid, dry_run).await {
            Ok(()) => {
                s.diff = vec![format!("- CertificateRequest {request}")];
                s
            }
            Err(e) => failed(s, e),
        }
    }

    /// The last step of the fix for one Certificate: restart, renew or nothing, whichever
    /// its state needs. A renew that would exceed a budget is left to cert-manager's backoff.
    pub(super) async fn issuance_step(
        &self,
        client: &kube::Client,
        key: &ObjectKey,
        detail: &CertificateDetail,
        ingress: &str,
        dry_run: bool,
    ) -> Step {
        let cert = detail.chain.certificate.name.to_string();
        let ns = key.namespace.as_str();
        let mut needed = Self::needed(client, ns, &cert, Some(ingress)).await;
        // A request about to be made may have been made from the Certificate as cert-manager
        // read it before the override: for real, wait for it and look.
        let until = tokio::time::Instant::now() + REQUEST_WAIT;
        while !dry_run
            && matches!(needed, Ok(Needed::NotYet))
            && tokio::time::Instant::now() < until
        {
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            needed = Self::needed(client, ns, &cert, Some(ingress)).await;
        }
        let needed = match needed {
            Ok(n) => n,
            Err(e) => {
                return failed(
                    step(
                        Kind::Certificate,
                        ns,
                        &cert,
                        "restart or renew the issuance",
                    ),
                    e,
                )
            }
        };
        match needed {
            Needed::Delete { request, uid } => {
                let mut s =
                    Self::delete_request_step(client, ns, &cert, &request, &uid, dry_run).await;
                if !dry_run && s.outcome.succeeded() {
                    Self::settle(client, ns, &cert, ingress, &mut s).await;
                    s.message = Some(Self::next_attempt(client, ns, &cert, &uid).await);
                }
                s
            }
            Needed::Resolve {
                order,
                request,
                uid,
            } => {
                let mut s = Self::re_solve_step(client, ns, &order, ingress, dry_run).await;
                if dry_run || !s.outcome.succeeded() {
                    return s;
                }
                if Self::re_solved(client, ns, &order, ingress).await {
                    s.message = Some(format!(
                        "cert-manager replaced the pending challenge of Order {order} with one solved on Ingress {ingress}"
                    ));
                    return s;
                }
                // This cert-manager did not re-solve in place: restart the request instead.
                // No settling here: the Certificate has carried the overrides for the whole
                // wait, so the next request has them — and the answer must come within the
                // server's request timeout (the wait above and the next one's).
                let r = Self::delete_request_step(client, ns, &cert, &request, &uid, false).await;
                if r.outcome.succeeded() {
                    s.diff.extend(r.diff);
                    let next = Self::next_attempt(client, ns, &cert, &uid).await;
                    s.message = Some(format!("no challenge on Ingress {ingress} appeared within {} s of annotating Order {order}; restarted the request instead: {next}", REQUEST_WAIT.as_secs()));
                    s
                } else {
                    r
                }
            }
            Needed::Renew => {
                let budget = impact(
                    &self.budgets.all(),
                    &self.planned(detail).into_iter().collect::<Vec<_>>(),
                );
                if budget.iter().any(|b| b.exceeds) {
                    let mut s = step(Kind::Certificate, ns, &cert, "renew (it is in backoff)");
                    s.outcome = Outcome::Unchanged;
                    s.message = Some("not renewed now: it would exceed a Let's Encrypt budget; cert-manager retries when its backoff ends, with the overrides".into());
                    return s;
                }
                let cert_key = ObjectKey {
                    cluster: key.cluster.clone(),
                    namespace: key.namespace.clone(),
                    name: cert.clone(),
                };
                let mut s = self.renew_step(client, &cert_key, dry_run).await;
                if !dry_run && s.outcome.succeeded() {
                    Self::settle(client, ns, &cert, ingress, &mut s).await;
                }
                s
            }
            Needed::NotYet | Needed::Nothing(_) => {
                let why = match needed {
                    Needed::Nothing(why) => why,
                    _ => "Issuing=True and no request made yet: cert-manager makes it from the Certificate as it is now".into(),
                };
                let mut s = step(
                    Kind::Certificate,
                    ns,
                    &cert,
                    "restart or renew the issuance",
                );
                s.outcome = Outcome::Unchanged;
                s.message = Some(why);
                s
            }
        }
    }

    /// After a restart or renew: cert-manager makes the next request from the Certificate as
    /// its cache holds it, which may lag the override written a moment ago. Checks the new
    /// request for up to [`REQUEST_WAIT`] and replaces it (at most three times) when it was
    /// made without the override.
    async fn settle(client: &kube::Client, ns: &str, cert: &str, ingress: &str, s: &mut Step) {
        let until = tokio::time::Instant::now() + REQUEST_WAIT;
        let mut again = 0;
        while tokio::time::Instant::now() < until && again < 3 {
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            match Self::needed(client, ns, cert, Some(ingress)).await {
                Ok(Needed::NotYet) => continue,
                Ok(Needed::Delete { request, uid }) => {
                    let r =
                        Self::delete_request_step(client, ns, cert, &request, &uid, false).await;
                    if r.outcome.succeeded() {
                        s.diff.extend(r.diff);
                    }
                    again += 1;
                }
                _ => return,
            }
        }
    }

    /// "Restart issuance" on a Certificate: delete the in-flight CertificateRequest of an
    /// issuance stuck with a pending or failing challenge. Refused when nothing is in flight
    /// (renew is the action then). The same budget check, permissions and audit as renew.
    pub async fn restart(
        &self,
        caller: &Caller,
        key: &ObjectKey,
        dry_run: bool,
        confirm_budget: bool,
    ) -> Result<ActionRecord, ActionError> {
        let mut r =
            self.certificate_record(caller, key, ActionKind::Restart, dry_run, confirm_budget)?;
        if r.outcome == Outcome::Refused {
            return Ok(self.finish(r, false).await);
        }
        let client =
            match self.client_or_step(caller, key, Kind::Certificate, "restart the issuance") {
                Ok(c) => c,
                Err(s) => {
                    r.steps.push(*s);
                    return Ok(self.finish(r, false).await);
                }
            };
        let s = match Self::needed(&client, &key.namespace, &key.name, None).await {
            Err(CallError::NotFound) => return Err(not_found("Certificate", key)),
            Err(e) => failed(
                step(Kind::Certificate, &key.namespace, &key.name, "restart the issuance"),
                e,
            ),
            // Only the fix (which knows the Ingress) re-solves in place.
            Ok(Needed::Delete { request, uid } | Needed::Resolve { request, uid, .. }) => {
                let mut s = Self::delete_request_step(
                    &client,
                    &key.namespace,
                    &key.name,
                    &request,
                    &uid,
                    dry_run,
                )
                .await;
                if !dry_run && s.outcome.succeeded() {
                    s.message =
                        Some(Self::next_attempt(&client, &key.namespace, &key.name, &uid).await);
                }
                s
            }
            Ok(Needed::Renew) => refused(key, "it is not being issued (Issuing is not True): nothing to restart; renew it instead"),
            Ok(Needed::Nothing(why)) => refused(key, &why),
            Ok(Needed::NotYet) => refused(key, "Issuing=True and no request made yet: cert-manager makes it from the Certificate as it is now; nothing to restart"),
        };
        r.steps.push(s);
        Ok(self.finish(r, false).await)
    }
}

fn refused(key: &ObjectKey, why: &str) -> Step {
    let mut s = step(
        Kind::Certificate,
        &key.namespace,
        &key.name,
        "restart the issuance",
    );
    s.outcome = Outcome::Refused;
    s.message = Some(why.to_string());
    s
}

//! The ACME side of an issuance: the Order of a CertificateRequest, one Challenge per name,
//! and each Challenge presented, self-checked and validated (or failed) as cert-manager and
//! the CA would.

use super::*;

/// Drives the request through the ACME issuer: Order, Challenges, result.
pub(super) fn acme(api: &Api<'_>, world: &World, cert: &Value, cr: &Value) {
    let (ns, cr_name) = ns_name(cr);
    let issuer_kind = s(cr, "/spec/issuerRef/kind").unwrap_or("Issuer");
    let issuer_name = s(cr, "/spec/issuerRef/name").unwrap_or_default();
    let issuer = if issuer_kind == "ClusterIssuer" {
        api.get(CM, "clusterissuers", None, issuer_name)
    } else {
        api.get(CM, "issuers", Some(ns), issuer_name)
    };
    let Some(issuer) = issuer else {
        let message = format!("Referenced \"{issuer_kind}\" not found: {}.cert-manager.io \"{issuer_name}\" not found", issuer_kind.to_ascii_lowercase());
        return set_request(api, cr, "False", "Pending", &message, false);
    };
    if !is(&issuer, "Ready", "True") {
        return set_request(
            api,
            cr,
            "False",
            "Pending",
            "Referenced issuer does not have a Ready status condition",
            false,
        );
    }
    let Some(server_url) = s(&issuer, "/spec/acme/server") else {
        // A CA or self-signed issuer signs at once.
        return set_request(
            api,
            cr,
            "True",
            "Issued",
            "Certificate fetched from issuer successfully",
            false,
        );
    };
    let server = Server::from_url(server_url);
    let wanted = names(cert);
    let order_name = format!(
        "{cr_name}-{}",
        hash(world.seed, &[ns, cr_name]) % 10_000_000_000
    );
    let order = match api.get(ACME, "orders", Some(ns), &order_name) {
        Some(o) => o,
        None => {
            let limited = server.and_then(|srv| {
                world
                    .letsencrypt
                    .lock()
                    .expect("letsencrypt lock")
                    .check_new_order(srv, &wanted, api.now)
                    .err()
            });
            let mut order = json!({
                "apiVersion": "acme.cert-manager.io/v1", "kind": "Order",
                "metadata": {"name": order_name, "namespace": ns, "annotations": cert.pointer("/metadata/annotations").cloned().unwrap_or(json!({})),
                    "ownerReferences": [{"apiVersion": "cert-manager.io/v1", "kind": "CertificateRequest", "name": cr_name, "uid": cr.pointer("/metadata/uid"), "controller": true, "blockOwnerDeletion": true}]},
                "spec": {"request": cr.pointer("/spec/request"), "issuerRef": cr.pointer("/spec/issuerRef"), "dnsNames": wanted},
            });
            let Some(created) = api.create(ACME, "orders", Some(ns), order.take(), ORDERS) else {
                return;
            };
            let status = match &limited {
                Some(problem) => {
                    json!({"state": "errored", "reason": format!("Failed to create Order: {problem}"), "failureTime": rfc3339(api.now)})
                }
                None => {
                    json!({"state": "pending", "url": format!("{server_url}/order/{}", hash(world.seed, &[&order_name]) % 1_000_000_000)})
                }
            };
            if limited.is_some() {
                api.event(
                    &created,
                    "Order",
                    "Warning",
                    "Failed",
                    status["reason"].as_str().unwrap_or_default(),
                    "cert-manager-orders",
                );
            } else {
                api.event(
                    cr,
                    "CertificateRequest",
                    "Normal",
                    "OrderCreated",
                    &format!("Created Order resource {ns}/{order_name}"),
                    "cert-manager-certificaterequests-issuer-acme",
                );
            }
            api.patch_status(
                ACME,
                "orders",
                Some(ns),
                &order_name,
                &json!({"status": status}),
                ORDERS,
            )
            .unwrap_or(created)
        }
    };
    match s(&order, "/status/state").unwrap_or_default() {
        "valid" => set_request(
            api,
            cr,
            "True",
            "Issued",
            "Certificate fetched from issuer successfully",
            false,
        ),
        state @ ("errored" | "invalid" | "expired") => {
            let message = format!("Failed to wait for order resource \"{order_name}\" to become ready: order is in \"{state}\" state: {}", s(&order, "/status/reason").unwrap_or_default());
            set_request(api, cr, "False", "Failed", &message, true);
        }
        _ => {
            set_request(
                api,
                cr,
                "False",
                "Pending",
                &format!(
                    "Waiting on certificate issuance from order {ns}/{order_name}: \"pending\""
                ),
                false,
            );
            challenges(api, world, cert, &issuer, &order, server);
        }
    }
}

/// Creates and drives one Challenge per name; settles the Order when all are final.
fn challenges(
    api: &Api<'_>,
    world: &World,
    cert: &Value,
    issuer: &Value,
    order: &Value,
    server: Option<Server>,
) {
    let (ns, order_name) = ns_name(order);
    let solver = issuer
        .pointer("/spec/acme/solvers/0")
        .cloned()
        .unwrap_or(json!({"http01": {"ingress": {}}}));
    let override_name = s(
        cert,
        "/metadata/annotations/acme.cert-manager.io~1http01-override-ingress-name",
    )
    .is_some();
    let mut states = Vec::new();
    let names: Vec<String> = order
        .pointer("/spec/dnsNames")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|n| n.as_str().map(str::to_string))
        .collect();
    for dns in &names {
        let ch_name = format!(
            "{order_name}-{}",
            hash(world.seed, &[order_name, dns]) % 10_000_000_000
        );
        let token = format!(
            "{:016x}{:016x}",
            hash(world.seed, &[dns, order_name, "token"]),
            hash(world.seed, &[order_name, dns])
        );
        let ch = match api.get(ACME, "challenges", Some(ns), &ch_name) {
            Some(ch) => ch,
            None => {
                let ch = json!({
                    "apiVersion": "acme.cert-manager.io/v1", "kind": "Challenge",
                    "metadata": {"name": ch_name, "namespace": ns,
                        "ownerReferences": [{"apiVersion": "acme.cert-manager.io/v1", "kind": "Order", "name": order_name, "uid": order.pointer("/metadata/uid"), "controller": true, "blockOwnerDeletion": true}]},
                    "spec": {"dnsName": dns, "type": if solver.get("dns01").is_some() { "DNS-01" } else { "HTTP-01" }, "token": token, "key": format!("{token}.sim"),
                             "url": format!("{}/chall/{token}", s(issuer, "/spec/acme/server").unwrap_or_default()), "solver": solver, "issuerRef": order.pointer("/spec/issuerRef"), "wildcard": false},
                });
                let Some(created) = api.create(ACME, "challenges", Some(ns), ch, ORDERS) else {
                    continue;
                };
                api.patch_status(ACME, "challenges", Some(ns), &ch_name, &json!({"status": {"processing": true, "presented": false, "state": "pending"}}), CHALLENGES).unwrap_or(created)
            }
        };
        states.push(drive_challenge(
            api,
            world,
            &ch,
            &solver,
            override_name,
            server,
        ));
    }
    let (_, cert_name) = ns_name(cert);
    if !states.is_empty() && states.iter().all(|s| s == "valid") {
        if let Some(srv) = server {
            world
                .letsencrypt
                .lock()
                .expect("letsencrypt lock")
                .record_issuance(srv, &names, api.now);
        }
        api.patch_status(
            ACME,
            "orders",
            Some(ns),
            order_name,
            &json!({"status": {"state": "valid"}}),
            ORDERS,
        );
        api.event(
            order,
            "Order",
            "Normal",
            "Complete",
            "Order completed successfully",
            "cert-manager-orders",
        );
    } else if let Some(failed) = states.iter().position(|s| s == "invalid") {
        let reason = format!(
            "Failed to finalize Order: authorization for {} of Certificate {cert_name} is invalid",
            names.get(failed).map(String::as_str).unwrap_or("a name")
        );
        api.patch_status(ACME, "orders", Some(ns), order_name, &json!({"status": {"state": "invalid", "reason": reason, "failureTime": rfc3339(api.now)}}), ORDERS);
    }
}

/// Advances one Challenge; returns its state.
fn drive_challenge(
    api: &Api<'_>,
    world: &World,
    ch: &Value,
    solver: &Value,
    override_name: bool,
    server: Option<Server>,
) -> String {
    let state = s(ch, "/status/state").unwrap_or("pending").to_string();
    if state == "valid" || state == "invalid" {
        return state;
    }
    let (ns, name) = ns_name(ch);
    let dns = s(ch, "/spec/dnsName").unwrap_or_default();
    let token = s(ch, "/spec/token").unwrap_or_default();
    let age = time(ch, "/metadata/creationTimestamp")
        .map(|c| (api.now - c).num_seconds())
        .unwrap_or(0);
    if solver.get("http01").is_none() || age < PRESENT_AFTER {
        // Only HTTP-01 is simulated; other solvers are never presented (the challenge sticks).
        return state;
    }
    let url = format!("http://{dns}/.well-known/acme-challenge/{token}");
    let dns_fails = dns.ends_with(".invalid");
    let redirected = !override_name && cilium::host_redirects(api, dns);
    let self_check = if dns_fails {
        Err(format!("Waiting for HTTP-01 challenge propagation: failed to perform self check GET request '{url}': Get \"{url}\": dial tcp: lookup {dns} on 10.96.0.10:53: no such host"))
    } else if redirected {
        Err(
            "Waiting for HTTP-01 challenge propagation: wrong status code '308', expected '200'"
                .to_string(),
        )
    } else if cilium::proxy_protocol(api) {
        Err(format!("Waiting for HTTP-01 challenge propagation: failed to perform self check GET request '{url}': Get \"{url}\": EOF"))
    } else {
        Ok(())
    };
    let wait = solver
        .get("waitInsteadOfSelfCheck")
        .and_then(Value::as_str)
        .and_then(go_duration);
    let mut status = json!({"presented": true, "processing": true, "state": "pending"});
    let outcome: Option<Result<(), String>> = match (wait, &self_check) {
        (Some(w), _) if age >= w.num_seconds() => Some(if dns_fails {
            Err(format!("DNS problem: NXDOMAIN looking up A for {dns} - check that a DNS record exists for this domain"))
        } else if redirected {
            Err(format!(
                "Invalid response from https://{dns}/.well-known/acme-challenge/{token}: 404"
            ))
        } else {
            Ok(())
        }),
        (Some(_), _) => None,
        (None, Ok(())) if age >= VALIDATE_AFTER => Some(Ok(())),
        (None, Ok(())) => None,
        (None, Err(reason)) => {
            status["reason"] = json!(reason);
            None
        }
    };
    if ch.pointer("/status/presented") != Some(&json!(true)) {
        api.event(
            ch,
            "Challenge",
            "Normal",
            "Presented",
            "Presented challenge using HTTP-01 challenge mechanism",
            "cert-manager-challenges",
        );
    }
    match outcome {
        Some(Ok(())) => {
            status = json!({"presented": false, "processing": false, "state": "valid", "reason": "Successfully authorized domain"});
            api.event(
                ch,
                "Challenge",
                "Normal",
                "DomainVerified",
                &format!("Domain \"{dns}\" verified with \"HTTP-01\" validation"),
                "cert-manager-challenges",
            );
        }
        Some(Err(reason)) => {
            if let Some(srv) = server {
                world
                    .letsencrypt
                    .lock()
                    .expect("letsencrypt lock")
                    .record_failed_authorization(srv, dns, api.now);
            }
            api.event(ch, "Challenge", "Warning", "Failed", &format!("Accepting challenge authorization failed: acme: authorization error for {dns}: 403 urn:ietf:params:acme:error:unauthorized: {reason}"), "cert-manager-challenges");
            status = json!({"presented": false, "processing": false, "state": "invalid", "reason": reason});
        }
        None => {}
    }
    let unchanged = ["presented", "processing", "state", "reason"]
        .iter()
        .all(|k| ch.pointer(&format!("/status/{k}")) == status.get(*k));
    if !unchanged {
        api.patch_status(
            ACME,
            "challenges",
            Some(ns),
            name,
            &json!({"status": status}),
            CHALLENGES,
        );
    }
    status["state"].as_str().unwrap_or("pending").to_string()
}

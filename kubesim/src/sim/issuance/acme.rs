//! The ACME side of an issuance: the Order of a CertificateRequest, one Challenge per name,
//! and each Challenge presented, self-checked and validated (or failed) as cert-manager and
//! the CA would.

use super::solver::{clean_up_solver, present_solver, solver_for};
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
    let order_name = order_name(cr_name, cr, &wanted);
    let order = match api.get(ACME, "orders", Some(ns), &order_name) {
        // The Order of a request deleted before this one under the same name: until the
        // garbage collector removes it, cert-manager retries with backoff and reports nothing
        // on the request (`certificaterequests/acme/acme.go` `Sign`: "found Order resource
        // not owned by this CertificateRequest, retrying").
        Some(o) if s(&o, "/metadata/ownerReferences/0/uid") != s(cr, "/metadata/uid") => return,
        Some(o) => o,
        None => {
            let limited = server.and_then(|srv| {
                world
                    .letsencrypt
                    .lock()
                    .expect("letsencrypt lock")
                    .check_new_order(srv, &account(api, ns, cr), &wanted, api.now, false)
                    .err()
            });
            let mut order = json!({
                "apiVersion": "acme.cert-manager.io/v1", "kind": "Order",
                "metadata": {"name": order_name, "namespace": ns, "labels": cr.pointer("/metadata/labels").cloned().unwrap_or(json!({})), "annotations": cr.pointer("/metadata/annotations").cloned().unwrap_or(json!({})),
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
            challenges(api, world, &issuer, &order, server);
        }
    }
}

/// The Order's name as cert-manager computes it (`certificaterequests/acme/acme.go`
/// `buildOrder`, `pkg/api/util/names.go` `ComputeName`): the request's name and the 32-bit
/// FNV-1 hash of the Order's spec without the CSR, in decimal. A request made again under
/// the same name (`StableCertificateRequestName`) for the same names and issuer computes
/// the same Order name.
fn order_name(cr_name: &str, cr: &Value, names: &[String]) -> String {
    let spec = json!({
        "issuerRef": cr.pointer("/spec/issuerRef"),
        "dnsNames": names,
    });
    let mut hash: u32 = 0x811c_9dc5;
    for b in spec.to_string().bytes() {
        hash = hash.wrapping_mul(0x0100_0193) ^ u32::from(b);
    }
    let prefix: String = cr_name.chars().take(52).collect();
    format!("{}-{hash}", prefix.trim_end_matches(['-', '.']))
}

/// What an application's route answers on any path: its own page.
pub(crate) const APP_PAGE: &str =
    "<!DOCTYPE html><html><head><title>Shop</title></head><body>Welcome</body></html>";

/// Creates and drives one Challenge per name; settles the Order when all are final.
///
/// The Challenges a pending Order needs are computed on every pass from the issuer as it is
/// now and the Order's own annotations, and each is named after a hash of its spec, as
/// cert-manager's Order controller does (`pkg/controller/acmeorders/sync.go`,
/// `buildPartialRequiredChallenges`, `anyLeftoverChallengesExist`; `util.go`
/// `buildPartialChallenge`): when the solver changes under a Challenge that is not final —
/// the issuer's solvers edited, or the Order annotated with an override — a new Challenge for
/// the same authorization (the same token) replaces it, and the old one is deleted with its
/// solver. No new request, no new ACME order.
fn challenges(api: &Api<'_>, world: &World, issuer: &Value, order: &Value, server: Option<Server>) {
    let (ns, order_name) = ns_name(order);
    let mut states = Vec::new();
    let names: Vec<String> = order
        .pointer("/spec/dnsNames")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|n| n.as_str().map(str::to_string))
        .collect();
    let order_uid = s(order, "/metadata/uid").unwrap_or_default();
    let owned: Vec<Value> = api
        .list(ACME, "challenges")
        .into_iter()
        .filter(|c| {
            s(c, "/metadata/namespace") == Some(ns)
                && s(c, "/metadata/ownerReferences/0/uid") == Some(order_uid)
        })
        .collect();
    // Every name's solver first: when one has none, cert-manager makes no Challenge at all,
    // says why in a Warning `Solver` event, and the Order stays pending
    // (`acmeorders/sync.go`, `buildPartialRequiredChallenges`).
    let mut solvers = Vec::new();
    for dns in &names {
        match solver_for(issuer, order, dns) {
            Ok(solver) => solvers.push(solver),
            Err(why) => {
                let first = world
                    .solver_warned
                    .lock()
                    .expect("solver warnings lock")
                    .insert(format!("{}/{order_uid}", api.cluster.name));
                if first {
                    api.event(
                        order,
                        "Order",
                        "Warning",
                        "Solver",
                        &format!("Failed to determine a valid solver configuration for the set of domains on the Order: {why}"),
                        "cert-manager-orders",
                    );
                }
                return;
            }
        }
    }
    for (dns, solver) in names.iter().zip(solvers) {
        // A wildcard's authorization is for the base name (`wildcard: true`).
        let (dns, wildcard) = match dns.strip_prefix("*.") {
            Some(base) => (base.to_string(), true),
            None => (dns.clone(), false),
        };
        let dns = &dns;
        let ch_name = format!(
            "{order_name}-{}",
            hash(world.seed, &[order_name, dns, &solver.to_string()]) % 10_000_000_000
        );
        let token = format!(
            "{:016x}{:016x}",
            hash(world.seed, &[dns, order_name, "token"]),
            hash(world.seed, &[order_name, dns])
        );
        let of_name: Vec<&Value> = owned
            .iter()
            .filter(|c| s(c, "/spec/dnsName") == Some(dns.as_str()))
            .collect();
        // A final Challenge (valid, invalid) stays what it is: the authorization is decided.
        let decided = of_name.iter().find(|c| {
            matches!(
                s(c, "/status/state"),
                Some("valid" | "invalid" | "errored" | "expired")
            )
        });
        if decided.is_none() {
            for leftover in of_name
                .iter()
                .filter(|c| s(c, "/metadata/name") != Some(ch_name.as_str()))
            {
                if let Some(old_solver) = leftover.pointer("/spec/solver") {
                    clean_up_solver(api, leftover, old_solver);
                }
                api.delete(
                    ACME,
                    "challenges",
                    Some(ns),
                    s(leftover, "/metadata/name").unwrap_or_default(),
                );
            }
        }
        let existing = match decided {
            Some(c) => Some((*c).clone()),
            None => api.get(ACME, "challenges", Some(ns), &ch_name),
        };
        let ch = match existing {
            Some(ch) => ch,
            None => {
                let ch = json!({
                    "apiVersion": "acme.cert-manager.io/v1", "kind": "Challenge",
                    "metadata": {"name": ch_name, "namespace": ns,
                        "ownerReferences": [{"apiVersion": "acme.cert-manager.io/v1", "kind": "Order", "name": order_name, "uid": order.pointer("/metadata/uid"), "controller": true, "blockOwnerDeletion": true}]},
                    "spec": {"dnsName": dns, "type": if solver.get("dns01").is_some() { "DNS-01" } else { "HTTP-01" }, "token": token, "key": format!("{token}.sim"),
                             "url": format!("{}/chall/{token}", s(issuer, "/spec/acme/server").unwrap_or_default()), "solver": solver, "issuerRef": order.pointer("/spec/issuerRef"), "wildcard": wildcard},
                });
                // Made without a status: the scheduler gives it a slot (`scheduler.rs`).
                let Some(created) = api.create(ACME, "challenges", Some(ns), ch, ORDERS) else {
                    continue;
                };
                created
            }
        };
        states.push(drive_challenge(api, world, &ch, server));
    }
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
    } else if states.iter().any(|s| s == "invalid") {
        // A failed challenge makes the ACME order invalid; cert-manager copies the state and
        // sets the failure time, and leaves the reason empty
        // (`pkg/controller/acmeorders/sync.go` `updateOrderStatusFromACMEOrder`): the request
        // then reads `order is in "invalid" state: ` with nothing after it.
        api.patch_status(
            ACME,
            "orders",
            Some(ns),
            order_name,
            &json!({"status": {"state": "invalid", "failureTime": rfc3339(api.now)}}),
            ORDERS,
        );
    }
}

/// Advances one Challenge; returns its state. How it is solved comes from its own spec.
fn drive_challenge(api: &Api<'_>, world: &World, ch: &Value, server: Option<Server>) -> String {
    let solver = ch.pointer("/spec/solver").cloned().unwrap_or(json!({}));
    let in_place = s(&solver, "/http01/ingress/name").is_some_and(|n| !n.is_empty());
    let state = s(ch, "/status/state").unwrap_or_default().to_string();
    if state == "valid" || state == "invalid" {
        return state;
    }
    // Queued behind cert-manager's limit of concurrent challenges: nothing happens to it.
    if ch.pointer("/status/processing") != Some(&json!(true)) {
        return state;
    }
    let (ns, name) = ns_name(ch);
    let dns = s(ch, "/spec/dnsName").unwrap_or_default();
    let token = s(ch, "/spec/token").unwrap_or_default();
    let age = time(ch, "/metadata/creationTimestamp")
        .map(|c| (api.now - c).num_seconds())
        .unwrap_or(0);
    if age < PRESENT_AFTER {
        return state;
    }
    if solver.get("dns01").is_some() {
        // DNS-01. Route 53 without a `hostedZoneID` looks the zone up in the account, where
        // kubesim has none: Present fails, and its error is the reason (and, prefixed, the
        // event) while the Challenge stays unpresented (`acmechallenges/sync.go`,
        // `pkg/issuer/acme/dns/route53/route53.go` `getHostedZoneID`). Otherwise the record
        // is written (presented), but no simulated nameserver ever answers with it, so the
        // propagation check waits for ever (`pkg/issuer/acme/dns/dns.go` `Check`,
        // `acmechallenges/readiness.go`).
        let route53 = solver.pointer("/dns01/route53");
        if route53.is_some_and(|r| r.get("hostedZoneID").is_none()) {
            let zone = dns.split_once('.').map_or(dns, |(_, rest)| rest);
            let error = format!("failed to determine Route 53 hosted zone ID: zone {zone}. not found in Route 53 for domain _acme-challenge.{dns}.");
            if s(ch, "/status/reason") != Some(error.as_str()) {
                api.event(
                    ch,
                    "Challenge",
                    "Warning",
                    "PresentError",
                    &format!("Error presenting challenge: {error}"),
                    "cert-manager-challenges",
                );
                api.patch_status(
                    ACME,
                    "challenges",
                    Some(ns),
                    name,
                    &json!({"status": {"presented": false, "processing": true, "state": "pending", "reason": error}}),
                    CHALLENGES,
                );
            }
            return state;
        }
        let reason = format!(
            "Waiting for DNS-01 challenge propagation: DNS record for \"{dns}\" not yet propagated"
        );
        if ch.pointer("/status/presented") != Some(&json!(true)) {
            api.event(
                ch,
                "Challenge",
                "Normal",
                "Presented",
                "Presented challenge using DNS-01 challenge mechanism",
                "cert-manager-challenges",
            );
        }
        if s(ch, "/status/reason") != Some(reason.as_str()) {
            api.patch_status(
                ACME,
                "challenges",
                Some(ns),
                name,
                &json!({"status": {"presented": true, "processing": true, "state": "pending", "reason": reason}}),
                CHALLENGES,
            );
        }
        return state;
    }
    if solver.get("http01").is_none() {
        return state;
    }
    let url = format!("http://{dns}/.well-known/acme-challenge/{token}");
    let dns_fails = dns.ends_with(".invalid");
    let path = format!("/.well-known/acme-challenge/{token}");
    // A separate solver Ingress on a host Cilium redirects is not on the host's plain-HTTP
    // virtual host: the paths the host's TLS Ingresses route answer 301 to HTTPS, where no
    // route leads to the solver, and any other path answers Envoy's bare 404. cert-manager's
    // self-check follows the redirect (Go's client; pkg/issuer/acme/http/http.go) and so
    // does Boulder (va/http.go), which names the URL it fetched.
    //
    // A solver edited in place is a route of the host's TLS Ingress: the redirect covers it
    // too (the seed's problem), and behind it the HTTPS listener routes the token's exact path
    // to the solver — once the listener has a certificate for the host. On a first issuance
    // that is cert-manager's temporary certificate (ingress-shim asks for one with the
    // override; `issuing/temporary.go`); without one the handshake is reset and the challenge
    // fails like any other.
    let enforced = cilium::host_redirects(api, dns);
    let redirected = enforced && cilium::redirect_covers(api, dns, &path);
    let uncovered = enforced && !redirected && !in_place;
    // Behind the redirect, HTTPS: while the host's Secret does not exist the listener resets
    // the handshake (cilium/cilium#26988); with one, the path is routed like any other.
    let reset = redirected && !cilium::tls_secret_exists(api, dns);
    let solver_over_https = in_place && redirected && !reset;
    // A separate solver Ingress of Cilium's class in dedicated mode gets its own address,
    // which the host's DNS does not point at: the request reaches the application's
    // listener, which has no route for the token (cert-manager#6805).
    let own_address = !in_place
        && solver.pointer("/http01/ingress").is_some_and(|cfg| {
            let class = s(cfg, "/ingressClassName").or_else(|| s(cfg, "/class"));
            let probe = json!({"spec": {"ingressClassName": class}});
            class.is_some() && cilium::is_cilium(api, &probe) && cilium::dedicated(api, &probe)
        });
    // When an application route of the host covers the path (a `/` prefix, as most have),
    // the application answers — 200 with its own page, not the key.
    let app_answers = !in_place
        && ((redirected && !reset) || own_address)
        && cilium::app_route_matches(api, dns, &path);
    // A Gateway API solver: its route is served by a port-80 listener that admits it, or
    // Let's Encrypt's request finds no route to the solver there.
    let through_gateway = solver.pointer("/http01/gatewayHTTPRoute").is_some();
    let route_unserved =
        through_gateway && !super::solver::gateway_route_served(api, &solver, ns, dns);
    // The self-check's hairpin reaches the listeners that serve the solver: the Gateway's
    // take PROXY protocol by their own flag, the Ingress ones by theirs.
    let proxy_only = if through_gateway {
        cilium::gateway_proxy_protocol(api)
    } else {
        cilium::proxy_protocol(api)
    };
    let uncovered = uncovered || route_unserved;
    let key = s(ch, "/spec/key").unwrap_or_default();
    let address = lb_address(api, dns);
    let https_url = format!("https://{dns}{path}");
    let self_check = if dns_fails {
        Err(format!("Waiting for HTTP-01 challenge propagation: failed to perform self check GET request '{url}': Get \"{url}\": dial tcp: lookup {dns} on 10.96.0.10:53: no such host"))
    } else if reset {
        // Go's client reading the TLS handshake's answer from the reset connection.
        Err(format!("Waiting for HTTP-01 challenge propagation: failed to perform self check GET request '{url}': Get \"{https_url}\": read tcp 10.244.0.12:41870->{address}:443: read: connection reset by peer"))
    } else if app_answers {
        // `pkg/issuer/acme/http/http.go`: the body is deliberately kept out of the error.
        Err(format!("Waiting for HTTP-01 challenge propagation: did not get expected response \"{key}\" when querying endpoint"))
    } else if (redirected && !solver_over_https) || uncovered || own_address {
        Err(
            "Waiting for HTTP-01 challenge propagation: wrong status code '404', expected '200'"
                .to_string(),
        )
    } else if proxy_only {
        Err(format!("Waiting for HTTP-01 challenge propagation: failed to perform self check GET request '{url}': Get \"{url}\": EOF"))
    } else {
        Ok(())
    };
    let wait = solver
        .get("waitInsteadOfSelfCheck")
        .and_then(Value::as_str)
        .and_then(go_duration);
    let mut status = json!({"presented": true, "processing": true, "state": "pending"});
    // The CA's verdict as cert-manager's acme client words an AuthorizationError.
    let outcome: Option<Result<(), String>> = match (wait, &self_check) {
        (Some(w), _) if age >= w.num_seconds() => Some(if dns_fails {
            Err(format!("acme: authorization error for {dns}: 400 urn:ietf:params:acme:error:dns: DNS problem: NXDOMAIN looking up A for {dns} - check that a DNS record exists for this domain"))
        } else if reset {
            // Boulder's `detailedError`: the IP, the URL it fetched, ECONNRESET's words.
            Err(format!("acme: authorization error for {dns}: 400 urn:ietf:params:acme:error:connection: {address}: Fetching {https_url}: Connection reset by peer"))
        } else if app_answers {
            // Boulder's `validateHTTP01`: the body it got, trimmed, against the key.
            Err(format!("acme: authorization error for {dns}: 403 urn:ietf:params:acme:error:unauthorized: The key authorization file from the server did not match this challenge. Expected \"{key}\" (got \"{APP_PAGE}\")"))
        } else if redirected && !solver_over_https {
            Err(format!("acme: authorization error for {dns}: 403 urn:ietf:params:acme:error:unauthorized: {address}: Invalid response from https://{dns}/.well-known/acme-challenge/{token}: 404"))
        } else if own_address || uncovered {
            Err(format!("acme: authorization error for {dns}: 403 urn:ietf:params:acme:error:unauthorized: {address}: Invalid response from http://{dns}/.well-known/acme-challenge/{token}: 404"))
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
    // Boulder's multi-perspective validation (`va/va.go` `doRemoteOperation`): the primary
    // vantage point passed, but a firewall or allow-list in front of the host keeps out
    // Let's Encrypt's remote ones, whose problem comes back prefixed.
    let outcome = match outcome {
        Some(Ok(())) if world.remote_blocked.iter().any(|p| crate::sim::approver::glob(p, dns)) => {
            Some(Err(format!("acme: authorization error for {dns}: 400 urn:ietf:params:acme:error:connection: During secondary validation: {address}: Fetching {url}: Timeout during connect (likely firewall problem)")))
        }
        other => other,
    };
    if ch.pointer("/status/presented") != Some(&json!(true)) {
        present_solver(api, world, ch, &solver);
        api.event(
            ch,
            "Challenge",
            "Normal",
            "Presented",
            "Presented challenge using HTTP-01 challenge mechanism",
            "cert-manager-challenges",
        );
    }
    if outcome.is_some() {
        clean_up_solver(api, ch, &solver);
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
                    .record_failed_authorization(srv, &account(api, ns, ch), dns, api.now);
            }
            // pkg/controller/acmechallenges/sync.go handleAuthorizationError.
            api.event(
                ch,
                "Challenge",
                "Warning",
                "Failed",
                &format!("Accepting challenge authorization failed: {reason}"),
                "cert-manager-challenges",
            );
            status = json!({"presented": false, "processing": false, "state": "invalid", "reason": format!("Error accepting authorization: {reason}")});
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

/// The ACME account of an object's issuer (`spec.issuerRef`): cert-manager registers one per
/// Issuer or ClusterIssuer, here also per cluster.
pub fn account(api: &Api<'_>, ns: &str, obj: &Value) -> String {
    let kind = s(obj, "/spec/issuerRef/kind").unwrap_or("Issuer");
    let name = s(obj, "/spec/issuerRef/name").unwrap_or_default();
    account_of(&api.cluster.name, ns, kind, name)
}

/// The account key for a cluster's issuer (`ClusterIssuer` ignores the namespace).
pub fn account_of(cluster: &str, ns: &str, kind: &str, name: &str) -> String {
    if kind == "ClusterIssuer" {
        format!("{cluster}/ClusterIssuer/{name}")
    } else {
        format!("{cluster}/Issuer/{ns}/{name}")
    }
}

/// The load-balancer address an Ingress serving `host` publishes (Boulder names the address
/// it connected to), or a documentation address when none does.
fn lb_address(api: &Api<'_>, host: &str) -> String {
    api.list("networking.k8s.io", "ingresses")
        .iter()
        .filter(|ing| {
            ing.pointer("/spec/rules")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|r| r.get("host").and_then(Value::as_str) == Some(host))
        })
        .find_map(|ing| {
            s(ing, "/status/loadBalancer/ingress/0/ip")
                .or_else(|| s(ing, "/status/loadBalancer/ingress/0/hostname"))
                .map(str::to_string)
        })
        .unwrap_or_else(|| "203.0.113.10".to_string())
}

//! ACME account registration: an Issuer or ClusterIssuer becomes Ready, or fails to register.

use serde_json::{json, Value};

use super::letsencrypt::{rfc3339, Server};
use super::{s, Api, World};

const MANAGER: &str = "cert-manager-issuers";

fn registration(issuer: &Value) -> Result<String, String> {
    let Some(acme) = issuer.pointer("/spec/acme") else {
        return Ok("non-ACME issuer".into());
    };
    let server = acme
        .get("server")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let email = acme
        .get("email")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !server.starts_with("https://") {
        return Err(format!(
            "Failed to verify ACME account: Get \"{server}\": unsupported protocol scheme"
        ));
    }
    if email.ends_with(".invalid") || (!email.is_empty() && !email.contains('@')) {
        return Err(format!(
            "Failed to register ACME account: 400 urn:ietf:params:acme:error:invalidContact: Error validating contact(s) :: contact email \"{email}\" has invalid domain"
        ));
    }
    Ok(format!(
        "{server}/acct/{}",
        super::hash(0, &[email]) % 100_000_000
    ))
}

/// A first registration counts against Let's Encrypt's new registrations per IP address (10
/// per 3 hours; `wfe2/wfe.go` NewAccount, `ratelimits/transaction.go`
/// NewAccountLimitTransactions). The cluster's name stands for its egress address; an issuer
/// that already has an account (`status.acme.uri`) registers nothing new.
fn count_registration(api: &Api<'_>, world: &World, issuer: &Value) -> Result<(), String> {
    if issuer
        .pointer("/status/acme/uri")
        .and_then(Value::as_str)
        .is_some()
    {
        return Ok(());
    }
    let Some(server) = s(issuer, "/spec/acme/server").and_then(Server::from_url) else {
        return Ok(());
    };
    world
        .letsencrypt
        .lock()
        .expect("letsencrypt lock")
        .check_new_account(server, &api.cluster.name, api.now)
        .map_err(|problem| format!("Failed to register ACME account: {problem}"))
}

pub(super) fn reconcile(api: &Api<'_>, world: &World) {
    for (plural, namespaced) in [("clusterissuers", false), ("issuers", true)] {
        for issuer in api.list("cert-manager.io", plural) {
            let generation = issuer
                .pointer("/metadata/generation")
                .cloned()
                .unwrap_or(json!(1));
            let observed = issuer
                .pointer("/status/conditions/0/observedGeneration")
                .cloned();
            if observed.as_ref() == Some(&generation) {
                continue;
            }
            let ns = if namespaced {
                s(&issuer, "/metadata/namespace")
            } else {
                None
            };
            let name = s(&issuer, "/metadata/name").unwrap_or_default();
            let now = rfc3339(api.now);
            let status = match registration(&issuer)
                .and_then(|uri| count_registration(api, world, &issuer).map(|()| uri))
            {
                Ok(uri) if issuer.pointer("/spec/acme").is_some() => {
                    json!({"acme": {"uri": uri, "lastRegisteredEmail": issuer.pointer("/spec/acme/email")},
                    "conditions": [{"type": "Ready", "status": "True", "reason": "ACMEAccountRegistered", "message": "The ACME account was registered with the ACME server", "lastTransitionTime": now, "observedGeneration": generation}]})
                }
                Ok(_) => {
                    json!({"conditions": [{"type": "Ready", "status": "True", "reason": "IsReady", "message": "", "lastTransitionTime": now, "observedGeneration": generation}]})
                }
                Err(message) => {
                    api.event(
                        &issuer,
                        if namespaced {
                            "Issuer"
                        } else {
                            "ClusterIssuer"
                        },
                        "Warning",
                        "ErrRegisterACMEAccount",
                        &message,
                        "cert-manager-issuers",
                    );
                    json!({"conditions": [{"type": "Ready", "status": "False", "reason": "ErrRegisterACMEAccount", "message": message, "lastTransitionTime": now, "observedGeneration": generation}]})
                }
            };
            api.patch_status(
                "cert-manager.io",
                plural,
                ns,
                name,
                &json!({"status": status}),
                MANAGER,
            );
        }
    }
}

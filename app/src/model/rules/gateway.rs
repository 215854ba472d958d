//! A Gateway listener its controller did not accept because a TLS certificate reference
//! does not resolve. Cilium checks each reference (a Secret, in the Gateway's namespace or
//! permitted by a ReferenceGrant in the Secret's, with PEM in `tls.crt` and `tls.key`), sets
//! `ResolvedRefs=False` (`RefNotPermitted` or `InvalidCertificateRef`) and `Accepted=False`
//! on the first that fails, and leaves the listener out of Envoy: clients of its hostname get
//! nothing from it (cilium/cilium `operator/pkg/gateway-api/gateway_reconcile.go`
//! `validateListener`, `setListenerStatus`; the reasons are the Gateway API's,
//! `apis/v1/gateway_types.go`). `gateway.reference-not-permitted` when the reference is not
//! permitted (the ReferenceGrant is the fix), `gateway.listener-not-ready` otherwise.

use super::{About, Ctx};
use crate::model::finding::{Severity, Subject};
use crate::model::kind::Kind;
use crate::model::object::{condition, Condition};
use crate::model::rule::Rule;
use crate::model::text::Text;

pub(super) fn check(ctx: &mut Ctx<'_>) {
    let data = ctx.idx.data;
    for gw in data.gateways.values() {
        for l in &gw.listeners {
            let refs = condition(&l.conditions, "ResolvedRefs");
            let accepted = condition(&l.conditions, "Accepted");
            let failed = |c: &Option<Condition>| c.as_ref().is_some_and(|c| !c.is_true());
            if !failed(&refs) && !failed(&accepted) {
                continue;
            }
            let reason = refs
                .as_ref()
                .filter(|c| !c.is_true())
                .and_then(|c| c.reason.clone())
                .or_else(|| accepted.as_ref().and_then(|c| c.reason.clone()))
                .unwrap_or_default();
            let said = |c: &Option<Condition>, kind: &str| {
                c.as_ref().map(|c| {
                    format!(
                        "{kind} is {} ({}): {}",
                        c.status,
                        c.reason.as_deref().unwrap_or(""),
                        c.message.as_deref().unwrap_or("")
                    )
                })
            };
            let conditions: Vec<String> =
                [said(&refs, "ResolvedRefs"), said(&accepted, "Accepted")]
                    .into_iter()
                    .flatten()
                    .collect();
            let host = l.hostname.as_deref().unwrap_or("every host");
            let secrets = l.secret_names.join(", ");
            // A Secret cert-manager has not written yet: the listener waits for the issuance
            // (the Certificate's own findings say why), a symptom rather than the cause.
            let issuing = &*reason == "InvalidCertificateRef"
                && l.secret_names.iter().any(|s| {
                    ctx.idx
                        .certificates_writing(&gw.namespace, s)
                        .iter()
                        .any(|c| !c.is_ready())
                });
            let not_permitted = &*reason == "RefNotPermitted";
            // Accepted is False for another reason than its references (a port in use, an
            // unsupported protocol): said as such, with the controller's words.
            let refs_failed = failed(&refs);
            let remediation = match &*reason {
                _ if !refs_failed => format!("Read what its controller says ({reason}) and fix the listener in the Gateway: its port, protocol or hostname."),
                "RefNotPermitted" => format!("Create a ReferenceGrant in the Secret's namespace from group gateway.networking.k8s.io, kind Gateway, namespace {} to group \"\", kind Secret (name {secrets}) — or keep the Secret in the Gateway's namespace: cert-manager's gateway-shim issues only into the Gateway's own namespace (it skips a listener whose reference names another, cert-manager#5610).", gw.namespace),
                _ if issuing => format!("Wait for cert-manager to issue into Secret {secrets} (its Certificate is not ready yet: follow it), then the listener resolves."),
                _ => format!("Make Secret {secrets} exist in namespace {} with PEM in tls.crt and tls.key — cert-manager's gateway-shim writes it when the Gateway carries cert-manager.io/cluster-issuer or cert-manager.io/issuer — or fix the reference (group \"\", kind Secret, its name).", gw.namespace),
            };
            let (namespace, name): (Text, Text) =
                (gw.namespace.as_str().into(), gw.name.as_str().into());
            let about = About {
                namespace: &namespace,
                kind: Subject::Object(Kind::Gateway),
                name: &name,
            };
            let (rule, title) = if not_permitted {
                (
                    Rule::GatewayReferenceNotPermitted,
                    format!("Listener {} of Gateway {} may not use Secret {secrets} of another namespace", l.name, gw.name),
                )
            } else {
                (
                    Rule::GatewayListenerNotReady,
                    if refs_failed {
                        format!(
                            "Listener {} of Gateway {} does not resolve its certificate ({reason})",
                            l.name, gw.name
                        )
                    } else {
                        format!(
                            "Listener {} of Gateway {} is not accepted by its controller ({reason})",
                            l.name, gw.name
                        )
                    },
                )
            };
            ctx.push(
                rule,
                if issuing { Severity::Warning } else { Severity::Critical },
                about,
                title,
                format!(
                    "Listener {} ({host}, {}) references Secret {secrets}: {}. Its controller leaves a listener it did not accept out of the proxy, so clients of {host} get no TLS from it.",
                    l.name,
                    l.protocol,
                    conditions.join("; ")
                ),
                &remediation,
                refs.as_ref().or(accepted.as_ref()).and_then(|c| c.last_transition),
            );
        }
    }
}

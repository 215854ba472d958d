//! `policy.*`: the policy that sets edit-in-place on a platform's Ingresses (an Espejote
//! ManagedResource, a Kyverno ClusterPolicy, Policy or MutatingPolicy), judged by what it
//! leaves undone — one finding on the policy for all the Ingresses it covers, so a broken
//! policy is one problem, not one per Ingress.
//!
//! Espejote's `status.status` says which step of its last reconcile failed
//! (`controllers/managedresource_controller.go`: `ServiceAccountError`,
//! `WaitingForCacheSync`, `DependencyConfigurationError`, `TemplateError`, `ApplyError`,
//! `TemplateReturnError`, `ControllerStartError`, `ReconcileError`) and a Warning event on
//! the ManagedResource says why (`Reconcile error: <status>: <why>`). Kyverno's policies say
//! `Ready` by a condition (a ClusterPolicy's `status.conditions`, a MutatingPolicy's
//! `status.conditionStatus.ready`), and mutate existing Ingresses only when asked to.

use super::ingress::needs_edit_in_place;
use super::{span, About, Ctx};
use crate::model::chain::AnnotationStatus;
use crate::model::finding::{Severity, Subject};
use crate::model::ingress::{IngressView, EDIT_IN_PLACE};
use crate::model::kind::Kind;
use crate::model::policy::{covered, Coverage, PolicyView};
use crate::model::rule::Rule;

/// What to do about a policy stuck at `status`: where its fix is.
fn repair(p: &PolicyView) -> String {
    let kyverno = p.kind != Kind::ManagedResource;
    let fix = match p.status.as_deref() {
        _ if kyverno => format!(
            "Read its conditions (kubectl get {} {}{} -o yaml): Kyverno marks a policy ready once its webhook is configured (and, for background work, its RBAC permissions granted); fix what the condition names in the policy's repository or Kyverno's configuration.",
            p.kind.name().to_ascii_lowercase(),
            p.name,
            if p.namespace.is_empty() { String::new() } else { format!(" -n {}", p.namespace) }
        ),
        Some("ServiceAccountError") => format!(
            "Create ServiceAccount {} in namespace {}, or point spec.serviceAccountRef at one that exists.",
            p.service_account, p.namespace
        ),
        Some("WaitingForCacheSync") | Some("ControllerStartError") => format!(
            "Give ServiceAccount {}/{} get, list and watch on what its context and triggers read (here: ingresses in API group networking.k8s.io) — a ClusterRole bound to it — so its caches sync.",
            p.namespace, p.service_account
        ),
        Some("TemplateError") | Some("TemplateReturnError") => {
            "Fix the template in the policy's repository (the event quotes the evaluator); it must return an object, a list of objects or null.".to_string()
        }
        Some("ApplyError") => format!(
            "Give ServiceAccount {}/{} patch on ingresses, or resolve the conflict the event names (another field manager holds the annotation: remove theirs, or set spec.applyOptions.force only if the policy should win).",
            p.namespace, p.service_account
        ),
        Some("DependencyConfigurationError") => {
            "Fix spec.context and spec.triggers: names must be unique, each context needs a resource, each trigger a watchResource, a watchContextResource or an interval.".to_string()
        }
        _ => "Read its events for why it failed, and fix it in the policy's repository.".to_string(),
    };
    format!("Repair the {}: {fix} Until then, \"Add edit-in-place\" on an Ingress is a stop-gap: the policy remains the owner of the annotation.", p.label())
}

/// The names of some Ingresses, at most five, and how many more.
fn names(ingresses: &[&IngressView]) -> String {
    let mut names: Vec<String> = ingresses
        .iter()
        .take(5)
        .map(|i| format!("{}/{}", i.namespace, i.name))
        .collect();
    if ingresses.len() > 5 {
        names.push(format!("and {} more", ingresses.len() - 5));
    }
    names.join(", ")
}

pub(super) fn check(ctx: &mut Ctx<'_>) {
    let data = ctx.idx.data;
    if data.all_policies().next().is_none() {
        return;
    }

    let now = ctx.now;
    for p in data.all_policies().filter(|p| p.sets_edit_in_place) {
        let covered = covered(data, ctx.idx.setters(), p);
        let lacking: Vec<&IngressView> = covered
            .iter()
            .filter(|c| c.lacking())
            .map(|c| &**c.ingress)
            .collect();
        let missed: Vec<&str> = covered
            .iter()
            .filter(|c| c.lacking() && c.coverage == Coverage::Missed)
            .map(|c| &*c.ingress.name)
            .collect();
        let held: Vec<(&IngressView, &str)> = covered
            .iter()
            .filter(|c| c.held_by(p))
            .map(|c| {
                (
                    &**c.ingress,
                    c.ingress.edit_in_place.as_deref().unwrap_or_default(),
                )
            })
            .collect();
        let oldest = lacking.iter().filter_map(|i| i.created).min();
        // Critical when an Ingress it leaves without the annotation needs it now (its
        // issuer solves HTTP-01 with a solver Ingress behind Cilium).
        let harmful = lacking.iter().any(|ing| {
            let controller = ctx.idx.controller_of(ing);
            !matches!(
                ctx.idx.annotation_status(ing),
                AnnotationStatus::NotApplicable
            ) && needs_edit_in_place(ctx, ing, &controller).is_some()
        });
        let about = About {
            namespace: &p.namespace,
            kind: Subject::Object(p.kind),
            name: &p.name,
        };
        let severity = if harmful {
            Severity::Critical
        } else {
            Severity::Warning
        };
        let age = oldest
            .map(|t| format!(" (the oldest for {})", span(now - t)))
            .unwrap_or_default();
        if !p.ready() {
            let event = ctx
                .idx
                .events_of(p.kind.name(), &p.namespace, &p.name, 1)
                .into_iter()
                .find(|e| e.event_type == "Warning");
            let why = event
                .map(|e| {
                    format!(
                        " Its last Warning event ({}): {}{}",
                        e.reason,
                        e.message.trim_end_matches('.'),
                        "."
                    )
                })
                .unwrap_or_default();
            let told = if lacking.is_empty() {
                "No Ingress it covers lacks the annotation yet; new ones will.".to_string()
            } else {
                format!(
                    "{} it covers {} {EDIT_IN_PLACE}{age}: {}.",
                    crate::model::text::count(lacking.len(), "Ingress", "Ingresses"),
                    crate::model::text::noun(lacking.len(), "lacks", "lack"),
                    names(&lacking)
                )
            };
            ctx.push(
                Rule::PolicyNotReady,
                severity,
                about,
                format!("{} is {}", p.label(), p.status_text()),
                format!(
                    "The {} sets {EDIT_IN_PLACE} on the Ingresses it reads{}. Its status is {}.{why} {told}",
                    p.label(),
                    if p.field_manager.is_empty() {
                        String::new()
                    } else {
                        format!(
                            ", as ServiceAccount {}/{} with field manager {}",
                            p.namespace, p.service_account, p.field_manager
                        )
                    },
                    p.status_text()
                ),
                &repair(p),
                oldest,
            );
        } else if !lacking.is_empty() {
            let selectors: Vec<String> = p
                .scopes
                .iter()
                .filter_map(|s| s.selector.as_ref().map(|s| s.text.to_string()))
                .collect();
            let why = if p.admission_only {
                "It mutates on admission only (no background mutation of existing Ingresses: for a ClusterPolicy, mutate.targets with spec.background true; for a MutatingPolicy, evaluation.mutateExisting.enabled), so an Ingress made before it, or not written since, does not get it.".to_string()
            } else if p.kind != Kind::ManagedResource {
                "Kyverno mutates existing Ingresses in the background, on policy changes and at its background scan (hourly by default, BACKGROUND_SCAN_INTERVAL of the background controller): these have not been reached, or its rule's preconditions leave them out.".to_string()
            } else if missed.is_empty() {
                "It reads them and is Ready, yet has not set it: its template leaves them out (a condition it tests), or it has not run since they were made.".to_string()
            } else {
                format!(
                    "Its {} leaves out {} while it set the annotation on other Ingresses of the same namespace and issuer.",
                    if selectors.is_empty() {
                        "name list".to_string()
                    } else {
                        format!("label selector ({})", selectors.join("; "))
                    },
                    missed.join(", ")
                )
            };
            ctx.push(
                Rule::PolicyMissingCoverage,
                severity,
                about,
                format!(
                    "{} the {} is meant for {} {EDIT_IN_PLACE}",
                    crate::model::text::count(lacking.len(), "Ingress", "Ingresses"),
                    p.label(),
                    crate::model::text::noun(lacking.len(), "lacks", "lack"),
                ),
                format!(
                    "{} {} it is meant for {} the annotation{age}: {}. {why}",
                    p.label(),
                    crate::model::text::count(lacking.len(), "Ingress", "Ingresses"),
                    crate::model::text::noun(lacking.len(), "lacks", "lack"),
                    names(&lacking)
                ),
                &format!(
                    "{} Until then, \"Add edit-in-place\" on an Ingress is a stop-gap: the policy remains the owner of the annotation where it sets it.",
                    if p.admission_only {
                        "Enable background mutation of existing Ingresses in the policy (in its repository), or write each Ingress once so admission mutates it."
                    } else {
                        "Widen the policy's selector or template to take them in (in the policy's repository), or label the Ingresses as it selects."
                    }
                ),
                oldest,
            );
        }
        if !held.is_empty() {
            let values: Vec<String> = held
                .iter()
                .take(5)
                .map(|(i, v)| format!("{}/{} ({v:?})", i.namespace, i.name))
                .collect();
            ctx.push(
                Rule::PolicyConflictsWithFix,
                severity,
                About {
                    namespace: &p.namespace,
                    kind: Subject::Object(p.kind),
                    name: &p.name,
                },
                format!("The {} holds {EDIT_IN_PLACE} at a value cert-manager ignores", p.label()),
                format!(
                    "Field manager {} owns {EDIT_IN_PLACE} on {}: cert-manager enables edit-in-place only for \"true\". A server-side apply of \"true\" by anyone else conflicts with it{}.",
                    p.field_manager,
                    values.join(", "),
                    if p.force {
                        ", and the policy applies with force: it takes the field back at its next reconcile"
                    } else {
                        ""
                    }
                ),
                "Change the value the policy's template sets to \"true\" (in the policy's repository); a patch on the Ingress would conflict with the policy's field manager or be taken back by it.",
                None,
            );
        }
    }
}

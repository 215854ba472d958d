//! `/ingresses/{cluster}/{namespace}/{name}`: the chain view — Ingress → Certificate →
//! CertificateRequest → Order → Challenges, the annotation status, findings, events.

use leptos::prelude::*;

use crate::components::why::{why_box, CertificateRef};
use crate::model::read::problems::Problem;
use crate::pages::page_title;

use crate::actions::ActionKind;
use crate::model::chain::AnnotationStatus;
use crate::model::history::ChallengeRecord;
use crate::pages::action::action_form;
use crate::pages::challenges::challenge_rows;

use crate::components::encode;
use crate::components::findings::findings_table;
use crate::components::{document, Nav, Shell, Time};
use crate::model::chain::{CertificateChain, TlsChain};
use crate::model::infra::EventView;
use crate::model::read::offer::Offer;
use crate::model::read::views::IngressDetail;
use crate::pages::ingresses::annotation_text;

/// What the fix's preview promises, said beside its button.
const DRY_RUN_FIRST: &str =
    "Previewed with a dry run first; nothing changes until you apply. Recorded in the audit log.";

/// Where the current request stands, in words: in flight until its Ready condition says
/// it was issued or failed (cert-manager's reasons `Issued`, `Failed`, `Denied`).
fn request_state(r: &crate::model::certificate::CertificateRequestView) -> &'static str {
    if r.denied.is_some() {
        return ", the latest: denied by an approver";
    }
    if r.awaits_approval() && r.ready.is_none() {
        return ", the latest: waiting for approval";
    }
    match r.ready.as_ref() {
        Some(c) if &*c.status == "True" => ", the latest: issued",
        Some(c) if matches!(c.reason.as_deref(), Some("Failed" | "Denied")) => {
            ", the latest: failed"
        }
        _ => ", in flight",
    }
}

pub fn attempts(chain: &CertificateChain, now: chrono::DateTime<chrono::Utc>) -> impl IntoView {
    let items = chain
        .requests
        .iter()
        .map(|r| {
            let ready = r.request.ready.as_ref().map(|c| format!("Ready {} ({}): {}", c.status, c.reason.as_deref().unwrap_or(""), c.message.as_deref().unwrap_or(""))).unwrap_or_else(|| "no Ready condition".into());
            let approval = match (&r.request.denied, r.request.approved) {
                (Some(d), _) => Some(format!("Denied ({}): {}", d.reason.as_deref().unwrap_or(""), d.message.as_deref().unwrap_or(""))),
                (None, false) => Some("Not approved yet: nothing signs it until an approver approves it".to_string()),
                (None, true) => None,
            };
            let created = r.request.created.map(|at| view! { <Time at=at now=now/> });
            let orders = r
                .orders
                .iter()
                .map(|o| {
                    let challenges = o
                        .challenges
                        .iter()
                        .map(|ch| {
                            let why = ch.reason.as_ref().map(|r| match &ch.failure {
                                Some(f) => format!("{r} — {}: {}", f.label, f.explanation),
                                None => r.to_string(),
                            });
                            view! {
                                <li data-testid="challenge">
                                    {format!("Challenge {} for {} ({}): state {:?}, presented {}, processing {}", ch.name, ch.dns_name, ch.challenge_type, ch.state, ch.presented, ch.processing)}
                                    {why.map(|w| view! { <br/><span class="reason">{w}</span> })}
                                </li>
                            }
                        })
                        .collect_view();
                    view! {
                        <li>
                            {format!("Order {}: state {:?}", o.order.name, o.order.state)}
                            {o.order.reason.clone().map(|r| view! { <br/><span class="reason">{r}</span> })}
                            <ul>{challenges}</ul>
                        </li>
                    }
                })
                .collect_view();
            view! {
                <li>
                    <strong>{format!("CertificateRequest {} (revision {}){}", r.request.name, r.request.revision.map(|v| v.to_string()).unwrap_or_else(|| "?".into()), if r.current { request_state(&r.request) } else { "" })}</strong>
                    " created " {created}
                    <br/><span>{ready}</span>
                    {approval.map(|a| view! { <br/><span class="reason" data-testid="approval">{a}</span> })}
                    <ul>{orders}</ul>
                </li>
            }
        })
        .collect_view();
    view! { <ul class="chain">{items}</ul> }
}

fn tls_section(t: TlsChain, cluster: &str, now: chrono::DateTime<chrono::Utc>) -> impl IntoView {
    let heading = format!(
        "TLS {} → Secret {}",
        t.hosts.join(", "),
        t.secret_name.clone().unwrap_or_else(|| "(none)".into())
    );
    let body = match t.certificate {
        None => view! { <p class="empty">"No Certificate writes this Secret."</p> }.into_any(),
        Some(chain) => {
            let c = &chain.certificate;
            let href = format!(
                "/certificates/{}/{}/{}",
                encode(cluster),
                encode(&c.namespace),
                encode(&c.name)
            );
            let ready = crate::pages::certificates::ready_cell(c, now);
            let issuer = match (&c.issuer, &chain.issuer) {
                (Some(r), Some(i)) => format!("{} {} — {}", r.kind, r.name, i.server.label()),
                (Some(r), None) => format!("{} {} — not found", r.kind, r.name),
                _ => "none".into(),
            };
            let not_after = c.not_after.map(|at| view! { <Time at=at now=now/> });
            view! {
                <dl class="facts">
                    <dt>"Certificate"</dt><dd><a href=href>{c.name.clone()}</a></dd>
                    <dt>"Ready"</dt><dd>{ready}</dd>
                    <dt>"Expires"</dt><dd>{not_after}</dd>
                    <dt>"Issuer"</dt><dd>{issuer}</dd>
                    <dt>"dnsNames"</dt><dd>{c.dns_names.join(", ")}</dd>
                    <dt><code>"http01-override-ingress-name"</code></dt><dd>{c.override_ingress_name.clone().unwrap_or_else(|| "absent".into())}</dd>
                </dl>
                <h4>"Attempts"</h4>
                {attempts(&chain, now)}
            }
            .into_any()
        }
    };
    view! { <section class="tls"><h3>{heading}</h3>{body}</section> }
}

/// Events, newest first.
pub(crate) fn events_table(
    events: Vec<EventView>,
    now: chrono::DateTime<chrono::Utc>,
) -> impl IntoView {
    let rows = events
        .into_iter()
        .map(|e| {
            let seen = e.last_seen.map(|at| view! { <Time at=at now=now/> });
            view! { <tr><td data-label="Seen">{seen}</td><td data-label="Type">{e.event_type}</td><td data-label="Object">{format!("{} {}", e.object_kind, e.object_name)}</td><td data-label="Reason">{e.reason}</td><td data-label="Message">{e.message}</td></tr> }
        })
        .collect_view();
    view! {
        <table>
            <thead><tr><th scope="col">"Seen"</th><th scope="col">"Type"</th><th scope="col">"Object"</th><th scope="col">"Reason"</th><th scope="col">"Message"</th></tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
}

/// Every Challenge the history has for the Ingress's hosts, deleted ones included.
fn history_section(
    history: Result<Vec<ChallengeRecord>, String>,
    now: chrono::DateTime<chrono::Utc>,
) -> impl IntoView {
    match history {
        Err(e) => view! { <p class="error-text">"The history could not be read: " {e}</p> }.into_any(),
        Ok(rows) if rows.is_empty() => view! { <p class="empty">"No challenge recorded for these hosts."</p> }.into_any(),
        Ok(rows) => view! {
            <table>
                <caption class="visually-hidden">"Challenge history"</caption>
                <thead><tr>
                    <th scope="col">"Cluster"</th><th scope="col">"Namespace"</th><th scope="col">"DNS name"</th><th scope="col">"Type"</th>
                    <th scope="col">"State"</th><th scope="col">"Failure"</th><th scope="col">"Reason"</th><th scope="col">"History"</th><th scope="col">"Last seen"</th>
                </tr></thead>
                <tbody>{challenge_rows(&rows, now)}</tbody>
            </table>
        }
        .into_any(),
    }
}

/// `history`: the Challenges recorded for the Ingress's hosts in its namespace, newest first.
pub fn page(
    shell: &Shell,
    d: IngressDetail,
    problems: Vec<Problem>,
    history: Result<Vec<ChallengeRecord>, String>,
) -> String {
    let now = shell.now;
    let certificates: Vec<CertificateRef> = d
        .tls
        .iter()
        .filter_map(|t| t.certificate.as_ref().map(CertificateRef::of))
        .collect();
    let worst = problems.first().map(|p| p.urgency.severity);
    let i = d.ingress;
    let created = i.created.map(|at| view! { <Time at=at now=now/> });
    let issuer = i
        .issuer
        .as_ref()
        .map(|r| format!("{} {}", r.kind, r.name))
        .unwrap_or_else(|| {
            if i.tls_acme {
                "cert-manager's default issuer (kubernetes.io/tls-acme)".into()
            } else {
                "none requested".into()
            }
        });
    let https = match d.controller.enforce_https {
        Some(v) => format!(
            "{} ({})",
            if v { "on" } else { "off" },
            d.controller.enforce_https_source
        ),
        None => d.controller.enforce_https_source.clone(),
    };
    let cluster = i.cluster.clone();
    let tls = d
        .tls
        .into_iter()
        .map(|t| tls_section(t, &cluster, now))
        .collect_view();
    // Edit-in-place cannot help while a prerequisite is broken (no cert-manager, no issuer,
    // the CA refusing): the page says what to fix first instead of offering it.
    // Another field manager's value would end the fix in a conflict: not offered either.
    let offer = crate::model::read::offer::edit_in_place(&i, &d.annotation, &problems);
    let here = crate::model::links::object_path("Ingress", &i.cluster, &i.namespace, &i.name)
        .unwrap_or_default();
    // The policy meant to set the annotation: repairing it is the fix, a patch here a
    // stop-gap.
    let policy_href = d
        .policy
        .as_ref()
        .and_then(|p| crate::model::links::object_path(p.kind, &i.cluster, &p.namespace, &p.name));
    let annotation_words = match &d.policy {
        Some(p) if p.owns => format!("{} — set by the {} ({})", annotation_text(&d.annotation), p.label, p.status),
        Some(p) if p.coverage == "reads" => format!("{} — the {} is meant to set it ({})", annotation_text(&d.annotation), p.label, p.status),
        Some(p) => format!("{} — the {} sets it on this namespace's other Ingresses, its selector leaves this one out", annotation_text(&d.annotation), p.label),
        None => annotation_text(&d.annotation),
    };
    let actions = shell.actions.then(|| {
        let fix = offer.offered().then(|| match (&d.policy, &policy_href) {
            (Some(p), Some(href)) if p.repairable => view! {
                <p data-testid="repair-policy"><a class="action" href=href.clone()>{format!("Repair the policy: {} is {}", p.label, p.status)}</a></p>
                // The policy's repair is the fix; a patch here is folded, as a stop-gap.
                <details class="stop-gap" data-testid="stop-gap">
                    <summary>"Stop-gap: add edit-in-place on this Ingress only"</summary>
                    <p>"The policy owns this annotation: once repaired it sets it here and on every Ingress it covers. A patch here is a stop-gap — the policy remains the owner."</p>
                    {action_form(&shell.csrf, ActionKind::EditInPlace, &i.cluster, &i.namespace, &i.name, crate::pages::action::FormMode::Preview, "Preview: add edit-in-place here as a stop-gap".into())}
                    <p class="term">{DRY_RUN_FIRST}</p>
                </details>
            }.into_any(),
            // A reader who does not see the policy's place (a tenant): its owners repair it;
            // their own move is the patch here, said to be a stop-gap.
            (Some(p), _) => view! {
                <p data-testid="policy-owners">{format!("The {} that should set it is {}: its owners repair it. Until then, adding it here is a stop-gap — the policy remains the owner.", p.label, p.status)}</p>
                {action_form(&shell.csrf, ActionKind::EditInPlace, &i.cluster, &i.namespace, &i.name, crate::pages::action::FormMode::Preview, "Preview: add edit-in-place here as a stop-gap".into())}
                <p class="term">{DRY_RUN_FIRST}</p>
            }.into_any(),
            _ => view! {
                {action_form(&shell.csrf, ActionKind::EditInPlace, &i.cluster, &i.namespace, &i.name, crate::pages::action::FormMode::Preview, "Preview: add edit-in-place".into())}
                <p class="term">{DRY_RUN_FIRST}</p>
            }.into_any(),
        });
        let not_now = match &offer {
            Offer::Blocked(p) => {
                let shown = problems.first().is_some_and(|f| f.id == p.id);
                Some(crate::components::why::not_offered("Adding edit-in-place cannot help yet: ", p, shown, &here).into_any())
            }
            Offer::OwnedElsewhere(_) => offer.why_not().map(|why| {
                view! { <p data-testid="not-offered">{format!("Lookout does not add edit-in-place here: {why}.")}</p> }.into_any()
            }),
            _ => None,
        };
        let lookout_owns = match &d.annotation {
            AnnotationStatus::Set { managers } | AnnotationStatus::SetNotEffective { managers, .. } => {
                managers.iter().any(|m| &**m == crate::actions::FIELD_MANAGER)
            }
            _ => false,
        };
        // Undo is never the page's main button: folded, after the fix.
        let undo = lookout_owns.then(|| {
            view! {
                <details class="undo">
                    <summary>"Undo Lookout's fix"</summary>
                    <p>"Removes the annotation Lookout set (its field manager owns it); HTTP-01 challenges behind HTTPS enforcement fail again."</p>
                    {action_form(&shell.csrf, ActionKind::UndoEditInPlace, &i.cluster, &i.namespace, &i.name, crate::pages::action::FormMode::Preview, "Preview: undo Lookout's fix".into())}
                </details>
            }
        });
        match (fix, not_now, undo) {
            (None, None, None) => None,
            (Some(fix), _, undo) => Some(view! {
                <section class="actions" aria-label="Fix it here" data-testid="ingress-actions">
                    {fix}
                    {undo}
                </section>
            }.into_any()),
            (None, Some(not_now), undo) => Some(view! {
                <section class="actions blocked" aria-label="Fix it here" data-testid="ingress-actions">
                    {not_now}{undo}
                </section>
            }.into_any()),
            (None, None, Some(undo)) => Some(view! {
                <section class="actions" aria-label="Actions" data-testid="ingress-actions">{undo}</section>
            }.into_any()),
        }
    });
    let why = why_box(
        &problems,
        &certificates,
        actions.flatten(),
        now,
        shell.support.as_deref(),
        &[
            crate::model::Rule::IngressEditInPlaceMissing,
            crate::model::Rule::IngressEditInPlaceInvalid,
            crate::model::Rule::IngressEditInPlaceNotEffective,
            crate::model::Rule::ProbeAcmePathRedirected,
            crate::model::Rule::IngressSharedHostHttpsRedirect,
            crate::model::Rule::AcmeChallengeFailing,
        ],
    );
    let findings_count = d.findings.len();
    // Nothing wrong now: said first, where the diagnosis would be.
    let no_findings = (d.findings.is_empty() && problems.is_empty()).then(|| {
        view! { <p class="notice ok" data-testid="healthy"><strong>"✓ Healthy."</strong>" Nothing is wrong with this Ingress and its chain now."</p> }
    });
    document(
        &Shell {
            title: page_title(worst, &i.name, &i.namespace, &i.cluster),
            active: Nav::Ingresses,
            ..shell.clone()
        },
        view! {
            <h1>"Ingress " {i.name.clone()}</h1>
            {no_findings}
            {why}
            <h2>"Details"</h2>
            <dl class="facts">
                <dt>"Cluster"</dt><dd>{i.cluster.clone()}</dd>
                <dt>"Namespace"</dt><dd>{i.namespace.clone()}</dd>
                <dt>"Created"</dt><dd>{created}</dd>
                <dt>"Class"</dt><dd>{format!("{} ({})", d.controller.class.clone().unwrap_or_else(|| "none".into()), d.controller.controller.clone().unwrap_or_else(|| "unknown controller".into()))}</dd>
                <dt>"HTTPS enforcement"</dt><dd>{https}</dd>
                <dt>"Hosts"</dt><dd>{i.hosts.join(", ")}</dd>
                <dt>"Addresses"</dt><dd>{if i.addresses.is_empty() { "none yet".to_string() } else { i.addresses.join(", ") }}</dd>
                <dt>"Issuer"</dt><dd>{issuer}</dd>
                <dt><code>"acme.cert-manager.io/http01-edit-in-place"</code></dt><dd data-testid="annotation-status">{annotation_words}</dd>
            </dl>
            {crate::components::findings_fold(findings_count, findings_table(d.findings, now, true))}
            {crate::components::fold("What clients get", crate::components::served::clients_get(d.clients_get.clone(), None, false, now))}
            {crate::components::fold("Chain", tls)}
            {crate::components::fold("Events", events_table(d.events, now))}
            {crate::components::fold("Challenge history", history_section(history, now))}
        },
    )
}

//! `/certificates/{cluster}/{namespace}/{name}`: one Certificate, its attempts and findings.

use leptos::prelude::*;

use crate::model::Rule;

use crate::components::why::{why_box, CertificateRef};
use crate::model::read::problems::Problem;
use crate::pages::page_title;

use crate::actions::ActionKind;
use crate::components::charts::lifetime_bar;
use crate::components::encode;
use crate::components::findings::findings_table;
use crate::components::{document, Nav, Shell, Time};
use crate::model::read::views::CertificateDetail;
use crate::model::timeline::Attempt;
use crate::pages::action::action_form;
use crate::pages::ingress_detail::{attempts, events_table};

/// The history of a Certificate as a table, oldest first.
/// The attempts, newest first: the newest open, older ones folded; one row per change.
fn timeline_table(
    timeline: Result<Vec<Attempt>, String>,
    now: chrono::DateTime<chrono::Utc>,
) -> impl IntoView {
    let when = move |at: &str| crate::components::time_text(at, now);
    match timeline {
        Err(e) => {
            view! { <p class="error-text">"The history could not be read: " {e}</p> }.into_any()
        }
        Ok(t) if t.is_empty() => view! { <p class="empty">"Nothing recorded yet."</p> }.into_any(),
        Ok(t) => {
            let attempts = t
                .into_iter()
                .enumerate()
                .map(|(i, a)| {
                    let title = match (&a.request, &a.outcome) {
                        (Some(r), Some(o)) => format!("Attempt {} — CertificateRequest {r}: {o}", a.number),
                        (Some(r), None) => format!("Attempt {} — CertificateRequest {r}", a.number),
                        _ => "Before the first recorded attempt".to_string(),
                    };
                    let count = a.events.len();
                    let rows = a
                        .events
                        .into_iter()
                        .map(|e| {
                            view! {
                                <tr data-testid="timeline-row">
                                    <td data-label="When" class="when">{when(&e.at)}</td>
                                    <td data-label="What">{e.kind}</td>
                                    <td data-label="Object" class="name">{e.name}</td>
                                    <td data-label="State">{e.state}</td>
                                    <td data-label="Detail" class="message">{e.detail.unwrap_or_default()}</td>
                                </tr>
                            }
                        })
                        .collect_view();
                    let started = a.started.as_deref().map(|s| view! { " · started "{when(s)}});
                    let newest = i == 0;
                    view! {
                        <details class="attempt" data-testid="attempt" open=newest>
                            <summary><strong>{title}</strong>{started}" · "{count}" changes"</summary>
                            <table>
                                <caption class="visually-hidden">"Changes of this attempt"</caption>
                                <thead><tr><th scope="col">"When"</th><th scope="col">"What"</th><th scope="col">"Object"</th><th scope="col">"State"</th><th scope="col">"Detail"</th></tr></thead>
                                <tbody>{rows}</tbody>
                            </table>
                        </details>
                    }
                })
                .collect_view();
            view! { <div class="attempts">{attempts}</div> }.into_any()
        }
    }
}

/// Whether issuing again is what fixes a problem rooted at `cause`: a failure with no cause
/// of its own (the attempt may pass now), or a fix that waits for a new request.
fn issuing_helps(cause: Rule) -> bool {
    matches!(
        cause,
        Rule::IngressEditInPlaceNotEffective
            | Rule::CertIssuanceFailing
            | Rule::CertExpiring
            | Rule::CertExpired
            | Rule::CertNotReady
            | Rule::AcmeChallengeFailing
            | Rule::AcmeChallengeStuck
    )
}

pub fn page(
    shell: &Shell,
    d: CertificateDetail,
    problems: Vec<Problem>,
    timeline: Result<Vec<Attempt>, String>,
) -> String {
    let now = shell.now;
    let worst = problems.first().map(|p| p.urgency.severity);
    let c = d.chain.certificate.clone();
    // Ready=True beside an expiry past: cert-manager's last word, now out of date.
    let stale_ready = (c.not_after.is_some_and(|t| t <= now)
        && c.ready.as_ref().is_some_and(|r| &*r.status == "True"))
    .then(|| view! { <br/><small data-testid="stale-ready">"Ready=True is cert-manager's last word, now out of date: the certificate expired since."</small> });
    // Issuing=True while a cause stops any issuance (the issuer missing or not ready): asked
    // for, not under way.
    let being_issued = match (
        c.rare
            .issuing
            .as_deref()
            .is_some_and(|i| &*i.status == "True"),
        problems.iter().find(|p| {
            crate::model::read::offer::stops_issuance(p, &d.chain.certificate, d.ingress.as_deref())
        }),
    ) {
        (true, Some(p)) => format!("asked for, but it cannot be: {}", p.diagnosis),
        (true, None) => "yes, now".to_string(),
        (false, _) => "no".to_string(),
    };
    let time = |t: Option<chrono::DateTime<chrono::Utc>>| match t {
        Some(at) => view! { <Time at=at now=now/> }.into_any(),
        None => view! { <span>"— (not issued yet)"</span> }.into_any(),
    };
    let ingress = d.ingress.clone().map(|name| {
        let href = format!(
            "/ingresses/{}/{}/{}",
            encode(&c.cluster),
            encode(&c.namespace),
            encode(&name)
        );
        view! { <a href=href>{name}</a> }
    });
    // Whose Certificate it is: its Ingress, or the Gateway cert-manager's gateway-shim made it
    // for (with a link to that Gateway's page).
    let gateway = c
        .owner
        .as_ref()
        .filter(|o| &*o.kind == "Gateway")
        .map(|o| o.name.to_string());
    let owner_row = match (ingress, gateway) {
        (Some(link), _) => view! { <dt>"Ingress"</dt><dd>{link}</dd> }.into_any(),
        (None, Some(gw)) => {
            let href = crate::model::links::object_path("Gateway", &c.cluster, &c.namespace, &gw)
                .unwrap_or_default();
            view! { <dt>"Gateway"</dt><dd><a href=href>{gw}</a></dd> }.into_any()
        }
        (None, None) => view! { <dt>"Ingress"</dt><dd>"none — no shim made it"</dd> }.into_any(),
    };
    let condition = |cond: Option<&crate::model::object::Condition>| {
        cond.map(|r| {
            format!(
                "{} ({}): {}",
                r.status,
                r.reason.as_deref().unwrap_or(""),
                r.message.as_deref().unwrap_or("")
            )
        })
        .unwrap_or_else(|| "absent".into())
    };
    let issuer = match (&c.issuer, &d.chain.issuer) {
        (Some(r), Some(i)) => match &i.acme_server_url {
            Some(url) => format!("{} {} — {} ({url})", r.kind, r.name, i.server.label()),
            // Not shown to a namespace-scoped viewer for another CA (an internal address).
            None => format!("{} {} — {}", r.kind, r.name, i.server.label()),
        },
        (Some(r), None) => format!("{} {} — not found", r.kind, r.name),
        _ => "none".into(),
    };
    // While it is being issued, renew is refused (cert-manager ignores another trigger) and
    // a pending challenge keeps the solver it was made with: restarting is what helps.
    let issuing = c
        .rare
        .issuing
        .as_ref()
        .is_some_and(|i| &*i.status == "True");
    // Issuing again cannot succeed while a prerequisite is broken (and would spend a failed
    // authorization or an order): no button, the reason, and where to fix it first.
    let blocked = problems
        .iter()
        .find(|p| crate::model::read::offer::stops_issuance(p, &c, d.ingress.as_deref()));
    let here = crate::model::links::object_path(
        "Certificate",
        &d.chain.certificate.cluster,
        &d.chain.certificate.namespace,
        &d.chain.certificate.name,
    )
    .unwrap_or_default();
    let renew = shell.actions.then(|| {
        if let Some(p) = blocked {
            let lead = if issuing {
                "Restart issuance: not now. Issuing again would fail the same way, and spend Let's Encrypt budget: "
            } else {
                "Renew: not now. Issuing again would fail the same way, and spend Let's Encrypt budget: "
            };
            return view! {
                <section class="actions blocked" aria-label="Actions" data-testid="certificate-actions">
                    {crate::components::why::not_offered(lead, p, problems.first().is_some_and(|f| f.id == p.id), &here)}
                </section>
            }
            .into_any();
        }
        let action = if issuing {
            view! {
                <h2>"Restart issuance"</h2>
                {action_form(&shell.csrf, ActionKind::Restart, &c.cluster, &c.namespace, &c.name, crate::pages::action::FormMode::Preview, "Preview: restart issuance".into())}
                <p class="term">"Being issued now (Issuing=True). A pending challenge keeps the solver cert-manager gave it when it was made, so it does not heal after a fix: restarting deletes the in-flight CertificateRequest (with its Order and Challenges) and cert-manager makes a new one from the Certificate as it is now. The preview shows what it costs of the Let's Encrypt budgets."</p>
            }
            .into_any()
        } else {
            view! {
                <h2>"Renew"</h2>
                {action_form(&shell.csrf, ActionKind::Renew, &c.cluster, &c.namespace, &c.name, crate::pages::action::FormMode::Preview, "Preview: renew".into())}
                <p class="term">"Like cmctl renew: asks cert-manager to issue again now. The preview shows what it costs of the Let's Encrypt budgets."</p>
            }
            .into_any()
        };
        // Issuing again is the fix only when nothing else is (the chain's failure has no
        // cause of its own, or the fix waits for a new request); else it is folded, after
        // what the diagnosis recommends.
        if problems.iter().any(|p| !issuing_helps(p.cause)) {
            return view! {
                <section class="actions" aria-label="Actions" data-testid="certificate-actions">
                    <details class="secondary">
                        <summary>{if issuing { "Restart issuance anyway" } else { "Renew anyway" }}</summary>
                        {action}
                    </details>
                </section>
            }
            .into_any();
        }
        view! {
            <section class="actions" aria-label="Actions" data-testid="certificate-actions">
                {action}
            </section>
        }
        .into_any()
    });
    let why = why_box(
        &problems,
        &[CertificateRef::of(&d.chain)],
        renew,
        now,
        shell.support.as_deref(),
        &[],
    );
    let findings_count = d.findings.len();
    // Nothing wrong now: said first, where the diagnosis would be.
    let issued_leaf = d
        .chain
        .requests
        .iter()
        .find_map(|r| r.request.issued.as_deref().cloned());
    // Hosts whose clients the probe saw get something else than this certificate (nothing,
    // or another leaf): with nothing wrong with the Certificate itself, something else of
    // the host decides what they get (a neighbour's Secret on a shared host) — "Healthy"
    // would not be the story clients live.
    let served_else: Vec<String> = d
        .clients_get
        .iter()
        .filter(|o| c.dns_names.iter().any(|n| **n == *o.host))
        .filter(|o| match (&o.tls, &issued_leaf) {
            (None, _) => true,
            (Some(t), Some(leaf)) => *t.leaf.sha256 != *leaf.sha256,
            (Some(_), None) => false,
        })
        .map(|o| o.host.to_string())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let no_findings = (d.findings.is_empty() && problems.is_empty()).then(|| {
        match served_else.first() {
            None => view! { <p class="notice ok" data-testid="healthy"><strong>"✓ Healthy."</strong>" Nothing is wrong with this Certificate now."</p> }.into_any(),
            Some(host) => {
                let search = format!("/search?q={}", crate::model::links::encode(host));
                view! {
                    <p class="notice warning" data-testid="served-else">
                        <strong>{format!("Clients of {} do not get this certificate.", served_else.join(", "))}</strong>
                        " Nothing is wrong with the Certificate itself (issued, valid); another object of the same host decides what its clients are served — see “What clients get” below, and "
                        <a href=search>{format!("everything on {host}")}</a>"."
                    </p>
                }
                .into_any()
            }
        }
    });
    document(
        &Shell {
            title: page_title(worst, &c.name, &c.namespace, &c.cluster),
            active: Nav::Certificates,
            ..shell.clone()
        },
        view! {
            <h1>"Certificate " {c.name.clone()}</h1>
            {no_findings}
            {why}
            <h2>"Details"</h2>
            <dl class="facts">
                <dt>"Cluster"</dt><dd>{c.cluster.clone()}</dd>
                <dt>"Namespace"</dt><dd>{c.namespace.clone()}</dd>
                {owner_row}
                <dt>"Secret"</dt><dd>{c.secret_name.clone().unwrap_or_default()}</dd>
                <dt>"DNS names"</dt><dd>{c.dns_names.join(", ")}</dd>
                <dt>"Issuer"</dt><dd>{issuer}</dd>
                <dt>"Ready"</dt><dd>{crate::pages::certificates::ready_text(&c, now)}" "<small>{condition(c.ready.as_ref())}</small>{stale_ready}</dd>
                <dt>"Being issued"</dt><dd>{being_issued}" "<small class="term">{format!("Issuing: {}", c.rare.issuing.as_deref().map_or_else(|| "absent".to_string(), |i| condition(Some(i))))}</small></dd>
                <dt>"Not before"</dt><dd>{time(c.not_before)}</dd>
                <dt>"Not after"</dt><dd>{time(c.not_after)}</dd>
                <dt>"Renewal time"</dt><dd>{time(c.renewal_time)}</dd>
                <dt>"Revision"</dt><dd>{c.revision.map(|r| r.to_string()).unwrap_or_else(|| "—".into())}</dd>
                <dt>"Failed attempts"</dt><dd>{c.rare.failed_issuance_attempts.map(|r| r.to_string()).unwrap_or_else(|| "0".into())}</dd>
            </dl>
            {lifetime_bar(c.not_before, c.renewal_time, c.not_after, now)}
            {crate::components::findings_fold(findings_count, findings_table(d.findings, now, true))}
            {crate::components::fold("What clients get", crate::components::served::clients_get(d.clients_get.clone(), issued_leaf, d.ingress.is_none(), now))}
            {crate::components::fold("Attempts", attempts(&d.chain, now))}
            {crate::components::fold("Events", events_table(d.events, now))}
            {crate::components::fold("History", timeline_table(timeline, now))}
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::certificate::CertificateView;
    use crate::model::ingress::IngressView;
    use crate::model::read::problems::cluster_problems;
    use crate::model::read::Visibility;
    use crate::model::rules::fixtures::World;
    use chrono::Duration;

    /// Issuing=True and Ready=True on a certificate that expired while its issuer is gone:
    /// the page says it cannot be issued and that Ready is out of date.
    #[test]
    fn an_expired_certificate_whose_issuer_is_gone_is_not_told_as_being_issued() {
        let wiki = IngressView::test("wiki")
            .in_ns("initech")
            .with_issuer("team-le")
            .tls("wiki.initech.example");
        let cert = CertificateView::of(&wiki)
            .expiring(Duration::days(-2), Duration::days(32))
            .issuing();
        let w = World::new().certificate(cert).ingress(wiki);
        let now = crate::model::rules::fixtures::now();
        let findings = std::sync::Arc::new(w.findings());
        let problems = cluster_problems(&w.facts, &w.data, &findings, now);
        let view = crate::model::View::whole_fleet(["zrh"]);
        let visible = Visibility::of(&view, "zrh").unwrap();
        let d = crate::model::read::lists::certificate_detail(
            &visible, &w.facts, &w.data, &findings, "initech", "wiki-tls",
        )
        .unwrap();
        let shell = Shell {
            now,
            ..Shell::default()
        };
        let html = page(&shell, d, problems, Ok(Vec::new()));
        assert!(html.contains("asked for, but it cannot be"), "{html}");
        assert!(!html.contains("yes, now"), "{html}");
        assert!(html.contains("data-testid=\"stale-ready\""), "{html}");
    }
}

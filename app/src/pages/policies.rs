//! `/policies`: the policies that set edit-in-place on Ingresses (Espejote ManagedResources)
//! — each with its status, its field manager and the Ingresses it covers, lacking the
//! annotation or held by it at another value — the most severe first; and a policy's page:
//! why it fails, what to change, and each Ingress it covers.

use leptos::prelude::*;

use crate::components::{document, encode, json_link, query_string, Nav, Shell};
use crate::model::read::policies::{PolicyDetail, PolicyQuery, PolicyRow};
use crate::model::{ClusterView, Page};

/// The filters as a query string (without `page`), for the pager and the exports.
fn filters(q: &PolicyQuery) -> String {
    query_string(&[
        ("cluster", q.cluster.as_deref()),
        ("namespace", q.namespace.as_deref()),
        ("q", q.q.as_deref()),
    ])
}

/// The page of a policy.
pub fn href(r: &PolicyRow) -> String {
    crate::model::links::object_path(r.kind, &r.cluster, &r.namespace, &r.name).unwrap_or_default()
}

/// Its status as a badge: Ready, or the step that failed.
fn status_badge(r: &PolicyRow) -> AnyView {
    let (icon, class, words) = match (&r.status, r.ready) {
        (_, true) => ("✓ ", "badge ok", "Ready".to_string()),
        (Some(s), false) => ("✖ ", "badge critical", s.to_string()),
        (None, false) => ("▲ ", "badge warning", "no status yet".to_string()),
    };
    view! { <span class=class data-testid="policy-status"><span aria-hidden="true">{icon}</span>{words}</span> }.into_any()
}

fn health(severity: Option<crate::model::Severity>) -> AnyView {
    match severity {
        Some(s) => view! { <crate::components::findings::SeverityBadge severity=s/> }.into_any(),
        None => {
            view! { <span class="badge ok"><span aria-hidden="true">"✓ "</span>"healthy"</span> }
                .into_any()
        }
    }
}

pub fn page(
    shell: &Shell,
    q: &PolicyQuery,
    rows: Page<PolicyRow>,
    clusters: &[ClusterView],
) -> String {
    let failing = rows.items.iter().filter(|r| !r.ready).count();
    let lacking: usize = rows.items.iter().map(|r| r.lacking).sum();
    let summary = format!(
        "{} · {} not Ready · {} leaving edit-in-place unset",
        crate::model::text::count(rows.total, "policy", "policies"),
        failing,
        crate::model::text::count(lacking, "Ingress", "Ingresses"),
    );
    let table_rows = rows
        .items
        .iter()
        .map(|r| {
            let coverage = format!(
                "{} covered · {} lacking{}",
                r.covered,
                r.lacking,
                if r.held > 0 { format!(" · {} held at another value", r.held) } else { String::new() }
            );
            view! {
                <tr data-testid="policy-row" data-name=r.name.to_string()>
                    <td data-label="Health">{health(r.severity)}</td>
                    <th scope="row" data-label="Policy"><a href=href(r)>{format!("{} {}", r.kind, r.name)}</a></th>
                    <td data-label="Where">{if r.namespace.is_empty() { format!("{} · cluster-wide", r.cluster) } else { format!("{} · {}", r.cluster, r.namespace) }}</td>
                    <td data-label="Status">{status_badge(r)}</td>
                    <td data-label="Ingresses">{coverage}</td>
                    <td data-label="Field manager">{if r.field_manager.is_empty() { view! { <span class="muted">"—"</span> }.into_any() } else { view! { <code>{r.field_manager.to_string()}</code> }.into_any() }}{r.force.then_some(" (force)")}</td>
                </tr>
            }
        })
        .collect_view();
    let empty = rows.items.is_empty().then(|| {
        view! { <p class="empty">"No policy sets edit-in-place here (Lookout reads Espejote's ManagedResources and Kyverno's policies where they are installed). " <a href="/policies">"Show every policy"</a></p> }
    });
    let names: Vec<String> = clusters.iter().map(|c| c.name.clone()).collect();
    let base = filters(q);
    let pager = view! { <crate::components::Pager page=rows.page pages=rows.pages() total=rows.total base_query=base.clone()/> };
    document(
        &Shell {
            title: "Policies".into(),
            active: Nav::Policies,
            ..shell.clone()
        },
        view! {
            <h1>"Policies"</h1>
            <p>"The policies that set " <code>"acme.cert-manager.io/http01-edit-in-place"</code> " on Ingresses for the platform (Espejote ManagedResources, Kyverno policies). Where one fails, fix it in the policy's repository: a patch on one Ingress is a stop-gap."</p>
            <p data-testid="policies-summary">{summary}</p>
            <form class="filters" method="get" action="/policies">
                {crate::components::findings::place_filters(&names, q.cluster.as_deref(), q.namespace.as_deref())}
                <label>"Name " <input type="search" name="q" value=q.q.clone().unwrap_or_default()/></label>
                <button type="submit">"Filter"</button>
            </form>
            {empty}
            <table class="policies">
                <caption class="visually-hidden">"Policies, the most severe first"</caption>
                <thead><tr><th scope="col">"Health of what it covers"</th><th scope="col">"Policy"</th><th scope="col">"Where"</th><th scope="col">"Status"</th><th scope="col">"Ingresses"</th><th scope="col">"Field manager"</th></tr></thead>
                <tbody>{table_rows}</tbody>
            </table>
            {pager}
            {json_link("/api/v1/policies", &base)}
        },
    )
}

/// A policy's page: its status and why, the change to make, and the Ingresses it covers.
pub fn detail(shell: &Shell, d: PolicyDetail) -> String {
    let r = &d.row;
    let title = if r.namespace.is_empty() {
        format!("{} {}", r.kind, r.name)
    } else {
        format!("{} {}/{}", r.kind, r.namespace, r.name)
    };
    // The one thing to do: the finding's remedy (the policy's operators see it).
    let todo = d.findings.first().map(|f| {
        view! {
            <section class="next-step" data-testid="policy-fix" aria-labelledby="fix-h">
                <h2 id="fix-h">{f.title.to_string()}</h2>
                <p>{f.message.to_string()}</p>
                <p><strong>"What to do: "</strong>{f.remediation.to_string()}</p>
            </section>
        }
    });
    let events = (!d.events.is_empty()).then(|| {
        let items = d
            .events
            .iter()
            .map(|e| view! { <li><span class="muted">{format!("{} {} ×{}", e.event_type, e.reason, e.count)}</span>" "{e.message.clone()}</li> })
            .collect_view();
        view! { <section aria-labelledby="events-h"><h2 id="events-h">"Its events"</h2><ul data-testid="policy-events">{items}</ul></section> }
    });
    let scopes = (!d.scopes.is_empty()).then(|| {
        let items = d
            .scopes
            .iter()
            .map(|s| view! { <li>{s.clone()}</li> })
            .collect_view();
        view! { <p>"It reads: "</p><ul>{items}</ul> }
    });
    let account = d.service_account.as_ref().map(|sa| {
        view! { <p>"It applies as ServiceAccount " <code>{format!("{}/{}", r.namespace, sa)}</code>", field manager " <code>{r.field_manager.to_string()}</code>{r.force.then_some(", with force (it takes fields over from other managers)")}"."</p> }
    });
    let ingresses = d
        .ingresses
        .iter()
        .map(|i| {
            let path = format!("/ingresses/{}/{}/{}", encode(&r.cluster), encode(&i.namespace), encode(&i.name));
            let value = match &i.annotation {
                Some(v) => format!("{v:?}"),
                None => "not set".to_string(),
            };
            let owners: Vec<&str> = i.owners.iter().map(|o| &**o).collect();
            view! {
                <tr data-testid="covered-ingress" data-name=i.name.to_string()>
                    <td data-label="Health">{health(i.severity)}</td>
                    <th scope="row" data-label="Ingress"><a href=path>{format!("{}/{}", i.namespace, i.name)}</a></th>
                    <td data-label="Selector">{if i.coverage == "reads" { "reads it" } else { "leaves it out" }}</td>
                    <td data-label="edit-in-place">{value}</td>
                    <td data-label="Owned by">{owners.join(", ")}</td>
                </tr>
            }
        })
        .collect_view();
    document(
        &Shell {
            title: title.clone(),
            active: Nav::Policies,
            ..shell.clone()
        },
        view! {
            <p class="crumbs"><a href="/policies">"Policies"</a>" / " {r.cluster.to_string()}</p>
            <h1>{title}</h1>
            <p>"Status: " {status_badge(r)} " · " {format!("{} covered · {} lacking edit-in-place", r.covered, r.lacking)}</p>
            {todo}
            {account}
            {scopes}
            {events}
            <section aria-labelledby="covered-h">
                <h2 id="covered-h">"The Ingresses it is responsible for"</h2>
                <table class="covered">
                    <thead><tr><th scope="col">"Health"</th><th scope="col">"Ingress"</th><th scope="col">"Its selector"</th><th scope="col">"edit-in-place"</th><th scope="col">"Owned by"</th></tr></thead>
                    <tbody>{ingresses}</tbody>
                </table>
            </section>
            {json_link(&format!("/api/v1{}", href(r)), "")}
        },
    )
}

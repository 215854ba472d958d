//! `/issuers`: every issuer the reader may see — ready or not in words, the ACME server it
//! talks to, its account's limits that are reached, and the health of the Certificates that
//! use it — the most severe first. Each row opens the issuer's page.

use leptos::prelude::*;

use crate::components::{document, encode, json_link, query_string, Nav, Shell};
use crate::model::budget::Limit;
use crate::model::read::issuer::{IssuerQuery, IssuerRow};
use crate::model::{ClusterView, Page, Severity};

/// The filters as a query string (without `page`), for the pager and the exports.
fn filters(q: &IssuerQuery) -> String {
    query_string(&[
        ("cluster", q.cluster.as_deref()),
        ("namespace", q.namespace.as_deref()),
        ("q", q.q.as_deref()),
    ])
}

fn limit_words(l: Limit) -> &'static str {
    match l {
        Limit::NewOrders => "new orders used up",
        Limit::Paused => "names paused",
        Limit::FailedAuthorizations => "failed authorizations used up",
        Limit::RegisteredDomain | Limit::ExactSet => "certificates used up",
    }
}

pub fn page(
    shell: &Shell,
    q: &IssuerQuery,
    rows: Page<IssuerRow>,
    clusters: &[ClusterView],
) -> String {
    let failing = rows
        .items
        .iter()
        .filter(|r| r.severity == Some(Severity::Critical))
        .count();
    let not_ready = rows.items.iter().filter(|r| r.readiness != "ready").count();
    let summary = format!(
        "{} issuer{} · {} not ready or missing · {} behind critical problems",
        rows.total,
        if rows.total == 1 { "" } else { "s" },
        not_ready,
        failing
    );
    let table_rows = rows
        .items
        .iter()
        .map(|r| {
            let ns = if r.namespace.is_empty() { "_" } else { r.namespace.as_str() };
            let href = format!(
                "/issuers/{}/{}/{}",
                encode(&r.cluster),
                encode(ns),
                encode(&r.name)
            );
            let (icon, class) = match (r.exists, r.readiness.as_str()) {
                (false, _) => ("✖ ", "badge critical"),
                (true, "ready") => ("✓ ", "badge ok"),
                (true, "not ready") => ("✖ ", "badge critical"),
                _ => ("▲ ", "badge warning"),
            };
            let readiness = view! { <span class=class><span aria-hidden="true">{icon}</span>{r.readiness.clone()}</span> };
            let limits = (!r.account_limits_reached.is_empty()).then(|| {
                let words: Vec<&str> = r.account_limits_reached.iter().map(|l| limit_words(*l)).collect();
                view! { <span class="badge critical" data-testid="account-limit"><span aria-hidden="true">"✖ "</span>{format!("account: {}", words.join(", "))}</span> }
            });
            let health = match r.severity {
                Some(s) => view! { <crate::components::findings::SeverityBadge severity=s/> }.into_any(),
                None => view! { <span class="badge ok"><span aria-hidden="true">"✓ "</span>"healthy"</span> }.into_any(),
            };
            let place = if r.namespace.is_empty() {
                format!("{} · cluster-wide", r.cluster)
            } else {
                format!("{} · {}", r.cluster, r.namespace)
            };
            view! {
                <tr data-testid="issuer-row" data-name=r.name.clone()>
                    <td data-label="Health">{health}</td>
                    <th scope="row" data-label="Issuer"><a href=href>{format!("{} {}", r.kind, r.name)}</a></th>
                    <td data-label="Where">{place}</td>
                    <td data-label="Ready">{readiness}" "{limits}</td>
                    <td data-label="ACME server">{r.server_label}</td>
                    <td data-label="Certificates">{r.certificates.to_string()}</td>
                </tr>
            }
        })
        .collect_view();
    let empty = rows
        .items
        .is_empty()
        .then(|| view! { <p class="empty">"No issuer matches these filters. " <a href="/issuers">"Show every issuer"</a></p> });
    let names: Vec<String> = clusters.iter().map(|c| c.name.clone()).collect();
    let base = filters(q);
    let pager = view! { <crate::components::Pager page=rows.page pages=rows.pages() total=rows.total base_query=base.clone()/> };
    document(
        &Shell {
            title: "Issuers".into(),
            active: Nav::Issuers,
            ..shell.clone()
        },
        view! {
            <h1>"Issuers"</h1>
            <p data-testid="issuers-summary">{summary}</p>
            <form class="filters" method="get" action="/issuers">
                {crate::components::findings::place_filters(&names, q.cluster.as_deref(), q.namespace.as_deref())}
                <label>"Name " <input type="search" name="q" value=q.q.clone().unwrap_or_default()/></label>
                <button type="submit">"Filter"</button>
            </form>
            {empty}
            <table class="issuers">
                <caption class="visually-hidden">"Issuers, the most severe first"</caption>
                <thead><tr><th scope="col">"Health of what uses it"</th><th scope="col">"Issuer"</th><th scope="col">"Where"</th><th scope="col">"Ready"</th><th scope="col">"ACME server"</th><th scope="col">"Certificates"</th></tr></thead>
                <tbody>{table_rows}</tbody>
            </table>
            {pager}
            {json_link("/api/v1/issuers", &base)}
        },
    )
}

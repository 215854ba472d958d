//! `/gateways`: the TLS listeners of the Gateways the reader sees — hostname, the Secret it
//! serves and the Certificate writing it, what the Gateway's controller says of it — the
//! most severe first.

use leptos::prelude::*;

use crate::components::{document, json_link, query_string, Nav, Shell};
use crate::model::read::gateways::{GatewayQuery, ListenerRow};
use crate::model::{ClusterView, Page};

/// The filters as a query string (without `page`), for the pager and the exports.
fn filters(q: &GatewayQuery) -> String {
    query_string(&[
        ("cluster", q.cluster.as_deref()),
        ("namespace", q.namespace.as_deref()),
        ("q", q.q.as_deref()),
    ])
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

/// What the controller says of the listener, in a few words.
fn controller_says(r: &ListenerRow) -> String {
    match (r.accepted, r.resolved_refs, r.programmed) {
        (None, None, None) => "no status yet".into(),
        (Some("True"), Some("True"), Some("True")) => "programmed".into(),
        _ => {
            let part = |k: &str, v: Option<&str>| v.map(|v| format!("{k} {v}"));
            let said: Vec<String> = [
                part("Accepted", r.accepted),
                part("ResolvedRefs", r.resolved_refs),
                part("Programmed", r.programmed),
            ]
            .into_iter()
            .flatten()
            .collect();
            match &r.reason {
                Some(reason) => format!("{} ({reason})", said.join(", ")),
                None => said.join(", "),
            }
        }
    }
}

pub fn page(
    shell: &Shell,
    q: &GatewayQuery,
    rows: Page<ListenerRow>,
    clusters: &[ClusterView],
) -> String {
    let table_rows = rows
        .items
        .iter()
        .map(|r| {
            let certificate = match (&r.certificate, r.certificate_ready) {
                (Some(c), ready) => {
                    let href = crate::model::links::object_path("Certificate", &r.cluster, &r.namespace, c).unwrap_or_default();
                    view! { <a href=href>{c.to_string()}</a>{if ready == Some(true) { " (ready)" } else { " (not ready)" }} }.into_any()
                }
                (None, _) => view! { <span class="muted">"none writes it"</span> }.into_any(),
            };
            view! {
                <tr data-testid="gateway-row" data-name=r.gateway.to_string()>
                    <td data-label="Health">{health(r.severity)}</td>
                    <th scope="row" data-label="Gateway">{format!("{} · {}/{}", r.cluster, r.namespace, r.gateway)}</th>
                    <td data-label="Listener">{format!("{} · {}", r.listener, r.protocol)}</td>
                    <td data-label="Host">{r.hostname.as_deref().unwrap_or("every host").to_string()}</td>
                    <td data-label="Secret">{r.secrets.join(", ")}</td>
                    <td data-label="Certificate">{certificate}</td>
                    <td data-label="Its controller says">{controller_says(r)}</td>
                </tr>
            }
        })
        .collect_view();
    let empty = rows.items.is_empty().then(|| {
        view! { <p class="empty">"No Gateway with a TLS listener here (Lookout reads Gateway API Gateways where the CRD is installed). " <a href="/gateways">"Show every Gateway"</a></p> }
    });
    let names: Vec<String> = clusters.iter().map(|c| c.name.clone()).collect();
    let base = filters(q);
    let pager = view! { <crate::components::Pager page=rows.page pages=rows.pages() total=rows.total base_query=base.clone()/> };
    document(
        &Shell {
            title: "Gateways".into(),
            active: Nav::Gateways,
            ..shell.clone()
        },
        view! {
            <h1>"Gateways"</h1>
            <p>"The TLS listeners of Gateway API Gateways: the Secret each serves, the Certificate that writes it, and what the Gateway's controller says — a listener it did not accept serves nothing."</p>
            <p data-testid="gateways-summary">{crate::model::text::count(rows.total, "listener", "listeners")}</p>
            <form class="filters" method="get" action="/gateways">
                {crate::components::findings::place_filters(&names, q.cluster.as_deref(), q.namespace.as_deref())}
                <label>"Gateway or host " <input type="search" name="q" value=q.q.clone().unwrap_or_default()/></label>
                <button type="submit">"Filter"</button>
            </form>
            {empty}
            <table class="gateways">
                <caption class="visually-hidden">"Gateway listeners, the most severe first"</caption>
                <thead><tr><th scope="col">"Health"</th><th scope="col">"Gateway"</th><th scope="col">"Listener"</th><th scope="col">"Host"</th><th scope="col">"Secret"</th><th scope="col">"Certificate"</th><th scope="col">"Its controller says"</th></tr></thead>
                <tbody>{table_rows}</tbody>
            </table>
            {pager}
            {json_link("/api/v1/gateways", &base)}
        },
    )
}

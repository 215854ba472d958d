//! `/audit`: every preview and action taken through Lookout — who, when, what, the diff,
//! the outcome and the error — newest first.

use leptos::prelude::*;

use crate::components::encode;
use crate::components::{document, query_string, Nav, Pager, Shell};
use crate::model::choice::Choice;
use crate::model::history::AuditEntry;
use crate::model::read::views::{AuditOutcome, AuditQuery};
use crate::model::Page;

fn filters(q: &AuditQuery) -> String {
    query_string(&[
        ("cluster", q.cluster.as_deref()),
        ("namespace", q.namespace.as_deref()),
        ("actor", q.actor.as_deref()),
        ("action", q.action.as_deref()),
        ("outcome", q.outcome.map(|o| o.label())),
        ("since", q.since_text.as_deref()),
    ])
}

/// A link to the object an audit row is about.
fn object_link(e: &AuditEntry) -> impl IntoView {
    let path = crate::components::detail_pages(&e.kind);
    if e.name.is_empty() {
        // A bulk run: its scope.
        let scope = match e.namespace.as_str() {
            "" => "every namespace".to_string(),
            ns => format!("namespace {ns}"),
        };
        return view! { <span>{format!("{}s in {scope}", e.kind)}</span> }.into_any();
    }
    let label = format!("{} {}/{}", e.kind, e.namespace, e.name);
    match path {
        Some(p) => {
            let href = format!(
                "/{p}/{}/{}/{}",
                encode(&e.cluster),
                encode(&e.namespace),
                encode(&e.name)
            );
            view! { <a href=href>{label}</a> }.into_any()
        }
        None => view! { <span>{label}</span> }.into_any(),
    }
}

pub fn page(shell: &Shell, query: &AuditQuery, rows: Page<AuditEntry>) -> String {
    let outcome_options = AuditOutcome::ALL
        .iter()
        .map(|o| {
            let (o, selected) = (o.label(), query.outcome == Some(*o));
            view! { <option value=o selected=selected>{o}</option> }
        })
        .collect_view();
    let items = rows
        .items
        .iter()
        .map(|e| {
            let what = if e.dry_run {
                format!("{} (preview)", e.action)
            } else {
                e.action.clone()
            };
            let outcome_class = match e.outcome.as_str() {
                "ok" => "badge ok",
                "conflict" | "refused" => "badge warning",
                _ => "badge critical",
            };
            let icon = match e.outcome.as_str() {
                "ok" => "✓ ",
                "conflict" | "refused" => "▲ ",
                _ => "✖ ",
            };
            let diff = e
                .diff
                .clone()
                .map(|d| view! { <details><summary>"diff"</summary><pre class="diff" tabindex="0">{d}</pre></details> });
            view! {
                <tr data-testid="audit-row">
                    <td data-label="When" class="when">{crate::components::time_text(&e.at, shell.now)}</td>
                    <td data-label="Who">{e.actor.clone()}</td>
                    <td data-label="Action">{what}</td>
                    <td data-label="Cluster" class="cluster">{e.cluster.clone()}</td>
                    <td data-label="Object">{object_link(e)}</td>
                    <td data-label="Outcome"><span class=outcome_class><span aria-hidden="true">{icon}</span>{e.outcome.clone()}</span></td>
                    <td data-label="Diff and error">{diff}<span class="error-text">{e.error.clone().unwrap_or_default()}</span></td>
                </tr>
            }
        })
        .collect_view();
    let empty = rows.items.is_empty().then(|| {
        view! { <p class="empty">"No action or preview matches. Actions taken through Lookout are recorded here."</p> }
    });
    let pager = view! { <Pager page=rows.page pages=rows.pages() total=rows.total base_query=filters(query)/> };
    document(
        &Shell {
            title: "Audit log".into(),
            active: Nav::Audit,
            ..shell.clone()
        },
        view! {
            <h1>"Audit log"</h1>
            <form class="filters" method="get" action="/audit">
                <label>"Cluster " <input name="cluster" value=query.cluster.clone().unwrap_or_default()/></label>
                <label>"Namespace " <input name="namespace" value=query.namespace.clone().unwrap_or_default()/></label>
                <label>"Who " <input name="actor" value=query.actor.clone().unwrap_or_default()/></label>
                <label>"Action " <input name="action" value=query.action.clone().unwrap_or_default()/></label>
                <label>"Outcome "<select name="outcome"><option value="">"Any"</option>{outcome_options}</select></label>
                <label>"Since " <input name="since" placeholder="24h" value=query.since_text.clone().unwrap_or_default()/></label>
                <button type="submit">"Filter"</button>
            </form>
            {empty}
            <table>
                <caption class="visually-hidden">"Audit log"</caption>
                <thead><tr>
                    <th scope="col">"When"</th><th scope="col">"Who"</th><th scope="col">"Action"</th><th scope="col">"Cluster"</th>
                    <th scope="col">"Object"</th><th scope="col">"Outcome"</th><th scope="col">"Diff and error"</th>
                </tr></thead>
                <tbody>{items}</tbody>
            </table>
            {pager}
            {crate::components::json_link("/api/v1/audit", &filters(query))}
        },
    )
}

//! `/ingresses`: every visible Ingress, filtered by cluster, namespace and text.

use leptos::prelude::*;

use crate::actions::ActionKind;
use crate::components::findings::SeverityBadge;
use crate::components::{document, sort_header, Nav, Pager, Shell};
use crate::model::chain::AnnotationState;
use crate::model::chain::AnnotationStatus;
use crate::model::choice::Choice;
use crate::model::read::sort::IngressSort;
use crate::model::read::views::{IngressQuery, IngressRow};
use crate::model::{IngressView, Page};

/// `cluster/namespace/name` as a detail-page URL, each part percent-encoded.
pub(crate) fn detail_href(i: &IngressView) -> String {
    let mut out = String::with_capacity(13 + i.cluster.len() + i.namespace.len() + i.name.len());
    out.push_str("/ingresses");
    for part in [&i.cluster, &i.namespace, &i.name] {
        out.push('/');
        crate::components::encode_into(&mut out, part);
    }
    out
}

/// The filters as a query string (without `sort` and `page`), for links that keep them.
pub fn filters(q: &IngressQuery) -> String {
    let status = q.status.as_ref().map(|s| s.label());
    crate::components::query_string(&[
        ("cluster", q.cluster.as_deref()),
        ("namespace", q.namespace.as_deref()),
        ("q", q.q.as_deref()),
        ("status", status.as_deref()),
    ])
}

/// The filters and the sort order (without `page`), for the pager.
pub(crate) fn query_string(q: &IngressQuery) -> String {
    let sort = q.sort.map(|s| s.param());
    [
        filters(q),
        crate::components::query_string(&[("sort", sort.as_deref())]),
    ]
    .into_iter()
    .filter(|s| !s.is_empty())
    .collect::<Vec<_>>()
    .join("&")
}

/// The rollout's question in one line: the Ingresses that still need the fix (where the
/// page is filtered), as a list and as CSV.
fn rollout(query: &IngressQuery) -> impl IntoView {
    let q = crate::components::query_string(&[
        ("cluster", query.cluster.as_deref()),
        ("namespace", query.namespace.as_deref()),
        ("status", Some(NEEDS_FIX)),
    ]);
    let list = format!("/ingresses?{q}");
    let csv = format!("/api/v1/ingresses.csv?{q}");
    view! {
        <p class="rollout">"Rollout of the fix: "
            <a href=list data-testid="needs-fix">"the Ingresses that still need it"</a>" · "
            <a href=csv download="" data-testid="needs-fix-csv">"export them as CSV"</a>
        </p>
    }
}

/// The statuses whose Ingresses the edit-in-place fix is for.
const NEEDS_FIX: &str = "missing,invalid,set-not-effective";

/// The annotation status in words, with the managers that own it.
pub(crate) fn annotation_text(a: &AnnotationStatus) -> String {
    let managers = |m: &[crate::model::text::Text]| {
        if m.is_empty() {
            String::new()
        } else {
            format!(
                " (by {})",
                m.iter().map(|s| &**s).collect::<Vec<_>>().join(", ")
            )
        }
    };
    match a {
        AnnotationStatus::NotRequested => "not requested".into(),
        AnnotationStatus::NotApplicable => "not applicable (no cert-manager)".into(),
        AnnotationStatus::Set { managers: m } => format!("set{}", managers(m)),
        AnnotationStatus::SetNotEffective { managers: m, .. } => {
            format!("set, not effective{}", managers(m))
        }
        AnnotationStatus::Missing => "missing".into(),
        AnnotationStatus::Invalid { value } => format!("invalid ({value:?})"),
    }
}

pub fn page(
    shell: &Shell,
    query: &IngressQuery,
    clusters: Vec<String>,
    ingresses: Page<IngressRow>,
    health: &[Option<crate::model::Severity>],
) -> String {
    let health_line = crate::components::health_line("Ingresses", health);
    // One choice for the rollout's question ("which still need the fix?"), then each state.
    let chosen = query.status.as_ref().map(|s| s.label()).unwrap_or_default();
    let needs_fix = NEEDS_FIX.to_string();
    let preset = view! { <option value=needs_fix.clone() selected=chosen == needs_fix>"needs the fix (missing, invalid, not in effect)"</option> };
    let status_options = AnnotationState::ALL
        .iter()
        .map(|s| {
            let (s, selected) = (s.label(), chosen == s.label());
            view! { <option value=s selected=selected>{s}</option> }
        })
        .collect_view();
    let legend = AnnotationState::ALL
        .iter()
        .map(|s| view! { <dt>{s.label()}</dt><dd>{s.explanation()}</dd> })
        .collect_view();
    let legend = view! {
        <details class="legend">
            <summary>"What the edit-in-place statuses mean"</summary>
            <dl class="facts">{legend}</dl>
        </details>
    };
    let rows = ingresses
        .items
        .iter()
        .map(|row| {
            let i = &row.ingress;
            let health = match row.severity {
                Some(s) => view! { <SeverityBadge severity=s/> }.into_any(),
                None => {
                    view! { <span class="badge ok"><span aria-hidden="true">"✓ "</span>"ok"</span> }
                        .into_any()
                }
            };
            let tls = i
                .tls
                .iter()
                .filter_map(|t| t.secret_name.clone())
                .collect::<Vec<_>>()
                .join(", ");
            let issuer = i
                .issuer
                .as_ref()
                .map(|r| format!("{} {}", r.kind, r.name))
                .unwrap_or_else(|| {
                    if i.tls_acme {
                        "default (tls-acme)".into()
                    } else {
                        String::new()
                    }
                });
            view! {
                <tr data-testid="ingress-row" data-severity=row.severity.map(|s| s.label()).unwrap_or("none")>
                    <td data-label="Cluster" class="cluster">{i.cluster.clone()}</td>
                    <td data-label="Namespace">{i.namespace.clone()}</td>
                    <th scope="row"><a href=detail_href(i)>{i.name.clone()}</a></th>
                    <td data-label="Hosts">{i.hosts.join(", ")}</td>
                    <td data-label="Class">{i.class.clone().unwrap_or_default()}</td>
                    <td data-label="TLS secrets">{tls}</td>
                    <td data-label="Issuer">{issuer}</td>
                    <td data-label="Edit-in-place" data-testid="annotation-status" title=row.annotation.state().explanation()>{annotation_text(&row.annotation)}</td>
                    <td data-label="Health">{health}</td>
                </tr>
            }
        })
        .collect_view();
    let empty = ingresses
        .items
        .is_empty()
        .then(|| view! { <p class="empty">"No Ingress matches these filters. " <a href="/ingresses">"Show every Ingress"</a></p> });
    let pager = view! { <Pager page=ingresses.page pages=ingresses.pages() total=ingresses.total base_query=query_string(query)/> };
    let base = filters(query);
    let bulk = shell.actions.then(|| {
        let scope = match (&query.cluster, &query.namespace) {
            (None, None) => "in every cluster you can see".to_string(),
            (Some(c), None) => format!("in cluster {c}"),
            (None, Some(ns)) => format!("in namespace {ns}"),
            (Some(c), Some(ns)) => format!("in {c}/{ns}"),
        };
        crate::pages::action::bulk_form(
            &shell.csrf,
            ActionKind::BulkEditInPlace,
            &crate::actions::BulkScope {
                list: crate::actions::BulkList::Ingresses,
                filters: base.clone(),
            },
            crate::pages::action::FormMode::Preview,
            format!("Preview: add edit-in-place to every Ingress {scope} that needs it"),
        )
    });
    let header = |label, key| sort_header(label, key, query.sort, &base);
    document(
        &Shell {
            title: "Ingresses".into(),
            active: Nav::Ingresses,
            search: query.q.clone().unwrap_or_default(),
            ..shell.clone()
        },
        view! {
            <h1>"Ingresses"</h1>
            {health_line}
            <form class="filters" method="get" action="/ingresses">
                {crate::components::findings::place_filters(&clusters, query.cluster.as_deref(), query.namespace.as_deref())}
                <label>"Host or name " <input type="search" name="q" value=query.q.clone().unwrap_or_default()/></label>
                <label>"Edit-in-place "
                    <select name="status">
                        <option value="">"Any"</option>
                        {preset}
                        {status_options}
                    </select>
                </label>
                <button type="submit">"Filter"</button>
            </form>
            {rollout(query)}
            {legend}
            {bulk}
            {empty}
            <table>
                <caption class="visually-hidden">"Ingresses"</caption>
                <thead>
                    <tr>
                        {header("Cluster", IngressSort::Cluster)}
                        {header("Namespace", IngressSort::Namespace)}
                        {header("Name", IngressSort::Name)}
                        {header("Hosts", IngressSort::Host)}
                        <th scope="col">"Class"</th>
                        <th scope="col">"TLS secrets"</th>
                        <th scope="col">"Issuer"</th>
                        <th scope="col">"Edit-in-place"</th>
                        {header("Health", IngressSort::Health)}
                    </tr>
                </thead>
                <tbody>{rows}</tbody>
            </table>
            {pager}
            {crate::components::json_link("/api/v1/ingresses", &query_string(query))}
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::encode;

    #[test]
    fn urls_encode_every_part() {
        assert_eq!(encode("a b/ü"), "a%20b%2F%C3%BC");
        let q = IngressQuery {
            cluster: Some("zrh".into()),
            q: Some("shop&x".into()),
            status: Some(crate::model::chain::AnnotationStates(vec![
                AnnotationState::Missing,
                AnnotationState::Invalid,
            ])),
            sort: crate::model::read::sort::Sort::parse("-host"),
            ..Default::default()
        };
        assert_eq!(
            filters(&q),
            "cluster=zrh&q=shop%26x&status=missing%2Cinvalid"
        );
        assert_eq!(
            query_string(&q),
            "cluster=zrh&q=shop%26x&status=missing%2Cinvalid&sort=-host"
        );
    }
}

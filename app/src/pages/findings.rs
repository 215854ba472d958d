//! `/findings`: every finding on its own — the symptoms the board folds into problems —
//! with filters and sort orders in the query string (the same as `/api/v1/findings`).

use leptos::prelude::*;

use crate::components::findings::{
    cluster_options, findings_table, option, rule_options, severity_options,
};
use crate::components::{document, Nav, Pager, Shell};
use crate::model::read::views::FindingQuery;
use crate::model::{ClusterView, Finding, Page};

/// The filters as a query string (without `page`), for the pager.
fn query_string(q: &FindingQuery) -> String {
    let severity = q.severity.map(|s| s.label());
    let sort = q.sort.map(|s| s.param());
    crate::components::query_string(&[
        ("cluster", q.cluster.as_deref()),
        ("namespace", q.namespace.as_deref()),
        ("severity", severity),
        ("rule", q.rule.as_deref()),
        ("sort", sort.as_deref()),
    ])
}

/// The filter and sort form; every choice is a plain GET parameter.
fn filter_form(q: &FindingQuery, clusters: &[ClusterView]) -> impl IntoView {
    let cluster_options = cluster_options(clusters, q.cluster.as_deref());
    let severity_options = severity_options(q.severity);
    let rule_options = rule_options(q.rule.as_deref());
    let current_sort = q
        .sort
        .map(|s| s.param())
        .unwrap_or_else(|| "urgency".into());
    let sort_options = [
        ("urgency", "most urgent first"),
        ("since", "newest first"),
        ("-since", "oldest first"),
        ("cluster", "cluster"),
        ("rule", "rule"),
    ]
    .map(|(v, l)| option(v, l, current_sort == v))
    .into_iter()
    .collect_view();
    view! {
        <form class="filters" method="get" action="/findings">
            <label>"Cluster "<select name="cluster"><option value="">"All clusters"</option>{cluster_options}</select></label>
            <label>"Namespace " <input name="namespace" value=q.namespace.clone().unwrap_or_default()/></label>
            <label>"Severity "<select name="severity"><option value="">"Any"</option>{severity_options}</select></label>
            <label>"Rule "<select name="rule"><option value="">"Any"</option>{rule_options}</select></label>
            <label>"Sort "<select name="sort">{sort_options}</select></label>
            <button type="submit">"Filter"</button>
        </form>
    }
}

pub fn page(
    shell: &Shell,
    query: &FindingQuery,
    clusters: Vec<ClusterView>,
    findings: Vec<Finding>,
) -> String {
    let now = shell.now;
    let total = findings.len();
    let empty = findings
        .is_empty()
        .then(|| view! { <p class="empty">"No findings match."</p> });
    let form = filter_form(query, &clusters);
    let findings = Page::of(findings, query.page.max(1), query.per_page.max(1));
    let pager = view! { <Pager page=findings.page pages=findings.pages() total=findings.total base_query=query_string(query)/> };
    document(
        &Shell {
            title: format!("Findings ({total})"),
            active: Nav::Board,
            ..shell.clone()
        },
        view! {
            <h1>"Findings"</h1>
            <p>"Every rule that fires, each on its own. The "<a href="/">"board"</a>" groups them into problems by root cause."</p>
            {form}
            {empty}
            {findings_table(findings.items, now, false)}
            {pager}
            {crate::components::json_link("/api/v1/findings", &query_string(query))}
        },
    )
}

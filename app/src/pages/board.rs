//! `/`: the triage board — what is broken now across the fleet, most urgent first, with
//! counts per cluster and severity, filters and sort orders in the query string, and what
//! changed recently from the history.

use leptos::prelude::*;

use crate::components::findings::findings_table;
use chrono::{DateTime, Utc};

use crate::components::{document, Nav, Pager, Shell, Time};
use crate::model::finding::RULE_IDS;
use crate::model::history::RecentChange;
use crate::model::read::views::FindingQuery;
use crate::model::{ClusterView, Finding, Page, Severity, SyncState};
use crate::pages::clusters::clusters_table;

fn count(findings: &[Finding], cluster: &str, severity: Severity) -> usize {
    findings
        .iter()
        .filter(|f| *f.cluster == *cluster && f.severity == severity)
        .count()
}

/// The board's filters as a query string (without `page`), for the pager.
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
    let option = |value: &str, label: &str, selected: bool| {
        view! { <option value=value.to_string() selected=selected>{label.to_string()}</option> }
    };
    let cluster_options = clusters
        .iter()
        .map(|c| {
            option(
                &c.name,
                &c.name,
                q.cluster.as_deref() == Some(c.name.as_str()),
            )
        })
        .collect_view();
    let severity_options = [Severity::Critical, Severity::Warning, Severity::Info]
        .map(|s| option(s.label(), s.label(), q.severity == Some(s)))
        .into_iter()
        .collect_view();
    let rule_options = RULE_IDS
        .iter()
        .map(|r| option(r, r, q.rule.as_deref() == Some(*r)))
        .collect_view();
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
        <form class="filters" method="get" action="/">
            <label>"Cluster "<select name="cluster"><option value="">"All clusters"</option>{cluster_options}</select></label>
            <label>"Namespace " <input name="namespace" value=q.namespace.clone().unwrap_or_default()/></label>
            <label>"Severity "<select name="severity"><option value="">"Any"</option>{severity_options}</select></label>
            <label>"Rule "<select name="rule"><option value="">"Any"</option>{rule_options}</select></label>
            <label>"Sort "<select name="sort">{sort_options}</select></label>
            <button type="submit">"Filter"</button>
        </form>
    }
}

/// "What changed recently": history rows, newest first.
fn recent_table(recent: Result<Vec<RecentChange>, String>, now: DateTime<Utc>) -> impl IntoView {
    match recent {
        Err(e) => view! { <p class="error-text">{e}</p> }.into_any(),
        Ok(r) if r.is_empty() => {
            view! { <p>"Nothing changed in the last 24 hours."</p> }.into_any()
        }
        Ok(r) => {
            let rows = r
                .into_iter()
                .map(|c| {
                    let at = DateTime::parse_from_rfc3339(&c.at)
                        .map(|t| t.with_timezone(&Utc))
                        .ok()
                        .map(|at| view! { <Time at=at now=now/> });
                    let object = if c.namespace.is_empty() {
                        format!("{} {}", c.kind, c.name)
                    } else {
                        format!("{} {}/{}", c.kind, c.namespace, c.name)
                    };
                    view! {
                        <tr data-testid="recent-row">
                            <td>{at}</td>
                            <td>{c.cluster}</td>
                            <td>{object}</td>
                            <td>{c.what}</td>
                            <td class="message">{c.detail.unwrap_or_default()}</td>
                        </tr>
                    }
                })
                .collect_view();
            view! {
                <table>
                    <caption class="visually-hidden">"Recent changes"</caption>
                    <thead><tr><th scope="col">"When"</th><th scope="col">"Cluster"</th><th scope="col">"Object"</th><th scope="col">"Change"</th><th scope="col">"Detail"</th></tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            }
            .into_any()
        }
    }
}

pub fn page(
    shell: &Shell,
    query: &FindingQuery,
    clusters: Vec<ClusterView>,
    findings: Vec<Finding>,
    recent: Result<Vec<RecentChange>, String>,
) -> String {
    let now = shell.now;
    let critical = findings
        .iter()
        .filter(|f| f.severity == Severity::Critical)
        .count();
    let warning = findings
        .iter()
        .filter(|f| f.severity == Severity::Warning)
        .count();
    let unhealthy = clusters
        .iter()
        .filter(|c| matches!(c.state, SyncState::Stale { .. } | SyncState::Failed { .. }))
        .count();
    let headline = if critical + warning == 0 {
        format!(
            "Nothing is broken: {} clusters, no critical or warning findings.",
            clusters.len()
        )
    } else {
        format!(
            "{critical} critical and {warning} warning findings across {} clusters{}",
            clusters.len(),
            if unhealthy > 0 {
                format!("; {unhealthy} cluster(s) not in sync")
            } else {
                String::new()
            }
        )
    };
    let class = if critical > 0 {
        "summary critical"
    } else if warning > 0 {
        "summary warning"
    } else {
        "summary ok"
    };
    let counts = clusters
        .iter()
        .map(|c| {
            let cells = [Severity::Critical, Severity::Warning, Severity::Info].map(|s| {
                let n = count(&findings, &c.name, s);
                let href = format!("/?{}", crate::components::query_string(&[("cluster", Some(&c.name)), ("severity", Some(s.label()))]));
                view! { <td><a href=href>{n}</a></td> }
            });
            view! { <tr><th scope="row">{c.name.clone()}</th>{cells.into_iter().collect_view()}</tr> }
        })
        .collect_view();
    let empty = findings
        .is_empty()
        .then(|| view! { <p>"No findings match."</p> });
    let form = filter_form(query, &clusters);
    let bulk = shell.actions.then(|| {
        crate::pages::action::action_form(
            &shell.csrf,
            crate::actions::ActionKind::BulkEditInPlace,
            query.cluster.as_deref().unwrap_or(""),
            query.namespace.as_deref().unwrap_or(""),
            "",
            crate::pages::action::FormMode::Preview,
            "Preview: bulk fix — add edit-in-place wherever it is missing here".into(),
        )
    });
    let findings = Page::of(findings, query.page.max(1), query.per_page.max(1));
    let pager = view! { <Pager page=findings.page pages=findings.pages() total=findings.total base_query=query_string(query)/> };
    document(
        &Shell {
            title: "Triage".into(),
            active: Nav::Board,
            ..shell.clone()
        },
        view! {
            <h1>"Triage"</h1>
            <p class=class data-testid="board-summary">{headline}</p>
            <h2>"Findings by cluster"</h2>
            <table class="counts">
                <thead><tr><th scope="col">"Cluster"</th><th scope="col">"✖ critical"</th><th scope="col">"▲ warning"</th><th scope="col">"ℹ info"</th></tr></thead>
                <tbody>{counts}</tbody>
            </table>
            <h2>"Broken now"</h2>
            {form}
            {bulk}
            {empty}
            {findings_table(findings.items, now, false)}
            {pager}
            <h2>"What changed recently"</h2>
            {recent_table(recent, now)}
            <h2>"Clusters"</h2>
            {clusters_table(clusters, now)}
        },
    )
}

//! `/`: the triage board — what is broken now across the fleet, most urgent first, with
//! counts per cluster and severity.

use leptos::prelude::*;

use crate::components::findings::findings_table;
use crate::components::{document, Nav, Shell};
use crate::model::{ClusterView, Finding, Severity, SyncState};
use crate::pages::clusters::clusters_table;

fn count(findings: &[Finding], cluster: &str, severity: Severity) -> usize {
    findings
        .iter()
        .filter(|f| f.cluster == cluster && f.severity == severity)
        .count()
}

pub fn page(shell: &Shell, clusters: Vec<ClusterView>, findings: Vec<Finding>) -> String {
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
                let href = format!("/?cluster={}&severity={}", c.name, s.label());
                view! { <td><a href=href>{n}</a></td> }
            });
            view! { <tr><th scope="row">{c.name.clone()}</th>{cells.into_iter().collect_view()}</tr> }
        })
        .collect_view();
    let empty = findings
        .is_empty()
        .then(|| view! { <p>"No findings match."</p> });
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
            <h2>"Broken now, most urgent first"</h2>
            {empty}
            {findings_table(findings, now, false)}
            <h2>"Clusters"</h2>
            {clusters_table(clusters, now)}
        },
    )
}

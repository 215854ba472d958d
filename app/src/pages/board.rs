//! `/`: the triage board. For now: which clusters are unhealthy, and how much each holds.

use leptos::prelude::*;

use crate::components::{document, Nav, Shell};
use crate::model::{ClusterView, SyncState};
use crate::pages::clusters::clusters_table;

pub fn page(shell: &Shell, clusters: Vec<ClusterView>) -> String {
    let now = shell.now;
    let unhealthy: Vec<&ClusterView> = clusters
        .iter()
        .filter(|c| matches!(c.state, SyncState::Stale { .. } | SyncState::Failed { .. }))
        .collect();
    let total: usize = clusters.iter().map(|c| c.ingresses).sum();
    let headline = if unhealthy.is_empty() {
        format!(
            "All {} clusters are in sync · {total} Ingresses watched",
            clusters.len()
        )
    } else {
        format!(
            "{} of {} clusters are not in sync: {}",
            unhealthy.len(),
            clusters.len(),
            unhealthy
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let class = if unhealthy.is_empty() {
        "summary ok"
    } else {
        "summary critical"
    };
    document(
        &Shell {
            title: "Triage".into(),
            active: Nav::Board,
            ..shell.clone()
        },
        view! {
            <h1>"Triage"</h1>
            <p class=class data-testid="board-summary">{headline}</p>
            <h2>"Clusters"</h2>
            {clusters_table(clusters, now)}
        },
    )
}

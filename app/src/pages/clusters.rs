//! `/clusters`: every configured cluster, its sync state, last sync and last error.

use leptos::prelude::*;

use crate::components::{document, Nav, Shell, SyncBadge, Time};
use crate::model::{ClusterView, KindState, SyncState};

fn kind_summary(c: &ClusterView) -> String {
    c.kinds
        .iter()
        .map(|k| {
            let state = match &k.state {
                KindState::Listing => "listing".to_string(),
                KindState::Synced => format!("{} cached", k.objects),
                KindState::NotInstalled => "not installed".to_string(),
                KindState::UnsupportedVersion { reads, served } => format!(
                    "served only as {} (Lookout reads {reads}); not shown",
                    served.join(", ")
                ),
                KindState::Error { error } => format!("error: {error}"),
            };
            format!("{}: {state}", k.kind)
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The clusters table, shared with the triage board.
pub(crate) fn clusters_table(
    clusters: Vec<ClusterView>,
    now: chrono::DateTime<chrono::Utc>,
) -> impl IntoView {
    let rows = clusters
        .into_iter()
        .map(|c| {
            let last_sync = match c.last_sync {
                Some(at) => view! { <Time at=at now=now/> }.into_any(),
                None => view! { <span>"never"</span> }.into_any(),
            };
            let error = match &c.state {
                SyncState::Stale { error, .. } | SyncState::Failed { error } => Some(error.clone()),
                _ => c.last_error.clone(),
            };
            let kinds = kind_summary(&c);
            let href = format!("/ingresses?cluster={}", c.name);
            view! {
                <tr data-testid="cluster-row">
                    <th scope="row">{c.name.clone()}</th>
                    <td data-label="State"><SyncBadge state=c.state.clone()/></td>
                    <td data-label="Last sync">{last_sync}</td>
                    <td data-label="Ingresses"><a href=href>{c.ingresses}</a></td>
                    <td data-label="Watched kinds">{kinds}</td>
                    <td data-label="Last error" class="error-text">{error}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <table>
            <caption class="visually-hidden">"Clusters"</caption>
            <thead>
                <tr>
                    <th scope="col">"Cluster"</th>
                    <th scope="col">"State"</th>
                    <th scope="col">"Last sync"</th>
                    <th scope="col">"Ingresses"</th>
                    <th scope="col">"Watched kinds"</th>
                    <th scope="col">"Last error"</th>
                </tr>
            </thead>
            <tbody>{rows}</tbody>
        </table>
    }
}

pub fn page(shell: &Shell, clusters: Vec<ClusterView>) -> String {
    let now = shell.now;
    let empty = clusters.is_empty().then(
        || view! { <p class="empty">"No clusters are configured, or none is visible to you."</p> },
    );
    document(
        &Shell {
            title: "Clusters".into(),
            active: Nav::Clusters,
            ..shell.clone()
        },
        view! {
            <h1>"Clusters"</h1>
            {empty}
            {clusters_table(clusters, now)}
        },
    )
}

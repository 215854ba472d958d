//! `/clusters`: every configured cluster, its sync state, last sync and last error.

use leptos::prelude::*;

use crate::components::{document, Nav, Shell, SyncBadge, Time};
use crate::model::{ClusterView, KindState, SyncState};

/// Each watched kind's state; kinds in the same state (twelve watches failing with one
/// error) are said once, with the kinds it applies to.
fn kind_summary(c: &ClusterView) -> String {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for k in &c.kinds {
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
        match groups.iter_mut().find(|(s, _)| *s == state) {
            Some((_, kinds)) => kinds.push(k.kind.to_string()),
            None => groups.push((state, vec![k.kind.to_string()])),
        }
    }
    groups
        .into_iter()
        .map(|(state, kinds)| match kinds.len() {
            1 => format!("{}: {state}", kinds[0]),
            n => format!("{} ({n} kinds): {state}", kinds.join(", ")),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The clusters table, shared with the triage board.
pub(crate) fn clusters_table(
    mut clusters: Vec<ClusterView>,
    now: chrono::DateTime<chrono::Utc>,
) -> impl IntoView {
    // Failing clusters first, as in the strip on every page; the rest in configuration order.
    clusters.sort_by_key(|c| match c.state {
        SyncState::Failed { .. } => 0,
        SyncState::Stale { .. } => 1,
        SyncState::Connecting => 2,
        SyncState::Synced => 3,
    });
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
            let href = format!("/ingresses?cluster={}", crate::components::encode(&c.name));
            // Never listed: how many it has is not known, not zero.
            let ingresses = match c.last_sync {
                None => view! { <span>"unknown"</span> }.into_any(),
                Some(_) => view! { <a href=href>{c.ingresses}</a> }.into_any(),
            };
            view! {
                <tr data-testid="cluster-row">
                    <th scope="row">{c.name.clone()}</th>
                    <td data-label="State"><SyncBadge state=c.state.clone()/></td>
                    <td data-label="Last sync">{last_sync}</td>
                    <td data-label="Ingresses">{ingresses}</td>
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Kind, KindStatus};

    #[test]
    fn failing_clusters_come_first() {
        let cluster = |name: &str, state| ClusterView {
            name: name.into(),
            state,
            last_sync: None,
            last_error: None,
            kinds: Vec::new(),
            ingresses: 0,
        };
        let html = page(
            &Shell::default(),
            vec![
                cluster("zrh-prod", SyncState::Synced),
                cluster(
                    "fra-edge",
                    SyncState::Failed {
                        error: "refused".into(),
                    },
                ),
            ],
        );
        let at = |name: &str| html.find(&format!(">{name}<")).unwrap();
        assert!(at("fra-edge") < at("zrh-prod"), "{html}");
    }

    #[test]
    fn kinds_failing_with_one_error_are_said_once() {
        let kind = |kind, state| KindStatus {
            kind,
            state,
            objects: 0,
        };
        let refused = || KindState::Error {
            error: "client error (Connect)".into(),
        };
        let c = ClusterView {
            name: "fra-edge".into(),
            state: SyncState::Failed {
                error: "client error (Connect)".into(),
            },
            last_sync: None,
            last_error: None,
            kinds: vec![
                kind(Kind::Ingress, refused()),
                kind(Kind::Certificate, refused()),
                kind(Kind::Challenge, refused()),
                kind(Kind::Order, KindState::NotInstalled),
            ],
            ingresses: 0,
        };
        let text = kind_summary(&c);
        assert_eq!(text.matches("client error (Connect)").count(), 1, "{text}");
        assert!(
            text.contains("(3 kinds): error: client error (Connect)"),
            "{text}"
        );
        assert!(text.contains("Order: not installed"), "{text}");
    }
}

//! `/challenges`: the ACME challenge history, deleted Challenges included, with the failures
//! grouped by reason.

use leptos::prelude::*;

use crate::components::{document, Nav, Shell};
use crate::model::history::ChallengeRecord;
use crate::model::Page;

/// Failed challenges by classified reason, most frequent first.
pub fn failures_by_reason(rows: &[ChallengeRecord]) -> Vec<(&'static str, usize)> {
    let mut counts: std::collections::BTreeMap<&'static str, usize> =
        std::collections::BTreeMap::new();
    for r in rows {
        if let Some(reason) = r.failure {
            *counts.entry(reason).or_default() += 1;
        }
    }
    let mut out: Vec<(&'static str, usize)> = counts.into_iter().collect();
    out.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    out
}

pub fn page(
    shell: &Shell,
    failures: Vec<(&'static str, usize)>,
    rows: Page<ChallengeRecord>,
) -> String {
    let groups = failures
        .into_iter()
        .map(|(reason, n)| view! { <li>{format!("{reason}: {n}")}</li> })
        .collect_view();
    let items = rows
        .items
        .iter()
        .map(|r| {
            let states = r.transitions.iter().map(|t| if t.state.is_empty() { "created".to_string() } else { t.state.clone() }).collect::<Vec<_>>().join(" → ");
            let gone = r.deleted_at.clone().map(|d| format!("deleted {d}")).unwrap_or_else(|| "exists".into());
            view! {
                <tr data-testid="challenge-row">
                    <td>{r.cluster.clone()}</td>
                    <td>{r.namespace.clone()}</td>
                    <td>{r.dns_name.clone()}</td>
                    <td>{r.challenge_type.clone()}</td>
                    <td>{if r.state.is_empty() { "unknown".to_string() } else { r.state.clone() }}</td>
                    <td>{r.failure.unwrap_or("")}</td>
                    <td>{r.reason.clone().unwrap_or_default()}</td>
                    <td>{states}</td>
                    <td>{gone}</td>
                </tr>
            }
        })
        .collect_view();
    let empty = rows
        .items
        .is_empty()
        .then(|| view! { <p>"No challenge matches."</p> });
    let summary = format!(
        "{} challenges (page {} of {})",
        rows.total,
        rows.page,
        rows.pages()
    );
    document(
        &Shell {
            title: "Challenge history".into(),
            active: Nav::Challenges,
            ..shell.clone()
        },
        view! {
            <h1>"Challenge history"</h1>
            <p>"Every ACME Challenge Lookout has seen, including those Kubernetes deleted after they finished."</p>
            <h2>"Failures by reason"</h2>
            <ul>{groups}</ul>
            <h2>{summary}</h2>
            {empty}
            <table>
                <caption class="visually-hidden">"Challenges"</caption>
                <thead><tr>
                    <th scope="col">"Cluster"</th><th scope="col">"Namespace"</th><th scope="col">"Name"</th><th scope="col">"Type"</th>
                    <th scope="col">"State"</th><th scope="col">"Failure"</th><th scope="col">"Reason"</th><th scope="col">"History"</th><th scope="col">"In cluster"</th>
                </tr></thead>
                <tbody>{items}</tbody>
            </table>
        },
    )
}

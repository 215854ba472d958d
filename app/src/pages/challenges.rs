//! `/challenges`: the ACME challenge history, deleted Challenges included, with the failures
//! grouped by reason.

use leptos::prelude::*;

use crate::components::{document, query_string, sort_header, Nav, Pager, Shell};
use crate::model::choice::Choice;
use crate::model::history::ChallengeRecord;
use crate::model::read::sort::ChallengeSort;
use crate::model::read::views::{ChallengeQuery, ChallengeState};
use crate::model::Page;

/// Sums counts of failed challenges by classified reason; most frequent first, ties in
/// the reasons' order.
pub fn tally_failures(
    counts: impl IntoIterator<Item = (&'static str, usize)>,
) -> Vec<(&'static str, usize)> {
    let mut by_reason: std::collections::BTreeMap<&'static str, usize> =
        std::collections::BTreeMap::new();
    for (reason, n) in counts {
        *by_reason.entry(reason).or_default() += n;
    }
    let mut out: Vec<(&'static str, usize)> = by_reason.into_iter().collect();
    out.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    out
}

/// One table row per Challenge: where, what, its state and failure, every state it went
/// through, and whether Kubernetes still has it.
pub fn challenge_rows(
    rows: &[ChallengeRecord],
    now: chrono::DateTime<chrono::Utc>,
) -> impl IntoView {
    use crate::components::time_text;
    rows.iter()
        .map(|r| {
            let states = r.transitions.iter().map(|t| if t.state.is_empty() { "created".to_string() } else { t.state.clone() }).collect::<Vec<_>>().join(" → ");
            let gone = match &r.deleted_at {
                Some(d) => view! { "deleted " {time_text(d, now)} }.into_any(),
                // Updated when the Challenge changes, not while it sits unchanged.
                None => view! { "exists (last changed " {time_text(&r.last_seen, now)} ")" }.into_any(),
            };
            view! {
                <tr data-testid="challenge-row">
                    <td data-label="Cluster" class="cluster">{r.cluster.clone()}</td>
                    <td data-label="Namespace">{r.namespace.clone()}</td>
                    <td data-label="DNS name"><a href=format!("/search?q={}", crate::components::encode(&r.dns_name))>{r.dns_name.clone()}</a></td>
                    <td data-label="Type">{r.challenge_type.clone()}</td>
                    <td data-label="State">{if r.state.is_empty() { "unknown".to_string() } else { r.state.clone() }}</td>
                    <td data-label="Failure" title=r.failure.as_ref().map(|f| f.explanation.to_string())>{r.failure.as_ref().map(|f| f.label.to_string())}</td>
                    <td data-label="Reason" class="message">{r.reason.clone().unwrap_or_default()}</td>
                    <td data-label="History">{states}</td>
                    <td data-label="Last change">{gone}</td>
                </tr>
            }
        })
        .collect_view()
}

/// The filters as a query string (without `sort` and `page`).
fn filters(q: &ChallengeQuery) -> String {
    query_string(&[
        ("cluster", q.cluster.as_deref()),
        ("namespace", q.namespace.as_deref()),
        ("domain", q.domain.as_deref()),
        ("outcome", q.outcome.map(|o| o.label())),
        ("since", q.since_text.as_deref()),
    ])
}

pub fn page(
    shell: &Shell,
    query: &ChallengeQuery,
    clusters: Vec<String>,
    failures: Vec<(&'static str, usize)>,
    rows: Page<ChallengeRecord>,
) -> String {
    let base = filters(query);
    let sort = query.sort.map(|s| s.param());
    let pager_query = [base.clone(), query_string(&[("sort", sort.as_deref())])]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("&");
    let pager_query_for_export = pager_query.clone();
    let pager = view! { <Pager page=rows.page pages=rows.pages() total=rows.total base_query=pager_query/> };
    let header = |label, key| sort_header(label, key, query.sort, &base);
    let option = |value: &str, selected: bool| view! { <option value=value.to_string() selected=selected>{value.to_string()}</option> };
    let cluster_options = clusters
        .iter()
        .map(|c| option(c, query.cluster.as_deref() == Some(c.as_str())))
        .collect_view();
    let outcome_options = ChallengeState::ALL
        .iter()
        .map(|o| option(o.label(), query.outcome == Some(*o)))
        .collect_view();
    let no_failures = failures
        .is_empty()
        .then(|| view! { <p class="empty">"No failed challenge matches."</p> });
    let groups = failures
        .into_iter()
        .map(|(reason, n)| view! { <li>{format!("{reason}: {n}")}</li> })
        .collect_view();
    let items = challenge_rows(&rows.items, shell.now);
    let empty = rows
        .items
        .is_empty()
        .then(|| view! { <p class="empty">"No challenge matches these filters. " <a href="/challenges">"Show the whole history"</a></p> });
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
            <form class="filters" method="get" action="/challenges">
                <label>"Cluster "<select name="cluster"><option value="">"All clusters"</option>{cluster_options}</select></label>
                <label>"Namespace " <input name="namespace" value=query.namespace.clone().unwrap_or_default()/></label>
                <label>"Domain " <input type="search" name="domain" value=query.domain.clone().unwrap_or_default()/></label>
                <label>"State "<select name="outcome"><option value="">"Any"</option>{outcome_options}</select></label>
                <label>"Since " <input name="since" placeholder="24h or 2026-01-01T00:00:00Z" value=query.since_text.clone().unwrap_or_default()/></label>
                <button type="submit">"Filter"</button>
            </form>
            <h2>"Failures by reason"</h2>
            {no_failures}
            <ul>{groups}</ul>
            <h2>{summary}</h2>
            {empty}
            <table>
                <caption class="visually-hidden">"Challenges"</caption>
                <thead><tr>
                    <th scope="col">"Cluster"</th><th scope="col">"Namespace"</th>{header("DNS name", ChallengeSort::Domain)}<th scope="col">"Type"</th>
                    {header("State", ChallengeSort::State)}<th scope="col">"Failure"</th><th scope="col">"Reason"</th><th scope="col">"History"</th>{header("Last change", ChallengeSort::Recent)}
                </tr></thead>
                <tbody>{items}</tbody>
            </table>
            {pager}
            {crate::components::json_link("/api/v1/challenges", &pager_query_for_export)}
        },
    )
}

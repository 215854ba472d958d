//! `/rate-limits`: Let's Encrypt budgets from the issuance history, fullest first, each with
//! a bar drawn as server-rendered SVG.

use leptos::prelude::*;

use crate::components::{document, Nav, Shell, Time};
use crate::model::budget::Budget;

fn bar(b: &Budget) -> impl IntoView {
    let width = (b.ratio.min(1.0) * 200.0).round();
    let class = if b.used >= b.capacity {
        "bar critical"
    } else if b.ratio >= 0.8 {
        "bar warning"
    } else {
        "bar ok"
    };
    let label = format!("{} of {} used", b.used, b.capacity);
    let title = label.clone();
    view! {
        <svg width="200" height="12" role="img" aria-label=label>
            <title>{title}</title>
            <rect width="200" height="12" class="bar-track"></rect>
            <rect width=width.to_string() height="12" class=class></rect>
        </svg>
    }
}

/// "n of them outside your namespaces", when the viewer sees only part of the fleet.
pub(crate) fn elsewhere(n: u32) -> Option<String> {
    (n > 0).then(|| format!(" ({n} used in this fleet outside your namespaces)"))
}

pub fn page(shell: &Shell, budgets: Vec<Budget>) -> String {
    let now = shell.now;
    let rows = budgets
        .iter()
        .map(|b| {
            let limit = b.limit.description();
            let server = if b.server.contains("staging") {
                "staging"
            } else {
                "production"
            };
            let frees = b.frees_at.map(|at| view! { <Time at=at now=now/> });
            view! {
                <tr data-testid="budget-row">
                    <td>{server}</td>
                    <td>{limit}</td>
                    <th scope="row">{b.key.clone()}</th>
                    <td>{format!("{} / {}", b.used, b.capacity)}{elsewhere(b.elsewhere)}</td>
                    <td>{bar(b)}</td>
                    <td>{frees}</td>
                </tr>
            }
        })
        .collect_view();
    let empty = budgets.is_empty().then(
        || view! { <p>"No certificate has been issued or failed within the limits' windows."</p> },
    );
    document(
        &Shell {
            title: "Let's Encrypt budgets".into(),
            active: Nav::RateLimits,
            ..shell.clone()
        },
        view! {
            <h1>"Let's Encrypt budgets"</h1>
            <p>"Computed from the issuance history: 50 new certificates per registered domain and 5 per exact set of names per 7 days (renewals of a set are exempt from the first), 5 failed authorizations per name per hour."</p>
            {empty}
            <table>
                <caption class="visually-hidden">"Budgets"</caption>
                <thead><tr>
                    <th scope="col">"Server"</th><th scope="col">"Limit"</th><th scope="col">"For"</th>
                    <th scope="col">"Used"</th><th scope="col">"Budget"</th><th scope="col">"Next frees up"</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        },
    )
}

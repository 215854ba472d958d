//! `/rate-limits/forecast`: the Let's Encrypt Certificates due in the next 7 days against
//! what the budgets will have left, per registered domain — the ones that run out first,
//! with the clusters they are in.

use leptos::prelude::*;

use crate::components::{document, encode, query_string, Nav, Shell, Time};
use crate::model::budget::{DomainForecast, DueCertificate, Limit};
use crate::model::read::views::BudgetQuery;

/// The budgets' filters as a query string (shared with `/rate-limits`).
pub(crate) fn budget_query_string(q: &BudgetQuery) -> String {
    query_string(&[
        ("cluster", q.cluster.as_deref()),
        ("namespace", q.namespace.as_deref()),
        ("key", q.key.as_deref()),
    ])
}

/// A refused issuance, linked to its Certificate, with the limit that refuses it.
fn refused(d: &DueCertificate, now: chrono::DateTime<chrono::Utc>) -> Option<impl IntoView> {
    let why = d.refused.as_ref()?;
    let c = &d.certificate;
    let href = format!(
        "/certificates/{}/{}/{}",
        encode(&c.cluster),
        encode(&c.namespace),
        encode(&c.name)
    );
    let limit = match why.limit {
        Limit::ExactSet => format!("the exact set {} is used up", why.key),
        Limit::NewOrders => format!("the account of {} has no new orders left", why.key),
        Limit::Paused => format!(
            "Let's Encrypt paused {} for its account (until someone unpauses it at the URL in the Certificate's error)",
            why.key
        ),
        Limit::FailedAuthorizations => {
            format!("{} has too many failed authorizations for its account", why.key)
        }
        Limit::RegisteredDomain => format!("{} is out of new certificates", why.key),
    };
    let until = why
        .until
        .map(|u| view! { ", room again " <Time at=u now=now/> });
    Some(view! {
        <li data-testid="refused">
            <a href=href>{format!("{} · {} · {}", c.name, c.namespace, c.cluster)}</a>
            " — due " <Time at=d.at now=now/> ": " {limit} {until}
        </li>
    })
}

fn row(f: &DomainForecast, now: chrono::DateTime<chrono::Utc>) -> impl IntoView {
    let server = if f.server.contains("staging") {
        "staging"
    } else {
        "production"
    };
    let verdict = match f.runs_out {
        Some(at) => view! {
            <span class="badge critical"><span aria-hidden="true">"✖ "</span>"refused from "<Time at=at now=now/></span>
        }
        .into_any(),
        None => view! { <span class="badge ok"><span aria-hidden="true">"✓ "</span>"fits"</span> }
            .into_any(),
    };
    let clusters = f
        .clusters
        .iter()
        .map(|c| {
            let href = format!(
                "/certificates?cluster={}&q={}",
                encode(c),
                encode(&f.domain)
            );
            view! { <li><a href=href>{c.clone()}</a></li> }
        })
        .collect_view();
    let refusals: Vec<_> = f.due.iter().filter_map(|d| refused(d, now)).collect();
    let refusals = (!refusals.is_empty()).then(|| view! { <ul class="plain">{refusals}</ul> });
    let due = match (f.new_certificates, f.renewals) {
        (0, r) => format!("{r} renewal{}", if r == 1 { "" } else { "s" }),
        (n, 0) => format!("{n} new"),
        (n, r) => format!("{n} new, {r} renewal{}", if r == 1 { "" } else { "s" }),
    };
    let domain_href = format!("/certificates?q={}", encode(&f.domain));
    view! {
        <tr data-testid="forecast-row" data-runs-out=f.runs_out.is_some().to_string()>
            <th scope="row" data-label="Registered domain">
                <a href=domain_href>{f.domain.clone()}</a>
                <small>" " {server}</small>
            </th>
            <td data-label="In the next 7 days">{verdict}{refusals}</td>
            <td data-label="Clusters" class="cluster"><ul class="plain">{clusters}</ul></td>
            <td data-label="Due">{due}</td>
            <td data-label="New certificates left">
                {format!("{} of {} now, {} in 7 days", f.left_now, f.capacity, f.left_at_end)}
            </td>
        </tr>
    }
}

/// The headline of domains that run out: "refuses now" when an issuance is refused over a
/// budget that has no room already, or is due now; "will refuse" when the budget runs out
/// later in the week.
pub(crate) fn refusal_headline(
    short: &[&DomainForecast],
    now: chrono::DateTime<chrono::Utc>,
) -> &'static str {
    let now_too = short
        .iter()
        .filter(|f| f.refusing_now || f.runs_out.is_some_and(|t| t <= now))
        .count();
    if now_too == 0 {
        "Let's Encrypt will refuse certificates in the next 7 days"
    } else if now_too == short.len() {
        "Let's Encrypt refuses certificates now"
    } else {
        "Let's Encrypt refuses certificates now, and will refuse more in the next 7 days"
    }
}

pub fn page(shell: &Shell, query: &BudgetQuery, forecast: &[DomainForecast]) -> String {
    let now = shell.now;
    let (short, clusters) = crate::model::budget::running_out(forecast);
    let summary = if forecast.is_empty() {
        view! { <p class="empty" data-testid="forecast-summary">"No Let's Encrypt certificate is due for issuance in the next 7 days."</p> }
            .into_any()
    } else if short.is_empty() {
        view! { <p class="notice ok" data-testid="forecast-summary">"Every certificate due in the next 7 days fits in what the budgets will have left."</p> }
            .into_any()
    } else {
        let domains = short.len();
        view! {
            <p class="notice critical" data-testid="forecast-summary">
                <strong>{refusal_headline(&short, now)}</strong>
                {format!(" for names under {domains} registered domain{}", if domains == 1 { "" } else { "s" })}
                {format!(", in {} {}.", if clusters.len() == 1 { "cluster" } else { "clusters" }, clusters.join(", "))}
            </p>
        }
        .into_any()
    };
    let filtered = (query.cluster.is_some() || query.namespace.is_some()).then(|| {
        let what = [query.cluster.as_deref(), query.namespace.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" / ");
        view! { <p>"Certificates in "<strong>{what}</strong>" — "<a href="/rate-limits/forecast">"the whole fleet"</a></p> }
    });
    let rows = forecast.iter().map(|f| row(f, now)).collect_view();
    let table = (!forecast.is_empty()).then(|| {
        view! {
            <table class="cards">
                <caption class="visually-hidden">"Forecast per registered domain"</caption>
                <thead><tr>
                    <th scope="col">"Registered domain"</th><th scope="col">"In the next 7 days"</th>
                    <th scope="col">"Clusters"</th><th scope="col">"Due"</th><th scope="col">"New certificates left"</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        }
    });
    document(
        &Shell {
            title: if short.is_empty() {
                "Budget forecast".into()
            } else {
                format!("✖ {} run out · Budget forecast", short.len())
            },
            active: Nav::RateLimits,
            ..shell.clone()
        },
        view! {
            <h1>"Let's Encrypt budgets: the next 7 days"</h1>
            <p>
                "Every Let's Encrypt certificate due in the next 7 days — past its renewal time, or not ready and so being issued now — played against what the budgets have left and get back. "
                "A renewal (the same names issued in the last 120 days) costs one of its exact set (5 per 7 days); a new certificate also one of its registered domain (50 per 7 days) and one of its account's new orders (300 per 3 hours). "
                "What Let's Encrypt has said already holds: a Certificate it refused is refused until the time it named, and a name it paused for an account until someone unpauses it. "
                "Failed validations are not forecast. "
                <a href="/rate-limits">"Budgets in use now"</a>
            </p>
            {filtered}
            {summary}
            {table}
            {crate::components::json_link("/api/v1/rate-limits/forecast", &budget_query_string(query))}
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_headline_says_now_when_a_budget_is_used_up_already() {
        let now = crate::model::rules::fixtures::now();
        let short = |at: chrono::DateTime<chrono::Utc>| DomainForecast {
            server: "https://acme-v02.api.letsencrypt.org/directory".into(),
            domain: "example.org".into(),
            capacity: 50,
            left_now: 0,
            left_at_end: 0,
            runs_out: Some(at),
            refusing_now: false,
            refused: 1,
            renewals: 0,
            new_certificates: 1,
            due: Vec::new(),
            clusters: Vec::new(),
            namespaces: Vec::new(),
        };
        let (used_up, later) = (short(now), short(now + chrono::Duration::days(3)));
        assert_eq!(
            refusal_headline(&[&used_up], now),
            "Let's Encrypt refuses certificates now"
        );
        assert_eq!(
            refusal_headline(&[&later], now),
            "Let's Encrypt will refuse certificates in the next 7 days"
        );
        assert!(refusal_headline(&[&used_up, &later], now).contains("and will refuse more"));
    }
}

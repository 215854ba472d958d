//! `/rate-limits`: Let's Encrypt budgets from the issuance history, fullest first, each with
//! a bar drawn as server-rendered SVG.

use leptos::prelude::*;

use crate::components::{document, encode, Nav, Shell, Time};
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

/// Where a budget was spent: each namespace with how many of its counted spends it made,
/// the most first, each a filter of this page.
fn places(b: &Budget) -> impl IntoView {
    b.spent_by
        .iter()
        .map(|s| {
            let (cluster, namespace) = s.namespace.split_once('/').unwrap_or(("", &s.namespace));
            let href = format!(
                "/rate-limits?{}",
                crate::components::query_string(&[
                    ("cluster", Some(cluster)),
                    ("namespace", Some(namespace))
                ])
            );
            view! { <li><a href=href>{s.namespace.clone()}</a>{format!(" ({})", s.count)}</li> }
        })
        .collect_view()
}

/// The spends of the budgets shown, summed per namespace, the most first: which customers
/// spent most (of one registered domain's budget when the page is narrowed to it).
fn spenders(budgets: &[Budget]) -> Option<impl IntoView> {
    use crate::model::budget::Limit;
    // One column per kind of spend among the budgets shown: an issuance counts once in its
    // exact set and once in each registered domain it is new for, an order once, a failed
    // validation once — so a column adds up, and no spend is counted twice in one.
    const COLUMNS: [(Limit, &str); 4] = [
        (Limit::ExactSet, "Certificates issued"),
        (Limit::RegisteredDomain, "New certificates"),
        (Limit::NewOrders, "New orders"),
        (Limit::FailedAuthorizations, "Failed validations"),
    ];
    let columns: Vec<(Limit, &str)> = COLUMNS
        .into_iter()
        .filter(|(l, _)| {
            budgets
                .iter()
                .any(|b| b.limit == *l && !b.spent_by.is_empty())
        })
        .collect();
    let mut totals: std::collections::BTreeMap<&str, Vec<u32>> = std::collections::BTreeMap::new();
    for b in budgets {
        let Some(col) = columns.iter().position(|(l, _)| *l == b.limit) else {
            continue;
        };
        for s in &b.spent_by {
            totals
                .entry(&s.namespace)
                .or_insert_with(|| vec![0; columns.len()])[col] += s.count;
        }
    }
    if totals.is_empty() {
        return None;
    }
    let mut rows: Vec<(&str, Vec<u32>)> = totals.into_iter().collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let head = columns
        .iter()
        .map(|(_, title)| view! { <th scope="col">{*title}</th> })
        .collect_view();
    let rows = rows
        .into_iter()
        .map(|(namespace, counts)| {
            let cells = counts
                .iter()
                .zip(&columns)
                .map(|(n, (_, title))| view! { <td data-label=*title>{*n}</td> })
                .collect_view();
            view! { <tr data-testid="spender-row"><th scope="row">{namespace.to_string()}</th>{cells}</tr> }
        })
        .collect_view();
    Some(view! {
        <h2>"Spent most"</h2>
        <p>"What each namespace spent of the budgets above, by kind: certificates issued (each once, in its exact set), new certificates (each once per registered domain it is new for), new orders, failed validations — within the limits' windows. The most certificates first."</p>
        <table data-testid="spenders">
            <caption class="visually-hidden">"Spends per namespace"</caption>
            <thead><tr><th scope="col">"Namespace"</th>{head}</tr></thead>
            <tbody>{rows}</tbody>
        </table>
    })
}

/// The next 7 days in one line, linked to the forecast: which registered domains run out,
/// and in which clusters.
fn forecast_notice(
    query: &crate::model::read::views::BudgetQuery,
    forecast: &[crate::model::budget::DomainForecast],
    now: chrono::DateTime<chrono::Utc>,
) -> impl IntoView {
    let href = {
        let q = crate::pages::forecast::budget_query_string(query);
        if q.is_empty() {
            "/rate-limits/forecast".to_string()
        } else {
            format!("/rate-limits/forecast?{q}")
        }
    };
    let (short, clusters) = crate::model::budget::running_out(forecast);
    let link = view! { <a href=href data-testid="forecast-link">"7-day forecast"</a> };
    if short.is_empty() {
        let due: usize = forecast.iter().map(|f| f.due.len()).sum();
        view! {
            <p class="notice ok" data-testid="forecast-notice">
                {link}": "{format!("the {due} certificate issuance{} due in the next 7 days fit{} in the budgets.", if due == 1 { "" } else { "s" }, if due == 1 { "s" } else { "" })}
            </p>
        }
        .into_any()
    } else {
        let domains: Vec<&str> = short.iter().map(|f| f.domain.as_str()).collect();
        view! {
            <p class="notice critical" data-testid="forecast-notice">
                <strong>{super::forecast::refusal_headline(&short, now)}</strong>
                {format!(" for names under {} ({}), in {}. ", if short.len() == 1 { "1 registered domain".to_string() } else { format!("{} registered domains", short.len()) }, domains.join(", "), clusters.join(", "))}
                {link}
            </p>
        }
        .into_any()
    }
}

pub fn page(
    shell: &Shell,
    query: &crate::model::read::views::BudgetQuery,
    budgets: Vec<Budget>,
    forecast: &[crate::model::budget::DomainForecast],
) -> String {
    let now = shell.now;
    let rows = budgets
        .iter()
        .map(|b| {
            let limit = b.limit.description();
            let server = match crate::model::issuer::AcmeServer::classify(Some(&b.server)) {
                crate::model::issuer::AcmeServer::LetsEncryptStaging => "staging",
                crate::model::issuer::AcmeServer::LetsEncryptProduction => "production",
                _ => "another CA",
            };
            // A time that has passed means a token is back: say so rather than "8 min ago".
            let frees = b.frees_at.map(|at| {
                if at <= now {
                    view! { <span>"available now"</span> }.into_any()
                } else if b.frees_at_from_ca {
                    // The CA refused an order and named the time itself.
                    view! { <Time at=at now=now/>" "<span class="term" title="The time Let's Encrypt named when it refused an order">"(Let's Encrypt's retry time)"</span> }.into_any()
                } else {
                    view! { <Time at=at now=now/> }.into_any()
                }
            });
            // The names lead to the certificates that carry them; the latest spend to its
            // object (one the viewer may see: see Budget::for_viewer).
            let key = match b.limit {
                crate::model::budget::Limit::NewOrders => {
                    view! { <span>{b.key.clone()}</span> }.into_any()
                }
                // The key narrows this page to its budget (who spent it); its certificates
                // are one more link.
                _ => {
                    let first = b.key.split(',').next().unwrap_or(&b.key).trim().to_string();
                    let narrow = format!("/rate-limits?key={}", encode(&b.key));
                    let certificates = format!("/certificates?q={}", encode(&first));
                    view! { <a href=narrow data-testid="budget-key">{b.key.clone()}</a>" "<a class="term" href=certificates>"(certificates)"</a> }.into_any()
                }
            };
            let latest = b.latest.as_ref().map(|o| {
                // An object with a page of its own opens it; a CertificateRequest (named
                // `<certificate>-<revision>` by cert-manager) lists its namespace's
                // Certificates by that name — a list answers even when the request is gone.
                let href = match crate::components::detail_pages(&o.kind) {
                    Some(base) => format!(
                        "/{base}/{}/{}/{}",
                        encode(&o.cluster),
                        encode(&o.namespace),
                        encode(&o.name)
                    ),
                    None => {
                        let certificate = o
                            .name
                            .rsplit_once('-')
                            .filter(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                            .map_or(o.name.as_str(), |(c, _)| c);
                        format!(
                            "/certificates?{}",
                            crate::components::query_string(&[
                                ("cluster", Some(&o.cluster)),
                                ("namespace", Some(&o.namespace)),
                                ("q", Some(certificate)),
                            ])
                        )
                    }
                };
                view! { <a href=href>{format!("{} · {} · {}", o.name, o.namespace, o.cluster)}</a> }
            });
            view! {
                <tr data-testid="budget-row">
                    <td data-label="Server">{server}</td>
                    <td data-label="Limit">{limit}</td>
                    <th scope="row">{key}</th>
                    <td data-label="Used">{format!("{} / {}", b.used, b.capacity)}{elsewhere(b.elsewhere)}</td>
                    <td data-label="Budget">{bar(b)}</td>
                    <td data-label="Next frees up">{frees}</td>
                    <td data-label="Spent from"><ul class="plain">{places(b)}</ul></td>
                    <td data-label="Latest spent by">{latest}</td>
                </tr>
            }
        })
        .collect_view();
    let filtered = (query.cluster.is_some() || query.namespace.is_some() || query.key.is_some()).then(|| {
        let what = [query.key.as_deref(), query.cluster.as_deref(), query.namespace.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" / ");
        view! { <p>"Budgets spent from "<strong>{what}</strong>" — "<a href="/rate-limits">"all budgets"</a></p> }
    });
    let ahead = forecast_notice(query, forecast, now);
    let empty = budgets.is_empty().then(
        || view! { <p class="empty">"No certificate has been issued or failed within the limits' windows."</p> },
    );
    document(
        &Shell {
            title: "Let's Encrypt limits".into(),
            active: Nav::RateLimits,
            ..shell.clone()
        },
        view! {
            <h1>"Let's Encrypt limits"</h1>
            <p>"Computed from the issuance history, as Let's Encrypt counts: 50 new certificates per registered domain and 5 per exact set of names per 7 days, 300 new orders per ACME account per 3 hours (renewals of a set are exempt from both of these), 5 failed authorizations per name per account per hour, and the names Let's Encrypt paused for an account. A limit Let's Encrypt named itself when it refused an order holds until the time it gave."</p>
            {filtered}
            {ahead}
            {empty}
            <table>
                <caption class="visually-hidden">"Budgets"</caption>
                <thead><tr>
                    <th scope="col">"Server"</th><th scope="col">"Limit"</th><th scope="col">"For"</th>
                    <th scope="col">"Used"</th><th scope="col">"Budget"</th><th scope="col">"Next frees up"</th><th scope="col">"Spent by (namespace, count)"</th><th scope="col">"Latest spent by"</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
            {spenders(&budgets)}
            {crate::components::json_link("/api/v1/rate-limits", &crate::pages::forecast::budget_query_string(query))}
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::budget::{Limit, Spent};

    fn budget(limit: Limit, key: &str, spent: &[(&str, u32)]) -> Budget {
        Budget {
            server: "https://acme-v02.api.letsencrypt.org/directory".into(),
            limit,
            key: key.into(),
            account: None,
            used: spent.iter().map(|(_, n)| n).sum(),
            capacity: 50,
            ratio: 0.1,
            frees_at: None,
            latest: None,
            counted: Vec::new(),
            elsewhere: 0,
            clusters: Vec::new(),
            namespaces: Vec::new(),
            spent_by: spent
                .iter()
                .map(|(ns, n)| Spent {
                    namespace: ns.to_string(),
                    count: *n,
                })
                .collect(),
            refused: None,
            frees_at_from_ca: false,
        }
    }

    /// A certificate is counted once per kind, not once per budget it touched: three
    /// issuances of `shop` read 3 certificates (its exact set) and 1 new certificate (the
    /// first, in its registered domain), never 4.
    #[test]
    fn spenders_count_each_kind_once_and_put_the_most_certificates_first() {
        let budgets = [
            budget(Limit::ExactSet, "shop.acme.example", &[("zrh/shop", 3)]),
            budget(Limit::ExactSet, "blog.acme.example", &[("zrh/blog", 1)]),
            budget(
                Limit::RegisteredDomain,
                "acme.example",
                &[("zrh/shop", 1), ("zrh/blog", 1)],
            ),
        ];
        let html = spenders(&budgets).unwrap().to_html();
        assert!(html.contains("Certificates issued"), "{html}");
        assert!(html.contains("New certificates"), "{html}");
        assert!(
            !html.contains("New orders"),
            "no column without spends: {html}"
        );
        let shop = html.find("zrh/shop").unwrap();
        let blog = html.find("zrh/blog").unwrap();
        assert!(shop < blog, "the most certificates first: {html}");
        let row = &html[shop..blog];
        assert!(
            row.contains(">3<") && row.contains(">1<") && !row.contains(">4<"),
            "{row}"
        );
    }
}

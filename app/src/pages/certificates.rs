//! `/certificates`: every visible Certificate with readiness, expiry and issuer.

use leptos::prelude::*;

use crate::actions::ActionKind;
use crate::components::charts::expiry_chart;
use crate::components::encode;
use crate::components::findings::SeverityBadge;
use crate::components::{document, sort_header, Nav, Pager, Shell, Time};
use crate::model::choice::Choice;
use crate::model::read::sort::CertificateSort;
use crate::model::read::views::{CertificateQuery, CertificateRow, CertificateStatus};
use crate::model::Page;

/// Readiness in words, judged with the expiry: "expired" once `notAfter` has passed (Ready
/// may still say True until cert-manager looks again), else the Ready condition: "ready",
/// "not ready: <reason>" or "unknown".
pub(crate) fn ready_text(
    c: &crate::model::certificate::CertificateView,
    now: chrono::DateTime<chrono::Utc>,
) -> String {
    if c.not_after.is_some_and(|t| t <= now) {
        return "✗ expired".into();
    }
    match c.ready.as_ref() {
        Some(r) if &*r.status == "True" => "✓ ready".into(),
        Some(r) => format!(
            "✗ not ready{}",
            r.reason
                .as_deref()
                .map(|x| format!(
                    ": {}",
                    crate::model::certificate::plain_reason(x).unwrap_or(x)
                ))
                .unwrap_or_default()
        ),
        None => "unknown".into(),
    }
}

/// [`ready_text`] with cert-manager's own reason in small type, for those who search for it.
pub(crate) fn ready_cell(
    c: &crate::model::certificate::CertificateView,
    now: chrono::DateTime<chrono::Utc>,
) -> impl IntoView {
    let term = c
        .ready
        .as_ref()
        .filter(|r| &*r.status != "True" && c.not_after.is_none_or(|t| t > now))
        .and_then(|r| r.reason.as_deref())
        .filter(|x| crate::model::certificate::plain_reason(x).is_some())
        .map(|x| view! { " "<small class="term">{x.to_string()}</small> });
    view! { {ready_text(c, now)}{term} }
}

fn filters(q: &CertificateQuery) -> String {
    crate::components::query_string(&[
        ("cluster", q.cluster.as_deref()),
        ("namespace", q.namespace.as_deref()),
        ("q", q.q.as_deref()),
        ("status", q.status.map(|s| s.label())),
        ("expires", q.expires.map(|s| s.label())),
        ("served", q.served.map(|s| s.label())),
    ])
}

fn query_string(q: &CertificateQuery) -> String {
    let sort = q.sort.map(|s| s.param());
    [
        filters(q),
        crate::components::query_string(&[("sort", sort.as_deref())]),
    ]
    .into_iter()
    .filter(|s| !s.is_empty())
    .collect::<Vec<_>>()
    .join("&")
}

/// `expiries` are the `notAfter` and health of every matching Certificate (all pages), for
/// the chart.
pub fn page(
    shell: &Shell,
    query: &CertificateQuery,
    clusters: Vec<String>,
    expiries: Vec<(
        Option<chrono::DateTime<chrono::Utc>>,
        Option<crate::model::Severity>,
    )>,
    certificates: Page<CertificateRow>,
) -> String {
    let now = shell.now;
    let status_options = CertificateStatus::ALL
        .iter()
        .map(|s| {
            let (s, selected) = (s.label(), query.status == Some(*s));
            view! { <option value=s selected=selected>{s}</option> }
        })
        .collect_view();
    let rows = certificates
        .items
        .iter()
        .map(|row| {
            let c = &row.certificate;
            let href = format!("/certificates/{}/{}/{}", encode(&c.cluster), encode(&c.namespace), encode(&c.name));
            let ready = ready_cell(c, now);
            let expires = c.not_after.map(|at| view! { <Time at=at now=now/> });
            let health = match row.severity {
                Some(s) => view! { <SeverityBadge severity=s/> }.into_any(),
                None => view! { <span class="badge ok"><span aria-hidden="true">"✓ "</span>"ok"</span> }.into_any(),
            };
            view! {
                <tr data-testid="certificate-row" data-severity=row.severity.map(|s| s.label()).unwrap_or("none")>
                    <td data-label="Cluster" class="cluster">{c.cluster.clone()}</td>
                    <td data-label="Namespace">{c.namespace.clone()}</td>
                    <th scope="row"><a href=href>{c.name.clone()}</a></th>
                    <td data-label="DNS names">{c.dns_names.join(", ")}</td>
                    <td data-label="Ready">{ready}</td>
                    <td data-label="Expires">{expires}</td>
                    <td data-label="Issuer">{format!("{} ({})", c.issuer.as_ref().map(|i| i.name.clone()).unwrap_or_default(), row.server_label())}</td>
                    <td data-label="Health">{health}</td>
                </tr>
            }
        })
        .collect_view();
    let empty = certificates
        .items
        .is_empty()
        .then(|| view! { <p class="empty">"No Certificate matches these filters. " <a href="/certificates">"Show every Certificate"</a></p> });
    let pager = view! { <Pager page=certificates.page pages=certificates.pages() total=certificates.total base_query=query_string(query)/> };
    let base = filters(query);
    // Health first, before the filters.
    let health: Vec<Option<crate::model::Severity>> = expiries.iter().map(|(_, h)| *h).collect();
    let health_line = crate::components::health_line("certificates", &health);
    let bulk = shell.actions.then(|| {
        crate::pages::action::bulk_form(
            &shell.csrf,
            ActionKind::BulkRenew,
            &crate::actions::BulkScope {
                list: crate::actions::BulkList::Certificates,
                filters: base.clone(),
            },
            crate::pages::action::FormMode::Preview,
            "Preview: renew every Certificate listed here that is not ready or failing".into(),
        )
    });
    let header = |label, key| sort_header(label, key, query.sort, &base);
    // The filters but the expiry window: the chart's bars and the way back keep them.
    let other_filters = filters(&CertificateQuery {
        expires: None,
        ..query.clone()
    });
    // The chosen bar of the expiry chart, and the way back to every expiry.
    let window = query.expires.map(|w| {
        let rest = &other_filters;
        let href = if rest.is_empty() { "/certificates".to_string() } else { format!("/certificates?{rest}") };
        view! { <p class="notice info" data-testid="expiry-filter">"Expiry: "<strong>{w.words()}</strong>" — "<a href=href>"any time"</a></p> }
    });
    document(
        &Shell {
            title: "Certificates".into(),
            active: Nav::Certificates,
            ..shell.clone()
        },
        view! {
            <h1>"Certificates"</h1>
            {health_line}
            <form class="filters" method="get" action="/certificates">
                {crate::components::findings::place_filters(&clusters, query.cluster.as_deref(), query.namespace.as_deref())}
                <label>"Name or host " <input type="search" name="q" value=query.q.clone().unwrap_or_default()/></label>
                <label>"Status "
                    <select name="status"><option value="">"Any"</option>{status_options}</select>
                </label>
                <label>"What hosts serve "
                    <select name="served">
                        <option value="">"any (issued or not)"</option>
                        <option value="other" selected=query.served.is_some()>"not what was issued (the probe saw another, expired or untrusted certificate)"</option>
                    </select>
                </label>
                {query.expires.map(|w| view! { <input type="hidden" name="expires" value=w.label()/> })}
                <button type="submit">"Filter"</button>
            </form>
            {window}
            {bulk}
            <h2>"Expiry timeline"</h2>
            {expiry_chart(&expiries, now, &other_filters, query.expires)}
            {empty}
            <table>
                <caption class="visually-hidden">"Certificates"</caption>
                <thead>
                    <tr>
                        {header("Cluster", CertificateSort::Cluster)}{header("Namespace", CertificateSort::Namespace)}{header("Name", CertificateSort::Name)}
                        <th scope="col">"DNS names"</th><th scope="col">"Ready"</th>{header("Expires", CertificateSort::Expiry)}
                        <th scope="col">"Issuer"</th>{header("Health", CertificateSort::Health)}
                    </tr>
                </thead>
                <tbody>{rows}</tbody>
            </table>
            {pager}
            {crate::components::json_link("/api/v1/certificates", &query_string(query))}
        },
    )
}

trait ServerLabel {
    fn server_label(&self) -> &'static str;
}

impl ServerLabel for CertificateRow {
    fn server_label(&self) -> &'static str {
        self.server.label()
    }
}

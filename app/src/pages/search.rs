//! `/search?q=`: one box for the support engineer's first question — "where is
//! `shop.example.com`?" — across every visible cluster: Ingresses by host or name,
//! Certificates by DNS name or name.

use leptos::prelude::*;

use crate::components::encode;
use crate::components::findings::SeverityBadge;
use crate::components::{document, query_string, Shell};
use crate::model::read::views::{CertificateRow, IngressRow};
use crate::model::Page;
use crate::pages::ingresses::{annotation_text, detail_href};

/// How many results of each kind the page lists before linking to the full list.
pub const RESULTS_PER_KIND: usize = 50;

fn health(worst: Option<crate::model::Severity>) -> impl IntoView {
    match worst {
        Some(s) => view! { <SeverityBadge severity=s/> }.into_any(),
        None => view! { <span class="badge ok"><span aria-hidden="true">"✓ "</span>"ok"</span> }
            .into_any(),
    }
}

pub fn page(
    shell: &Shell,
    q: Option<String>,
    ingresses: Page<IngressRow>,
    certificates: Page<CertificateRow>,
    issuers: Page<crate::model::read::issuer::IssuerRow>,
    gateways: Page<crate::model::read::gateways::ListenerRow>,
) -> String {
    let Some(text) = q else {
        return document(
            &Shell {
                title: "Search".into(),
                ..shell.clone()
            },
            view! {
                <h1>"Search"</h1>
                <p>"Type a host (" <code>"shop.example.com"</code> "), part of one, or an object name in the search box above. Every cluster you can see is searched."</p>
            },
        );
    };
    let more = |n: usize, shown: usize, list: &str| {
        (n > shown).then(|| {
            let href = format!("/{list}?{}", query_string(&[("q", Some(&text))]));
            view! { <p><a href=href>{format!("All {n} matches →")}</a></p> }
        })
    };
    let more_ingresses = more(ingresses.total, ingresses.items.len(), "ingresses");
    let more_certificates = more(certificates.total, certificates.items.len(), "certificates");
    let ingress_rows = ingresses
        .items
        .iter()
        .map(|row| {
            let i = &row.ingress;
            view! {
                <tr data-testid="search-ingress">
                    <td data-label="Cluster" class="cluster">{i.cluster.clone()}</td>
                    <td data-label="Namespace">{i.namespace.clone()}</td>
                    <th scope="row"><a href=detail_href(i)>{i.name.clone()}</a></th>
                    <td data-label="Hosts">{i.hosts.join(", ")}</td>
                    <td data-label="Edit-in-place">{annotation_text(&row.annotation)}</td>
                    <td data-label="Health">{health(row.severity)}</td>
                </tr>
            }
        })
        .collect_view();
    let certificate_rows = certificates
        .items
        .iter()
        .map(|row| {
            let c = &row.certificate;
            let href = format!(
                "/certificates/{}/{}/{}",
                encode(&c.cluster),
                encode(&c.namespace),
                encode(&c.name)
            );
            let ready = crate::pages::certificates::ready_cell(c, shell.now);
            view! {
                <tr data-testid="search-certificate">
                    <td data-label="Cluster" class="cluster">{c.cluster.clone()}</td>
                    <td data-label="Namespace">{c.namespace.clone()}</td>
                    <th scope="row"><a href=href>{c.name.clone()}</a></th>
                    <td data-label="DNS names">{c.dns_names.join(", ")}</td>
                    <td data-label="Ready">{ready}</td>
                    <td data-label="Health">{health(row.severity)}</td>
                </tr>
            }
        })
        .collect_view();
    let mut summary = format!(
        "{} Ingresses and {} Certificates match \u{201c}{}\u{201d}.",
        ingresses.total, certificates.total, text
    );
    if issuers.total > 0 {
        summary.push_str(&format!(
            " {} issuer{} too.",
            issuers.total,
            if issuers.total == 1 { "" } else { "s" }
        ));
    }
    let issuer_list = (issuers.total > 0).then(|| {
        let items = issuers
            .items
            .iter()
            .map(|r| {
                let ns = if r.namespace.is_empty() {
                    "_"
                } else {
                    r.namespace.as_str()
                };
                let href = format!(
                    "/issuers/{}/{}/{}",
                    encode(&r.cluster),
                    encode(ns),
                    encode(&r.name)
                );
                view! {
                    <li data-testid="search-issuer">
                        <a href=href>{format!("{} {}", r.kind, r.name)}</a>
                        {format!(" — {} · {}, {}", r.cluster, r.readiness, r.server_label)}
                    </li>
                }
            })
            .collect_view();
        let all = format!("/issuers?{}", query_string(&[("q", Some(&text))]));
        view! { <h2>"Issuers"</h2><ul>{items}</ul><p><a href=all>"Every matching issuer →"</a></p> }
    });
    if gateways.total > 0 {
        summary.push_str(&format!(
            " {} Gateway listener{} too.",
            gateways.total,
            if gateways.total == 1 { "" } else { "s" }
        ));
    }
    // Hosts served by Gateways: each listener, leading to its Gateway's listeners.
    let gateway_list = (gateways.total > 0).then(|| {
        let items = gateways
            .items
            .iter()
            .map(|r| {
                let href = crate::model::links::object_path("Gateway", &r.cluster, &r.namespace, &r.gateway).unwrap_or_default();
                view! {
                    <li data-testid="search-gateway">
                        <a href=href>{format!("Gateway {} · {}", r.gateway, r.hostname.as_deref().unwrap_or("every host"))}</a>
                        {format!(" — {} · {}, listener {}", r.cluster, r.namespace, r.listener)}
                    </li>
                }
            })
            .collect_view();
        let all = format!("/gateways?{}", query_string(&[("q", Some(&text))]));
        view! { <h2>"Gateways"</h2><ul>{items}</ul><p><a href=all>"Every matching Gateway listener →"</a></p> }
    });
    let challenge_href = format!("/challenges?{}", query_string(&[("domain", Some(&text))]));
    document(
        &Shell {
            title: format!("Search: {text}"),
            search: text.clone(),
            ..shell.clone()
        },
        view! {
            <h1>"Search"</h1>
            <p class="summary" data-testid="search-summary">{summary}</p>
            <h2>"Ingresses"</h2>
            <table>
                <caption class="visually-hidden">"Matching Ingresses"</caption>
                <thead><tr><th scope="col">"Cluster"</th><th scope="col">"Namespace"</th><th scope="col">"Name"</th><th scope="col">"Hosts"</th><th scope="col">"Edit-in-place"</th><th scope="col">"Health"</th></tr></thead>
                <tbody>{ingress_rows}</tbody>
            </table>
            {more_ingresses}
            <h2>"Certificates"</h2>
            <table>
                <caption class="visually-hidden">"Matching Certificates"</caption>
                <thead><tr><th scope="col">"Cluster"</th><th scope="col">"Namespace"</th><th scope="col">"Name"</th><th scope="col">"DNS names"</th><th scope="col">"Ready"</th><th scope="col">"Health"</th></tr></thead>
                <tbody>{certificate_rows}</tbody>
            </table>
            {more_certificates}
            {issuer_list}
            {gateway_list}
            <p><a href=challenge_href>"Challenge history for this domain →"</a></p>
        },
    )
}

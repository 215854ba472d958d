//! `/gateways`: the TLS listeners of the Gateways the reader sees — hostname, the Secret it
//! serves and the Certificate writing it, what the Gateway's controller says of it — the
//! most severe first. `/gateways/{cluster}/{namespace}/{name}`: one Gateway, what is wrong
//! with it and what to do first, then each listener followed to its certificate.

use leptos::prelude::*;

use crate::components::{document, json_link, query_string, Nav, Shell};
use crate::model::read::gateways::{GatewayDetail, GatewayQuery, ListenerDetail, ListenerRow};
use crate::model::read::problems::Problem;
use crate::model::{ClusterView, Page};

/// The filters as a query string (without `page`), for the pager and the exports.
fn filters(q: &GatewayQuery) -> String {
    query_string(&[
        ("cluster", q.cluster.as_deref()),
        ("namespace", q.namespace.as_deref()),
        ("q", q.q.as_deref()),
    ])
}

fn health(severity: Option<crate::model::Severity>) -> AnyView {
    match severity {
        Some(s) => view! { <crate::components::findings::SeverityBadge severity=s/> }.into_any(),
        None => {
            view! { <span class="badge ok"><span aria-hidden="true">"✓ "</span>"healthy"</span> }
                .into_any()
        }
    }
}

/// What the controller says of the listener, in a few words.
fn controller_says(r: &ListenerRow) -> String {
    match (r.accepted, r.resolved_refs, r.programmed) {
        (None, None, None) => "no status yet".into(),
        (Some("True"), Some("True"), Some("True")) => "programmed".into(),
        _ => {
            let part = |k: &str, v: Option<&str>| v.map(|v| format!("{k} {v}"));
            let said: Vec<String> = [
                part("Accepted", r.accepted),
                part("ResolvedRefs", r.resolved_refs),
                part("Programmed", r.programmed),
            ]
            .into_iter()
            .flatten()
            .collect();
            match &r.reason {
                Some(reason) => format!("{} ({reason})", said.join(", ")),
                None => said.join(", "),
            }
        }
    }
}

pub fn page(
    shell: &Shell,
    q: &GatewayQuery,
    rows: Page<ListenerRow>,
    clusters: &[ClusterView],
) -> String {
    let table_rows = rows
        .items
        .iter()
        .map(|r| {
            let certificate = match (&r.certificate, r.certificate_ready) {
                (Some(c), ready) => {
                    let href = crate::model::links::object_path("Certificate", &r.cluster, &r.namespace, c).unwrap_or_default();
                    view! { <a href=href>{c.to_string()}</a>{if ready == Some(true) { " (ready)" } else { " (not ready)" }} }.into_any()
                }
                (None, _) => view! { <span class="muted">"none writes it"</span> }.into_any(),
            };
            view! {
                <tr data-testid="gateway-row" data-name=r.gateway.to_string()>
                    <td data-label="Health">{health(r.severity)}</td>
                    <th scope="row" data-label="Gateway"><a href=crate::model::links::object_path("Gateway", &r.cluster, &r.namespace, &r.gateway).unwrap_or_default()>{format!("{} · {}/{}", r.cluster, r.namespace, r.gateway)}</a></th>
                    <td data-label="Listener">{format!("{} · {}", r.listener, r.protocol)}</td>
                    <td data-label="Host">{r.hostname.as_deref().unwrap_or("every host").to_string()}</td>
                    <td data-label="Secret">{r.secrets.join(", ")}</td>
                    <td data-label="Certificate">{certificate}</td>
                    <td data-label="Its controller says">{controller_says(r)}</td>
                </tr>
            }
        })
        .collect_view();
    let empty = rows.items.is_empty().then(|| {
        view! { <p class="empty">"No Gateway with a TLS listener here (Lookout reads Gateway API Gateways where the CRD is installed). " <a href="/gateways">"Show every Gateway"</a></p> }
    });
    let names: Vec<String> = clusters.iter().map(|c| c.name.clone()).collect();
    let base = filters(q);
    let pager = view! { <crate::components::Pager page=rows.page pages=rows.pages() total=rows.total base_query=base.clone()/> };
    document(
        &Shell {
            title: "Gateways".into(),
            active: Nav::Gateways,
            ..shell.clone()
        },
        view! {
            <h1>"Gateways"</h1>
            <p>"The TLS listeners of Gateway API Gateways: the Secret each serves, the Certificate that writes it, and what the Gateway's controller says — a listener it did not accept serves nothing."</p>
            <p data-testid="gateways-summary">{crate::model::text::count(rows.total, "listener", "listeners")}</p>
            <form class="filters" method="get" action="/gateways">
                {crate::components::findings::place_filters(&names, q.cluster.as_deref(), q.namespace.as_deref())}
                <label>"Gateway or host " <input type="search" name="q" value=q.q.clone().unwrap_or_default()/></label>
                <button type="submit">"Filter"</button>
            </form>
            {empty}
            <table class="gateways">
                <caption class="visually-hidden">"Gateway listeners, the most severe first"</caption>
                <thead><tr><th scope="col">"Health"</th><th scope="col">"Gateway"</th><th scope="col">"Listener"</th><th scope="col">"Host"</th><th scope="col">"Secret"</th><th scope="col">"Certificate"</th><th scope="col">"Its controller says"</th></tr></thead>
                <tbody>{table_rows}</tbody>
            </table>
            {pager}
            {json_link("/api/v1/gateways", &base)}
        },
    )
}

/// What the controller says of a listener on its page: each condition that is not True in
/// its words, or that all are.
fn listener_says(l: &ListenerDetail) -> AnyView {
    if l.conditions.is_empty() {
        return view! { <span class="muted">"no status yet"</span> }.into_any();
    }
    let wrong: Vec<String> = l
        .conditions
        .iter()
        .filter(|c| !c.is_true())
        .map(|c| {
            format!(
                "{} {} ({}): {}",
                c.kind,
                c.status,
                c.reason.as_deref().unwrap_or(""),
                c.message.as_deref().unwrap_or("")
            )
        })
        .collect();
    if wrong.is_empty() {
        let kinds: Vec<&str> = l.conditions.iter().map(|c| &*c.kind).collect();
        return view! { <span>{format!("{} — all True", kinds.join(", "))}</span> }.into_any();
    }
    let items = wrong
        .into_iter()
        .map(|w| view! { <li>{w}</li> })
        .collect_view();
    view! { <ul class="plain">{items}</ul> }.into_any()
}

/// The certificates writing a listener's Secret, each with whether it names the hostname.
fn listener_certificates(cluster: &str, l: &ListenerDetail) -> AnyView {
    if l.certificates.is_empty() {
        return view! { <span class="muted">"no Certificate you can see writes it"</span> }
            .into_any();
    }
    l.certificates
        .iter()
        .map(|c| {
            let href = crate::model::links::object_path("Certificate", cluster, &c.namespace, &c.name)
                .unwrap_or_default();
            let state = if c.ready { "ready" } else { "not ready" };
            let names = if c.covers_hostname {
                view! { <span>"names it"</span> }.into_any()
            } else {
                view! { <strong data-testid="not-covered">{format!("does not name it (names {})", c.dns_names.join(", "))}</strong> }.into_any()
            };
            view! { <p><a href=href>{c.name.to_string()}</a>{format!(" ({state}) — ")}{names}</p> }
        })
        .collect_view()
        .into_any()
}

/// One Gateway's page.
pub fn detail(shell: &Shell, d: GatewayDetail, problems: Vec<Problem>) -> String {
    let now = shell.now;
    let worst = problems.first().map(|p| p.urgency.severity);
    let why =
        crate::components::why::why_box(&problems, &[], None, now, shell.support.as_deref(), &[]);
    let healthy = (problems.is_empty() && d.findings.is_empty()).then(|| {
        view! { <p class="notice ok" data-testid="healthy"><strong>"✓ Healthy."</strong>" Every TLS listener is accepted and served by a certificate naming its hostname."</p> }
    });
    let cluster = d.cluster.to_string();
    let listeners = d
        .listeners
        .iter()
        .map(|l| {
            view! {
                <tr data-testid="listener-row" data-name=l.name.to_string()>
                    <th scope="row" data-label="Listener">{format!("{} · {} {}", l.name, l.protocol, l.port)}</th>
                    <td data-label="Host">{l.hostname.as_deref().unwrap_or("every host").to_string()}</td>
                    <td data-label="Secret">{l.secrets.join(", ")}</td>
                    <td data-label="Certificate">{listener_certificates(&cluster, l)}</td>
                    <td data-label="Its controller says">{listener_says(l)}</td>
                </tr>
            }
        })
        .collect_view();
    let issuer = d.issuer.clone().unwrap_or_else(|| {
        "none — cert-manager issues nothing for it (no cert-manager.io/cluster-issuer or cert-manager.io/issuer annotation)".into()
    });
    let addresses = if d.addresses.is_empty() {
        "none yet".to_string()
    } else {
        d.addresses.join(", ")
    };
    let here = format!(
        "/api/v1{}",
        crate::model::links::object_path("Gateway", &d.cluster, &d.namespace, &d.name)
            .unwrap_or_default()
    );
    let findings_count = d.findings.len();
    let http = (!d.http_listeners.is_empty()).then(|| {
        let rows = d
            .http_listeners
            .iter()
            .map(|l| {
                let routes = if l.routes.is_empty() {
                    view! { <span class="muted">"none you can see"</span> }.into_any()
                } else {
                    l.routes
                        .iter()
                        .map(|r| {
                            let mut what = Vec::new();
                            if r.solver {
                                what.push("cert-manager's HTTP-01 solver".to_string());
                            }
                            if r.redirects {
                                what.push("redirects".to_string());
                            }
                            what.push(match r.accepted {
                                Some(true) => "accepted".to_string(),
                                Some(false) => "refused by its controller".to_string(),
                                None => "no status yet".to_string(),
                            });
                            let hosts = if r.hostnames.is_empty() { "every host".to_string() } else { r.hostnames.join(", ") };
                            view! { <p data-testid="attached-route">{format!("{}/{} — {hosts} — {}", r.namespace, r.name, what.join(", "))}</p> }
                        })
                        .collect_view()
                        .into_any()
                };
                view! {
                    <tr data-testid="http-listener-row" data-name=l.name.to_string()>
                        <th scope="row" data-label="Listener">{format!("{} · HTTP {}", l.name, l.port)}</th>
                        <td data-label="Host">{l.hostname.as_deref().unwrap_or("every host").to_string()}</td>
                        <td data-label="Admits routes from">{match l.admits { "All" => "every namespace", "Selector" => "namespaces its selector picks", _ => "its own namespace" }}</td>
                        <td data-label="Routes attached">{routes}</td>
                    </tr>
                }
            })
            .collect_view();
        view! {
            <section aria-labelledby="http-h">
                <h2 id="http-h">"Its plain-HTTP listeners (where HTTP-01 is answered)"</h2>
                <table class="gateways" data-testid="http-listeners">
                    <thead><tr><th scope="col">"Listener"</th><th scope="col">"Host"</th><th scope="col">"Admits routes from"</th><th scope="col">"Routes attached"</th></tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            </section>
        }
    });
    document(
        &Shell {
            title: crate::pages::page_title(worst, &d.name, &d.namespace, &d.cluster),
            active: Nav::Gateways,
            ..shell.clone()
        },
        view! {
            <p class="crumbs"><a href="/gateways">"Gateways"</a>" / " {d.cluster.to_string()}</p>
            <h1>"Gateway " {d.name.to_string()}</h1>
            {healthy}
            {why}
            <section aria-labelledby="listeners-h">
                <h2 id="listeners-h">"Its TLS listeners"</h2>
                <table class="gateways" data-testid="listeners">
                    <thead><tr><th scope="col">"Listener"</th><th scope="col">"Host"</th><th scope="col">"Secret"</th><th scope="col">"Certificate"</th><th scope="col">"Its controller says"</th></tr></thead>
                    <tbody>{listeners}</tbody>
                </table>
            </section>
            {http}
            <h2>"Details"</h2>
            <dl class="facts">
                <dt>"Cluster"</dt><dd>{d.cluster.to_string()}</dd>
                <dt>"Namespace"</dt><dd>{d.namespace.to_string()}</dd>
                <dt>"Class"</dt><dd>{d.class.to_string()}</dd>
                <dt>"Addresses"</dt><dd>{addresses}</dd>
                <dt>"Issuer"</dt><dd>{issuer}</dd>
            </dl>
            {crate::components::findings_fold(findings_count, crate::components::findings::findings_table(d.findings, now, true))}
            {crate::components::fold("Events", crate::pages::ingress_detail::events_table(d.events, now))}
            {json_link(&here, "")}
        },
    )
}

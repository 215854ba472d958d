//! `/issuers/{cluster}/{namespace or _}/{name}`: one issuer — ready or not in words, the ACME
//! server it talks to, how it solves challenges, and the Certificates that use it, with
//! their readiness. "Open the issuer" on the board and the chain pages opens it.

use leptos::prelude::*;

use crate::components::findings::findings_table;
use crate::components::{document, encode, Nav, Shell, Time};
use crate::model::read::issuer::IssuerDetail;

pub fn page(shell: &Shell, d: IssuerDetail) -> String {
    let now = shell.now;
    let (class, lead) = match (d.exists, d.readiness.as_str()) {
        (false, _) => (
            "notice critical",
            format!("{} {} does not exist, so nothing issues the certificates below. Create it, or correct the issuer name in their annotations or issuerRef.", d.kind, d.name),
        ),
        (true, "ready") => ("notice ok", format!("✓ {} {} is ready.", d.kind, d.name)),
        (true, "not ready") => (
            "notice critical",
            format!("✖ {} {} is not ready, so no certificate below can be issued or renewed.", d.kind, d.name),
        ),
        (true, other) => ("notice warning", format!("{} {}: {other}.", d.kind, d.name)),
    };
    // Ready, and yet refused: the account's limits are the CA's word on it.
    let reached: Vec<&crate::model::budget::Budget> =
        d.account.iter().filter(|b| b.used >= b.capacity).collect();
    let account_lead = (!reached.is_empty()).then(|| {
        let parts: Vec<String> = reached
            .iter()
            .map(|b| format!("{} — {} of {} used", b.limit.description(), b.used, b.capacity))
            .collect();
        let until = reached.iter().filter_map(|b| b.frees_at).min();
        let until = until.map(|at| view! { " One more is possible "<Time at=at now=now/>"." });
        view! {
            <p class="notice critical" data-testid="issuer-account-limit">
                <strong>"✖ Its ACME account is at a Let's Encrypt limit: "</strong>{parts.join("; ")}
                ". Let's Encrypt refuses what goes over it, however ready the issuer is."{until}
            </p>
        }
    });
    let account_rows = d
        .account
        .iter()
        .map(|b| {
            let frees = b.frees_at.map(|at| view! { <Time at=at now=now/> });
            view! {
                <tr data-testid="issuer-account">
                    <td data-label="Limit">{b.limit.description()}</td>
                    <th scope="row">{b.key.clone()}</th>
                    <td data-label="Used">{format!("{} of {}", b.used, b.capacity)}</td>
                    <td data-label="Next free">{frees}</td>
                </tr>
            }
        })
        .collect_view();
    let account = (!d.account.is_empty()).then(|| {
        view! {
            <h2>"Its ACME account's limits"</h2>
            <table>
                <caption class="visually-hidden">"The account's Let's Encrypt limits"</caption>
                <thead><tr><th scope="col">"Limit"</th><th scope="col">"For"</th><th scope="col">"Used"</th><th scope="col">"Next free"</th></tr></thead>
                <tbody>{account_rows}</tbody>
            </table>
        }
    });
    let reason = d.ready_reason.clone().map(|r| {
        let message = d
            .ready_message
            .clone()
            .map(|m| format!(": {m}"))
            .unwrap_or_default();
        view! { <p class="evidence" data-testid="issuer-reason">{format!("Ready condition: {r}{message}")}</p> }
    });
    let server = match &d.server_url {
        Some(url) => format!("{} ({url})", d.server_label),
        None => d.server_label.to_string(),
    };
    let solvers = (!d.solvers.is_empty()).then(|| {
        let items = d
            .solvers
            .iter()
            .map(|s| view! { <li>{s.clone()}</li> })
            .collect_view();
        view! { <dt>"Solvers"</dt><dd><ul class="plain">{items}</ul></dd> }
    });
    let rows = d
        .certificates
        .iter()
        .map(|c| {
            let href = format!(
                "/certificates/{}/{}/{}",
                encode(&d.cluster),
                encode(&c.namespace),
                encode(&c.name)
            );
            // Judged with the expiry, as the Certificates list does.
            let ready = match c.ready.as_deref() {
                _ if c.not_after.is_some_and(|t| t <= now) => "expired",
                Some("True") => "ready",
                Some(_) => "not ready",
                None => "unknown",
            };
            let expires = c.not_after.map(|at| view! { <Time at=at now=now/> });
            let health = match c.severity {
                Some(s) => view! { <crate::components::findings::SeverityBadge severity=s/> }.into_any(),
                None => view! { <span class="badge ok"><span aria-hidden="true">"✓ "</span>"healthy"</span> }.into_any(),
            };
            view! {
                <tr data-testid="issuer-certificate">
                    <td data-label="Health">{health}</td>
                    <td data-label="Certificate"><a href=href>{format!("{}/{}", c.namespace, c.name)}</a></td>
                    <td data-label="Hosts">{c.hosts.join(", ")}</td>
                    <td data-label="Ready">{ready}</td>
                    <td data-label="Expires">{expires}</td>
                </tr>
            }
        })
        .collect_view();
    let budgets = format!(
        "/rate-limits?{}",
        crate::components::query_string(&[("cluster", Some(&d.cluster))])
    );
    let count = d.certificates.len();
    let findings = d.findings.clone();
    let kind = d.kind;
    document(
        &Shell {
            title: format!("{kind} {} · {}", d.name, d.cluster),
            active: Nav::Issuers,
            ..shell.clone()
        },
        view! {
            <h1>{format!("{kind} {}", d.name)}</h1>
            <p class=class data-testid="issuer-readiness">{lead}</p>
            {account_lead}
            {reason}
            <dl class="facts">
                <dt>"Cluster"</dt><dd>{d.cluster.clone()}</dd>
                <dt>"Namespace"</dt><dd>{if d.namespace.is_empty() { "— (cluster-wide)".to_string() } else { d.namespace.clone() }}</dd>
                <dt>"ACME server"</dt><dd data-testid="issuer-server">{server}</dd>
                {solvers}
            </dl>
            <h2>{format!("Certificates that use it ({count})")}</h2>
            <table>
                <caption class="visually-hidden">"Certificates that use this issuer"</caption>
                <thead><tr><th scope="col">"Health"</th><th scope="col">"Certificate"</th><th scope="col">"Hosts"</th><th scope="col">"Ready"</th><th scope="col">"Expires"</th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
            {account}
            <p><a href=budgets>"Their Let's Encrypt limits in this cluster"</a></p>
            {crate::components::fold(format!("Findings about it and the Certificates that use it ({})", findings.len()), findings_table(findings, now, true))}
        },
    )
}

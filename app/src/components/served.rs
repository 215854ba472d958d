//! "What clients get": per probed address, the certificate served beside the one cert-manager
//! issued, whether clients trust it, and how the ACME path answered.

use chrono::{DateTime, Utc};
use leptos::prelude::*;

use crate::components::Time;
use crate::model::probe::{IssuedLeaf, Observation, Untrusted};

/// The table; a sentence when the probe has not seen the hosts: off, not yet, or — for a
/// Certificate no Ingress uses (`unpublished`) — nothing publishes them to be asked.
pub fn clients_get(
    observations: Vec<Observation>,
    issued: Option<IssuedLeaf>,
    unpublished: bool,
    now: DateTime<Utc>,
) -> impl IntoView {
    if observations.is_empty() {
        let why = if unpublished {
            "Not probed: no Ingress uses this certificate, and the probe asks only for the hosts that Ingresses and Gateways publish (or it is off for this cluster)."
        } else {
            "Not probed: the probe is off for this cluster, or has not reached these hosts yet."
        };
        return view! { <p class="empty">{why}</p> }.into_any();
    }
    let rows = observations
        .into_iter()
        .map(|o| {
            let address = match o.address {
                std::net::IpAddr::V6(a) => format!("[{a}]"),
                a => a.to_string(),
            };
            let family = o.family();
            let (served, verdict) = match (&o.tls, &o.tls_error) {
                (Some(t), _) => {
                    let same = issued.as_ref().map(|i| *i.sha256 == *t.leaf.sha256);
                    let verdict = if t.leaf.not_after <= now {
                        "expired".to_string()
                    } else if !t.leaf.covers(&o.host) {
                        "does not name the host".to_string()
                    } else if same == Some(false) {
                        "serves something else".to_string()
                    } else {
                        match &t.untrusted {
                            None => "trusted".to_string(),
                            Some(Untrusted::UnknownIssuer(_)) => "untrusted issuer".to_string(),
                            Some(_) => "not trusted".to_string(),
                        }
                    };
                    (
                        format!(
                            "serial {} · {} · until {}",
                            t.leaf.serial,
                            t.leaf.issuer,
                            t.leaf.not_after.format("%Y-%m-%d %H:%M UTC")
                        ),
                        verdict,
                    )
                }
                (None, Some(e)) => ("nothing".to_string(), e.describe()),
                (None, None) => ("nothing".to_string(), "not probed".to_string()),
            };
            let proxy = o
                .needs_proxy_header
                .then_some(" (only with a PROXY header)");
            let acme = match (&o.acme, &o.acme_error) {
                (Some(a), _) => match &a.location {
                    Some(l) => format!("{} → {l}", a.status),
                    None => a.status.to_string(),
                },
                (None, Some(e)) => e.describe(),
                (None, None) => "—".to_string(),
            };
            view! {
                <tr>
                    <td data-label="Host">{o.host.clone()}</td>
                    <td data-label="Address">{address}" "<small>{family}</small></td>
                    <td data-label="Served">{served}</td>
                    <td data-label="Verdict">{verdict}{proxy}</td>
                    <td data-label="ACME path">{acme}</td>
                    <td data-label="Since"><Time at=o.since now=now/></td>
                </tr>
            }
        })
        .collect_view();
    let issued = issued.map(|i| {
        format!(
            "Issued by cert-manager: serial {}, until {}.",
            i.serial,
            i.not_after.format("%Y-%m-%d %H:%M UTC")
        )
    });
    view! {
        <p>{issued}</p>
        <table class="list">
            <thead><tr><th>"Host"</th><th>"Address"</th><th>"Served"</th><th>"Verdict"</th><th>"ACME path"</th><th>"Since"</th></tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_probed_says_why_a_certificate_no_ingress_uses_has_no_answer() {
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let unused = clients_get(Vec::new(), None, true, now).to_html();
        assert!(
            unused.contains("no Ingress uses this certificate"),
            "{unused}"
        );
        let published = clients_get(Vec::new(), None, false, now).to_html();
        assert!(
            published.contains("has not reached these hosts yet")
                && !published.contains("no Ingress uses"),
            "{published}"
        );
    }
}

//! `/ingresses/{cluster}/{namespace}/{name}`: one Ingress.

use leptos::prelude::*;

use crate::components::{document, Nav, Shell, Time};
use crate::model::IngressView;

pub fn page(shell: &Shell, i: IngressView) -> String {
    let now = shell.now;
    let tls_rows = i
        .tls
        .iter()
        .map(|t| view! { <tr><td>{t.hosts.join(", ")}</td><td>{t.secret_name.clone().unwrap_or_else(|| "(none)".into())}</td></tr> })
        .collect_view();
    let created = i.created.map(|at| view! { <Time at=at now=now/> });
    let issuer = i
        .issuer
        .as_ref()
        .map(|r| format!("{} {}", r.kind, r.name))
        .unwrap_or_else(|| "none requested".into());
    let annotation = match &i.edit_in_place {
        Some(v) => format!("{v:?}"),
        None => "absent".into(),
    };
    document(
        &Shell {
            title: format!("Ingress {}/{}", i.namespace, i.name),
            active: Nav::Ingresses,
            ..shell.clone()
        },
        view! {
            <h1>"Ingress " {i.name.clone()}</h1>
            <dl class="facts">
                <dt>"Cluster"</dt><dd>{i.cluster.clone()}</dd>
                <dt>"Namespace"</dt><dd>{i.namespace.clone()}</dd>
                <dt>"Created"</dt><dd>{created}</dd>
                <dt>"Class"</dt><dd>{i.class.clone().unwrap_or_else(|| "(default)".into())}</dd>
                <dt>"Hosts"</dt><dd>{i.hosts.join(", ")}</dd>
                <dt>"Addresses"</dt><dd>{if i.addresses.is_empty() { "none yet".to_string() } else { i.addresses.join(", ") }}</dd>
                <dt>"Issuer"</dt><dd>{issuer}</dd>
                <dt><code>"acme.cert-manager.io/http01-edit-in-place"</code></dt><dd>{annotation}</dd>
            </dl>
            <h2>"TLS"</h2>
            <table>
                <thead><tr><th scope="col">"Hosts"</th><th scope="col">"Secret"</th></tr></thead>
                <tbody>{tls_rows}</tbody>
            </table>
        },
    )
}

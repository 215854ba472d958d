//! Findings as a table: severity by icon and word, the object, what is wrong, what to do.

use chrono::{DateTime, Utc};
use leptos::prelude::*;

use super::Time;
use crate::components::encode;
use crate::model::{Finding, Severity};

/// A severity as icon and word (never colour alone).
#[component]
pub(crate) fn SeverityBadge(severity: Severity) -> impl IntoView {
    let class = format!("badge {}", severity.label());
    view! { <span class=class><span aria-hidden="true">{severity.icon()}" "</span>{severity.label()}</span> }
}

/// The page of the object a finding is about, when Lookout has one.
pub(crate) fn object_href(f: &Finding) -> Option<String> {
    let base = match f.kind {
        crate::model::Subject::Cluster => return Some("/clusters".into()),
        crate::model::Subject::Object(kind) => super::detail_pages(kind.name())?,
    };
    Some(format!(
        "/{base}/{}/{}/{}",
        encode(&f.cluster),
        encode(&f.namespace),
        encode(&f.name)
    ))
}

/// Where to read about a finding: its object's page, else (an issuer, a request, an Order,
/// a Challenge) the board's problems where it is — the problem it is part of is there.
pub(crate) fn finding_href(f: &Finding) -> String {
    object_href(f).unwrap_or_else(|| {
        let namespace = (!f.namespace.is_empty()).then_some(&*f.namespace);
        format!(
            "/?{}",
            super::query_string(&[("cluster", Some(&*f.cluster)), ("namespace", namespace)])
        )
    })
}

/// A table of findings; `with_remediation` adds the explanation and the fix under each row.
pub(crate) fn findings_table(
    findings: Vec<Finding>,
    now: DateTime<Utc>,
    with_remediation: bool,
) -> impl IntoView {
    let rows = findings
        .into_iter()
        .map(|f| {
            let object_view = view! { <a href=finding_href(&f)>{object_text(&f)}</a> };
            let since = f.since.map(|at| view! { <Time at=at now=now/> });
            let detail = with_remediation.then(|| {
                view! {
                    <tr class="finding-detail">
                        <td colspan="5">
                            <p class="evidence" data-testid="finding-evidence">{crate::components::cited(&f.message)}</p>
                            <p class="remediation" data-testid="finding-remediation"><strong>"What to do: "</strong>{crate::components::cited(&f.remediation)}</p>
                            <p class="term">"Upstream: "{crate::components::rule_docs_link(f.rule)}</p>
                        </td>
                    </tr>
                }
            });
            view! {
                <tr data-testid="finding-row" data-rule=f.rule.id() data-object=format!("{}/{}/{}/{}", f.cluster, f.namespace, f.kind, f.name)>
                    <td data-label="Severity"><SeverityBadge severity=f.severity/></td>
                    <td data-label="Cluster" class="cluster">{f.cluster.clone()}</td>
                    <td data-label="Object">{object_view}</td>
                    <td data-label="Finding"><span class="title">{f.title.clone()}</span><br/><code class="rule">{f.rule.id()}</code></td>
                    <td data-label="Since">{since}</td>
                </tr>
                {detail}
            }
        })
        .collect_view();
    view! {
        <table class="findings">
            <caption class="visually-hidden">"Findings"</caption>
            <thead>
                <tr>
                    <th scope="col">"Severity"</th>
                    <th scope="col">"Cluster"</th>
                    <th scope="col">"Object"</th>
                    <th scope="col">"Finding"</th>
                    <th scope="col">"Since"</th>
                </tr>
            </thead>
            <tbody>{rows}</tbody>
        </table>
    }
}

/// An `<option>` of a filter's `<select>`.
pub(crate) fn option(value: &str, label: &str, selected: bool) -> impl IntoView {
    view! { <option value=value.to_string() selected=selected>{label.to_string()}</option> }
}

/// The options of a cluster filter, the chosen one selected.
pub(crate) fn cluster_options(
    clusters: &[crate::model::ClusterView],
    chosen: Option<&str>,
) -> impl IntoView {
    clusters
        .iter()
        .map(|c| option(&c.name, &c.name, chosen == Some(c.name.as_str())))
        .collect_view()
}

/// The cluster and namespace filters a list's form starts with.
pub(crate) fn place_filters(
    clusters: &[String],
    cluster: Option<&str>,
    namespace: Option<&str>,
) -> impl IntoView {
    let options = clusters
        .iter()
        .map(|c| option(c, c, cluster == Some(c.as_str())))
        .collect_view();
    view! {
        <label>"Cluster "
            <select name="cluster">
                <option value="">"All clusters"</option>
                {options}
            </select>
        </label>
        <label>"Namespace " <input name="namespace" value=namespace.unwrap_or_default().to_string()/></label>
    }
}

/// The options of a severity filter.
pub(crate) fn severity_options(chosen: Option<Severity>) -> impl IntoView {
    [Severity::Critical, Severity::Warning, Severity::Info]
        .map(|s| option(s.label(), s.label(), chosen == Some(s)))
        .into_iter()
        .collect_view()
}

/// The options of a rule filter: every rule by its title, its id the value.
pub(crate) fn rule_options(chosen: Option<&str>) -> impl IntoView {
    let mut rules = crate::model::Rule::ALL;
    rules.sort_by_key(|r| r.title().to_ascii_lowercase());
    rules
        .into_iter()
        .map(|r| option(r.id(), r.title(), chosen == Some(r.id())))
        .collect_view()
}

/// The object of a finding in words: "Ingress acme-shop/shop", "ClusterIssuer le".
pub(crate) fn object_text(f: &Finding) -> String {
    if f.namespace.is_empty() {
        format!("{} {}", f.kind, f.name)
    } else {
        format!("{} {}/{}", f.kind, f.namespace, f.name)
    }
}

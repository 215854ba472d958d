//! `/`: the triage board — what is broken now across the fleet as problems, one per root
//! cause with its symptoms folded under it, most urgent first: the diagnosis in plain words,
//! the hosts, where, how urgent, and the next action. Filters are in the query string (the
//! same as `/api/v1/problems`); every finding on its own is on `/findings`.

use leptos::prelude::*;

use chrono::{DateTime, Utc};

use crate::components::findings::{
    cluster_options, finding_href, object_href, object_text, rule_options, severity_options,
    SeverityBadge,
};
use crate::components::{document, encode, Nav, Pager, Shell, Time};
use crate::model::history::RecentChange;
use crate::model::read::problems::{Problem, Problems};
use crate::model::read::views::ProblemQuery;
use crate::model::{ClusterView, Severity, SyncState};
use crate::pages::clusters::clusters_table;

/// How many hosts and symptoms a row lists before "and n more".
const SHOWN: usize = 5;
const SYMPTOMS_SHOWN: usize = 20;

/// The board's filters as a query string (without `page`), for the pager.
fn query_string(q: &ProblemQuery) -> String {
    let severity = q.severity.map(|s| s.label());
    crate::components::query_string(&[
        ("cluster", q.cluster.as_deref()),
        ("namespace", q.namespace.as_deref()),
        ("host", q.host.as_deref()),
        ("cause", q.cause.as_deref()),
        ("severity", severity),
    ])
}

/// The filter form; every choice is a plain GET parameter.
fn filter_form(q: &ProblemQuery, clusters: &[ClusterView]) -> impl IntoView {
    let cluster_options = cluster_options(clusters, q.cluster.as_deref());
    let severity_options = severity_options(q.severity);
    let cause_options = rule_options(q.cause.as_deref());
    view! {
        <form class="filters" method="get" action="/">
            <label>"Host "<input name="host" type="search" placeholder="shop.example.com" value=q.host.clone().unwrap_or_default()/></label>
            <label>"Cluster "<select name="cluster"><option value="">"All clusters"</option>{cluster_options}</select></label>
            <label>"Namespace "<input name="namespace" value=q.namespace.clone().unwrap_or_default()/></label>
            <label>"Cause "<select name="cause"><option value="">"Any"</option>{cause_options}</select></label>
            <label>"Severity "<select name="severity"><option value="">"Any"</option>{severity_options}</select></label>
            <button type="submit">"Filter"</button>
        </form>
    }
}

/// Where a problem is read about: its root's page, else the first object with one.
fn problem_href(p: &Problem) -> Option<String> {
    object_href(&p.root).or_else(|| {
        p.objects.iter().find_map(|o| {
            let base = crate::components::detail_pages(&o.kind)?;
            Some(format!(
                "/{base}/{}/{}/{}",
                encode(&o.cluster),
                encode(&o.namespace),
                encode(&o.name)
            ))
        })
    })
}

use crate::model::text::count as plural;

/// One problem: a row, and its symptoms folded under it.
fn problem_row(p: Problem, now: DateTime<Utc>) -> impl IntoView {
    let object = format!(
        "{}/{}/{}/{}",
        p.root.cluster, p.root.namespace, p.root.kind, p.root.name
    );
    let headline = match problem_href(&p) {
        Some(href) => view! { <a href=href class="diagnosis">{p.diagnosis.clone()}</a> }.into_any(),
        None => view! { <span class="diagnosis">{p.diagnosis.clone()}</span> }.into_any(),
    };
    // A root cause behind thousands of Ingresses (an issuer gone) shows a few of each
    // list and how many more there are; the API has them all.
    let more_hosts = (p.hosts.len() > SHOWN).then(|| {
        view! { <li class="more">{format!("and {} more", p.hosts.len() - SHOWN)}</li> }
    });
    let hosts = p
        .hosts
        .iter()
        .take(SHOWN)
        .map(|h| {
            let href = format!("/?host={}", encode(h));
            view! { <li><a href=href>{h.to_string()}</a></li> }
        })
        .collect_view();
    // Names never break inside (at their hyphens); the list breaks between them.
    let names = |names: Vec<String>| {
        let last = names.len().saturating_sub(1);
        names
            .into_iter()
            .enumerate()
            .map(|(i, n)| view! { <span class="name">{n}</span>{(i < last).then_some(", ")} })
            .collect_view()
    };
    let namespaces = match p.namespaces.len() {
        0 => names(vec!["cluster-wide".to_string()]),
        n if n > SHOWN => names(vec![format!("{n} namespaces")]),
        _ => names(p.namespaces.iter().map(|n| n.to_string()).collect()),
    };
    let clusters = names(p.clusters.iter().map(|c| c.to_string()).collect());
    let place = view! { {clusters}" · "{namespaces} };
    let expires = p.urgency.expires.map(|at| {
        let word = if at <= now { "expired " } else { "expires " };
        view! { <span class="expires">{word}<Time at=at now=now/></span><br/> }
    });
    let since = p
        .urgency
        .failing_since
        .map(|at| view! { <span class="since">"since "<Time at=at now=now/></span> });
    let action = match p.action.href.clone().or_else(|| problem_href(&p)) {
        Some(href) => view! { <a class="action" href=href>{p.action.label}</a> }.into_any(),
        None => view! { <span class="action">{p.action.label}</span> }.into_any(),
    };
    let symptoms = (!p.symptoms.is_empty()).then(|| {
        let count = plural(p.symptoms.len(), "symptom", "symptoms");
        let more = (p.symptoms.len() > SYMPTOMS_SHOWN).then(|| {
            let href = format!(
                "/findings?{}",
                crate::components::query_string(&[("cluster", p.clusters.first().map(|c| &**c))])
            );
            view! { <li class="more"><a href=href>{format!("and {} more on the findings page", p.symptoms.len() - SYMPTOMS_SHOWN)}</a></li> }
        });
        let items = p
            .symptoms
            .iter()
            .take(SYMPTOMS_SHOWN)
            .map(|f| {
                let target = view! { <a href=finding_href(f)>{object_text(f)}</a> };
                view! {
                    <li data-testid="symptom" data-rule=f.rule>
                        <SeverityBadge severity=f.severity/>" "{f.title.to_string()}" — "{target}" "<code class="rule">{f.rule}</code>
                    </li>
                }
            })
            .collect_view();
        view! { <details class="symptoms"><summary>{count}</summary><ul>{items}{more}</ul></details> }
    });
    view! {
        <tr data-testid="problem-row" data-cause=p.cause data-object=object data-id=p.id.clone()>
            <td data-label="Severity"><SeverityBadge severity=p.urgency.severity/></td>
            <td data-label="Problem" class="problem">{headline}<br/><code class="rule">{p.cause}</code>{symptoms}</td>
            <td data-label="Hosts" class="hosts"><ul class="plain">{hosts}{more_hosts}</ul></td>
            <td data-label="Where" class="where">{place}</td>
            <td data-label="Urgency" class="urgency">{expires}{since}</td>
            <td data-label="Next">{action}</td>
        </tr>
    }
}

/// "What changed recently": history rows, newest first.
fn recent_table(recent: Result<Vec<RecentChange>, String>, now: DateTime<Utc>) -> impl IntoView {
    match recent {
        Err(e) => view! { <p class="error-text">{e}</p> }.into_any(),
        Ok(r) if r.is_empty() => {
            view! { <p class="empty">"Nothing changed in the last 24 hours."</p> }.into_any()
        }
        Ok(r) => {
            let rows = r
                .into_iter()
                .map(|c| {
                    let at = DateTime::parse_from_rfc3339(&c.at)
                        .map(|t| t.with_timezone(&Utc))
                        .ok()
                        .map(|at| view! { <Time at=at now=now/> });
                    let text = if c.namespace.is_empty() {
                        format!("{} {}", c.kind, c.name)
                    } else {
                        format!("{} {}/{}", c.kind, c.namespace, c.name)
                    };
                    // Each line leads to its object: a page of its own, the clusters, or (a
                    // Challenge, named "name (host)") the search for its host.
                    let href = match crate::model::Kind::from_name(&c.kind) {
                        _ if c.kind == "Cluster" => Some("/clusters".to_string()),
                        Some(crate::model::Kind::Challenge) => {
                            c.name.rsplit_once(" (").map(|(_, host)| {
                                format!("/search?q={}", encode(host.trim_end_matches(')')))
                            })
                        }
                        _ => crate::model::links::object_path(
                            &c.kind,
                            &c.cluster,
                            &c.namespace,
                            &c.name,
                        ),
                    };
                    let object = match href {
                        Some(href) => view! { <a href=href>{text}</a> }.into_any(),
                        None => view! { <span>{text}</span> }.into_any(),
                    };
                    view! {
                        <tr data-testid="recent-row">
                            <td data-label="When">{at}</td>
                            <td data-label="Cluster">{c.cluster}</td>
                            <td data-label="Object">{object}</td>
                            <td data-label="Change">{c.what}</td>
                            <td data-label="Detail" class="message">{c.detail.unwrap_or_default()}</td>
                        </tr>
                    }
                })
                .collect_view();
            view! {
                <table>
                    <caption class="visually-hidden">"Recent changes"</caption>
                    <thead><tr><th scope="col">"When"</th><th scope="col">"Cluster"</th><th scope="col">"Object"</th><th scope="col">"Change"</th><th scope="col">"Detail"</th></tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            }
            .into_any()
        }
    }
}

pub fn page(
    shell: &Shell,
    query: &ProblemQuery,
    clusters: Vec<ClusterView>,
    problems: Problems,
    recent: Result<Vec<RecentChange>, String>,
) -> String {
    let now = shell.now;
    let sum = |i: usize| problems.by_cluster.values().map(|c| c[i]).sum::<usize>();
    let (critical, warning) = (sum(0), sum(1));
    let unhealthy = clusters
        .iter()
        .filter(|c| matches!(c.state, SyncState::Stale { .. } | SyncState::Failed { .. }))
        .count();
    let headline = if critical + warning == 0 {
        format!(
            "Nothing is broken: {}, no critical or warning problems.",
            plural(clusters.len(), "cluster", "clusters")
        )
    } else {
        format!(
            "{critical} critical and {} across {}{}",
            plural(warning, "warning problem", "warning problems"),
            plural(clusters.len(), "cluster", "clusters"),
            if unhealthy > 0 {
                format!("; {} not in sync", plural(unhealthy, "cluster", "clusters"))
            } else {
                String::new()
            }
        )
    };
    let class = if critical > 0 {
        "summary critical"
    } else if warning > 0 {
        "summary warning"
    } else {
        "summary ok"
    };
    let counts = clusters
        .iter()
        .map(|c| {
            let row = problems.by_cluster.get(&c.name).copied().unwrap_or_default();
            let cells = [Severity::Critical, Severity::Warning, Severity::Info].map(|s| {
                let n = row[s as usize];
                let href = format!("/?{}", crate::components::query_string(&[("cluster", Some(&c.name)), ("severity", Some(s.label()))]));
                let label = format!("{n} {} in {}", s.label(), c.name);
                view! { <td data-label=s.label()><a href=href aria-label=label>{n}</a></td> }
            });
            view! { <tr><th scope="row">{c.name.clone()}</th>{cells.into_iter().collect_view()}</tr> }
        })
        .collect_view();
    let page = problems.page;
    let empty = page
        .items
        .is_empty()
        .then(|| view! { <p class="empty">"No problems match."</p> });
    let form = filter_form(query, &clusters);
    let bulk = shell.actions.then(|| {
        crate::pages::action::action_form(
            &shell.csrf,
            crate::actions::ActionKind::BulkEditInPlace,
            query.cluster.as_deref().unwrap_or(""),
            query.namespace.as_deref().unwrap_or(""),
            "",
            crate::pages::action::FormMode::Preview,
            "Preview: bulk fix — add edit-in-place wherever it is missing here".into(),
        )
    });
    let findings_link = format!("/findings{}", {
        let q = crate::components::query_string(&[
            ("cluster", query.cluster.as_deref()),
            ("namespace", query.namespace.as_deref()),
        ]);
        if q.is_empty() {
            String::new()
        } else {
            format!("?{q}")
        }
    });
    let pager = view! { <Pager page=page.page pages=page.pages() total=page.total base_query=query_string(query)/> };
    let table = (!page.items.is_empty()).then(|| {
        let rows = page
            .items
            .into_iter()
            .map(|p| problem_row(p, now))
            .collect_view();
        view! {
            <table class="problems">
                <caption class="visually-hidden">"Problems"</caption>
                <thead>
                    <tr>
                        <th scope="col">"Severity"</th>
                        <th scope="col">"Problem"</th>
                        <th scope="col">"Hosts"</th>
                        <th scope="col">"Where"</th>
                        <th scope="col">"Urgency"</th>
                        <th scope="col">"Next"</th>
                    </tr>
                </thead>
                <tbody>{rows}</tbody>
            </table>
        }
    });
    document(
        &Shell {
            title: if critical > 0 {
                format!("✖ {critical} critical — Triage")
            } else {
                "Triage".into()
            },
            active: Nav::Board,
            ..shell.clone()
        },
        view! {
            <h1>"Triage"</h1>
            <p class=class data-testid="board-summary">{headline}</p>
            <h2>"Broken now"</h2>
            {form}
            {empty}
            {table}
            {pager}
            {crate::components::json_link("/api/v1/problems", &query_string(query))}
            <p><a href=findings_link>"Every finding on its own (the symptoms, too)"</a></p>
            {bulk}
            <h2>"Problems by cluster"</h2>
            <table class="counts">
                <thead><tr><th scope="col">"Cluster"</th><th scope="col">"✖ critical"</th><th scope="col">"▲ warning"</th><th scope="col">"ℹ info"</th></tr></thead>
                <tbody>{counts}</tbody>
            </table>
            <h2>"What changed recently"</h2>
            {recent_table(recent, now)}
            <h2>"Clusters"</h2>
            {clusters_table(clusters, now)}
        },
    )
}

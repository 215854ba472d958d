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

/// Where a problem is read about: its root's page, else the first object with one, else
/// (an issuer or a request with nothing of its own to show) its rule's findings where it
/// is, with their explanation and remedy.
fn problem_href(p: &Problem) -> String {
    object_href(&p.root)
        .or_else(|| {
            p.objects.iter().find_map(|o| {
                let base = crate::components::detail_pages(o.kind.name())?;
                Some(format!(
                    "/{base}/{}/{}/{}",
                    encode(&o.cluster),
                    encode(&o.namespace),
                    encode(&o.name)
                ))
            })
        })
        .unwrap_or_else(|| {
            let namespace = (!p.root.namespace.is_empty()).then_some(&*p.root.namespace);
            format!(
                "/findings?{}",
                crate::components::query_string(&[
                    ("cluster", Some(&*p.root.cluster)),
                    ("namespace", namespace),
                    ("rule", Some(p.root.rule.id())),
                ])
            )
        })
}

use crate::model::text::count as plural;

/// A host name that breaks only after its dots, never inside a label.
pub(crate) fn host_text(host: &str) -> impl IntoView {
    let labels: Vec<String> = host.split('.').map(str::to_string).collect();
    let last = labels.len().saturating_sub(1);
    labels
        .into_iter()
        .enumerate()
        .map(|(i, l)| {
            let dot = (i < last).then(|| view! { "."<wbr/> });
            view! { {l}{dot} }
        })
        .collect_view()
}

/// One problem: what hurts clients and since when, the diagnosis, where, the one thing to
/// do, and its symptoms folded under it.
fn problem_row(p: Problem, now: DateTime<Utc>, support: Option<&str>) -> impl IntoView {
    let object = format!(
        "{}/{}/{}/{}",
        p.root.cluster, p.root.namespace, p.root.kind, p.root.name
    );
    let headline = view! { <a href=problem_href(&p) class="diagnosis">{p.diagnosis.clone()}</a> };
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
            view! { <li><a href=href>{host_text(h)}</a></li> }
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
    let urgency = view! { <crate::components::Harm urgency=p.urgency.clone() now=now/> };
    // Only the platform can act: said, with whom to contact, and no button.
    let action = if p.action.provider {
        view! {
            <span class="action provider" data-testid="provider">{p.action.label.clone()}</span>
            " "{crate::components::support_contact(support)}
        }
        .into_any()
    } else if p.action.wait {
        // Nothing to press: the advice, and where the retry time is.
        view! {
            <span class="action wait" data-testid="wait">{p.action.label.clone()}</span>
            " "<a href=p.action.href.clone().unwrap_or_else(|| problem_href(&p))>"until when"</a>
        }
        .into_any()
    } else {
        view! { <a class="action" href=p.action.href.clone().unwrap_or_else(|| problem_href(&p))>{p.action.label.clone()}</a> }.into_any()
    };
    let title = p.cause.title();
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
                    <li data-testid="symptom" data-rule=f.rule.id()>
                        {f.title.to_string()}" — "{target}" "<code class="rule">{f.rule.id()}</code>
                    </li>
                }
            })
            .collect_view();
        view! { <details class="symptoms"><summary>{count}</summary><ul>{items}{more}</ul></details> }
    });
    let (class, head) = match &p.confirming {
        // Being fixed: what it waits for, and no button (there is nothing to do but wait).
        Some(awaiting) => (
            "problem confirming".to_string(),
            view! {
                <span class="badge ok" data-testid="confirming"><span aria-hidden="true">"✓ "</span>"confirming"</span>
                <span class="urgency">{awaiting.clone()}</span>
            }
            .into_any(),
        ),
        None => (
            format!("problem {}", p.urgency.severity.label()),
            view! {
                <SeverityBadge severity=p.urgency.severity/>
                <span class="urgency">{urgency}</span>
                {action}
            }
            .into_any(),
        ),
    };
    view! {
        <li class=class data-testid="problem-row" data-cause=p.cause.id() data-object=object data-id=p.id.clone() data-confirming=p.confirming.is_some().then_some("true")>
            <div class="head">{head}</div>
            <p class="headline">{headline}</p>
            <div class="meta">
                <ul class="hosts plain" aria-label="Hosts">{hosts}{more_hosts}</ul>
                <span class="where">{place}</span>
                <span class="cause" title=p.cause.id()>{title}</span>
            </div>
            {symptoms}
        </li>
    }
}

/// Where a line of "what changed recently" leads: the clusters; (a Challenge, named
/// "name (host)") the search for its host; a bulk action (no name) the list it changed,
/// filtered to where it ran; an object's own page; else the search for its name.
fn recent_href(c: &RecentChange) -> String {
    let in_place = |list: &str| {
        let of = |s: &str| (!s.is_empty()).then(|| s.to_string());
        let (cluster, namespace) = (of(&c.cluster), of(&c.namespace));
        format!(
            "/{list}?{}",
            crate::components::query_string(&[
                ("cluster", cluster.as_deref()),
                ("namespace", namespace.as_deref()),
            ])
        )
    };
    let kind = crate::model::Kind::from_name(&c.kind);
    if c.kind == "Cluster" {
        return "/clusters".into();
    }
    if kind == Some(crate::model::Kind::Challenge) {
        if let Some((_, host)) = c.name.rsplit_once(" (") {
            return format!("/search?q={}", encode(host.trim_end_matches(')')));
        }
    }
    if c.name.is_empty() {
        return in_place(crate::components::detail_pages(&c.kind).unwrap_or("findings"));
    }
    crate::model::links::object_path(&c.kind, &c.cluster, &c.namespace, &c.name)
        .unwrap_or_else(|| format!("/search?q={}", encode(&c.name)))
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
                    let object = view! { <a href=recent_href(&c)>{text}</a> };
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
    clusters: &[ClusterView],
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
    let fixing = if problems.confirming > 0 {
        format!(
            " {} being issued or fixed, waiting to be confirmed.",
            plural(problems.confirming, "problem is", "problems are")
        )
    } else {
        String::new()
    };
    let headline = if critical + warning == 0 {
        format!(
            "Nothing is broken: {}, no critical or warning problems.{fixing}",
            plural(clusters.len(), "cluster", "clusters")
        )
    } else {
        format!(
            "{critical} critical and {} across {}{}.{fixing}",
            plural(warning, "warning problem", "warning problems"),
            plural(clusters.len(), "cluster", "clusters"),
            if unhealthy > 0 {
                format!("; {} not in sync", plural(unhealthy, "cluster", "clusters"))
            } else {
                String::new()
            }
        )
    };
    // The counts are the fleet's (as the table by cluster below): say so when the list is
    // not all of it.
    let headline = if !query_string(query).is_empty() {
        format!(
            "{headline} The list below is filtered to {}.",
            plural(problems.page.total, "problem", "problems")
        )
    } else {
        headline
    };
    let class = if critical > 0 {
        "summary critical"
    } else if warning > 0 {
        "summary warning"
    } else {
        "summary ok"
    };
    // A fleet of hundreds: only the clusters with problems get a row, and only those not in
    // sync are in the clusters table; the rest are counted (all of them are on /clusters).
    let many = clusters.len() > crate::components::SYNC_LISTED;
    let with_problems = |c: &&ClusterView| {
        !many
            || problems
                .by_cluster
                .get(&c.name)
                .is_some_and(|row| row.iter().any(|n| *n > 0))
    };
    let quiet = clusters.iter().filter(|c| !with_problems(c)).count();
    let quiet_line = (quiet > 0).then(|| {
        view! { <p data-testid="quiet-clusters">{format!("{} no problems.", if quiet == clusters.len() { format!("All {quiet} clusters:") } else { format!("The other {}:", plural(quiet, "cluster", "clusters")) })}</p> }
    });
    let counts_table = (quiet < clusters.len()).then(|| {
        let counts = clusters
        .iter()
        .filter(with_problems)
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
        view! {
            <table class="counts">
                <thead><tr><th scope="col">"Cluster"</th><th scope="col">"✖ critical"</th><th scope="col">"▲ warning"</th><th scope="col">"ℹ info"</th></tr></thead>
                <tbody>{counts}</tbody>
            </table>
        }
    });
    let in_sync = clusters
        .iter()
        .filter(|c| matches!(c.state, SyncState::Synced))
        .count();
    let clusters_part = if many && in_sync == clusters.len() {
        view! { <p data-testid="clusters-in-sync"><a href="/clusters">{format!("All {} clusters are in sync.", clusters.len())}</a></p> }.into_any()
    } else if many {
        let behind: Vec<ClusterView> = clusters
            .iter()
            .filter(|c| !matches!(c.state, SyncState::Synced))
            .cloned()
            .collect();
        view! {
            {clusters_table(behind, now)}
            <p><a href="/clusters">{format!("{} in sync; every cluster on the clusters page.", plural(in_sync, "other cluster", "other clusters"))}</a></p>
        }
        .into_any()
    } else {
        clusters_table(clusters.to_vec(), now).into_any()
    };
    let page = problems.page;
    let empty = page
        .items
        .is_empty()
        .then(|| view! { <p class="empty">"No problems match."</p> });
    // Folded unless a filter is set: the problems are the first screen.
    let filtered = !query_string(query).is_empty();
    let form = view! {
        <details class="filter-fold" open=filtered>
            <summary>{if filtered { "Filters (set)" } else { "Filter by host, cluster, namespace, cause or severity" }}</summary>
            {filter_form(query, clusters)}
        </details>
    };
    // Offered only where it can help: a problem listed here lacks the fix (never for a
    // cluster Lookout has no data from, nor a list with no such problem).
    let fixable = page.items.iter().any(|p| {
        std::iter::once(&p.root).chain(p.symptoms.iter()).any(|f| {
            matches!(
                f.rule,
                crate::model::Rule::IngressEditInPlaceMissing
                    | crate::model::Rule::IngressEditInPlaceNotEffective
                    | crate::model::Rule::IngressEditInPlaceInvalid
            )
        })
    });
    let bulk = (shell.actions && fixable).then(|| {
        crate::pages::action::bulk_form(
            &shell.csrf,
            crate::actions::ActionKind::BulkEditInPlace,
            &crate::actions::BulkScope {
                list: crate::actions::BulkList::Board,
                filters: query_string(query),
            },
            crate::pages::action::FormMode::Preview,
            if filtered {
                "Preview: bulk fix — add edit-in-place to the Ingresses of the problems listed here that need it"
            } else {
                "Preview: bulk fix — add edit-in-place wherever it is missing here"
            }
            .into(),
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
            .map(|p| problem_row(p, now, shell.support.as_deref()))
            .collect_view();
        view! { <ol class="problems" aria-label="Problems, most urgent first">{rows}</ol> }
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
            {counts_table}
            {quiet_line}
            <h2>"What changed recently"</h2>
            {recent_table(recent, now)}
            <h2>"Clusters"</h2>
            {clusters_part}
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::certificate::CertificateView;
    use crate::model::ingress::IngressView;
    use crate::model::issuer::LE_PRODUCTION;
    use crate::model::read::problems::cluster_problems;
    use crate::model::rules::fixtures::{cluster_issuer, World};
    use crate::model::Rule;
    use chrono::Duration;

    fn change(kind: &str, namespace: &str, name: &str) -> RecentChange {
        RecentChange {
            at: "2026-12-04T10:00:00Z".into(),
            cluster: "zrh".into(),
            namespace: namespace.into(),
            kind: kind.into(),
            name: name.into(),
            what: "w".into(),
            detail: None,
        }
    }

    #[test]
    fn a_fleet_of_hundreds_shows_only_the_clusters_that_need_a_look() {
        use crate::components::SyncLine;
        let now = crate::model::rules::fixtures::now();
        let clusters: Vec<ClusterView> = (0..300)
            .map(|i| ClusterView {
                name: format!("c-{i:03}"),
                state: if i == 7 {
                    SyncState::Failed {
                        error: "connection refused".into(),
                    }
                } else {
                    SyncState::Synced
                },
                last_sync: Some(now),
                last_error: None,
                kinds: Vec::new(),
                ingresses: 1,
            })
            .collect();
        let shell = Shell {
            now,
            sync: clusters
                .iter()
                .map(|c| SyncLine {
                    name: c.name.clone(),
                    state: c.state.clone(),
                    last_sync: c.last_sync,
                })
                .collect(),
            ..Shell::default()
        };
        let q = ProblemQuery::default();
        let html = page(
            &shell,
            &q,
            &clusters,
            Problems::of(std::iter::empty(), &q),
            Ok(Vec::new()),
        );
        // The strip names the failing cluster and counts the rest; so does the board.
        assert!(html.contains("✓ 299 more in sync"), "{html}");
        assert!(html.contains("All 300 clusters: no problems."), "{html}");
        assert!(
            html.contains("299 other clusters in sync; every cluster on the clusters page."),
            "{html}"
        );
        assert_eq!(html.matches("connection refused").count(), 1, "{html}");
        // No other cluster is listed outside the filter's choices.
        let outside_form = html.replace(
            &html[html.find("<select name=\"cluster\"").unwrap()..html.find("</select>").unwrap()],
            "",
        );
        assert!(!outside_form.contains("c-123"), "{outside_form}");
        assert!(outside_form.contains("c-007"));
    }

    #[test]
    fn every_line_of_what_changed_leads_somewhere() {
        for ((kind, namespace, name), href) in [
            (("Cluster", "", "zrh"), "/clusters"),
            (
                ("Challenge", "shop", "c-1 (shop.example.com)"),
                "/search?q=shop.example.com",
            ),
            (
                ("Certificate", "shop", "shop-tls"),
                "/certificates/zrh/shop/shop-tls",
            ),
            // A bulk action has no name: the list it changed, where it ran.
            (
                ("Certificate", "shop", ""),
                "/certificates?cluster=zrh&namespace=shop",
            ),
            (("Ingress", "", ""), "/ingresses?cluster=zrh"),
            // A kind without a page of its own, or a Challenge named otherwise: its name.
            (
                ("CertificateRequest", "shop", "shop-tls-1"),
                "/search?q=shop-tls-1",
            ),
            (("Challenge", "shop", "c-1"), "/search?q=c-1"),
        ] {
            assert_eq!(
                recent_href(&change(kind, namespace, name)),
                href,
                "{kind} {namespace}/{name}"
            );
        }
    }

    #[test]
    fn a_problem_leads_to_its_objects_page_else_to_its_findings() {
        let ing = IngressView::test("shop")
            .in_ns("acme")
            .with_issuer("letsencrypt-prod")
            .edit_in_place("true")
            .tls("shop.acme.example");
        let cert = CertificateView::of(&ing).not_ready("Pending", Duration::hours(2));
        let w = World::new()
            .issuer(cluster_issuer("letsencrypt-prod", LE_PRODUCTION, false))
            .certificate(cert)
            .ingress(ing);
        let findings = std::sync::Arc::new(w.findings());
        let problems = cluster_problems(
            &w.facts,
            &w.data,
            &findings,
            crate::model::rules::fixtures::now(),
        );
        let p = problems
            .iter()
            .find(|p| p.cause == Rule::IssuerNotReady)
            .expect("the issuer that is not ready is a problem");
        // The issuer has no page: the first object that has one.
        assert!(
            problem_href(p).starts_with("/ingresses/")
                || problem_href(p).starts_with("/certificates/"),
            "{}",
            problem_href(p)
        );
        // With none of those, its rule's findings where it is.
        let mut alone = p.clone();
        alone.objects = Vec::new().into();
        assert_eq!(
            problem_href(&alone),
            format!("/findings?cluster={}&rule=issuer.not-ready", w.facts.name)
        );
    }
}

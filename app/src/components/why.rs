//! "Why this is broken" (or "will break", or "needs attention") and "What to do" at the top of the chain and certificate pages: the
//! problem's diagnosis and evidence, then its remediation with the equivalent `kubectl`
//! commands (for whoever fixes it in Git, or has no rights in Lookout), selectable text.

use crate::model::Rule;
use leptos::prelude::*;
use leptos::tachys::view::any_view::AnyView;

use super::findings::SeverityBadge;
use crate::actions::{ISSUE_TEMPORARY_CERTIFICATE, OVERRIDE_INGRESS_NAME};
use crate::model::chain::CertificateChain;
use crate::model::read::problems::Problem;
use crate::model::text::shell_word as word;
use crate::model::Kind;

/// A Certificate the commands may name, and its in-flight request when one is being issued.
#[derive(Debug, Clone)]
pub struct CertificateRef {
    pub name: String,
    pub in_flight: Option<String>,
    /// The in-flight request's Order while cert-manager can still re-solve its challenges in
    /// place: pending, none of its Challenges failed.
    pub re_solvable_order: Option<String>,
    /// The last attempt failed and cert-manager waits before the next (Issuing=False).
    pub in_backoff: bool,
}

impl CertificateRef {
    /// From a chain: the request for the in-flight revision while Issuing is True.
    pub fn of(c: &CertificateChain) -> CertificateRef {
        let issuing = c
            .certificate
            .rare
            .issuing
            .as_ref()
            .is_some_and(|i| &*i.status == "True");
        let failed = c
            .certificate
            .rare
            .issuing
            .as_ref()
            .is_some_and(|i| &*i.status == "False" && i.reason.as_deref() == Some("Failed"));
        CertificateRef {
            in_backoff: failed
                || c.certificate.rare.failed_issuance_attempts.unwrap_or(0) > 0 && !issuing,
            name: c.certificate.name.to_string(),
            in_flight: issuing
                .then(|| c.requests.iter().find(|r| r.current))
                .flatten()
                .map(|r| r.request.name.to_string()),
            re_solvable_order: issuing
                .then(|| c.requests.iter().find(|r| r.current))
                .flatten()
                .and_then(|r| r.orders.first())
                .filter(|o| matches!(&*o.order.state, "" | "pending"))
                .filter(|o| {
                    !o.challenges.is_empty()
                        && !o
                            .challenges
                            .iter()
                            .any(|ch| matches!(&*ch.state, "invalid" | "errored" | "expired"))
                })
                .map(|o| o.order.name.to_string()),
        }
    }
}

/// What Let's Encrypt gets for a challenge of `host` on port 80, as a command.
fn challenge_path(host: &str) -> String {
    format!(
        "curl -si http://{}/.well-known/acme-challenge/lookout-check | head -n 5",
        word(host)
    )
}

/// The commands that do by hand what the problem's next action does, or that show its
/// evidence; each line a command or a `#` comment.
pub fn commands(p: &Problem, certificates: &[CertificateRef]) -> Vec<String> {
    let root = &p.root;
    let ns = word(&root.namespace);
    let name = word(&root.name);
    let kind = root.kind.kind();
    let mut out = vec![format!("# in cluster {}", word(&root.cluster))];
    match root.rule {
        Rule::IngressEditInPlaceMissing
        | Rule::IngressEditInPlaceNotEffective
        | Rule::IngressEditInPlaceInvalid => {
            out.push(format!(
                "kubectl -n {ns} annotate --overwrite ingress {name} acme.cert-manager.io/http01-edit-in-place=true"
            ));
            for c in certificates {
                out.push(format!(
                    "kubectl -n {ns} annotate --overwrite certificate {} {OVERRIDE_INGRESS_NAME}={name} {ISSUE_TEMPORARY_CERTIFICATE}=true",
                    word(&c.name)
                ));
                if let Some(order) = &c.re_solvable_order {
                    out.push("# the pending challenge keeps its solver until its Order says otherwise: cert-manager then solves it again in place (same request, no new order)".into());
                    out.push(format!(
                        "kubectl -n {ns} annotate --overwrite order {} {OVERRIDE_INGRESS_NAME}={name}",
                        word(order)
                    ));
                } else if let Some(r) = &c.in_flight {
                    out.push(
                        "# a failed challenge cannot be solved again: restart the issuance".into(),
                    );
                    out.push(format!(
                        "kubectl -n {ns} delete certificaterequest {}",
                        word(r)
                    ));
                } else if c.in_backoff {
                    out.push(
                        "# the last attempt failed and waits out its backoff: issue again now"
                            .into(),
                    );
                    out.push(format!("cmctl renew -n {ns} {}", word(&c.name)));
                }
            }
        }
        Rule::IssuerNotReady | Rule::IssuerMissing if kind == Some(Kind::ClusterIssuer) => {
            out.push(format!("kubectl describe clusterissuer {name}"));
        }
        Rule::IssuerNotReady | Rule::IssuerMissing if kind == Some(Kind::Issuer) => {
            out.push(format!("kubectl -n {ns} describe issuer {name}"));
        }
        Rule::ClusterUnreachable
        | Rule::ClusterCertManagerMissing
        | Rule::ClusterIpv6ProxyProtocol => {
            out.push("kubectl get --raw /readyz".into());
            out.push("kubectl -n cert-manager get pods".into());
        }
        rule if rule.id().starts_with("probe.") => {
            out.push("# what a client gets, from where you run it:".into());
            for host in p.hosts.iter().take(3) {
                if rule == Rule::ProbeAcmePathRedirected {
                    out.push(challenge_path(host));
                } else {
                    let host = word(host);
                    out.push(format!(
                        "openssl s_client -connect {host}:443 -servername {host} </dev/null 2>/dev/null | openssl x509 -noout -subject -issuer -serial -enddate"
                    ));
                }
            }
        }
        Rule::GatewayHttp01RouteUnreachable => {
            out.push(
                "# where the solver's route attaches, and what each Gateway said of it:".into(),
            );
            out.push(format!(
                "kubectl -n {ns} get challenge {name} -o jsonpath='{{.spec.solver.http01.gatewayHTTPRoute.parentRefs}}'"
            ));
            out.push(format!(
                "kubectl -n {ns} get httproute -l acme.cert-manager.io/http01-solver=true -o yaml"
            ));
            for host in p.hosts.iter().take(1) {
                out.push("# what Let's Encrypt gets on port 80:".into());
                out.push(challenge_path(host));
            }
        }
        Rule::GatewayAcmePathRedirected => {
            out.push("# what Let's Encrypt gets on port 80:".into());
            for host in p.hosts.iter().take(3) {
                out.push(challenge_path(host));
            }
            out.push(format!("kubectl -n {ns} describe certificate {name}"));
        }
        // The judgement wrote the change in full (a manifest, a patch), shown on its own.
        _ if root.commands.is_some() => {}
        _ if root.kind == crate::model::Subject::Cluster => {}
        _ => {
            let kind = root.kind.name().to_ascii_lowercase();
            if root.namespace.is_empty() {
                out.push(format!("kubectl describe {kind} {name}"));
            } else {
                out.push(format!("kubectl -n {ns} describe {kind} {name}"));
            }
            if kind == "certificate" {
                out.push(format!("cmctl status certificate -n {ns} {name}"));
            }
        }
    }
    out
}

/// Why a button is not offered: `lead` (what would not help), the problem that stands in
/// the way, and a link to where it is fixed first.
/// `shown`: the problem is the one the page leads with (its diagnosis is right above, so it
/// is not repeated); `here`: this page's path (a link to it would lead nowhere).
pub fn not_offered(lead: &'static str, p: &Problem, shown: bool, here: &str) -> impl IntoView {
    let first = p
        .action
        .href
        .clone()
        .filter(|href| href != here)
        .map(|href| {
            view! { " Fix that first: "<a href=href data-testid="fix-first">{p.action.label.clone()}</a>"." }
        });
    let why = if shown {
        "the problem above.".to_string()
    } else {
        format!("{}.", p.diagnosis)
    };
    view! { <p data-testid="not-offered">{lead}{why}{first}</p> }
}

/// The same fix as YAML, for whoever changes the Ingress in Git.
fn yaml(p: &Problem) -> Option<&'static str> {
    matches!(
        p.root.rule,
        Rule::IngressEditInPlaceMissing | Rule::IngressEditInPlaceInvalid
    )
    .then_some("metadata:\n  annotations:\n    acme.cert-manager.io/http01-edit-in-place: \"true\"")
}

/// The box: one section per problem the object is part of; nothing when there is none.
/// Each leads with what hurts clients and the diagnosis, then what to do — `actions` (the
/// page's buttons) go right under the first problem's — and folds the evidence, what it
/// causes and the kubectl commands under it.
/// " · for a.example, b.example and 3 more": whose clients it is about, in the first screen.
fn hosts_line(hosts: &[crate::model::text::Text]) -> Option<String> {
    const SHOWN: usize = 3;
    let first: Vec<&str> = hosts.iter().take(SHOWN).map(|h| &**h).collect();
    (!first.is_empty()).then(|| {
        let more = hosts.len().saturating_sub(SHOWN);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        format!(" · for {}{more}", first.join(", "))
    })
}

/// The box's heading for a problem not being fixed: broken now, breaking at a known time,
/// or only needing attention.
fn heading(u: &crate::model::read::problems::Urgency) -> &'static str {
    headline(
        u.clients_failing_since.is_some(),
        u.clients_fail_at.is_some(),
    )
}

fn headline(failing_now: bool, fails_later: bool) -> &'static str {
    if failing_now {
        "Why this is broken"
    } else if fails_later {
        "Why this will break"
    } else {
        "What needs attention"
    }
}

pub fn why_box(
    problems: &[Problem],
    certificates: &[CertificateRef],
    actions: Option<AnyView>,
    now: chrono::DateTime<chrono::Utc>,
    support: Option<&str>,
    buttons_for: &[Rule],
) -> impl IntoView {
    let mut actions = actions;
    // The page's buttons go with the problem they act on: the first whose root or a symptom
    // is one of `buttons_for` (any, when empty), never one only the platform can fix.
    let acts_on = |p: &Problem| {
        !p.action.provider
            && (buttons_for.is_empty()
                || std::iter::once(&p.root)
                    .chain(p.symptoms.iter())
                    .any(|f| buttons_for.contains(&f.rule)))
    };
    let with_buttons = problems
        .iter()
        .position(acts_on)
        .or_else(|| problems.iter().position(|p| !p.action.provider));
    // The buttons belong to a problem below the first (which nobody can fix here, or only
    // the platform): they still come first on the page, saying which problem they fix.
    let first = match with_buttons {
        Some(i) if i > 0 => actions.take().map(|buttons| {
            let p = &problems[i];
            view! {
                <section class="why-first" data-testid="fix-here">
                    <p class="term">{format!("What you can fix here — {} ({}), told below:", p.diagnosis, p.urgency.severity.label())}</p>
                    {buttons}
                </section>
            }
        }),
        _ => None,
    };
    let sections = problems
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let symptoms = (!p.symptoms.is_empty()).then(|| {
                let more = (p.symptoms.len() > 20)
                    .then(|| view! { <li>{format!("and {} more", p.symptoms.len() - 20)}</li> });
                let items = p
                    .symptoms
                    .iter()
                    .take(20)
                    .map(|f| view! { <li>{f.title.to_string()}" "<code class="rule">{f.rule.id()}</code></li> })
                    .collect_view();
                view! { <details><summary>{format!("What it causes ({})", p.symptoms.len())}</summary><ul>{items}{more}</ul></details> }
            });
            // Only the platform can act: whom to contact, and no command nor button the
            // reader could not use (the page's own buttons go with a problem of theirs).
            let by_hand = (!p.action.provider).then(|| {
                let commands = commands(p, certificates).join("\n");
                let yaml = yaml(p).map(|y| {
                    view! {
                        <p>"Or in the Ingress's manifest:"</p>
                        <pre class="command"><code>{y}</code></pre>
                    }
                });
                // The judgement wrote the change in full and no button makes it: it is the
                // thing to do, open in the first screen, apart from the lines that only show
                // the evidence (those reach the hosts, not the cluster).
                match &p.root.commands {
                    Some(change) => {
                        let change = format!("# in cluster {}\n{change}", word(&p.root.cluster));
                        view! {
                            <details class="commands-fold" open=true>
                                <summary>"The change, by hand, with kubectl"</summary>
                                <pre class="command" data-testid="change"><code>{change}</code></pre>
                                <p>"What shows the evidence:"</p>
                                <pre class="command" data-testid="commands"><code>{commands}</code></pre>
                                {yaml}
                            </details>
                        }
                        .into_any()
                    }
                    None => view! {
                        <details class="commands-fold">
                            <summary>"By hand, with kubectl"</summary>
                            <pre class="command" data-testid="commands"><code>{commands}</code></pre>
                            {yaml}
                        </details>
                    }
                    .into_any(),
                }
            });
            let contact = p
                .action
                .provider
                .then(|| view! { <p data-testid="provider">{crate::components::support_contact(support)}</p> });
            let buttons = if Some(i) == with_buttons { actions.take() } else { None };
            // Being fixed: the page says so, and what it waits for, instead of "broken".
            let (class, heading, lead) = match &p.confirming {
                Some(awaiting) => (
                    "why confirming",
                    "Being issued — confirming",
                    view! { <p class="diagnosis" data-testid="confirming"><span class="badge ok">"✓ confirming"</span>" "{format!("Nothing is wrong now but the wait: {awaiting}.")}</p><p class="term">{format!("Was: {}", p.diagnosis)}</p> }.into_any(),
                ),
                // Broken now, breaking at a known time, or only needing attention.
                None => (
                    match p.urgency.severity {
                        crate::model::Severity::Critical => "why",
                        crate::model::Severity::Warning => "why harm-warning",
                        crate::model::Severity::Info => "why harm-info",
                    },
                    heading(&p.urgency),
                    view! {
                        <p class="diagnosis"><SeverityBadge severity=p.urgency.severity/>" "{p.diagnosis.clone()}</p>
                        <p class="harm-line"><super::Harm urgency=p.urgency.clone() now=now/>{hosts_line(&p.hosts)}</p>
                    }
                    .into_any(),
                ),
            };
            view! {
                <section class=class data-testid="why" data-cause=p.cause.id()>
                    <h2>{heading}</h2>
                    {lead}
                    {buttons}
                    <h3>"What to do"</h3>
                    <p class="remediation">{crate::components::cited(&p.action.detail)}</p>
                    {contact}
                    <details class="evidence-fold">
                        <summary>"Evidence"</summary>
                        <p class="evidence">{crate::components::cited(&p.evidence)}</p>
                        <p class="term">{format!("Rule {} ({}) · upstream: ", p.cause.title(), p.cause.id())}{crate::components::rule_docs_link(p.cause)}</p>
                    </details>
                    {symptoms}
                    {by_hand}
                </section>
            }
        })
        .collect_view();
    // No problem: the buttons stand on their own.
    view! { {first}{sections}{actions} }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fix_by_hand_is_the_three_steps_lookout_applies() {
        use crate::model::certificate::CertificateView;
        use crate::model::ingress::IngressView;
        use crate::model::rules::fixtures::{attempt, World};
        let ing = IngressView::test("shop")
            .in_ns("acme")
            .with_issuer("letsencrypt-prod")
            .tls("shop.example.com");
        let cert = CertificateView::of(&ing).issuing();
        let w = World::new()
            .attempt(attempt(
                &cert,
                "pending",
                None,
                Some((
                    "pending",
                    "wrong status code '404'",
                    chrono::Duration::minutes(20),
                )),
            ))
            .certificate(cert)
            .ingress(ing);
        let findings = std::sync::Arc::new(w.findings());
        let problems = crate::model::read::problems::cluster_problems(
            &w.facts,
            &w.data,
            &findings,
            crate::model::rules::fixtures::now(),
        );
        let p = &problems[0];
        assert_eq!(p.cause, Rule::IngressEditInPlaceMissing);
        let failed = CertificateRef {
            name: "shop-tls".into(),
            in_flight: Some("shop-tls-2".into()),
            re_solvable_order: None,
            in_backoff: false,
        };
        assert_eq!(
            commands(p, &[failed]),
            vec![
                "# in cluster zrh",
                "kubectl -n acme annotate --overwrite ingress shop acme.cert-manager.io/http01-edit-in-place=true",
                "kubectl -n acme annotate --overwrite certificate shop-tls acme.cert-manager.io/http01-override-ingress-name=shop cert-manager.io/issue-temporary-certificate=true",
                "# a failed challenge cannot be solved again: restart the issuance",
                "kubectl -n acme delete certificaterequest shop-tls-2",
            ]
        );
        // A pending challenge: the Order is annotated, cert-manager re-solves in place.
        let pending = CertificateRef {
            name: "shop-tls".into(),
            in_flight: Some("shop-tls-2".into()),
            re_solvable_order: Some("shop-tls-2-1234567890".into()),
            in_backoff: false,
        };
        assert_eq!(
            commands(p, &[pending]).last().map(String::as_str),
            Some("kubectl -n acme annotate --overwrite order shop-tls-2-1234567890 acme.cert-manager.io/http01-override-ingress-name=shop")
        );
        let backoff = CertificateRef {
            name: "shop-tls".into(),
            in_flight: None,
            re_solvable_order: None,
            in_backoff: true,
        };
        assert_eq!(
            commands(p, &[backoff]).last().map(String::as_str),
            Some("cmctl renew -n acme shop-tls")
        );
    }

    #[test]
    fn a_gateway_solver_route_nothing_serves_is_looked_at_where_it_attaches() {
        use crate::model::certificate::{CertificateView, ParentRef};
        use crate::model::ingress::IngressView;
        use crate::model::rules::fixtures::{attempt, World};
        let ing = IngressView::test("shop")
            .in_ns("acme")
            .with_issuer("letsencrypt-prod")
            .tls("shop.example.com");
        let cert =
            CertificateView::of(&ing).not_ready("DoesNotExist", chrono::Duration::minutes(10));
        let (r, o, ch) = attempt(
            &cert,
            "pending",
            None,
            Some(("pending", "", chrono::Duration::minutes(5))),
        );
        let mut ch = ch.unwrap();
        ch.gateway_parents = Some(
            vec![ParentRef {
                kind: "Gateway".into(),
                namespace: "acme".into(),
                name: "missing".into(),
                section: None,
                port: None,
            }]
            .into_boxed_slice(),
        );
        let w = World::new().certificate(cert).attempt((r, o, Some(ch)));
        let findings = std::sync::Arc::new(w.findings());
        let problems = crate::model::read::problems::cluster_problems(
            &w.facts,
            &w.data,
            &findings,
            crate::model::rules::fixtures::now(),
        );
        let p = problems
            .iter()
            .find(|p| p.cause == Rule::GatewayHttp01RouteUnreachable)
            .expect("the unreachable route is a problem's cause");
        let lines = commands(p, &[]);
        assert!(
            lines.contains(&"kubectl -n acme get challenge shop-tls-2-123-456 -o jsonpath='{.spec.solver.http01.gatewayHTTPRoute.parentRefs}'".to_string()),
            "{lines:#?}"
        );
        assert!(
            lines.contains(&"curl -si http://shop.example.com/.well-known/acme-challenge/lookout-check | head -n 5".to_string()),
            "{lines:#?}"
        );
    }

    #[test]
    fn the_heading_says_whether_clients_fail_now_later_or_not_at_all() {
        assert_eq!(headline(false, false), "What needs attention");
        assert_eq!(headline(false, true), "Why this will break");
        assert_eq!(headline(true, false), "Why this is broken");
    }

    #[test]
    fn the_hosts_are_named_three_at_most() {
        let hosts: Vec<crate::model::text::Text> = [
            "a.example",
            "b.example",
            "c.example",
            "d.example",
            "e.example",
        ]
        .iter()
        .map(|h| crate::model::text::Text::from(*h))
        .collect();
        assert_eq!(hosts_line(&hosts[..1]).unwrap(), " · for a.example");
        assert_eq!(
            hosts_line(&hosts).unwrap(),
            " · for a.example, b.example, c.example and 2 more"
        );
        assert_eq!(hosts_line(&[]), None);
    }

    #[test]
    fn words_are_quoted_only_when_needed() {
        assert_eq!(word("shop-tls"), "shop-tls");
        assert_eq!(word("a b"), "'a b'");
        assert_eq!(word("it's"), r"'it'\''s'");
        assert_eq!(word("$(rm -rf)"), "'$(rm -rf)'");
    }
}

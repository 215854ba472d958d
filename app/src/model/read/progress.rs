//! How an applied action follows through: the issuance it started, step by step — the
//! CertificateRequest, its Order, the Challenges, the certificate issued, then served by the
//! host — read from the cluster as it is now, so the result page says "Ready and served" or
//! the first failure in plain words, not only "Done".

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::model::chain::CertificateChain;
use crate::model::probe::Observation;

/// The steps of the follow-through, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Step {
    Request,
    Order,
    Challenge,
    Issued,
    /// Served by the host, as the probe saw it.
    Served,
}

impl Step {
    pub fn label(self) -> &'static str {
        match self {
            Step::Request => "request",
            Step::Order => "order",
            Step::Challenge => "challenge",
            Step::Issued => "issued",
            Step::Served => "served",
        }
    }

    /// Its name on a page.
    pub fn title(self) -> &'static str {
        match self {
            Step::Request => "Request",
            Step::Order => "Order",
            Step::Challenge => "Challenge",
            Step::Issued => "Issued",
            Step::Served => "Served by the host",
        }
    }
}

/// Where one step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepState {
    Pending,
    Done,
    Failed,
    /// Not part of this action's follow-through (no new issuance was needed; the probe is
    /// off).
    Skipped,
}

/// One step of the follow-through.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgressStep {
    pub step: Step,
    pub state: StepState,
    /// When it was done or failed, when known.
    pub at: Option<DateTime<Utc>>,
    /// What was seen, in words.
    pub detail: String,
    /// `served` only: the addresses of its hosts that give no TLS answer at all (nothing
    /// listens, the connection is closed or times out) — a problem of the address, not of
    /// the certificate, told apart so that a fix that worked settles (`host on address`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unanswered: Vec<String>,
}

/// How it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Settled {
    /// Issued and served by the host (or issued, where the probe does not look).
    Ready,
    /// A step failed: its detail says how.
    Failed,
}

/// Requests made this long before the action still count as its own (the clocks of
/// Lookout and the API server differ a little).
const SLACK: Duration = Duration::seconds(5);

fn step(step: Step, state: StepState, at: Option<DateTime<Utc>>, detail: String) -> ProgressStep {
    ProgressStep {
        step,
        state,
        at,
        detail,
        unanswered: Vec::new(),
    }
}

/// What an action asked of the issuance it follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expects {
    /// Nothing new: only what is issued now and served counts.
    Nothing,
    /// A new certificate from a request made after the action (a renew, a restart).
    NewRequest,
    /// A certificate from the request already in flight, whose challenge the action had
    /// solved again in place (the fix's override on the Order).
    InFlight,
}

/// The follow-through of an action applied at `since` on `chain`'s Certificate, with what
/// the probe saw on its hosts (`served`; `probed`: whether the probe has looked at all).
pub fn follow_through(
    chain: &CertificateChain,
    served: &[Observation],
    probed: bool,
    since: DateTime<Utc>,
    expects: Expects,
) -> (Vec<ProgressStep>, Option<Settled>) {
    use StepState::*;
    let mut out = Vec::new();
    let expects_issuance = expects != Expects::Nothing;
    let attempt = chain
        .requests
        .iter()
        .filter(|r| {
            expects == Expects::InFlight || r.request.created.is_some_and(|c| c + SLACK >= since)
        })
        .max_by_key(|r| r.request.created);
    let issued_leaf = match (attempt, expects_issuance) {
        (None, true) => {
            out.push(step(
                Step::Request,
                Pending,
                None,
                "waiting for cert-manager to make a CertificateRequest".into(),
            ));
            None
        }
        (None, false) => {
            for s in [Step::Request, Step::Order, Step::Challenge] {
                out.push(step(s, Skipped, None, "no new issuance was needed".into()));
            }
            chain
                .requests
                .iter()
                .find(|r| {
                    r.request.issued.is_some() && r.request.revision == chain.certificate.revision
                })
                .and_then(|r| r.request.issued.as_deref())
                .map(|l| l.sha256.to_string())
        }
        (Some(r), _) => {
            let req = &r.request;
            out.push(step(
                Step::Request,
                Done,
                req.created,
                format!("CertificateRequest {} made", req.name),
            ));
            let order = r.orders.iter().max_by_key(|o| o.order.created);
            match order {
                None if req.denied.is_some() => out.push(step(
                    Step::Order,
                    Failed,
                    req.denied.as_ref().and_then(|d| d.last_transition),
                    format!(
                        "no Order: an approver denied CertificateRequest {} — {}",
                        req.name,
                        req.denied
                            .as_ref()
                            .and_then(|d| d.message.as_deref())
                            .unwrap_or("no message")
                    ),
                )),
                None if req.awaits_approval() && req.ready.is_none() => out.push(step(
                    Step::Order,
                    Pending,
                    None,
                    format!(
                        "waiting for an approver: CertificateRequest {} is neither approved nor denied, and nothing makes its Order until it is",
                        req.name
                    ),
                )),
                None => out.push(step(
                    Step::Order,
                    Pending,
                    None,
                    match &r.held_by {
                        Some(old) => format!("waiting for the old Order {old} to be removed: it holds the name cert-manager gives this request's Order, and Kubernetes' garbage collector removes it shortly after its deleted request; cert-manager retries until then"),
                        None => "waiting for the ACME order".into(),
                    },
                )),
                Some(o) => {
                    let state = &*o.order.state;
                    let (s, detail) = match state {
                        "valid" => (Done, format!("Order {} is valid", o.order.name)),
                        "invalid" | "errored" => (
                            Failed,
                            format!(
                                "Order {} is {state}: {}",
                                o.order.name,
                                o.order.reason.as_deref().unwrap_or("no reason given")
                            ),
                        ),
                        other => (
                            Pending,
                            format!(
                                "Order {} is {}",
                                o.order.name,
                                if other.is_empty() {
                                    "being created"
                                } else {
                                    other
                                }
                            ),
                        ),
                    };
                    out.push(step(
                        Step::Order,
                        s,
                        o.order.failure_time.or(o.order.created),
                        detail,
                    ));
                    let failed = o
                        .challenges
                        .iter()
                        .find(|c| matches!(&*c.state, "invalid" | "errored"));
                    let challenge = match (failed, state) {
                        (Some(c), _) => step(
                            Step::Challenge,
                            Failed,
                            None,
                            format!(
                                "the challenge for {} failed: {}",
                                c.dns_name,
                                c.reason.as_deref().unwrap_or("no reason given")
                            ),
                        ),
                        (None, "valid" | "ready") => step(
                            Step::Challenge,
                            Done,
                            None,
                            "Let's Encrypt validated every name".into(),
                        ),
                        (None, _) if o.challenges.is_empty() => step(
                            Step::Challenge,
                            Pending,
                            None,
                            "waiting for the challenges".into(),
                        ),
                        (None, _) => {
                            let waiting: Vec<String> = o
                                .challenges
                                .iter()
                                .filter(|c| &*c.state != "valid")
                                .map(|c| match c.reason.as_deref() {
                                    Some(r) if !r.is_empty() => format!("{} ({r})", c.dns_name),
                                    _ => format!(
                                        "{} ({})",
                                        c.dns_name,
                                        if c.state.is_empty() {
                                            "pending"
                                        } else {
                                            &c.state
                                        }
                                    ),
                                })
                                .collect();
                            step(
                                Step::Challenge,
                                if waiting.is_empty() { Done } else { Pending },
                                None,
                                if waiting.is_empty() {
                                    "Let's Encrypt validated every name".into()
                                } else {
                                    format!("waiting for {}", waiting.join(", "))
                                },
                            )
                        }
                    };
                    out.push(challenge);
                }
            }
            let ready = req.ready.as_ref();
            match (ready.map(|c| c.is_true()), req.issued.as_deref()) {
                (Some(true), Some(leaf)) => {
                    out.push(step(
                        Step::Issued,
                        Done,
                        ready.and_then(|c| c.last_transition),
                        format!(
                            "issued: serial {}, valid until {}",
                            leaf.serial,
                            leaf.not_after.format("%Y-%m-%d")
                        ),
                    ));
                    Some(leaf.sha256.to_string())
                }
                _ if req.failure_time.is_some()
                    || ready.is_some_and(|c| {
                        matches!(c.reason.as_deref(), Some("Failed" | "Denied"))
                    }) =>
                {
                    out.push(step(
                        Step::Issued,
                        Failed,
                        req.failure_time,
                        format!(
                            "the request failed: {}",
                            ready
                                .and_then(|c| c.message.as_deref())
                                .unwrap_or("no reason given")
                        ),
                    ));
                    None
                }
                _ => {
                    out.push(step(
                        Step::Issued,
                        Pending,
                        None,
                        "waiting for the certificate".into(),
                    ));
                    None
                }
            }
        }
    };
    if !expects_issuance || attempt.is_some() {
        if attempt.is_none() {
            let ready = chain.certificate.ready.as_ref().filter(|r| r.is_true());
            out.push(match ready {
                Some(r) => step(
                    Step::Issued,
                    Done,
                    r.last_transition,
                    "the certificate is Ready".into(),
                ),
                None => step(
                    Step::Issued,
                    Pending,
                    None,
                    "the certificate is not Ready".into(),
                ),
            });
        }
        let hosts: Vec<&Observation> = served
            .iter()
            .filter(|o| {
                chain
                    .certificate
                    .dns_names
                    .iter()
                    .any(|n| crate::model::probe::name_matches(n, &o.host))
            })
            .collect();
        let served_step = match (&issued_leaf, hosts.is_empty(), probed) {
            (_, true, false) => step(
                Step::Served,
                Skipped,
                None,
                "the probe has not looked at these hosts (it is off, or has not run yet)".into(),
            ),
            (None, _, _) => step(
                Step::Served,
                Pending,
                None,
                "waiting for the certificate to be issued".into(),
            ),
            (Some(_), true, true) => step(
                Step::Served,
                Pending,
                None,
                "waiting for the probe to look at the hosts".into(),
            ),
            (Some(sha), false, _) => {
                // An address that answers nothing at all is not serving another certificate:
                // what fails there is the address (a separate problem), not this issuance.
                let (silent, answering): (Vec<&&Observation>, Vec<&&Observation>) = hosts
                    .iter()
                    .partition(|o| o.tls.is_none() && o.tls_error.is_some());
                let on = |o: &&&Observation| format!("{} on {}", o.host, o.address);
                let stale: Vec<String> = answering
                    .iter()
                    .filter(|o| {
                        o.tls
                            .as_ref()
                            .is_none_or(|t| &*t.leaf.sha256 != sha.as_str())
                    })
                    .map(on)
                    .collect();
                if stale.is_empty() && answering.is_empty() {
                    step(
                        Step::Served,
                        Pending,
                        None,
                        format!(
                            "no address of its hosts answers ({})",
                            silent.iter().map(on).collect::<Vec<_>>().join(", ")
                        ),
                    )
                } else if stale.is_empty() {
                    let at = answering.iter().map(|o| o.since).max();
                    let mut s = if silent.is_empty() {
                        step(
                            Step::Served,
                            Done,
                            at,
                            "every address of its hosts serves the new certificate".into(),
                        )
                    } else {
                        step(
                            Step::Served,
                            Done,
                            at,
                            format!(
                                "served on {}; no answer at all on {}",
                                answering.iter().map(on).collect::<Vec<_>>().join(", "),
                                silent.iter().map(on).collect::<Vec<_>>().join(", ")
                            ),
                        )
                    };
                    s.unanswered = silent.iter().map(on).collect();
                    s
                } else {
                    step(
                        Step::Served,
                        Pending,
                        None,
                        format!("still another certificate on {}", stale.join(", ")),
                    )
                }
            }
        };
        out.push(served_step);
    }
    let settled = if out.iter().any(|s| s.state == Failed) {
        Some(Settled::Failed)
    } else if out.iter().all(|s| matches!(s.state, Done | Skipped))
        && out
            .iter()
            .any(|s| s.step == Step::Issued && s.state == Done)
    {
        Some(Settled::Ready)
    } else {
        None
    };
    (out, settled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::certificate::CertificateView;
    use crate::model::chain::{OrderChain, RequestChain};
    use crate::model::ingress::IngressView;
    use crate::model::issuer::AcmeServer;
    use crate::model::probe::{IssuedLeaf, ServedCertificate, TlsObservation};
    use crate::model::rules::fixtures::{attempt, cond, now};

    /// shop-tls with the attempt the action started 40 minutes ago (the fixtures' attempt
    /// is 30 minutes old): its order in `order_state`, one challenge.
    fn chain(order_state: &str, challenge: (&str, &str), issued: Option<&str>) -> CertificateChain {
        let ing = IngressView::test("shop")
            .in_ns("acme")
            .tls("shop.example.com");
        let cert = CertificateView::of(&ing);
        let (mut request, order, ch) = attempt(
            &cert,
            order_state,
            None,
            Some((challenge.0, challenge.1, Duration::minutes(20))),
        );
        if let Some(sha) = issued {
            request.ready = Some(cond("Ready", "True", "Issued", "issued", Some(now())));
            request.issued = Some(Box::new(IssuedLeaf {
                sha256: sha.into(),
                serial: "0B".into(),
                not_after: now() + Duration::days(90),
            }));
        }
        CertificateChain {
            certificate: cert,
            issuer: None,
            server: AcmeServer::LetsEncryptProduction,
            requests: vec![RequestChain {
                request,
                current: true,
                orders: vec![OrderChain {
                    order,
                    challenges: ch.into_iter().collect(),
                }],
                held_by: None,
            }],
        }
    }

    fn served(sha: &str) -> Observation {
        Observation {
            host: "shop.example.com".into(),
            address: "192.0.2.1".parse().unwrap(),
            sources: Vec::new(),
            since: now(),
            tls: Some(TlsObservation {
                leaf: ServedCertificate {
                    subject: "CN=shop.example.com".into(),
                    names: vec!["shop.example.com".into()],
                    issuer: "CN=R10".into(),
                    serial: "0B".into(),
                    not_before: now(),
                    not_after: now() + Duration::days(90),
                    sha256: sha.into(),
                },
                chain_len: 2,
                untrusted: None,
                version: "TLSv1.3".into(),
            }),
            tls_error: None,
            needs_proxy_header: false,
            acme: None,
            acme_error: None,
        }
    }

    fn states(steps: &[ProgressStep]) -> Vec<(&'static str, StepState)> {
        steps.iter().map(|s| (s.step.label(), s.state)).collect()
    }

    fn since() -> DateTime<Utc> {
        now() - Duration::minutes(40)
    }

    #[test]
    fn under_way_it_says_what_it_waits_for() {
        let c = chain("pending", ("pending", ""), None);
        let (steps, settled) = follow_through(&c, &[], true, since(), Expects::NewRequest);
        assert_eq!(settled, None);
        assert_eq!(
            states(&steps),
            [
                ("request", StepState::Done),
                ("order", StepState::Pending),
                ("challenge", StepState::Pending),
                ("issued", StepState::Pending),
                ("served", StepState::Pending),
            ]
        );
        assert!(
            steps[2].detail.contains("shop.example.com"),
            "{}",
            steps[2].detail
        );
    }

    /// A request made again under its predecessor's name waits for the old Order, which
    /// holds the name of its own, to be removed: the progress says so.
    #[test]
    fn a_restarted_request_says_it_waits_for_the_old_order() {
        let mut c = chain("pending", ("pending", ""), None);
        c.requests[0].orders.clear();
        c.requests[0].held_by = Some("shop-tls-1-2931474853".into());
        let (steps, settled) = follow_through(&c, &[], true, since(), Expects::NewRequest);
        let order = steps.iter().find(|s| s.step == Step::Order).unwrap();
        assert_eq!(order.state, StepState::Pending);
        assert!(
            order
                .detail
                .starts_with("waiting for the old Order shop-tls-1-2931474853 to be removed"),
            "{}",
            order.detail
        );
        assert_eq!(settled, None);
    }

    #[test]
    fn a_failed_challenge_settles_it_failed_with_the_cas_words() {
        let c = chain(
            "invalid",
            (
                "invalid",
                "Invalid response from https://shop.example.com/.well-known/acme-challenge/x: 404",
            ),
            None,
        );
        let (steps, settled) = follow_through(&c, &[], true, since(), Expects::NewRequest);
        assert_eq!(settled, Some(Settled::Failed));
        let failed = steps.iter().find(|s| s.step == Step::Challenge).unwrap();
        assert_eq!(failed.state, StepState::Failed);
        assert!(
            failed.detail.contains("Invalid response"),
            "{}",
            failed.detail
        );
    }

    /// Served on IPv4 while IPv6 answers nothing at all (another problem: the address, not
    /// the certificate): settled, with the silent address told apart; an address serving
    /// another certificate still holds it open, and no answer anywhere is not served.
    #[test]
    fn a_fix_that_worked_settles_where_the_hosts_answer() {
        let sha = "ab".repeat(32);
        let c = chain("valid", ("valid", ""), Some(&sha));
        let mut silent = served(&sha);
        silent.address = "2001:db8::1".parse().unwrap();
        silent.tls = None;
        silent.tls_error = Some(crate::model::probe::ProbeError::Timeout);
        let (steps, settled) = follow_through(
            &c,
            &[served(&sha), silent.clone()],
            true,
            since(),
            Expects::NewRequest,
        );
        assert_eq!(settled, Some(Settled::Ready), "{steps:#?}");
        let last = steps.last().unwrap();
        assert_eq!(last.unanswered, ["shop.example.com on 2001:db8::1"]);
        assert!(last.detail.contains("no answer at all"), "{}", last.detail);
        let (_, settled) = follow_through(
            &c,
            &[served(&"cd".repeat(32)), silent.clone()],
            true,
            since(),
            Expects::NewRequest,
        );
        assert_eq!(settled, None, "another certificate still served");
        let (steps, settled) = follow_through(&c, &[silent], true, since(), Expects::NewRequest);
        assert_eq!(settled, None, "{steps:#?}");
    }

    #[test]
    fn issued_is_not_ready_until_the_host_serves_it() {
        let sha = "ab".repeat(32);
        let c = chain("valid", ("valid", ""), Some(&sha));
        let (steps, settled) = follow_through(
            &c,
            &[served(&"cd".repeat(32))],
            true,
            since(),
            Expects::NewRequest,
        );
        assert_eq!(settled, None, "{steps:#?}");
        assert_eq!(steps.last().unwrap().state, StepState::Pending);
        let (steps, settled) =
            follow_through(&c, &[served(&sha)], true, since(), Expects::NewRequest);
        assert_eq!(settled, Some(Settled::Ready), "{steps:#?}");
        // Without the probe: issued is as far as Lookout can tell.
        let (steps, settled) = follow_through(&c, &[], false, since(), Expects::NewRequest);
        assert_eq!(steps.last().unwrap().state, StepState::Skipped);
        assert_eq!(settled, Some(Settled::Ready));
    }

    /// The fix that had the in-flight challenge solved again follows that request, though it
    /// was made before the action.
    #[test]
    fn a_challenge_solved_again_in_place_is_followed_on_the_request_in_flight() {
        let sha = "ab".repeat(32);
        let c = chain("valid", ("valid", ""), Some(&sha));
        let (steps, settled) = follow_through(&c, &[served(&sha)], true, now(), Expects::InFlight);
        assert_eq!(steps[0].state, StepState::Done, "{steps:#?}");
        assert_eq!(settled, Some(Settled::Ready));
        let (steps, _) = follow_through(&c, &[served(&sha)], true, now(), Expects::NewRequest);
        assert_eq!(
            steps[0].state,
            StepState::Pending,
            "a new request is awaited"
        );
    }

    #[test]
    fn a_request_from_before_the_action_is_not_its_follow_through() {
        let c = chain("invalid", ("invalid", "old failure"), None);
        // The action ran after that attempt: it waits for a new request.
        let (steps, settled) = follow_through(&c, &[], true, now(), Expects::NewRequest);
        assert_eq!(states(&steps), [("request", StepState::Pending)]);
        assert_eq!(settled, None);
    }
}

//! What an issuance waits on, as cert-manager words it: an approver (`cert.awaiting-approval`,
//! `cert.request-denied`), a solver (`acme.no-solver`), a challenge slot
//! (`acme.challenges-queued`), and the backoff a changed spec skips.

use std::sync::Arc;

use chrono::Duration;

use super::shop;
use crate::model::certificate::{CertificateRequestView, CertificateView};
use crate::model::data::key;
use crate::model::rules::fixtures::{ago, attempt, cond, World};
use crate::model::Rule;

/// Shop's Certificate issuing, with only its next request (no Order yet) as `adjust` makes it.
fn with_request(cert: CertificateView, adjust: impl FnOnce(&mut CertificateRequestView)) -> World {
    let (mut request, _, _) = attempt(&cert, "pending", None, None);
    adjust(&mut request);
    let mut w = World::new().certificate(cert).ingress(shop());
    w.data
        .requests
        .insert(key(&request.namespace, &request.name), Arc::new(request));
    w
}

fn unapproved(r: &mut CertificateRequestView) {
    r.approved = false;
    r.ready = None;
}

#[test]
fn a_request_left_unapproved_is_told_after_two_minutes() {
    let cert = CertificateView::of(&shop()).issuing();
    let w = with_request(cert.clone(), |r| {
        unapproved(r);
        r.created = ago(Duration::minutes(10));
    });
    assert_eq!(w.fired(Rule::CertAwaitingApproval).len(), 1);
    let f = w
        .findings()
        .into_iter()
        .find(|f| f.rule == Rule::CertAwaitingApproval)
        .unwrap();
    assert!(f.message.contains("shop-tls-2"), "{}", f.message);
    assert!(f.remediation.contains("cmctl approve"), "{}", f.remediation);
    // A moment old: cert-manager's approver has not had its turn yet.
    let w = with_request(cert.clone(), |r| {
        unapproved(r);
        r.created = ago(Duration::seconds(20));
    });
    assert!(w.fired(Rule::CertAwaitingApproval).is_empty());
    // Approved, as cert-manager's own approver does: nothing to say.
    let w = with_request(cert, |r| r.created = ago(Duration::minutes(10)));
    assert!(w.fired(Rule::CertAwaitingApproval).is_empty());
    assert!(w.fired(Rule::CertRequestDenied).is_empty());
}

#[test]
fn a_denied_request_quotes_the_policy_and_is_the_root() {
    let cert = CertificateView::of(&shop()).failing(2, Duration::minutes(30));
    let w = with_request(cert, |r| {
        r.approved = false;
        r.denied = Some(Box::new(cond(
            "Denied",
            "True",
            "policy.cert-manager.io",
            "No policy approved this request: [allowed-domains: spec.allowed.dnsNames.values: Invalid value: [\"shop.example.com\"]: *.internal.example]",
            ago(Duration::hours(3)),
        )));
    });
    assert_eq!(w.fired(Rule::CertRequestDenied).len(), 1);
    let f = w
        .findings()
        .into_iter()
        .find(|f| f.rule == Rule::CertRequestDenied)
        .unwrap();
    assert!(f.message.contains("allowed-domains"), "{}", f.message);
    assert!(
        f.title.ends_with("denied by approver-policy"),
        "{}",
        f.title
    );
    assert!(
        f.message
            .starts_with("The approver said: \"No policy approved this request"),
        "{}",
        f.message
    );
    assert!(w.fired(Rule::CertAwaitingApproval).is_empty());
}

/// `acme.no-solver`: a pending Order without Challenges, and the Order controller's Warning
/// `Solver` event; quiet once the Order has its Challenges.
#[test]
fn an_order_no_solver_fits_is_told_with_the_controllers_words() {
    let cert = CertificateView::of(&shop())
        .issuing()
        .dns(&["*.shop.example.com"]);
    let (request, order, _) = attempt(&cert, "pending", None, None);
    let order_name = order.name.to_string();
    let w = World::new()
        .certificate(cert.clone())
        .ingress(shop())
        .attempt((request, order, None))
        .event(
            "Order",
            "acme",
            &order_name,
            "Solver",
            "Failed to determine a valid solver configuration for the set of domains on the Order: no configured challenge solvers can be used for this challenge",
        );
    let found: Vec<_> = w
        .findings()
        .into_iter()
        .filter(|f| f.rule == Rule::AcmeNoSolver)
        .collect();
    assert_eq!(found.len(), 1, "{:#?}", w.findings());
    assert_eq!(&*found[0].name, "shop-tls");
    assert!(
        found[0].title.contains("*.shop.example.com"),
        "{}",
        found[0].title
    );
    assert!(
        found[0].remediation.contains("DNS-01"),
        "{}",
        found[0].remediation
    );
    // Without the event (the controller has not said so) nothing is inferred.
    let (request, order, _) = attempt(&cert, "pending", None, None);
    let w = World::new()
        .certificate(cert.clone())
        .ingress(shop())
        .attempt((request, order, None));
    assert!(w.fired(Rule::AcmeNoSolver).is_empty());
    // With a Challenge, the Order was solved: the event is old news.
    let (request, order, challenge) = attempt(
        &cert,
        "pending",
        None,
        Some(("pending", "", Duration::minutes(1))),
    );
    let w = World::new()
        .certificate(cert)
        .ingress(shop())
        .attempt((request, order, challenge))
        .event("Order", "acme", &order_name, "Solver", "Failed to determine a valid solver configuration for the set of domains on the Order: x");
    assert!(w.fired(Rule::AcmeNoSolver).is_empty());
}

/// After a failure cert-manager waits out the backoff — unless the spec changed since the
/// failed request (a new issuer: staging to production), then it retries now; the finding
/// says which.
#[test]
fn the_next_retry_is_now_when_the_spec_changed_since_the_failed_request() {
    let cert = CertificateView::of(&shop()).failing(2, Duration::minutes(10));
    let failed = |w: &World| {
        w.findings()
            .into_iter()
            .find(|f| f.rule == Rule::CertIssuanceFailing)
            .unwrap()
            .message
            .to_string()
    };
    // The failed request asked for what the Certificate still says: the backoff holds.
    let w = with_request(cert.clone(), |_| {});
    let message = failed(&w);
    assert!(message.contains("(1h·2^(n−1)"), "{message}");
    assert!(!message.contains("retries now"), "{message}");
    // The issuer changed since: now.
    let w = with_request(cert.clone(), |r| {
        let mut other = (**r.issuer.as_ref().unwrap()).clone();
        other.name = "letsencrypt-staging".into();
        r.issuer = Some(Arc::new(other));
    });
    let message = failed(&w);
    assert!(
        message.contains("retries now, without waiting for the backoff: the issuer changed"),
        "{message}"
    );
    // The names changed since: now.
    let w = with_request(cert, |r| {
        r.names = vec![crate::model::text::Text::from("old.example.com")].into()
    });
    assert!(failed(&w).contains("the names changed"), "{}", failed(&w));
}

/// A Challenge waiting for one of cert-manager's slots is queued, not stuck — however long it
/// waits; one cert-manager processes without a word for that long is stuck.
#[test]
fn a_challenge_waiting_for_a_slot_is_queued_not_stuck() {
    let cert = CertificateView::of(&shop()).issuing();
    let world = |processing: bool, age: Duration| {
        let (r, o, ch) = attempt(&cert, "pending", None, Some(("", "", age)));
        let ch = ch.map(|c| crate::model::certificate::ChallengeView {
            processing,
            presented: processing,
            ..c
        });
        World::new()
            .attempt((r, o, ch))
            .certificate(cert.clone())
            .ingress(shop())
    };
    let w = world(false, Duration::minutes(40));
    assert_eq!(w.fired(Rule::AcmeChallengesQueued).len(), 1);
    assert!(w.fired(Rule::AcmeChallengeStuck).is_empty());
    let f = w
        .findings()
        .into_iter()
        .find(|f| f.rule == Rule::AcmeChallengesQueued)
        .unwrap();
    assert!(
        f.message.contains("--max-concurrent-challenges"),
        "{}",
        f.message
    );
    // Just made: the scheduler has not had its turn.
    let w = world(false, Duration::seconds(30));
    assert!(w.fired(Rule::AcmeChallengesQueued).is_empty());
    // Processing, and silent for 40 minutes: stuck.
    let w = world(true, Duration::minutes(40));
    assert!(w.fired(Rule::AcmeChallengesQueued).is_empty());
    assert_eq!(w.fired(Rule::AcmeChallengeStuck).len(), 1);
}

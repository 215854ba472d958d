//! `cert.awaiting-approval` and `cert.request-denied`: a request no approver has decided on,
//! and one a policy denied — and a request approved at once is neither.

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
    assert!(f.title.contains("policy.cert-manager.io"), "{}", f.title);
    assert!(w.fired(Rule::CertAwaitingApproval).is_empty());
}

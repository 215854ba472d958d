//! `acme.challenge-failing` read in context: what the text shows, what the chain adds, and
//! that only a redirect (seen, or inferred from Cilium's HTTPS enforcement) leads to the
//! edit-in-place fix — checked against every real text in `../shared/real-texts.json`.

use crate::model::Rule;
use chrono::Duration;

use crate::model::certificate::{CertificateView, ChallengeView};
use crate::model::finding::{Finding, Severity};
use crate::model::ingress::IngressView;
use crate::model::rules::fixtures::{attempt, World};

const NOT_FOUND: &str =
    "Waiting for HTTP-01 challenge propagation: wrong status code '404', expected '200'";

fn shop() -> IngressView {
    IngressView::test("shop")
        .in_ns("acme")
        .with_issuer("letsencrypt-prod")
        .tls("shop.example.com")
}

/// A world where `ing`'s certificate (issuing) has one pending challenge failing with
/// `reason` for 20 minutes; `in_place` names the Ingress its solver edits, if any.
fn failing(ing: IngressView, reason: &str, in_place: Option<&str>) -> World {
    let cert = CertificateView::of(&ing).issuing();
    let (r, o, ch) = attempt(
        &cert,
        "pending",
        None,
        Some(("pending", reason, Duration::minutes(20))),
    );
    let ch = ch.map(|c| ChallengeView {
        in_place_ingress: in_place.map(Into::into),
        gateway_parents: None,
        ..c
    });
    World::new()
        .attempt((r, o, ch))
        .certificate(cert)
        .ingress(ing)
}

fn challenge_finding(w: &World) -> Finding {
    w.findings()
        .into_iter()
        .find(|f| f.rule == Rule::AcmeChallengeFailing)
        .expect("acme.challenge-failing fired")
}

fn suggests_edit_in_place(f: &Finding) -> bool {
    f.remediation.contains("http01-edit-in-place")
}

#[test]
fn a_404_behind_cilium_https_enforcement_is_likely_a_redirect_and_the_fix_restarts() {
    let w = failing(shop(), NOT_FOUND, None);
    let f = challenge_finding(&w);
    assert_eq!(f.severity, Severity::Critical);
    assert!(f.title.contains("404 Not Found"), "{}", f.title);
    assert!(
        f.message.contains("Likely a redirect to HTTPS"),
        "{}",
        f.message
    );
    assert!(f.message.contains("HTTPS enforcement on"), "{}", f.message);
    assert!(suggests_edit_in_place(&f), "{}", f.remediation);
    // Issuing=True: the pending challenge never heals; the request must be replaced.
    assert!(
        f.remediation
            .contains("deleting CertificateRequest shop-tls-2"),
        "{}",
        f.remediation
    );
    assert!(!f.remediation.contains("Then renew"), "{}", f.remediation);
    assert_eq!(w.fired(Rule::IngressEditInPlaceMissing).len(), 1);
    assert_eq!(
        w.findings()
            .iter()
            .find(|f| f.rule == Rule::IngressEditInPlaceMissing)
            .unwrap()
            .severity,
        Severity::Critical
    );
}

/// An annotation cert-manager reads as false ("yes") is the missing one's case: where its
/// challenges fail behind the redirect it is critical, so issuing again is not offered
/// until it is fixed.
#[test]
fn an_ignored_value_behind_the_redirect_is_as_critical_as_a_missing_one() {
    let w = failing(shop().edit_in_place("yes"), NOT_FOUND, None);
    let f = w
        .findings()
        .into_iter()
        .find(|f| f.rule == Rule::IngressEditInPlaceInvalid)
        .expect("fired");
    assert_eq!(f.severity, Severity::Critical);
    assert!(
        f.message.contains("failing now: shop.example.com"),
        "{}",
        f.message
    );
    assert!(w.fired(Rule::IngressEditInPlaceMissing).is_empty());
    // Set, but the Certificate was made without the override: the same.
    let ing = shop().edit_in_place("true");
    let cert = CertificateView::of(&ing).without_override().issuing();
    let (r, o, ch) = attempt(
        &cert,
        "pending",
        None,
        Some(("pending", NOT_FOUND, Duration::minutes(20))),
    );
    let w = World::new()
        .attempt((r, o, ch))
        .certificate(cert)
        .ingress(ing);
    let f = w
        .findings()
        .into_iter()
        .find(|f| f.rule == Rule::IngressEditInPlaceNotEffective)
        .expect("fired");
    assert_eq!(f.severity, Severity::Critical, "{}", f.message);
    // Without a failing challenge it stays a warning (the next renewal's risk).
    let calm = World::new().ingress(shop().edit_in_place("yes"));
    assert_eq!(
        calm.findings()
            .into_iter()
            .find(|f| f.rule == Rule::IngressEditInPlaceInvalid)
            .unwrap()
            .severity,
        Severity::Warning
    );
}

/// After the Order fails, cert-manager deletes its Challenges and waits out its backoff:
/// nothing shows a failing challenge any more, but the Certificate's status keeps the
/// failure. Behind the redirect its retry fails the same way, so the annotation's absence
/// (or ignored value, or a fix not yet on the Certificate) stays critical — and renewing,
/// which only brings the retry forward, is not offered.
#[test]
fn a_failed_issuance_whose_challenges_are_gone_keeps_the_annotation_critical() {
    let severity = |w: &World, rule: Rule| {
        w.findings()
            .into_iter()
            .find(|f| f.rule == rule)
            .map(|f| (f.severity, f.message))
    };
    for (ing, rule) in [
        (shop(), Rule::IngressEditInPlaceMissing),
        (shop().edit_in_place("yes"), Rule::IngressEditInPlaceInvalid),
        (
            shop().edit_in_place("true"),
            Rule::IngressEditInPlaceNotEffective,
        ),
    ] {
        let cert = CertificateView::of(&ing)
            .without_override()
            .failing(1, Duration::minutes(10));
        let w = World::new().certificate(cert.clone()).ingress(ing.clone());
        let (sev, message) = severity(&w, rule).expect("fired");
        assert_eq!(sev, Severity::Critical, "{rule:?}: {message}");
        assert!(message.contains("its last issuance failed"), "{message}");
        let findings = std::sync::Arc::new(w.findings());
        let problems = crate::model::read::problems::cluster_problems(
            &w.facts,
            &w.data,
            &findings,
            crate::model::rules::fixtures::now(),
        );
        assert!(
            matches!(
                crate::model::read::offer::issue_again(&cert, Some(&ing.name), &problems),
                crate::model::read::offer::Offer::Blocked(p) if p.cause == rule
            ),
            "{rule:?}: renew offered"
        );
        // Never failed: the next renewal's risk, a warning.
        let calm = World::new()
            .certificate(CertificateView::of(&ing).without_override())
            .ingress(ing.clone());
        assert_eq!(severity(&calm, rule).expect("fired").0, Severity::Warning);
        // Without HTTPS enforcement (shared mode) the redirect does not explain the failure.
        let mut shared = ing.clone().force_https("disabled");
        shared.rare.make_mut().lb_mode = Some("shared".into());
        let w = World::new()
            .certificate(CertificateView::of(&shared).failing(1, Duration::minutes(10)))
            .ingress(shared);
        assert!(
            severity(&w, rule).is_none_or(|(s, _)| s == Severity::Warning),
            "{rule:?}"
        );
    }
}

#[test]
fn a_certificate_in_backoff_is_renewed_not_restarted() {
    let ing = shop();
    let cert = CertificateView::of(&ing).failing(1, Duration::minutes(10));
    let w = World::new()
        .attempt(attempt(
            &cert,
            "invalid",
            None,
            Some(("invalid", "Error accepting authorization: acme: authorization error for shop.example.com: 403 urn:ietf:params:acme:error:unauthorized: 203.0.113.10: Invalid response from https://shop.example.com/.well-known/acme-challenge/x: 404", Duration::minutes(15))),
        ))
        .certificate(cert)
        .ingress(ing);
    let f = challenge_finding(&w);
    assert!(f.title.contains("redirected to HTTPS"), "{}", f.title);
    assert!(
        f.message.starts_with("The challenge is invalid"),
        "{}",
        f.message
    );
    assert!(f.message.contains("Observed:"), "{}", f.message);
    assert!(
        f.remediation.contains("renew Certificate shop-tls"),
        "{}",
        f.remediation
    );
}

#[test]
fn a_404_without_https_enforcement_is_not_blamed_on_edit_in_place() {
    // Cilium's default, dedicated mode: the separate solver Ingress has its own address.
    let w = failing(shop().force_https("disabled"), NOT_FOUND, None);
    let f = challenge_finding(&w);
    assert!(
        f.message.contains("Likely the solver's own address"),
        "{}",
        f.message
    );
    assert!(suggests_edit_in_place(&f), "{}", f.remediation);
    // Shared mode without HTTPS enforcement: the solver Ingress is served; a 404 is
    // something else.
    let mut shared = shop().force_https("disabled");
    shared.rare.make_mut().lb_mode = Some("shared".into());
    let w = failing(shared, NOT_FOUND, None);
    let f = challenge_finding(&w);
    assert!(!f.message.contains("redirect"), "{}", f.message);
    assert!(!suggests_edit_in_place(&f), "{}", f.remediation);
    // The Ingress still lacks the annotation, but no failing challenge is its fault.
    let missing = w
        .findings()
        .into_iter()
        .find(|f| f.rule == Rule::IngressEditInPlaceMissing)
        .unwrap();
    assert_eq!(missing.severity, Severity::Warning);
}

#[test]
fn a_challenge_already_in_place_is_not_told_to_add_edit_in_place() {
    let ing = shop().edit_in_place("true");
    let w = failing(ing.clone(), NOT_FOUND, Some("shop"));
    assert!(!suggests_edit_in_place(&challenge_finding(&w)));
    let w = failing(
        ing,
        "Waiting for HTTP-01 challenge propagation: failed to perform self check GET request 'http://shop.example.com/.well-known/acme-challenge/x': Get \"https://shop.example.com/.well-known/acme-challenge/x\": EOF",
        Some("shop"),
    );
    let f = challenge_finding(&w);
    assert!(
        f.message
            .contains("already solved in place on Ingress shop"),
        "{}",
        f.message
    );
    assert!(!suggests_edit_in_place(&f), "{}", f.remediation);
}

#[test]
fn the_failure_is_exposed_with_the_challenge() {
    let w = failing(shop(), NOT_FOUND, None);
    let ch = w.data.challenges.values().next().unwrap();
    let json = serde_json::to_value(&**ch).unwrap();
    assert_eq!(json["failure"]["class"], "not-found");
    assert_eq!(json["failure"]["label"], "404 Not Found");
}

/// Every real text on a failing HTTP-01 challenge, in the context most suggestive of the
/// missing annotation (Cilium, HTTPS enforcement on, a separate solver): the DNS-01, CAA,
/// rate-limit and issuer texts never lead to edit-in-place, the texts whose root cause is a
/// redirect always do, and a text whose cause was edit-in-place itself never does once the
/// challenge is in place.
#[test]
fn real_texts_lead_to_edit_in_place_only_when_a_redirect_is_the_cause() {
    let mut wrong = Vec::new();
    for r in crate::model::failure::tests::real_texts() {
        let family = r.category.split('/').next().unwrap_or_default();
        let never =
            matches!(family, "dns01" | "rate-limit" | "issuer") || r.category.ends_with("caa");
        let w = failing(shop(), &r.text, None);
        let f = challenge_finding(&w);
        let suggested = suggests_edit_in_place(&f);
        if never && suggested {
            wrong.push(format!(
                "{} ({}) suggests edit-in-place: {}",
                r.id, r.category, f.remediation
            ));
        }
        if r.relevance.as_deref() == Some("relevant") && !suggested {
            wrong.push(format!(
                "{} ({}) does not suggest edit-in-place",
                r.id, r.category
            ));
        }
        if r.relevance.as_deref() == Some("harmful") {
            let in_place = failing(shop().edit_in_place("true"), &r.text, Some("shop"));
            if suggests_edit_in_place(&challenge_finding(&in_place)) {
                wrong.push(format!(
                    "{} ({}) suggests edit-in-place although it is the cause",
                    r.id, r.category
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_challenge_made_before_the_fix_is_named_until_its_request_is_replaced() {
    // Ingress and Certificate fixed, the challenge still the old one (no in-place solver).
    let ing = shop().edit_in_place("true");
    let w = failing(ing.clone(), NOT_FOUND, None);
    let f: Vec<Finding> = w
        .findings()
        .into_iter()
        .filter(|f| f.rule == Rule::IngressEditInPlaceNotEffective)
        .collect();
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!(f[0].severity, Severity::Critical);
    assert!(f[0].title.contains("shop-tls-2-123-456"), "{}", f[0].title);
    assert!(
        f[0].remediation.contains("Restart issuance"),
        "{}",
        f[0].remediation
    );
    // The new challenge, solved in place: nothing to say.
    let w = failing(ing, NOT_FOUND, Some("shop"));
    assert!(w.fired(Rule::IngressEditInPlaceNotEffective).is_empty());
}

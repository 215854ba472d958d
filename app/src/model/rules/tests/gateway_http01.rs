//! The Gateway rules about HTTP-01: `gateway.http01-route-unreachable` (a solver route no
//! port-80 listener serves) and `gateway.acme-path-redirected` (a port-80 redirect in front
//! of an Ingress solver), positive and negative.

use std::sync::Arc;

use chrono::Duration;

use super::gateway::{shop_certificate, with_gateway};
use crate::model::certificate::CertificateView;
use crate::model::finding::Severity;
use crate::model::ingress::IngressView;
use crate::model::rules::fixtures::{ago, cond, World};
use crate::model::Rule;

use crate::model::certificate::ParentRef;
use crate::model::infra::{HttpListener, RoutesFrom};
use crate::model::rules::fixtures::attempt;

/// A Certificate for shop.example.com (ready or not) whose pending HTTP-01 challenge's
/// solver attaches to `parents`, and Gateway `acme/gw` with `http` listeners.
pub(super) fn gateway_challenge(
    ready: bool,
    parents: Vec<ParentRef>,
    http: Vec<HttpListener>,
) -> World {
    let ing = IngressView::test("shop")
        .in_ns("acme")
        .with_issuer("letsencrypt-prod")
        .tls("shop.example.com");
    let mut cert = CertificateView::of(&ing);
    if !ready {
        cert = cert.not_ready("DoesNotExist", Duration::minutes(10));
    }
    let (r, o, ch) = attempt(
        &cert,
        "pending",
        None,
        Some(("pending", "", Duration::minutes(5))),
    );
    let mut ch = ch.unwrap();
    ch.gateway_parents = Some(parents.into_boxed_slice());
    let mut w = with_gateway(
        World::new().certificate(cert),
        Some(("True", "ResolvedRefs", "")),
    )
    .attempt((r, o, Some(ch)));
    let gw = w.data.gateways.values_mut().next().unwrap();
    Arc::make_mut(gw).http_listeners = http;
    w
}

pub(super) fn parent(ns: &str, name: &str, section: Option<&str>) -> ParentRef {
    ParentRef {
        kind: "Gateway".into(),
        namespace: ns.into(),
        name: name.into(),
        section: section.map(Into::into),
        port: None,
    }
}

pub(super) fn http(
    name: &str,
    port: u16,
    hostname: Option<&str>,
    from: RoutesFrom,
) -> HttpListener {
    HttpListener {
        name: name.into(),
        hostname: hostname.map(Into::into),
        port,
        from,
    }
}

pub(super) fn unreachable(w: &World) -> Vec<crate::model::Finding> {
    w.findings()
        .into_iter()
        .filter(|f| f.rule == Rule::GatewayHttp01RouteUnreachable)
        .collect()
}

#[test]
fn a_solver_route_no_port_80_listener_serves_is_unreachable_and_says_why() {
    // The Gateway has only its HTTPS listener.
    let w = gateway_challenge(false, vec![parent("acme", "gw", None)], Vec::new());
    let found = unreachable(&w);
    assert_eq!(found.len(), 1, "{found:?}");
    let f = &found[0];
    assert_eq!(f.severity, Severity::Critical);
    assert_eq!(f.kind.to_string(), "Challenge");
    assert!(
        f.message
            .contains("attaches to acme/gw: Gateway acme/gw has no HTTP listener"),
        "{}",
        f.message
    );
    assert!(
        f.remediation
            .contains("protocol HTTP, port 80, hostname shop.example.com"),
        "{}",
        f.remediation
    );
    // The renewal of a certificate that still serves: a warning.
    let w = gateway_challenge(true, vec![parent("acme", "gw", None)], Vec::new());
    assert_eq!(unreachable(&w)[0].severity, Severity::Warning);
    // Each way a listener refuses, in its own words.
    for (listener, parents, words) in [
        (
            http("http", 8080, None, RoutesFrom::All),
            vec![parent("acme", "gw", None)],
            "listener http of Gateway acme/gw is on port 8080",
        ),
        (
            http("http", 80, Some("www.example.com"), RoutesFrom::All),
            vec![parent("acme", "gw", None)],
            "serves hostname www.example.com, not shop.example.com",
        ),
        (
            http("http", 80, None, RoutesFrom::All),
            vec![parent("acme", "gw", Some("plain"))],
            "Gateway acme/gw has no HTTP listener named plain",
        ),
        (
            http("http", 80, None, RoutesFrom::All),
            vec![parent("acme", "other", None)],
            "Gateway acme/other does not exist",
        ),
        (
            http("http", 80, None, RoutesFrom::Same),
            vec![parent("acme", "gw", None)],
            "",
        ),
    ] {
        let mut w = gateway_challenge(false, parents, vec![listener]);
        if words.is_empty() {
            // The Gateway in another namespace than the solver's route, admitting its own only.
            let gw = w.data.gateways.values_mut().next().unwrap();
            Arc::make_mut(gw).namespace = "edge".into();
            let ch = w.data.challenges.values_mut().next().unwrap();
            Arc::make_mut(ch).gateway_parents =
                Some(vec![parent("edge", "gw", None)].into_boxed_slice());
            let gw = w
                .data
                .gateways
                .remove(&crate::model::data::key("acme", "gw"))
                .unwrap();
            w.data
                .gateways
                .insert(crate::model::data::key("edge", "gw"), gw);
        }
        let found = unreachable(&w);
        assert_eq!(found.len(), 1, "{words}: {found:?}");
        let words = if words.is_empty() {
            // Told to readers of namespace acme: edge's listeners are not theirs to read.
            assert!(
                !found[0].message.contains("listener http"),
                "{}",
                found[0].message
            );
            "Gateway edge/gw, in another namespace, offers no listener that serves shop.example.com over HTTP on port 80 to namespace acme (or does not exist)"
        } else {
            words
        };
        assert!(found[0].message.contains(words), "{}", found[0].message);
    }
}

#[test]
fn a_gateway_of_another_namespace_is_told_alike_whether_it_exists_or_what_it_listens_on() {
    // What a reader of the Challenge's namespace is told about Gateway edge/gw does not
    // depend on edge's listeners: each refusal, and a Gateway that is not there, read the same.
    let mut told = Vec::new();
    for listener in [
        None,
        Some(http("http", 8080, None, RoutesFrom::All)),
        Some(http(
            "secret-listener",
            80,
            Some("private.example.com"),
            RoutesFrom::All,
        )),
        Some(http("http", 80, None, RoutesFrom::Same)),
    ] {
        let mut w = gateway_challenge(false, vec![parent("edge", "gw", None)], Vec::new());
        let gw = w
            .data
            .gateways
            .remove(&crate::model::data::key("acme", "gw"))
            .unwrap();
        if let Some(l) = listener {
            let mut gw = (*gw).clone();
            gw.namespace = "edge".into();
            gw.http_listeners = vec![l];
            w.data
                .gateways
                .insert(crate::model::data::key("edge", "gw"), Arc::new(gw));
        }
        let found = unreachable(&w);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            !found[0].message.contains("private"),
            "{}",
            found[0].message
        );
        told.push(found[0].message.clone());
    }
    told.dedup();
    assert_eq!(told.len(), 1, "{told:?}");
    // Reachable in another namespace: nothing to say.
    let mut w = gateway_challenge(false, vec![parent("edge", "gw", None)], Vec::new());
    let gw = w
        .data
        .gateways
        .remove(&crate::model::data::key("acme", "gw"))
        .unwrap();
    let mut gw = (*gw).clone();
    gw.namespace = "edge".into();
    gw.http_listeners = vec![http("http", 80, None, RoutesFrom::All)];
    w.data
        .gateways
        .insert(crate::model::data::key("edge", "gw"), Arc::new(gw));
    assert!(unreachable(&w).is_empty());
}

#[test]
fn a_solver_route_a_port_80_listener_admits_or_another_solver_is_not_judged() {
    for (listener, parents) in [
        (
            http("http", 80, None, RoutesFrom::Same),
            vec![parent("acme", "gw", None)],
        ),
        (
            http("http", 80, Some("*.example.com"), RoutesFrom::All),
            vec![parent("acme", "gw", Some("http"))],
        ),
        // One parent that cannot serve it and one that can.
        (
            http("http", 80, None, RoutesFrom::Same),
            vec![parent("acme", "missing", None), parent("acme", "gw", None)],
        ),
        // Admitted by a selector Lookout cannot evaluate: not judged.
        (
            http("http", 80, None, RoutesFrom::Selector),
            vec![parent("acme", "gw", None)],
        ),
    ] {
        let w = gateway_challenge(false, parents.clone(), vec![listener.clone()]);
        assert!(unreachable(&w).is_empty(), "{listener:?} {parents:?}");
    }
    // A wildcard is a suffix: not the bare domain.
    let w = gateway_challenge(
        false,
        vec![parent("acme", "gw", None)],
        vec![http(
            "http",
            80,
            Some("*.shop.example.com"),
            RoutesFrom::All,
        )],
    );
    assert_eq!(unreachable(&w).len(), 1);
    // An Ingress solver's challenge (no parentRefs) is not this rule's.
    let mut w = gateway_challenge(false, Vec::new(), Vec::new());
    let ch = w.data.challenges.values_mut().next().unwrap();
    Arc::make_mut(ch).gateway_parents = None;
    assert!(unreachable(&w).is_empty());
}

use crate::model::route::{HttpRouteView, PathMatch, Redirect, RouteRule};

/// A route `name` in `acme` attached to Gateway `acme/gw` (listener `section`), answering
/// `hostnames`, with one rule: `paths` (empty: every path), redirecting to https or not.
pub(super) fn route(
    name: &str,
    section: Option<&str>,
    hostnames: &[&str],
    paths: &[(&str, &str)],
    redirect: bool,
) -> HttpRouteView {
    HttpRouteView {
        namespace: "acme".into(),
        name: name.into(),
        parents: vec![parent("acme", "gw", section)],
        hostnames: hostnames.iter().map(|h| (*h).into()).collect(),
        rules: vec![RouteRule {
            paths: paths
                .iter()
                .map(|(k, v)| PathMatch {
                    kind: (*k).into(),
                    value: (*v).into(),
                })
                .collect(),
            redirect: redirect.then(|| Redirect {
                scheme: Some("https".into()),
                status: Some(301),
            }),
        }],
        status: Vec::new(),
        solver: false,
        created: ago(Duration::days(1)),
    }
}

/// Gateway `acme/gw` serving shop.example.com over TLS with the ready Certificate of Ingress
/// `shop` (issued by an Ingress solver), a port-80 listener, and `routes`.
pub(super) fn redirected(routes: Vec<HttpRouteView>, owner: (&str, &str)) -> World {
    let issuer = crate::model::rules::fixtures::cluster_issuer(
        "letsencrypt-prod",
        crate::model::issuer::LE_PRODUCTION,
        true,
    );
    let mut w = with_gateway(
        World::new()
            .issuer(issuer)
            .certificate(shop_certificate(&["shop.example.com"], owner)),
        Some(("True", "ResolvedRefs", "")),
    );
    let gw = w.data.gateways.values_mut().next().unwrap();
    Arc::make_mut(gw).http_listeners = vec![http("http", 80, None, RoutesFrom::Same)];
    for r in routes {
        w.data
            .routes
            .insert(crate::model::data::key(&r.namespace, &r.name), Arc::new(r));
    }
    w
}

#[test]
fn a_port_80_redirect_in_front_of_an_ingress_solver_is_the_cause() {
    let w = redirected(
        vec![route("to-https", Some("http"), &[], &[], true)],
        ("Ingress", "shop"),
    );
    let found: Vec<_> = w
        .findings()
        .into_iter()
        .filter(|f| f.rule == Rule::GatewayAcmePathRedirected)
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    let f = &found[0];
    assert_eq!(
        (f.kind.to_string().as_str(), &*f.name),
        ("Certificate", "shop-tls")
    );
    assert_eq!(
        f.severity,
        Severity::Warning,
        "the old certificate still serves"
    );
    assert!(
        f.title.contains(
            "HTTP-01 for shop.example.com is redirected by HTTPRoute to-https on Gateway gw"
        ),
        "{}",
        f.title
    );
    assert!(
        f.message
            .contains("answers with the redirect 301 to https of HTTPRoute acme/to-https"),
        "{}",
        f.message
    );
    assert!(
        f.remediation
            .contains("give ClusterIssuer letsencrypt-prod a solver for shop.example.com that attaches to Gateway acme/gw's listener http"),
        "{}",
        f.remediation
    );
}

#[test]
fn a_redirect_of_another_namespace_is_told_without_its_names() {
    // The Gateway and its redirecting route live in `edge`; the listener was granted
    // `acme`'s Secret. Readers of `acme` learn that the path is redirected, not by what.
    let mut w = redirected(Vec::new(), ("Ingress", "shop"));
    let gw = w
        .data
        .gateways
        .remove(&crate::model::data::key("acme", "gw"))
        .unwrap();
    let mut gw = (*gw).clone();
    gw.namespace = "edge".into();
    gw.http_listeners = vec![http("edge-plain", 80, None, RoutesFrom::Same)];
    w.data
        .gateways
        .insert(crate::model::data::key("edge", "gw"), Arc::new(gw));
    let mut r = route("edge-to-https", Some("edge-plain"), &[], &[], true);
    r.namespace = "edge".into();
    r.parents = vec![parent("edge", "gw", Some("edge-plain"))];
    w.data.routes.insert(
        crate::model::data::key("edge", "edge-to-https"),
        Arc::new(r),
    );
    let found: Vec<_> = w
        .findings()
        .into_iter()
        .filter(|f| f.rule == Rule::GatewayAcmePathRedirected)
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    let f = &found[0];
    assert_eq!(&*f.namespace, "acme");
    assert_eq!(f.commands, None, "the change is the other namespace's");
    for told in [&f.title, &f.message, &f.remediation] {
        assert!(!told.contains("edge"), "{told}");
    }
    assert!(
        f.message
            .contains("a Gateway of another namespace, where its port-80 listener answers with the redirect 301 to https of an HTTPRoute of another namespace"),
        "{}",
        f.message
    );
    assert!(
        f.remediation.contains(
            "the port-80 listener of the Gateway that serves it (its owners know its name)"
        ),
        "{}",
        f.remediation
    );
}

#[test]
fn a_route_that_wins_over_the_redirect_or_a_gateway_solver_is_not_judged() {
    let redirect = || route("to-https", Some("http"), &[], &[("PathPrefix", "/")], true);
    for (extra, why) in [
        // A longer prefix for the challenge path, to an application.
        (
            Some(route(
                "acme",
                Some("http"),
                &[],
                &[("PathPrefix", "/.well-known/acme-challenge")],
                false,
            )),
            "a longer prefix",
        ),
        // An exact hostname beats the redirect's catch-all, whatever its path.
        (
            Some(route(
                "shop",
                None,
                &["shop.example.com"],
                &[("PathPrefix", "/")],
                false,
            )),
            "an exact hostname",
        ),
    ] {
        let w = redirected(vec![redirect(), extra.unwrap()], ("Ingress", "shop"));
        assert!(w.fired(Rule::GatewayAcmePathRedirected).is_empty(), "{why}");
    }
    // The redirect on the HTTPS listener only, or refused by the controller: port 80 is plain.
    let w = redirected(
        vec![route("to-https", Some("https"), &[], &[], true)],
        ("Ingress", "shop"),
    );
    assert!(w.fired(Rule::GatewayAcmePathRedirected).is_empty());
    let mut refused = redirect();
    refused.status = vec![(
        parent("acme", "gw", Some("http")),
        vec![cond(
            "Accepted",
            "False",
            "NotAllowedByListeners",
            "no",
            ago(Duration::hours(1)),
        )],
    )];
    let w = redirected(vec![refused], ("Ingress", "shop"));
    assert!(w.fired(Rule::GatewayAcmePathRedirected).is_empty());
    // gateway-shim's Certificate of this Gateway: its solver route attaches here and wins.
    let mut w = redirected(vec![redirect()], ("Gateway", "gw"));
    let issuer = w.data.cluster_issuers.values_mut().next().unwrap();
    Arc::make_mut(issuer).solvers = crate::model::solvers::project(
        &serde_json::json!({"spec": {"acme": {"solvers": [{"http01": {"gatewayHTTPRoute": {}}}]}}}),
        &mut crate::model::interner::Interner::default(),
    );
    assert!(w.fired(Rule::GatewayAcmePathRedirected).is_empty());
}

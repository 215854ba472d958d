//! A Gateway solver's self-check cut off by PROXY protocol: judged by Cilium's Gateway API
//! flag (`enable-gateway-api-proxy-protocol`), not the Ingress one.

use std::sync::Arc;

use chrono::Duration;

use super::gateway_http01::{http, parent};
use crate::model::certificate::CertificateView;
use crate::model::infra::RoutesFrom;
use crate::model::ingress::IngressView;
use crate::model::rules::fixtures::{attempt, World};
use crate::model::Rule;

const EOF: &str = "Waiting for HTTP-01 challenge propagation: failed to perform self check GET request 'http://shop.example.com/.well-known/acme-challenge/abc': Get \"http://shop.example.com/.well-known/acme-challenge/abc\": EOF";

/// A Challenge of a Gateway solver that reaches a port-80 listener, cut off with EOF, in a
/// cluster whose cilium-config sets the Ingress flag and the Gateway flag as given.
fn cut_off(ingress_flag: bool, gateway_flag: Option<bool>, through_gateway: bool) -> String {
    let ing = IngressView::test("shop")
        .in_ns("acme")
        .with_issuer("letsencrypt-prod")
        .tls("shop.example.com");
    let cert = CertificateView::of(&ing).not_ready("DoesNotExist", Duration::minutes(30));
    let (r, o, ch) = attempt(
        &cert,
        "pending",
        None,
        Some(("pending", EOF, Duration::minutes(20))),
    );
    let mut ch = ch.unwrap();
    if through_gateway {
        ch.gateway_parents = Some(vec![parent("acme", "gw", None)].into_boxed_slice());
    }
    let mut w = super::gateway::with_gateway(
        World::new().certificate(cert),
        Some(("True", "ResolvedRefs", "")),
    )
    .attempt((r, o, Some(ch)));
    let gw = w.data.gateways.values_mut().next().unwrap();
    Arc::make_mut(gw).http_listeners = vec![http("http", 80, None, RoutesFrom::All)];
    let cfg = w.data.cilium_configs.values_mut().next().unwrap();
    let cfg = Arc::make_mut(cfg);
    cfg.proxy_protocol = Some(ingress_flag);
    cfg.gateway_proxy_protocol = gateway_flag;
    let found: Vec<_> = w
        .findings()
        .into_iter()
        .filter(|f| f.rule == Rule::AcmeChallengeFailing)
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    format!("{}\n{}", found[0].message, found[0].remediation)
}

#[test]
fn a_gateway_solver_cut_off_behind_the_gateway_flag_is_told_as_the_hairpin() {
    let told = cut_off(false, Some(true), true);
    assert!(
        told.contains("enable-gateway-api-proxy-protocol: true"),
        "{told}"
    );
    assert!(
        told.contains("turn off enable-gateway-api-proxy-protocol"),
        "{told}"
    );
}

#[test]
fn the_ingress_flag_or_an_ingress_solver_is_not_the_gateway_hairpin() {
    for (ingress_flag, gateway_flag, through_gateway) in [
        (true, None, true),
        (true, Some(false), true),
        (false, Some(true), false),
    ] {
        let told = cut_off(ingress_flag, gateway_flag, through_gateway);
        assert!(
            !told.contains("enable-gateway-api-proxy-protocol"),
            "{ingress_flag} {gateway_flag:?} {through_gateway}: {told}"
        );
    }
}

//! `gateway.listener-not-ready` and `gateway.reference-not-permitted`, positive and
//! negative: a listener its controller did not accept because its certificate reference
//! does not resolve, or is not permitted.

use std::sync::Arc;

use chrono::Duration;

use crate::model::certificate::CertificateView;
use crate::model::data::key;
use crate::model::finding::Severity;
use crate::model::infra::{GatewayView, ListenerView, SecretRef};
use crate::model::ingress::IngressView;
use crate::model::rules::fixtures::{ago, cond, World};
use crate::model::Rule;

/// Gateway `acme/gw` with one HTTPS listener for shop.example.com on Secret `shop-tls`,
/// whose status says `resolved` (None: no status yet).
pub(super) fn with_gateway(w: World, resolved: Option<(&str, &str, &str)>) -> World {
    let conditions = match resolved {
        None => Vec::new(),
        Some(("True", _, _)) => vec![
            cond(
                "Accepted",
                "True",
                "Accepted",
                "Listener Accepted",
                ago(Duration::hours(1)),
            ),
            cond(
                "ResolvedRefs",
                "True",
                "ResolvedRefs",
                "Resolved Refs",
                ago(Duration::hours(1)),
            ),
        ],
        Some((status, reason, detail)) => vec![
            cond(
                "Accepted",
                "False",
                "Invalid",
                &format!("Listener not valid. {detail}"),
                ago(Duration::hours(1)),
            ),
            cond(
                "ResolvedRefs",
                status,
                reason,
                "Invalid CertificateRef",
                ago(Duration::hours(1)),
            ),
        ],
    };
    let mut w = w;
    w.data.gateways.insert(
        key("acme", "gw"),
        Arc::new(GatewayView {
            namespace: "acme".into(),
            name: "gw".into(),
            class: "cilium".into(),
            issuer: None,
            listeners: vec![ListenerView {
                name: "https".into(),
                hostname: Some("shop.example.com".into()),
                protocol: "HTTPS".into(),
                port: 443,
                certificate_refs: vec![SecretRef {
                    namespace: "acme".into(),
                    name: "shop-tls".into(),
                }],
                conditions,
            }],
            http_listeners: Vec::new(),
            addresses: vec!["192.0.2.1".into()],
            created: ago(Duration::hours(2)),
        }),
    );
    w
}

#[test]
fn a_listener_whose_certificate_reference_does_not_resolve_is_not_ready() {
    // Not permitted: another namespace's Secret without a ReferenceGrant.
    let mut w = with_gateway(
        World::new(),
        Some((
            "False",
            "RefNotPermitted",
            "Invalid CertificateRef, not permitted.",
        )),
    );
    let gw = w.data.gateways.values_mut().next().unwrap();
    Arc::make_mut(gw).listeners[0].certificate_refs[0].namespace = "certs".into();
    let found: Vec<_> = w
        .findings()
        .into_iter()
        .filter(|f| {
            matches!(
                f.rule,
                Rule::GatewayListenerNotReady | Rule::GatewayReferenceNotPermitted
            )
        })
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    let f = &found[0];
    assert_eq!(f.rule, Rule::GatewayReferenceNotPermitted);
    assert_eq!(f.severity, Severity::Critical);
    assert_eq!((&*f.namespace, &*f.name), ("acme", "gw"));
    assert!(
        f.message
            .contains("ResolvedRefs is False (RefNotPermitted)"),
        "{}",
        f.message
    );
    assert!(
        f.message.contains("clients of shop.example.com get no TLS"),
        "{}",
        f.message
    );
    assert!(
        f.remediation.contains(
            "Create a ReferenceGrant in namespace certs from group gateway.networking.k8s.io, kind Gateway, namespace acme to group \"\", kind Secret, name shop-tls"
        ),
        "{}",
        f.remediation
    );
    // A missing Secret nobody writes: critical, make it exist.
    let w = with_gateway(
        World::new(),
        Some((
            "False",
            "InvalidCertificateRef",
            "Invalid CertificateRef, secrets \"shop-tls\" not found",
        )),
    );
    let f = w
        .findings()
        .into_iter()
        .find(|f| f.rule == Rule::GatewayListenerNotReady)
        .expect("fired");
    assert_eq!(f.severity, Severity::Critical);
    assert!(
        f.remediation
            .contains("cert-manager's gateway-shim writes it"),
        "{}",
        f.remediation
    );
}

#[test]
fn a_secret_cert_manager_is_still_issuing_is_a_warning_and_a_resolved_listener_nothing() {
    // The Secret a Certificate (not ready yet) will write: the listener waits for it.
    let ing = IngressView::test("shop")
        .in_ns("acme")
        .with_issuer("letsencrypt-prod")
        .tls("shop.example.com");
    let cert = CertificateView::of(&ing).not_ready("DoesNotExist", Duration::minutes(5));
    let w = with_gateway(
        World::new().certificate(cert),
        Some((
            "False",
            "InvalidCertificateRef",
            "Invalid CertificateRef, secrets \"shop-tls\" not found",
        )),
    );
    let f = w
        .findings()
        .into_iter()
        .find(|f| f.rule == Rule::GatewayListenerNotReady)
        .expect("fired");
    assert_eq!(f.severity, Severity::Warning);
    assert!(
        f.remediation.contains("Wait for cert-manager"),
        "{}",
        f.remediation
    );
    // Resolved, or no status yet (the controller has not looked): nothing.
    for resolved in [Some(("True", "ResolvedRefs", "")), None] {
        let w = with_gateway(World::new(), resolved);
        assert!(
            w.fired(Rule::GatewayListenerNotReady).is_empty(),
            "{resolved:?}"
        );
    }
}

#[test]
fn a_listener_not_accepted_for_another_reason_says_so() {
    let mut w = with_gateway(World::new(), Some(("True", "ResolvedRefs", "")));
    let gw = w.data.gateways.values_mut().next().unwrap();
    Arc::make_mut(gw).listeners[0].conditions = vec![
        cond(
            "Accepted",
            "False",
            "PortUnavailable",
            "port 443 is in use",
            ago(Duration::hours(1)),
        ),
        cond(
            "ResolvedRefs",
            "True",
            "ResolvedRefs",
            "Resolved Refs",
            ago(Duration::hours(1)),
        ),
    ];
    let f = w
        .findings()
        .into_iter()
        .find(|f| f.rule == Rule::GatewayListenerNotReady)
        .expect("fired");
    assert!(
        f.title
            .contains("is not accepted by its controller (PortUnavailable)"),
        "{}",
        f.title
    );
    assert!(
        f.remediation.contains("its port, protocol or hostname"),
        "{}",
        f.remediation
    );
}

/// A ready Certificate writing Secret `shop-tls` in `acme`, naming `names`, owned by `owner`
/// (kind, name).
pub(super) fn shop_certificate(names: &[&str], owner: (&str, &str)) -> CertificateView {
    let ing = IngressView::test("shop")
        .in_ns("acme")
        .with_issuer("letsencrypt-prod")
        .tls("shop.example.com");
    let mut c = CertificateView::of(&ing).dns(names);
    c.owner.as_mut().unwrap().kind = owner.0.into();
    c.owner.as_mut().unwrap().name = owner.1.into();
    c
}

#[test]
fn a_listener_hostname_its_certificate_does_not_name_is_not_covered() {
    // Issued for another name, written by hand: clients of shop.example.com refuse it now.
    let resolved = Some(("True", "ResolvedRefs", ""));
    let w = with_gateway(
        World::new().certificate(shop_certificate(&["www.example.com"], ("Ingress", "www"))),
        resolved,
    );
    let found: Vec<_> = w
        .findings()
        .into_iter()
        .filter(|f| f.rule == Rule::GatewayHostnameNotCovered)
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    let f = &found[0];
    assert_eq!(f.severity, Severity::Critical);
    assert_eq!((&*f.namespace, &*f.name), ("acme", "gw"));
    assert!(
        f.title
            .contains("shop.example.com not covered by Certificate shop-tls"),
        "{}",
        f.title
    );
    assert!(
        f.message.contains("whose dnsNames are www.example.com"),
        "{}",
        f.message
    );
    assert!(
        f.remediation
            .contains("Add shop.example.com to spec.dnsNames of Certificate acme/shop-tls"),
        "{}",
        f.remediation
    );
    // Owned by this Gateway's shim: it adds the hostname itself — a warning saying so.
    let w = with_gateway(
        World::new().certificate(shop_certificate(&["www.example.com"], ("Gateway", "gw"))),
        resolved,
    );
    let f = w
        .findings()
        .into_iter()
        .find(|f| f.rule == Rule::GatewayHostnameNotCovered)
        .expect("fired");
    assert_eq!(f.severity, Severity::Warning);
    assert!(
        f.remediation.contains("gateway-shim owns"),
        "{}",
        f.remediation
    );
}

#[test]
fn a_covered_hostname_a_wildcard_or_a_listener_left_out_is_not_judged_for_coverage() {
    let resolved = Some(("True", "ResolvedRefs", ""));
    for names in [&["shop.example.com"][..], &["*.example.com"][..]] {
        let w = with_gateway(
            World::new().certificate(shop_certificate(names, ("Ingress", "shop"))),
            resolved,
        );
        assert!(
            w.fired(Rule::GatewayHostnameNotCovered).is_empty(),
            "{names:?}"
        );
    }
    // A wildcard covers one label only.
    let w = with_gateway(
        World::new().certificate(shop_certificate(
            &["*.shop.example.com"],
            ("Ingress", "shop"),
        )),
        resolved,
    );
    assert_eq!(w.fired(Rule::GatewayHostnameNotCovered).len(), 1);
    // Not accepted: the listener is out of the proxy, listener-not-ready tells it.
    let w = with_gateway(
        World::new().certificate(shop_certificate(&["www.example.com"], ("Ingress", "www"))),
        Some(("False", "InvalidCertificateRef", "bad PEM")),
    );
    assert!(w.fired(Rule::GatewayHostnameNotCovered).is_empty());
    assert_eq!(w.fired(Rule::GatewayListenerNotReady).len(), 1);
}

//! `ingress.cilium-listener-conflict`: one host, two TLS Secrets, Cilium's shared listener.

use crate::model::certificate::CertificateView;
use crate::model::ingress::IngressView;
use crate::model::rules::fixtures::World;
use crate::model::Rule;

fn on_host(name: &str, ns: &str, secret: &str, mode: &str) -> IngressView {
    let mut ing = IngressView::test(name)
        .in_ns(ns)
        .with_issuer("letsencrypt-prod")
        .tls_secret("shop.example.com", secret);
    ing.rare.make_mut().lb_mode = Some(mode.into());
    ing
}

#[test]
fn two_secrets_for_one_host_on_the_shared_listener_conflict() {
    let shop = on_host("shop", "acme", "shop-tls", "shared");
    let api = on_host("shop-api", "acme", "shop-api-tls", "shared");
    let w = World::new()
        .certificate(CertificateView::of(&shop))
        .certificate(CertificateView::of(&api))
        .ingress(shop.clone())
        .ingress(api.clone());
    let found: Vec<_> = w
        .findings()
        .into_iter()
        .filter(|f| f.rule == Rule::IngressCiliumListenerConflict)
        .collect();
    assert_eq!(found.len(), 2, "one for each Ingress: {found:#?}");
    assert!(
        found[0].message.contains("shop-api (Secret shop-api-tls)"),
        "{}",
        found[0].message
    );
    assert!(
        found[0].message.contains("cilium/cilium#45925"),
        "{}",
        found[0].message
    );

    // In another tenant's namespace: counted, not named.
    let other = on_host("shop-b", "beta", "shop-tls", "shared");
    let w = World::new()
        .certificate(CertificateView::of(&shop))
        .certificate(CertificateView::of(&other))
        .ingress(shop.clone())
        .ingress(other);
    let mine = w
        .findings()
        .into_iter()
        .find(|f| f.rule == Rule::IngressCiliumListenerConflict && &*f.namespace == "acme")
        .unwrap();
    assert!(!mine.message.contains("shop-b"), "{}", mine.message);
    assert!(
        mine.message.contains("1 more Secret in another namespace"),
        "{}",
        mine.message
    );

    // One Secret for the host, or one Ingress dedicated: no conflict.
    let same = on_host("shop-api", "acme", "shop-tls", "shared");
    let w = World::new()
        .certificate(CertificateView::of(&shop))
        .ingress(shop.clone())
        .ingress(same);
    assert!(w.fired(Rule::IngressCiliumListenerConflict).is_empty());
    let dedicated = on_host("shop-api", "acme", "shop-api-tls", "dedicated");
    let w = World::new()
        .certificate(CertificateView::of(&shop))
        .certificate(CertificateView::of(&dedicated))
        .ingress(shop)
        .ingress(dedicated);
    assert!(w.fired(Rule::IngressCiliumListenerConflict).is_empty());
}

//! The `ingress.*` rules, positive and negative.

use super::*;
use crate::model::Rule;

#[test]
fn edit_in_place_missing_invalid_and_not_effective() {
    let missing = IngressView::test("a")
        .with_issuer("letsencrypt-prod")
        .tls("a.example.com");
    let w = World::new()
        .certificate(CertificateView::of(&missing))
        .ingress(missing);
    assert_eq!(
        w.fired(Rule::IngressEditInPlaceMissing),
        one("warning", "Ingress", "a")
    );

    let invalid = IngressView::test("b")
        .with_issuer("letsencrypt-prod")
        .tls("b.example.com")
        .edit_in_place("yes");
    let w = World::new()
        .certificate(CertificateView::of(&invalid))
        .ingress(invalid);
    assert_eq!(
        w.fired(Rule::IngressEditInPlaceInvalid),
        one("warning", "Ingress", "b")
    );
    assert!(w.fired(Rule::IngressEditInPlaceMissing).is_empty());

    let set = IngressView::test("c")
        .with_issuer("letsencrypt-prod")
        .tls("c.example.com")
        .edit_in_place("true");
    let w = World::new()
        .certificate(CertificateView::of(&set).without_override())
        .ingress(set.clone());
    assert_eq!(
        w.fired(Rule::IngressEditInPlaceNotEffective),
        one("warning", "Ingress", "c")
    );
    let w = World::new()
        .certificate(CertificateView::of(&set))
        .ingress(set);
    assert!(w.fired(Rule::IngressEditInPlaceNotEffective).is_empty());

    let plain = IngressView::test("d").tls("d.example.com");
    assert!(World::new()
        .ingress(plain)
        .findings()
        .iter()
        .all(|f| !f.rule.id().starts_with("ingress.edit-in-place")));
}

#[test]
fn shared_secret_in_one_namespace() {
    let a = IngressView::test("a").tls_secret("a.example.com", "shared-tls");
    let b = IngressView::test("b").tls_secret("b.example.com", "shared-tls");
    let w = World::new().ingress(a).ingress(b.clone());
    assert_eq!(w.fired(Rule::IngressSharedSecret).len(), 2);
    let across = w
        .findings()
        .into_iter()
        .find(|f| f.rule == Rule::IngressSharedSecret)
        .unwrap();
    assert!(
        across
            .message
            .contains("owned by whichever Ingress it saw first")
            && !across.message.contains("fight"),
        "{}",
        across.message
    );
    // Twice within one Ingress: ingress-shim refuses the whole Ingress.
    let twice = IngressView::test("d")
        .tls_secret("d.example.com", "d-tls")
        .tls_secret("www.d.example.com", "d-tls");
    let w = World::new().ingress(twice);
    let fired = w.findings();
    let within: Vec<_> = fired
        .iter()
        .filter(|f| f.rule == Rule::IngressSharedSecret)
        .collect();
    assert_eq!(within.len(), 1);
    assert!(
        within[0].message.contains("BadConfig"),
        "{}",
        within[0].message
    );
    let other_ns = IngressView::test("c")
        .in_ns("other")
        .tls_secret("c.example.com", "shared-tls");
    assert!(World::new()
        .ingress(b)
        .ingress(other_ns)
        .fired(Rule::IngressSharedSecret)
        .is_empty());
}

#[test]
fn certificate_missing_when_the_issuer_annotations_conflict_or_there_is_no_tls() {
    let both =
        "both \"cert-manager.io/issuer\" and \"cert-manager.io/cluster-issuer\" may not be set";
    let conflict = IngressView::test("c")
        .with_issuer("letsencrypt-prod")
        .with_issuer_conflict(both)
        .tls("c.example.com");
    let w = World::new().ingress(conflict.clone());
    let fired = w.fired(Rule::IngressCertificateMissing);
    assert_eq!(fired.len(), 1);
    let f = w
        .findings()
        .into_iter()
        .find(|f| f.rule == Rule::IngressCertificateMissing)
        .unwrap();
    assert!(
        f.message.contains("BadConfig") && f.message.contains(both),
        "{}",
        f.message
    );
    // A Certificate made before the annotations went wrong still writes the Secret.
    let w = World::new()
        .ingress(conflict.clone())
        .certificate(CertificateView::of(&conflict));
    assert!(w.fired(Rule::IngressCertificateMissing).is_empty());
    // An issuer but no TLS section: nothing for ingress-shim to make a Certificate from.
    let bare = IngressView::test("bare").with_issuer("letsencrypt-prod");
    assert_eq!(
        World::new()
            .ingress(bare)
            .fired(Rule::IngressCertificateMissing)
            .len(),
        1
    );
    // Consistent annotations and a TLS section: nothing to say here.
    let fine = IngressView::test("fine")
        .with_issuer("letsencrypt-prod")
        .tls("fine.example.com");
    assert!(World::new()
        .ingress(fine)
        .fired(Rule::IngressCertificateMissing)
        .is_empty());
}

/// A refusal Lookout does not model still shows: at once with ingress-shim's `BadConfig`
/// event of any wording (quoted), and without one once the Ingress has stood unchanged for
/// the grace period.
#[test]
fn certificate_missing_for_any_bad_config_and_after_a_grace_without_one() {
    let ing = IngressView::test("web")
        .with_issuer("letsencrypt-prod")
        .tls("web.example.com");
    let text = "Some future refusal cert-manager words in a way no one has seen yet";
    let w = World::new()
        .ingress(ing.clone().changed_ago(Duration::seconds(10)))
        .ingress_event("default", "web", "BadConfig", text);
    let found: Vec<_> = w
        .findings()
        .into_iter()
        .filter(|f| f.rule == Rule::IngressCertificateMissing)
        .collect();
    assert_eq!(found.len(), 1, "at once, with the event");
    assert!(found[0].message.contains(text), "{}", found[0].message);
    assert_eq!(found[0].severity, crate::model::Severity::Critical);
    // Another reason's event is no evidence of a refusal.
    let w = World::new()
        .ingress(ing.clone().changed_ago(Duration::seconds(10)))
        .ingress_event("default", "web", "Sync", text);
    assert!(w.fired(Rule::IngressCertificateMissing).is_empty());
    // Without an event: nothing within the grace, a finding after it.
    let fresh = World::new().ingress(ing.clone().changed_ago(Duration::minutes(2)));
    assert!(fresh.fired(Rule::IngressCertificateMissing).is_empty());
    let stale = World::new().ingress(ing.clone().changed_ago(Duration::minutes(6)));
    let found: Vec<_> = stale
        .findings()
        .into_iter()
        .filter(|f| f.rule == Rule::IngressCertificateMissing)
        .collect();
    assert_eq!(found.len(), 1);
    assert!(
        found[0].message.contains("no event"),
        "{}",
        found[0].message
    );
    // A Certificate writing the Secret: nothing missing, whatever the events.
    let served = World::new()
        .ingress(ing.clone().changed_ago(Duration::minutes(6)))
        .certificate(CertificateView::of(&ing))
        .ingress_event("default", "web", "BadConfig", text);
    assert!(served.fired(Rule::IngressCertificateMissing).is_empty());
    // A secretName repeated within the Ingress is ingress.shared-secret's, not this rule's.
    let twice = IngressView::test("twice")
        .with_issuer("letsencrypt-prod")
        .tls_secret("a.example.com", "same-tls")
        .tls_secret("b.example.com", "same-tls")
        .changed_ago(Duration::hours(1));
    let w = World::new().ingress(twice).ingress_event(
        "default",
        "twice",
        "BadConfig",
        "this secret name must only appear in a single TLS entry",
    );
    assert!(w.fired(Rule::IngressCertificateMissing).is_empty());
    assert!(!w.fired(Rule::IngressSharedSecret).is_empty());
}

/// `kubernetes.io/tls-acme: "true"` asks ingress-shim for Certificates with cert-manager's
/// default issuer: without one, ingress-shim refuses it with `BadConfig` (quoted); a value
/// Go's `ParseBool` does not take as true asks for nothing.
#[test]
fn tls_acme_asks_for_a_certificate_and_its_refusal_shows() {
    let ing = IngressView::test("web")
        .with_tls_acme()
        .tls("web.example.com")
        .changed_ago(Duration::seconds(10));
    assert!(ing.asks_for_certificate());
    let refusal = "Could not determine issuer for ingress due to bad annotations: failed to determine issuer name to be used for ingress resource";
    let w = World::new()
        .ingress(ing.clone())
        .ingress_event("default", "web", "BadConfig", refusal);
    let found: Vec<_> = w
        .findings()
        .into_iter()
        .filter(|f| f.rule == Rule::IngressCertificateMissing)
        .collect();
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0].message.contains(refusal), "{}", found[0].message);
    // Asking, it is not an unmanaged TLS Secret.
    assert!(w.fired(Rule::IngressUnmanagedTls).is_empty());
    // With the Certificate ingress-shim made from the default issuer: nothing missing.
    let made = World::new()
        .ingress(ing.clone())
        .certificate(CertificateView::of(&ing));
    assert!(made.fired(Rule::IngressCertificateMissing).is_empty());
    // Without cert-manager, the Ingress says how it asks.
    let w = World::new().ingress(ing.clone()).kind_state(
        crate::model::kind::Kind::Certificate,
        crate::model::cluster::KindState::NotInstalled,
    );
    let found: Vec<_> = w
        .findings()
        .into_iter()
        .filter(|f| f.rule == Rule::ClusterCertManagerMissing)
        .collect();
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].message.contains("kubernetes.io/tls-acme"),
        "{}",
        found[0].message
    );
}

#[test]
fn tls_acme_is_read_as_go_reads_a_bool() {
    let project = |v: &str| {
        let meta: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta =
            serde_json::from_value(serde_json::json!({"name": "web", "namespace": "default", "annotations": {"kubernetes.io/tls-acme": v}})).unwrap();
        IngressView::project(
            "zrh",
            &meta,
            &serde_json::json!({"spec": {"tls": [{"hosts": ["web.example.com"], "secretName": "web-tls"}]}}),
            &mut crate::model::interner::Interner::default(),
        )
        .unwrap()
    };
    for v in ["true", "True", "TRUE", "1", "t", "T"] {
        assert!(project(v).asks_for_certificate(), "{v}");
    }
    for v in ["yes", "on", "", "false", "0", " true"] {
        assert!(!project(v).asks_for_certificate(), "{v}");
    }
}

#[test]
fn shared_host_with_https_enforcement() {
    let a = IngressView::test("a").tls("shop.example.com");
    let b = IngressView::test("b").tls_secret("shop.example.com", "b-tls");
    let w = World::new().ingress(a.clone()).ingress(b.clone());
    assert_eq!(w.fired(Rule::IngressSharedHostHttpsRedirect).len(), 2);
    // Fixed: the Ingress that asks for the certificate solves in place, the other asks for
    // none — the redirect reaches the solver over HTTPS, nothing is left to fix.
    let owner = a
        .clone()
        .with_issuer("letsencrypt-prod")
        .edit_in_place("true");
    assert!(World::new()
        .ingress(owner.clone())
        .ingress(b.clone())
        .fired(Rule::IngressSharedHostHttpsRedirect)
        .is_empty());
    // Not while another Ingress of the host asks for a certificate without it.
    let unfixed = b.clone().with_issuer("letsencrypt-prod");
    assert_eq!(
        World::new()
            .ingress(owner)
            .ingress(unfixed)
            .fired(Rule::IngressSharedHostHttpsRedirect)
            .len(),
        2
    );
    let off_a = a.force_https("disabled");
    let off_b = b.force_https("disabled");
    assert!(World::new()
        .ingress(off_a)
        .ingress(off_b)
        .fired(Rule::IngressSharedHostHttpsRedirect)
        .is_empty());
}

#[test]
fn no_address_after_five_minutes() {
    let w = World::new().ingress(IngressView::test("a").without_address(Duration::minutes(10)));
    assert_eq!(
        w.fired(Rule::IngressNoAddress),
        one("warning", "Ingress", "a")
    );
    let w = World::new().ingress(IngressView::test("a").without_address(Duration::minutes(1)));
    assert!(w.fired(Rule::IngressNoAddress).is_empty());
}

#[test]
fn unmanaged_tls_when_no_certificate_writes_the_secret() {
    let w = World::new().ingress(IngressView::test("a").tls("a.example.com"));
    assert_eq!(
        w.fired(Rule::IngressUnmanagedTls),
        one("info", "Ingress", "a")
    );
    let ing = shop();
    let w = World::new()
        .certificate(CertificateView::of(&ing))
        .ingress(ing);
    assert!(w.fired(Rule::IngressUnmanagedTls).is_empty());
}

#[test]
fn unknown_class() {
    let w = World::new().ingress(IngressView::test("a").class("nginx"));
    assert_eq!(
        w.fired(Rule::IngressUnknownClass),
        one("warning", "Ingress", "a")
    );
    assert!(World::new()
        .ingress(IngressView::test("a"))
        .fired(Rule::IngressUnknownClass)
        .is_empty());
    // The message does not list the cluster's classes: a namespace's users read it too.
    let message = w
        .findings()
        .into_iter()
        .find(|f| f.rule == Rule::IngressUnknownClass)
        .map(|f| f.message.to_string())
        .unwrap();
    assert!(
        message.contains("no IngressClass of that name"),
        "{message}"
    );
    assert!(!message.contains("cilium"), "{message}");
}

#[test]
fn annotation_status_reports_managers() {
    use crate::model::chain::{AnnotationStatus, Index};
    let ing = shop();
    let w = World::new()
        .certificate(CertificateView::of(&ing))
        .ingress(ing.clone());
    let idx = Index::new(&w.facts, &w.data);
    assert_eq!(
        idx.annotation_status(&ing),
        AnnotationStatus::Set {
            managers: std::sync::Arc::from(["lookout".into()])
        }
    );
    let chains = idx.tls_chains(&ing);
    assert_eq!(
        &*chains[0].certificate.as_ref().unwrap().certificate.name,
        "shop-tls"
    );
    let info = idx.controller_of(&ing);
    assert_eq!((info.cilium, info.enforce_https), (true, Some(true)));
}

/// A ClusterIssuer `letsencrypt-prod` with these solvers (replacing the fixture's).
fn issuer_with(solvers: serde_json::Value) -> crate::model::issuer::IssuerView {
    let mut i = cluster_issuer("letsencrypt-prod", LE_PRODUCTION, true);
    i.solvers = crate::model::solvers::project(
        &serde_json::json!({"spec": {"acme": {"solvers": solvers}}}),
        &mut crate::model::interner::Interner::default(),
    );
    i
}

fn missing_fired(w: &World) -> Vec<crate::model::finding::Finding> {
    w.findings()
        .into_iter()
        .filter(|f| f.rule == Rule::IngressEditInPlaceMissing)
        .collect()
}

#[test]
fn edit_in_place_matters_only_for_an_http01_ingress_solver_behind_cilium() {
    let ing = || {
        IngressView::test("a")
            .with_issuer("letsencrypt-prod")
            .tls("a.shop.example")
    };
    let world = |ing: IngressView, solvers: serde_json::Value| {
        World::new()
            .issuer(issuer_with(solvers))
            .certificate(CertificateView::of(&ing))
            .ingress(ing)
    };
    // DNS-01: no solver Ingress, nothing to edit in place.
    let w = world(ing(), serde_json::json!([{"dns01": {"route53": {}}}]));
    assert!(missing_fired(&w).is_empty());
    // HTTP-01 in general, DNS-01 for this zone: the zone's solver is picked.
    let w = world(
        ing(),
        serde_json::json!([{"http01": {"ingress": {}}}, {"dns01": {"route53": {}}, "selector": {"dnsZones": ["shop.example"]}}]),
    );
    assert!(missing_fired(&w).is_empty());
    // A solver that already names the Ingress to edit.
    let w = world(
        ing(),
        serde_json::json!([{"http01": {"ingress": {"name": "a"}}}]),
    );
    assert!(missing_fired(&w).is_empty());
    // Another controller (ingress-nginx serves a solver Ingress on the same host).
    let w = world(
        ing().class("nginx"),
        serde_json::json!([{"http01": {"ingress": {}}}]),
    );
    assert!(missing_fired(&w).is_empty());
    // A solver chosen by the Ingress's labels.
    let mut labelled = ing();
    labelled.labels = std::sync::Arc::from([("solver".into(), "http".into())]);
    let w = world(
        labelled,
        serde_json::json!([{"dns01": {"route53": {}}}, {"http01": {"ingress": {}}, "selector": {"matchLabels": {"solver": "http"}}}]),
    );
    assert_eq!(missing_fired(&w).len(), 1);
    // The issuer does not exist: issuer.missing says so; this rule does not guess.
    let w = World::new()
        .certificate(CertificateView::of(&ing().with_issuer("nope")))
        .ingress(ing().with_issuer("nope"));
    assert!(missing_fired(&w).is_empty());
    assert_eq!(w.fired(Rule::IssuerMissing).len(), 1);
}

#[test]
fn edit_in_place_missing_explains_cilium_load_balancer_mode() {
    let ing = IngressView::test("a")
        .with_issuer("letsencrypt-prod")
        .tls("a.example.com");
    let w = World::new()
        .certificate(CertificateView::of(&ing))
        .ingress(ing.clone());
    let f = &missing_fired(&w)[0];
    assert!(
        f.message
            .contains("dedicated load-balancer mode (the operator's default)"),
        "{}",
        f.message
    );
    assert!(f.message.contains("cert-manager#6805"), "{}", f.message);
    let mut shared = ing;
    shared.rare.make_mut().lb_mode = Some("shared".into());
    let w = World::new()
        .certificate(CertificateView::of(&shared))
        .ingress(shared);
    let f = &missing_fired(&w)[0];
    assert!(
        f.message.contains("shared load-balancer mode"),
        "{}",
        f.message
    );
    assert!(f.message.contains("cilium#35347"), "{}", f.message);
}

#[test]
fn a_tailscale_ingress_without_hostname_is_a_certificate_problem_not_a_load_balancer() {
    let ing = IngressView::test("ts")
        .class("tailscale")
        .without_address(Duration::hours(1));
    let mut w = World::new().ingress(ing);
    w.facts.overrides.tailnet = Some("tail1234.ts.net".into());
    let f: Vec<_> = w
        .findings()
        .into_iter()
        .filter(|f| f.rule == Rule::IngressNoAddress)
        .collect();
    assert_eq!(f.len(), 1);
    assert!(f[0].title.contains("has no hostname yet"), "{}", f[0].title);
    assert!(
        f[0].message.contains("in tailnet tail1234.ts.net"),
        "{}",
        f[0].message
    );
    assert!(
        !f[0].remediation.contains("LoadBalancer Service"),
        "{}",
        f[0].remediation
    );
}

#[test]
fn certificate_missing_when_ingress_shim_refuses_an_annotation_value() {
    let mut ing = IngressView::test("odd")
        .with_issuer("letsencrypt-prod")
        .tls("odd.example.com");
    ing.rare.make_mut().shim_refusal = Some(
        "invalid ingress annotation \"cert-manager.io/duration\": time: unknown unit \"d\" in duration \"90d\"".into(),
    );
    let w = World::new().ingress(ing.clone());
    let f: Vec<_> = w
        .findings()
        .into_iter()
        .filter(|f| f.rule == Rule::IngressCertificateMissing)
        .collect();
    assert_eq!(f.len(), 1);
    assert!(
        f[0].message.contains("unknown unit \"d\""),
        "{}",
        f[0].message
    );
    assert!(f[0].remediation.contains("2160h"), "{}", f[0].remediation);
    // A Certificate made before the value went wrong still writes the Secret.
    let w = World::new()
        .certificate(CertificateView::of(&ing))
        .ingress(ing);
    assert!(w.fired(Rule::IngressCertificateMissing).is_empty());
}

#[test]
fn a_shared_host_finding_names_no_object_of_another_namespace() {
    let mine = IngressView::test("shop")
        .in_ns("tenant-a")
        .tls("shared.example.com");
    let theirs = IngressView::test("secret-b")
        .in_ns("tenant-b")
        .tls("shared.example.com");
    let w = World::new().ingress(mine).ingress(theirs);
    let f: Vec<_> = w
        .findings()
        .into_iter()
        .filter(|f| f.rule == Rule::IngressSharedHostHttpsRedirect)
        .collect();
    assert_eq!(f.len(), 2);
    let a = f.iter().find(|f| &*f.namespace == "tenant-a").unwrap();
    assert!(
        !a.message.contains("secret-b") && !a.message.contains("tenant-b"),
        "{}",
        a.message
    );
    assert!(
        a.message.contains("1 Ingress in another namespace"),
        "{}",
        a.message
    );
}

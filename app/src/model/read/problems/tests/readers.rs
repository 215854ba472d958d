//! The same problems told to each reader: a tenant gets the cluster-wide root of their
//! problem in words about them alone, every reader the same severity of the same object, and
//! whose move it is.

use chrono::Duration;

use super::*;
/// `issuer_down`, with globex's certificate expired (its clients fail now) and acme's
/// valid for 30 more days (its clients fail then, unless the issuer is fixed).
fn issuer_down_unevenly() -> World {
    let mut w = World::new().issuer(cluster_issuer(
        "letsencrypt-prod",
        crate::model::issuer::LE_PRODUCTION,
        false,
    ));
    for (ns, name, host, expires_in) in [
        ("acme", "shop", "shop.acme.example", Duration::days(30)),
        ("globex", "site", "www.globex.example", Duration::days(-2)),
    ] {
        let ing = IngressView::test(name)
            .in_ns(ns)
            .with_issuer("letsencrypt-prod")
            .edit_in_place("true")
            .tls(host);
        let cert = CertificateView::of(&ing)
            .expiring(expires_in, Duration::days(5))
            .not_ready("Pending", Duration::hours(2));
        w = w.certificate(cert).ingress(ing);
    }
    w
}

#[test]
fn a_tenant_is_told_the_cluster_wide_root_of_their_problem_in_words_about_them_alone() {
    let w = issuer_down_unevenly();
    let all = problems_of(&w, &everything());
    let whole = all
        .iter()
        .find(|p| p.cause == Rule::IssuerNotReady)
        .unwrap_or_else(|| panic!("{all:#?}"));
    assert_eq!(
        whole.urgency.severity,
        Severity::Critical,
        "globex fails now"
    );
    let theirs = problems_of(&w, &tenant(&["acme"]));
    assert_eq!(theirs.len(), 1, "{theirs:#?}");
    let p = &theirs[0];
    // The root is the issuer, as for everyone: not "being issued, wait".
    assert_eq!(p.cause, Rule::IssuerNotReady);
    assert_eq!(p.id, whole.id);
    assert_eq!(p.root.kind.name(), "ClusterIssuer");
    assert!(p.diagnosis.contains("letsencrypt-prod"), "{}", p.diagnosis);
    // Its urgency is their chain's: acme's certificate is valid for 30 days.
    assert_eq!(p.urgency.severity, Severity::Warning, "{p:#?}");
    assert!(p.urgency.clients_failing_since.is_none());
    assert!(p.urgency.clients_fail_at.is_some());
    assert_eq!(p.namespaces.to_vec(), vec![Text::from("acme")]);
    assert_eq!(p.hosts.to_vec(), vec![Text::from("shop.acme.example")]);
    assert!(p
        .objects
        .iter()
        .all(|o| &*o.namespace == "acme" || o.kind == crate::model::Kind::ClusterIssuer));
    // Nothing of globex: not its name, its host, nor how many use the issuer.
    let text = serde_json::to_string(p).unwrap();
    assert!(!text.contains("globex"), "{text}");
    assert!(!text.contains("depend"), "{text}");
    // The platform's move: the tenant is told so, with no button; the whole-cluster reader
    // gets the issuer's page.
    assert_eq!(whole.owner, Owner::Platform);
    assert!(!whole.action.provider && whole.action.href.is_some());
    assert_eq!(p.owner, Owner::Platform);
    assert!(p.action.provider, "{:?}", p.action);
    assert_eq!(p.action.href, None);
    assert_eq!(p.action.label, "On the provider's side");
}

#[test]
fn whose_move_a_problem_is_follows_its_root() {
    // The tenant's own Ingress lacks the fix: theirs, with its button, for every reader.
    let shop = IngressView::test("shop")
        .in_ns("acme")
        .with_issuer("letsencrypt-prod")
        .tls("shop.example.com");
    let w = failing(World::new(), shop);
    for view in [everything(), tenant(&["acme"])] {
        let problems = problems_of(&w, &view);
        let p = &problems[0];
        assert_eq!(p.cause, Rule::IngressEditInPlaceMissing);
        assert_eq!(p.owner, Owner::Namespace);
        assert!(!p.action.provider && p.action.href.is_some());
    }
    // cert-manager missing: the platform's.
    let w = World::new()
        .kind_state(
            crate::model::Kind::Certificate,
            crate::model::KindState::NotInstalled,
        )
        .ingress(
            IngressView::test("shop")
                .in_ns("acme")
                .with_issuer("letsencrypt-prod")
                .tls("shop.example.com"),
        );
    let p = problems_of(&w, &tenant(&["acme"]));
    assert_eq!(p[0].cause, Rule::ClusterCertManagerMissing, "{p:#?}");
    assert_eq!(p[0].owner, Owner::Platform);
    assert!(p[0].action.provider);
}

#[test]
fn every_reader_tells_the_same_severity_of_the_same_object() {
    let w = issuer_down_unevenly();
    let findings = std::sync::Arc::new(w.findings());
    let problems = checked(&w, &findings);
    let health = health(&problems);
    let of = |kind: &str, ns: &str, name: &str| {
        health
            .get(&(
                crate::model::Kind::from_name(kind).unwrap().into(),
                Text::from(ns),
                Text::from(name),
            ))
            .copied()
    };
    assert_eq!(of("Ingress", "acme", "shop"), Some(Severity::Warning));
    assert_eq!(
        of("Certificate", "acme", "shop-tls"),
        Some(Severity::Warning),
        "{health:?}"
    );
    assert_eq!(of("Ingress", "globex", "site"), Some(Severity::Critical));
    // The object's page tells the problem as it bears on the object, for every reader.
    for view in [everything(), tenant(&["acme"])] {
        let p = problems_of(&w, &view)
            .into_iter()
            .find(|p| p.concerns(crate::model::Kind::Ingress, "acme", "shop"))
            .expect("the problem reaches acme's Ingress");
        let here = p.about_object(crate::model::Kind::Ingress, "acme", "shop");
        assert_eq!(here.urgency.severity, Severity::Warning);
        assert_eq!(here.hosts.to_vec(), vec![Text::from("shop.acme.example")]);
        let cert = p.about_object(crate::model::Kind::Certificate, "acme", "shop-tls");
        assert_eq!(cert.urgency, here.urgency);
    }
}

#[test]
fn a_problem_rooted_in_another_namespace_is_told_from_the_readers_own_finding() {
    // The issuer is missing for three namespaces' Ingresses: one problem, rooted at one of
    // their reports of it.
    let mut w = World::new();
    for (ns, name, host) in [
        ("acme", "shop", "shop.acme.example"),
        ("globex", "site", "www.globex.example"),
        ("initech", "www", "www.initech.example"),
    ] {
        let ing = IngressView::test(name)
            .in_ns(ns)
            .with_issuer("letsencrypt-nope")
            .tls(host);
        w = w.ingress(ing);
    }
    let whole = problems_of(&w, &everything());
    assert_eq!(whole.len(), 1, "{whole:#?}");
    for ns in ["acme", "globex", "initech"] {
        let theirs = problems_of(&w, &tenant(&[ns]));
        assert_eq!(theirs.len(), 1, "{theirs:#?}");
        let p = &theirs[0];
        assert_eq!(p.cause, Rule::IssuerMissing);
        assert_eq!(&*p.root.namespace, ns, "their own report is the root");
        assert!(p.symptoms.iter().all(|f| &*f.namespace == ns));
        let text = serde_json::to_string(p).unwrap();
        for other in ["acme", "globex", "initech"].iter().filter(|o| **o != ns) {
            assert!(!text.contains(other), "{ns} reads of {other}: {text}");
        }
    }
}

//! Findings about the load balancer rather than one chain: one problem per rule and address
//! family, or the cluster's own finding that explains them.

use super::*;

#[test]
fn the_load_balancers_failures_are_one_problem_or_the_clusters_own() {
    let a = IngressView::test("a").in_ns("acme").tls("a.example.com");
    let b = IngressView::test("b").in_ns("acme").tls("b.example.com");
    let w = World::new().ingress(a).ingress(b);
    let v6 = |name: &str| {
        finding(
            Rule::ProbeUnreachable,
            "Ingress",
            name,
            "IPv6 clients get no answer from x while the other family works",
        )
    };
    let proxy = |name: &str| {
        finding(
            Rule::ProbeProxyProtocol,
            "Ingress",
            name,
            "x answers only clients that send a PROXY protocol header",
        )
    };
    let alone = [v6("a"), v6("b"), proxy("a"), proxy("b")];
    let problems = problems_from(&w, &alone);
    // One problem per rule (and family), each naming both Ingresses.
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(
        problems.iter().all(|p| p.objects.len() == 2),
        "{problems:#?}"
    );
    // The cluster's PROXY protocol on an IPv4-only load balancer explains them all.
    let cluster = finding(
        Rule::ClusterIpv6ProxyProtocol,
        "Cluster",
        "zrh",
        "PROXY protocol on an IPv4-only cluster",
    );
    let with: Vec<Finding> = std::iter::once(cluster).chain(alone).collect();
    let problems = problems_from(&w, &with);
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert_eq!(problems[0].cause, Rule::ClusterIpv6ProxyProtocol);
    assert_eq!(problems[0].symptoms.len(), 4);
    // Its button opens what explains it: the cluster's finding, with its remedy.
    assert_eq!(
        (
            problems[0].action.label.as_str(),
            problems[0].action.href.as_deref()
        ),
        (
            "Open its findings",
            Some("/findings?cluster=zrh&rule=cluster.ipv6-proxy-protocol")
        )
    );
    assert!(
        problems[0]
            .diagnosis
            .contains("(observed: IPv6 clients get no answer"),
        "{}",
        problems[0].diagnosis
    );
}

/// A cluster Lookout never synced: what its clients get is unknown, not "no harm seen".
#[test]
fn a_cluster_without_data_is_of_unknown_harm() {
    use crate::model::cluster::SyncState;
    let mut w = crate::model::rules::fixtures::World::new();
    w.facts.state = SyncState::Failed {
        error: "no such context".into(),
    };
    let problems = super::problems_of(&w, &super::everything());
    let p = problems
        .iter()
        .find(|p| p.cause == crate::model::Rule::ClusterUnreachable)
        .expect("the cluster's problem");
    assert!(p.urgency.harm_unknown, "{p:#?}");
    assert_eq!(p.urgency.clients_failing_since, None);
    w.facts.state = SyncState::Synced;
    assert!(super::problems_of(&w, &super::everything())
        .iter()
        .all(|p| !p.urgency.harm_unknown));
}

/// What the probe saw on a Gateway's host joins the problem of that host's listener — by
/// the host, not the Gateway alone — and a Gateway's unanswered IPv6 is not explained by
/// the cluster's PROXY protocol on its Ingress listeners.
#[test]
fn a_gateway_hosts_observation_joins_its_listeners_problem() {
    let w = World::new();
    let on = |mut f: Finding, host: &str| {
        f.host = Some(host.into());
        f
    };
    let cause = on(
        finding(
            Rule::GatewayReferenceNotPermitted,
            "Gateway",
            "edge",
            "Listener https-api of Gateway edge may not use Secret platform/api-tls of another namespace",
        ),
        "api.example.com",
    );
    let other = on(
        finding(
            Rule::GatewayHostnameNotCovered,
            "Gateway",
            "edge",
            "shop.example.com not covered by Certificate www-tls of listener https-shop of Gateway edge",
        ),
        "shop.example.com",
    );
    let api_down = on(
        finding(
            Rule::ProbeUnreachable,
            "Gateway",
            "edge",
            "https://api.example.com does not answer on IPv6",
        ),
        "api.example.com",
    );
    let shop_mismatch = on(
        finding(
            Rule::ProbeNameMismatch,
            "Gateway",
            "edge",
            "The certificate served for shop.example.com does not name it",
        ),
        "shop.example.com",
    );
    // A host whose listener has no finding: the load balancer's, as before.
    let www_down = on(
        finding(
            Rule::ProbeUnreachable,
            "Gateway",
            "edge",
            "https://www.example.com does not answer on IPv6",
        ),
        "www.example.com",
    );
    let cluster = finding(
        Rule::ClusterIpv6ProxyProtocol,
        "Cluster",
        "zrh",
        "PROXY protocol on an IPv4-only cluster",
    );
    // Observations first in the list: the causes still root their problems.
    let problems = problems_from(
        &w,
        &[api_down, shop_mismatch, www_down, cluster, cause, other],
    );
    let of = |rule: Rule| {
        problems
            .iter()
            .find(|p| p.cause == rule)
            .unwrap_or_else(|| panic!("{rule:?}: {problems:#?}"))
    };
    let api = of(Rule::GatewayReferenceNotPermitted);
    assert_eq!(
        api.symptoms.iter().map(|f| f.rule).collect::<Vec<_>>(),
        [Rule::ProbeUnreachable],
        "{api:#?}"
    );
    assert!(
        api.diagnosis
            .contains("(observed: https://api.example.com does not answer"),
        "{}",
        api.diagnosis
    );
    let shop = of(Rule::GatewayHostnameNotCovered);
    assert_eq!(
        shop.symptoms.iter().map(|f| f.rule).collect::<Vec<_>>(),
        [Rule::ProbeNameMismatch],
        "{shop:#?}"
    );
    // www's IPv6 is not the Ingress listeners' PROXY protocol: a problem of the probe's own.
    assert!(
        of(Rule::ClusterIpv6ProxyProtocol).symptoms.is_empty(),
        "{problems:#?}"
    );
    let www = of(Rule::ProbeUnreachable);
    assert!(www.root.title.contains("www.example.com"), "{www:#?}");
    assert_eq!(problems.len(), 4, "{problems:#?}");
}

/// A listener that only waits for its Certificate's first issuance is a symptom of why that
/// Certificate is not issued: it joins that problem, with what the probe saw of its host.
#[test]
fn a_listener_waiting_for_its_certificate_joins_the_problem_of_that_certificate() {
    let status = IngressView::test("status")
        .in_ns("acme")
        .with_issuer("letsencrypt-prod")
        .tls("status.example.com");
    let mut w = super::failing(World::new(), status);
    // Never issued: the listener's Secret does not exist yet.
    for c in w.data.certificates.values_mut() {
        let c = std::sync::Arc::make_mut(c);
        c.not_after = None;
        c.revision = None;
    }
    let mut findings = w.findings();
    let chain_root = super::problems_from(&w, &findings)
        .first()
        .map(|p| p.cause)
        .expect("the failing chain's problem");
    let on = |mut f: Finding, severity: Severity| {
        f.host = Some("status.example.com".into());
        f.severity = severity;
        f
    };
    findings.push(on(
        finding(
            Rule::GatewayListenerNotReady,
            "Gateway",
            "status",
            "Listener https of Gateway status does not resolve its certificate (InvalidCertificateRef)",
        ),
        Severity::Warning,
    ));
    findings.push(on(
        finding(
            Rule::ProbeUnreachable,
            "Gateway",
            "status",
            "https://status.example.com does not answer on IPv4",
        ),
        Severity::Critical,
    ));
    let problems = super::problems_from(&w, &findings);
    assert_eq!(problems.len(), 1, "{problems:#?}");
    let p = &problems[0];
    assert_eq!(p.cause, chain_root);
    for rule in [Rule::GatewayListenerNotReady, Rule::ProbeUnreachable] {
        assert!(
            p.symptoms.iter().any(|f| f.rule == rule),
            "{rule:?}: {p:#?}"
        );
    }
    // A listener whose Secret is missing for good (critical: nothing will write it) is a
    // problem of its own.
    let last = findings.len() - 2;
    findings[last].severity = Severity::Critical;
    assert_eq!(super::problems_from(&w, &findings).len(), 2);
}

//! The probe worker of `lookout serve` against kubesim's Cilium listeners (real sockets on
//! loopback, IPv4 and IPv6, certificates signed by kubesim's CAs): each `probe.*` rule fires
//! on the host built to show it and stays quiet on the healthy one; and the probe never
//! connects outside the allowed networks, whatever an Ingress's status says.

use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kubesim::sim::edge::EdgePorts;
use lookout_server::probe::policy::Networks;
use lookout_server::probe::tls::Roots;
use lookout_server::probe::worker::Settings;
use serde_json::{json, Value};

use crate::helpers::*;

/// Two ports free on loopback.
pub(crate) fn free_ports() -> EdgePorts {
    let a = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let b = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    EdgePorts {
        https: a.local_addr().unwrap().port(),
        http: b.local_addr().unwrap().port(),
    }
}

pub(crate) fn settings(ports: EdgePorts, allow: &[&str]) -> Settings {
    let roots = Roots::of(Vec::new())
        .with_pem(kubesim::sim::pki::production_root_pem().as_bytes())
        .unwrap();
    Settings {
        interval: Duration::from_millis(700),
        spacing: Duration::ZERO,
        concurrency: 8,
        // Generous: no outcome here is a timeout (refusals close the connection), and a
        // loaded CI machine must not turn a slow handshake into a change of outcome.
        timeout: Duration::from_secs(3),
        https_port: ports.https,
        http_port: ports.http,
        proxy: None,
        networks: Networks {
            allow: allow.iter().map(|n| n.parse().unwrap()).collect(),
            deny: Vec::new(),
        },
        roots,
    }
}

pub(crate) fn create(
    app: &TestApp,
    cluster: usize,
    group: &str,
    plural: &str,
    ns: Option<&str>,
    obj: Value,
) {
    let c = &app.fleet.clusters[cluster].cluster;
    let rt = c.resolve(group, plural).unwrap();
    c.create(&rt, ns, obj, &kubesim::WriteOpts::system())
        .unwrap();
}

/// Shared-mode Cilium (one load balancer, IPv4 and `::1`), a production and a staging
/// ClusterIssuer, and `cilium-config` as given.
pub(crate) fn cluster_setup(app: &TestApp, cluster: usize, config: Value, families: &[&str]) {
    create(
        app,
        cluster,
        "",
        "configmaps",
        Some("kube-system"),
        json!({"metadata": {"name": "cilium-config"}, "data": config}),
    );
    create(
        app,
        cluster,
        "",
        "services",
        Some("kube-system"),
        json!({"metadata": {"name": "cilium-ingress"}, "spec": {"type": "LoadBalancer", "ipFamilies": families}}),
    );
    create(
        app,
        cluster,
        "networking.k8s.io",
        "ingressclasses",
        None,
        json!({"metadata": {"name": "cilium"}, "spec": {"controller": "cilium.io/ingress-controller"}}),
    );
    for (name, server) in [
        (
            "letsencrypt-prod",
            "https://acme-v02.api.letsencrypt.org/directory",
        ),
        (
            "letsencrypt-staging",
            "https://acme-staging-v02.api.letsencrypt.org/directory",
        ),
    ] {
        create(
            app,
            cluster,
            "cert-manager.io",
            "clusterissuers",
            None,
            json!({"metadata": {"name": name}, "spec": {"acme": {"server": server, "email": "ops@example.com", "solvers": [{"http01": {"ingress": {"ingressClassName": "cilium"}}}]}}}),
        );
    }
}

/// Lookout with the probe on, over `clusters` whose controllers and listeners run, ready;
/// the first cluster set up with `cilium_config` and IPv4 alone.
pub(crate) async fn probed_app(clusters: &[&str], cilium_config: Value) -> TestApp {
    let ports = free_ports();
    let app = app_with(clusters)
        .with_controllers()
        .edge(ports)
        .probe(settings(ports, &["127.0.0.0/8", "::1/128"]))
        .await;
    app.wait_ready().await;
    cluster_setup(&app, 0, cilium_config, &["IPv4"]);
    app
}

pub(crate) fn ingress(app: &TestApp, cluster: usize, name: &str, issuer: &str, extra: Value) {
    routed_ingress(
        app,
        cluster,
        name,
        issuer,
        extra,
        json!([{"host": format!("{name}.example.com")}]),
    );
}

/// An Ingress whose rule routes `/` to its application.
pub(crate) fn app_ingress(app: &TestApp, cluster: usize, name: &str, issuer: &str, extra: Value) {
    let rules = json!([{"host": format!("{name}.example.com"), "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {"service": {"name": name, "port": {"number": 80}}}}]}}]);
    routed_ingress(app, cluster, name, issuer, extra, rules);
}

pub(crate) fn routed_ingress(
    app: &TestApp,
    cluster: usize,
    name: &str,
    issuer: &str,
    extra: Value,
    rules: Value,
) {
    let host = format!("{name}.example.com");
    let mut annotations = json!({"cert-manager.io/cluster-issuer": issuer});
    if let Some(more) = extra.as_object() {
        for (k, v) in more {
            annotations[k] = v.clone();
        }
    }
    create(
        app,
        cluster,
        "networking.k8s.io",
        "ingresses",
        Some("default"),
        json!({"metadata": {"name": name, "annotations": annotations},
        "spec": {"ingressClassName": "cilium", "rules": rules, "tls": [{"hosts": [host], "secretName": format!("{name}-tls")}]}}),
    );
}

/// The probe rules that fired on `object` (kind/name) in `cluster`.
async fn fired(app: &TestApp, cluster: &str) -> Vec<(String, String, String)> {
    let findings = app
        .json(&format!("/api/v1/findings?cluster={cluster}&per_page=500"))
        .await;
    findings["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"].as_str().unwrap().starts_with("probe."))
        .map(|f| {
            (
                f["rule"].as_str().unwrap().to_string(),
                f["name"].as_str().unwrap().to_string(),
                f["message"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn has(found: &[(String, String, String)], rule: &str, name: &str) -> bool {
    found.iter().any(|(r, n, _)| r == rule && n == name)
}

#[tokio::test(flavor = "multi_thread")]
async fn each_probe_rule_fires_on_what_the_listeners_serve_and_not_on_the_healthy_host() {
    let ports = free_ports();
    let app = app_with(&["plain", "proxied"])
        .with_controllers()
        .edge(ports)
        .probe(settings(ports, &["127.0.0.0/8", "::1/128"]))
        .await;
    app.wait_ready().await;
    cluster_setup(
        &app,
        0,
        json!({"enforce-ingress-https": "false", "ingress-default-lb-mode": "shared"}),
        &["IPv4", "IPv6"],
    );
    cluster_setup(
        &app,
        1,
        json!({"enforce-ingress-https": "false", "ingress-default-lb-mode": "shared", "enable-ingress-proxy-protocol": "true"}),
        &["IPv4"],
    );
    // Healthy: issued by production, served as issued, ACME path to the solver (404).
    ingress(&app, 0, "good", "letsencrypt-prod", json!({}));
    // A Secret managed by hand (no Certificate: cert-manager would renew an expired copy at
    // once) whose certificate has expired.
    let now = chrono::Utc::now();
    let hand_made = |name: &str, names: &[&str], not_after_days: i64| {
        let (chain, key) = kubesim::sim::pki::issue(
            kubesim::sim::pki::Hierarchy::Production,
            &names.iter().map(|n| n.to_string()).collect::<Vec<_>>(),
            now - chrono::Duration::days(90 + not_after_days.abs()),
            now + chrono::Duration::days(not_after_days),
            99,
        )
        .unwrap();
        create(
            &app,
            0,
            "",
            "secrets",
            Some("default"),
            json!({"metadata": {"name": format!("{name}-tls")}, "type": "kubernetes.io/tls", "data": {"tls.crt": chain, "tls.key": key}}),
        );
        create(
            &app,
            0,
            "networking.k8s.io",
            "ingresses",
            Some("default"),
            json!({"metadata": {"name": name},
            "spec": {"ingressClassName": "cilium", "rules": [{"host": format!("{name}.example.com")}], "tls": [{"hosts": [format!("{name}.example.com")], "secretName": format!("{name}-tls")}]}}),
        );
    };
    hand_made("stale", &["stale.example.com"], -1);
    // Issued by staging: served as issued, but not trusted.
    ingress(&app, 0, "staging", "letsencrypt-staging", json!({}));
    // A Secret managed by hand whose certificate names another host: Cilium's filter chain
    // for the host serves it all the same.
    hand_made("broken", &["elsewhere.example.com"], 60);
    // HTTPS enforced on this host, whose application routes `/`: the ACME path is
    // redirected, issuance fails, and with no Secret the listener resets the handshake.
    app_ingress(
        &app,
        0,
        "redirected",
        "letsencrypt-prod",
        json!({"ingress.cilium.io/force-https": "enabled"}),
    );
    // PROXY protocol on an IPv4-only cluster. cert-manager's self-check cannot pass there
    // (cert-manager#466), so the host serves a certificate from before: its Secret exists.
    let now = chrono::Utc::now();
    let (chain, key) = kubesim::sim::pki::issue(
        kubesim::sim::pki::Hierarchy::Production,
        &["proxied.example.com".into()],
        now - chrono::Duration::days(30),
        now + chrono::Duration::days(60),
        98,
    )
    .unwrap();
    create(
        &app,
        1,
        "",
        "secrets",
        Some("default"),
        json!({"metadata": {"name": "proxied-tls"}, "type": "kubernetes.io/tls", "data": {"tls.crt": chain, "tls.key": key}}),
    );
    ingress(&app, 1, "proxied", "letsencrypt-prod", json!({}));

    let issued = |name: &'static str| {
        let app = &app;
        async move {
            app.json_opt(&format!("/api/v1/certificates/plain/default/{name}-tls"))
                .await
                .is_some_and(|c| c["certificate"]["ready"]["status"] == "True")
        }
    };
    within(60, "good and staging are issued", || async {
        issued("good").await && issued("staging").await
    })
    .await;
    within(60, "every probe rule has fired where it should", || async {
        let plain = fired(&app, "plain").await;
        let proxied = fired(&app, "proxied").await;
        // Seen on both families (a loaded machine may see one address a round later).
        let stale_on_both = plain.iter().any(|(r, n, m)| {
            r == "probe.expired" && n == "stale" && m.contains("127.1.") && m.contains("[::1]")
        });
        stale_on_both
            && has(&plain, "probe.untrusted", "staging-tls")
            && has(&plain, "probe.acme-path-redirected", "redirected")
            && has(&plain, "probe.no-certificate", "redirected-tls")
            && has(&plain, "probe.name-mismatch", "broken")
            && has(&proxied, "probe.proxy-protocol", "proxied")
            && has(&proxied, "probe.unreachable", "proxied")
    })
    .await;
    // The healthy host: nothing observed against it, on either family — once a round has
    // looked at it since its certificate was issued (a round that began before saw the
    // listener without a certificate for it).
    within(
        20,
        "nothing is observed against the healthy host",
        || async {
            !fired(&app, "plain")
                .await
                .iter()
                .any(|(_, n, _)| n.starts_with("good"))
        },
    )
    .await;
    let plain = fired(&app, "plain").await;
    let proxied = fired(&app, "proxied").await;
    // Staging is served as issued: untrusted, not "another certificate".
    assert!(
        !has(&plain, "probe.wrong-certificate", "staging-tls"),
        "{plain:#?}"
    );
    let stale = plain
        .iter()
        .find(|(r, n, _)| r == "probe.expired" && n == "stale")
        .unwrap();
    // No Certificate holds a valid one: not worded as a stale copy.
    assert!(!stale.2.contains("stale copy"), "{}", stale.2);
    assert!(
        stale.2.contains("127.1.") && stale.2.contains("[::1]"),
        "both families: {}",
        stale.2
    );
    let redirected = plain
        .iter()
        .find(|(r, n, _)| r == "probe.acme-path-redirected" && n == "redirected")
        .unwrap();
    assert!(
        redirected.2.contains("301")
            && redirected.2.contains(
                "Location https://redirected.example.com/.well-known/acme-challenge/<token>"
            ),
        "{}",
        redirected.2
    );
    // The redirect echoes each round's new token; the failure still began when it began.
    let since = || async {
        let found = app
            .json("/api/v1/findings?cluster=plain&rule=probe.acme-path-redirected&per_page=500")
            .await;
        found["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == "redirected")
            .map(|f| f["since"].clone())
    };
    let first = since().await;
    assert!(first.as_ref().is_some_and(|s| s.is_string()), "{first:?}");
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    assert_eq!(since().await, first, "three rounds later");
    // Only the IPv6 family is down, and it says so.
    let down: Vec<_> = proxied
        .iter()
        .filter(|(r, _, _)| r == "probe.unreachable")
        .collect();
    assert_eq!(down.len(), 1, "{proxied:#?}");
    assert!(
        down[0].2.contains("every IPv6 address") && down[0].2.contains("cilium/cilium#42950"),
        "{}",
        down[0].2
    );
    // No unreachable finding on the cluster without PROXY protocol.
    assert!(
        !plain
            .iter()
            .any(|(r, _, _)| r == "probe.unreachable" || r == "probe.proxy-protocol"),
        "{plain:#?}"
    );

    // The observations: the served leaf beside the issued one, per address.
    let probes = app
        .json("/api/v1/probes?cluster=plain&host=good.example.com")
        .await;
    let items = probes["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "IPv4 and IPv6: {probes:#}");
    let detail = app
        .json("/api/v1/certificates/plain/default/good-tls")
        .await;
    let issued_serial = detail["requests"][0]["request"]["issued"]["serial"]
        .as_str()
        .unwrap_or_else(|| panic!("the issued leaf is on the request: {detail:#}"))
        .to_string();
    for o in items {
        assert_eq!(o["tls"]["leaf"]["serial"], issued_serial.as_str(), "{o:#}");
        assert!(o["tls"]["untrusted"].is_null(), "{o:#}");
        assert_eq!(o["acme"]["status"], 404, "{o:#}");
        assert_eq!(o["needs_proxy_header"], false);
    }
    assert_eq!(detail["clients_get"].as_array().unwrap().len(), 2);
    // Stored once per change, not once per round: no address has two consecutive rows with
    // the same outcome, and each has fewer rows than rounds ran. (A loaded machine can time
    // a probe out, which is a change too, so the count alone is not the property.)
    within(30, "six rounds", || async {
        app.json("/api/v1/probes?host=none").await["round"]["rounds"]
            .as_u64()
            .is_some_and(|n| n >= 6)
    })
    .await;
    let pool = sqlx::SqlitePool::connect(&format!(
        "sqlite://{}",
        app.dir.path().join("lookout.db").display()
    ))
    .await
    .unwrap();
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT address, outcome FROM probe_results WHERE cluster = 'plain' AND host = 'good.example.com' ORDER BY id",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let rounds = app.json("/api/v1/probes?host=none").await["round"]["rounds"]
        .as_u64()
        .unwrap();
    let mut per_address: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for (address, outcome) in &rows {
        per_address.entry(address).or_default().push(outcome);
    }
    assert_eq!(per_address.len(), 2, "two addresses: {rows:#?}");
    for (address, outcomes) in &per_address {
        assert!(
            outcomes.windows(2).all(|w| w[0] != w[1]),
            "{address} stored an unchanged outcome again: {outcomes:#?}"
        );
        assert!(
            (outcomes.len() as u64) < rounds,
            "{address}: {} rows in {rounds} rounds",
            outcomes.len()
        );
    }
    // /metrics: what each host served, and which family failed.
    let metrics = app.get("/metrics").await.text().await.unwrap();
    assert!(
        metrics.contains("lookout_probe_certificate_not_after_seconds{cluster=\"plain\",host=\"good.example.com\"}"),
        "{metrics}"
    );
    assert!(
        metrics.contains("lookout_probe_served{cluster=\"proxied\",host=\"proxied.example.com\",family=\"IPv6\"} 0"),
        "{metrics}"
    );
    assert!(metrics.contains("lookout_probe_rounds_total "));
    let csv = app
        .get("/api/v1/probes.csv?cluster=plain&host=good.example.com")
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(csv.lines().count(), 3, "a header and two addresses: {csv}");
    assert!(
        csv.lines().next().unwrap().contains("tls.leaf.serial"),
        "{csv}"
    );
    let page = app
        .get("/certificates/plain/default/good-tls")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("What clients get"),
        "the chain view shows the served certificate"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_probe_never_connects_outside_the_allowed_networks() {
    let ports = free_ports();
    // Listeners of our own where a hostile status points: they count every connection.
    let hits = Arc::new(AtomicUsize::new(0));
    for ip in ["127.9.9.9", "127.0.0.1"] {
        for port in [ports.https, ports.http] {
            let l = tokio::net::TcpListener::bind((ip.parse::<IpAddr>().unwrap(), port))
                .await
                .unwrap();
            let hits = hits.clone();
            tokio::spawn(async move {
                while let Ok((_s, _)) = l.accept().await {
                    hits.fetch_add(1, Ordering::SeqCst);
                }
            });
        }
    }
    let app = app_with(&["edge"])
        .with_controllers()
        .edge(ports)
        .probe(settings(
            ports,
            &["127.1.0.0/16", "127.2.0.0/16", "::1/128"],
        ))
        .await;
    app.wait_ready().await;
    cluster_setup(
        &app,
        0,
        json!({"enforce-ingress-https": "false", "ingress-default-lb-mode": "shared"}),
        &["IPv4", "IPv6"],
    );
    ingress(&app, 0, "good", "letsencrypt-prod", json!({}));
    // Not Cilium's: its status is whatever its writer says — an address outside the allowed
    // networks, and a hostname that resolves to loopback.
    create(
        &app,
        0,
        "networking.k8s.io",
        "ingresses",
        Some("default"),
        json!({"metadata": {"name": "hostile"},
        "spec": {"ingressClassName": "other", "tls": [{"hosts": ["hostile.example.com"], "secretName": "hostile-tls"}]}}),
    );
    let c = &app.fleet.clusters[0].cluster;
    let rt = c.resolve("networking.k8s.io", "ingresses").unwrap();
    let status = kubesim::WriteOpts {
        status: true,
        ..kubesim::WriteOpts::system()
    };
    c.merge_patch(&rt, Some("default"), "hostile", &json!({"status": {"loadBalancer": {"ingress": [{"ip": "127.9.9.9"}, {"hostname": "localhost"}, {"ip": "169.254.169.254"}]}}}), &status)
        .unwrap();
    within(
        30,
        "the allowed host is probed over both families",
        || async {
            app.json("/api/v1/probes?host=good.example.com").await["items"]
                .as_array()
                .is_some_and(|i| i.len() == 2)
        },
    )
    .await;
    // A few more rounds with the hostile status in place.
    within(30, "rounds ran with the hostile status", || async {
        app.json("/api/v1/probes").await["round"]["refused"]
            .as_u64()
            .unwrap_or(0)
            >= 2
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "nothing connected to a refused address"
    );
    let probes = app.json("/api/v1/probes").await;
    assert!(
        probes["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|o| o["address"] != "127.9.9.9"
                && o["address"] != "127.0.0.1"
                && o["address"] != "169.254.169.254"),
        "{probes:#}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_host_is_probed_again_as_soon_as_its_objects_change_not_at_the_next_round() {
    let ports = free_ports();
    // One round an hour: anything seen after the first comes from a recheck on change.
    let mut slow = settings(ports, &["127.0.0.0/8", "::1/128"]);
    slow.interval = Duration::from_secs(3600);
    let app = app_with(&["plain"])
        .with_controllers()
        .edge(ports)
        .probe(slow)
        .await;
    app.wait_ready().await;
    cluster_setup(
        &app,
        0,
        json!({"enforce-ingress-https": "false", "ingress-default-lb-mode": "shared"}),
        &["IPv4"],
    );
    within(30, "the first round is done", || async {
        app.json("/api/v1/probes").await["round"]["rounds"]
            .as_u64()
            .is_some_and(|n| n >= 1)
    })
    .await;
    // A new Ingress after the round: probed at once, and again once its certificate is
    // issued, so what clients get is the issued certificate — no probe finding.
    ingress(&app, 0, "late", "letsencrypt-prod", json!({}));
    within(
        30,
        "the new host is probed without waiting an hour",
        || async {
            app.json("/api/v1/probes?host=late.example.com").await["items"]
                .as_array()
                .is_some_and(|items| !items.is_empty())
        },
    )
    .await;
    within(
        60,
        "the issued certificate is what the probe sees served",
        || async {
            let issued = app
                .json_opt("/api/v1/certificates/plain/default/late-tls")
                .await
                .is_some_and(|c| c["certificate"]["ready"]["status"] == "True");
            let served = app.json("/api/v1/probes?host=late.example.com").await["items"]
                .as_array()
                .unwrap()
                .iter()
                .all(|o| {
                    o["tls"]["leaf"]["names"]
                        .as_array()
                        .is_some_and(|n| n.iter().any(|n| n == "late.example.com"))
                });
            let findings = fired(&app, "plain").await;
            issued && served && !findings.iter().any(|(_, name, _)| name.starts_with("late"))
        },
    )
    .await;
    assert_eq!(
        app.json("/api/v1/probes").await["round"]["rounds"].as_u64(),
        Some(1),
        "no second round ran: the rechecks did it"
    );
    app.stop().await;
}

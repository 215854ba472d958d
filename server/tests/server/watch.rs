//! The watchers and rules against kubesim: findings appear within a second of a change,
//! relists lose and duplicate nothing, a dead cluster goes stale alone, and missing CRDs.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::helpers::*;

fn rules_of(findings: &Value, name: &str) -> Vec<String> {
    findings["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["name"] == name)
        .map(|f| f["rule"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_ingress_shows_its_findings_within_a_second() {
    let app = spawn_app(&["zrh-prod"]).await;
    app.wait_ready().await;
    create(
        &app,
        0,
        "cert-manager.io",
        "clusterissuers",
        None,
        json!({"metadata": {"name": "letsencrypt-prod"}, "spec": {"acme": {"server": "https://acme-v02.api.letsencrypt.org/directory", "solvers": [{"http01": {"ingress": {}}}]}},
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "ACMEAccountRegistered"}]}}),
    );
    // The issuer comes through its own watch; have it cached before the Ingress arrives.
    app.eventually("the ClusterIssuer cached", || async {
        app.json("/api/v1/clusters").await["items"][0]["kinds"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k["kind"] == "ClusterIssuer" && k["objects"] == 1)
    })
    .await;
    let started = Instant::now();
    create(
        &app,
        0,
        "networking.k8s.io",
        "ingresses",
        Some("default"),
        ingress(
            "shop",
            json!({"cert-manager.io/cluster-issuer": "letsencrypt-prod"}),
        ),
    );
    let deadline = started + Duration::from_secs(1);
    loop {
        let f = app
            .json("/api/v1/findings?rule=ingress.edit-in-place-missing")
            .await;
        if rules_of(&f, "shop") == vec!["ingress.edit-in-place-missing"] {
            break;
        }
        assert!(Instant::now() < deadline, "no finding within 1 s: {f}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A missing issuer is critical; the ClusterIssuer above exists, so there is none.
    let all = app.json("/api/v1/findings?cluster=zrh-prod").await;
    assert!(
        !rules_of(&all, "shop").contains(&"issuer.missing".to_string()),
        "{all}"
    );
    let detail = app.json("/api/v1/ingresses/zrh-prod/default/shop").await;
    assert_eq!(detail["annotation"]["status"], "missing");
    assert!(detail["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["rule"] == "ingress.edit-in-place-missing"));
    assert!(detail["findings"][0]["remediation"].as_str().unwrap().len() > 20);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_chain_links_ingress_certificate_request_order_and_challenge() {
    let app = spawn_app(&["zrh-prod"]).await;
    app.wait_ready().await;
    create(
        &app,
        0,
        "networking.k8s.io",
        "ingresses",
        Some("default"),
        ingress(
            "shop",
            json!({"cert-manager.io/cluster-issuer": "letsencrypt-prod"}),
        ),
    );
    let ing_uid = app.fleet.clusters[0]
        .cluster
        .get(
            &app.fleet.clusters[0]
                .cluster
                .resolve("networking.k8s.io", "ingresses")
                .unwrap(),
            Some("default"),
            "shop",
        )
        .unwrap()["metadata"]["uid"]
        .clone();
    let owner = |kind: &str, name: &str, uid: Value, api: &str| json!([{"apiVersion": api, "kind": kind, "name": name, "uid": uid, "controller": true}]);
    create(
        &app,
        0,
        "cert-manager.io",
        "certificates",
        Some("default"),
        json!({"metadata": {"name": "shop-tls", "ownerReferences": owner("Ingress", "shop", ing_uid, "networking.k8s.io/v1")},
        "spec": {"secretName": "shop-tls", "dnsNames": ["shop.example.com"], "issuerRef": {"name": "letsencrypt-prod", "kind": "ClusterIssuer"}}}),
    );
    create(
        &app,
        0,
        "cert-manager.io",
        "certificaterequests",
        Some("default"),
        json!({"metadata": {"name": "shop-tls-1", "annotations": {"cert-manager.io/certificate-revision": "1"}, "ownerReferences": controlled_by(&app, "cert-manager.io/v1", "Certificate", "certificates", "shop-tls")}, "spec": {"request": ""}}),
    );
    create(
        &app,
        0,
        "acme.cert-manager.io",
        "orders",
        Some("default"),
        json!({"metadata": {"name": "shop-tls-1-1", "ownerReferences": controlled_by(&app, "cert-manager.io/v1", "CertificateRequest", "certificaterequests", "shop-tls-1")}, "spec": {"dnsNames": ["shop.example.com"]}}),
    );
    create(
        &app,
        0,
        "acme.cert-manager.io",
        "challenges",
        Some("default"),
        json!({"metadata": {"name": "shop-tls-1-1-1", "ownerReferences": controlled_by(&app, "acme.cert-manager.io/v1", "Order", "orders", "shop-tls-1-1")},
        "spec": {"dnsName": "shop.example.com", "type": "HTTP-01"}}),
    );
    // Status is written through the status subresource, as cert-manager does.
    let c = &app.fleet.clusters[0].cluster;
    let rt = c.resolve("acme.cert-manager.io", "challenges").unwrap();
    let mut opts = kubesim::WriteOpts::system();
    opts.status = true;
    c.merge_patch(&rt, Some("default"), "shop-tls-1-1-1", &json!({"status": {"state": "invalid", "presented": true, "reason": "Error accepting authorization: acme: authorization error for shop.example.com: 403 urn:ietf:params:acme:error:unauthorized: 192.0.2.1: Invalid response from https://shop.example.com/.well-known/acme-challenge/x: 404"}}), &opts).unwrap();

    app.eventually("the chain is complete", || async {
        let d = app
            .json_opt("/api/v1/ingresses/zrh-prod/default/shop")
            .await;
        d.is_some_and(|d| {
            d["tls"][0]["certificate"]["requests"][0]["orders"][0]["challenges"][0]["state"]
                == "invalid"
        })
    })
    .await;
    let d = app.json("/api/v1/ingresses/zrh-prod/default/shop").await;
    // The CA's verdict names the https:// URL it was redirected to: classified as such.
    let failure =
        &d["tls"][0]["certificate"]["requests"][0]["orders"][0]["challenges"][0]["failure"];
    assert_eq!(failure["class"], "redirected", "{failure:#}");
    assert_eq!(failure["label"], "redirected to HTTPS");
    assert!(failure["explanation"].as_str().unwrap().contains("HTTPS"));
    let rules: Vec<&str> = d["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    assert!(rules.contains(&"acme.challenge-failing"), "{rules:?}");
    assert!(
        rules.contains(&"issuer.missing"),
        "letsencrypt-prod does not exist: {rules:?}"
    );
    let critical_missing = d["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "ingress.edit-in-place-missing")
        .unwrap();
    assert_eq!(
        critical_missing["severity"], "critical",
        "critical while a redirect fails its challenge"
    );
    let cert = app
        .json("/api/v1/certificates/zrh-prod/default/shop-tls")
        .await;
    assert_eq!(cert["ingress"], "shop");
    assert_eq!(cert["requests"][0]["current"], true);
    let html = app
        .get("/ingresses/zrh-prod/default/shop")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        html.contains("redirected to HTTPS: plain-HTTP requests"),
        "the failure reason in plain words"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_410_relist_loses_and_duplicates_nothing() {
    let app = spawn_app(&["zrh-prod"]).await;
    app.wait_ready().await;
    for i in 0..20 {
        create(
            &app,
            0,
            "networking.k8s.io",
            "ingresses",
            Some("default"),
            ingress(&format!("app-{i:02}"), json!({})),
        );
    }
    app.eventually("20 Ingresses", || async {
        app.json("/api/v1/ingresses").await["total"] == 20
    })
    .await;
    let c = &app.fleet.clusters[0].cluster;
    c.expire_watches();
    // Changes while the watchers relist.
    let rt = c.resolve("networking.k8s.io", "ingresses").unwrap();
    c.delete(&rt, Some("default"), "app-00", false).unwrap();
    for i in 20..25 {
        create(
            &app,
            0,
            "networking.k8s.io",
            "ingresses",
            Some("default"),
            ingress(&format!("app-{i:02}"), json!({})),
        );
    }
    c.expire_watches();
    app.eventually("exactly the 24 live Ingresses", || async {
        let list = app.json("/api/v1/ingresses?per_page=1000").await;
        let names: Vec<&str> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["name"].as_str().unwrap())
            .collect();
        let expected: Vec<String> = (1..25).map(|i| format!("app-{i:02}")).collect();
        list["total"] == 24 && names == expected.iter().map(String::as_str).collect::<Vec<_>>()
    })
    .await;
    let clusters = app.json("/api/v1/clusters").await;
    assert_eq!(clusters["items"][0]["state"], "synced");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_api_server_back_with_lower_resource_versions_is_listed_again_at_once() {
    let app = spawn_app(&["zrh-prod"]).await;
    app.wait_ready().await;
    for name in ["kept", "removed"] {
        add_ingress(&app, 0, name);
    }
    app.eventually("two Ingresses", || async {
        app.json("/api/v1/ingresses").await["total"] == 2
    })
    .await;
    let c = &app.fleet.clusters[0].cluster;
    let rt = c.resolve("networking.k8s.io", "ingresses").unwrap();
    // Many writes, so that the versions the watchers hold are far above the number of
    // objects the reset numbers from 1 (as after a restore from an older etcd backup).
    for i in 0..300 {
        c.merge_patch(
            &rt,
            Some("default"),
            "kept",
            &json!({"spec": {"rules": [{"host": format!("kept-{i}.example.com")}]}}),
            &kubesim::WriteOpts::system(),
        )
        .unwrap();
    }
    app.eventually("the last write seen", || async {
        app.json("/api/v1/ingresses/zrh-prod/default/kept")
            .await
            .to_string()
            .contains("kept-299.example.com")
    })
    .await;
    c.reset_resource_versions();
    // Changes after the reset carry versions the watchers have already seen, so resuming
    // would miss them even if the server allowed it.
    c.delete(&rt, Some("default"), "removed", false).unwrap();
    add_ingress(&app, 0, "added");
    // Resuming from the versions they hold can never work (504 ResourceVersionTooLarge); the
    // watchers list again at once instead of retrying them.
    let started = Instant::now();
    app.eventually("exactly the live Ingresses", || async {
        let list = app.json("/api/v1/ingresses?per_page=100").await;
        let names: Vec<&str> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["name"].as_str().unwrap())
            .collect();
        names == ["added", "kept"]
    })
    .await;
    assert!(started.elapsed() < Duration::from_secs(10));
    let clusters = app.json("/api/v1/clusters").await;
    assert_eq!(clusters["items"][0]["state"], "synced", "{clusters}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cluster_whose_api_goes_away_is_stale_while_others_update() {
    let app = spawn_app(&["zrh-prod", "gva-prod"]).await;
    app.wait_ready().await;
    add_ingress(&app, 0, "before");
    app.eventually("the first Ingress", || async {
        app.json("/api/v1/ingresses?cluster=zrh-prod").await["total"] == 1
    })
    .await;
    app.fleet.clusters[0].stop();
    app.eventually("zrh-prod is stale with an error", || async {
        let c = app.json("/api/v1/clusters").await;
        c["items"][0]["state"] == "stale"
            && c["items"][0]["error"]
                .as_str()
                .is_some_and(|e| !e.is_empty())
    })
    .await;
    // Its cached data stays visible, and the unreachable finding is raised.
    assert_eq!(
        app.json("/api/v1/ingresses?cluster=zrh-prod").await["total"],
        1
    );
    let f = app.json("/api/v1/findings?rule=cluster.unreachable").await;
    assert_eq!(f["items"][0]["cluster"], "zrh-prod");
    // The other cluster keeps updating.
    add_ingress(&app, 1, "after");
    app.eventually("gva-prod still updates", || async {
        app.json("/api/v1/ingresses?cluster=gva-prod").await["total"] == 1
    })
    .await;
    assert_eq!(
        app.json("/api/v1/clusters").await["items"][1]["state"],
        "synced"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn cert_manager_missing_only_when_ingresses_ask_for_certificates() {
    let app = app_with(&["bare"]).without_crds().await;
    app.wait_ready().await;
    let clusters = app.json("/api/v1/clusters").await;
    let kinds = clusters["items"][0]["kinds"].as_array().unwrap();
    let cert = kinds.iter().find(|k| k["kind"] == "Certificate").unwrap();
    assert_eq!(cert["state"], "not_installed");
    add_ingress(&app, 0, "plain");
    app.eventually("the plain Ingress", || async {
        app.json("/api/v1/ingresses").await["total"] == 1
    })
    .await;
    assert_eq!(
        app.json("/api/v1/findings?rule=cluster.cert-manager-missing")
            .await["items"],
        json!([])
    );
    create(
        &app,
        0,
        "networking.k8s.io",
        "ingresses",
        Some("default"),
        ingress(
            "wants-cert",
            json!({"cert-manager.io/cluster-issuer": "letsencrypt-prod"}),
        ),
    );
    app.eventually("cluster.cert-manager-missing", || async {
        app.json("/api/v1/findings?rule=cluster.cert-manager-missing")
            .await["items"]
            .as_array()
            .unwrap()
            .len()
            == 1
    })
    .await;
    // Installing the CRDs later is noticed (re-checked every 500 ms in tests).
    kubesim::fleet::install_builtin_crds(&app.fleet.clusters[0].cluster);
    app.eventually("Certificates are watched once installed", || async {
        let c = app.json("/api/v1/clusters").await;
        c["items"][0]["kinds"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k["kind"] == "Certificate" && k["state"] == "synced")
    })
    .await;
    assert_eq!(
        app.json("/api/v1/findings?rule=cluster.cert-manager-missing")
            .await["items"],
        json!([])
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn cert_manager_served_only_at_an_unknown_version_is_named_not_mistaken_for_absent() {
    let app = app_with(&["zrh-prod"]).without_crds().await;
    app.wait_ready().await;
    // cert-manager before 1.0: its Certificates at v1alpha2 only.
    let c = &app.fleet.clusters[0].cluster;
    let rt = c
        .resolve("apiextensions.k8s.io", "customresourcedefinitions")
        .unwrap();
    c.create(
        &rt,
        None,
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "certificates.cert-manager.io"},
            "spec": {"group": "cert-manager.io", "scope": "Namespaced",
                     "names": {"plural": "certificates", "singular": "certificate", "kind": "Certificate", "listKind": "CertificateList"},
                     "versions": [{"name": "v1alpha2", "served": true, "storage": true,
                                   "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
        }),
        &kubesim::WriteOpts::system(),
    )
    .unwrap();
    app.eventually("the Certificate kind names the versions served", || async {
        let clusters = app.json("/api/v1/clusters").await;
        clusters["items"][0]["kinds"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| {
                k["kind"] == "Certificate"
                    && k["state"] == "unsupported_version"
                    && k["served"] == json!(["cert-manager.io/v1alpha2"])
                    && k["reads"] == "cert-manager.io/v1"
            })
    })
    .await;
    let clusters = app.json("/api/v1/clusters").await;
    assert_eq!(clusters["items"][0]["state"], "synced", "{clusters}");
    let page = app.get("/clusters").await.text().await.unwrap();
    assert!(
        page.contains("served only as cert-manager.io/v1alpha2 (Lookout reads cert-manager.io/v1)"),
        "the clusters page says so"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_objects_are_projected_as_far_as_they_go_beside_their_neighbours() {
    let app = spawn_app(&["zrh-prod"]).await;
    app.wait_ready().await;
    let huge = "x".repeat(200 * 1024);
    let bad_ingresses = [
        json!({"metadata": {"name": "wrong-types", "annotations": {"big": huge, "cert-manager.io/cluster-issuer": "le"}},
               "spec": {"rules": "not a list", "tls": [{"hosts": 5, "secretName": ["x"]}], "ingressClassName": 7}}),
        json!({"metadata": {"name": "umlaut"},
               "spec": {"rules": [{"host": "bücher.example"}], "tls": [{"hosts": ["bücher.example"], "secretName": "b-tls"}]}}),
    ];
    for obj in bad_ingresses {
        create(
            &app,
            0,
            "networking.k8s.io",
            "ingresses",
            Some("default"),
            obj,
        );
    }
    add_ingress(&app, 0, "neighbour");
    let certificates = [
        (
            json!({"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
                   "metadata": {"name": "bad-times"},
                   "spec": {"secretName": "bt-tls", "dnsNames": "not a list", "issuerRef": 3}}),
            json!({"notAfter": "yesterday", "renewalTime": 12, "conditions": "ready"}),
        ),
        (
            json!({"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
                   "metadata": {"name": "fine"},
                   "spec": {"secretName": "fine-tls", "dnsNames": ["fine.example.com"], "issuerRef": {"name": "le", "kind": "ClusterIssuer"}}}),
            json!({"notAfter": "2099-01-01T00:00:00Z", "conditions": [{"type": "Ready", "status": "True", "reason": "Ready", "message": "ok"}]}),
        ),
    ];
    for (obj, status) in certificates {
        let name = obj["metadata"]["name"].as_str().unwrap().to_string();
        create(
            &app,
            0,
            "cert-manager.io",
            "certificates",
            Some("default"),
            obj,
        );
        patch_status(&app, "cert-manager.io", "certificates", &name, status);
    }
    app.eventually("every object cached with its status", || async {
        app.json("/api/v1/ingresses").await["total"] == 3
            && app.json("/api/v1/certificates/zrh-prod/default/fine").await["certificate"]["ready"]
                ["status"]
                == "True"
    })
    .await;
    assert_eq!(app.json("/api/v1/certificates").await["total"], 2);
    let clusters = app.json("/api/v1/clusters").await;
    assert_eq!(clusters["items"][0]["state"], "synced", "{clusters}");
    assert!(clusters["items"][0]["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .all(|k| k["state"] != "error"));
    let bad = app
        .json("/api/v1/certificates/zrh-prod/default/bad-times")
        .await;
    assert!(
        bad["certificate"]["not_after"].is_null(),
        "an invalid time is left out, not guessed: {bad}"
    );
    let wrong = app
        .json("/api/v1/ingresses/zrh-prod/default/wrong-types")
        .await;
    assert_eq!(wrong["ingress"]["hosts"], json!([]), "{wrong}");
    // The non-ASCII host is kept as written and found by search.
    let umlaut = app.json("/api/v1/ingresses/zrh-prod/default/umlaut").await;
    assert_eq!(umlaut["ingress"]["hosts"], json!(["bücher.example"]));
    let search = app.get("/search?q=b%C3%BCcher").await;
    assert_eq!(search.status(), 200);
    assert!(search.text().await.unwrap().contains("umlaut"));
    for page in [
        "/",
        "/ingresses",
        "/certificates",
        "/ingresses/zrh-prod/default/wrong-types",
    ] {
        let resp = app.get(page).await;
        assert_eq!(resp.status(), 200, "{page}");
        assert!(
            resp.text().await.unwrap().len() < 150 * 1024,
            "{page}: the 200 KiB annotation is not echoed whole"
        );
    }
    let metrics = app.get("/metrics").await.text().await.unwrap();
    assert!(
        !metrics.contains("lookout_objects_skipped_total{"),
        "nothing skipped"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn dropped_watches_resume_from_their_version_without_a_relist_or_a_lost_change() {
    let app = spawn_app(&["zrh-prod"]).await;
    app.wait_ready().await;
    for name in ["a", "b", "c"] {
        add_ingress(&app, 0, name);
    }
    app.eventually("three Ingresses", || async {
        app.json("/api/v1/ingresses").await["total"] == 3
    })
    .await;
    let relists = "lookout_watch_relists_total{cluster=\"zrh-prod\"}";
    let before = metric(&app, relists).await;
    let c = &app.fleet.clusters[0].cluster;
    let rt = c.resolve("networking.k8s.io", "ingresses").unwrap();
    // Watches end again and again; each time a change lands before they are back.
    for round in 0..5 {
        c.drop_watches();
        add_ingress(&app, 0, &format!("added-{round}"));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    c.drop_watches();
    c.delete(&rt, Some("default"), "a", false).unwrap();
    app.eventually("every change, none lost", || async {
        let list = app.json("/api/v1/ingresses?per_page=100").await;
        let names: Vec<&str> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["name"].as_str().unwrap())
            .collect();
        names
            == [
                "added-0", "added-1", "added-2", "added-3", "added-4", "b", "c",
            ]
    })
    .await;
    assert_eq!(
        metric(&app, relists).await,
        before,
        "the watches resumed from their resource versions; nothing was listed again"
    );
    app.stop().await;
}

/// ingress-shim skips a TLS block without hosts with a `BadConfig` event (kubesim words it as
/// cert-manager does); Lookout reports the Ingress's missing certificate at once, quoting the
/// event, without knowing the refusal itself.
#[tokio::test(flavor = "multi_thread")]
async fn a_bad_config_event_of_any_wording_makes_the_missing_certificate_a_finding() {
    let app = app_with(&["zrh-prod"]).with_controllers().await;
    app.wait_ready().await;
    let c = &app.fleet.clusters[0].cluster;
    let create = |group: &str, plural: &str, ns: Option<&str>, obj: Value| {
        let rt = c.resolve(group, plural).unwrap();
        c.create(&rt, ns, obj, &kubesim::WriteOpts::system())
            .unwrap();
    };
    create(
        "cert-manager.io",
        "clusterissuers",
        None,
        json!({"metadata": {"name": "letsencrypt-prod"}, "spec": {"acme": {"server": "https://acme-v02.api.letsencrypt.org/directory", "email": "ops@example.com", "solvers": [{"http01": {"ingress": {}}}]}}}),
    );
    create(
        "networking.k8s.io",
        "ingresses",
        Some("default"),
        json!({"metadata": {"name": "half", "annotations": {"cert-manager.io/cluster-issuer": "letsencrypt-prod"}},
               "spec": {"rules": [{"host": "half.example.com"}], "tls": [{"secretName": "half-tls"}]}}),
    );
    app.eventually("the finding quotes ingress-shim's event", || async {
        app.json("/api/v1/findings?rule=ingress.certificate-missing")
            .await
            .to_string()
            .contains("Skipped a TLS block: spec.tls[0].hosts: Required value")
    })
    .await;
    app.stop().await;
}

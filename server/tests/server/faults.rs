//! Clusters in trouble, made so with kubesim's fault injection: a blackholed API server, a
//! throttled relist, 500s, a 410 storm across the fleet. Each cluster fails alone, pages never
//! wait for it, and it recovers without losing anything.

use crate::helpers::*;
use std::time::{Duration, Instant};

/// Sets kubesim's fault injection on cluster `i`.
fn faults(app: &TestApp, i: usize, f: kubesim::faults::Faults) {
    app.fleet.clusters[i].cluster.set_faults(f);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_blackholed_cluster_is_unreachable_alone_pages_never_wait_and_it_recovers() {
    let app = app_with(&["zrh-prod", "gva-prod"])
        .tune(|s| s.list_timeout = Duration::from_secs(1))
        .await;
    app.wait_ready().await;
    add_ingress(&app, 0, "before");
    app.eventually("the first Ingress", || async {
        app.json("/api/v1/ingresses?cluster=zrh-prod").await["total"] == 1
    })
    .await;

    // Connections are accepted and never answered; the open watches end, so every new
    // request (the watches' and the probe's) hangs.
    faults(
        &app,
        0,
        kubesim::faults::Faults {
            blackhole: true,
            ..Default::default()
        },
    );
    app.fleet.clusters[0].cluster.drop_watches();
    app.eventually("zrh-prod is stale, naming the timeout", || async {
        let c = app.json("/api/v1/clusters").await;
        c["items"][0]["state"] == "stale"
            && c["items"][0]["error"]
                .as_str()
                .is_some_and(|e| e.contains("did not answer") || e.contains("no answer"))
    })
    .await;
    let f = app.json("/api/v1/findings?rule=cluster.unreachable").await;
    assert_eq!(f["items"][0]["cluster"], "zrh-prod");
    // Pages answer from the cache at once, the blackholed cluster's data included.
    for path in [
        "/",
        "/ingresses",
        "/clusters",
        "/api/v1/ingresses?cluster=zrh-prod",
    ] {
        let t = Instant::now();
        let r = app.get(path).await;
        assert_eq!(r.status(), 200, "{path}");
        assert!(
            t.elapsed() < Duration::from_millis(900),
            "{path} waited {:?}",
            t.elapsed()
        );
    }
    assert_eq!(
        app.json("/api/v1/ingresses?cluster=zrh-prod").await["total"],
        1
    );
    // The other cluster is unaffected.
    add_ingress(&app, 1, "elsewhere");
    app.eventually("gva-prod still updates", || async {
        app.json("/api/v1/ingresses?cluster=gva-prod").await["total"] == 1
    })
    .await;
    assert_eq!(
        app.json("/api/v1/clusters").await["items"][1]["state"],
        "synced"
    );

    // The cluster answers again: within a few list timeouts it is synced and current,
    // without waiting for the hung requests to time out (minutes).
    faults(&app, 0, kubesim::faults::Faults::default());
    add_ingress(&app, 0, "after");
    app.eventually("zrh-prod synced with the new Ingress", || async {
        let c = app.json("/api/v1/clusters").await;
        c["items"][0]["state"] == "synced"
            && app.json("/api/v1/ingresses?cluster=zrh-prod").await["total"] == 2
    })
    .await;
    assert!(
        app.json("/api/v1/findings?rule=cluster.unreachable").await["items"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_throttled_relist_waits_as_long_as_the_429_asks_keeps_the_data_and_catches_up() {
    let app = spawn_app(&["zrh-prod"]).await;
    app.wait_ready().await;
    add_ingress(&app, 0, "before");
    app.eventually("the first Ingress", || async {
        app.json("/api/v1/ingresses?cluster=zrh-prod").await["total"] == 1
    })
    .await;
    let sim = &app.fleet.clusters[0].cluster;
    // Kinds whose CRD is not installed (the policy engines here) are looked for again in
    // discovery every `crd_recheck` (0.5 s in the tests): throttled too, that look is
    // followed by a list, so each may send two requests — then waits as long as asked.
    let absent = app.json("/api/v1/clusters").await["items"][0]["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["state"] == "not_installed")
        .count() as u64;
    faults(
        &app,
        0,
        kubesim::faults::Faults {
            throttle_lists_retry_after: Some(3),
            ..Default::default()
        },
    );
    // Every watch must relist, and every list is answered 429 "retry after 3 s".
    sim.expire_watches();
    let started = Instant::now();
    while sim.throttled() == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no list was throttled"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(2500)).await;
    // One list per kind, a discovery look more per absent kind (and perhaps a probe);
    // default backoff alone would have retried each kind at about 0.8 s and 2.4 s.
    let kinds = lookout_server::watched_kinds() as u64;
    let within = sim.throttled();
    assert!(
        within <= kinds + absent + 2,
        "{within} throttled requests within 2.5 s for {kinds} kinds ({absent} not installed): Retry-After not honoured"
    );
    // Meanwhile the cached data is served as it was.
    assert_eq!(
        app.json("/api/v1/ingresses?cluster=zrh-prod").await["total"],
        1
    );
    // The throttling ends: the cluster catches up with a change made meanwhile.
    add_ingress(&app, 0, "during");
    faults(&app, 0, kubesim::faults::Faults::default());
    app.eventually(
        "synced with the Ingress created while throttled",
        || async {
            app.json("/api/v1/clusters").await["items"][0]["state"] == "synced"
                && app.json("/api/v1/ingresses?cluster=zrh-prod").await["total"] == 2
        },
    )
    .await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cluster_answering_500_is_stale_with_the_servers_words_and_recovers() {
    let app = app_with(&["zrh-prod"])
        .tune(|s| s.list_timeout = Duration::from_secs(1))
        .await;
    app.wait_ready().await;
    faults(
        &app,
        0,
        kubesim::faults::Faults {
            error_500: true,
            ..Default::default()
        },
    );
    app.fleet.clusters[0].cluster.drop_watches();
    app.eventually("stale, quoting the 500", || async {
        let c = app.json("/api/v1/clusters").await;
        c["items"][0]["state"] == "stale"
            && c["items"][0]["error"]
                .as_str()
                .is_some_and(|e| e.contains("kubesim fault injection (error_500)"))
    })
    .await;
    assert_eq!(
        app.json("/api/v1/findings?rule=cluster.unreachable").await["items"][0]["cluster"],
        "zrh-prod"
    );
    faults(&app, 0, kubesim::faults::Faults::default());
    add_ingress(&app, 0, "after");
    app.eventually("synced and current again", || async {
        app.json("/api/v1/clusters").await["items"][0]["state"] == "synced"
            && app.json("/api/v1/ingresses?cluster=zrh-prod").await["total"] == 1
    })
    .await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_410_storm_across_the_fleet_relists_a_few_kinds_at_a_time_and_loses_nothing() {
    let clusters = ["zrh-prod", "gva-prod", "lab-dev"];
    let app = app_with(&clusters).tune(|s| s.relist_concurrency = 2).await;
    app.wait_ready().await;
    for i in 0..clusters.len() {
        for n in 0..5 {
            add_ingress(&app, i, &format!("app-{n}"));
        }
    }
    app.eventually("every Ingress", || async {
        app.json("/api/v1/ingresses").await["total"] == 15
    })
    .await;
    assert_eq!(metric(&app, "lookout_relists_waited_total").await, 0.0);
    // Slow answers, so that relists overlap unless they take turns; then every watch of
    // every cluster expires at once, and the data changes meanwhile. Each watcher relists
    // after a jittered backoff, so on a loaded machine one storm's relists may happen not to
    // overlap (a CI run once saw none wait): up to three storms, until relists waited.
    for i in 0..clusters.len() {
        faults(
            &app,
            i,
            kubesim::faults::Faults {
                latency_ms: 400,
                ..Default::default()
            },
        );
    }
    let mut most = 0.0f64;
    for storm in 0..3 {
        for i in 0..clusters.len() {
            app.fleet.clusters[i].cluster.expire_watches();
            let c = &app.fleet.clusters[i].cluster;
            let rt = c.resolve("networking.k8s.io", "ingresses").unwrap();
            c.delete(&rt, Some("default"), &format!("app-{storm}"), false)
                .unwrap();
        }
        let left = 3 * (4 - storm);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            most = most.max(metric(&app, "lookout_relists_in_progress").await);
            let list = app.json("/api/v1/ingresses?per_page=100").await;
            if list["total"] == left && metric(&app, "lookout_relists_in_progress").await == 0.0 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "storm {storm} did not settle: {list}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(most <= 2.0, "at most two relists at a time, saw {most}");
        if metric(&app, "lookout_relists_waited_total").await >= 1.0 {
            break;
        }
    }
    assert!(
        metric(&app, "lookout_relists_waited_total").await >= 1.0,
        "relists took turns"
    );
    let states = app.json("/api/v1/clusters").await;
    for c in states["items"].as_array().unwrap() {
        assert_eq!(c["state"], "synced", "{c}");
    }
    app.stop().await;
}

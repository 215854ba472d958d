//! The clusters' HTTP client against an API server that serves HTTPS, as real ones do: every
//! watch and request of a cluster goes over one HTTP/2 connection (ALPN), changes still
//! arrive at once over it, and a kubeconfig without a CA is verified against the system's
//! roots — never accepted blindly.

use std::path::Path;

use lookout_server::config::ClusterConfig;
use serde_json::Value;

use crate::helpers::*;

/// Established TCP connections from this process to `port` (Linux: `/proc/net/tcp*`). The
/// test process holds kubesim too, whose accepted sockets have `port` as their local port,
/// not their remote one: they are not counted.
fn connections_to(port: u16) -> usize {
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .flat_map(|table| {
            table
                .lines()
                .skip(1)
                .filter(|line| {
                    let cols: Vec<&str> = line.split_whitespace().collect();
                    let remote_port = cols
                        .get(2)
                        .and_then(|a| a.rsplit(':').next())
                        .and_then(|p| u16::from_str_radix(p, 16).ok());
                    // State 01: ESTABLISHED.
                    remote_port == Some(port) && cols.get(3) == Some(&"01")
                })
                .map(|_| ())
                .collect::<Vec<_>>()
        })
        .count()
}

#[tokio::test(flavor = "multi_thread")]
async fn every_watch_of_a_cluster_shares_one_http2_connection() {
    let app = app_with(&["zrh"]).tls().await;
    app.wait_ready().await;
    let kinds = app.json("/api/v1/clusters").await["items"][0]["kinds"]
        .as_array()
        .unwrap()
        .len();
    assert!(
        kinds >= 10,
        "every kind is watched ({kinds} kinds): the connection carries them all"
    );
    let port = app.fleet.cluster("zrh").unwrap().addr.port();
    let open = connections_to(port);
    assert_eq!(
        open, 1,
        "{kinds} watches and the probe over one connection, not one each ({open} open)"
    );
    // A change still arrives at once over the shared connection.
    add_ingress(&app, 0, "shop");
    app.eventually("the new Ingress on the list", || async {
        app.json("/api/v1/ingresses?cluster=zrh").await["items"]
            .as_array()
            .is_some_and(|items| items.iter().any(|i| i["name"] == "shop"))
    })
    .await;
    assert_eq!(connections_to(port), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_kubeconfig_without_a_ca_is_verified_against_the_systems_roots() {
    let app = app_with(&["zrh"]).tls().await;
    app.wait_ready().await;
    // The same server, its CA left out: kubesim's own CA is in no system store.
    let mut doc: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(app.kubeconfig()).unwrap()).unwrap();
    for c in doc["clusters"].as_array_mut().unwrap() {
        c["cluster"]
            .as_object_mut()
            .unwrap()
            .remove("certificate-authority-data");
    }
    let path = app.dir.path().join("no-ca.kubeconfig");
    std::fs::write(&path, serde_yaml_ng::to_string(&doc).unwrap()).unwrap();
    let error = version_error(&path).await;
    assert!(
        error.contains("invalid peer certificate"),
        "refused for its certificate: {error}"
    );
}

/// Why Lookout cannot ask the API server of `zrh` in `kubeconfig` for its rights.
async fn version_error(kubeconfig: &Path) -> String {
    let config = lookout_server::config::Config {
        clusters: vec![ClusterConfig::from_kubeconfig("zrh", kubeconfig, "zrh")],
        ..Default::default()
    };
    let answers = lookout_server::check_access::check(&config).await;
    answers[0]
        .rights
        .clone()
        .expect_err("an unknown CA is refused")
}

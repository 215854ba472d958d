//! `lookout demo`: starts kubesim in-process with three clusters, seeds them through the
//! Kubernetes API as a user would, and serves the dashboard against them with a temporary
//! SQLite file.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use anyhow::Context;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Api, Client};
use kubesim::{Clock, Fleet, FleetOptions};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::app;
use crate::clusters;
use crate::config::ClusterConfig;
use crate::store::Db;

/// The simulated clusters of the demo fleet.
pub const CLUSTERS: [&str; 3] = ["zrh-prod", "gva-prod", "lab-dev"];

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

/// Creates one object through the API, as `kubectl create` would.
async fn create(client: &Client, ar: &ApiResource, obj: Value) -> anyhow::Result<()> {
    let ns = obj
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .map(str::to_string);
    let api: Api<DynamicObject> = match &ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, ar),
        None => Api::all_with(client.clone(), ar),
    };
    let name = obj["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let dynamic: DynamicObject = serde_json::from_value(obj)?;
    api.create(
        &PostParams {
            field_manager: Some("demo-seed".into()),
            ..Default::default()
        },
        &dynamic,
    )
    .await
    .with_context(|| format!("creating {} {name}", ar.kind))?;
    Ok(())
}

fn ingress(ns: &str, name: &str, hosts: &[&str], annotations: Value) -> Value {
    let rules: Vec<Value> = hosts
        .iter()
        .map(|h| json!({"host": h, "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {"service": {"name": name, "port": {"number": 80}}}}]}}))
        .collect();
    json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": name, "namespace": ns, "annotations": annotations},
        "spec": {"ingressClassName": "cilium", "rules": rules,
                 "tls": [{"hosts": hosts, "secretName": format!("{name}-tls")}]}
    })
}

/// One cluster's seed: namespaces, Cilium's config and class, issuers, Ingresses.
async fn seed_cluster(client: &Client, cluster: &str) -> anyhow::Result<()> {
    let ns_ar = resource("", "v1", "Namespace", "namespaces");
    let cm_ar = resource("", "v1", "ConfigMap", "configmaps");
    let class_ar = resource("networking.k8s.io", "v1", "IngressClass", "ingressclasses");
    let ing_ar = resource("networking.k8s.io", "v1", "Ingress", "ingresses");
    let issuer_ar = resource("cert-manager.io", "v1", "ClusterIssuer", "clusterissuers");

    let (namespaces, ingresses): (&[&str], Vec<Value>) = match cluster {
        "zrh-prod" => (
            &["acme-shop", "acme-blog", "globex-web"],
            vec![
                ingress(
                    "acme-shop",
                    "shop",
                    &["shop.acme.example", "www.acme.example"],
                    json!({"cert-manager.io/cluster-issuer": "letsencrypt-prod"}),
                ),
                ingress(
                    "acme-shop",
                    "api",
                    &["api.acme.example"],
                    json!({"cert-manager.io/cluster-issuer": "letsencrypt-prod", "acme.cert-manager.io/http01-edit-in-place": "true"}),
                ),
                ingress(
                    "acme-blog",
                    "blog",
                    &["blog.acme.example"],
                    json!({"cert-manager.io/cluster-issuer": "letsencrypt-prod", "acme.cert-manager.io/http01-edit-in-place": "yes"}),
                ),
                ingress(
                    "globex-web",
                    "web",
                    &["globex.example", "www.globex.example"],
                    json!({"cert-manager.io/cluster-issuer": "letsencrypt-prod", "acme.cert-manager.io/http01-edit-in-place": "true"}),
                ),
                ingress(
                    "globex-web",
                    "status",
                    &["status.globex.example"],
                    json!({}),
                ),
            ],
        ),
        "gva-prod" => (
            &["initech-api", "acme-shop"],
            vec![
                ingress(
                    "initech-api",
                    "api",
                    &["api.initech.example"],
                    json!({"cert-manager.io/cluster-issuer": "letsencrypt-prod"}),
                ),
                ingress(
                    "initech-api",
                    "docs",
                    &["docs.initech.example"],
                    json!({"cert-manager.io/cluster-issuer": "letsencrypt-prod", "acme.cert-manager.io/http01-edit-in-place": "true"}),
                ),
                ingress(
                    "acme-shop",
                    "shop-gva",
                    &["shop.acme.example"],
                    json!({"cert-manager.io/cluster-issuer": "letsencrypt-prod"}),
                ),
            ],
        ),
        _ => (
            &["team-lab"],
            vec![ingress(
                "team-lab",
                "grafana",
                &["grafana.lab.example"],
                json!({"cert-manager.io/cluster-issuer": "letsencrypt-staging"}),
            )],
        ),
    };

    for ns in namespaces {
        create(
            client,
            &ns_ar,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        )
        .await?;
    }
    create(
        client,
        &cm_ar,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cilium-config", "namespace": "kube-system"},
               "data": {"enable-ingress-controller": "true", "enforce-ingress-https": "true", "enable-ingress-proxy-protocol": if cluster == "gva-prod" { "true" } else { "false" }}}),
    )
    .await?;
    create(
        client,
        &class_ar,
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": "cilium", "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"}},
               "spec": {"controller": "cilium.io/ingress-controller"}}),
    )
    .await?;
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
            client,
            &issuer_ar,
            json!({"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer", "metadata": {"name": name},
                   "spec": {"acme": {"server": server, "email": "ops@example.com", "privateKeySecretRef": {"name": format!("{name}-account")},
                            "solvers": [{"http01": {"ingress": {"ingressClassName": "cilium"}}}]}}}),
        )
        .await?;
        // What cert-manager writes once the ACME account is registered.
        let registered = json!({"status": {"acme": {"uri": format!("{server}/acct/1")}, "conditions": [{"type": "Ready", "status": "True",
            "reason": "ACMEAccountRegistered", "message": "The ACME account was registered with the ACME server"}]}});
        Api::<DynamicObject>::all_with(client.clone(), &issuer_ar)
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&registered))
            .await
            .with_context(|| format!("registering ClusterIssuer {name}"))?;
    }
    let ingress_api = |ns: &str| Api::<DynamicObject>::namespaced_with(client.clone(), ns, &ing_ar);
    for (i, ing) in ingresses.into_iter().enumerate() {
        let ns = ing["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let name = ing["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        create(client, &ing_ar, ing).await?;
        // Cilium copies the load-balancer address of its Service into the Ingress status.
        let status = json!({"status": {"loadBalancer": {"ingress": [{"ip": format!("192.0.2.{}", 10 + i)}]}}});
        ingress_api(&ns)
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .with_context(|| format!("setting the address of Ingress {ns}/{name}"))?;
    }
    Ok(())
}

/// Runs the demo until `shutdown`.
pub async fn run(listen: SocketAddr, shutdown: CancellationToken) -> anyhow::Result<()> {
    // Bind first: a busy port should fail before anything is started.
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    let dir = tempfile::Builder::new()
        .prefix("lookout-demo-")
        .tempdir()
        .context("creating a temporary directory")?;
    let options = FleetOptions {
        names: CLUSTERS.iter().map(|s| s.to_string()).collect(),
        bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
        base_port: 0,
        install_crds: true,
        controllers: true,
        tick: std::time::Duration::from_millis(250),
        seed: 42,
    };
    let fleet = Fleet::start(&options, Arc::new(Clock::Real), shutdown.clone())
        .await
        .context("starting kubesim")?;
    let kubeconfig = dir.path().join("kubeconfig");
    fleet.write_kubeconfig(&kubeconfig)?;
    let configs: Vec<ClusterConfig> = CLUSTERS
        .iter()
        .map(|name| ClusterConfig {
            production: *name != "lab-dev",
            ..ClusterConfig::from_kubeconfig(name, &kubeconfig, name)
        })
        .collect();
    let sources = clusters::connect(&configs).await;
    for source in &sources {
        let client = source.client.as_ref().map_err(|e| anyhow::anyhow!("{e}"))?;
        seed_cluster(client, &source.name)
            .await
            .with_context(|| format!("seeding {}", source.name))?;
    }
    let db = Db::open(&format!(
        "sqlite://{}",
        dir.path().join("lookout.db").display()
    ))
    .await?;
    let bound = listener.local_addr().context("reading the bound address")?;
    println!("Lookout demo: http://{bound}/");
    println!(
        "  {} simulated clusters ({}); kubeconfig for kubectl: {}",
        CLUSTERS.len(),
        CLUSTERS.join(", "),
        kubeconfig.display()
    );
    println!("  Press Ctrl-C to stop.");
    let banner = Some(
        "Demo: a simulated fleet, sign-in off. Nothing here touches a real cluster.".to_string(),
    );
    let settings = clusters::WatchSettings::default();
    let result = app::run(
        app::Parts {
            listener,
            db,
            clusters: sources,
            settings,
            banner,
        },
        shutdown,
    )
    .await;
    drop(fleet);
    result
}

//! kube-rs, a client nobody here wrote, against kubesim over HTTP.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::networking::v1::Ingress;
use kube::api::{
    DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, Preconditions,
};
use kube::core::{ApiResource, GroupVersionKind};
use kube::runtime::watcher;
use kube::{Api, Client};
use kubesim::{Clock, Fleet, FleetOptions};
use serde_json::json;
use tokio_util::sync::CancellationToken;

type Events = tokio::sync::mpsc::UnboundedReceiver<Result<watcher::Event<Ingress>, String>>;

async fn next(rx: &mut Events) -> Result<watcher::Event<Ingress>, String> {
    tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("a watcher event within 10 s")
        .expect("the watcher is running")
}

struct Sim {
    fleet: Fleet,
    client: Client,
    _stop: tokio_util::sync::DropGuard,
}

async fn start(install_crds: bool) -> Sim {
    let token = CancellationToken::new();
    let mut opts = FleetOptions::numbered(1);
    opts.install_crds = install_crds;
    let fleet = Fleet::start(&opts, Arc::new(Clock::Real), token.clone())
        .await
        .unwrap();
    let config = kube::Config::new(fleet.clusters[0].url().parse().unwrap());
    let client = Client::try_from(config).unwrap();
    Sim {
        fleet,
        client,
        _stop: token.drop_guard(),
    }
}

fn ingress(name: &str, annotations: serde_json::Value) -> serde_json::Value {
    json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
           "metadata": {"name": name, "namespace": "default", "annotations": annotations},
           "spec": {"rules": [{"host": format!("{name}.example.com")}]}})
}

#[tokio::test]
async fn list_pages_through_limit_and_continue() {
    let sim = start(false).await;
    let api: Api<ConfigMap> = Api::namespaced(sim.client.clone(), "default");
    for i in 0..25 {
        let cm: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": format!("cm-{i:02}")}})).unwrap();
        api.create(&PostParams::default(), &cm).await.unwrap();
    }
    let mut names = Vec::new();
    let mut params = ListParams::default().limit(10);
    let mut pages = 0;
    let mut remaining = Vec::new();
    loop {
        let page = api.list(&params).await.unwrap();
        pages += 1;
        remaining.push(page.metadata.remaining_item_count);
        names.extend(page.items.iter().map(|c| c.metadata.name.clone().unwrap()));
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(names.len(), 25);
    assert_eq!(names.first().unwrap(), "cm-00");
    assert_eq!(names.last().unwrap(), "cm-24");
    // What is left, after each full page; none after the last.
    assert_eq!(remaining, [Some(15), Some(5), None]);
    // With a selector the API server does not count what is left (only a continue token).
    let first = api
        .list(
            &ListParams::default()
                .limit(10)
                .fields("metadata.name!=cm-00"),
        )
        .await
        .unwrap();
    assert_eq!(first.items.len(), 10);
    assert_eq!(first.metadata.remaining_item_count, None);
    assert!(first.metadata.continue_.is_some_and(|c| !c.is_empty()));
}

#[tokio::test]
async fn selectors_filter_lists() {
    let sim = start(false).await;
    let api: Api<ConfigMap> = Api::namespaced(sim.client.clone(), "default");
    for (name, tier) in [("a", "web"), ("b", "db"), ("c", "web")] {
        let cm: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": name, "labels": {"tier": tier}}}))
                .unwrap();
        api.create(&PostParams::default(), &cm).await.unwrap();
    }
    let web = api
        .list(&ListParams::default().labels("tier=web"))
        .await
        .unwrap();
    assert_eq!(web.items.len(), 2);
    let b = api
        .list(&ListParams::default().fields("metadata.name=b"))
        .await
        .unwrap();
    assert_eq!(b.items[0].metadata.name.as_deref(), Some("b"));
    let bad = api
        .list(&ListParams::default().fields("spec.x=1"))
        .await
        .unwrap_err();
    assert!(
        matches!(bad, kube::Error::Api(ref s) if s.code == 400),
        "{bad:?}"
    );
}

#[tokio::test]
async fn watcher_survives_a_forced_410_relist() {
    let sim = start(false).await;
    let api: Api<Ingress> = Api::namespaced(sim.client.clone(), "default");
    let pp = PatchParams::apply("test");
    api.patch("first", &pp, &Patch::Apply(ingress("first", json!({}))))
        .await
        .unwrap();

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let stream = watcher(api.clone(), watcher::Config::default());
    let task = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(ev) = stream.next().await {
            let _ = tx.send(ev.map_err(|e| e.to_string()));
        }
    });
    // The first list: Init, the object, InitDone.
    let mut inits = 0;
    loop {
        match next(&mut rx).await {
            Ok(watcher::Event::Init) => inits += 1,
            Ok(watcher::Event::InitDone) => break,
            _ => {}
        }
    }
    sim.fleet.clusters[0].cluster.expire_watches();
    api.patch("second", &pp, &Patch::Apply(ingress("second", json!({}))))
        .await
        .unwrap();
    let mut saw_second = false;
    while !(saw_second && inits >= 2) {
        match next(&mut rx).await {
            Ok(watcher::Event::Init) => inits += 1,
            Ok(watcher::Event::Apply(i)) | Ok(watcher::Event::InitApply(i))
                if i.metadata.name.as_deref() == Some("second") =>
            {
                saw_second = true
            }
            _ => {}
        }
    }
    task.abort();
    assert!(inits >= 2, "the watcher relisted");
}

#[tokio::test]
async fn server_side_apply_conflicts_name_the_owner_and_force_takes_over() {
    let sim = start(false).await;
    let api: Api<Ingress> = Api::namespaced(sim.client.clone(), "default");
    let key = "acme.cert-manager.io/http01-edit-in-place";
    api.patch(
        "shop",
        &PatchParams::apply("argocd-controller"),
        &Patch::Apply(ingress("shop", json!({key: "false"}))),
    )
    .await
    .unwrap();

    let err = api
        .patch("shop", &PatchParams::apply("lookout"), &Patch::Apply(json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "shop", "namespace": "default", "annotations": {key: "true"}}})))
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("expected an API error")
    };
    assert_eq!(status.code, 409);
    assert!(
        status.message.contains("argocd-controller"),
        "{}",
        status.message
    );
    assert!(status.message.contains(key), "{}", status.message);

    let forced = api
        .patch("shop", &PatchParams::apply("lookout").force(), &Patch::Apply(json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "shop", "namespace": "default", "annotations": {key: "true"}}})))
        .await
        .unwrap();
    assert_eq!(forced.metadata.annotations.unwrap()[key], "true");
    let managers: Vec<(String, String)> = forced
        .metadata
        .managed_fields
        .unwrap()
        .into_iter()
        .map(|m| (m.manager.unwrap(), m.operation.unwrap()))
        .collect();
    assert!(managers.contains(&("lookout".into(), "Apply".into())));

    // Undo: apply again without the key; the field goes, argocd's spec stays.
    let undone = api
        .patch("shop", &PatchParams::apply("lookout"), &Patch::Apply(json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "shop", "namespace": "default"}})))
        .await
        .unwrap();
    assert!(!undone
        .metadata
        .annotations
        .unwrap_or_default()
        .contains_key(key));
    assert!(undone.spec.unwrap().rules.is_some());
}

#[tokio::test]
async fn dry_run_reports_the_result_without_persisting() {
    let sim = start(false).await;
    let api: Api<Ingress> = Api::namespaced(sim.client.clone(), "default");
    api.patch(
        "shop",
        &PatchParams::apply("test"),
        &Patch::Apply(ingress("shop", json!({}))),
    )
    .await
    .unwrap();
    let preview = api
        .patch("shop", &PatchParams::apply("lookout").dry_run(), &Patch::Apply(json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "shop", "namespace": "default", "annotations": {"x": "1"}}})))
        .await
        .unwrap();
    assert_eq!(preview.metadata.annotations.unwrap()["x"], "1");
    let live = api.get("shop").await.unwrap();
    assert!(!live
        .metadata
        .annotations
        .unwrap_or_default()
        .contains_key("x"));
}

/// DeleteOptions in the body, as kube-rs sends them: a dry run deletes nothing, and a uid
/// precondition that does not match is a 409 worded as the API server's.
#[tokio::test]
async fn delete_honours_dry_run_and_preconditions_in_the_body() {
    let sim = start(false).await;
    let api: Api<Ingress> = Api::namespaced(sim.client.clone(), "default");
    api.patch(
        "shop",
        &PatchParams::apply("test"),
        &Patch::Apply(ingress("shop", json!({}))),
    )
    .await
    .unwrap();
    let uid = api.get("shop").await.unwrap().metadata.uid.unwrap();
    api.delete("shop", &DeleteParams::default().dry_run())
        .await
        .unwrap();
    assert!(
        api.get_opt("shop").await.unwrap().is_some(),
        "a dry run deletes nothing"
    );
    let wrong = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some("not-the-uid".into()),
            resource_version: None,
        }),
        ..Default::default()
    };
    match api.delete("shop", &wrong).await {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 409);
            assert!(
                s.message
                    .contains("Precondition failed: UID in precondition: not-the-uid"),
                "{}",
                s.message
            );
        }
        other => panic!("expected a 409, got {other:?}"),
    }
    let right = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(uid),
            resource_version: None,
        }),
        ..Default::default()
    };
    api.delete("shop", &right).await.unwrap();
    assert!(api.get_opt("shop").await.unwrap().is_none());
}

#[tokio::test]
async fn status_subresource_is_separate_from_the_main_resource() {
    let sim = start(false).await;
    let api: Api<Ingress> = Api::namespaced(sim.client.clone(), "default");
    api.patch(
        "shop",
        &PatchParams::apply("test"),
        &Patch::Apply(ingress("shop", json!({}))),
    )
    .await
    .unwrap();
    let status = json!({"status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.10"}]}}});
    let patched = api
        .patch_status("shop", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    let ip = |i: &Ingress| {
        i.status
            .as_ref()
            .and_then(|s| s.load_balancer.as_ref())
            .and_then(|l| l.ingress.as_ref())
            .map(|v| v[0].ip.clone().unwrap())
    };
    assert_eq!(ip(&patched).as_deref(), Some("192.0.2.10"));
    // Status sent to the main resource is ignored.
    let other = json!({"status": {"loadBalancer": {"ingress": [{"ip": "198.51.100.1"}]}}});
    let main = api
        .patch("shop", &PatchParams::default(), &Patch::Merge(&other))
        .await
        .unwrap();
    assert_eq!(ip(&main).as_deref(), Some("192.0.2.10"));
    assert_eq!(main.metadata.generation, Some(1));
}

#[tokio::test]
async fn update_with_a_stale_resource_version_is_a_conflict() {
    let sim = start(false).await;
    let api: Api<ConfigMap> = Api::namespaced(sim.client.clone(), "default");
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "c"}, "data": {"a": "1"}})).unwrap();
    let created = api.create(&PostParams::default(), &cm).await.unwrap();
    let mut fresh = created.clone();
    fresh.data = Some([("a".to_string(), "2".to_string())].into());
    api.replace("c", &PostParams::default(), &fresh)
        .await
        .unwrap();
    let mut stale = created;
    stale.data = Some([("a".to_string(), "3".to_string())].into());
    let err = api
        .replace("c", &PostParams::default(), &stale)
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 409),
        "{err:?}"
    );
    let missing = api.get("nope").await.unwrap_err();
    assert!(
        matches!(missing, kube::Error::Api(ref s) if s.code == 404 && s.reason == "NotFound"),
        "{missing:?}"
    );
}

#[tokio::test]
async fn a_created_crd_makes_its_kind_servable() {
    let sim = start(false).await;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/crds/cert-manager/cert-manager.io_certificates.yaml");
    let crd_doc = match std::fs::read_to_string(&path) {
        Ok(s) => s,
        Err(_) => {
            eprintln!(
                "skipping: {} not found (the shared/ folder is beside the repository in CI)",
                path.display()
            );
            return;
        }
    };
    let crd: serde_json::Value = serde_yaml_ng::from_str(&crd_doc).unwrap();
    let crds: Api<DynamicObject> = Api::all_with(
        sim.client.clone(),
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
            "customresourcedefinitions",
        ),
    );
    crds.create(
        &PostParams::default(),
        &serde_json::from_value(crd).unwrap(),
    )
    .await
    .unwrap();

    let gvk = GroupVersionKind::gvk("cert-manager.io", "v1", "Certificate");
    let (ar, _caps) = kube::discovery::pinned_kind(&sim.client, &gvk)
        .await
        .unwrap();
    let certs: Api<DynamicObject> = Api::namespaced_with(sim.client.clone(), "default", &ar);
    let cert = json!({"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": {"name": "shop"},
                      "spec": {"secretName": "shop-tls", "dnsNames": ["shop.example.com"], "issuerRef": {"name": "le", "kind": "ClusterIssuer"}}});
    certs
        .create(
            &PostParams::default(),
            &serde_json::from_value(cert).unwrap(),
        )
        .await
        .unwrap();
    let listed = certs.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.items[0].data["spec"]["secretName"], "shop-tls");
    let all: Vec<_> = kube::discovery::Discovery::new(sim.client.clone())
        .run()
        .await
        .unwrap()
        .groups()
        .map(|g| g.name().to_string())
        .collect();
    assert!(all.contains(&"cert-manager.io".to_string()), "{all:?}");
}

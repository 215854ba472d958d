//! The scenario harness: a fleet with a manual clock, driven through the HTTP API with
//! kube-rs — the helper of `scenarios.rs` and `upstream.rs`.

#![allow(dead_code)] // each test file uses its own part of the helper

use std::sync::Arc;

use chrono::{TimeZone, Utc};
use kube::api::{DynamicObject, ListParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Api, Client};
use kubesim::{Clock, Fleet, FleetOptions};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

pub struct Sim {
    pub fleet: Fleet,
    pub clock: Arc<Clock>,
    pub client: Client,
    _stop: tokio_util::sync::DropGuard,
}

pub fn ar(group: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, "v1", kind), plural)
}

impl Sim {
    pub async fn start() -> Sim {
        Sim::start_with(|_| {}).await
    }

    pub async fn start_with(adjust: impl FnOnce(&mut FleetOptions)) -> Sim {
        let token = CancellationToken::new();
        let clock = Arc::new(Clock::manual(
            Utc.with_ymd_and_hms(2026, 6, 1, 12, 0, 0).unwrap(),
        ));
        let mut opts = FleetOptions {
            controllers: true,
            seed: 7,
            ..FleetOptions::numbered(1)
        };
        adjust(&mut opts);
        let fleet = Fleet::start(&opts, clock.clone(), token.clone())
            .await
            .unwrap();
        let client =
            Client::try_from(kube::Config::new(fleet.clusters[0].url().parse().unwrap())).unwrap();
        Sim {
            fleet,
            clock,
            client,
            _stop: token.drop_guard(),
        }
    }

    pub fn api(
        &self,
        group: &str,
        kind: &str,
        plural: &str,
        ns: Option<&str>,
    ) -> Api<DynamicObject> {
        match ns {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, &ar(group, kind, plural)),
            None => Api::all_with(self.client.clone(), &ar(group, kind, plural)),
        }
    }

    pub async fn create(
        &self,
        group: &str,
        kind: &str,
        plural: &str,
        ns: Option<&str>,
        obj: Value,
    ) {
        let obj: DynamicObject = serde_json::from_value(obj).unwrap();
        self.api(group, kind, plural, ns)
            .create(&PostParams::default(), &obj)
            .await
            .unwrap();
    }

    pub async fn get(
        &self,
        group: &str,
        kind: &str,
        plural: &str,
        ns: Option<&str>,
        name: &str,
    ) -> Option<Value> {
        self.api(group, kind, plural, ns)
            .get_opt(name)
            .await
            .unwrap()
            .map(|o| serde_json::to_value(o).unwrap())
    }

    pub async fn certificate(&self, name: &str) -> Value {
        self.get(
            "cert-manager.io",
            "Certificate",
            "certificates",
            Some("shop"),
            name,
        )
        .await
        .expect("the Certificate exists")
    }

    /// Advances the clock by `secs` one second at a time, running the controllers each time.
    pub fn run(&self, secs: i64) {
        for _ in 0..secs {
            self.clock.advance(chrono::Duration::seconds(1));
            self.fleet.step();
        }
    }

    /// The Challenges of namespace `shop`.
    pub async fn challenges(&self) -> Vec<Value> {
        self.api(
            "acme.cert-manager.io",
            "Challenge",
            "challenges",
            Some("shop"),
        )
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|c| serde_json::to_value(c).unwrap())
        .collect()
    }

    /// Runs `secs`, then the reason of shop's first Challenge, which must have failed.
    pub async fn failed_challenge_after(&self, secs: i64) -> String {
        self.run(secs);
        let challenges = self.challenges().await;
        let ch = &challenges[0];
        assert_eq!(ch["status"]["state"], "invalid", "{ch:#}");
        ch["status"]["reason"].as_str().unwrap().to_string()
    }

    /// Jumps the clock, then runs the controllers for a few seconds.
    pub fn jump(&self, by: chrono::Duration) {
        self.clock.advance(by);
        self.run(15);
    }

    pub async fn setup(&self, issuer_solver: Value, enforce_https: bool) {
        // Shared load-balancer mode unless a test asks for Cilium's default (dedicated).
        self.create("", "ConfigMap", "configmaps", Some("kube-system"), json!({"metadata": {"name": "cilium-config"}, "data": {"enforce-ingress-https": enforce_https.to_string(), "ingress-default-lb-mode": "shared"}})).await;
        self.create("networking.k8s.io", "IngressClass", "ingressclasses", None, json!({"metadata": {"name": "cilium"}, "spec": {"controller": "cilium.io/ingress-controller"}})).await;
        self.create("", "Service", "services", Some("kube-system"), json!({"metadata": {"name": "cilium-ingress"}, "spec": {"type": "LoadBalancer", "ipFamilies": ["IPv4"]}})).await;
        self.create(
            "cert-manager.io",
            "ClusterIssuer",
            "clusterissuers",
            None,
            json!({"metadata": {"name": "letsencrypt-prod"}, "spec": {"acme": {"server": "https://acme-v02.api.letsencrypt.org/directory", "email": "ops@example.com", "solvers": [issuer_solver]}}}),
        )
        .await;
        self.create(
            "",
            "Namespace",
            "namespaces",
            None,
            json!({"metadata": {"name": "shop"}}),
        )
        .await;
    }

    pub async fn ingress(&self, name: &str, host: &str, edit_in_place: bool) {
        let mut annotations = json!({"cert-manager.io/cluster-issuer": "letsencrypt-prod"});
        if edit_in_place {
            annotations["acme.cert-manager.io/http01-edit-in-place"] = json!("true");
        }
        self.create(
            "networking.k8s.io",
            "Ingress",
            "ingresses",
            Some("shop"),
            json!({"metadata": {"name": name, "annotations": annotations},
                   "spec": {"ingressClassName": "cilium", "rules": [{"host": host, "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {"service": {"name": name, "port": {"number": 80}}}}]}}], "tls": [{"hosts": [host], "secretName": format!("{name}-tls")}]}}),
        )
        .await;
    }
}

pub fn condition<'v>(obj: &'v Value, kind: &str) -> Option<&'v Value> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

pub fn http01() -> Value {
    json!({"http01": {"ingress": {"ingressClassName": "cilium"}}})
}

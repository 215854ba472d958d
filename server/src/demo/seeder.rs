//! The demo's hands: one cluster's API as the demo's "user" (and, for status, cert-manager)
//! uses it — namespaces, Cilium, issuers, Ingresses, Certificates with their status.

use std::time::Duration;

use anyhow::Context;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Api, Client};
use kubesim::sim::letsencrypt::rfc3339;
use serde_json::{json, Value};

pub(super) const CM: &str = "cert-manager.io";

fn ar(group: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, "v1", kind), plural)
}

/// One cluster's API, as the demo's "user" uses it.
pub(super) struct Seeder {
    client: Client,
    /// The simulated clock's now, for status timestamps.
    pub(super) now: chrono::DateTime<chrono::Utc>,
}

impl Seeder {
    pub(super) fn new(client: Client, now: chrono::DateTime<chrono::Utc>) -> Self {
        Seeder { client, now }
    }

    fn api(&self, r: &ApiResource, ns: Option<&str>) -> Api<DynamicObject> {
        match ns {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, r),
            None => Api::all_with(self.client.clone(), r),
        }
    }

    async fn create(&self, r: &ApiResource, ns: Option<&str>, obj: Value) -> anyhow::Result<()> {
        let name = obj["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let obj: DynamicObject = serde_json::from_value(obj)?;
        self.api(r, ns)
            .create(
                &PostParams {
                    field_manager: Some("kubectl-create".into()),
                    ..Default::default()
                },
                &obj,
            )
            .await
            .with_context(|| format!("creating {} {name}", r.kind))?;
        Ok(())
    }

    async fn status(
        &self,
        r: &ApiResource,
        ns: Option<&str>,
        name: &str,
        status: Value,
    ) -> anyhow::Result<()> {
        self.api(r, ns)
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(&json!({"status": status})),
            )
            .await
            .with_context(|| format!("status of {} {name}", r.kind))?;
        Ok(())
    }

    /// Creates any object, of `kind` (`plural`) at `group`/`version`.
    pub(super) async fn object(
        &self,
        (group, version, kind, plural): (&str, &str, &str, &str),
        ns: Option<&str>,
        obj: Value,
    ) -> anyhow::Result<()> {
        let r =
            ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
        self.create(&r, ns, obj).await
    }

    pub(super) async fn namespaces(&self, names: &[&str]) -> anyhow::Result<()> {
        for n in names {
            self.create(
                &ar("", "Namespace", "namespaces"),
                None,
                json!({"metadata": {"name": n}}),
            )
            .await?;
        }
        Ok(())
    }

    /// Cilium: config, IngressClass and the shared load-balancer Service.
    pub(super) async fn cilium(
        &self,
        enforce_https: bool,
        proxy_protocol: bool,
        dual_stack: bool,
    ) -> anyhow::Result<()> {
        // Shared load-balancer mode: every Ingress behind the one cilium-ingress Service, so a
        // host's Ingresses merge and one redirect covers them all (the seed's setup).
        let cm = json!({"metadata": {"name": "cilium-config"}, "data": {"enable-ingress-controller": "true", "enforce-ingress-https": enforce_https.to_string(), "enable-ingress-proxy-protocol": proxy_protocol.to_string(), "ingress-default-lb-mode": "shared"}});
        self.create(&ar("", "ConfigMap", "configmaps"), Some("kube-system"), cm)
            .await?;
        let class = json!({"metadata": {"name": "cilium", "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"}}, "spec": {"controller": "cilium.io/ingress-controller"}});
        self.create(
            &ar("networking.k8s.io", "IngressClass", "ingressclasses"),
            None,
            class,
        )
        .await?;
        let families = if dual_stack {
            json!(["IPv4", "IPv6"])
        } else {
            json!(["IPv4"])
        };
        let svc = json!({"metadata": {"name": "cilium-ingress"}, "spec": {"type": "LoadBalancer", "ipFamilies": families, "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]}});
        self.create(&ar("", "Service", "services"), Some("kube-system"), svc)
            .await
    }

    /// An ACME ClusterIssuer; `wait` sets the solver's `waitInsteadOfSelfCheck`.
    pub(super) async fn cluster_issuer(
        &self,
        name: &str,
        server: &str,
        email: &str,
        wait: Option<&str>,
    ) -> anyhow::Result<()> {
        let mut solver = json!({"http01": {"ingress": {"ingressClassName": "cilium"}}});
        if let Some(w) = wait {
            solver["waitInsteadOfSelfCheck"] = json!(w);
        }
        let issuer = json!({"metadata": {"name": name}, "spec": {"acme": {"server": server, "email": email, "privateKeySecretRef": {"name": format!("{name}-account")}, "solvers": [solver]}}});
        self.create(&ar(CM, "ClusterIssuer", "clusterissuers"), None, issuer)
            .await
    }

    /// A namespaced ACME Issuer with an HTTP-01 solver and cert-manager's own self-check
    /// (no `waitInsteadOfSelfCheck`): a challenge that fails it stays pending for ever.
    pub(super) async fn http01_issuer(&self, ns: &str, name: &str) -> anyhow::Result<()> {
        let issuer = json!({"metadata": {"name": name}, "spec": {"acme": {"server": kubesim::sim::letsencrypt::PRODUCTION, "email": "web@example.com",
            "privateKeySecretRef": {"name": format!("{name}-account")}, "solvers": [{"http01": {"ingress": {"ingressClassName": "cilium"}}}]}}});
        self.create(&ar(CM, "Issuer", "issuers"), Some(ns), issuer)
            .await
    }

    /// A namespaced Issuer whose only solver is DNS-01 (never presented here).
    pub(super) async fn dns01_issuer(&self, ns: &str, name: &str) -> anyhow::Result<()> {
        let issuer = json!({"metadata": {"name": name}, "spec": {"acme": {"server": kubesim::sim::letsencrypt::PRODUCTION, "email": "dns@example.com",
            "privateKeySecretRef": {"name": format!("{name}-account")}, "solvers": [{"dns01": {"route53": {"region": "eu-central-1"}}}]}}});
        self.create(&ar(CM, "Issuer", "issuers"), Some(ns), issuer)
            .await
    }

    /// An Ingress with one TLS entry covering `hosts` (secret `<name>-tls` unless given).
    pub(super) async fn ingress(
        &self,
        ns: &str,
        name: &str,
        hosts: &[&str],
        annotations: Value,
        class: Option<&str>,
        secret: Option<&str>,
    ) -> anyhow::Result<()> {
        let rules: Vec<Value> = hosts
            .iter()
            .map(|h| json!({"host": h, "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {"service": {"name": name, "port": {"number": 80}}}}]}}))
            .collect();
        let mut spec = json!({"rules": rules, "tls": [{"hosts": hosts, "secretName": secret.map(str::to_string).unwrap_or_else(|| format!("{name}-tls"))}]});
        if let Some(c) = class {
            spec["ingressClassName"] = json!(c);
        }
        self.create(
            &ar("networking.k8s.io", "Ingress", "ingresses"),
            Some(ns),
            json!({"metadata": {"name": name, "annotations": annotations}, "spec": spec}),
        )
        .await
    }

    /// An Ingress of class `cilium` that routes `path` of `host` to its service, without TLS
    /// and without cert-manager's annotations.
    pub(super) async fn route(
        &self,
        ns: &str,
        name: &str,
        host: &str,
        path: &str,
    ) -> anyhow::Result<()> {
        let spec = json!({"ingressClassName": "cilium", "rules": [{"host": host, "http": {"paths": [{"path": path, "pathType": "Prefix", "backend": {"service": {"name": name, "port": {"number": 80}}}}]}}]});
        self.create(
            &ar("networking.k8s.io", "Ingress", "ingresses"),
            Some(ns),
            json!({"metadata": {"name": name}, "spec": spec}),
        )
        .await
    }

    /// Adds annotations to an Ingress with server-side apply (as `kubectl apply --server-side`).
    pub(super) async fn annotate(
        &self,
        ns: &str,
        name: &str,
        annotations: Value,
    ) -> anyhow::Result<()> {
        let body = json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": name, "namespace": ns, "annotations": annotations}});
        self.api(&ar("networking.k8s.io", "Ingress", "ingresses"), Some(ns))
            .patch(name, &PatchParams::apply("kubectl"), &Patch::Apply(body))
            .await?;
        Ok(())
    }

    /// Waits (a few seconds at most) until ingress-shim created a Certificate.
    pub(super) async fn wait_for_certificate(&self, ns: &str, name: &str) -> anyhow::Result<()> {
        let api = self.api(&ar(CM, "Certificate", "certificates"), Some(ns));
        for _ in 0..100 {
            if api.get_opt(name).await?.is_some() {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        anyhow::bail!("ingress-shim did not create Certificate {ns}/{name}")
    }

    /// A Certificate issued long ago (its status and Secret as cert-manager left them).
    pub(super) async fn old_certificate(
        &self,
        ns: &str,
        name: &str,
        hosts: &[&str],
        issuer: Value,
        not_after_days: i64,
        renewal_days: i64,
    ) -> anyhow::Result<()> {
        // Its Secret first, as cert-manager left it: the issued key pair and the issuer's
        // annotations (without them cert-manager would re-issue at once: `IncorrectIssuer`
        // for a ClusterIssuer, `MissingData` without data).
        let kind = issuer["kind"].as_str().unwrap_or("Issuer");
        let issuer_name = issuer["name"].as_str().unwrap_or_default();
        self.issued_secret(ns, name, hosts, Some((kind, issuer_name)), not_after_days)
            .await?;
        let cert = json!({"metadata": {"name": name}, "spec": {"secretName": name, "dnsNames": hosts, "issuerRef": issuer}});
        self.create(&ar(CM, "Certificate", "certificates"), Some(ns), cert)
            .await?;
        let not_after = self.now + chrono::Duration::days(not_after_days);
        let status = json!({"conditions": [{"type": "Ready", "status": "True", "reason": "Ready", "message": "Certificate is up to date and has not expired", "lastTransitionTime": rfc3339(not_after - chrono::Duration::days(90))}],
            "notBefore": rfc3339(not_after - chrono::Duration::days(90)), "notAfter": rfc3339(not_after), "renewalTime": rfc3339(self.now + chrono::Duration::days(renewal_days)), "revision": 1});
        self.status(
            &ar(CM, "Certificate", "certificates"),
            Some(ns),
            name,
            status,
        )
        .await
    }

    /// A TLS Secret holding a publicly trusted certificate for `hosts`, issued 90 days
    /// before its end, `days_left` from now. With `issuer` (kind, name) it is as
    /// cert-manager left it: the certificate a Certificate of that name adopts, and the one
    /// the load balancer serves while its renewal runs. Without, it was put there by hand.
    pub(super) async fn issued_secret(
        &self,
        ns: &str,
        name: &str,
        hosts: &[&str],
        issuer: Option<(&str, &str)>,
        days_left: i64,
    ) -> anyhow::Result<()> {
        let names: Vec<String> = hosts.iter().map(|h| h.to_string()).collect();
        let not_after = self.now + chrono::Duration::days(days_left);
        let serial = names
            .join(",")
            .bytes()
            .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
        let (chain, key) = kubesim::sim::pki::issue(
            kubesim::sim::pki::Hierarchy::Production,
            &names,
            not_after - chrono::Duration::days(90),
            not_after,
            serial,
        )
        .ok_or_else(|| anyhow::anyhow!("signing the certificate of Secret {ns}/{name}"))?;
        let metadata = match issuer {
            Some((kind, issuer)) => json!({"name": name,
                "labels": {"controller.cert-manager.io/fao": "true"},
                "annotations": {"cert-manager.io/certificate-name": name, "cert-manager.io/issuer-name": issuer,
                    "cert-manager.io/issuer-kind": kind, "cert-manager.io/issuer-group": CM,
                    "cert-manager.io/common-name": hosts.first(), "cert-manager.io/alt-names": hosts.join(",")}}),
            None => json!({"name": name}),
        };
        let secret = json!({"metadata": metadata, "type": "kubernetes.io/tls",
            "data": {"tls.crt": chain, "tls.key": key}});
        self.create(&ar("", "Secret", "secrets"), Some(ns), secret)
            .await
    }

    /// Once Certificate `ns/name` is Ready (cert-manager's simulation issued it), replaces the
    /// data of its Secret: what Cilium's listener then serves is no longer what was issued
    /// (a stale copy, or something it cannot load), while the Certificate stays Ready.
    pub(super) async fn replace_secret_when_ready(
        &self,
        ns: &str,
        name: &str,
        data: Value,
    ) -> anyhow::Result<()> {
        let certificates = self.api(&ar(CM, "Certificate", "certificates"), Some(ns));
        for _ in 0..1200 {
            let ready = certificates.get_opt(name).await?.is_some_and(|c| {
                c.data["status"]["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            });
            if ready {
                let secret = certificates
                    .get(name)
                    .await?
                    .data
                    .pointer("/spec/secretName")
                    .and_then(Value::as_str)
                    .unwrap_or(name)
                    .to_string();
                self.api(&ar("", "Secret", "secrets"), Some(ns))
                    .patch(
                        &secret,
                        &PatchParams::default(),
                        &Patch::Merge(&json!({"data": data})),
                    )
                    .await
                    .with_context(|| format!("replacing the data of Secret {ns}/{secret}"))?;
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        anyhow::bail!("Certificate {ns}/{name} was not issued within 5 minutes")
    }

    /// Points the Ingress's TLS entry for `host` at another Secret (ingress-shim then makes
    /// a Certificate for it).
    pub(super) async fn move_tls_secret(
        &self,
        ns: &str,
        name: &str,
        host: &str,
        secret: &str,
    ) -> anyhow::Result<()> {
        self.api(&ar("networking.k8s.io", "Ingress", "ingresses"), Some(ns))
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(&json!({"spec": {"tls": [{"hosts": [host], "secretName": secret}]}})),
            )
            .await?;
        Ok(())
    }

    /// Removes cert-manager's CRDs (the cluster without cert-manager).
    pub(super) async fn uninstall_cert_manager(&self) -> anyhow::Result<()> {
        let api = self.api(
            &ar(
                "apiextensions.k8s.io",
                "CustomResourceDefinition",
                "customresourcedefinitions",
            ),
            None,
        );
        for crd in [
            "certificates.cert-manager.io",
            "certificaterequests.cert-manager.io",
            "issuers.cert-manager.io",
            "clusterissuers.cert-manager.io",
            "orders.acme.cert-manager.io",
            "challenges.acme.cert-manager.io",
        ] {
            api.delete(crd, &DeleteParams::default()).await?;
        }
        Ok(())
    }
}

//! The demo fleet's stories, created through the Kubernetes API as a user (and, for status,
//! cert-manager) would: a healthy majority, and every rule of docs/rules.md happening
//! somewhere. kubesim's controllers then play cert-manager, Cilium and Let's Encrypt.

use std::time::Duration;

use anyhow::Context;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Api, Client};
use kubesim::sim::letsencrypt::{rfc3339, Server};
use kubesim::Fleet;
use serde_json::{json, Value};

const CM: &str = "cert-manager.io";

fn ar(group: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, "v1", kind), plural)
}

/// One cluster's API, as the demo's "user" uses it.
pub(super) struct Seeder {
    client: Client,
    /// The simulated clock's now, for status timestamps.
    now: chrono::DateTime<chrono::Utc>,
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
        let cm = json!({"metadata": {"name": "cilium-config"}, "data": {"enable-ingress-controller": "true", "enforce-ingress-https": enforce_https.to_string(), "enable-ingress-proxy-protocol": proxy_protocol.to_string()}});
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
        .await?;
        let secret = json!({"metadata": {"name": name, "annotations": {"cert-manager.io/certificate-name": name, "cert-manager.io/alt-names": hosts.join(",")}}, "type": "kubernetes.io/tls"});
        self.create(&ar("", "Secret", "secrets"), Some(ns), secret)
            .await
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

fn issuer(name: &str) -> Value {
    json!({"cert-manager.io/cluster-issuer": name})
}

fn fixed(name: &str) -> Value {
    json!({"cert-manager.io/cluster-issuer": name, "acme.cert-manager.io/http01-edit-in-place": "true"})
}

/// zrh-prod: Cilium with HTTPS enforcement, dual-stack; the issuer asks the CA without a
/// self-check (`waitInsteadOfSelfCheck`), so a missing edit-in-place fails validation and
/// backs off — fix it and the next attempt (1 h later, a minute at 60×) succeeds.
pub(super) async fn zurich(s: &Seeder, fleet: &Fleet) -> anyhow::Result<()> {
    s.namespaces(&[
        "acme-shop",
        "acme-blog",
        "globex-web",
        "initech-portal",
        "team-lab",
        "team-ml",
    ])
    .await?;
    s.cilium(true, false, true).await?;
    s.cluster_issuer(
        "letsencrypt-prod",
        kubesim::sim::letsencrypt::PRODUCTION,
        "ops@example.com",
        Some("2m"),
    )
    .await?;
    s.cluster_issuer(
        "letsencrypt-staging",
        kubesim::sim::letsencrypt::STAGING,
        "ops@example.com",
        Some("2m"),
    )
    .await?;
    // A second production account, used for bulk issuance.
    s.cluster_issuer(
        "letsencrypt-bulk",
        kubesim::sim::letsencrypt::PRODUCTION,
        "bulk@example.com",
        Some("2m"),
    )
    .await?;
    for (ns, name, host) in [
        ("acme-shop", "api", "api.acme.example"),
        ("acme-shop", "checkout", "checkout.acme.example"),
        ("acme-shop", "static", "static.acme.example"),
        ("acme-shop", "admin", "admin.acme.example"),
        ("globex-web", "web", "globex.example"),
        ("globex-web", "docs", "docs.globex.example"),
        ("globex-web", "careers", "careers.globex.example"),
    ] {
        s.ingress(
            ns,
            name,
            &[host],
            fixed("letsencrypt-prod"),
            Some("cilium"),
            None,
        )
        .await?;
    }
    for i in 1..=8 {
        let host = format!("app{i}.acme.example");
        s.ingress(
            "acme-shop",
            &format!("app{i}"),
            &[&host],
            fixed("letsencrypt-prod"),
            Some("cilium"),
            None,
        )
        .await?;
    }
    // Failing behind HTTPS enforcement: no edit-in-place.
    s.ingress(
        "acme-shop",
        "shop",
        &["shop.acme.example", "www.acme.example"],
        issuer("letsencrypt-prod"),
        Some("cilium"),
        None,
    )
    .await?;
    // A second Ingress on the same host: Cilium's redirect applies to both.
    s.ingress(
        "acme-shop",
        "shop-api",
        &["shop.acme.example"],
        fixed("letsencrypt-prod"),
        Some("cilium"),
        None,
    )
    .await?;
    // Stuck in flight behind HTTPS enforcement: the self-check fails for ever (Issuing=True,
    // no failed attempt counted). The fix has to restart the issuance: annotating alone
    // leaves the pending challenge with its old solver.
    s.http01_issuer("acme-blog", "letsencrypt").await?;
    s.ingress(
        "acme-blog",
        "preview",
        &["preview.acme.example"],
        json!({"cert-manager.io/issuer": "letsencrypt"}),
        Some("cilium"),
        None,
    )
    .await?;
    s.ingress("acme-blog", "blog", &["blog.acme.example"], json!({"cert-manager.io/cluster-issuer": "letsencrypt-prod", "acme.cert-manager.io/http01-edit-in-place": "yes"}), Some("cilium"), None).await?;
    // Two TLS entries sharing one Secret.
    s.ingress(
        "globex-web",
        "legacy-www",
        &["www.globex.example"],
        json!({}),
        Some("cilium"),
        Some("globex-shared-tls"),
    )
    .await?;
    s.ingress(
        "globex-web",
        "legacy-m",
        &["m.globex.example"],
        json!({}),
        Some("cilium"),
        Some("globex-shared-tls"),
    )
    .await?;
    // TLS managed by hand.
    s.ingress(
        "globex-web",
        "status",
        &["status.globex.example"],
        json!({}),
        Some("cilium"),
        None,
    )
    .await?;
    // Let's Encrypt's exact-set limit already used up this week.
    {
        let mut le = fleet
            .world
            .letsencrypt
            .lock()
            .map_err(|_| anyhow::anyhow!("letsencrypt lock poisoned"))?;
        for _ in 0..5 {
            le.record_issuance(
                Server::Production,
                &["promo.globex.example".to_string()],
                s.now - chrono::Duration::days(1),
            );
        }
    }
    s.ingress(
        "globex-web",
        "promo",
        &["promo.globex.example"],
        fixed("letsencrypt-prod"),
        Some("cilium"),
        None,
    )
    .await?;
    // A name Let's Encrypt paused for this issuer's account after months of failures.
    {
        let mut le = fleet
            .world
            .letsencrypt
            .lock()
            .map_err(|_| anyhow::anyhow!("letsencrypt lock poisoned"))?;
        le.pause(
            Server::Production,
            &kubesim::sim::issuance::account_of(
                "zrh-prod",
                "",
                "ClusterIssuer",
                "letsencrypt-prod",
            ),
            "legacy.globex.example",
        );
        // An account whose new orders are spent for the week (a per-account override of one
        // order a week, used up): the next order is refused.
        let bulk =
            kubesim::sim::issuance::account_of("zrh-prod", "", "ClusterIssuer", "letsencrypt-bulk");
        le.override_new_orders(Server::Production, &bulk, 1, chrono::Duration::days(7));
        le.check_new_order(
            Server::Production,
            &bulk,
            &["seed.bulk.initech.example".to_string()],
            s.now,
            false,
        )
        .map_err(|e| anyhow::anyhow!("seeding the bulk account: {e}"))?;
    }
    s.ingress(
        "globex-web",
        "legacy",
        &["legacy.globex.example"],
        fixed("letsencrypt-prod"),
        Some("cilium"),
        None,
    )
    .await?;
    s.ingress(
        "initech-portal",
        "bulk",
        &["bulk.initech.example"],
        fixed("letsencrypt-bulk"),
        Some("cilium"),
        None,
    )
    .await?;
    // The annotation added after the Certificate existed.
    s.ingress(
        "initech-portal",
        "portal",
        &["portal.initech.example"],
        issuer("letsencrypt-prod"),
        Some("cilium"),
        None,
    )
    .await?;
    s.wait_for_certificate("initech-portal", "portal-tls")
        .await?;
    s.annotate(
        "initech-portal",
        "portal",
        json!({"acme.cert-manager.io/http01-edit-in-place": "true"}),
    )
    .await?;
    // Staging in production.
    s.ingress(
        "team-lab",
        "grafana",
        &["grafana.lab.example"],
        fixed("letsencrypt-staging"),
        Some("cilium"),
        None,
    )
    .await?;
    // A class no controller serves: no address ever.
    s.ingress(
        "team-ml",
        "notebook",
        &["notebook.ml.example"],
        json!({}),
        Some("nginx"),
        None,
    )
    .await?;
    // Two issuer annotations that contradict each other: ingress-shim refuses the Ingress
    // (BadConfig) and no certificate is ever requested.
    s.ingress(
        "team-ml",
        "jupyter",
        &["jupyter.ml.example"],
        json!({"cert-manager.io/cluster-issuer": "letsencrypt-prod", "cert-manager.io/issuer": "letsencrypt-prod", "acme.cert-manager.io/http01-edit-in-place": "true"}),
        Some("cilium"),
        None,
    )
    .await?;
    Ok(())
}

/// gva-prod: PROXY protocol on an IPv4-only cluster, so the issuer skips the in-cluster
/// self-check (`waitInsteadOfSelfCheck: 0s`, cert-manager#466); a broken issuer; expired and expiring
/// certificates; a DNS-01 issuer whose challenge never gets presented.
pub(super) async fn geneva(s: &Seeder) -> anyhow::Result<()> {
    s.namespaces(&["initech-api", "acme-shop", "hooli-search"])
        .await?;
    s.cilium(true, true, false).await?;
    s.cluster_issuer(
        "letsencrypt-prod",
        kubesim::sim::letsencrypt::PRODUCTION,
        "ops@example.com",
        Some("0s"),
    )
    .await?;
    s.cluster_issuer(
        "letsencrypt-old",
        kubesim::sim::letsencrypt::PRODUCTION,
        "ops@example.invalid",
        Some("0s"),
    )
    .await?;
    s.dns01_issuer("hooli-search", "route53").await?;
    for (ns, name, host) in [
        ("initech-api", "api", "api.initech.example"),
        ("initech-api", "docs", "docs.initech.example"),
        ("initech-api", "status", "status.initech.example"),
        ("hooli-search", "search", "search.hooli.example"),
        ("hooli-search", "images", "images.hooli.example"),
    ] {
        s.ingress(
            ns,
            name,
            &[host],
            fixed("letsencrypt-prod"),
            Some("cilium"),
            None,
        )
        .await?;
    }
    for i in 1..=6 {
        let host = format!("svc{i}.initech.example");
        s.ingress(
            "initech-api",
            &format!("svc{i}"),
            &[&host],
            fixed("letsencrypt-prod"),
            Some("cilium"),
            None,
        )
        .await?;
    }
    s.ingress(
        "acme-shop",
        "shop-gva",
        &["shop-gva.acme.example"],
        issuer("letsencrypt-prod"),
        Some("cilium"),
        None,
    )
    .await?;
    s.ingress(
        "initech-api",
        "legacy",
        &["legacy.initech.example"],
        fixed("letsencrypt-old"),
        Some("cilium"),
        None,
    )
    .await?;
    s.ingress(
        "initech-api",
        "typo",
        &["typo.initech.example"],
        fixed("letsencrypt-prd"),
        Some("cilium"),
        None,
    )
    .await?;
    s.ingress("hooli-search", "ads", &["ads.hooli.example"], json!({"cert-manager.io/issuer": "route53", "acme.cert-manager.io/http01-edit-in-place": "true"}), Some("cilium"), None).await?;
    // Issued long ago; the issuer can no longer renew them.
    let old = json!({"name": "letsencrypt-old", "kind": "ClusterIssuer", "group": CM});
    s.old_certificate(
        "initech-api",
        "intranet-tls",
        &["intranet.initech.example"],
        old,
        -2,
        -32,
    )
    .await?;
    let missing = json!({"name": "team-le", "kind": "Issuer", "group": CM});
    s.old_certificate(
        "initech-api",
        "wiki-tls",
        &["wiki.initech.example"],
        missing,
        5,
        -25,
    )
    .await?;
    // A hand-made Certificate that misses a host of the Ingress using its Secret.
    let prod = json!({"name": "letsencrypt-prod", "kind": "ClusterIssuer", "group": CM});
    s.old_certificate(
        "initech-api",
        "www-tls",
        &["www.initech.example"],
        prod,
        60,
        30,
    )
    .await?;
    s.ingress(
        "initech-api",
        "www",
        &["www.initech.example", "initech.example"],
        json!({}),
        Some("cilium"),
        Some("www-tls"),
    )
    .await?;
    Ok(())
}

/// lab-dev: no cert-manager, yet an Ingress asks for a certificate.
pub(super) async fn lab(s: &Seeder) -> anyhow::Result<()> {
    s.uninstall_cert_manager().await?;
    s.namespaces(&["team-lab"]).await?;
    s.cilium(false, false, false).await?;
    s.ingress(
        "team-lab",
        "jupyter",
        &["jupyter.lab.example"],
        issuer("letsencrypt-prod"),
        Some("cilium"),
        None,
    )
    .await?;
    s.ingress(
        "team-lab",
        "wiki",
        &["wiki.lab.example"],
        json!({}),
        Some("cilium"),
        None,
    )
    .await?;
    Ok(())
}

/// What Lookout would have recorded had it been running all week: the five issuances of
/// `globex-web/promo` that used up its exact-set budget (kubesim's Let's Encrypt counts the
/// same five), so the budget page, the `acme.rate-limit-budget` finding and a renew's
/// preview tell the story.
pub(super) async fn history(
    db: &crate::store::Db,
    now: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<()> {
    // Five issuances of one exact set within the last day (as kubesim's CA was seeded): a
    // bucket of 5 that gets one back every ~34 h is empty.
    for day in 1..=5i64 {
        let at = (now - chrono::Duration::hours(20) + chrono::Duration::minutes(10 * day))
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        sqlx::query(
            "INSERT INTO certificate_requests (cluster, namespace, name, uid, certificate, revision, issuer_kind, issuer_name, acme_server, names, outcome, reason, message, created_at, finished_at, last_seen, deleted_at) \
             VALUES ('zrh-prod', 'globex-web', ?, ?, 'promo-tls', ?, 'ClusterIssuer', 'letsencrypt-prod', 'https://acme-v02.api.letsencrypt.org/directory', '[\"promo.globex.example\"]', 'issued', NULL, NULL, ?, ?, ?, ?)",
        )
        .bind(format!("promo-tls-old-{day}"))
        .bind(format!("demo-history-promo-{day}"))
        .bind(-day)
        .bind(&at)
        .bind(&at)
        .bind(&at)
        .bind(&at)
        .execute(&db.writer)
        .await?;
    }
    Ok(())
}

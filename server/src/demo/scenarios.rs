//! The demo fleet's stories, created through the Kubernetes API as a user (and, for status,
//! cert-manager) would: a healthy majority, and every rule of docs/rules.md happening
//! somewhere. kubesim's controllers then play cert-manager, Cilium and Let's Encrypt.

use super::week::{campaign_issued_at, campaign_name, promo_issued_at, CAMPAIGNS};
use kubesim::sim::letsencrypt::Server;
use kubesim::Fleet;
use serde_json::{json, Value};

use super::seeder::{Seeder, CM};

pub(super) fn issuer(name: &str) -> Value {
    json!({"cert-manager.io/cluster-issuer": name})
}

pub(super) fn fixed(name: &str) -> Value {
    json!({"cert-manager.io/cluster-issuer": name, "acme.cert-manager.io/http01-edit-in-place": "true"})
}

/// zrh-prod: Cilium with HTTPS enforcement, dual-stack; the issuers run cert-manager's
/// default, the self-check on, so a missing edit-in-place leaves its challenge pending with
/// the self-check's reason until the fix re-solves it. One named variant,
/// `letsencrypt-prod-wait`, asks the CA without a self-check (`waitInsteadOfSelfCheck`): a
/// missing or invalid edit-in-place there fails validation at Let's Encrypt and backs off.
/// As in a fleet that is watched, most failures are renewals seen weeks before the
/// certificate they replace ends (its Secret, issued earlier, still served).
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
        None,
    )
    .await?;
    s.cluster_issuer(
        "letsencrypt-prod-wait",
        kubesim::sim::letsencrypt::PRODUCTION,
        "ops@example.com",
        Some("2m"),
    )
    .await?;
    s.cluster_issuer(
        "letsencrypt-staging",
        kubesim::sim::letsencrypt::STAGING,
        "ops@example.com",
        None,
    )
    .await?;
    // A second production account, used for bulk issuance.
    s.cluster_issuer(
        "letsencrypt-bulk",
        kubesim::sim::letsencrypt::PRODUCTION,
        "bulk@example.com",
        None,
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
    // A second Ingress routes /api on the same host without a TLS entry of its own (the host's
    // certificate is shop's): Cilium merges them into one virtual host, so the redirect
    // applies to both.
    s.route("acme-shop", "shop-api", "shop.acme.example", "/api")
        .await?;
    // Stuck in flight behind HTTPS enforcement: the self-check fails for ever (Issuing=True,
    // no failed attempt counted). The fix has to restart the issuance: annotating alone
    // leaves the pending challenge with its old solver.
    s.http01_issuer("acme-blog", "letsencrypt").await?;
    // Both issued 90 days ago and now renewing: the old certificates are still served.
    s.issued_secret(
        "acme-blog",
        "preview-tls",
        &["preview.acme.example"],
        Some(("Issuer", "letsencrypt")),
        20,
    )
    .await?;
    s.issued_secret(
        "acme-blog",
        "blog-tls",
        &["blog.acme.example"],
        Some(("ClusterIssuer", "letsencrypt-prod-wait")),
        24,
    )
    .await?;
    s.ingress(
        "acme-blog",
        "preview",
        &["preview.acme.example"],
        json!({"cert-manager.io/issuer": "letsencrypt"}),
        Some("cilium"),
        None,
    )
    .await?;
    s.ingress("acme-blog", "blog", &["blog.acme.example"], json!({"cert-manager.io/cluster-issuer": "letsencrypt-prod-wait", "acme.cert-manager.io/http01-edit-in-place": "yes"}), Some("cilium"), None).await?;
    // Two TLS entries sharing one Secret (put there by hand, covering both).
    s.issued_secret(
        "globex-web",
        "globex-shared-tls",
        &["www.globex.example", "m.globex.example"],
        None,
        50,
    )
    .await?;
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
    s.issued_secret(
        "globex-web",
        "status-tls",
        &["status.globex.example"],
        None,
        60,
    )
    .await?;
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
        for i in 1..=5 {
            le.record_issuance(
                Server::Production,
                &["promo.globex.example".to_string()],
                promo_issued_at(s.now, i),
            );
        }
        for i in 1..=CAMPAIGNS {
            le.record_issuance(
                Server::Production,
                &[campaign_name(i)],
                campaign_issued_at(s.now, i),
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
    s.issued_secret(
        "globex-web",
        "legacy-tls",
        &["legacy.globex.example"],
        Some(("ClusterIssuer", "letsencrypt-prod")),
        12,
    )
    .await?;
    s.issued_secret(
        "initech-portal",
        "bulk-tls",
        &["bulk.initech.example"],
        Some(("ClusterIssuer", "letsencrypt-bulk")),
        18,
    )
    .await?;
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
    // The annotation added after the Certificate existed (renewing the one it adopted).
    s.issued_secret(
        "initech-portal",
        "portal-tls",
        &["portal.initech.example"],
        Some(("ClusterIssuer", "letsencrypt-prod")),
        22,
    )
    .await?;
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
    // A certificate bought elsewhere and copied into a Secret by hand: no Certificate renews
    // it, and it expired yesterday — the listener serves it all the same.
    s.issued_secret("acme-shop", "cdn-tls", &["cdn.acme.example"], None, -1)
        .await?;
    s.ingress(
        "acme-shop",
        "cdn",
        &["cdn.acme.example"],
        json!({}),
        Some("cilium"),
        None,
    )
    .await?;
    // Issued; later its Secret is overwritten by hand with a `tls.crt` that does not decode:
    // cert-manager issues again at once (InvalidCertificate) while the listener keeps the
    // last certificate it loaded.
    s.ingress(
        "acme-shop",
        "media",
        &["media.acme.example"],
        fixed("letsencrypt-prod"),
        Some("cilium"),
        None,
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
    // (BadConfig) and no certificate is ever requested, so the one issued before the second
    // annotation came is never renewed.
    s.issued_secret(
        "team-ml",
        "jupyter-tls",
        &["jupyter.ml.example"],
        Some(("ClusterIssuer", "letsencrypt-prod")),
        16,
    )
    .await?;
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
/// self-check (`waitInsteadOfSelfCheck: 0s`, cert-manager#466); a broken issuer whose
/// certificates still serve while their renewal fails; a certificate that expired because
/// its issuer is gone; a DNS-01 issuer whose challenge never gets presented.
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
    s.issued_secret(
        "acme-shop",
        "shop-gva-tls",
        &["shop-gva.acme.example"],
        Some(("ClusterIssuer", "letsencrypt-prod")),
        15,
    )
    .await?;
    s.issued_secret(
        "initech-api",
        "legacy-tls",
        &["legacy.initech.example"],
        Some(("ClusterIssuer", "letsencrypt-old")),
        20,
    )
    .await?;
    s.issued_secret(
        "initech-api",
        "typo-tls",
        &["typo.initech.example"],
        Some(("ClusterIssuer", "letsencrypt-prd")),
        19,
    )
    .await?;
    s.issued_secret(
        "hooli-search",
        "ads-tls",
        &["ads.hooli.example"],
        Some(("Issuer", "route53")),
        26,
    )
    .await?;
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
    // Issued long ago; the issuer can no longer renew them (one is in its last 20 days, the
    // other, whose issuer was deleted, expired two days ago).
    let old = json!({"name": "letsencrypt-old", "kind": "ClusterIssuer", "group": CM});
    s.old_certificate(
        "initech-api",
        "intranet-tls",
        &["intranet.initech.example"],
        old,
        20,
        -10,
    )
    .await?;
    let missing = json!({"name": "team-le", "kind": "Issuer", "group": CM});
    s.old_certificate(
        "initech-api",
        "wiki-tls",
        &["wiki.initech.example"],
        missing,
        -2,
        -32,
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
    s.issued_secret("team-lab", "wiki-tls", &["wiki.lab.example"], None, 45)
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

/// What happens once zrh-prod's certificates are issued: `acme-shop/media-tls`'s Secret is
/// overwritten by hand with a `tls.crt` that is not a certificate. cert-manager's trigger
/// issues it again at once (`InvalidCertificate`, in its history), and Cilium's listener
/// keeps serving the last certificate it loaded meanwhile. Then the platform's second Secret
/// for one host on the shared listener.
pub(super) async fn zurich_later(s: &Seeder) -> anyhow::Result<()> {
    use base64::Engine;
    let b64 = |v: &str| base64::engine::general_purpose::STANDARD.encode(v);
    s.replace_secret_when_ready(
        "acme-shop",
        "media-tls",
        json!({"tls.crt": b64("-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n")}),
    )
    .await?;
    super::platform::zurich_later(s).await
}

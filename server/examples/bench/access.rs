//! The cost of letting the clusters decide who sees what (`bash scripts/bench.sh --access`):
//! kubesim authorizing with RBAC, C clusters × N namespaces each holding an Ingress and a
//! Certificate, `lookout serve` with `auth.access_source = "kubernetes"`. Measured: the first
//! page of a person bound to two namespaces per cluster (the worst case: every namespace is
//! asked about), of a person bound cluster-wide, and their later pages — with the number of
//! SubjectAccessReviews each sent (`lookout_access_reviews_total`).

use super::*;

const TOKEN: &str = "bench-metrics-token";

fn sha256_hex(s: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(s.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

async fn reviews_sent(base: &str) -> u64 {
    let text = reqwest::Client::new()
        .get(format!("{base}/metrics"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("lookout_access_reviews_total "))
        .and_then(|v| v.trim().parse().ok())
        .expect("lookout_access_reviews_total is exported")
}

/// One page as `user` in `groups`: (time, number of Ingresses on it).
async fn page(base: &str, user: &str, groups: &str) -> (Duration, usize) {
    let started = Instant::now();
    let v: Value = reqwest::Client::new()
        .get(format!("{base}/api/v1/ingresses?per_page=5"))
        .header("X-Forwarded-User", user)
        .header("X-Forwarded-Groups", groups)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    (started.elapsed(), v["total"].as_u64().unwrap_or(0) as usize)
}

pub(super) async fn access_bench(a: &Args) {
    let (clusters, namespaces) = if a.quick { (2, 20) } else { (50, 500) };
    let token = CancellationToken::new();
    let fleet = Fleet::start(
        &FleetOptions {
            authorize: true,
            ..FleetOptions::numbered(clusters)
        },
        Arc::new(Clock::Real),
        token.clone(),
    )
    .await
    .unwrap();
    let rbac = |c: &kubesim::Cluster, plural: &str, ns: Option<&str>, obj: Value| {
        let rt = c.resolve("rbac.authorization.k8s.io", plural).unwrap();
        c.create(&rt, ns, obj, &kubesim::WriteOpts::system())
            .unwrap();
    };
    for c in &fleet.clusters {
        let c = &c.cluster;
        kubesim::sim::scale::populate(c, namespaces, namespaces);
        rbac(
            c,
            "clusterroles",
            None,
            json!({"metadata": {"name": "tls-viewer"}, "rules": [
            {"apiGroups": ["networking.k8s.io"], "resources": ["ingresses"], "verbs": ["list"]},
            {"apiGroups": ["cert-manager.io"], "resources": ["certificates"], "verbs": ["list"]}]}),
        );
        for ns in ["tenant-1", "tenant-2"] {
            rbac(
                c,
                "rolebindings",
                Some(ns),
                json!({"metadata": {"name": "team"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "tls-viewer"},
                "subjects": [{"kind": "Group", "name": "team", "apiGroup": "rbac.authorization.k8s.io"}]}),
            );
        }
        rbac(
            c,
            "clusterrolebindings",
            None,
            json!({"metadata": {"name": "support"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "tls-viewer"},
            "subjects": [{"kind": "Group", "name": "support", "apiGroup": "rbac.authorization.k8s.io"}]}),
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    fleet.write_kubeconfig(&kubeconfig).unwrap();
    let extra = format!(
        "[probe]\nenabled = false\n[auth]\nmode = \"proxy\"\ntrusted_proxies = [\"127.0.0.1/32\"]\naccess_source = \"kubernetes\"\n[[tokens]]\nname = \"bench\"\nsha256 = \"{}\"\nrole = \"admin\"\n",
        sha256_hex(TOKEN)
    );
    let (l, _) = start_lookout_with(&a.lookout, &fleet, &kubeconfig, &extra).await;
    // Every Ingress is cached before a person asks (the support engineer sees them all).
    let deadline = Instant::now() + MINUTES_5;
    while page(&l.base, "warm-up", "support").await.1 < clusters * namespaces {
        assert!(
            Instant::now() < deadline,
            "the fleet was not cached in 5 minutes"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!("| measurement | value |\n|---|---:|");
    let what = format!("{clusters} clusters × {namespaces} namespaces");
    for (who, groups, sees) in [
        (
            "a person bound in 2 namespaces per cluster",
            "team",
            2 * clusters,
        ),
        (
            "a person bound cluster-wide",
            "support",
            clusters * namespaces,
        ),
    ] {
        let before = reviews_sent(&l.base).await;
        let (first, seen) = page(&l.base, who, groups).await;
        assert_eq!(seen, sees, "{who} sees what their bindings grant");
        let asked = reviews_sent(&l.base).await - before;
        let mut later = Vec::new();
        for _ in 0..20 {
            later.push(page(&l.base, who, groups).await.0);
        }
        later.sort();
        let again = reviews_sent(&l.base).await - before - asked;
        println!(
            "| {who}, {what}: first page | {:.0} ms, {asked} reviews |",
            first.as_secs_f64() * 1000.0
        );
        println!(
            "| {who}, {what}: later pages (median of 20) | {:.1} ms, {again} reviews |",
            later[later.len() / 2].as_secs_f64() * 1000.0
        );
    }
    l.stop().await;
    token.cancel();
}

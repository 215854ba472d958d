//! `auth.access_source = "kubernetes"`: what a person signed in through the trusted proxy
//! sees is what the cluster's own RBAC grants their user and groups, asked with
//! SubjectAccessReviews by Lookout's ServiceAccount (the `cluster-access` overlay), against
//! kubesim authorizing every request. kubectl writes the RoleBindings.

use std::collections::BTreeSet;

use lookout_server::auth::Auth;
use lookout_server::config::Config;
use serde_json::Value;

use crate::helpers::*;
use crate::rbac::render;

/// The hex SHA-256 of the metrics token.
fn metrics_token_sha256() -> String {
    use sha2::Digest;
    sha2::Sha256::digest(METRICS_TOKEN.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

const METRICS_TOKEN: &str = "s3cret-metrics-reader";

async fn kubernetes_auth(ttl: &str) -> Auth {
    let text = format!(
        "[[clusters]]\nname = \"zrh-prod\"\nin_cluster = true\n[auth]\nmode = \"proxy\"\ntrusted_proxies = [\"127.0.0.1/32\"]\naccess_source = \"kubernetes\"\naccess_ttl = \"{ttl}\"\n[[tokens]]\nname = \"metrics\"\nsha256 = \"{}\"\nrole = \"admin\"\n",
        metrics_token_sha256()
    );
    Auth::from_config(&Config::parse(&text, &[]).unwrap())
        .await
        .unwrap()
}

const OBJECTS: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: team-a1}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-a2}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-b}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: team-a1}
spec: {rules: [{host: a1.example.com}]}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: team-a2}
spec: {rules: [{host: a2.example.com}]}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: team-b}
spec: {rules: [{host: b.example.com}]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: tls-viewer}
rules:
  - apiGroups: ["networking.k8s.io"]
    resources: ["ingresses"]
    verbs: ["get", "list", "watch"]
  - apiGroups: ["cert-manager.io"]
    resources: ["certificates"]
    verbs: ["get", "list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: team-a-views, namespace: team-a1}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: tls-viewer}
subjects: [{kind: Group, name: team-a, apiGroup: rbac.authorization.k8s.io}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: team-a-views, namespace: team-a2}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: tls-viewer}
subjects: [{kind: Group, name: team-a, apiGroup: rbac.authorization.k8s.io}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: sre-views}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: tls-viewer}
subjects: [{kind: User, name: sre, apiGroup: rbac.authorization.k8s.io}]
"#;

/// The namespaces of the Ingresses `user` in `groups` gets from the API.
async fn namespaces(app: &TestApp, user: &str, groups: &str) -> BTreeSet<String> {
    let r = app
        .get_as("/api/v1/ingresses?per_page=500", user, groups)
        .await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["namespace"].as_str().unwrap().to_string())
        .collect()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rolebinding_decides_which_namespaces_a_person_sees_and_revoking_it_hides_them() {
    if !kubectl_available() {
        return;
    }
    let app = app_with(&["zrh-prod"])
        .with_service_account_of(render("overlays/cluster-access"))
        .auth(kubernetes_auth("2s").await)
        .await;
    let admin = app.dir.path().join("kubeconfig");
    kubectl(
        &admin,
        "zrh-prod",
        &["apply", "--server-side", "-f", "-"],
        Some(OBJECTS),
    );
    // Lookout has the three Ingresses (the SRE, granted cluster-wide, sees all of them).
    app.eventually("the SRE sees every team's Ingress", || async {
        namespaces(&app, "sre", "").await == set(&["team-a1", "team-a2", "team-b"])
    })
    .await;
    // A member of team-a: exactly the two namespaces their group is bound in.
    assert_eq!(
        namespaces(&app, "alice", "team-a").await,
        set(&["team-a1", "team-a2"])
    );
    // Nowhere else either: the neighbour's page, filter and findings are not theirs.
    let page = app
        .get_as("/ingresses", "alice", "team-a")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("a1.example.com") && !page.contains("b.example.com"),
        "{page}"
    );
    let outside = app
        .get_as("/api/v1/ingresses?namespace=team-b", "alice", "team-a")
        .await;
    assert_eq!(outside.status(), 404);
    // Someone with no binding sees nothing — nor by claiming the cluster's own groups or
    // identities through the sign-in.
    assert!(namespaces(&app, "mallory", "team-c").await.is_empty());
    assert!(namespaces(&app, "mallory", "system:masters")
        .await
        .is_empty());
    assert!(namespaces(&app, "system:admin", "").await.is_empty());
    assert!(
        namespaces(&app, "system:serviceaccount:lookout:lookout", "")
            .await
            .is_empty()
    );
    // Revoked in team-a2: gone within the TTL.
    kubectl(
        &admin,
        "zrh-prod",
        &["delete", "rolebinding", "team-a-views", "-n", "team-a2"],
        None,
    );
    let revoked = std::time::Instant::now();
    app.eventually("the revoked namespace disappears", || async {
        namespaces(&app, "alice", "team-a").await == set(&["team-a1"])
    })
    .await;
    assert!(
        revoked.elapsed() < std::time::Duration::from_secs(6),
        "within the 2 s TTL (and a background refresh): {:?}",
        revoked.elapsed()
    );
    app.stop().await;
}

/// Someone who may read the whole cluster but act in one namespace only acts there, as
/// `kubectl auth can-i` says — not nowhere.
#[tokio::test(flavor = "multi_thread")]
async fn reading_everything_and_acting_in_one_namespace_acts_there() {
    if !kubectl_available() {
        return;
    }
    let app = app_with(&["zrh-prod"])
        .with_service_account_of(render("overlays/cluster-access"))
        .auth(kubernetes_auth("60s").await)
        .await;
    let admin = app.dir.path().join("kubeconfig");
    let operator = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: tls-fixer}
rules:
  - apiGroups: ["networking.k8s.io"]
    resources: ["ingresses"]
    verbs: ["patch"]
  - apiGroups: ["cert-manager.io"]
    resources: ["certificates"]
    verbs: ["patch"]
  - apiGroups: ["cert-manager.io"]
    resources: ["certificates/status"]
    verbs: ["update"]
  - apiGroups: ["cert-manager.io"]
    resources: ["certificaterequests"]
    verbs: ["delete"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: sre-fixes, namespace: team-b}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: tls-fixer}
subjects: [{kind: User, name: sre, apiGroup: rbac.authorization.k8s.io}]
"#;
    for doc in [OBJECTS, operator] {
        kubectl(
            &admin,
            "zrh-prod",
            &["apply", "--server-side", "-f", "-"],
            Some(doc),
        );
    }
    app.eventually("the SRE sees every team's Ingress", || async {
        namespaces(&app, "sre", "").await == set(&["team-a1", "team-a2", "team-b"])
    })
    .await;
    let preview = |ns: &'static str| {
        let app = &app;
        async move {
            app.post_as(
                &format!("/api/v1/ingresses/zrh-prod/{ns}/web/edit-in-place"),
                "sre",
                "",
                serde_json::json!({"dry_run": true}),
            )
            .await
            .status()
        }
    };
    assert_ne!(
        preview("team-b").await,
        403,
        "where a RoleBinding lets them act"
    );
    assert_eq!(preview("team-a1").await, 403, "and nowhere else");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cluster_that_cannot_answer_shows_nothing_and_says_why() {
    if !kubectl_available() {
        return;
    }
    // The base manifests: Lookout may not create SubjectAccessReviews.
    let app = app_with(&["zrh-prod"])
        .with_service_account_of(render("base"))
        .auth(kubernetes_auth("60s").await)
        .await;
    app.wait_ready().await;
    let admin = app.dir.path().join("kubeconfig");
    kubectl(
        &admin,
        "zrh-prod",
        &["apply", "--server-side", "-f", "-"],
        Some(OBJECTS),
    );
    assert!(namespaces(&app, "sre", "").await.is_empty());
    let page = app.get_as("/", "sre", "").await.text().await.unwrap();
    assert!(
        page.contains("Some clusters could not say what you may see"),
        "{page}"
    );
    // Which cluster and the API server's words (Lookout's own account among them) are for
    // Lookout's operators, not for someone with no rights anywhere.
    assert!(
        !page.contains("zrh-prod") && !page.contains("refused an access review"),
        "{page}"
    );
    app.stop().await;
}

/// Reviews sent so far, from `/metrics` (read with an admin token: tokens keep their static
/// scopes whatever decides for people).
async fn reviews_sent(app: &TestApp) -> u64 {
    let text = app
        .http
        .get(format!("{}/metrics", app.base))
        .bearer_auth(METRICS_TOKEN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("lookout_access_reviews_total "))
        .unwrap_or_else(|| panic!("the counter is exported: {text}"))
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn only_a_persons_first_page_waits_for_reviews() {
    if !kubectl_available() {
        return;
    }
    let app = app_with(&["zrh-prod"])
        .with_service_account_of(render("overlays/cluster-access"))
        .auth(kubernetes_auth("60s").await)
        .await;
    let admin = app.dir.path().join("kubeconfig");
    kubectl(
        &admin,
        "zrh-prod",
        &["apply", "--server-side", "-f", "-"],
        Some(OBJECTS),
    );
    app.eventually("the SRE sees every team's Ingress", || async {
        namespaces(&app, "sre", "").await.len() == 3
    })
    .await;
    let before = reviews_sent(&app).await;
    assert_eq!(namespaces(&app, "bob", "team-a").await.len(), 2);
    let first = reviews_sent(&app).await;
    assert!(first > before, "bob's first page asked the cluster");
    for _ in 0..5 {
        assert_eq!(namespaces(&app, "bob", "team-a").await.len(), 2);
    }
    assert_eq!(reviews_sent(&app).await, first, "later pages asked nothing");
    // Five requests at once for someone new (a page, its stream…) share one round.
    let carol =
        futures::future::join_all((0..5).map(|_| namespaces(&app, "carol", "team-a"))).await;
    assert!(carol.iter().all(|n| n.len() == 2));
    assert_eq!(
        reviews_sent(&app).await - first,
        first - before,
        "one round of questions, as bob's"
    );
    // The same user with other groups is another question — and where no RoleBinding names
    // the person or their groups, only the two cluster-wide questions are asked, not one
    // per namespace.
    let before = reviews_sent(&app).await;
    assert!(namespaces(&app, "bob", "team-b").await.is_empty());
    assert_eq!(reviews_sent(&app).await - before, 2);
    app.stop().await;
}

/// A cluster that stops answering holds a person's first page (and an identified `/readyz`)
/// for at most the first-answer wait, not the reviews' own 10 s: it reads as unanswered
/// meanwhile, and the rest of the fleet is shown.
#[tokio::test(flavor = "multi_thread")]
async fn a_silent_cluster_holds_no_first_page_for_long() {
    if !kubectl_available() {
        return;
    }
    let app = app_with(&["zrh-prod", "gva-prod"])
        .with_service_account_of(render("overlays/cluster-access"))
        .auth(kubernetes_auth("60s").await)
        .await;
    app.wait_ready().await;
    let admin = app.dir.path().join("kubeconfig");
    kubectl(
        &admin,
        "zrh-prod",
        &["apply", "--server-side", "-f", "-"],
        Some(OBJECTS),
    );
    app.eventually("Lookout has zrh-prod's Ingresses", || async {
        app.get_as("/api/v1/ingresses", "probe", "").await.status() == 200
    })
    .await;
    // gva-prod accepts connections and never answers.
    app.fleet.clusters[1]
        .cluster
        .set_faults(kubesim::faults::Faults {
            blackhole: true,
            ..Default::default()
        });
    let asked = std::time::Instant::now();
    let seen = namespaces(&app, "sre", "").await;
    assert!(
        asked.elapsed() < std::time::Duration::from_secs(5),
        "the first page waited {:?}",
        asked.elapsed()
    );
    assert_eq!(seen, set(&["team-a1", "team-a2", "team-b"]));
    app.stop().await;
}

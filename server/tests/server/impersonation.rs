//! `actions.impersonate = true`: every request of an action is sent as the person who pressed
//! the button. Judged by kubesim authorizing every request and keeping an audit log of the
//! writes (who sent each, and as whom): the person's writes are theirs there, not Lookout's;
//! a person the cluster does not let write gets the cluster's refusal and nothing is written;
//! and the `impersonation` manifests give Lookout nothing to write with but `impersonate`,
//! each of whose rules is needed.

use futures::StreamExt;
use lookout_server::auth::Auth;
use lookout_server::config::Config;
use serde_json::{json, Value};

use crate::helpers::*;
use crate::rbac::{exercise, render, rules, without_rule};
use crate::restart::{behind_https_enforcement, first_challenge};

const SERVICE_ACCOUNT: &str = "system:serviceaccount:lookout:lookout";

/// Sign-in through the trusted proxy, actions impersonated, and who sees what from `access`
/// (`[[access]]` rules or `access_source`).
async fn impersonating_auth(access: &str) -> Auth {
    let text = format!(
        "[[clusters]]\nname = \"zrh-prod\"\nin_cluster = true\n[actions]\nimpersonate = true\n[auth]\nmode = \"proxy\"\ntrusted_proxies = [\"127.0.0.1/32\"]\n{access}"
    );
    Auth::from_config(&Config::parse(&text, &[]).unwrap())
        .await
        .unwrap()
}

/// `[[access]]`: members of `oncall` may act everywhere, as far as Lookout is concerned.
const ONCALL_OPERATORS: &str = "[[access]]\ngroups = [\"oncall\"]\nrole = \"operator\"\nclusters = [\"*\"]\nnamespaces = [\"*\"]\n";

/// An HTTP client whose every request the trusted proxy says comes from `user` in `groups`.
fn as_person(user: &str, groups: &str) -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("x-forwarded-user", user.parse().unwrap());
    headers.insert("x-forwarded-groups", groups.parse().unwrap());
    reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .unwrap()
}

/// The roles `deploy/kubernetes/examples/people-roles.yaml` ships.
fn people_roles() -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../deploy/kubernetes/examples/people-roles.yaml"),
    )
    .unwrap()
}

/// `group` gets `role` in every namespace of the cluster.
fn bind_cluster_wide(app: &TestApp, role: &str, group: &str) {
    let binding = format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {{name: {group}-{role}}}\nroleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {role}}}\nsubjects: [{{kind: Group, name: {group}, apiGroup: rbac.authorization.k8s.io}}]\n"
    );
    let admin = app.dir.path().join("kubeconfig");
    for doc in [people_roles(), binding] {
        kubectl(
            &admin,
            "zrh-prod",
            &["apply", "--server-side", "-f", "-"],
            Some(&doc),
        );
    }
}

/// The cluster's audit log: each write as (verb, resource, user, impersonated user, code).
fn audit(app: &TestApp) -> Vec<(String, String, String, String, u64)> {
    let log: Value = serde_json::from_str(&kubectl_output(
        &app.dir.path().join("kubeconfig"),
        "zrh-prod",
        &["get", "--raw", "/kubesim/audit"],
        None,
    ))
    .unwrap();
    log["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let resource = match e["objectRef"]["subresource"].as_str() {
                Some(sub) => format!("{}/{sub}", e["objectRef"]["resource"].as_str().unwrap()),
                None => e["objectRef"]["resource"].as_str().unwrap().to_string(),
            };
            (
                e["verb"].as_str().unwrap().to_string(),
                resource,
                e["user"]["username"].as_str().unwrap().to_string(),
                e["impersonatedUser"]["username"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
                e["responseStatus"]["code"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The writes Lookout's ServiceAccount sent (as itself or as someone), leaving out the
/// access reviews (questions, recorded as creates).
fn lookouts_writes(app: &TestApp) -> Vec<(String, String, String, String, u64)> {
    audit(app)
        .into_iter()
        .filter(|(_, resource, user, _, _)| {
            user == SERVICE_ACCOUNT && resource != "subjectaccessreviews"
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn when_the_cluster_decides_every_write_of_an_action_is_the_persons() {
    if !kubectl_available() {
        return;
    }
    // Who sees what is asked of the cluster too, and Lookout holds no write right.
    let mut app = app_with(&["zrh-prod"])
        .with_controllers()
        .with_service_account_of(render("overlays/cluster-decides"))
        .auth(impersonating_auth("access_source = \"kubernetes\"\n").await)
        .await;
    bind_cluster_wide(&app, "lookout-tls-operator", "tls-operators");
    // A name that is not ASCII, sent through the proxy and to the cluster as its UTF-8 bytes.
    app.http = as_person("Jürgen", "tls-operators,system:masters");
    app.wait_ready().await;
    // The restart, the fix and a renew, pressed by Jürgen.
    exercise(&app).await.unwrap();
    let writes = lookouts_writes(&app);
    let kinds: std::collections::BTreeSet<&str> =
        writes.iter().map(|(_, r, _, _, _)| r.as_str()).collect();
    for needed in [
        "certificaterequests",
        "orders",
        "ingresses",
        "certificates",
        "certificates/status",
    ] {
        assert!(kinds.contains(needed), "{needed} written: {writes:#?}");
    }
    assert!(
        writes
            .iter()
            .all(|(_, _, _, as_whom, code)| as_whom == "Jürgen" && *code < 300),
        "every write is Jürgen's, and allowed: {writes:#?}"
    );
    // The record says so too, and the groups sent are Jürgen's without the cluster's own.
    let record: Value = app
        .post(
            "/api/v1/ingresses/zrh-prod/default/web/edit-in-place",
            json!({"dry_run": true}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        record["sent_as"], "Jürgen (groups tls-operators)",
        "{record}"
    );
    let page = app
        .get(&format!("/actions/{}", record["id"].as_str().unwrap()))
        .await
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("Sent to the cluster as <strong>Jürgen (groups tls-operators)</strong>"),
        "{page}"
    );
    // Someone who sees only that namespace reads the record: Jürgen's name, not his groups.
    kubectl(
        &app.dir.path().join("kubeconfig"),
        "zrh-prod",
        &[
            "create",
            "rolebinding",
            "dora-views",
            "-n",
            "default",
            "--clusterrole=lookout-tls-viewer",
            "--user=dora",
        ],
        None,
    );
    let seen: Value = app
        .get_as(
            &format!("/api/v1/actions/{}", record["id"].as_str().unwrap()),
            "dora",
            "",
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(seen["sent_as"], "Jürgen", "{seen}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_person_the_cluster_does_not_let_write_gets_its_refusal_and_nothing_is_written() {
    if !kubectl_available() {
        return;
    }
    // Lookout's own rules let every member of oncall act; the cluster lets bob only look.
    let mut app = app_with(&["zrh-prod"])
        .with_controllers()
        .with_service_account_of(render("overlays/impersonation"))
        .auth(impersonating_auth(ONCALL_OPERATORS).await)
        .await;
    bind_cluster_wide(&app, "lookout-tls-viewer", "oncall");
    app.http = as_person("bob", "oncall");
    app.wait_ready().await;
    behind_https_enforcement(&app);
    let chain = "/api/v1/ingresses/zrh-prod/default/web";
    within(
        20,
        "the challenge to fail behind HTTPS enforcement",
        || async {
            app.json_opt(chain)
                .await
                .is_some_and(|d| first_challenge(&d)["reason"].is_string())
        },
    )
    .await;
    let before = audit(&app).len();
    let words = r#"ingresses.networking.k8s.io \"web\" is forbidden: User \"bob\" cannot patch resource \"ingresses\" in API group \"networking.k8s.io\" in the namespace \"default\" (403)"#;
    // The preview already says so…
    let preview: Value = app
        .post(
            "/api/v1/ingresses/zrh-prod/default/web/edit-in-place",
            json!({"dry_run": true}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(preview["outcome"], "error", "{preview}");
    assert!(preview.to_string().contains(words), "{preview}");
    assert_eq!(preview["sent_as"], "bob (groups oncall)");
    // The one thing to do, before the cluster's words.
    let message = preview["message"].as_str().unwrap();
    assert!(
        message.starts_with("Refused by cluster zrh-prod: it does not let you make this change")
            && message.contains("Ask its administrators for that right in namespace default"),
        "{message}"
    );
    // …and so does the run, in the cluster's words.
    let run = app
        .post(
            "/api/v1/ingresses/zrh-prod/default/web/edit-in-place",
            json!({"dry_run": false}),
        )
        .await;
    assert_eq!(run.status(), 502);
    let run: Value = run.json().await.unwrap();
    assert_eq!(run["error"]["code"], "cluster_error");
    assert!(run.to_string().contains(words), "{run}");
    // The restart: bob may not even read the requests it would delete.
    let restart: Value = app
        .post(
            "/api/v1/certificates/zrh-prod/default/web-tls/restart",
            json!({"dry_run": false}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert!(
        restart
            .to_string()
            .contains(r#"User \"bob\" cannot list resource \"certificaterequests\""#),
        "{restart}"
    );
    // Nothing was written: only refusals reached the log, each as bob.
    let writes: Vec<_> = audit(&app).into_iter().skip(before).collect();
    assert!(!writes.is_empty());
    assert!(
        writes
            .iter()
            .all(|(_, _, user, as_whom, code)| user == SERVICE_ACCOUNT
                && as_whom == "bob"
                && *code == 403),
        "{writes:#?}"
    );
    let annotations = kubectl_output(
        &app.dir.path().join("kubeconfig"),
        "zrh-prod",
        &[
            "get",
            "ingress",
            "web",
            "-n",
            "default",
            "-o",
            "jsonpath={.metadata.annotations}",
        ],
        None,
    );
    assert!(
        !annotations.contains("http01-edit-in-place"),
        "{annotations}"
    );
    app.stop().await;
}

/// Lookout with the `impersonation` manifests, oncall members operators by Lookout's rules
/// and by the cluster's, pressing as carol.
async fn impersonating_with(manifests: String) -> TestApp {
    let mut app = app_with(&["zrh-prod"])
        .with_controllers()
        .with_service_account_of(manifests)
        .auth(impersonating_auth(ONCALL_OPERATORS).await)
        .await;
    bind_cluster_wide(&app, "lookout-tls-operator", "oncall");
    app.http = as_person("carol", "oncall");
    app.wait_ready().await;
    app
}

#[tokio::test(flavor = "multi_thread")]
async fn under_impersonation_lookout_needs_each_impersonate_rule_and_no_write_right() {
    if !kubectl_available() {
        return;
    }
    let manifests = render("overlays/impersonation");
    let impersonate: Vec<_> = rules(&manifests)
        .into_iter()
        .filter(|(role, _, _)| role == "ClusterRole/lookout-impersonate")
        .collect();
    assert_eq!(impersonate.len(), 2, "{impersonate:?}");
    let mut runs = vec![("every rule".to_string(), manifests.clone())];
    runs.extend(impersonate.into_iter().map(|(role, i, rule)| {
        (
            format!("without {role} rule {i} {rule}"),
            without_rule(&manifests, &role, i),
        )
    }));
    let outcomes: Vec<(String, Result<(), String>, bool)> =
        futures::stream::iter(runs.into_iter().map(|(what, manifests)| async move {
            let app = impersonating_with(manifests).await;
            let outcome = exercise(&app).await;
            // Whatever the run, Lookout's ServiceAccount may not write as itself.
            let can = std::process::Command::new("kubectl")
                .env("KUBECONFIG", app.dir.path().join("kubeconfig"))
                .args([
                    "--context",
                    "zrh-prod",
                    "auth",
                    "can-i",
                    "patch",
                    "ingresses",
                    "-A",
                ])
                .arg(format!("--as={SERVICE_ACCOUNT}"))
                .output()
                .unwrap();
            let may_write = String::from_utf8_lossy(&can.stdout).trim() != "no";
            app.stop().await;
            (what, outcome, may_write)
        }))
        .buffer_unordered(2)
        .collect()
        .await;
    for (what, outcome, may_write) in &outcomes {
        assert!(!may_write, "{what}: Lookout may patch Ingresses itself");
        if what == "every rule" {
            assert!(outcome.is_ok(), "{what}: {outcome:?}");
        } else {
            let err = outcome.as_ref().unwrap_err();
            eprintln!("{what}: {err}");
            assert!(
                err.contains(&format!(
                    r#"is forbidden: User \"{SERVICE_ACCOUNT}\" cannot impersonate resource"#
                )),
                "{what}: refused for another reason: {err}"
            );
        }
    }
}

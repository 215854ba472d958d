//! Least privilege, proven: `lookout` connected with a token of the ServiceAccount that
//! `deploy/kubernetes` creates, against kubesim authorizing every request with RBAC. With
//! the manifests' rights every watch syncs and every action works; with any one rule of
//! their roles removed, something Lookout does is refused (so every rule is needed); with
//! the `read-only` overlay, Kubernetes itself refuses the actions.

use std::collections::BTreeSet;
use std::path::Path;

use futures::StreamExt;
use serde_json::{json, Value};

use crate::helpers::*;
use crate::restart::{behind_https_enforcement, first_challenge};

/// `kubectl kustomize deploy/kubernetes/<dir>`.
pub(crate) fn render(dir: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../deploy/kubernetes")
        .join(dir);
    let out = std::process::Command::new("kubectl")
        .arg("kustomize")
        .arg(&root)
        .output()
        .expect("kubectl runs");
    assert!(
        out.status.success(),
        "kubectl kustomize {dir}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn documents(manifests: &str) -> Vec<Value> {
    manifests
        .split("\n---\n")
        .filter(|d| !d.trim().is_empty())
        .map(|d| serde_yaml_ng::from_str(d).unwrap())
        .collect()
}

/// Every rule of the manifests' Roles and ClusterRoles: (role, index, the rule).
pub(crate) fn rules(manifests: &str) -> Vec<(String, usize, Value)> {
    documents(manifests)
        .iter()
        .filter(|d| matches!(d["kind"].as_str(), Some("Role" | "ClusterRole")))
        .flat_map(|d| {
            let name = format!(
                "{}/{}",
                d["kind"].as_str().unwrap(),
                d["metadata"]["name"].as_str().unwrap()
            );
            d["rules"]
                .as_array()
                .unwrap()
                .iter()
                .cloned()
                .enumerate()
                .map(move |(i, r)| (name.clone(), i, r))
        })
        .collect()
}

/// The manifests with one rule of one role removed.
pub(crate) fn without_rule(manifests: &str, role: &str, index: usize) -> String {
    documents(manifests)
        .into_iter()
        .map(|mut d| {
            let name = format!(
                "{}/{}",
                d["kind"].as_str().unwrap_or(""),
                d["metadata"]["name"].as_str().unwrap_or("")
            );
            if name == role {
                d["rules"].as_array_mut().unwrap().remove(index);
            }
            serde_yaml_ng::to_string(&d).unwrap()
        })
        .collect::<Vec<_>>()
        .join("---\n")
}

/// Everything Lookout does on a cluster — every kind synced, the fix (annotations by
/// server-side apply, the in-flight request deleted) and a renew — or the first thing that
/// failed, described.
pub(crate) async fn exercise(app: &TestApp) -> Result<(), String> {
    behind_https_enforcement(app);
    // Every watch syncs (a kind whose CRD is not installed is not watched: the policy
    // engines, where a test leaves them out); a refused one is reported on the cluster,
    // with the API's reason.
    let settled = |k: &Value| k["state"] == "synced" || k["state"] == "not_installed";
    let mut kinds = Value::Null;
    for _ in 0..100 {
        kinds = app.json("/api/v1/clusters").await["items"][0]["kinds"].clone();
        if let Some(refused) = kinds
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["state"] == "error")
        {
            return Err(format!(
                "watch of {}: {}",
                refused["kind"], refused["error"]
            ));
        }
        if kinds.as_array().unwrap().iter().all(settled) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    if !kinds.as_array().unwrap().iter().all(settled) {
        return Err(format!("not every kind synced: {kinds}"));
    }
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
    // The restart action deletes the in-flight request; cert-manager makes the next one.
    let request = |d: &Value| d["tls"][0]["certificate"]["requests"][0]["request"]["uid"].clone();
    let first = request(&app.json(chain).await);
    let restart: Value = app
        .post(
            "/api/v1/certificates/zrh-prod/default/web-tls/restart",
            json!({"dry_run": false}),
        )
        .await
        .json()
        .await
        .unwrap();
    if restart["outcome"] != "ok" {
        return Err(format!("restart: {restart}"));
    }
    within(20, "a new request whose challenge fails again", || async {
        app.json_opt(chain)
            .await
            .is_some_and(|d| request(&d) != first && first_challenge(&d)["reason"].is_string())
    })
    .await;
    // The fix re-solves that challenge in place (it annotates the Order).
    let fix: Value = app
        .post(
            "/api/v1/ingresses/zrh-prod/default/web/edit-in-place",
            json!({"dry_run": false}),
        )
        .await
        .json()
        .await
        .unwrap();
    if fix["outcome"] != "ok" {
        return Err(format!("the fix: {fix}"));
    }
    within(30, "the certificate to be issued after the fix", || async {
        app.json_opt("/api/v1/certificates/zrh-prod/default/web-tls")
            .await
            .is_some_and(|c| c["certificate"]["ready"]["status"] == "True")
    })
    .await;
    let renew: Value = app
        .post(
            "/api/v1/certificates/zrh-prod/default/web-tls/renew",
            json!({"dry_run": false}),
        )
        .await
        .json()
        .await
        .unwrap();
    if renew["outcome"] != "ok" {
        return Err(format!("renew: {renew}"));
    }
    Ok(())
}

async fn lookout_with(manifests: String) -> TestApp {
    // Espejote and Kyverno installed: their rules are needed too.
    let app = app_with(&["zrh-prod"])
        .with_controllers()
        .with_policies()
        .with_service_account_of(manifests)
        .await;
    app.wait_ready().await;
    app
}

#[tokio::test(flavor = "multi_thread")]
async fn with_the_manifests_rights_every_watch_syncs_and_every_action_works() {
    if !kubectl_available() {
        return;
    }
    let app = lookout_with(render("base")).await;
    exercise(&app).await.unwrap();
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_rule_of_lookouts_roles_is_needed() {
    if !kubectl_available() {
        return;
    }
    let manifests = render("base");
    let all = rules(&manifests);
    assert!(all.len() >= 8, "the roles' rules: {all:?}");
    let outcomes: Vec<(String, Result<(), String>)> =
        futures::stream::iter(all.into_iter().map(|(role, i, rule)| {
            let reduced = without_rule(&manifests, &role, i);
            async move {
                let app = lookout_with(reduced).await;
                let outcome = exercise(&app).await;
                app.stop().await;
                (format!("{role} rule {i} {rule}"), outcome)
            }
        }))
        .buffer_unordered(3)
        .collect()
        .await;
    let unneeded: Vec<&String> = outcomes
        .iter()
        .filter(|(_, o)| o.is_ok())
        .map(|(r, _)| r)
        .collect();
    assert!(
        unneeded.is_empty(),
        "Lookout works without these rules, so they are not needed: {unneeded:?}"
    );
    for (rule, outcome) in &outcomes {
        let err = outcome.as_ref().unwrap_err();
        eprintln!("without {rule}: {err}");
        assert!(
            err.contains(r#"is forbidden: User \"system:serviceaccount:lookout:lookout\""#),
            "{rule}: refused for another reason: {err}"
        );
        // A refused watch names what Lookout lacks before the API server's words.
        assert!(
            !err.starts_with("watch of") || err.contains(": \"cannot list "),
            "{rule}: {err}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_cluster_page_names_the_right_lookout_lacks() {
    if !kubectl_available() {
        return;
    }
    let manifests = render("base");
    let (role, index) = rules(&manifests)
        .into_iter()
        .find(|(role, _, rule)| {
            role == "ClusterRole/lookout-read" && rule["apiGroups"][0] == "cert-manager.io"
        })
        .map(|(role, i, _)| (role, i))
        .expect("the read role has a cert-manager.io rule");
    let app = lookout_with(without_rule(&manifests, &role, index)).await;
    within(10, "the refusal on the cluster page", || async {
        let page = app.get("/clusters").await.text().await.unwrap();
        page.contains("cannot list certificaterequests.cert-manager.io: forbidden")
            && page.contains("cannot list certificates.cert-manager.io: forbidden")
    })
    .await;
    // The kinds it may read are served as usual.
    let kinds = app.json("/api/v1/clusters").await["items"][0]["kinds"].clone();
    let ingresses = kinds
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kind"] == "Ingress")
        .unwrap();
    assert_eq!(ingresses["state"], "synced", "{kinds:#}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn with_the_read_only_overlay_kubernetes_refuses_the_actions() {
    if !kubectl_available() {
        return;
    }
    // Lookout itself is not read-only here: Kubernetes must refuse what it tries.
    let app = lookout_with(render("overlays/read-only")).await;
    let err = exercise(&app).await.unwrap_err();
    assert!(
        err.starts_with("restart:") && err.contains("forbidden"),
        "{err}"
    );
    let can = std::process::Command::new("kubectl")
        .env("KUBECONFIG", app.kubeconfig())
        .args([
            "auth",
            "can-i",
            "patch",
            "ingresses",
            "-A",
            "--as=system:serviceaccount:lookout:lookout",
        ])
        .output()
        .unwrap();
    let can = String::from_utf8_lossy(&can.stdout).to_string();
    assert_eq!(can.trim(), "no");
    app.stop().await;
}

/// The Prometheus operator's kinds, for the `with-prometheus` overlay: a cluster that has
/// the operator has these CRDs (here with open schemas).
const MONITORING_CRDS: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: servicemonitors.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names: {kind: ServiceMonitor, plural: servicemonitors, singular: servicemonitor, listKind: ServiceMonitorList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: prometheusrules.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names: {kind: PrometheusRule, plural: prometheusrules, singular: prometheusrule, listKind: PrometheusRuleList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn every_overlay_renders_and_applies_server_side() {
    if !kubectl_available() {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/kubernetes/overlays");
    let mut dirs = vec!["base".to_string()];
    for entry in std::fs::read_dir(&root).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().to_string();
        dirs.push(format!("overlays/{name}"));
    }
    assert!(dirs.len() >= 4, "{dirs:?}");
    for dir in dirs {
        // A fresh authorizing kubesim per overlay; kubectl applies as the admin.
        let stop = tokio_util::sync::CancellationToken::new();
        let mut opts = kubesim::FleetOptions::numbered(1);
        opts.authorize = true;
        let fleet = kubesim::Fleet::start(
            &opts,
            std::sync::Arc::new(kubesim::Clock::Real),
            stop.clone(),
        )
        .await
        .unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let kubeconfig = tmp.path().join("kubeconfig");
        fleet.write_kubeconfig(&kubeconfig).unwrap();
        kubectl(
            &kubeconfig,
            "sim-1",
            &["apply", "--server-side", "-f", "-"],
            Some(MONITORING_CRDS),
        );
        kubectl(
            &kubeconfig,
            "sim-1",
            &["apply", "--server-side", "-f", "-"],
            Some(&render(&dir)),
        );
        let kinds = kubectl_output(
            &kubeconfig,
            "sim-1",
            &[
                "get",
                "deployment,service,configmap,persistentvolumeclaim,networkpolicy",
                "-n",
                "lookout",
                "-o",
                "name",
            ],
            None,
        );
        // The PostgreSQL overlay keeps its history in the database, not on a volume.
        let volume = !dir.ends_with("postgres-replicas");
        for expected in [
            "deployment.apps/lookout",
            "service/lookout",
            "configmap/lookout-config",
            "persistentvolumeclaim/lookout-data",
            "networkpolicy.networking.k8s.io/lookout",
        ] {
            if expected.starts_with("persistentvolumeclaim") && !volume {
                assert!(!kinds.contains(expected), "{dir}: {kinds}");
                continue;
            }
            assert!(
                kinds.contains(expected),
                "{dir}: {expected} missing in {kinds}"
            );
        }
        stop.cancel();
    }
}

/// The alerts of the `with-prometheus` overlay read metrics Lookout exports, and their links
/// are pages Lookout serves.
#[tokio::test(flavor = "multi_thread")]
async fn the_alerts_read_lookouts_metrics_and_link_to_its_pages() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../deploy/kubernetes/overlays/with-prometheus/prometheusrule.yaml");
    let rule: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let alerts = rule["spec"]["groups"][0]["rules"]
        .as_array()
        .unwrap()
        .clone();
    let names: Vec<&str> = alerts
        .iter()
        .map(|a| a["alert"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "LookoutCertExpirySoon",
            "LookoutChallengeFailing",
            "LookoutRateLimitBudgetLow",
            "LookoutClusterUnreachable"
        ]
    );
    // A certificate issued (a budget spent) and an Ingress with a finding, so that every
    // family the alerts read has series.
    let app = app_with(&["zrh-prod"]).with_controllers().await;
    app.wait_ready().await;
    create(
        &app,
        0,
        "cert-manager.io",
        "clusterissuers",
        None,
        json!({"metadata": {"name": "letsencrypt-prod"}, "spec": {"acme": {"server": "https://acme-v02.api.letsencrypt.org/directory", "email": "ops@example.com", "solvers": [{"http01": {"ingress": {}}}]}}}),
    );
    for (name, edit_in_place) in [("shop", "true"), ("typo", "yes")] {
        create(
            &app,
            0,
            "networking.k8s.io",
            "ingresses",
            Some("default"),
            json!({"metadata": {"name": name, "annotations": {"cert-manager.io/cluster-issuer": "letsencrypt-prod", "acme.cert-manager.io/http01-edit-in-place": edit_in_place}},
                   "spec": {"rules": [{"host": format!("{name}.example.com")}], "tls": [{"hosts": [format!("{name}.example.com")], "secretName": format!("{name}-tls")}]}}),
        );
    }
    app.eventually("a finding and a spent budget in /metrics", || async {
        let metrics = app.get("/metrics").await.text().await.unwrap();
        metrics.contains("\nlookout_findings{")
            && metrics.contains("\nlookout_letsencrypt_budget_used_ratio{")
    })
    .await;
    let metrics = app.get("/metrics").await.text().await.unwrap();
    // The series promtool's tests feed the alerts (alerts-test.yaml) have the labels
    // Lookout gives them, so that what promtool proves holds for the real metrics.
    let exported: Vec<(String, BTreeSet<String>)> = metrics
        .lines()
        .filter(|l| l.starts_with("lookout_"))
        .map(series_labels)
        .collect();
    let tests: Value = serde_yaml_ng::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../deploy/kubernetes/overlays/with-prometheus/alerts-test.yaml"),
        )
        .unwrap(),
    )
    .unwrap();
    for s in tests["tests"][0]["input_series"].as_array().unwrap() {
        let series = s["series"].as_str().unwrap();
        let wanted = series_labels(series);
        // This app probes nothing: the probe series' labels are pinned by
        // probing::each_probe_rule_fires_… (`{cluster, host}`).
        if wanted.0.starts_with("lookout_probe_") {
            assert_eq!(wanted.1, BTreeSet::from(["cluster".into(), "host".into()]));
            continue;
        }
        assert!(
            exported.contains(&wanted),
            "alerts-test.yaml feeds {series}, but Lookout exports no {} with the labels {:?}",
            wanted.0,
            wanted.1
        );
    }
    for a in &alerts {
        let expr = a["expr"].as_str().unwrap();
        let used: Vec<&str> = expr
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| w.starts_with("lookout_"))
            .collect();
        assert!(!used.is_empty(), "{expr}");
        for m in used {
            assert!(
                metrics.contains(&format!("# TYPE {m} ")),
                "{}: Lookout does not export {m}",
                a["alert"]
            );
        }
        let link = a["annotations"]["lookout_url"].as_str().unwrap();
        let path = link
            .strip_prefix("https://lookout.example.com")
            .unwrap_or_else(|| panic!("{link}"))
            .replace("{{ $labels.cluster }}", "zrh-prod")
            .replace("{{ $labels.host }}", "web.example.com");
        assert!(!path.contains("{{"), "{path}");
        let page = app.get(&path).await;
        assert_eq!(page.status(), 200, "{}: {path}", a["alert"]);
    }
    // The Grafana dashboard's queries too.
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../deploy/kubernetes/overlays/with-prometheus/lookout-dashboard.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let panels = dashboard["panels"].as_array().unwrap();
    assert!(panels.len() >= 6);
    for target in panels.iter().flat_map(|p| p["targets"].as_array().unwrap()) {
        let expr = target["expr"].as_str().unwrap();
        for m in expr
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| w.starts_with("lookout_"))
        {
            let family = m.trim_end_matches("_sum").trim_end_matches("_count");
            // jemalloc's figures exist in the lookout binary, not in this test process.
            let binary_only = m.starts_with("lookout_heap_");
            assert!(
                binary_only
                    || metrics.contains(&format!("# TYPE {m} "))
                    || metrics.contains(&format!("# TYPE {family} ")),
                "the dashboard queries {m}, which Lookout does not export"
            );
        }
    }
    app.stop().await;
}

/// A series' metric name and label names: `m{a="x",b="y"} 1` → (m, {a, b}).
fn series_labels(line: &str) -> (String, BTreeSet<String>) {
    let (name, rest) = line
        .split_once('{')
        .unwrap_or((line.split(' ').next().unwrap(), ""));
    let labels = rest
        .split("\",")
        .filter_map(|pair| pair.split_once("=\""))
        .map(|(k, _)| k.trim().to_string())
        .collect();
    (name.to_string(), labels)
}

/// Prometheus itself evaluates the alerts: `promtool check rules` on the PrometheusRule's
/// spec, and `promtool test rules` on `alerts-test.yaml` (each alert silent before its
/// `for`, firing after with the labels and rendered annotations, others silent).
#[test]
fn promtool_fires_each_alert_as_its_tests_expect() {
    let promtool = std::process::Command::new("promtool")
        .arg("--version")
        .output();
    if !promtool.is_ok_and(|o| o.status.success()) {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "promtool is required under CI=true (scripts/test.sh installs Debian's prometheus)"
        );
        eprintln!("skipping: promtool is not installed (apt-get install prometheus)");
        return;
    }
    let overlay =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/kubernetes/overlays/with-prometheus");
    let rule: Value = serde_yaml_ng::from_str(
        &std::fs::read_to_string(overlay.join("prometheusrule.yaml")).unwrap(),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("lookout-rules.yaml"),
        serde_yaml_ng::to_string(&rule["spec"]).unwrap(),
    )
    .unwrap();
    std::fs::copy(
        overlay.join("alerts-test.yaml"),
        dir.path().join("alerts-test.yaml"),
    )
    .unwrap();
    for args in [
        ["check", "rules", "lookout-rules.yaml"],
        ["test", "rules", "alerts-test.yaml"],
    ] {
        let out = std::process::Command::new("promtool")
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "promtool {}:\n{}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// `lookout check-access` with a config whose cluster is reached as the manifests'
/// ServiceAccount: (exit success, what it printed).
fn check_access(app: &TestApp, read_only: bool) -> (bool, String) {
    check_access_with(app, read_only, "")
}

/// The same with `extra` appended to the config.
fn check_access_with(app: &TestApp, read_only: bool, extra: &str) -> (bool, String) {
    let kubeconfig = app.kubeconfig().with_file_name("lookout.kubeconfig");
    let config = app.dir.path().join("check-access.toml");
    std::fs::write(
        &config,
        format!(
            "database_url = \"sqlite://{}\"\nread_only = {read_only}\n[[clusters]]\nname = \"zrh-prod\"\nkubeconfig = \"{}\"\ncontext = \"zrh-prod\"\n{extra}",
            app.dir.path().join("unused.db").display(),
            kubeconfig.display()
        ),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lookout"))
        .args(["check-access", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn check_access_lists_every_right_and_what_is_missing() {
    if !kubectl_available() {
        return;
    }
    let app = app_with(&["zrh-prod"])
        .with_service_account_of(render("base"))
        .await;
    let (ok, out) = check_access(&app, false);
    assert!(ok, "{out}");
    assert!(out.contains("0 of 41 rights missing"), "{out}");
    assert!(
        out.contains("ok      update certificates.cert-manager.io/status"),
        "{out}"
    );
    assert!(
        out.contains("ok      watch configmaps \"cilium-config\""),
        "{out}"
    );
    // When the clusters decide who sees what, asking them is a right too: the base lacks it.
    let asks = "[auth]\nmode = \"proxy\"\ntrusted_proxies = [\"127.0.0.1/32\"]\naccess_source = \"kubernetes\"\n";
    let (ok, out) = check_access_with(&app, false, asks);
    assert!(!ok && out.contains("2 of 43 rights missing"), "{out}");
    assert!(
        out.contains("MISSING create subjectaccessreviews.authorization.k8s.io"),
        "{out}"
    );
    // Under impersonation the actions' rights are the person's; Lookout needs only to
    // impersonate them, which the base does not grant.
    let impersonates =
        "[actions]\nimpersonate = true\n[auth]\nmode = \"proxy\"\ntrusted_proxies = [\"127.0.0.1/32\"]\n";
    let (ok, out) = check_access_with(&app, false, impersonates);
    assert!(!ok && out.contains("2 of 36 rights missing"), "{out}");
    assert!(out.contains("MISSING impersonate users"), "{out}");
    assert!(!out.contains("delete certificaterequests"), "{out}");
    app.stop().await;
    let app = app_with(&["zrh-prod"])
        .with_service_account_of(render("overlays/impersonation"))
        .await;
    let (ok, out) = check_access_with(&app, false, impersonates);
    assert!(ok && out.contains("0 of 36 rights missing"), "{out}");
    app.stop().await;
    let app = app_with(&["zrh-prod"])
        .with_service_account_of(render("overlays/cluster-access"))
        .await;
    let (ok, out) = check_access_with(&app, false, asks);
    assert!(ok && out.contains("0 of 43 rights missing"), "{out}");
    app.stop().await;

    // Without the actions' roles: what the actions need is missing, the reads are there;
    // with read_only the actions' rights are not asked for.
    let app = app_with(&["zrh-prod"])
        .with_service_account_of(render("overlays/read-only"))
        .await;
    let (ok, out) = check_access(&app, false);
    assert!(!ok, "{out}");
    assert!(out.contains("7 of 41 rights missing"), "{out}");
    assert!(
        out.contains("MISSING delete certificaterequests.cert-manager.io"),
        "{out}"
    );
    assert!(
        out.contains("ok      list ingresses.networking.k8s.io"),
        "{out}"
    );
    let (ok, out) = check_access(&app, true);
    assert!(ok && out.contains("0 of 34 rights missing"), "{out}");
    app.stop().await;
}

/// Each overlay's configuration is valid with the environment its Deployment gives Lookout
/// (values from Secrets left out: they are the installer's), so no overlay starts a Lookout
/// that refuses its own settings (impersonation without a sign-in, say).
#[test]
fn every_overlays_configuration_is_valid_with_its_environment() {
    if !kubectl_available() {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/kubernetes/overlays");
    let mut dirs = vec!["base".to_string()];
    for entry in std::fs::read_dir(&root).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().to_string();
        dirs.push(format!("overlays/{name}"));
    }
    for dir in dirs {
        let docs = documents(&render(&dir));
        let config = docs
            .iter()
            .find(|d| d["kind"] == "ConfigMap" && d["metadata"]["name"] == "lookout-config")
            .and_then(|d| d["data"]["config.toml"].as_str())
            .unwrap_or_else(|| panic!("{dir}: no lookout-config"))
            .to_string();
        let deployment = docs
            .iter()
            .find(|d| d["kind"] == "Deployment" && d["metadata"]["name"] == "lookout")
            .unwrap_or_else(|| panic!("{dir}: no Deployment"));
        let env: Vec<(String, String)> = deployment["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["name"] == "lookout")
            .flat_map(|c| c["env"].as_array().cloned().unwrap_or_default())
            .filter_map(|e| {
                Some((
                    e["name"].as_str()?.to_string(),
                    e["value"].as_str()?.to_string(),
                ))
            })
            .collect();
        let parsed = lookout_server::config::Config::parse(&config, &env);
        assert!(parsed.is_ok(), "{dir} with {env:?}: {:?}", parsed.err());
        if dir.ends_with("impersonation") || dir.ends_with("cluster-decides") {
            assert!(parsed.unwrap().actions.impersonate, "{dir}");
        }
    }
}

/// The PostgreSQL overlay: two replicas that may not share a node, a drain that takes one
/// at a time, the database URL and the shared session key from Secrets, no SQLite volume.
#[test]
fn the_postgres_overlay_runs_two_replicas_apart_with_the_database_from_a_secret() {
    if !kubectl_available() {
        return;
    }
    let docs: Vec<serde_json::Value> =
        serde_yaml_ng::Deserializer::from_str(&render("overlays/postgres-replicas"))
            .map(|d| serde::Deserialize::deserialize(d).unwrap())
            .collect();
    let of = |kind: &str| docs.iter().find(|d| d["kind"] == kind);
    assert!(of("PersistentVolumeClaim").is_none(), "no SQLite volume");
    let deployment = of("Deployment").unwrap();
    assert_eq!(deployment["spec"]["replicas"], 2);
    assert_eq!(deployment["spec"]["strategy"]["type"], "RollingUpdate");
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(
        pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
            ["topologyKey"],
        "kubernetes.io/hostname"
    );
    let env = pod["containers"][0]["env"].as_array().unwrap();
    let secret_of = |name: &str| {
        env.iter()
            .find(|e| e["name"] == name)
            .map(|e| e["valueFrom"]["secretKeyRef"].clone())
    };
    assert_eq!(
        secret_of("LOOKOUT_DATABASE_URL").unwrap()["name"],
        "lookout-database"
    );
    assert_eq!(
        secret_of("LOOKOUT_AUTH_SESSION_KEY").unwrap()["optional"],
        false,
        "replicas must share a session key"
    );
    assert!(pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|v| v["name"] != "data"));
    let pdb = of("PodDisruptionBudget").unwrap();
    assert_eq!(pdb["spec"]["minAvailable"], 1);
    assert_eq!(
        pdb["spec"]["selector"]["matchLabels"],
        deployment["spec"]["selector"]["matchLabels"]
    );
}

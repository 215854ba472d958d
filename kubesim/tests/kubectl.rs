//! kubectl, an independent client, against kubesim. Skipped with a message where kubectl is
//! not installed, except under CI=true, where a missing kubectl fails the suite.

mod support;

use support::Kubectl;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};

const INGRESS: &str = r#"apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: shop
  namespace: default
  annotations:
    cert-manager.io/cluster-issuer: letsencrypt
spec:
  rules:
  - host: shop.example.com
  tls:
  - hosts: [shop.example.com]
    secretName: shop-tls
"#;

fn annotation(manager_value: &str) -> String {
    format!(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: shop\n  namespace: default\n  annotations:\n    acme.cert-manager.io/http01-edit-in-place: \"{manager_value}\"\n"
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn get_all_namespaces_lists_what_create_made() {
    let Some(k) = Kubectl::start().await else {
        return;
    };
    k.ok(&["create", "namespace", "acme"]).await;
    let f = k.write(
        "ing.yaml",
        &INGRESS.replace("namespace: default", "namespace: acme"),
    );
    k.ok(&["create", "-f", f.to_str().unwrap()]).await;
    let out = k.ok(&["get", "ingress", "-A"]).await;
    assert!(out.contains("NAMESPACE"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("acme") && l.contains("shop")),
        "{out}"
    );
    let ns = k.ok(&["get", "ns", "-o", "name"]).await;
    assert!(
        ns.contains("namespace/acme") && ns.contains("namespace/kube-system"),
        "{ns}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn server_side_apply_conflict_between_two_managers_and_force() {
    let Some(k) = Kubectl::start().await else {
        return;
    };
    let ing = k.write("ing.yaml", INGRESS);
    k.ok(&["apply", "--server-side", "-f", ing.to_str().unwrap()])
        .await;
    let espejote = k.write("a.yaml", &annotation("true"));
    k.ok(&[
        "apply",
        "--server-side",
        "--field-manager=managed-resource:edit-in-place",
        "-f",
        espejote.to_str().unwrap(),
    ])
    .await;

    let other = k.write("b.yaml", &annotation("false"));
    let conflict = k
        .run(&[
            "apply",
            "--server-side",
            "--field-manager=argocd-controller",
            "-f",
            other.to_str().unwrap(),
        ])
        .await;
    assert!(!conflict.ok);
    assert!(
        conflict
            .stderr
            .contains("conflict with \"managed-resource:edit-in-place\""),
        "{}",
        conflict.stderr
    );

    k.ok(&[
        "apply",
        "--server-side",
        "--field-manager=argocd-controller",
        "--force-conflicts",
        "-f",
        other.to_str().unwrap(),
    ])
    .await;
    let value = k
        .ok(&[
            "get",
            "ingress",
            "shop",
            "-o",
            "jsonpath={.metadata.annotations.acme\\.cert-manager\\.io/http01-edit-in-place}",
        ])
        .await;
    assert_eq!(value, "false");
    let managed = k
        .ok(&[
            "get",
            "ingress",
            "shop",
            "--show-managed-fields",
            "-o",
            "jsonpath={.metadata.managedFields[*].manager}",
        ])
        .await;
    assert!(
        managed.contains("argocd-controller") && managed.contains("kubectl"),
        "{managed}"
    );
    assert!(
        !managed.contains("managed-resource"),
        "force removed the field from the other manager: {managed}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn server_dry_run_changes_nothing() {
    let Some(k) = Kubectl::start().await else {
        return;
    };
    let ing = k.write("ing.yaml", INGRESS);
    k.ok(&["apply", "--server-side", "-f", ing.to_str().unwrap()])
        .await;
    let a = k.write("a.yaml", &annotation("true"));
    let out = k
        .ok(&[
            "apply",
            "--server-side",
            "--field-manager=lookout",
            "--dry-run=server",
            "-f",
            a.to_str().unwrap(),
        ])
        .await;
    assert!(out.contains("server dry run"), "{out}");
    let annotations = k
        .ok(&[
            "get",
            "ingress",
            "shop",
            "-o",
            "jsonpath={.metadata.annotations}",
        ])
        .await;
    assert!(!annotations.contains("edit-in-place"), "{annotations}");
}

#[tokio::test(flavor = "multi_thread")]
async fn patch_status_subresource_and_delete() {
    let Some(k) = Kubectl::start().await else {
        return;
    };
    let ing = k.write("ing.yaml", INGRESS);
    k.ok(&["apply", "--server-side", "-f", ing.to_str().unwrap()])
        .await;
    k.ok(&[
        "patch",
        "ingress",
        "shop",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"loadBalancer":{"ingress":[{"ip":"192.0.2.7"}]}}}"#,
    ])
    .await;
    let ip = k
        .ok(&[
            "get",
            "ingress",
            "shop",
            "-o",
            "jsonpath={.status.loadBalancer.ingress[0].ip}",
        ])
        .await;
    assert_eq!(ip, "192.0.2.7");
    let preview = k
        .ok(&["delete", "ingress", "shop", "--dry-run=server"])
        .await;
    assert!(preview.contains("server dry run"), "{preview}");
    k.ok(&["get", "ingress", "shop"]).await;
    let deleted = k.ok(&["delete", "ingress", "shop"]).await;
    assert!(deleted.contains("deleted"), "{deleted}");
    let gone = k.run(&["get", "ingress", "shop"]).await;
    assert!(
        !gone.ok && gone.stderr.contains("NotFound"),
        "{}",
        gone.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn get_watch_sees_a_change() {
    let Some(k) = Kubectl::start().await else {
        return;
    };
    let ing = k.write("ing.yaml", INGRESS);
    k.ok(&["apply", "--server-side", "-f", ing.to_str().unwrap()])
        .await;
    let mut child = k
        .command(&["get", "ingress", "-w", "-o", "name"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.as_deref(), Some("ingress.networking.k8s.io/shop"));
    let second = k.write("second.yaml", &INGRESS.replace("name: shop", "name: blog"));
    k.ok(&["apply", "--server-side", "-f", second.to_str().unwrap()])
        .await;
    let next = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("the watch reported the new Ingress")
        .unwrap();
    assert_eq!(next.as_deref(), Some("ingress.networking.k8s.io/blog"));
    child.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn real_crds_applied_with_kubectl_are_served() {
    let Some(k) = Kubectl::start().await else {
        return;
    };
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/crds");
    if !shared.exists() {
        eprintln!("skipping: {} not found", shared.display());
        return;
    }
    for dir in ["cert-manager", "gateway-api"] {
        k.ok(&[
            "apply",
            "--server-side",
            "-f",
            shared.join(dir).to_str().unwrap(),
        ])
        .await;
    }
    let crds = k.ok(&["get", "crd", "-o", "name"]).await;
    assert_eq!(crds.lines().count(), 11, "{crds}");
    let cert = k.write(
        "cert.yaml",
        "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata:\n  name: shop\n  namespace: default\nspec:\n  secretName: shop-tls\n  dnsNames: [shop.example.com]\n  issuerRef: {name: letsencrypt, kind: ClusterIssuer}\n",
    );
    k.ok(&["apply", "--server-side", "-f", cert.to_str().unwrap()])
        .await;
    let out = k.ok(&["get", "certificates", "-A"]).await;
    assert!(out.contains("shop"), "{out}");
    // The CRD's openAPIV3Schema is the judge of its objects, as for the built-in kinds: a
    // misspelt field or a wrong shape is refused by server-side apply and by a strict create.
    let certificate = |name: &str, names: &str| {
        format!(
            "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n  secretName: {name}-tls\n{names}\n  issuerRef: {{name: letsencrypt, kind: ClusterIssuer}}\n"
        )
    };
    let typo = k.write(
        "typo.yaml",
        &certificate("typo", "  dnsName: [typo.example.com]"),
    );
    let typo = typo.to_str().unwrap();
    k.refused(
        &["apply", "--server-side", "--validate=false", "-f", typo],
        "failed to create typed patch object (default/typo; cert-manager.io/v1, Kind=Certificate): .spec.dnsName: field not declared in schema",
    )
    .await;
    k.refused(&["create", "-f", typo], "unknown field \"spec.dnsName\"")
        .await;
    // Without strict validation the API server prunes what the schema does not declare.
    k.ok(&["create", "--validate=false", "-f", typo]).await;
    let spec = k
        .ok(&[
            "get",
            "certificate",
            "typo",
            "-n",
            "default",
            "-o",
            "jsonpath={.spec}",
        ])
        .await;
    let spec: serde_json::Value = serde_json::from_str(&spec).unwrap();
    assert_eq!(
        spec,
        serde_json::json!({"secretName": "typo-tls", "issuerRef": {"name": "letsencrypt", "kind": "ClusterIssuer"}}),
        "spec.dnsName pruned"
    );
    k.ok(&["delete", "certificate", "typo", "-n", "default"])
        .await;
    let shape = k.write(
        "shape.yaml",
        &certificate("shape", "  dnsNames: shape.example.com"),
    );
    k.refused(
        &[
            "apply",
            "--server-side",
            "--validate=false",
            "-f",
            shape.to_str().unwrap(),
        ],
        ".spec.dnsNames: expected list, got string",
    )
    .await;
    let out = k
        .ok(&["get", "certificates", "-n", "default", "-o", "name"])
        .await;
    assert_eq!(
        out.trim(),
        "certificate.cert-manager.io/shop",
        "nothing else was created"
    );
    let gw = k
        .ok(&[
            "api-resources",
            "--api-group=gateway.networking.k8s.io",
            "-o",
            "name",
        ])
        .await;
    assert!(gw.contains("gateways.gateway.networking.k8s.io"), "{gw}");
}

#[tokio::test(flavor = "multi_thread")]
async fn built_in_kinds_are_validated_against_their_schemas_and_explained() {
    let Some(k) = Kubectl::start().await else {
        return;
    };
    let deployment = |extra: &str| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: default\nspec:\n{extra}  selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web}}\n    spec:\n      containers:\n      - name: web\n        image: web:1\n"
        )
    };
    // A misspelt field: server-side apply refuses the typed patch whatever kubectl validates.
    let bad = k.write("bad.yaml", &deployment("  replica: 2\n"));
    let out = k
        .run(&[
            "apply",
            "--server-side",
            "--validate=false",
            "-f",
            bad.to_str().unwrap(),
        ])
        .await;
    assert!(!out.ok, "{}", out.stdout);
    assert!(
        out.stderr.contains(
            "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): .spec.replica: field not declared in schema"
        ),
        "{}",
        out.stderr
    );
    // kubectl create sends fieldValidation=Strict: the API server names the unknown field.
    let out = k.run(&["create", "-f", bad.to_str().unwrap()]).await;
    assert!(!out.ok, "{}", out.stdout);
    assert!(
        out.stderr
            .contains("strict decoding error: unknown field \"spec.replica\""),
        "{}",
        out.stderr
    );
    // A wrong shape is refused as well; nothing was created by either attempt.
    let shape = k.write("shape.yaml", &deployment("  replicas: two\n"));
    let out = k
        .run(&["apply", "--server-side", "-f", shape.to_str().unwrap()])
        .await;
    assert!(!out.ok, "{}", out.stdout);
    assert!(
        out.stderr.contains(".spec.replicas: expected numeric"),
        "{}",
        out.stderr
    );
    let none = k.run(&["get", "deployment", "web", "-n", "default"]).await;
    assert!(
        !none.ok && none.stderr.contains("NotFound"),
        "{}",
        none.stderr
    );
    // The right spelling applies, and kubectl explain reads the served schema.
    let good = k.write("good.yaml", &deployment("  replicas: 2\n"));
    k.ok(&["apply", "--server-side", "-f", good.to_str().unwrap()])
        .await;
    let replicas = k
        .ok(&[
            "get",
            "deployment",
            "web",
            "-o",
            "jsonpath={.spec.replicas}",
        ])
        .await;
    assert_eq!(replicas, "2");
    let explained = k.ok(&["explain", "deployment.spec.replicas"]).await;
    assert!(
        explained.contains("KIND:")
            && explained.contains("Deployment")
            && explained.contains("integer"),
        "{explained}"
    );
}

/// kubectl prints a custom kind's printer columns, as its CRD declares them: Espejote's
/// Status, Kyverno's READY and MESSAGE, a Gateway's class, addresses and Programmed (an age
/// for a date).
#[tokio::test(flavor = "multi_thread")]
async fn get_prints_the_printer_columns_a_crd_declares() {
    let Some(k) = Kubectl::start().await else {
        return;
    };
    kubesim::fleet::install_policy_crds(&k.fleet.clusters[0].cluster);
    kubesim::fleet::install_builtin_crds(&k.fleet.clusters[0].cluster);
    k.ok(&["create", "namespace", "platform"]).await;
    let f = k.write(
        "mr.yaml",
        "apiVersion: espejote.io/v1alpha1\nkind: ManagedResource\nmetadata:\n  name: edit-in-place\n  namespace: platform\nspec:\n  template: \"[]\"\n---\napiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata:\n  name: add-edit-in-place\nspec:\n  background: false\n  rules: []\n",
    );
    k.ok(&["create", "-f", f.to_str().unwrap()]).await;
    k.ok(&[
        "-n",
        "platform",
        "patch",
        "managedresource",
        "edit-in-place",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"status":"TemplateError"}}"#,
    ])
    .await;
    k.ok(&[
        "patch",
        "clusterpolicy",
        "add-edit-in-place",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"conditions":[{"type":"Ready","status":"False","reason":"Failed","message":"Not Ready","lastTransitionTime":"2026-12-07T00:00:00Z"}]}}"#,
    ])
    .await;
    // A Gateway: its class, addresses and Programmed status (gateway-api's columns).
    let gw = k.write(
        "gw.yaml",
        "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata:\n  name: web\n  namespace: platform\nspec:\n  gatewayClassName: cilium\n  listeners: []\n",
    );
    k.ok(&["create", "-f", gw.to_str().unwrap()]).await;
    k.ok(&[
        "-n",
        "platform",
        "patch",
        "gateway",
        "web",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"addresses":[{"type":"IPAddress","value":"127.0.0.1"},{"type":"IPAddress","value":"::1"}],"conditions":[{"type":"Programmed","status":"True","reason":"Programmed","message":"Gateway Programmed","lastTransitionTime":"2026-12-07T00:00:00Z"}]}}"#,
    ])
    .await;
    let out = k.ok(&["-n", "platform", "get", "gateways"]).await;
    let header: Vec<&str> = out.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["NAME", "CLASS", "ADDRESS", "PROGRAMMED", "AGE"],
        "{out}"
    );
    let row: Vec<&str> = out.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(
        &row[..4],
        ["web", "cilium", "127.0.0.1,::1", "True"],
        "{out}"
    );
    let out = k.ok(&["-n", "platform", "get", "managedresources"]).await;
    let header: Vec<&str> = out.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "STATUS", "AGE"], "{out}");
    assert!(
        out.lines().nth(1).unwrap().contains("TemplateError"),
        "{out}"
    );
    let out = k.ok(&["get", "clusterpolicies"]).await;
    let header: Vec<&str> = out.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["NAME", "ADMISSION", "BACKGROUND", "READY", "AGE", "MESSAGE"],
        "{out}"
    );
    // ADMISSION is unset (an empty cell); BACKGROUND false, READY False, the message last.
    let row: Vec<&str> = out.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(
        (row[0], row[1], row[2], row[4..].join(" ")),
        (
            "add-edit-in-place",
            "false",
            "False",
            "Not Ready".to_string()
        ),
        "{out}"
    );
}

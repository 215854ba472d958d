//! kubesim's authorizer, judged by kubectl: roles and bindings made with `kubectl create` and
//! `kubectl apply`, then `kubectl auth can-i` (a SelfSubjectAccessReview, with `--as` and
//! `--as-group` as impersonation) on a table of cases whose answers follow from Kubernetes
//! RBAC, and the same requests really made, which must be allowed or refused alike.

mod support;

use kubesim::FleetOptions;
use support::Kubectl;

async fn authorizing() -> Option<Kubectl> {
    let mut opts = FleetOptions::numbered(1);
    opts.authorize = true;
    Kubectl::start_with(opts).await
}

const AGGREGATED: &str = r#"apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: lookout-aggregate
aggregationRule:
  clusterRoleSelectors:
  - matchLabels:
      lookout.example/aggregate-to: lookout-aggregate
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: configmap-reader
  labels:
    lookout.example/aggregate-to: lookout-aggregate
rules:
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get", "list"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: carol-aggregate
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: lookout-aggregate
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: carol
"#;

/// Namespaces, a ServiceAccount, and roles of every shape, all made by kubectl.
async fn policy(k: &Kubectl) {
    for ns in ["shop", "other", "lookout"] {
        k.ok(&["create", "namespace", ns]).await;
    }
    let steps: &[&[&str]] = &[
        &["create", "serviceaccount", "lookout", "-n", "lookout"],
        &["create", "serviceaccount", "impersonator", "-n", "lookout"],
        &[
            "create",
            "secret",
            "generic",
            "tls",
            "-n",
            "shop",
            "--from-literal=tls.crt=x",
        ],
        &[
            "create",
            "configmap",
            "settings",
            "-n",
            "other",
            "--from-literal=a=1",
        ],
        &[
            "create",
            "clusterrole",
            "ingress-reader",
            "--verb=get,list,watch",
            "--resource=ingresses.networking.k8s.io",
        ],
        &[
            "create",
            "clusterrolebinding",
            "lookout-read",
            "--clusterrole=ingress-reader",
            "--serviceaccount=lookout:lookout",
        ],
        &[
            "create",
            "role",
            "cert-status",
            "-n",
            "shop",
            "--verb=update",
            "--resource=certificates.cert-manager.io/status",
        ],
        &[
            "create",
            "rolebinding",
            "alice-status",
            "-n",
            "shop",
            "--role=cert-status",
            "--user=alice",
        ],
        &[
            "create",
            "role",
            "one-secret",
            "-n",
            "shop",
            "--verb=get",
            "--resource=secrets",
            "--resource-name=tls",
        ],
        &[
            "create",
            "rolebinding",
            "team-secret",
            "-n",
            "shop",
            "--role=one-secret",
            "--group=team",
        ],
        // Names that are not ASCII and a group name holding a comma: one name each.
        &[
            "create",
            "rolebinding",
            "unusual-names-secret",
            "-n",
            "shop",
            "--role=one-secret",
            "--user=Jürgen",
            "--group=ops,eu",
        ],
        &[
            "create",
            "clusterrole",
            "metrics",
            "--verb=get",
            "--non-resource-url=/metrics",
        ],
        &[
            "create",
            "clusterrolebinding",
            "dave-metrics",
            "--clusterrole=metrics",
            "--user=dave",
        ],
        &[
            "create",
            "clusterrole",
            "as-alice",
            "--verb=impersonate",
            "--resource=users",
            "--resource-name=alice",
        ],
        &[
            "create",
            "clusterrolebinding",
            "impersonator-as-alice",
            "--clusterrole=as-alice",
            "--serviceaccount=lookout:impersonator",
        ],
    ];
    for step in steps {
        k.ok(step).await;
    }
    let f = k.write("aggregated.yaml", AGGREGATED);
    k.ok(&["apply", "--server-side", "-f", f.to_str().unwrap()])
        .await;
}

const SA: &str = "--as=system:serviceaccount:lookout:lookout";

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_auth_can_i_agrees_with_rbac_and_with_what_requests_get() {
    let Some(k) = authorizing().await else {
        return;
    };
    policy(&k).await;
    // (can-i arguments, expected answer, the same request made for real)
    let table: &[(&[&str], bool, &[&str])] = &[
        (
            &["list", "ingresses", "-A", SA],
            true,
            &["get", "ingresses", "-A", SA],
        ),
        (
            &["watch", "ingresses.networking.k8s.io", "-n", "shop", SA],
            true,
            &[],
        ),
        (
            &["delete", "ingresses", "-n", "shop", SA],
            false,
            &["delete", "ingress", "web", "-n", "shop", SA],
        ),
        (
            &["list", "secrets", "-A", SA],
            false,
            &["get", "secrets", "-A", SA],
        ),
        (
            &[
                "list",
                "ingresses",
                "-A",
                "--as=system:serviceaccount:lookout:other",
            ],
            false,
            &[
                "get",
                "ingresses",
                "-A",
                "--as=system:serviceaccount:lookout:other",
            ],
        ),
        (
            &[
                "update",
                "certificates.cert-manager.io",
                "--subresource=status",
                "-n",
                "shop",
                "--as=alice",
            ],
            true,
            &[],
        ),
        (
            &[
                "update",
                "certificates.cert-manager.io",
                "-n",
                "shop",
                "--as=alice",
            ],
            false,
            &[],
        ),
        (
            &[
                "update",
                "certificates.cert-manager.io",
                "--subresource=status",
                "-n",
                "other",
                "--as=alice",
            ],
            false,
            &[],
        ),
        (
            &[
                "get",
                "secrets/tls",
                "-n",
                "shop",
                "--as=erin",
                "--as-group=team",
            ],
            true,
            &[
                "get",
                "secret",
                "tls",
                "-n",
                "shop",
                "--as=erin",
                "--as-group=team",
            ],
        ),
        (
            &["get", "secrets/tls", "-n", "shop", "--as=Jürgen"],
            true,
            &["get", "secret", "tls", "-n", "shop", "--as=Jürgen"],
        ),
        (
            &["get", "secrets/tls", "-n", "shop", "--as=Jurgen"],
            false,
            &["get", "secret", "tls", "-n", "shop", "--as=Jurgen"],
        ),
        (
            &[
                "get",
                "secrets/tls",
                "-n",
                "shop",
                "--as=erin",
                "--as-group=ops,eu",
            ],
            true,
            &[
                "get",
                "secret",
                "tls",
                "-n",
                "shop",
                "--as=erin",
                "--as-group=ops,eu",
            ],
        ),
        (
            // The comma is part of the name: neither "ops" nor "eu" is bound.
            &[
                "get",
                "secrets/tls",
                "-n",
                "shop",
                "--as=erin",
                "--as-group=ops",
            ],
            false,
            &[
                "get",
                "secret",
                "tls",
                "-n",
                "shop",
                "--as=erin",
                "--as-group=ops",
            ],
        ),
        (
            &[
                "get",
                "secrets/other",
                "-n",
                "shop",
                "--as=erin",
                "--as-group=team",
            ],
            false,
            &[
                "get",
                "secret",
                "other",
                "-n",
                "shop",
                "--as=erin",
                "--as-group=team",
            ],
        ),
        (
            &["get", "secrets/tls", "-n", "shop", "--as=erin"],
            false,
            &["get", "secret", "tls", "-n", "shop", "--as=erin"],
        ),
        (
            &["list", "configmaps", "-n", "other", "--as=carol"],
            true,
            &["get", "configmaps", "-n", "other", "--as=carol"],
        ),
        (
            &["delete", "configmaps", "-n", "other", "--as=carol"],
            false,
            &[],
        ),
        (&["get", "/metrics", "--as=dave"], true, &[]),
        (&["get", "/metrics", "--as=erin"], false, &[]),
        (
            &["get", "/version", "--as=erin"],
            true,
            &["get", "--raw", "/version", "--as=erin"],
        ),
        (
            &[
                "list",
                "ingresses",
                "-A",
                "--as=root",
                "--as-group=system:masters",
            ],
            true,
            &[
                "get",
                "ingresses",
                "-A",
                "--as=root",
                "--as-group=system:masters",
            ],
        ),
    ];
    for (args, expected, request) in table {
        let mut can_i = vec!["auth", "can-i"];
        can_i.extend_from_slice(args);
        let out = k.run(&can_i).await;
        let answer = out.stdout.trim().to_string();
        assert_eq!(
            answer,
            if *expected { "yes" } else { "no" },
            "kubectl {can_i:?}: {}",
            out.stderr
        );
        assert_eq!(
            out.ok, *expected,
            "can-i exits 0 exactly when the answer is yes"
        );
        if request.is_empty() {
            continue;
        }
        let made = k.run(request).await;
        if *expected {
            assert!(made.ok, "kubectl {request:?} was refused: {}", made.stderr);
        } else {
            assert!(
                made.stderr.contains("is forbidden: User") || made.stderr.contains("Forbidden"),
                "kubectl {request:?} was not refused: {} {}",
                made.stdout,
                made.stderr
            );
        }
    }
    let rules = k
        .ok(&["auth", "can-i", "--list", "-n", "shop", "--as=alice"])
        .await;
    assert!(
        rules.lines().any(|l| l.starts_with("certificates.cert-manager.io/status") && l.contains("[update]")),
        "{rules}"
    );
    assert!(
        rules.lines().any(
            |l| l.starts_with("selfsubjectaccessreviews.authorization.k8s.io")
                && l.contains("[create]")
        ),
        "every authenticated user may ask: {rules}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn service_account_tokens_authenticate_until_the_account_is_gone() {
    let Some(k) = authorizing().await else {
        return;
    };
    policy(&k).await;
    let token = k
        .ok(&[
            "create",
            "token",
            "lookout",
            "-n",
            "lookout",
            "--duration=2h",
        ])
        .await
        .trim()
        .to_string();
    let as_token = format!("--token={token}");
    let who = k
        .ok(&[
            "auth",
            "whoami",
            &as_token,
            "-o",
            "jsonpath={.status.userInfo.username}",
        ])
        .await;
    assert_eq!(who, "system:serviceaccount:lookout:lookout");
    k.ok(&["get", "ingresses", "-A", &as_token]).await;
    let refused = k.run(&["get", "secrets", "-n", "shop", &as_token]).await;
    assert!(!refused.ok);
    assert!(
        refused.stderr.contains(
            "secrets is forbidden: User \"system:serviceaccount:lookout:lookout\" cannot list resource \"secrets\" in API group \"\" in the namespace \"shop\""
        ),
        "{}",
        refused.stderr
    );
    // Impersonation needs the impersonate verb: this account has none.
    let denied = k
        .run(&["get", "ingresses", "-A", &as_token, "--as=alice"])
        .await;
    assert!(
        denied.stderr.contains("users \"alice\" is forbidden: User \"system:serviceaccount:lookout:lookout\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"),
        "{}",
        denied.stderr
    );
    // The impersonator may act as alice, and only as alice.
    let imp = k
        .ok(&["create", "token", "impersonator", "-n", "lookout"])
        .await
        .trim()
        .to_string();
    let as_imp = format!("--token={imp}");
    let alice = k
        .run(&[
            "auth",
            "can-i",
            "update",
            "certificates.cert-manager.io",
            "--subresource=status",
            "-n",
            "shop",
            &as_imp,
            "--as=alice",
        ])
        .await;
    assert_eq!(alice.stdout.trim(), "yes", "{}", alice.stderr);
    let mallory = k
        .run(&[
            "auth",
            "can-i",
            "list",
            "ingresses",
            &as_imp,
            "--as=mallory",
        ])
        .await;
    assert!(
        !mallory.ok
            && mallory
                .stderr
                .contains("cannot impersonate resource \"users\""),
        "{}",
        mallory.stderr
    );
    // A token is bound to its account: deleting the account ends it.
    k.ok(&["delete", "serviceaccount", "lookout", "-n", "lookout"])
        .await;
    let gone = k.run(&["get", "ingresses", "-A", &as_token]).await;
    assert!(
        !gone.ok && gone.stderr.contains("Unauthorized"),
        "{}",
        gone.stderr
    );
    let garbage = k.run(&["get", "ns", "--token=not-a-token"]).await;
    assert!(
        !garbage.ok && garbage.stderr.contains("Unauthorized"),
        "{}",
        garbage.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn server_side_apply_that_creates_needs_create_as_well_as_patch() {
    let Some(k) = authorizing().await else {
        return;
    };
    policy(&k).await;
    k.ok(&[
        "create",
        "role",
        "patch-only",
        "-n",
        "shop",
        "--verb=get,patch",
        "--resource=configmaps",
    ])
    .await;
    k.ok(&[
        "create",
        "rolebinding",
        "frank-patch",
        "-n",
        "shop",
        "--role=patch-only",
        "--user=frank",
    ])
    .await;
    let cm = k.write(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: shop\ndata:\n  a: \"1\"\n",
    );
    let path = cm.to_str().unwrap();
    let refused = k
        .run(&["apply", "--server-side", "-f", path, "--as=frank"])
        .await;
    assert!(
        !refused.ok
            && refused
                .stderr
                .contains("cannot create resource \"configmaps\""),
        "{}",
        refused.stderr
    );
    k.ok(&["apply", "--server-side", "-f", path]).await;
    k.ok(&[
        "apply",
        "--server-side",
        "--force-conflicts",
        "-f",
        path,
        "--as=frank",
    ])
    .await;
}

/// The audit log: kubectl writes as itself and impersonating others (allowed and refused),
/// then reads the log back; each write is there with who sent it and who it was sent as.
#[tokio::test(flavor = "multi_thread")]
async fn the_audit_log_records_each_write_with_who_sent_it_and_as_whom() {
    let Some(k) = authorizing().await else {
        return;
    };
    policy(&k).await;
    k.ok(&[
        "create",
        "role",
        "cm-editor",
        "-n",
        "shop",
        "--verb=get,patch",
        "--resource=configmaps",
    ])
    .await;
    k.ok(&[
        "create",
        "rolebinding",
        "editors",
        "-n",
        "shop",
        "--role=cm-editor",
        "--group=editors",
    ])
    .await;
    k.ok(&["create", "configmap", "settings", "-n", "shop"])
        .await;
    k.ok(&[
        "patch",
        "configmap",
        "settings",
        "-n",
        "shop",
        "-p",
        r#"{"data":{"a":"1"}}"#,
        "--as=grace",
        "--as-group=editors",
    ])
    .await;
    // (kubectl reads before it patches: a refused create is the write that reaches the log.)
    k.refused(
        &["create", "configmap", "other", "-n", "shop", "--as=mallory"],
        "forbidden",
    )
    .await;
    k.ok(&[
        "get",
        "configmap",
        "settings",
        "-n",
        "shop",
        "--as=grace",
        "--as-group=editors",
    ])
    .await;
    let log: serde_json::Value =
        serde_json::from_str(&k.ok(&["get", "--raw", "/kubesim/audit"]).await).unwrap();
    assert_eq!(log["apiVersion"], "audit.k8s.io/v1");
    let events: Vec<&serde_json::Value> = log["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["objectRef"]["namespace"] == "shop" && e["objectRef"]["resource"] == "configmaps"
        })
        .collect();
    let summary: Vec<(String, String, String, u64)> = events
        .iter()
        .map(|e| {
            (
                e["verb"].as_str().unwrap().to_string(),
                e["user"]["username"].as_str().unwrap().to_string(),
                e["impersonatedUser"]["username"]
                    .as_str()
                    .unwrap_or("-")
                    .to_string(),
                e["responseStatus"]["code"].as_u64().unwrap(),
            )
        })
        .collect();
    let row = |verb: &str, user: &str, as_whom: &str, code: u64| {
        (
            verb.to_string(),
            user.to_string(),
            as_whom.to_string(),
            code,
        )
    };
    // The reads (kubectl's before each write, and the get) are not recorded.
    assert_eq!(
        summary,
        [
            row("create", "kubesim-admin", "-", 201),
            row("patch", "kubesim-admin", "grace", 200),
            row("create", "kubesim-admin", "mallory", 403),
        ],
        "{events:#?}"
    );
    assert_eq!(
        events[1]["impersonatedUser"]["groups"],
        serde_json::json!(["editors", "system:authenticated"])
    );
    assert_eq!(events[1]["objectRef"]["name"], "settings");
}

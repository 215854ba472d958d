//! Actions against kubesim, checked with kubectl as an independent client: the
//! edit-in-place fix with field manager `lookout`, the Certificate override, Argo CD-style
//! re-applies, undo, conflicts, the browser's form flow, read-only mode and the audit log.
//! Renew and the bulk runs are in `bulk.rs`.

use std::path::Path;

use serde_json::{json, Value};

use crate::helpers::*;

pub(crate) const EIP: &str = "acme.cert-manager.io/http01-edit-in-place";
pub(crate) const OVERRIDE: &str = "acme.cert-manager.io/http01-override-ingress-name";
pub(crate) const PROD: &str = "https://acme-v02.api.letsencrypt.org/directory";

/// A browser: keeps cookies, does not follow redirects; with the CSRF token of its forms.
pub async fn browser(app: &TestApp) -> (reqwest::Client, String) {
    browser_at(&app.base).await
}

/// [`browser`] against the server at `base`.
pub async fn browser_at(base: &str) -> (reqwest::Client, String) {
    let client = reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let html = client
        .get(format!("{base}/ingresses"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let marker = "name=\"csrf\" value=\"";
    let at = html
        .find(marker)
        .expect("the page's forms carry a CSRF token")
        + marker.len();
    let token = html[at..at + html[at..].find('"').unwrap()].to_string();
    (client, token)
}

pub(crate) fn get_json(kc: &Path, kind: &str, ns: &str, name: &str) -> Value {
    serde_json::from_str(&kubectl_output(
        kc,
        "zrh-prod",
        &[
            "get",
            kind,
            name,
            "-n",
            ns,
            "-o",
            "json",
            "--show-managed-fields",
        ],
        None,
    ))
    .unwrap()
}

/// The managers (and operations) that own an annotation, read from kubectl's output.
pub(crate) fn owners(obj: &Value, key: &str) -> Vec<(String, String)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["fieldsV1"]["f:metadata"]["f:annotations"][format!("f:{key}")].is_object())
        .map(|m| {
            (
                m["manager"].as_str().unwrap().to_string(),
                m["operation"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// An Ingress in `shop` that asks for a certificate and lacks the annotation, applied with
/// kubectl as field manager `argocd-controller`, plus its Certificate as ingress-shim makes
/// it but without the override (it was created before the annotation existed).
pub(crate) async fn shop(app: &TestApp) -> std::path::PathBuf {
    let kc = app.kubeconfig();
    let kc2 = kc.clone();
    tokio::task::spawn_blocking(move || {
        kubectl(&kc2, "zrh-prod", &["create", "namespace", "shop"], None);
        kubectl(
            &kc2,
            "zrh-prod",
            &[
                "apply",
                "--server-side",
                "--field-manager=argocd-controller",
                "-f",
                "-",
            ],
            Some(&manifest(None)),
        );
    })
    .await
    .unwrap();
    let uid = get_json(&kc, "ingress", "shop", "web")["metadata"]["uid"].clone();
    create(
        app,
        0,
        "cert-manager.io",
        "certificates",
        Some("shop"),
        json!({"metadata": {"name": "web-tls", "ownerReferences": [{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "web", "uid": uid, "controller": true}]},
               "spec": {"secretName": "web-tls", "dnsNames": ["web.shop.example"], "issuerRef": {"name": "letsencrypt-prod", "kind": "ClusterIssuer"}}}),
    );
    app.eventually("the chain is cached", || async {
        app.json_opt("/api/v1/ingresses/zrh-prod/shop/web")
            .await
            .is_some_and(|d| d["tls"][0]["certificate"]["certificate"]["name"] == "web-tls")
    })
    .await;
    kc
}

/// The Ingress as its owner keeps it in Git; `edit_in_place` adds the annotation.
fn manifest(edit_in_place: Option<&str>) -> String {
    let extra = edit_in_place
        .map(|v| format!("    {EIP}: \"{v}\"\n"))
        .unwrap_or_default();
    format!(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: web\n  namespace: shop\n  annotations:\n    cert-manager.io/cluster-issuer: letsencrypt-prod\n    team: web\n{extra}spec:\n  ingressClassName: cilium\n  rules:\n  - host: web.shop.example\n  tls:\n  - hosts: [\"web.shop.example\"]\n    secretName: web-tls\n"
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn the_fix_is_previewed_then_applied_by_field_manager_lookout_and_survives_argo_cd() {
    if !kubectl_available() {
        return;
    }
    let app = spawn_app(&["zrh-prod"]).await;
    app.wait_ready().await;
    let kc = shop(&app).await;
    let path = "/api/v1/ingresses/zrh-prod/shop/web/edit-in-place";

    let preview = app.post(path, json!({"dry_run": true})).await;
    assert_eq!(preview.status(), 200);
    let preview: Value = preview.json().await.unwrap();
    assert_eq!(preview["dry_run"], true);
    assert_eq!(preview["outcome"], "ok");
    assert_eq!(
        preview["steps"][0]["diff"],
        json!([format!("+ metadata.annotations[\"{EIP}\"]: \"true\"")])
    );
    assert_eq!(preview["steps"][1]["kind"], "Certificate");
    assert!(preview["steps"][1]["diff"].to_string().contains(OVERRIDE));
    assert!(
        get_json(&kc, "ingress", "shop", "web")["metadata"]["annotations"][EIP].is_null(),
        "a preview changes nothing"
    );

    let done = app.post(path, json!({"dry_run": false})).await;
    assert_eq!(done.status(), 200);
    let ing = get_json(&kc, "ingress", "shop", "web");
    assert_eq!(ing["metadata"]["annotations"][EIP], "true");
    assert_eq!(
        owners(&ing, EIP),
        [("lookout".to_string(), "Apply".to_string())]
    );
    let cert = get_json(&kc, "certificate", "shop", "web-tls");
    assert_eq!(cert["metadata"]["annotations"][OVERRIDE], "web");
    assert_eq!(
        cert["metadata"]["annotations"]["cert-manager.io/issue-temporary-certificate"],
        "true"
    );
    assert_eq!(
        owners(&cert, OVERRIDE),
        [("lookout".to_string(), "Apply".to_string())]
    );

    // Argo CD syncs the manifest from Git again (server-side, its own field manager).
    let kc2 = kc.clone();
    tokio::task::spawn_blocking(move || {
        kubectl(
            &kc2,
            "zrh-prod",
            &[
                "apply",
                "--server-side",
                "--force-conflicts",
                "--field-manager=argocd-controller",
                "-f",
                "-",
            ],
            Some(&manifest(None)),
        )
    })
    .await
    .unwrap();
    let ing = get_json(&kc, "ingress", "shop", "web");
    assert_eq!(
        ing["metadata"]["annotations"][EIP], "true",
        "the re-apply keeps Lookout's annotation"
    );

    // Applying again changes nothing; both are audited.
    let again: Value = app.post(path, json!({})).await.json().await.unwrap();
    assert_eq!(again["outcome"], "unchanged");
    let audit = app.json("/api/v1/audit?action=edit-in-place").await;
    assert_eq!(audit["total"], 3, "preview, action and the no-op: {audit}");
    assert_eq!(audit["items"][2]["dry_run"], true);
    assert!(audit["items"][1]["diff"].as_str().unwrap().contains(EIP));
    assert_eq!(audit["items"][1]["actor"], "anonymous");

    app.eventually("the annotation status shows the fix", || async {
        app.json("/api/v1/ingresses/zrh-prod/shop/web").await["annotation"]["status"] == "set"
    })
    .await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn undo_removes_only_what_lookout_owns() {
    if !kubectl_available() {
        return;
    }
    let app = spawn_app(&["zrh-prod"]).await;
    app.wait_ready().await;
    let kc = shop(&app).await;
    let path = "/api/v1/ingresses/zrh-prod/shop/web/edit-in-place";
    assert_eq!(
        app.post(path, json!({"dry_run": false})).await.status(),
        200
    );

    let preview = app.delete(&format!("{path}?dry_run=true")).await;
    assert_eq!(preview.status(), 200);
    assert_eq!(
        get_json(&kc, "ingress", "shop", "web")["metadata"]["annotations"][EIP],
        "true"
    );

    let undone = app.delete(path).await;
    assert_eq!(undone.status(), 200);
    let undone: Value = undone.json().await.unwrap();
    assert_eq!(undone["action"], "undo-edit-in-place");
    let ing = get_json(&kc, "ingress", "shop", "web");
    let annotations = &ing["metadata"]["annotations"];
    assert!(annotations[EIP].is_null(), "Lookout's annotation is gone");
    assert_eq!(annotations["team"], "web", "Argo CD's annotations stay");
    assert_eq!(
        annotations["cert-manager.io/cluster-issuer"],
        "letsencrypt-prod"
    );
    let cert = get_json(&kc, "certificate", "shop", "web-tls");
    assert!(cert["metadata"]["annotations"][OVERRIDE].is_null());
    assert_eq!(
        cert["spec"]["secretName"], "web-tls",
        "the Certificate itself stays"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_field_owned_by_another_manager_is_a_conflict_that_names_it() {
    if !kubectl_available() {
        return;
    }
    let app = spawn_app(&["zrh-prod"]).await;
    app.wait_ready().await;
    let kc = shop(&app).await;
    let kc2 = kc.clone();
    tokio::task::spawn_blocking(move || {
        kubectl(
            &kc2,
            "zrh-prod",
            &[
                "apply",
                "--server-side",
                "--field-manager=argocd-controller",
                "-f",
                "-",
            ],
            Some(&manifest(Some("false"))),
        )
    })
    .await
    .unwrap();
    let path = "/api/v1/ingresses/zrh-prod/shop/web/edit-in-place";
    let preview: Value = app
        .post(path, json!({"dry_run": true}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(preview["outcome"], "conflict");
    let response = app.post(path, json!({"dry_run": false})).await;
    assert_eq!(response.status(), 409);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "conflict");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("argocd-controller"), "{message}");
    assert_eq!(
        get_json(&kc, "ingress", "shop", "web")["metadata"]["annotations"][EIP],
        "false",
        "never forced"
    );
    // All or nothing: the Certificate's half of the fix is not written either.
    assert!(
        get_json(&kc, "certificate", "shop", "web-tls")["metadata"]["annotations"][OVERRIDE]
            .is_null(),
        "a refused fix changes nothing"
    );
    let steps = body["error"]["message"].as_str().unwrap();
    assert!(steps.contains("argocd-controller"), "{steps}");
    let audit = app.json("/api/v1/audit?outcome=conflict").await;
    assert_eq!(audit["total"], 2);
    assert!(audit["items"][0]["error"]
        .as_str()
        .unwrap()
        .contains("argocd-controller"));
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn actions_on_missing_objects_are_404s_and_bad_bodies_are_named() {
    let app = spawn_app(&["zrh-prod"]).await;
    app.wait_ready().await;
    for (path, body) in [
        (
            "/api/v1/ingresses/zrh-prod/default/nope/edit-in-place",
            json!({"dry_run": true}),
        ),
        (
            "/api/v1/ingresses/nowhere/default/nope/edit-in-place",
            json!({}),
        ),
        (
            "/api/v1/certificates/zrh-prod/default/nope/renew",
            json!({"dry_run": false}),
        ),
    ] {
        let r = app.post(path, body).await;
        assert_eq!(r.status(), 404, "{path}");
        assert_eq!(
            r.json::<Value>().await.unwrap()["error"]["code"],
            "not_found"
        );
    }
    assert_eq!(
        app.delete("/api/v1/ingresses/zrh-prod/default/nope/edit-in-place")
            .await
            .status(),
        404
    );
    let r = app
        .post(
            "/api/v1/ingresses/zrh-prod/default/nope/edit-in-place",
            json!({"dry_rn": true}),
        )
        .await;
    assert_eq!(r.status(), 400);
    assert!(r.json::<Value>().await.unwrap()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("dry_rn"));
    let r = app
        .post(
            "/api/v1/certificates/zrh-prod/default/nope/renew",
            json!({"dry_run": "yes"}),
        )
        .await;
    assert_eq!(r.status(), 400);
    assert!(r.json::<Value>().await.unwrap()["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("dry_run"));
    // A body that is not an object never means "run it for real".
    for body in [json!([]), json!("dry_run"), json!(null), json!(1)] {
        let r = app.post("/api/v1/bulk/edit-in-place", body.clone()).await;
        assert_eq!(r.status(), 400, "{body}");
        let message = r.json::<Value>().await.unwrap()["error"]["message"].clone();
        assert!(
            message
                .as_str()
                .unwrap()
                .starts_with("body: must be a JSON object"),
            "{message}"
        );
    }
    assert_eq!(
        app.json("/api/v1/audit?action=bulk-edit-in-place").await["total"],
        0,
        "nothing ran"
    );
    let r = app
        .http
        .post(format!("{}/api/v1/bulk/edit-in-place", app.base))
        .header("content-type", "text/plain")
        .body("dry_run=true")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 415);
    let (browser, csrf) = browser(&app).await;
    let form = browser
        .post(format!("{}/actions", app.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("csrf={csrf}&action=edit-in-place&cluster=zrh-prod&namespace=default&name=nope&mode=preview"))
        .send()
        .await
        .unwrap();
    assert_eq!(form.status(), 404, "{}", form.text().await.unwrap());
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_refused_before_a_handler_say_why_in_lookouts_own_shape() {
    let app = spawn_app(&["zrh-prod"]).await;
    app.wait_ready().await;
    let api_error = |v: Value| {
        (
            v["error"]["code"].as_str().unwrap().to_string(),
            v["error"]["message"].as_str().unwrap().to_string(),
        )
    };

    // A body over the limit: 413, JSON under /api/, a page for the forms.
    let huge = format!(
        "{{\"dry_run\": true, \"pad\": \"{}\"}}",
        "x".repeat(100 * 1024)
    );
    let r = app
        .http
        .post(format!(
            "{}/api/v1/ingresses/zrh-prod/default/web/edit-in-place",
            app.base
        ))
        .header("content-type", "application/json")
        .body(huge)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413);
    let (code, message) = api_error(r.json().await.unwrap());
    assert_eq!(code, "payload_too_large");
    assert!(message.contains("64 KiB"), "{message}");
    let (browser, csrf) = browser(&app).await;
    let form = browser
        .post(format!("{}/actions", app.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!(
            "csrf={csrf}&action=edit-in-place&cluster=zrh-prod&namespace=default&name={}&mode=preview",
            "n".repeat(100 * 1024)
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(form.status(), 413);
    assert!(form.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    assert!(form
        .text()
        .await
        .unwrap()
        .contains("larger than Lookout takes (64 KiB)"));

    // A method the route does not take: 405 naming it, with Allow kept.
    let r = app
        .http
        .put(format!("{}/api/v1/findings", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
    assert!(r.headers().contains_key("allow"));
    let (code, message) = api_error(r.json().await.unwrap());
    assert_eq!(code, "method_not_allowed");
    assert!(message.contains("PUT"), "{message}");

    // A path segment that is not UTF-8: 400 with axum's reason, as JSON.
    let r = app.get("/api/v1/ingresses/zrh-prod/%FF/web").await;
    assert_eq!(r.status(), 400);
    let (code, message) = api_error(r.json().await.unwrap());
    assert_eq!(code, "bad_request");
    assert!(!message.is_empty());

    // A small body still works: the limit is not in the way of real requests.
    let r = app
        .post(
            "/api/v1/ingresses/zrh-prod/default/nope/edit-in-place",
            json!({"dry_run": true}),
        )
        .await;
    assert_eq!(r.status(), 404);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn read_only_hides_every_action_and_refuses_the_api_with_405() {
    let app = app_with(&["zrh-prod"]).read_only().await;
    app.wait_ready().await;
    create(
        &app,
        0,
        "networking.k8s.io",
        "ingresses",
        Some("default"),
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
               "metadata": {"name": "web", "annotations": {"cert-manager.io/cluster-issuer": "le"}},
               "spec": {"rules": [{"host": "web.example"}], "tls": [{"hosts": ["web.example"], "secretName": "web-tls"}]}}),
    );
    app.eventually("cached", || async {
        app.json("/api/v1/ingresses").await["total"] == 1
    })
    .await;
    for path in [
        "/",
        "/ingresses",
        "/ingresses/zrh-prod/default/web",
        "/certificates",
    ] {
        let html = app.get(path).await.text().await.unwrap();
        assert!(
            !html.contains("action=\"/actions\""),
            "{path} shows an action"
        );
    }
    for (path, method) in [
        (
            "/api/v1/ingresses/zrh-prod/default/web/edit-in-place",
            "POST",
        ),
        (
            "/api/v1/ingresses/zrh-prod/default/web/edit-in-place",
            "DELETE",
        ),
        (
            "/api/v1/certificates/zrh-prod/default/web-tls/renew",
            "POST",
        ),
        ("/api/v1/bulk/edit-in-place", "POST"),
        ("/api/v1/bulk/renew", "POST"),
    ] {
        let r = if method == "POST" {
            app.post(path, json!({"dry_run": true})).await
        } else {
            app.delete(path).await
        };
        assert_eq!(r.status(), 405, "{method} {path}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"]["code"], "read_only");
        assert!(body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("read-only"));
    }
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_browser_flow_previews_applies_and_refuses_forms_from_other_sites() {
    if !kubectl_available() {
        return;
    }
    let app = spawn_app(&["zrh-prod"]).await;
    app.wait_ready().await;
    let kc = shop(&app).await;
    let detail = app
        .get("/ingresses/zrh-prod/shop/web")
        .await
        .text()
        .await
        .unwrap();
    // The ClusterIssuer it names does not exist: edit-in-place cannot help yet, so the page
    // says what to fix first instead of offering it.
    assert!(!detail.contains("data-testid=\"preview-edit-in-place\""));
    assert!(detail.contains("data-testid=\"not-offered\""), "{detail}");
    assert!(detail.contains("Adding edit-in-place cannot help yet"));
    ready_cluster_issuer(&app, "letsencrypt-prod");
    app.eventually("the fix is offered once the issuer is there", || async {
        app.get("/ingresses/zrh-prod/shop/web")
            .await
            .text()
            .await
            .unwrap()
            .contains("data-testid=\"preview-edit-in-place\"")
    })
    .await;

    let (no_redirects, csrf) = browser(&app).await;
    let forged = no_redirects
        .post(format!("{}/actions", app.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(
            "csrf=guessed&action=edit-in-place&cluster=zrh-prod&namespace=shop&name=web&mode=apply",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 403, "a forged CSRF token");
    let post = |mode: &'static str, origin: Option<String>| {
        let mut r = no_redirects
            .post(format!("{}/actions", app.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!(
                "csrf={csrf}&action=edit-in-place&cluster=zrh-prod&namespace=shop&name=web&mode={mode}"
            ));
        if let Some(o) = origin {
            r = r.header("origin", o);
        }
        r.send()
    };
    let evil = post("apply", Some("http://evil.example".into()))
        .await
        .unwrap();
    assert_eq!(evil.status(), 403);
    assert!(get_json(&kc, "ingress", "shop", "web")["metadata"]["annotations"][EIP].is_null());

    let preview = post("preview", Some(app.base.clone())).await.unwrap();
    assert_eq!(preview.status(), 303);
    let location = preview.headers()["location"].to_str().unwrap().to_string();
    assert!(location.starts_with("/actions/"));
    let page = app.get(&location).await.text().await.unwrap();
    assert!(page.contains("Preview (dry run)"));
    // A preview, a success and the button that changes the cluster each look their part.
    assert!(page.contains("data-testid=\"action-banner\" class=\"notice info\""));
    assert!(page.contains("data-testid=\"apply-edit-in-place\" class=\"primary\""));
    assert!(get_json(&kc, "ingress", "shop", "web")["metadata"]["annotations"][EIP].is_null());

    let applied = post("apply", None).await.unwrap();
    assert_eq!(applied.status(), 303);
    let page = app
        .get(applied.headers()["location"].to_str().unwrap())
        .await
        .text()
        .await
        .unwrap();
    assert!(page.contains("Done: this is what happened."));
    assert!(page.contains("data-testid=\"action-banner\" class=\"notice ok\""));
    assert!(
        page.contains("data-testid=\"preview-undo-edit-in-place\""),
        "undo is offered"
    );
    assert!(
        page.contains("ManuallyTriggered"),
        "the fix renewed the failing Certificate as its last step"
    );
    assert_eq!(
        get_json(&kc, "ingress", "shop", "web")["metadata"]["annotations"][EIP],
        "true"
    );
    assert_eq!(app.get("/actions/nonexistent").await.status(), 404);
    app.stop().await;
}

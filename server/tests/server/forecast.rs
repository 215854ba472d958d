//! The budgets' 7-day forecast through the API and the pages: which registered domains run
//! out, and in which clusters — and for a tenant only its own due certificates.

use serde_json::{json, Value};

use crate::helpers::*;
use crate::tenancy::auth;

const SUPPORT: (&str, &str) = ("sam", "support");
const TENANT: (&str, &str) = ("dave", "acme-ops");

/// A production ClusterIssuer and, in two tenants' namespaces, certificates for one
/// registered domain that are not issued yet (so due now): 30 of the tenant's and 25 of the
/// neighbour's — five more than the 50 new certificates Let's Encrypt allows per week.
fn due_now(app: &TestApp) {
    create(
        app,
        0,
        "cert-manager.io",
        "clusterissuers",
        None,
        json!({"metadata": {"name": "letsencrypt-prod"}, "spec": {"acme": {"server": "https://acme-v02.api.letsencrypt.org/directory", "email": "ops@example.com", "solvers": [{"http01": {"ingress": {}}}]}}}),
    );
    for (ns, prefix, n) in [("acme-shop", "shop", 30), ("globex-web", "globex", 25)] {
        create(
            app,
            0,
            "",
            "namespaces",
            None,
            json!({"metadata": {"name": ns}}),
        );
        for i in 0..n {
            create(
                app,
                0,
                "cert-manager.io",
                "certificates",
                Some(ns),
                json!({"metadata": {"name": format!("{prefix}{i:02}-tls")},
                       "spec": {"secretName": format!("{prefix}{i:02}-tls"), "dnsNames": [format!("{prefix}{i:02}.shared.example")],
                                "issuerRef": {"name": "letsencrypt-prod", "kind": "ClusterIssuer"}}}),
            );
        }
    }
}

async fn forecast(app: &TestApp, who: (&str, &str), query: &str) -> Value {
    app.get_as(
        &format!("/api/v1/rate-limits/forecast{query}"),
        who.0,
        who.1,
    )
    .await
    .json()
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_forecast_names_the_clusters_that_run_out_and_keeps_tenants_apart() {
    let app = app_with(&["zrh-prod"])
        .auth(auth("127.0.0.1/32").await)
        .await;
    app.wait_ready().await;
    due_now(&app);
    app.eventually("the 55 certificates are cached", || async {
        forecast(&app, SUPPORT, "").await["items"][0]["due"]
            .as_array()
            .is_some_and(|d| d.len() == 55)
    })
    .await;
    let all = forecast(&app, SUPPORT, "").await;
    let items = all["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{all:#}");
    let domain = &items[0];
    assert_eq!(domain["domain"], "shared.example");
    assert_eq!(domain["clusters"], json!(["zrh-prod"]));
    assert_eq!(
        (
            domain["new_certificates"].as_u64(),
            domain["refused"].as_u64()
        ),
        (Some(55), Some(5))
    );
    assert!(domain["runs_out"].is_string());
    let refused: Vec<&Value> = domain["due"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| !d["refused"].is_null())
        .collect();
    assert_eq!(refused[0]["refused"]["limit"], "registered-domain");
    // The filters narrow the certificates played: the tenant's namespace alone fits.
    let own = forecast(&app, SUPPORT, "?namespace=acme-shop").await;
    assert_eq!(own["items"][0]["refused"], 0, "{own:#}");
    let elsewhere = forecast(&app, SUPPORT, "?namespace=elsewhere").await;
    assert_eq!(elsewhere["items"], json!([]));

    // The expiry chart's windows filter the certificates (none of these was ever issued).
    let never = app
        .get_as("/api/v1/certificates?expires=never", SUPPORT.0, SUPPORT.1)
        .await;
    assert_eq!(never.json::<Value>().await.unwrap()["total"], 55);
    let expired = app
        .get_as("/api/v1/certificates?expires=expired", SUPPORT.0, SUPPORT.1)
        .await;
    assert_eq!(expired.json::<Value>().await.unwrap()["total"], 0);
    let wrong = app
        .get_as("/api/v1/certificates?expires=soon", SUPPORT.0, SUPPORT.1)
        .await;
    assert_eq!(wrong.status(), 400);
    assert!(wrong.text().await.unwrap().contains("7-13d"));

    // The same lists as CSV: every row (not one page), the same filters, the same scope.
    let csv = app
        .get_as(
            "/api/v1/certificates.csv?namespace=acme-shop&per_page=5",
            SUPPORT.0,
            SUPPORT.1,
        )
        .await;
    assert_eq!(csv.headers()["content-type"], "text/csv; charset=utf-8");
    assert!(csv.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .contains("lookout-certificates.csv"));
    let text = csv.text().await.unwrap();
    let mut lines = text.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("cluster,namespace,name,uid,"),
        "{text}"
    );
    assert_eq!(lines.count(), 30, "every page: {text}");
    let forecast_csv = app
        .get_as("/api/v1/rate-limits/forecast.csv", TENANT.0, TENANT.1)
        .await
        .text()
        .await
        .unwrap();
    assert!(
        forecast_csv.starts_with("server,domain,capacity,left_now,"),
        "{forecast_csv}"
    );
    assert!(forecast_csv.contains(",shared.example,") && !forecast_csv.contains("globex"));

    // The pages: the budgets page says it in one line and links the forecast, which lists
    // the refused certificates with links.
    let budgets = app
        .get_as("/rate-limits", SUPPORT.0, SUPPORT.1)
        .await
        .text()
        .await
        .unwrap();
    assert!(
        budgets.contains("notice critical")
            && budgets.contains("shared.example")
            && budgets.contains("href=\"/rate-limits/forecast\""),
        "{budgets}"
    );
    let page = app
        .get_as("/rate-limits/forecast", SUPPORT.0, SUPPORT.1)
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(page.matches("data-testid=\"refused\"").count(), 5);
    assert!(page.contains("/certificates/zrh-prod/"));
    assert!(page.contains("href=\"/api/v1/rate-limits/forecast\""));

    // The tenant: its own 30 due certificates, which fit in what it sees; nothing of the
    // neighbour's 25, in the API or on either page.
    let tenant = forecast(&app, TENANT, "").await;
    assert_eq!(tenant["items"][0]["due"].as_array().unwrap().len(), 30);
    assert_eq!(tenant["items"][0]["refused"], 0);
    for path in [
        "/api/v1/rate-limits/forecast",
        "/rate-limits/forecast",
        "/rate-limits",
    ] {
        let body = app
            .get_as(path, TENANT.0, TENANT.1)
            .await
            .text()
            .await
            .unwrap();
        assert!(!body.contains("globex"), "{path}: {body}");
    }
    app.stop().await;
}

//! What a tenant could learn of a neighbour by asking about the neighbour's objects by name:
//! every route, with the neighbour's names as its parameters, answers exactly as it does for
//! names nobody made — the same status, the same body once the names are swapped, so the
//! same size — and the tenant's live revision stays still while the neighbour's objects and
//! a ClusterIssuer only the neighbour uses change.

use std::time::Duration;

use serde_json::{json, Value};

use crate::derived::Who;
use crate::helpers::*;

/// The neighbour's names, each beside a name nobody made of the same length (so sizes
/// compare as they are): namespace, Ingress, Certificate, ClusterIssuer, a host only the
/// neighbour serves.
const SWAPS: [(&str, &str); 5] = [
    ("globex-twin-tls", "nobody-twin-tls"),
    ("globex-private", "nobody-private"),
    ("globex-twin", "nobody-twin"),
    ("globex-web", "nobody-web"),
    ("api.acme.example", "zzz.acme.example"),
];

/// `path` as the neighbour's (`theirs`) or as nobody's.
fn named(path: &str, theirs: bool) -> String {
    let mut out = path.to_string();
    for (their, nobody) in SWAPS {
        out = if theirs {
            out.replace(nobody, their)
        } else {
            out.replace(their, nobody)
        };
    }
    out
}

/// What may differ between two answers that tell the same: the page's revision stamp (it
/// moves with the tenant's own objects between the two requests).
fn steady(body: &str) -> String {
    let mut out = body.to_string();
    for marker in ["data-rev=\"", "\"rev\":"] {
        let mut next = String::with_capacity(out.len());
        let mut text = out.as_str();
        while let Some(at) = text.find(marker) {
            next.push_str(&text[..at + marker.len()]);
            next.push('N');
            text = text[at + marker.len()..].trim_start_matches(|c: char| c.is_ascii_digit());
        }
        next.push_str(text);
        out = next;
    }
    out
}

/// Every route × method whose path names an object or a place, and every list filtered to a
/// namespace, asked by `who` about the neighbour (`their_id`: an action support previewed
/// in the neighbour's namespace) and about names nobody made: the answers must be the same.
/// Returns how many pairs were compared.
pub(crate) async fn theirs_answer_as_missing(app: &TestApp, who: Who<'_>, their_id: &str) -> usize {
    // An action id of the same shape that no action has.
    let nobodys_id: String = their_id.chars().rev().collect();
    let mut compared = 0;
    for route in lookout_server::routes() {
        for method in route.methods {
            let params = route.path.contains('{');
            if route.path.contains("/auth/") || route.path == "/api/v1/events" {
                continue;
            }
            if !params && *method != "GET" {
                // Bulk runs carry their place in the body: below.
                if !route.path.contains("/bulk/") {
                    continue;
                }
            }
            let name = if route.path.contains("certificates") {
                "globex-twin-tls"
            } else {
                "globex-twin"
            };
            let theirs = route
                .path
                .replace("{cluster}", "zrh-prod")
                .replace("{namespace}", "globex-web")
                .replace("{name}", name)
                .replace("{id}", their_id)
                .replace("{*rest}", "globex-web");
            let theirs = match theirs.as_str() {
                "/search" | "/api/v1/search" => format!("{theirs}?q=api.acme.example"),
                p if p.contains("/issuers/") => {
                    p.replace("/globex-web/globex-twin", "/_/globex-private")
                }
                p if !params => format!("{p}?namespace=globex-web"),
                _ => theirs,
            };
            let nobodys = named(&theirs, false).replace(their_id, &nobodys_id);
            let mut answers = Vec::new();
            for path in [&theirs, &nobodys] {
                let mut request = who.request(app, method.parse().unwrap(), path);
                if *method != "GET" {
                    let namespace = if path == &theirs {
                        "globex-web"
                    } else {
                        "nobody-web"
                    };
                    request = request.json(&if path.contains("/bulk/") {
                        json!({"dry_run": true, "namespace": namespace})
                    } else {
                        json!({"dry_run": true})
                    });
                }
                let response = request.send().await.unwrap();
                let status = response.status().as_u16();
                let body = response.text().await.unwrap();
                answers.push((status, body));
            }
            let (their_status, their_body) = &answers[0];
            let (nobodys_status, nobodys_body) = &answers[1];
            assert_eq!(
                their_status, nobodys_status,
                "{who:?} {method} {theirs}: the neighbour's answers {their_status}, nobody's {nobodys_status}"
            );
            // An object's address is refused; a list or a search answers, with nothing.
            assert!(
                !params || *their_status >= 400,
                "{who:?} {method} {theirs} answers {their_status}: {their_body}"
            );
            let their_body = steady(&named(their_body, false).replace(their_id, &nobodys_id));
            let nobodys_body = steady(nobodys_body);
            assert_eq!(
                their_body.len(),
                nobodys_body.len(),
                "{who:?} {method} {theirs}: the neighbour's answer is another size"
            );
            assert_eq!(
                their_body, nobodys_body,
                "{who:?} {method} {theirs}: the neighbour's answer differs from nobody's"
            );
            compared += 1;
        }
    }
    compared
}

/// The first revision `who`'s live stream tells.
async fn first_revision(app: &TestApp, who: Who<'_>) -> u64 {
    let response = who.get(app, "/api/v1/events").await;
    assert_eq!(response.status(), 200, "{who:?} opens a stream");
    crate::tenancy::Revisions::of(response)
        .next(Duration::from_secs(5))
        .await
        .expect("a stream's first message")
}

/// The neighbour changes an Ingress of its own and the ClusterIssuer only it uses; once
/// support sees both, each walker's live revision is still the one it was before.
pub(crate) async fn revisions_stay_while_the_neighbour_changes(
    app: &TestApp,
    support: Who<'_>,
    walkers: &[Who<'_>],
) {
    let mut before = Vec::new();
    for &who in walkers {
        before.push(first_revision(app, who).await);
    }
    let ingress_as_support = || async {
        support
            .get(app, "/api/v1/ingresses/zrh-prod/globex-web/globex-only")
            .await
            .json::<Value>()
            .await
            .unwrap()["annotation"]
            .clone()
    };
    let annotation = ingress_as_support().await;
    let c = &app.fleet.clusters[0].cluster;
    c.merge_patch(
        &c.resolve("networking.k8s.io", "ingresses").unwrap(),
        Some("globex-web"),
        "globex-only",
        &json!({"metadata": {"annotations": {"acme.cert-manager.io/http01-edit-in-place": null}}}),
        &kubesim::WriteOpts::system(),
    )
    .unwrap();
    c.merge_patch(
        &c.resolve("cert-manager.io", "clusterissuers").unwrap(),
        None,
        "globex-private",
        &json!({"spec": {"acme": {"server": "https://acme-staging-v02.api.letsencrypt.org/directory"}}}),
        &kubesim::WriteOpts::system(),
    )
    .unwrap();
    app.eventually("support sees the neighbour's changes", || async {
        let issuer: Value = support
            .get(app, "/api/v1/issuers/zrh-prod/_/globex-private")
            .await
            .json()
            .await
            .unwrap();
        ingress_as_support().await != annotation
            && issuer["server_url"]
                .as_str()
                .is_some_and(|u| u.contains("staging"))
    })
    .await;
    for (&who, before) in walkers.iter().zip(before) {
        assert_eq!(
            first_revision(app, who).await,
            before,
            "{who:?}'s live revision moved with the neighbour's changes"
        );
    }
}

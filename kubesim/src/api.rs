//! The HTTP face of a simulated cluster: URL routing, verbs, content types and watch streams.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;

use crate::auth::reviews;
use crate::discovery;
use crate::resources::ResourceType;
use crate::selectors::{FieldSelector, LabelSelector};
use crate::status::ApiError;
use crate::store::{Cluster, Selection, WatchEvent, WriteOpts};
use crate::table;

/// How often a watch that asked for bookmarks gets one.
mod list;
const BOOKMARK_EVERY: Duration = Duration::from_secs(2);

/// The router of one simulated cluster.
pub fn router(cluster: Arc<Cluster>, access: Arc<crate::auth::Access>) -> Router {
    let audited = access.clone();
    Router::new()
        .route("/version", get(|| async { Json(discovery::version()) }))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(|| async { "ok" }))
        .route("/livez", get(|| async { "ok" }))
        .route("/api", get(api_versions))
        .route("/apis", get(api_groups))
        .route(
            "/openapi/v2",
            get(|| async { Json(discovery::openapi_v2()) }),
        )
        .route("/openapi/v3", get(openapi_v3_root))
        .route("/openapi/v3/{*gv}", get(openapi_v3_gv))
        .route(
            "/kubesim/faults",
            get(crate::admin::get).put(crate::admin::put),
        )
        .route(
            "/kubesim/faults/drop-watches",
            axum::routing::post(crate::admin::drop_watches),
        )
        .route(
            "/kubesim/audit",
            get(move || async move { Json(audited.audit.to_json()) }),
        )
        .route(
            "/kubesim/faults/reset-versions",
            axum::routing::post(crate::admin::reset_versions),
        )
        .route(
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            post(reviews::self_subject_access),
        )
        .route(
            "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
            post(reviews::self_subject_rules),
        )
        .route(
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            post(reviews::subject_access),
        )
        .route(
            "/apis/authorization.k8s.io/v1/namespaces/{namespace}/localsubjectaccessreviews",
            post(reviews::local_subject_access),
        )
        .route(
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            post(reviews::self_subject),
        )
        .route(
            "/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
            post(reviews::token),
        )
        .fallback(resource_request)
        .layer(axum::middleware::from_fn_with_state(
            crate::auth::Guarded {
                cluster: cluster.clone(),
                access,
            },
            crate::auth::guard,
        ))
        .layer(axum::middleware::from_fn_with_state(
            cluster.clone(),
            crate::admin::apply,
        ))
        .with_state(cluster)
}

async fn api_versions(headers: HeaderMap) -> Json<Value> {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1");
    Json(discovery::core_versions(host))
}

async fn api_groups(State(c): State<Arc<Cluster>>) -> Json<Value> {
    Json(discovery::api_group_list(&c.types()))
}

fn types_hash(types: &[ResourceType]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for t in types {
        (&t.group, &t.versions, &t.plural, &t.kind).hash(&mut h);
    }
    h.finish()
}

async fn openapi_v3_root(State(c): State<Arc<Cluster>>) -> Json<Value> {
    let types = c.types();
    Json(discovery::openapi_v3_root(&types, types_hash(&types)))
}

async fn openapi_v3_gv(
    State(c): State<Arc<Cluster>>,
    axum::extract::Path(gv): axum::extract::Path<String>,
) -> Response {
    match discovery::openapi_v3_group_version(&c.types(), &gv) {
        Some(doc) => Json(doc).into_response(),
        None => ApiError::new(
            404,
            "NotFound",
            format!("the server could not find the OpenAPI document of {gv}"),
        )
        .into_response(),
    }
}

/// Where a resource URL points.
#[derive(Debug)]
struct Target {
    rt: ResourceType,
    version: String,
    namespace: Option<String>,
    name: Option<String>,
    status: bool,
}

/// What a `/api` or `/apis` URL names.
enum Route {
    /// A resource collection, object or subresource.
    Resource(Target),
    /// A discovery document (group or group-version).
    Document(Value),
}

/// Parses `/api/v1/...` and `/apis/{group}/{version}/...`.
fn parse_target(cluster: &Cluster, path: &str) -> Result<Route, ApiError> {
    let segs: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    let not_found = || {
        ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    };
    let (group, version, rest) = match segs.as_slice() {
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        ["apis", g] => {
            return discovery::api_group(&cluster.types(), g)
                .map(Route::Document)
                .ok_or_else(not_found)
        }
        _ => return Err(not_found()),
    };
    if rest.is_empty() {
        return discovery::resource_list(&cluster.types(), group, version)
            .map(Route::Document)
            .ok_or_else(not_found);
    }
    let (namespace, plural, name, sub) =
        if rest[0] == "namespaces" && rest.len() >= 3 && rest[2] != "status" {
            (
                Some(rest[1].to_string()),
                rest[2],
                rest.get(3).copied(),
                rest.get(4).copied(),
            )
        } else {
            (None, rest[0], rest.get(1).copied(), rest.get(2).copied())
        };
    if rest.len() > 5 {
        return Err(not_found());
    }
    let rt = cluster
        .resolve(group, plural)
        .filter(|t| t.versions.iter().any(|v| v == version))
        .ok_or_else(not_found)?;
    // A namespaced object needs its namespace; a cluster-scoped one has none.
    if (rt.namespaced && namespace.is_none() && name.is_some())
        || (!rt.namespaced && namespace.is_some())
    {
        return Err(not_found());
    }
    let status = match sub {
        None => false,
        Some("status") if rt.status_subresource => true,
        Some(_) => return Err(not_found()),
    };
    Ok(Route::Resource(Target {
        rt,
        version: version.to_string(),
        namespace,
        name: name.map(str::to_string),
        status,
    }))
}

/// Sets `apiVersion` to the version the client asked for (kubesim stores one copy).
fn present(mut obj: Value, t: &Target) -> Value {
    obj["apiVersion"] = json!(t.rt.api_version(&t.version));
    obj["kind"] = json!(t.rt.kind);
    obj
}

fn wants_table(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|a| a.to_str().ok())
        .is_some_and(|a| a.contains("as=Table"))
}

fn selection(t: &Target, q: &HashMap<String, String>) -> Result<Selection, ApiError> {
    Ok(Selection {
        namespace: t.namespace.clone(),
        labels: LabelSelector::parse(q.get("labelSelector").map(String::as_str).unwrap_or(""))
            .map_err(ApiError::bad_request)?,
        fields: FieldSelector::parse(q.get("fieldSelector").map(String::as_str).unwrap_or(""))
            .map_err(ApiError::bad_request)?,
    })
}

fn write_opts(
    t: &Target,
    q: &HashMap<String, String>,
    headers: &HeaderMap,
) -> Result<WriteOpts, ApiError> {
    let dry_run = match q.get("dryRun").map(String::as_str) {
        None | Some("") => false,
        Some("All") => true,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "dryRun: Unsupported value: {other:?}: supported values: \"All\""
            )))
        }
    };
    let agent = headers
        .get(header::USER_AGENT)
        .and_then(|u| u.to_str().ok())
        .unwrap_or("unknown");
    let manager = match q.get("fieldManager") {
        Some(m) if m.len() > 128 || m.chars().any(|c| c.is_control()) => {
            return Err(ApiError::bad_request(
                "fieldManager: Invalid value: must be at most 128 printable characters",
            ))
        }
        Some(m) if !m.is_empty() => m.clone(),
        _ => agent.split('/').next().unwrap_or("unknown").to_string(),
    };
    Ok(WriteOpts {
        manager,
        dry_run,
        status: t.status,
        version: t.version.clone(),
    })
}

fn parse_body(body: &Bytes, headers: &HeaderMap, yaml_ok: bool) -> Result<Value, ApiError> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|c| c.to_str().ok())
        .unwrap_or("");
    if content_type.contains("protobuf") {
        return crate::protobuf::decode(body).map_err(|e| {
            ApiError::new(
                415,
                "UnsupportedMediaType",
                format!("the body of the request could not be read as {content_type}: {e}"),
            )
        });
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(v) => Ok(v),
        Err(e) if !yaml_ok => Err(ApiError::bad_request(format!(
            "the body of the request is not valid JSON: {e}"
        ))),
        Err(_) => serde_yaml_ng::from_slice::<Value>(body).map_err(|e| {
            ApiError::bad_request(format!("the body of the request is not valid YAML: {e}"))
        }),
    }
}

async fn resource_request(
    State(cluster): State<Arc<Cluster>>,
    method: Method,
    uri: Uri,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let t = match parse_target(&cluster, uri.path()) {
        Ok(Route::Resource(t)) => t,
        Ok(Route::Document(doc)) => return Json(doc).into_response(),
        Err(e) => return e.into_response(),
    };
    let result = match (&method, t.name.clone()) {
        (&Method::GET, None)
            if matches!(q.get("watch").map(String::as_str), Some("true" | "1")) =>
        {
            return watch(cluster, t, &q, &headers)
        }
        (&Method::GET, None) => return list::list(&cluster, &t, &q, &headers),
        (&Method::GET, Some(name)) => cluster.get(&t.rt, t.namespace.as_deref(), &name).map(|o| {
            let o = present(o, &t);
            ok(if wants_table(&headers) {
                table::table(
                    &t.rt,
                    std::slice::from_ref(&o),
                    true,
                    &cluster.clock.now(),
                    q.get("includeObject").map(String::as_str),
                )
            } else {
                o
            })
        }),
        (&Method::POST, None) => write_opts(&t, &q, &headers)
            .and_then(|opts| {
                let mut body = parse_body(&body, &headers, is_yaml(&headers))?;
                crate::schemas::admit(&cluster, &t.rt, &t.version, q.get("fieldValidation").map(String::as_str), &mut body)?;
                cluster
                    .create(&t.rt, t.namespace.as_deref(), body, &opts)
                    .map(|o| present(o, &t))
            })
            .map(|o| (StatusCode::CREATED, o)),
        (&Method::PUT, Some(name)) => write_opts(&t, &q, &headers).and_then(|opts| {
            let mut body = parse_body(&body, &headers, is_yaml(&headers))?;
            crate::schemas::admit(&cluster, &t.rt, &t.version, q.get("fieldValidation").map(String::as_str), &mut body)?;
            cluster
                .update(&t.rt, t.namespace.as_deref(), &name, body, &opts)
                .map(|o| ok(present(o, &t)))
        }),
        (&Method::PATCH, Some(name)) => patch(&cluster, &t, &name, &q, &headers, &body).map(ok),
        (&Method::DELETE, Some(name)) => delete_options(&body, &headers).and_then(|opts| {
            // dryRun comes as a query parameter (kubectl) or in the DeleteOptions body
            // (client libraries); both count.
            let dry_run = q.get("dryRun").map(String::as_str) == Some("All")
                || opts.dry_run.iter().any(|d| d == "All");
            let pre = opts.preconditions.unwrap_or_default();
            cluster.delete_if(&t.rt, t.namespace.as_deref(), &name, dry_run, &pre).map(|o| {
                ok(json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                       "details": {"name": name, "group": t.rt.group, "kind": t.rt.plural, "uid": o["metadata"]["uid"]}}))
            })
        }),
        _ => Err(ApiError::new(
            405,
            "MethodNotAllowed",
            format!("the server does not allow this method on the requested resource ({method})"),
        )),
    };
    match result {
        Ok((code, v)) => (code, Json(v)).into_response(),
        Err(e) => e.into_response(),
    }
}

fn ok(v: Value) -> (StatusCode, Value) {
    (StatusCode::OK, v)
}

fn is_yaml(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|c| c.to_str().ok())
        .is_some_and(|c| c.contains("yaml"))
}

fn patch(
    cluster: &Cluster,
    t: &Target,
    name: &str,
    q: &HashMap<String, String>,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Value, ApiError> {
    let opts = write_opts(t, q, headers)?;
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|c| c.to_str().ok())
        .unwrap_or("");
    let ns = t.namespace.as_deref();
    let unsupported = || {
        ApiError::new(415, "UnsupportedMediaType", format!("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml{}", if t.rt.custom { "" } else { ", application/strategic-merge-patch+json" }))
    };
    let result = if content_type.starts_with("application/apply-patch+yaml") {
        if q.get("fieldManager").is_none_or(|m| m.is_empty()) {
            return Err(ApiError::new(422, "Invalid", "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"));
        }
        let force = match q.get("force").map(String::as_str) {
            None | Some("false") => false,
            Some("true") => true,
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "force: Invalid value: {other:?}"
                )))
            }
        };
        let applied = parse_body(body, headers, true)?;
        crate::schemas::typed_patch(cluster, &t.rt, &t.version, ns, name, &applied)?;
        cluster.apply(&t.rt, ns, name, applied, force, &opts)
    } else {
        if q.contains_key("force") {
            return Err(ApiError::new(422, "Invalid", "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"));
        }
        let patch = parse_body(body, headers, false)?;
        if content_type.starts_with("application/merge-patch+json")
            || (content_type.starts_with("application/strategic-merge-patch+json") && !t.rt.custom)
        {
            cluster.merge_patch(&t.rt, ns, name, &patch, &opts)
        } else if content_type.starts_with("application/json-patch+json") {
            let current = cluster.get(&t.rt, ns, name)?;
            let patched = crate::jsonpatch::apply(current.clone(), &patch).map_err(|e| {
                ApiError::new(
                    422,
                    "Invalid",
                    format!("the server rejected our request due to an error in our request: {e}"),
                )
            })?;
            let mut replacement = patched;
            replacement["metadata"]["resourceVersion"] =
                current["metadata"]["resourceVersion"].clone();
            cluster.update(&t.rt, ns, name, replacement, &opts)
        } else {
            Err(unsupported())
        }
    };
    result.map(|o| present(o, t))
}

/// Opens a watch stream of newline-delimited JSON events.
fn watch(
    cluster: Arc<Cluster>,
    t: Target,
    q: &HashMap<String, String>,
    headers: &HeaderMap,
) -> Response {
    let sel = match selection(&t, q) {
        Ok(s) => s,
        Err(e) => return e.into_response(),
    };
    let from = match q.get("resourceVersion").map(String::as_str) {
        None | Some("") | Some("0") => None,
        Some(rv) => match rv.parse::<u64>() {
            Ok(n) => Some(n),
            Err(_) => {
                return ApiError::bad_request(format!("resourceVersion: Invalid value: {rv:?}"))
                    .into_response()
            }
        },
    };
    let timeout = q
        .get("timeoutSeconds")
        .and_then(|s| s.parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(Duration::from_secs(1800));
    let bookmarks = q.get("allowWatchBookmarks").is_some_and(|b| b == "true");
    let as_table = wants_table(headers);
    let (tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(256);
    let line = |v: &Value| Ok(Bytes::from(format!("{v}\n")));
    let start = match cluster.watch_from(&t.rt, &sel, from) {
        Ok(s) => s,
        // A version newer than the server's is refused before the stream starts.
        Err(e) if e.code == 504 => return e.into_response(),
        Err(e) => {
            // A real API server reports "too old" as an ERROR event inside a 200 stream.
            let ev = json!({"type": "ERROR", "object": e.to_status()});
            let _ = tx.try_send(line(&ev));
            drop(tx);
            return stream_response(rx);
        }
    };
    tokio::spawn(async move {
        let mut start = start;
        let mut last_rv = start.start_rv;
        let mut first_table = true;
        let render = |ev: &WatchEvent, first: &mut bool| {
            let obj = present((*ev.object).clone(), &t);
            let obj = if as_table {
                let v = table::table(
                    &t.rt,
                    std::slice::from_ref(&obj),
                    *first,
                    &cluster.clock.now(),
                    None,
                );
                *first = false;
                v
            } else {
                obj
            };
            json!({"type": ev.kind, "object": obj})
        };
        for ev in &start.backlog {
            last_rv = last_rv.max(ev.rv);
            if tx.send(line(&render(ev, &mut first_table))).await.is_err() {
                return;
            }
        }
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut ticker = tokio::time::interval(BOOKMARK_EVERY);
        ticker.tick().await;
        loop {
            tokio::select! {
                _ = &mut deadline => return,
                _ = start.epoch.changed() => return,
                _ = tx.closed() => return,
                _ = ticker.tick(), if bookmarks => {
                    let rv = cluster.resource_version().max(last_rv);
                    let ev = json!({"type": "BOOKMARK", "object": {"kind": t.rt.kind, "apiVersion": t.rt.api_version(&t.version), "metadata": {"resourceVersion": rv.to_string()}}});
                    if tx.send(line(&ev)).await.is_err() { return; }
                }
                msg = start.receiver.recv() => match msg {
                    Ok(ev) => {
                        if ev.rv <= last_rv || ev.group != t.rt.group || ev.plural != t.rt.plural || !sel.matches(&ev.object) {
                            continue;
                        }
                        last_rv = ev.rv;
                        if tx.send(line(&render(&ev, &mut first_table))).await.is_err() { return; }
                    }
                    // A watcher that falls behind is cut off; it resumes from its last version.
                    Err(broadcast::error::RecvError::Lagged(_)) | Err(broadcast::error::RecvError::Closed) => return,
                },
            }
        }
    });
    stream_response(rx)
}

fn stream_response(rx: mpsc::Receiver<Result<Bytes, Infallible>>) -> Response {
    Response::builder()
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(ReceiverStream::new(rx)))
        .expect("static headers are valid")
}

/// The DeleteOptions a DELETE may carry in its body.
#[derive(Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct DeleteOptions {
    #[serde(default)]
    dry_run: Vec<String>,
    preconditions: Option<crate::store::Preconditions>,
}

fn delete_options(
    body: &axum::body::Bytes,
    headers: &HeaderMap,
) -> Result<DeleteOptions, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(DeleteOptions::default());
    }
    let v = parse_body(body, headers, is_yaml(headers))?;
    serde_json::from_value(v)
        .map_err(|e| ApiError::new(400, "BadRequest", format!("invalid DeleteOptions: {e}")))
}

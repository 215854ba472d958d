//! The questions a client may ask the authorizer, and the token it may ask for:
//! `SelfSubjectAccessReview` (`kubectl auth can-i`), `SubjectAccessReview`,
//! `LocalSubjectAccessReview`, `SelfSubjectRulesReview` (`kubectl auth can-i --list`),
//! `SelfSubjectReview` (`kubectl auth whoami`) and the ServiceAccount `token` subresource
//! (`kubectl create token`). Upstream: `pkg/registry/authorization/*`,
//! `pkg/registry/authentication/selfsubjectreview`, `pkg/registry/core/serviceaccount/storage/token.go`.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde_json::{json, Value};

use super::{rbac, Access, Attributes, Identity};
use crate::status::ApiError;
use crate::store::Cluster;

const AUTHZ: &str = "authorization.k8s.io/v1";

fn body_json(body: &Bytes) -> Result<Value, ApiError> {
    if body.starts_with(b"k8s\0") {
        return crate::protobuf::decode(body)
            .map_err(|e| ApiError::new(415, "UnsupportedMediaType", e));
    }
    serde_json::from_slice(body)
        .or_else(|_| serde_yaml_ng::from_slice(body))
        .map_err(|e| {
            ApiError::bad_request(format!("the body of the request is not valid JSON: {e}"))
        })
}

fn invalid(kind: &str, field: &str, detail: &str) -> ApiError {
    ApiError::new(
        422,
        "Invalid",
        format!("{kind}.authorization.k8s.io \"\" is invalid: {field}: {detail}"),
    )
}

/// The question of a review's spec.
fn question(kind: &str, spec: &Value) -> Result<Attributes, ApiError> {
    let text = |v: &Value, f: &str| v.get(f).and_then(Value::as_str).unwrap_or("").to_string();
    match (spec.get("resourceAttributes"), spec.get("nonResourceAttributes")) {
        (Some(r), None) => Ok(Attributes {
            verb: text(r, "verb"),
            resource_request: true,
            group: text(r, "group"),
            resource: text(r, "resource"),
            subresource: text(r, "subresource"),
            namespace: text(r, "namespace"),
            name: text(r, "name"),
            path: String::new(),
        }),
        (None, Some(n)) => Ok(Attributes {
            verb: text(n, "verb"),
            path: text(n, "path"),
            ..Attributes::default()
        }),
        _ => Err(invalid(
            kind,
            "spec.resourceAttributes",
            "Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )),
    }
}

fn answer(
    cluster: &Cluster,
    access: &Access,
    kind: &str,
    mut review: Value,
    who: &Identity,
    a: &Attributes,
) -> Response {
    let decision = if access.enabled() {
        rbac::decide(cluster, who, a)
    } else {
        rbac::Decision {
            allowed: true,
            reason: String::new(),
        }
    };
    review["apiVersion"] = json!(AUTHZ);
    review["kind"] = json!(kind);
    review["metadata"] = json!({"creationTimestamp": null});
    let mut status = json!({"allowed": decision.allowed});
    if !decision.reason.is_empty() {
        status["reason"] = json!(decision.reason);
    }
    review["status"] = status;
    (StatusCode::CREATED, Json(review)).into_response()
}

/// `POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews`.
pub async fn self_subject_access(
    State(cluster): State<Arc<Cluster>>,
    Extension(access): Extension<Arc<Access>>,
    Extension(who): Extension<Identity>,
    body: Bytes,
) -> Response {
    const KIND: &str = "SelfSubjectAccessReview";
    let review = match body_json(&body) {
        Ok(v) => v,
        Err(e) => return e.into_response(),
    };
    match question(KIND, &review["spec"]) {
        Ok(a) => answer(&cluster, &access, KIND, review, &who, &a),
        Err(e) => e.into_response(),
    }
}

/// `POST /apis/authorization.k8s.io/v1/subjectaccessreviews` and the namespaced
/// `localsubjectaccessreviews`: the same question about someone else.
pub async fn subject_access(
    State(cluster): State<Arc<Cluster>>,
    Extension(access): Extension<Arc<Access>>,
    body: Bytes,
) -> Response {
    about_someone(&cluster, &access, None, &body)
}

/// `POST /apis/authorization.k8s.io/v1/namespaces/{ns}/localsubjectaccessreviews`.
pub async fn local_subject_access(
    State(cluster): State<Arc<Cluster>>,
    Extension(access): Extension<Arc<Access>>,
    Path(namespace): Path<String>,
    body: Bytes,
) -> Response {
    about_someone(&cluster, &access, Some(namespace), &body)
}

fn about_someone(
    cluster: &Cluster,
    access: &Access,
    namespace: Option<String>,
    body: &Bytes,
) -> Response {
    let kind = if namespace.is_some() {
        "LocalSubjectAccessReview"
    } else {
        "SubjectAccessReview"
    };
    let review = match body_json(body) {
        Ok(v) => v,
        Err(e) => return e.into_response(),
    };
    let spec = &review["spec"];
    let who = Identity {
        user: spec["user"].as_str().unwrap_or("").to_string(),
        uid: spec["uid"].as_str().unwrap_or("").to_string(),
        groups: spec["groups"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|g| g.as_str().map(str::to_string))
            .collect(),
    };
    if who.user.is_empty() && who.groups.is_empty() {
        return invalid(
            kind,
            "spec.user",
            "Invalid value: \"\": at least one of user or group must be specified",
        )
        .into_response();
    }
    let a = match question(kind, spec) {
        Ok(a) => a,
        Err(e) => return e.into_response(),
    };
    if let Some(ns) = namespace {
        if a.namespace != ns {
            return invalid(
                kind,
                "spec.resourceAttributes.namespace",
                &format!(
                    "Invalid value: {:?}: must match metadata.namespace",
                    a.namespace
                ),
            )
            .into_response();
        }
    }
    answer(cluster, access, kind, review, &who, &a)
}

/// `POST /apis/authorization.k8s.io/v1/selfsubjectrulesreviews`.
pub async fn self_subject_rules(
    State(cluster): State<Arc<Cluster>>,
    Extension(access): Extension<Arc<Access>>,
    Extension(who): Extension<Identity>,
    body: Bytes,
) -> Response {
    let mut review = match body_json(&body) {
        Ok(v) => v,
        Err(e) => return e.into_response(),
    };
    let namespace = review
        .pointer("/spec/namespace")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let (resource, non_resource) = if access.enabled() {
        rbac::rules_for(&cluster, &who, &namespace)
    } else {
        (
            vec![json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]})],
            vec![json!({"verbs": ["*"], "nonResourceURLs": ["*"]})],
        )
    };
    review["apiVersion"] = json!(AUTHZ);
    review["kind"] = json!("SelfSubjectRulesReview");
    review["metadata"] = json!({"creationTimestamp": null});
    review["status"] =
        json!({"resourceRules": resource, "nonResourceRules": non_resource, "incomplete": false});
    (StatusCode::CREATED, Json(review)).into_response()
}

/// `POST /apis/authentication.k8s.io/v1/selfsubjectreviews`.
pub async fn self_subject(Extension(who): Extension<Identity>) -> Response {
    let mut info = json!({"username": who.user, "groups": who.groups});
    if !who.uid.is_empty() {
        info["uid"] = json!(who.uid);
    }
    (
        StatusCode::CREATED,
        Json(
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview",
                    "metadata": {"creationTimestamp": null}, "status": {"userInfo": info}}),
        ),
    )
        .into_response()
}

/// `POST /api/v1/namespaces/{ns}/serviceaccounts/{name}/token`: a token for that account,
/// valid for `spec.expirationSeconds` (default one hour, at least ten minutes).
pub async fn token(
    State(cluster): State<Arc<Cluster>>,
    Extension(access): Extension<Arc<Access>>,
    Path((namespace, name)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let request = if body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        match body_json(&body) {
            Ok(v) => v,
            Err(e) => return e.into_response(),
        }
    };
    let rt = cluster
        .resolve("", "serviceaccounts")
        .expect("ServiceAccounts are built in");
    let account = match cluster.get(&rt, Some(&namespace), &name) {
        Ok(a) => a,
        Err(e) => return e.into_response(),
    };
    let seconds = request
        .pointer("/spec/expirationSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(3600);
    if seconds < 600 {
        return ApiError::new(422, "Invalid", format!("TokenRequest.authentication.k8s.io {name:?} is invalid: spec.expirationSeconds: Invalid value: {seconds}: may not specify a duration less than 10 minutes")).into_response();
    }
    let now = cluster.clock.now();
    let expires = now + chrono::Duration::seconds(seconds);
    let uid = account
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("");
    let token = access.issue(&namespace, &name, uid, expires);
    let audiences = request
        .pointer("/spec/audiences")
        .cloned()
        .unwrap_or_else(|| json!(["https://kubernetes.default.svc"]));
    (
        StatusCode::CREATED,
        Json(json!({
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "metadata": {"name": name, "namespace": namespace,
                         "creationTimestamp": now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)},
            "spec": {"audiences": audiences, "expirationSeconds": seconds, "boundObjectRef": null},
            "status": {"token": token,
                       "expirationTimestamp": expires.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)},
        })),
    )
        .into_response()
}

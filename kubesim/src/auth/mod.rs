//! Who is asking and whether they may: bearer-token authentication (the admin token of the
//! generated kubeconfig, and ServiceAccount tokens from the TokenRequest API),
//! impersonation, and Kubernetes RBAC over the Roles and bindings stored in the cluster.
//!
//! Off by default: every request is then the admin. [`enable`] turns it on for a cluster
//! and creates the default roles. Upstream: the authentication and impersonation filters in
//! `staging/src/k8s.io/apiserver/pkg/endpoints/filters/` (`authentication.go`,
//! `impersonation.go`, `authorization.go`); see also [`rbac`] and [`attributes`].

pub mod attributes;
pub mod audit;
mod bootstrap;
pub mod rbac;
pub mod reviews;

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};

pub use attributes::Attributes;

use crate::status::ApiError;
use crate::store::{Cluster, WriteOpts};

/// The bearer token of the kubeconfig kubesim writes; it authenticates as [`Identity::admin`].
pub const ADMIN_TOKEN: &str = "kubesim";

/// An authenticated (or anonymous) user: what RBAC subjects match against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub user: String,
    pub uid: String,
    pub groups: Vec<String>,
}

impl Identity {
    /// The kubeconfig's user: a member of `system:masters`, like a kubeadm admin.
    pub fn admin() -> Identity {
        Identity {
            user: "kubesim-admin".into(),
            uid: String::new(),
            groups: vec!["system:masters".into(), "system:authenticated".into()],
        }
    }

    fn anonymous() -> Identity {
        Identity {
            user: "system:anonymous".into(),
            uid: String::new(),
            groups: vec!["system:unauthenticated".into()],
        }
    }

    /// `system:serviceaccount:NS:NAME` with the groups the API server gives it.
    pub fn service_account(namespace: &str, name: &str, uid: &str) -> Identity {
        Identity {
            user: format!("system:serviceaccount:{namespace}:{name}"),
            uid: uid.to_string(),
            groups: vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{namespace}"),
                "system:authenticated".into(),
            ],
        }
    }
}

/// A token issued by the TokenRequest API.
#[derive(Debug, Clone)]
struct Issued {
    namespace: String,
    name: String,
    uid: String,
    expires: DateTime<Utc>,
}

/// A cluster's authentication and authorization state.
#[derive(Debug, Default)]
pub struct Access {
    enabled: AtomicBool,
    tokens: Mutex<HashMap<String, Issued>>,
    /// The writes sent to the cluster while authorization is on, and by whom.
    pub audit: audit::Log,
}

impl Access {
    /// Whether requests are authenticated and authorized.
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Issues a token for a ServiceAccount (its uid binds the token to this account).
    pub fn issue(&self, namespace: &str, name: &str, uid: &str, expires: DateTime<Utc>) -> String {
        let random = || {
            std::collections::hash_map::RandomState::new()
                .build_hasher()
                .finish()
        };
        let token = format!("kubesim-sa.{:016x}{:016x}", random(), random());
        self.tokens.lock().expect("token table lock").insert(
            token.clone(),
            Issued {
                namespace: namespace.into(),
                name: name.into(),
                uid: uid.into(),
                expires,
            },
        );
        token
    }
}

/// What the middleware needs: the cluster (its RBAC objects) and its access state.
#[derive(Clone)]
pub struct Guarded {
    pub cluster: Arc<Cluster>,
    pub access: Arc<Access>,
}

/// Turns authorization on for `cluster` and creates the default roles and bindings.
pub fn enable(cluster: &Cluster, access: &Access) {
    for (plural, obj) in bootstrap::objects() {
        let rt = cluster
            .resolve("rbac.authorization.k8s.io", plural)
            .expect("RBAC kinds are built in");
        // Already there when enabled twice: the defaults are left as they are.
        match cluster.create(&rt, None, obj, &WriteOpts::system()) {
            Ok(_) => {}
            Err(e) if e.reason == "AlreadyExists" => {}
            Err(e) => panic!("kubesim's default RBAC object was refused: {e}"),
        }
    }
    access.enabled.store(true, Ordering::Relaxed);
}

fn unauthorized() -> ApiError {
    ApiError::new(401, "Unauthorized", "Unauthorized")
}

/// The user a request's bearer token names; anonymous without one.
fn authenticate(
    cluster: &Cluster,
    access: &Access,
    headers: &HeaderMap,
) -> Result<Identity, ApiError> {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Ok(Identity::anonymous());
    };
    let token = value
        .to_str()
        .ok()
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .ok_or_else(unauthorized)?;
    if token == ADMIN_TOKEN {
        return Ok(Identity::admin());
    }
    let issued = access
        .tokens
        .lock()
        .expect("token table lock")
        .get(token)
        .cloned()
        .ok_or_else(unauthorized)?;
    if issued.expires <= cluster.clock.now() {
        return Err(unauthorized());
    }
    // A bound token stops working when its ServiceAccount is deleted (or replaced).
    let rt = cluster
        .resolve("", "serviceaccounts")
        .expect("ServiceAccounts are built in");
    let account = cluster
        .get(&rt, Some(&issued.namespace), &issued.name)
        .map_err(|_| unauthorized())?;
    if account.pointer("/metadata/uid").and_then(|u| u.as_str()) != Some(issued.uid.as_str()) {
        return Err(unauthorized());
    }
    Ok(Identity::service_account(
        &issued.namespace,
        &issued.name,
        &issued.uid,
    ))
}

/// Applies `Impersonate-User`/`-Group`/`-Uid`, each allowed by the `impersonate` verb.
fn impersonate(
    cluster: &Cluster,
    who: Identity,
    headers: &HeaderMap,
) -> Result<Identity, ApiError> {
    // Each header line is one value, taken as its bytes (UTF-8, as client-go and kubectl send
    // a name like "Jürgen"); a comma inside a value is part of it. A value that is not UTF-8
    // is refused — never dropped, which would run the request as the sender.
    let values = |name: &str| -> Result<Vec<String>, ApiError> {
        headers
            .get_all(name)
            .iter()
            .map(|v| {
                String::from_utf8(v.as_bytes().to_vec()).map_err(|_| {
                    ApiError::new(
                        400,
                        "BadRequest",
                        format!("the {name} header is not valid UTF-8"),
                    )
                })
            })
            .collect()
    };
    let users = values("impersonate-user")?;
    let groups = values("impersonate-group")?;
    let uids = values("impersonate-uid")?;
    if users.is_empty() {
        if groups.is_empty() && uids.is_empty() {
            return Ok(who);
        }
        return Err(ApiError::new(
            500,
            "InternalError",
            format!(
                "Internal error occurred: requested groups {groups:?} without impersonating a user"
            ),
        ));
    }
    let user = users[0].clone();
    let check = |a: Attributes| -> Result<(), ApiError> {
        if rbac::decide(cluster, &who, &a).allowed {
            Ok(())
        } else {
            Err(a.forbidden(&who.user))
        }
    };
    let impersonation = |resource: &str, namespace: &str, name: &str| Attributes {
        verb: "impersonate".into(),
        resource_request: true,
        resource: resource.into(),
        namespace: namespace.into(),
        name: name.into(),
        ..Attributes::default()
    };
    let account = user
        .strip_prefix("system:serviceaccount:")
        .and_then(|rest| rest.split_once(':'));
    match account {
        Some((ns, name)) => check(impersonation("serviceaccounts", ns, name))?,
        None => check(impersonation("users", "", &user))?,
    }
    for g in &groups {
        check(impersonation("groups", "", g))?;
    }
    for u in &uids {
        check(Attributes {
            group: "authentication.k8s.io".into(),
            ..impersonation("uids", "", u)
        })?;
    }
    let mut result = Identity {
        user: user.clone(),
        uid: uids.first().cloned().unwrap_or_default(),
        groups,
    };
    if let (Some((ns, _)), true) = (account, result.groups.is_empty()) {
        result.groups = vec![
            "system:serviceaccounts".into(),
            format!("system:serviceaccounts:{ns}"),
        ];
    }
    let everyone = if user == "system:anonymous" {
        "system:unauthenticated"
    } else {
        "system:authenticated"
    };
    if !result.groups.iter().any(|g| g == everyone) {
        result.groups.push(everyone.into());
    }
    Ok(result)
}

fn is_apply(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|c| c.to_str().ok())
        .is_some_and(|c| c.starts_with("application/apply-patch"))
}

/// The middleware: authenticates, impersonates, authorizes, and leaves the [`Identity`] in
/// the request's extensions for the reviews. kubesim's own `/kubesim/…` endpoints are exempt.
pub async fn guard(State(state): State<Guarded>, mut req: Request, next: Next) -> Response {
    let Guarded { cluster, access } = state;
    if req.uri().path().starts_with("/kubesim/") {
        return next.run(req).await;
    }
    req.extensions_mut().insert(access.clone());
    if !access.enabled() {
        req.extensions_mut().insert(Identity::admin());
        return next.run(req).await;
    }
    let sender = match authenticate(&cluster, &access, req.headers()) {
        Ok(who) => who,
        Err(e) => return e.into_response(),
    };
    let a = Attributes::from_request(
        req.method().as_str(),
        req.uri().path(),
        req.uri().query().unwrap_or(""),
    );
    let audited = audit::recorded(&a).then(|| {
        let uri = req
            .uri()
            .path_and_query()
            .map(|p| p.as_str().to_string())
            .unwrap_or_default();
        (uri, cluster.clock.now())
    });
    let record = |impersonated: Option<&Identity>, code: u16| {
        if let Some((uri, at)) = &audited {
            access.audit.record(audit::Event {
                id: 0,
                at: *at,
                uri: uri.clone(),
                attributes: a.clone(),
                user: sender.clone(),
                impersonated: impersonated.cloned(),
                code,
            });
        }
    };
    let impersonating = req.headers().contains_key("impersonate-user");
    let who = match impersonate(&cluster, sender.clone(), req.headers()) {
        Ok(who) => who,
        Err(e) => {
            record(None, e.code);
            return e.into_response();
        }
    };
    let as_whom = impersonating.then_some(&who);
    if !rbac::decide(&cluster, &who, &a).allowed {
        record(as_whom, 403);
        return a.forbidden(&who.user).into_response();
    }
    // Server-side apply that creates the object needs `create` as well as `patch`
    // (`withAuthorization` around the create path in handlers/patch.go).
    if a.verb == "patch" && a.subresource.is_empty() && is_apply(req.headers()) {
        let missing = cluster.resolve(&a.group, &a.resource).is_some_and(|rt| {
            let ns = (!a.namespace.is_empty()).then_some(a.namespace.as_str());
            cluster.get(&rt, ns, &a.name).is_err()
        });
        let create = Attributes {
            verb: "create".into(),
            ..a.clone()
        };
        if missing && !rbac::decide(&cluster, &who, &create).allowed {
            record(as_whom, 403);
            return create.forbidden(&who.user).into_response();
        }
    }
    req.extensions_mut().insert(who.clone());
    let response = next.run(req).await;
    record(impersonating.then_some(&who), response.status().as_u16());
    response
}

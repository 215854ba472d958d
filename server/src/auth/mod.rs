//! Who is asking and what they may see and do (DESIGN.md §8).
//!
//! Every request passes [`authenticate`]: it finds the caller — an API bearer token, an
//! identity from a trusted auth proxy's headers, an OIDC session cookie, or, with
//! `auth.mode = "none"`, the anonymous admin (the demo lets the visitor pick an identity) —
//! and turns their groups into an [`Access`] through the `[[access]]` rules. Handlers get it
//! as a [`Caller`]; the data layer filters every read by `Caller::scope`, and actions check
//! `Caller::act`. The same middleware refuses state-changing requests from other sites, checks
//! the CSRF token of browser forms, and sets the security headers.

pub mod oidc;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{ConnectInfo, FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum_extra::extract::cookie::{Cookie, Key, PrivateCookieJar, SameSite};
use base64::Engine;
use lookout_app::model::scope::{Access, Grant, Role};
use lookout_app::model::Scope;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::{AuthConfig, Config};
use crate::http::{AppError, AppState};

/// The session cookie: encrypted and authenticated, HttpOnly, SameSite=Lax.
pub const SESSION_COOKIE: &str = "lookout_session";
/// The CSRF cookie: a random value, encrypted; forms carry it back in a hidden field.
pub const CSRF_COOKIE: &str = "lookout_csrf";
/// The demo's identity choice.
pub const DEMO_COOKIE: &str = "lookout_demo_identity";

/// How callers are identified (`auth.mode`).
pub use crate::config::AuthMode as Mode;

/// One `[[access]]` rule.
#[derive(Debug, Clone)]
struct Rule {
    groups: Vec<String>,
    role: Role,
    grant: Grant,
}

/// One `[[tokens]]` entry.
#[derive(Debug, Clone)]
struct Token {
    name: String,
    sha256: [u8; 32],
    access: Access,
}

/// An identity the demo visitor can switch to.
#[derive(Debug, Clone)]
pub struct DemoIdentity {
    pub name: String,
    pub description: String,
    pub groups: Vec<String>,
}

/// Who the caller is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Identity {
    /// Shown in the header and written to the audit log.
    pub name: String,
    pub groups: Vec<String>,
    #[serde(skip)]
    pub access: Access,
    /// How they were identified: `none`, `demo`, `proxy`, `session` or `token`.
    pub via: &'static str,
}

/// The caller of a handler: the identity, where they may look and where they may act.
#[derive(Debug, Clone)]
pub struct Caller {
    pub identity: Arc<Identity>,
    pub scope: Scope,
    pub act: Scope,
}

impl Caller {
    pub fn new(identity: Identity) -> Caller {
        Caller {
            scope: identity.access.scope(),
            act: identity.access.act_scope(),
            identity: Arc::new(identity),
        }
    }

    /// The name the audit log records.
    pub fn actor(&self) -> &str {
        &self.identity.name
    }

    /// Everything (tests and internal callers).
    pub fn everything(name: &str) -> Caller {
        Caller::new(Identity {
            name: name.into(),
            groups: Vec::new(),
            access: Access::everything(),
            via: "none",
        })
    }
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, Self::Rejection> {
        Ok(parts
            .extensions
            .get::<Caller>()
            .cloned()
            .unwrap_or_else(|| {
                // Only routes `authenticate` lets through without an identity get here; they
                // see nothing.
                Caller::new(Identity {
                    name: "anonymous".into(),
                    groups: Vec::new(),
                    access: Access::default(),
                    via: "none",
                })
            }))
    }
}

/// The CSRF token of this request's browser (for the forms of the page).
#[derive(Debug, Clone)]
pub struct CsrfToken(pub String);

impl FromRequestParts<AppState> for CsrfToken {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, Self::Rejection> {
        Ok(parts
            .extensions
            .get::<CsrfToken>()
            .cloned()
            .unwrap_or(CsrfToken(String::new())))
    }
}

/// What the session cookie holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Session {
    name: String,
    groups: Vec<String>,
    /// Unix seconds.
    expires: i64,
}

/// The sign-in settings, built once from the config.
pub struct Auth {
    pub mode: Mode,
    trusted: Vec<ipnet::IpNet>,
    user_header: HeaderName,
    groups_header: HeaderName,
    rules: Vec<Rule>,
    tokens: Vec<Token>,
    key: Key,
    ttl: Duration,
    secure: bool,
    pub oidc: Option<oidc::Provider>,
    /// With `mode = "none"`: identities the visitor may switch between (the demo).
    pub demo: Vec<DemoIdentity>,
}

fn grant(clusters: &[String], namespaces: &[String]) -> Grant {
    Grant {
        clusters: clusters.to_vec(),
        namespaces: namespaces.to_vec(),
    }
}

impl Auth {
    /// Builds the settings from a validated config; OIDC discovery happens here.
    pub async fn from_config(c: &Config) -> anyhow::Result<Auth> {
        let a: &AuthConfig = &c.auth;
        let mode = a.mode;
        let key = match &a.session_key {
            Some(k) => Key::from(&base64::engine::general_purpose::STANDARD.decode(k.trim())?),
            None => {
                if mode == Mode::Oidc {
                    tracing::warn!("auth.session_key is not set: a new key is made now, so everyone signs in again after a restart");
                }
                Key::generate()
            }
        };
        let ttl = a.session_ttl;
        let oidc = match (&a.oidc, mode) {
            (Some(o), Mode::Oidc) => {
                let public = a.public_url.clone().unwrap_or_default();
                Some(oidc::Provider::discover(o, &public).await?)
            }
            _ => None,
        };
        Ok(Auth {
            mode,
            trusted: a
                .trusted_proxies
                .iter()
                .filter_map(|c| c.parse().ok())
                .collect(),
            user_header: HeaderName::try_from(a.user_header.as_str())?,
            groups_header: HeaderName::try_from(a.groups_header.as_str())?,
            rules: c
                .access
                .iter()
                .map(|r| Rule {
                    groups: r.groups.clone(),
                    role: r.role,
                    grant: grant(&r.clusters, &r.namespaces),
                })
                .collect(),
            tokens: c
                .tokens
                .iter()
                .filter_map(|t| {
                    let mut sha = [0u8; 32];
                    for (i, b) in sha.iter_mut().enumerate() {
                        *b = u8::from_str_radix(t.sha256.get(i * 2..i * 2 + 2)?, 16).ok()?;
                    }
                    Some(Token {
                        name: t.name.clone(),
                        sha256: sha,
                        access: Access::new(vec![(t.role, grant(&t.clusters, &t.namespaces))]),
                    })
                })
                .collect(),
            key,
            ttl,
            secure: a
                .public_url
                .as_deref()
                .is_some_and(|u| u.starts_with("https://")),
            oidc,
            demo: Vec::new(),
        })
    }

    /// Open access for everyone (`mode = "none"`), e.g. tests and the demo.
    pub fn open() -> Auth {
        Auth {
            mode: Mode::None,
            trusted: Vec::new(),
            user_header: HeaderName::from_static("x-forwarded-user"),
            groups_header: HeaderName::from_static("x-forwarded-groups"),
            rules: Vec::new(),
            tokens: Vec::new(),
            key: Key::generate(),
            ttl: Duration::from_secs(12 * 3600),
            secure: false,
            oidc: None,
            demo: Vec::new(),
        }
    }

    /// With the demo's identities and the rules that give them their access.
    pub fn with_demo(
        mut self,
        identities: Vec<DemoIdentity>,
        rules: Vec<(Vec<String>, Role, Grant)>,
    ) -> Auth {
        self.demo = identities;
        self.rules = rules
            .into_iter()
            .map(|(groups, role, grant)| Rule {
                groups,
                role,
                grant,
            })
            .collect();
        self
    }

    /// The cookie key (for the extractors of the private cookie jar).
    pub fn key(&self) -> Key {
        self.key.clone()
    }

    /// The caller's access from their groups: every rule naming one of them.
    pub fn access_of(&self, groups: &[String]) -> Access {
        Access::new(
            self.rules
                .iter()
                .filter(|r| r.groups.iter().any(|g| groups.contains(g)))
                .map(|r| (r.role, r.grant.clone()))
                .collect(),
        )
    }

    fn identity(&self, name: String, groups: Vec<String>, via: &'static str) -> Identity {
        Identity {
            access: self.access_of(&groups),
            name,
            groups,
            via,
        }
    }

    fn trusted(&self, peer: IpAddr) -> bool {
        let peer = peer.to_canonical();
        self.trusted.iter().any(|n| n.contains(&peer))
    }

    /// Finds the caller, or None when the request carries no identity. A bad token is an
    /// error (it must not fall back to another identity).
    fn identify(
        &self,
        headers: &HeaderMap,
        peer: IpAddr,
        jar: &PrivateCookieJar,
    ) -> Result<Option<Identity>, AppError> {
        if let Some(auth) = headers.get(header::AUTHORIZATION) {
            let token = auth
                .to_str()
                .ok()
                .and_then(|v| v.strip_prefix("Bearer "))
                .ok_or_else(|| {
                    AppError::Unauthorized(
                        "the Authorization header must be \"Bearer TOKEN\"".into(),
                    )
                })?;
            let hash: [u8; 32] = Sha256::digest(token.trim().as_bytes()).into();
            let found = self
                .tokens
                .iter()
                .find(|t| constant_time_eq(&t.sha256, &hash))
                .ok_or_else(|| AppError::Unauthorized("the bearer token is not valid".into()))?;
            return Ok(Some(Identity {
                name: format!("token:{}", found.name),
                groups: Vec::new(),
                access: found.access.clone(),
                via: "token",
            }));
        }
        match self.mode {
            Mode::None => {
                let chosen = jar
                    .get(DEMO_COOKIE)
                    .and_then(|c| self.demo.iter().find(|d| d.name == c.value()).cloned())
                    .or_else(|| self.demo.first().cloned());
                Ok(Some(match chosen {
                    Some(d) => self.identity(d.name, d.groups, "demo"),
                    None => Identity {
                        name: "anonymous".into(),
                        groups: Vec::new(),
                        access: Access::everything(),
                        via: "none",
                    },
                }))
            }
            Mode::Proxy => {
                if !self.trusted(peer) {
                    // Headers from anyone else are ignored, never believed.
                    return Ok(None);
                }
                let Some(user) = headers
                    .get(&self.user_header)
                    .and_then(|v| v.to_str().ok())
                    .map(str::trim)
                    .filter(|u| !u.is_empty())
                else {
                    return Ok(None);
                };
                let groups = headers
                    .get(&self.groups_header)
                    .and_then(|v| v.to_str().ok())
                    .map(|g| {
                        g.split(',')
                            .map(|s| s.trim().to_string())
                            .filter(|s| !s.is_empty())
                            .collect()
                    })
                    .unwrap_or_default();
                Ok(Some(self.identity(user.to_string(), groups, "proxy")))
            }
            Mode::Oidc => Ok(self
                .session(jar)
                .map(|s| self.identity(s.name, s.groups, "session"))),
        }
    }

    fn session(&self, jar: &PrivateCookieJar) -> Option<Session> {
        let s: Session = serde_json::from_str(jar.get(SESSION_COOKIE)?.value()).ok()?;
        (s.expires > chrono::Utc::now().timestamp()).then_some(s)
    }

    /// A session cookie for a signed-in user.
    pub fn session_cookie(&self, name: String, groups: Vec<String>) -> Cookie<'static> {
        let session = Session {
            name,
            groups,
            expires: chrono::Utc::now().timestamp() + self.ttl.as_secs() as i64,
        };
        let mut c = self.cookie(
            SESSION_COOKIE,
            serde_json::to_string(&session).expect("a session serializes"),
        );
        c.set_max_age(time::Duration::seconds(self.ttl.as_secs() as i64));
        c
    }

    /// A cookie with Lookout's attributes: Path=/, HttpOnly, SameSite=Lax, Secure on HTTPS.
    pub fn cookie(&self, name: &'static str, value: String) -> Cookie<'static> {
        Cookie::build((name, value))
            .path("/")
            .http_only(true)
            .same_site(SameSite::Lax)
            .secure(self.secure)
            .build()
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Paths anyone may reach: health, assets, and the sign-in flow itself.
fn public(path: &str) -> bool {
    matches!(path, "/healthz" | "/readyz" | "/favicon.ico")
        || path.starts_with("/style/")
        || path.starts_with("/assets/")
        || path.starts_with("/auth/")
}

/// Refuses a state-changing request a browser sent from another site: browsers name the
/// origin of every cross-site POST/DELETE in `Origin` (or `Sec-Fetch-Site`). Clients that
/// send neither are not browsers.
pub fn same_origin(headers: &HeaderMap) -> Result<(), AppError> {
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    if let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) {
        let ok = host
            .is_some_and(|h| origin == format!("http://{h}") || origin == format!("https://{h}"));
        return if ok {
            Ok(())
        } else {
            Err(AppError::Forbidden(format!(
                "a request from {origin} is not accepted; use Lookout's own pages"
            )))
        };
    }
    match headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) {
        Some("same-origin" | "none") | None => Ok(()),
        Some(other) => Err(AppError::Forbidden(format!(
            "a {other} request is not accepted; use Lookout's own pages"
        ))),
    }
}

/// A fresh random value (CSRF tokens, OIDC state).
pub fn random_token() -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(
        uuid::Uuid::new_v4()
            .as_bytes()
            .iter()
            .chain(uuid::Uuid::new_v4().as_bytes())
            .copied()
            .collect::<Vec<u8>>(),
    )
}

/// Checks the CSRF field of a browser form against the caller's CSRF cookie.
pub fn check_csrf(jar: &PrivateCookieJar, submitted: Option<&str>) -> Result<(), AppError> {
    let expected = jar.get(CSRF_COOKIE).map(|c| c.value().to_string());
    match (expected, submitted) {
        (Some(e), Some(s)) if constant_time_eq(e.as_bytes(), s.as_bytes()) => Ok(()),
        (None, _) => Err(AppError::Forbidden(
            "the form's security token is missing (cookies off?); reload the page and try again"
                .into(),
        )),
        _ => Err(AppError::Forbidden(
            "the form's security token does not match; reload the page and try again".into(),
        )),
    }
}

/// The security headers of every response. The pages carry no inline script or style, so the
/// policy allows only Lookout's own files.
fn secure_headers(headers: &mut HeaderMap) {
    let set = |h: &mut HeaderMap, name: &'static str, value: &'static str| {
        h.insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    };
    set(headers, "content-security-policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'");
    set(headers, "x-content-type-options", "nosniff");
    set(headers, "referrer-policy", "same-origin");
    set(headers, "x-frame-options", "DENY");
}

/// Identifies the caller of every request (see the module documentation).
pub async fn authenticate(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    jar: PrivateCookieJar,
    mut req: Request,
    next: Next,
) -> Response {
    let path = req.uri().path().to_string();
    let api = path.starts_with("/api/");
    let changes_state = !matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    let result = (|| -> Result<Option<Identity>, AppError> {
        if changes_state {
            same_origin(req.headers())?;
        }
        if public(&path) {
            return Ok(None);
        }
        let identity = state.auth.identify(req.headers(), peer.ip(), &jar)?;
        match identity {
            Some(id) => Ok(Some(id)),
            None => Err(AppError::Unauthorized(match state.auth.mode {
                Mode::Oidc => "sign in first".into(),
                _ => "no identity: the request did not come through the trusted auth proxy".into(),
            })),
        }
    })();
    let mut jar = jar;
    let mut response = match result {
        Ok(identity) => {
            if let Some(id) = identity {
                req.extensions_mut().insert(Caller::new(id));
            }
            // Every browser gets a CSRF token for its forms.
            let csrf = match jar.get(CSRF_COOKIE) {
                Some(c) => c.value().to_string(),
                None => {
                    let t = random_token();
                    jar = jar.add(state.auth.cookie(CSRF_COOKIE, t.clone()));
                    t
                }
            };
            req.extensions_mut().insert(CsrfToken(csrf));
            (jar, next.run(req).await).into_response()
        }
        Err(AppError::Unauthorized(_))
            if !api && state.auth.mode == Mode::Oidc && !changes_state =>
        {
            // A page: off to the provider, and back here afterwards.
            let back = req
                .uri()
                .path_and_query()
                .map(|p| p.to_string())
                .unwrap_or_else(|| "/".into());
            axum::response::Redirect::to(&format!(
                "/auth/login?return_to={}",
                lookout_app::pages::ingresses::encode(&back)
            ))
            .into_response()
        }
        Err(e) if api => crate::http::ApiError(e).into_response(),
        Err(e) => e.into_response(),
    };
    secure_headers(response.headers_mut());
    if response.status() == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"lookout\""),
        );
    }
    response
}

#[derive(Deserialize)]
pub struct DemoForm {
    identity: String,
    csrf: String,
}

/// `POST /auth/demo`: the demo visitor switches identity.
pub async fn switch_demo_identity(
    State(state): State<AppState>,
    jar: PrivateCookieJar,
    headers: HeaderMap,
    axum::Form(form): axum::Form<DemoForm>,
) -> Result<Response, AppError> {
    check_csrf(&jar, Some(&form.csrf))?;
    if !state.auth.demo.iter().any(|d| d.name == form.identity) {
        return Err(AppError::bad(
            "identity",
            format!("{:?} is not one of the demo's identities", form.identity),
        ));
    }
    let back = headers
        .get(header::REFERER)
        .and_then(|v| v.to_str().ok())
        .and_then(url_path)
        .unwrap_or_else(|| "/".into());
    let jar = jar.add(state.auth.cookie(DEMO_COOKIE, form.identity));
    Ok((jar, axum::response::Redirect::to(&back)).into_response())
}

/// The path and query of a URL on any host (to go back to it on this site).
fn url_path(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let path = &rest[rest.find('/')?..];
    (path.starts_with('/') && !path.starts_with("//")).then(|| path.to_string())
}

/// `GET /auth/signed-out`.
pub async fn signed_out() -> axum::response::Html<String> {
    axum::response::Html(lookout_app::pages::error::error(
        &crate::http::error_shell(),
        200,
        "Signed out",
        "You are signed out. Open any page to sign in again.",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_pick_the_rules_that_name_them() {
        let auth = Auth::open().with_demo(
            Vec::new(),
            vec![
                (
                    vec!["support".into()],
                    Role::Operator,
                    grant(&["*".into()], &["*".into()]),
                ),
                (
                    vec!["customer-acme".into()],
                    Role::Viewer,
                    grant(&["zrh-prod".into()], &["acme-*".into()]),
                ),
            ],
        );
        let customer = auth.access_of(&["customer-acme".into(), "other".into()]);
        assert!(customer.scope().sees("zrh-prod", "acme-shop"));
        assert!(!customer.scope().sees("zrh-prod", "globex"));
        assert!(customer.act_scope().is_empty());
        assert!(auth.access_of(&["nobody".into()]).scope().is_empty());
    }

    #[test]
    fn a_cross_site_post_is_refused_and_a_same_site_one_accepted() {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, HeaderValue::from_static("127.0.0.1:8080"));
        assert!(same_origin(&h).is_ok(), "no Origin: not a browser");
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://127.0.0.1:8080"),
        );
        assert!(same_origin(&h).is_ok());
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://evil.example"),
        );
        assert!(same_origin(&h).is_err());
        h.remove(header::ORIGIN);
        h.insert("sec-fetch-site", HeaderValue::from_static("cross-site"));
        assert!(same_origin(&h).is_err());
    }
}

//! Sign-in over HTTP: every request passes [`authenticate`], which reads the credentials a
//! request carries (bearer token, a trusted proxy's headers, the session and demo cookies),
//! asks `crate::auth` who that is, and hands handlers a [`Caller`] (and the [`CsrfToken`] of
//! the browser's forms). The same middleware refuses state-changing requests from other
//! sites and sets the security headers. The sign-in routes (`/auth/…`) are here too.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, FromRequestParts, Query, Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum_extra::extract::cookie::{Cookie, Key, PrivateCookieJar, SameSite};
use serde::Deserialize;

use super::{ApiError, AppError, AppState};
use crate::auth::oidc::{Flow, Provider, SignInError};
use crate::auth::{constant_time_eq, random_token, Auth, Caller, Credentials, Identity, Mode};

/// The session cookie: encrypted and authenticated, HttpOnly, SameSite=Lax.
pub(crate) const SESSION_COOKIE: &str = "lookout_session";
/// The CSRF cookie: a random value, encrypted; forms carry it back in a hidden field.
pub(crate) const CSRF_COOKIE: &str = "lookout_csrf";
/// The demo's identity choice.
pub(crate) const DEMO_COOKIE: &str = "lookout_demo_identity";
/// The sign-in under way, between `/auth/login` and `/auth/callback`.
const FLOW_COOKIE: &str = "lookout_oidc_flow";

impl axum::extract::FromRef<AppState> for Key {
    fn from_ref(state: &AppState) -> Self {
        Key::from(state.auth.session_key())
    }
}

/// A cookie with Lookout's attributes: Path=/, HttpOnly, SameSite=Lax, Secure on HTTPS.
fn cookie(auth: &Auth, name: &'static str, value: String) -> Cookie<'static> {
    Cookie::build((name, value))
        .path("/")
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(auth.secure)
        .build()
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, Self::Rejection> {
        Ok(parts
            .extensions
            .get::<Caller>()
            .cloned()
            // Only routes `authenticate` lets through without an identity get here; they see
            // nothing.
            .unwrap_or_else(Caller::nobody))
    }
}

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

/// The CSRF token of this request's browser (for the forms of the page).
#[derive(Debug, Clone)]
pub(crate) struct CsrfToken(pub String);

/// Readiness: public, but it tells a caller who identifies which of their clusters wait.
const READINESS: &str = "/readyz";

/// Paths anyone may reach: health, assets, and the sign-in flow itself.
fn public(path: &str) -> bool {
    matches!(
        path,
        "/healthz" | "/readyz" | "/favicon.ico" | "/favicon.svg"
    ) || path.starts_with("/style/")
        || path.starts_with("/assets/")
        || path.starts_with("/auth/")
}

/// Refuses a state-changing request a browser sent from another site: browsers name the
/// origin of every cross-site POST/DELETE in `Origin` (or `Sec-Fetch-Site`). Clients that
/// send neither are not browsers.
///
/// With `auth.public_url`, `Origin` must be its origin — scheme, host and port; without one
/// (Lookout on loopback, or behind a proxy that did not say), the request's own `Host` over
/// either scheme.
pub(crate) fn same_origin(headers: &HeaderMap, public: Option<&str>) -> Result<(), AppError> {
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    if let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) {
        let ok = match public {
            Some(public) => crate::auth::origin_of(origin).as_deref() == Some(public),
            None => host.is_some_and(|h| {
                origin == format!("http://{h}") || origin == format!("https://{h}")
            }),
        };
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

/// Checks the CSRF field of a browser form against the caller's CSRF cookie.
pub(crate) fn check_csrf(jar: &PrivateCookieJar, submitted: Option<&str>) -> Result<(), AppError> {
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

/// The live stream's route: it keeps what its request presented (see [`recheck`]).
const EVENTS: &str = "/api/v1/events";

/// The one door: the caller's view is made here, from their rules and the configured
/// clusters — once per request, and again while a live stream is open; every read is given
/// this view.
async fn caller_of(state: &AppState, id: crate::auth::Identity) -> Caller {
    let clusters = state.registry.records().iter().map(|c| c.name.as_str());
    match (&state.auth.reviews, id.via) {
        // A person signed in: the clusters say what they may see and do (API tokens keep
        // their static scopes).
        (Some(reviews), "proxy" | "session") => {
            let answer = reviews.answer(&id.name, &id.groups).await;
            Caller::granted(id, clusters, &answer, state.auth.access_source)
        }
        _ => Caller::new(id, clusters),
    }
}

/// Who the caller of a live stream is now, from what its request presented: None once they
/// signed out, their session or groups expired, or they are refused — the stream then
/// ends; a narrower view when their rights changed.
pub(crate) async fn recheck(
    state: &AppState,
    presented: &crate::auth::Presented,
) -> Option<Caller> {
    let id = state.auth.identify(&presented.credentials()).ok()??;
    Some(caller_of(state, id).await)
}

/// Identifies the caller of every request (see the module documentation).
pub(crate) async fn authenticate(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    jar: PrivateCookieJar,
    mut req: Request,
    next: Next,
) -> Response {
    let path = req.uri().path().to_string();
    let api = path.starts_with("/api/");
    let changes_state = !matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    let result = (|| -> Result<Option<(Identity, crate::auth::Presented)>, AppError> {
        if changes_state {
            same_origin(req.headers(), state.auth.origin.as_deref())?;
        }
        if public(&path) && path != READINESS {
            return Ok(None);
        }
        let headers = req.headers();
        if state.auth.mode == Mode::None && headers.get_all(header::HOST).iter().count() > 1 {
            return Err(AppError::bad(
                "Host",
                "sent more than once; a request names one host",
            ));
        }
        if state.auth.mode == Mode::None
            && !crate::auth::local_host(
                headers.get(header::HOST).and_then(|v| v.to_str().ok()),
                &state.auth.allowed_hosts,
            )
        {
            return Err(AppError::bad(
                "Host",
                "without sign-in Lookout answers only requests for a loopback name (or one in auth.allowed_hosts)",
            ));
        }
        // An identity header sent twice is refused, not resolved first-wins: which one a
        // proxy meant cannot be told.
        if state.auth.mode == Mode::Proxy {
            for name in [&state.auth.user_header, &state.auth.groups_header] {
                if headers.get_all(name.as_str()).iter().count() > 1 {
                    return Err(AppError::bad(
                        name,
                        "sent more than once; the auth proxy must send exactly one",
                    ));
                }
            }
        }
        let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        // The proxy's identity headers are UTF-8 (a name like "Jürgen" arrives as its
        // bytes); anything else is refused as such, not taken for a missing header.
        let utf8 = |name: &str| -> Result<Option<String>, AppError> {
            headers
                .get(name)
                .map(|v| {
                    String::from_utf8(v.as_bytes().to_vec())
                        .map_err(|_| AppError::bad(name, "is not valid UTF-8"))
                })
                .transpose()
        };
        let (proxy_user, proxy_groups) = if state.auth.mode == Mode::Proxy {
            (
                utf8(&state.auth.user_header)?,
                utf8(&state.auth.groups_header)?,
            )
        } else {
            (None, None)
        };
        let (session, demo) = (jar.get(SESSION_COOKIE), jar.get(DEMO_COOKIE));
        let credentials = Credentials {
            authorization: text(header::AUTHORIZATION.as_str()),
            peer: peer.ip(),
            proxy_user: proxy_user.as_deref(),
            proxy_groups: proxy_groups.as_deref(),
            session: session.as_ref().map(|c| c.value()),
            demo_choice: demo.as_ref().map(|c| c.value()),
        };
        let identity = state
            .auth
            .identify(&credentials)
            .map_err(|r| AppError::Unauthorized(r.0))?;
        match identity {
            Some(id) => Ok(Some((id, crate::auth::Presented::of(&credentials)))),
            None => Err(AppError::Unauthorized(match state.auth.mode {
                Mode::Oidc => "sign in first".into(),
                _ => "no identity: the request did not come through the trusted auth proxy".into(),
            })),
        }
    })();
    // Readiness is public: a caller who identifies is told more, one who does not (or
    // cannot: a kubelet's probe) gets the status.
    let result = if path == READINESS {
        result.or(Ok(None))
    } else {
        result
    };
    let mut jar = jar;
    let response = match result {
        Ok(identity) => {
            if let Some((id, presented)) = identity {
                let caller = caller_of(&state, id).await;
                if path == EVENTS {
                    // The live stream asks again who its caller is while it is open.
                    req.extensions_mut().insert(presented);
                }
                if let Some(what) =
                    crate::auth::limits::outside_view(&caller.view, req.uri().query())
                {
                    let e = AppError::NotFound(what);
                    let response = if api {
                        ApiError(e).into_response()
                    } else {
                        e.into_response()
                    };
                    return finish(&state, &path, response);
                }
                req.extensions_mut().insert(caller);
            }
            // Every browser gets a CSRF token for its forms — set on pages only: never on
            // a static file or a health answer, which shared caches may keep and hand to
            // many browsers, nor on the API, which holds no form.
            let csrf = match jar.get(CSRF_COOKIE) {
                Some(c) => c.value().to_string(),
                None if !api && !public(&path) => {
                    let t = random_token();
                    jar = jar.add(cookie(&state.auth, CSRF_COOKIE, t.clone()));
                    t
                }
                None => String::new(),
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
                lookout_app::components::encode(&back)
            ))
            .into_response()
        }
        Err(e) if api => ApiError(e).into_response(),
        Err(e) => e.into_response(),
    };
    finish(&state, &path, response)
}

/// The headers every answer of [`authenticate`] carries.
fn finish(state: &AppState, path: &str, mut response: Response) -> Response {
    secure_headers(response.headers_mut());
    if !public(path) {
        // What a caller sees depends on who they are: no shared cache may keep it.
        let h = response.headers_mut();
        h.entry(header::CACHE_CONTROL)
            .or_insert(HeaderValue::from_static("private, no-store"));
        let vary = format!(
            "Cookie, Authorization, {}, {}",
            state.auth.user_header, state.auth.groups_header
        );
        if let Ok(v) = HeaderValue::from_str(&vary) {
            h.append(header::VARY, v);
        }
    }
    if response.status() == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"lookout\""),
        );
    }
    response
}

#[derive(Deserialize)]
pub(crate) struct DemoForm {
    identity: String,
    csrf: String,
}

/// `POST /auth/demo`: the demo visitor switches identity.
pub(crate) async fn switch_demo_identity(
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
    let jar = jar.add(cookie(&state.auth, DEMO_COOKIE, form.identity));
    Ok((jar, axum::response::Redirect::to(&back)).into_response())
}

/// The path and query of a URL on any host (to go back to it on this site).
fn url_path(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let path = &rest[rest.find('/')?..];
    (path.starts_with('/') && !path.starts_with("//")).then(|| path.to_string())
}

/// `GET /auth/signed-out`.
pub(crate) async fn signed_out() -> axum::response::Html<String> {
    axum::response::Html(lookout_app::pages::error::error(
        &super::error_shell(),
        200,
        "Signed out",
        "You are signed out. Open any page to sign in again.",
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LoginQuery {
    return_to: Option<String>,
}

/// The provider, or the 404 of a Lookout without OIDC sign-in.
fn provider(state: &AppState) -> Result<&Provider, AppError> {
    state.auth.oidc.as_ref().ok_or_else(|| {
        AppError::NotFound(
            "Sign-in with OpenID Connect is not configured (auth.mode is not \"oidc\").".into(),
        )
    })
}

/// `GET /auth/login`: off to the provider.
pub(crate) async fn login(
    State(state): State<AppState>,
    jar: PrivateCookieJar,
    Query(q): Query<LoginQuery>,
) -> Result<Response, AppError> {
    let (url, flow) = provider(&state)?.begin(q.return_to);
    let mut flow_cookie = cookie(
        &state.auth,
        FLOW_COOKIE,
        serde_json::to_string(&flow).expect("the flow serializes"),
    );
    flow_cookie.set_max_age(time::Duration::minutes(10));
    Ok((jar.add(flow_cookie), Redirect::to(&url)).into_response())
}

/// What the provider sends back. The one route that takes parameters it does not name:
/// providers add their own (`iss` from RFC 9207, `session_state` from OpenID Connect Session
/// Management), and refusing them would refuse the sign-in.
#[derive(Deserialize)]
pub(crate) struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// `GET /auth/callback`: back from the provider.
pub(crate) async fn callback(
    State(state): State<AppState>,
    jar: PrivateCookieJar,
    Query(q): Query<CallbackQuery>,
) -> Result<Response, AppError> {
    let p = provider(&state)?;
    if let Some(e) = q.error {
        return Err(AppError::Unauthorized(format!(
            "the provider refused the sign-in: {e}{}",
            q.error_description
                .map(|d| format!(" ({d})"))
                .unwrap_or_default()
        )));
    }
    let flow: Flow = jar
        .get(FLOW_COOKIE)
        .and_then(|c| serde_json::from_str(c.value()).ok())
        .ok_or_else(|| {
            AppError::Unauthorized(
                "the sign-in took too long or cookies are off; start again".into(),
            )
        })?;
    let jar = jar.remove(Cookie::build(FLOW_COOKIE).path("/"));
    if !flow.state_matches(q.state.as_deref()) {
        return Err(AppError::Unauthorized(
            "the sign-in's state does not match; start again".into(),
        ));
    }
    let code = q.code.ok_or_else(|| AppError::bad("code", "missing"))?;
    let back = flow.return_to().to_string();
    let (name, groups) = p.finish(flow, code).await.map_err(|e| match e {
        SignInError::Refused(m) => AppError::Unauthorized(m),
        SignInError::Provider(m) => AppError::Upstream(m),
    })?;
    // A name Lookout refuses makes no session: the sign-in ends here with why, rather
    // than in a loop back to the provider.
    if let Err(refused) = crate::auth::not_a_token_name(&name) {
        tracing::warn!(user = %name.escape_default(), "sign-in refused: {}", refused.0);
        return Err(AppError::Unauthorized(format!(
            "Lookout cannot sign you in: {}. Ask whoever runs your identity provider for an account name Lookout accepts.",
            refused.0
        )));
    }
    tracing::info!(user = %name, ?groups, "signed in");
    // Signed in again: their groups may have changed, so the clusters are asked anew.
    if let Some(reviews) = &state.auth.reviews {
        reviews.forget(&name);
    }
    let ttl = state.auth.session_ttl();
    let mut session = cookie(
        &state.auth,
        SESSION_COOKIE,
        state.auth.session_value(name, groups),
    );
    session.set_max_age(time::Duration::seconds(ttl.as_secs() as i64));
    Ok((jar.add(session), Redirect::to(&back)).into_response())
}

/// `POST /auth/logout`: ends the session.
pub(crate) async fn logout(
    State(state): State<AppState>,
    jar: PrivateCookieJar,
    body: axum::body::Bytes,
) -> Result<Response, AppError> {
    let form: std::collections::HashMap<String, String> =
        form_urlencoded::parse(&body).into_owned().collect();
    check_csrf(&jar, form.get("csrf").map(String::as_str))?;
    // The cookie is removed from this browser, and the sign-in itself ends: a copy of the
    // cookie replayed later is refused.
    if let Some((id, expires)) = jar
        .get(SESSION_COOKIE)
        .and_then(|c| state.auth.revoke(c.value()))
    {
        state.ended_sessions.end(&id, expires).await;
    }
    let jar = jar.remove(Cookie::build(SESSION_COOKIE).path("/"));
    Ok((jar, Redirect::to("/auth/signed-out")).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cross_site_post_is_refused_and_a_same_site_one_accepted() {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, HeaderValue::from_static("127.0.0.1:8080"));
        assert!(same_origin(&h, None).is_ok(), "no Origin: not a browser");
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://127.0.0.1:8080"),
        );
        assert!(same_origin(&h, None).is_ok());
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://evil.example"),
        );
        assert!(same_origin(&h, None).is_err());
        h.remove(header::ORIGIN);
        h.insert("sec-fetch-site", HeaderValue::from_static("cross-site"));
        assert!(same_origin(&h, None).is_err());
    }

    #[test]
    fn with_a_public_url_the_origin_must_match_its_scheme_host_and_port() {
        let public = crate::auth::origin_of("https://Lookout.example.com:443/base/").unwrap();
        assert_eq!(public, "https://lookout.example.com");
        let mut h = HeaderMap::new();
        h.insert(
            header::HOST,
            HeaderValue::from_static("lookout.example.com"),
        );
        for (origin, ok) in [
            ("https://lookout.example.com", true),
            ("https://LOOKOUT.example.com:443", true),
            ("http://lookout.example.com", false),
            ("https://lookout.example.com:8443", false),
            ("https://lookout.example.com.evil.example", false),
            ("null", false),
        ] {
            h.insert(header::ORIGIN, HeaderValue::from_static(origin));
            assert_eq!(same_origin(&h, Some(&public)).is_ok(), ok, "{origin}");
        }
    }
}

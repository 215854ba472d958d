//! Sign-in with an OpenID Connect provider: the authorization code flow with PKCE, through
//! the `openidconnect` crate. `/auth/login` sends the browser to the provider with a fresh
//! state, nonce and PKCE challenge (kept in an encrypted cookie); `/auth/callback` checks the
//! state, exchanges the code with the PKCE verifier, verifies the ID token (signature,
//! issuer, audience, expiry, nonce) and starts a session with the user's groups, read from
//! the configured claim.

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum_extra::extract::cookie::{Cookie, PrivateCookieJar};
use base64::Engine;
use openidconnect::core::{CoreAuthenticationFlow, CoreClient, CoreProviderMetadata};
use openidconnect::{
    AuthorizationCode, ClientId, ClientSecret, CsrfToken, EndpointMaybeSet, EndpointNotSet,
    EndpointSet, IssuerUrl, Nonce, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, Scope,
    TokenResponse,
};
use serde::{Deserialize, Serialize};

use crate::config::OidcConfig;
use crate::http::{AppError, AppState};

/// The cookie that carries the flow's state between login and callback.
const FLOW_COOKIE: &str = "lookout_oidc_flow";

type Client = CoreClient<
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// The provider, discovered at start.
pub struct Provider {
    client: Client,
    http: openidconnect::reqwest::Client,
    groups_claim: String,
    scopes: Vec<String>,
}

/// What the flow cookie holds.
#[derive(Serialize, Deserialize)]
struct Flow {
    state: String,
    nonce: String,
    verifier: String,
    return_to: String,
}

impl Provider {
    /// Reads the provider's discovery document.
    pub async fn discover(c: &OidcConfig, public_url: &str) -> anyhow::Result<Provider> {
        let http = openidconnect::reqwest::ClientBuilder::new()
            .redirect(openidconnect::reqwest::redirect::Policy::none())
            .build()?;
        let issuer = IssuerUrl::new(c.issuer_url.clone())?;
        let metadata = CoreProviderMetadata::discover_async(issuer, &http)
            .await
            .map_err(|e| {
                anyhow::anyhow!(
                    "auth.oidc.issuer_url: discovery of {} failed: {e}",
                    c.issuer_url
                )
            })?;
        let secret = c
            .client_secret
            .clone()
            .filter(|s| !s.is_empty())
            .map(ClientSecret::new);
        let redirect = format!("{}/auth/callback", public_url.trim_end_matches('/'));
        let client = CoreClient::from_provider_metadata(
            metadata,
            ClientId::new(c.client_id.clone()),
            secret,
        )
        .set_redirect_uri(RedirectUrl::new(redirect)?);
        Ok(Provider {
            client,
            http,
            groups_claim: c.groups_claim.clone(),
            scopes: c.scopes.clone(),
        })
    }
}

#[derive(Deserialize)]
pub struct LoginQuery {
    return_to: Option<String>,
}

/// A path on this site to go back to (never another site).
fn local_path(p: Option<String>) -> String {
    p.filter(|p| p.starts_with('/') && !p.starts_with("//") && !p.contains('\\'))
        .unwrap_or_else(|| "/".into())
}

/// `GET /auth/login`: off to the provider.
pub async fn login(
    State(state): State<AppState>,
    jar: PrivateCookieJar,
    Query(q): Query<LoginQuery>,
) -> Result<Response, AppError> {
    let Some(p) = state.auth.oidc.as_ref() else {
        return Err(AppError::NotFound(
            "Sign-in with OpenID Connect is not configured (auth.mode is not \"oidc\").".into(),
        ));
    };
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let mut request = p
        .client
        .authorize_url(
            CoreAuthenticationFlow::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        )
        .set_pkce_challenge(challenge);
    for s in &p.scopes {
        request = request.add_scope(Scope::new(s.clone()));
    }
    let (url, csrf, nonce) = request.url();
    let flow = Flow {
        state: csrf.secret().clone(),
        nonce: nonce.secret().clone(),
        verifier: verifier.secret().clone(),
        return_to: local_path(q.return_to),
    };
    let mut cookie = state.auth.cookie(
        FLOW_COOKIE,
        serde_json::to_string(&flow).expect("the flow serializes"),
    );
    cookie.set_max_age(time::Duration::minutes(10));
    Ok((jar.add(cookie), Redirect::to(url.as_str())).into_response())
}

#[derive(Deserialize)]
pub struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// `GET /auth/callback`: back from the provider.
pub async fn callback(
    State(state): State<AppState>,
    jar: PrivateCookieJar,
    Query(q): Query<CallbackQuery>,
) -> Result<Response, AppError> {
    let Some(p) = state.auth.oidc.as_ref() else {
        return Err(AppError::NotFound(
            "Sign-in with OpenID Connect is not configured.".into(),
        ));
    };
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
    if q.state.as_deref() != Some(flow.state.as_str()) {
        return Err(AppError::Unauthorized(
            "the sign-in's state does not match; start again".into(),
        ));
    }
    let code = q.code.ok_or_else(|| AppError::bad("code", "missing"))?;
    let token = p
        .client
        .exchange_code(AuthorizationCode::new(code))
        .map_err(|e| AppError::Upstream(format!("the provider has no token endpoint: {e}")))?
        .set_pkce_verifier(PkceCodeVerifier::new(flow.verifier))
        .request_async(&p.http)
        .await
        .map_err(|e| {
            AppError::Unauthorized(format!("the provider did not accept the code: {e}"))
        })?;
    let id_token = token
        .id_token()
        .ok_or_else(|| AppError::Unauthorized("the provider sent no ID token".into()))?;
    let claims = id_token
        .claims(&p.client.id_token_verifier(), &Nonce::new(flow.nonce))
        .map_err(|e| AppError::Unauthorized(format!("the ID token is not valid: {e}")))?;
    let name = claims
        .preferred_username()
        .map(|u| u.to_string())
        .or_else(|| claims.email().map(|e| e.to_string()))
        .unwrap_or_else(|| claims.subject().to_string());
    // The signature is verified: the payload's other claims can be read as they are.
    let groups = id_token
        .to_string()
        .split('.')
        .nth(1)
        .and_then(|b| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(b)
                .ok()
        })
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v.get(&p.groups_claim).cloned())
        .map(|g| match g {
            serde_json::Value::Array(a) => a
                .iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect(),
            serde_json::Value::String(s) => s.split(',').map(|x| x.trim().to_string()).collect(),
            _ => Vec::new(),
        })
        .unwrap_or_default();
    tracing::info!(user = %name, ?groups, "signed in");
    let jar = jar.add(state.auth.session_cookie(name, groups));
    Ok((jar, Redirect::to(&flow.return_to)).into_response())
}

/// `POST /auth/logout`: ends the session.
pub async fn logout(jar: PrivateCookieJar, body: axum::body::Bytes) -> Result<Response, AppError> {
    let form: std::collections::HashMap<String, String> =
        form_urlencoded::parse(&body).into_owned().collect();
    super::check_csrf(&jar, form.get("csrf").map(String::as_str))?;
    let jar = jar.remove(Cookie::build(super::SESSION_COOKIE).path("/"));
    Ok((jar, Redirect::to("/auth/signed-out")).into_response())
}

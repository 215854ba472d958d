//! Sign-in with an OpenID Connect provider: the authorization code flow with PKCE, through
//! the `openidconnect` crate. [`Provider::begin`] makes the provider's URL with a fresh
//! state, nonce and PKCE challenge (the [`Flow`] the browser keeps meanwhile);
//! [`Provider::finish`] checks the state, exchanges the code with the PKCE verifier, verifies
//! the ID token (signature, issuer, audience, expiry, nonce) and reads the user's name and
//! groups (from the configured claim). The routes are in `http/session.rs`.

use base64::Engine;
use openidconnect::core::{CoreAuthenticationFlow, CoreClient, CoreProviderMetadata};
use openidconnect::{
    AuthorizationCode, ClientId, ClientSecret, CsrfToken, EndpointMaybeSet, EndpointNotSet,
    EndpointSet, IssuerUrl, Nonce, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, Scope,
    TokenResponse,
};
use serde::{Deserialize, Serialize};

use crate::config::OidcConfig;

/// Why a sign-in did not finish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignInError {
    /// The user's sign-in was not accepted: start again (the sentence says why).
    Refused(String),
    /// The provider could not be used.
    Provider(String),
}

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

/// A sign-in under way, kept by the browser (in an encrypted cookie) between the way to
/// the provider and the way back.
#[derive(Serialize, Deserialize)]
pub struct Flow {
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

/// A path on this site to go back to (never another site).
///
/// Only printable ASCII survives: browsers drop tabs and line breaks from a `Location`
/// (`/\t/evil.example` becomes `//evil.example`, another origin), and a line break in a
/// header is an error after the sign-in. Anything else falls back to `/`.
pub fn local_path(p: Option<String>) -> String {
    p.filter(|p| {
        p.starts_with('/')
            && !p.starts_with("//")
            && !p.contains('\\')
            && p.bytes().all(|b| b.is_ascii_graphic())
    })
    .unwrap_or_else(|| "/".into())
}

impl Provider {
    /// The provider's sign-in URL, and the flow to keep until the browser comes back.
    pub fn begin(&self, return_to: Option<String>) -> (String, Flow) {
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut request = self
            .client
            .authorize_url(
                CoreAuthenticationFlow::AuthorizationCode,
                CsrfToken::new_random,
                Nonce::new_random,
            )
            .set_pkce_challenge(challenge);
        for s in &self.scopes {
            request = request.add_scope(Scope::new(s.clone()));
        }
        let (url, csrf, nonce) = request.url();
        let flow = Flow {
            state: csrf.secret().clone(),
            nonce: nonce.secret().clone(),
            verifier: verifier.secret().clone(),
            return_to: local_path(return_to),
        };
        (url.to_string(), flow)
    }

    /// The user's name and groups once the browser is back with `code` (its `state` checked
    /// with [`Flow::state_matches`] first).
    pub async fn finish(
        &self,
        flow: Flow,
        code: String,
    ) -> Result<(String, Vec<String>), SignInError> {
        let token = self
            .client
            .exchange_code(AuthorizationCode::new(code))
            .map_err(|e| SignInError::Provider(format!("the provider has no token endpoint: {e}")))?
            .set_pkce_verifier(PkceCodeVerifier::new(flow.verifier))
            .request_async(&self.http)
            .await
            .map_err(|e| {
                SignInError::Refused(format!("the provider did not accept the code: {e}"))
            })?;
        let id_token = token
            .id_token()
            .ok_or_else(|| SignInError::Refused("the provider sent no ID token".into()))?;
        let claims = id_token
            .claims(&self.client.id_token_verifier(), &Nonce::new(flow.nonce))
            .map_err(|e| SignInError::Refused(format!("the ID token is not valid: {e}")))?;
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
            .and_then(|v| v.get(&self.groups_claim).cloned())
            .map(|g| match g {
                serde_json::Value::Array(a) => a
                    .iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect(),
                serde_json::Value::String(s) => {
                    s.split(',').map(|x| x.trim().to_string()).collect()
                }
                _ => Vec::new(),
            })
            .unwrap_or_default();
        Ok((name, groups))
    }
}

impl Flow {
    /// Whether the provider sent back the state this sign-in started with.
    pub fn state_matches(&self, state: Option<&str>) -> bool {
        state == Some(self.state.as_str())
    }

    /// Where the browser goes back to afterwards.
    pub fn return_to(&self) -> &str {
        &self.return_to
    }
}

#[cfg(test)]
mod tests {
    use super::local_path;

    #[test]
    fn only_same_origin_paths_survive_as_return_to() {
        for (given, kept) in [
            ("/ingresses?cluster=zrh", "/ingresses?cluster=zrh"),
            (
                "/certificates/zrh/shop/web-tls",
                "/certificates/zrh/shop/web-tls",
            ),
            ("//evil.example", "/"),
            ("/\t/evil.example", "/"),
            ("/\n/evil.example", "/"),
            ("/\u{b}x", "/"),
            ("/a\r\nSet-Cookie: x", "/"),
            ("/\\evil.example", "/"),
            ("https://evil.example/", "/"),
            ("/ spaced", "/"),
            ("", "/"),
        ] {
            assert_eq!(local_path(Some(given.to_string())), kept, "{given:?}");
        }
        assert_eq!(local_path(None), "/");
    }
}

//! Who is asking and what they may see and do (DESIGN.md §8), as plain code: no HTTP types.
//!
//! [`Auth::identify`] finds the caller from what a request carries ([`Credentials`]) — an
//! API bearer token, an identity from a trusted auth proxy's headers, a session, or, with
//! `auth.mode = "none"`, the anonymous admin (the demo lets the visitor pick an identity) —
//! and turns their groups into an [`Access`] through the `[[access]]` rules. A [`Caller`]
//! carries it to the handlers: reads take `Caller::scope`, actions check `Caller::act`.
//! Sessions are values [`Auth::session_value`] makes and [`Auth::session`] reads back; the
//! HTTP side (cookies, extractors, the sign-in routes, CSRF) is `http/session.rs`.

#[cfg(test)]
mod door;
pub(crate) mod limits;
pub mod oidc;
pub mod reviews;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use lookout_app::model::scope::{Access, Grant, Role};
use lookout_app::model::View;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::{AuthConfig, Config};

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

/// The caller of a handler: the identity, and their view of the fleet — made once per
/// request, at the door (`http::session::authenticate`), and the only thing reads are
/// given about who asks.
#[derive(Debug, Clone)]
pub struct Caller {
    pub identity: Arc<Identity>,
    pub view: View,
}

impl Caller {
    /// The caller `identity` over the configured `clusters`.
    pub fn new<'a>(identity: Identity, clusters: impl IntoIterator<Item = &'a str>) -> Caller {
        Caller {
            view: View::new(&identity.access, clusters),
            identity: Arc::new(identity),
        }
    }

    /// The caller `identity` as the clusters' `answer` grants them (`auth.access_source`
    /// `kubernetes`), or together with their rules (`both`).
    pub fn granted<'a>(
        identity: Identity,
        clusters: impl IntoIterator<Item = &'a str>,
        answer: &reviews::Answer,
        source: crate::config::AccessSource,
    ) -> Caller {
        let granted = View::granted(answer.sights.clone(), answer.unanswered.clone());
        let view = match source {
            crate::config::AccessSource::Both => {
                View::new(&identity.access, clusters).union(granted)
            }
            _ => granted,
        };
        Caller {
            view,
            identity: Arc::new(identity),
        }
    }

    /// The name the audit log records.
    pub fn actor(&self) -> &str {
        &self.identity.name
    }

    /// Someone who sees nothing (a route open to all, reached without an identity).
    pub fn nobody() -> Caller {
        Caller::new(
            Identity {
                name: "anonymous".into(),
                groups: Vec::new(),
                access: Access::default(),
                via: "none",
            },
            [],
        )
    }
}

/// What a request carries that may identify its sender.
#[derive(Debug, Clone, Copy)]
pub struct Credentials<'a> {
    /// The `Authorization` header.
    pub authorization: Option<&'a str>,
    /// The address the connection came from.
    pub peer: IpAddr,
    /// The value of `auth.user_header` and of `auth.groups_header` (proxy mode).
    pub proxy_user: Option<&'a str>,
    pub proxy_groups: Option<&'a str>,
    /// The session value (see [`Auth::session_value`]).
    pub session: Option<&'a str>,
    /// The demo identity the visitor chose.
    pub demo_choice: Option<&'a str>,
}

/// [`Credentials`] kept past their request: a live stream asks again with them who its
/// caller is now (signed out, groups expired, rights changed).
#[derive(Debug, Clone)]
pub struct Presented {
    pub authorization: Option<String>,
    pub peer: IpAddr,
    pub proxy_user: Option<String>,
    pub proxy_groups: Option<String>,
    pub session: Option<String>,
    pub demo_choice: Option<String>,
}

impl Presented {
    pub fn of(c: &Credentials<'_>) -> Presented {
        Presented {
            authorization: c.authorization.map(str::to_string),
            peer: c.peer,
            proxy_user: c.proxy_user.map(str::to_string),
            proxy_groups: c.proxy_groups.map(str::to_string),
            session: c.session.map(str::to_string),
            demo_choice: c.demo_choice.map(str::to_string),
        }
    }

    pub fn credentials(&self) -> Credentials<'_> {
        Credentials {
            authorization: self.authorization.as_deref(),
            peer: self.peer,
            proxy_user: self.proxy_user.as_deref(),
            proxy_groups: self.proxy_groups.as_deref(),
            session: self.session.as_deref(),
            demo_choice: self.demo_choice.as_deref(),
        }
    }
}

/// Why a request is refused: a sentence for the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub String);

/// What a session holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Session {
    name: String,
    groups: Vec<String>,
    /// Unix seconds.
    expires: i64,
    /// This sign-in's id, so that signing out revokes it (older cookies have none).
    #[serde(default)]
    id: String,
    /// When the groups were read from the provider (Unix seconds; older cookies have none).
    #[serde(default)]
    checked: i64,
}

/// The sign-in settings, built once from the config.
pub struct Auth {
    pub mode: Mode,
    trusted: Vec<ipnet::IpNet>,
    /// `auth.user_header` and `auth.groups_header`.
    pub user_header: String,
    pub groups_header: String,
    rules: Vec<Rule>,
    tokens: Vec<Token>,
    /// The bytes that sign and encrypt the session and CSRF cookies (at least 64).
    session_key: Vec<u8>,
    ttl: Duration,
    /// How old a session's groups may get (`auth.groups_max_age`).
    groups_max_age: Duration,
    /// Whether browsers reach Lookout over HTTPS (cookies are then `Secure`).
    pub secure: bool,
    /// The origin of `auth.public_url` (`https://lookout.example.com`): what a browser's
    /// `Origin` must be on a request that changes something. None without a public URL.
    pub origin: Option<String>,
    pub oidc: Option<oidc::Provider>,
    /// With `mode = "none"`: identities the visitor may switch between (the demo).
    pub demo: Vec<DemoIdentity>,
    /// With `mode = "none"`: host names besides loopback ones that requests may name in
    /// `Host` (`auth.allowed_hosts`, lowercase, without port).
    pub allowed_hosts: Vec<String>,
    /// Sign-ins ended by signing out, until they would have expired anyway: their ids and
    /// expiry (Unix seconds). The database keeps them too (`store::sessions`), and they are
    /// read back at start.
    revoked: std::sync::Mutex<std::collections::HashMap<String, i64>>,
    /// Where "now" comes from for sessions: the wall clock, or a test's.
    clock: crate::clock::Now,
    /// Who decides what a signed-in person sees (`auth.access_source`).
    pub access_source: crate::config::AccessSource,
    /// `auth.access_ttl`, `auth.access_reviews_in_flight`.
    pub access_ttl: Duration,
    pub access_reviews_in_flight: usize,
    /// The clusters' answers about people, when they decide (set once the clients exist).
    pub reviews: Option<Arc<reviews::AccessReviews>>,
    /// `actions.impersonate`: actions are sent as the person who asks for them.
    pub impersonate_actions: bool,
}

fn grant(clusters: &[String], namespaces: &[String]) -> Grant {
    Grant {
        clusters: clusters.to_vec(),
        namespaces: namespaces.to_vec(),
    }
}

/// 64 fresh random bytes (a session key made at start).
fn random_key() -> Vec<u8> {
    (0..4)
        .flat_map(|_| *uuid::Uuid::new_v4().as_bytes())
        .collect()
}

impl Auth {
    /// Builds the settings from a validated config; OIDC discovery happens here.
    pub async fn from_config(c: &Config) -> anyhow::Result<Auth> {
        let a: &AuthConfig = &c.auth;
        let mode = a.mode;
        let session_key = match &a.session_key {
            Some(k) => base64::engine::general_purpose::STANDARD.decode(k.trim())?,
            None => {
                if mode == Mode::Oidc {
                    tracing::warn!("auth.session_key is not set: a new key is made now, so everyone signs in again after a restart");
                }
                random_key()
            }
        };
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
            user_header: a.user_header.to_ascii_lowercase(),
            groups_header: a.groups_header.to_ascii_lowercase(),
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
            session_key,
            ttl: a.session_ttl,
            groups_max_age: a.groups_max_age,
            access_source: a.access_source,
            access_ttl: a.access_ttl,
            access_reviews_in_flight: a.access_reviews_in_flight,
            reviews: None,
            impersonate_actions: c.actions.impersonate,
            secure: a
                .public_url
                .as_deref()
                .is_some_and(|u| u.starts_with("https://")),
            origin: a.public_url.as_deref().and_then(origin_of),
            oidc,
            demo: Vec::new(),
            allowed_hosts: a
                .allowed_hosts
                .iter()
                .map(|h| h.trim().to_ascii_lowercase())
                .collect(),
            revoked: Default::default(),
            clock: crate::clock::wall_clock(),
        })
    }

    /// Open access for everyone (`mode = "none"`), e.g. tests and the demo.
    pub fn open() -> Auth {
        Auth {
            mode: Mode::None,
            trusted: Vec::new(),
            user_header: "x-forwarded-user".into(),
            groups_header: "x-forwarded-groups".into(),
            rules: Vec::new(),
            tokens: Vec::new(),
            session_key: random_key(),
            ttl: Duration::from_secs(12 * 3600),
            groups_max_age: Duration::from_secs(3600),
            secure: false,
            origin: None,
            oidc: None,
            demo: Vec::new(),
            allowed_hosts: Vec::new(),
            revoked: Default::default(),
            clock: crate::clock::wall_clock(),
            access_source: crate::config::AccessSource::Config,
            access_ttl: Duration::from_secs(60),
            access_reviews_in_flight: 32,
            reviews: None,
            impersonate_actions: false,
        }
    }

    /// Sessions judged by `clock` instead of the wall clock (tests move it instead of
    /// waiting).
    pub fn with_clock(mut self, clock: crate::clock::Now) -> Auth {
        self.clock = clock;
        self
    }

    /// Now, in Unix seconds, by the sessions' clock.
    pub fn now(&self) -> i64 {
        (self.clock)().timestamp()
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

    /// The bytes that sign and encrypt the cookies.
    pub fn session_key(&self) -> &[u8] {
        &self.session_key
    }

    /// How long a sign-in lasts.
    pub fn session_ttl(&self) -> Duration {
        self.ttl
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

    /// Finds the caller, or None when the request carries no identity. A bad token is
    /// refused (it must not fall back to another identity).
    pub fn identify(&self, c: &Credentials<'_>) -> Result<Option<Identity>, Refused> {
        if let Some(auth) = c.authorization {
            let token = auth.strip_prefix("Bearer ").ok_or_else(|| {
                Refused("the Authorization header must be \"Bearer TOKEN\"".into())
            })?;
            let hash: [u8; 32] = Sha256::digest(token.trim().as_bytes()).into();
            let found = self
                .tokens
                .iter()
                .find(|t| constant_time_eq(&t.sha256, &hash))
                .ok_or_else(|| Refused("the bearer token is not valid".into()))?;
            return Ok(Some(Identity {
                name: format!("token:{}", found.name),
                groups: Vec::new(),
                access: found.access.clone(),
                via: "token",
            }));
        }
        match self.mode {
            Mode::None => {
                let chosen = c
                    .demo_choice
                    .and_then(|name| self.demo.iter().find(|d| d.name == name).cloned())
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
                if !self.trusted(c.peer) {
                    // Headers from anyone else are ignored, never believed.
                    return Ok(None);
                }
                let Some(user) = c.proxy_user.map(str::trim).filter(|u| !u.is_empty()) else {
                    return Ok(None);
                };
                not_a_token_name(user)?;
                let groups = c
                    .proxy_groups
                    .map(|g| {
                        g.split(',')
                            .map(|s| s.trim().to_string())
                            .filter(|s| !s.is_empty())
                            .collect()
                    })
                    .unwrap_or_default();
                Ok(Some(self.identity(user.to_string(), groups, "proxy")))
            }
            Mode::Oidc => match c.session.and_then(|v| self.session(v)) {
                Some((name, groups)) => {
                    not_a_token_name(&name)?;
                    Ok(Some(self.identity(name, groups, "session")))
                }
                None => Ok(None),
            },
        }
    }

    /// The user and groups of a session value that has not expired, was not signed out,
    /// and whose groups were read from the provider within `auth.groups_max_age`.
    pub fn session(&self, value: &str) -> Option<(String, Vec<String>)> {
        let s: Session = serde_json::from_str(value).ok()?;
        let now = self.now();
        let revoked = self
            .revoked
            .lock()
            .expect("revoked lock")
            .contains_key(&s.id);
        let fresh = now.saturating_sub(s.checked) <= self.groups_max_age.as_secs() as i64;
        (s.expires > now && !s.id.is_empty() && !revoked && fresh).then_some((s.name, s.groups))
    }

    /// Signing out: this session value no longer identifies anyone, whoever replays it.
    /// Returns the sign-in's id and expiry, for the database to keep.
    pub fn revoke(&self, value: &str) -> Option<(String, i64)> {
        let s = serde_json::from_str::<Session>(value).ok()?;
        self.remember_ended([(s.id.clone(), s.expires)]);
        Some((s.id, s.expires))
    }

    /// Sign-ins that ended (id, expiry in Unix seconds): from [`Auth::revoke`], or read back
    /// from the database at start.
    pub fn remember_ended(&self, ended: impl IntoIterator<Item = (String, i64)>) {
        let now = self.now();
        let mut revoked = self.revoked.lock().expect("revoked lock");
        // Forget what has expired anyway.
        revoked.retain(|_, expires| *expires > now);
        revoked.extend(ended.into_iter().filter(|(_, expires)| *expires > now));
    }

    /// The session value of a user who just signed in (kept in an encrypted cookie).
    pub fn session_value(&self, name: String, groups: Vec<String>) -> String {
        let session = Session {
            name,
            groups,
            expires: self.now() + self.ttl.as_secs() as i64,
            id: random_token(),
            checked: self.now(),
        };
        serde_json::to_string(&session).expect("a session serializes")
    }
}

/// Whether a `Host` header names this server in `mode = "none"`: a loopback name or
/// address, or one of `allowed`. Without this, a web page whose name resolves to 127.0.0.1
/// (DNS rebinding) could read and act through a browser on the same machine.
pub fn local_host(host: Option<&str>, allowed: &[String]) -> bool {
    let Some(host) = host.map(str::trim).filter(|h| !h.is_empty()) else {
        return false;
    };
    let port_ok = |port: &str| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit());
    let name = match host.strip_prefix('[') {
        // [::1] or [::1]:8080 — an IPv6 address, and nothing else after the bracket.
        Some(rest) => {
            let Some((inside, after)) = rest.split_once(']') else {
                return false;
            };
            let port = after.is_empty() || after.strip_prefix(':').is_some_and(port_ok);
            if !port || inside.parse::<std::net::Ipv6Addr>().is_err() {
                return false;
            }
            inside
        }
        None => match host.rsplit_once(':') {
            Some((h, port)) if port_ok(port) => h,
            Some(_) => return false,
            None => host,
        },
    }
    .to_ascii_lowercase();
    if name.is_empty() || name.contains(['[', ']', '@', '/', '\\']) {
        return false;
    }
    let loopback = name == "localhost"
        || name.ends_with(".localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    loopback || allowed.contains(&name)
}

/// API tokens act as `token:<name>`; a person may not carry such a name in any case (from
/// the proxy or the identity provider), or they could read that token's action records and
/// sign audit rows as it — or as a look-alike (`TOKEN:prometheus`). Nor may a name hold
/// control characters, which would forge lines in logs and the audit.
pub(crate) fn not_a_token_name(name: &str) -> Result<(), Refused> {
    if name
        .get(..TOKEN_PREFIX.len())
        .is_some_and(|p| p.eq_ignore_ascii_case(TOKEN_PREFIX))
    {
        Err(Refused(format!(
            "the user name {name:?} is reserved: names beginning with \"token:\" (in any case) are API tokens'"
        )))
    } else if name.chars().any(char::is_control) {
        Err(Refused(format!(
            "the user name {:?} holds control characters",
            name.escape_default().to_string()
        )))
    } else {
        Ok(())
    }
}

/// The origin of a URL as browsers send it in `Origin`: lowercase scheme and host, the port
/// only when it is not the scheme's default.
pub fn origin_of(url: &str) -> Option<String> {
    let uri: http::Uri = url.parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let host = uri.host()?.to_ascii_lowercase();
    let default = match scheme.as_str() {
        "https" => 443,
        "http" => 80,
        _ => return None,
    };
    Some(match uri.port_u16().filter(|p| *p != default) {
        Some(port) => format!("{scheme}://{host}:{port}"),
        None => format!("{scheme}://{host}"),
    })
}

/// What API tokens' names begin with.
const TOKEN_PREFIX: &str = "token:";

/// Compares secrets in time that does not depend on where they differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_names_in_any_case_and_control_characters_are_refused() {
        for name in [
            "token:ci",
            "TOKEN:prometheus",
            "ToKeN:x",
            "sue\nadmin",
            "a\u{7f}b",
        ] {
            assert!(not_a_token_name(name).is_err(), "{name:?}");
        }
        for name in ["sue", "tokens:are-fine", "tok", "Zoë", "support engineer"] {
            assert!(not_a_token_name(name).is_ok(), "{name:?}");
        }
    }

    #[test]
    fn only_loopback_names_or_allowed_hosts_are_local() {
        let allowed = vec!["lookout.lab".to_string()];
        for host in [
            "127.0.0.1:8080",
            "localhost",
            "LOCALHOST:3000",
            "[::1]:8080",
            "app.localhost",
            "127.1.2.3",
            "lookout.lab:8080",
        ] {
            assert!(local_host(Some(host), &allowed), "{host}");
        }
        for host in [
            "evil.example",
            "evil.example:8080",
            "127.0.0.1.evil.example",
            "localhost.evil.example",
            "",
            "10.0.0.1:8080",
            "[::1]evil.example",
            "[::1]:8080evil.example",
            "[evil.example]",
            "localhost:",
            "localhost:80:80",
            "evil.example@localhost",
        ] {
            assert!(!local_host(Some(host), &allowed), "{host}");
        }
        assert!(!local_host(None, &allowed));
    }

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
        let view = View::new(&customer, ["zrh-prod", "gva-prod"]);
        assert!(view.sees("zrh-prod", "acme-shop"));
        assert!(!view.sees("zrh-prod", "globex") && !view.sees_cluster("gva-prod"));
        assert!(!view.may_act_anywhere());
        let nobody = auth.access_of(&["nobody".into()]);
        assert!(View::new(&nobody, ["zrh-prod"]).is_empty());
    }

    #[test]
    fn a_session_lasts_until_signed_out_expired_or_its_groups_are_too_old() {
        let auth = Auth::open();
        let value = auth.session_value("carol".into(), vec!["customer-acme".into()]);
        assert_eq!(
            auth.session(&value),
            Some(("carol".to_string(), vec!["customer-acme".to_string()]))
        );
        let now = chrono::Utc::now().timestamp();
        let aged = |checked: i64, expires: i64| {
            serde_json::to_string(&Session {
                name: "carol".into(),
                groups: vec![],
                expires,
                id: "x".into(),
                checked,
            })
            .unwrap()
        };
        assert!(auth.session(&aged(now - 3500, now + 60)).is_some());
        assert!(
            auth.session(&aged(now - 3700, now + 60)).is_none(),
            "groups older than auth.groups_max_age (1 h)"
        );
        assert!(auth.session(&aged(now, now - 1)).is_none(), "expired");
        // Signed out: refused, and remembered for the database until it would expire.
        assert_eq!(auth.revoke(&value).map(|(_, e)| e > now), Some(true));
        assert!(auth.session(&value).is_none());
        // Read back at a start, an ended sign-in is refused; an expired one is not kept.
        let other = Auth::open();
        let fresh = aged(now, now + 60);
        assert!(other.session(&fresh).is_some());
        other.remember_ended([("x".to_string(), now + 60), ("old".to_string(), now - 5)]);
        assert!(other.session(&fresh).is_none());
        assert_eq!(other.revoked.lock().unwrap().len(), 1);
    }
}

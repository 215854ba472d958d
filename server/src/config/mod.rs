//! The configuration: a TOML file, then `LOOKOUT_*` environment overrides, then flags.
//! Every problem is collected, each naming its key, before anything starts.
//!
//! - this module: the types and their defaults; serde parses durations
//!   (`humantime_serde`: `90s`, `15m`, `1h30m`, `7d`) and enums (`auth.mode`, roles);
//! - `env.rs`: which `LOOKOUT_*` variable overrides which key;
//! - `load.rs`: text → [`Config`], reporting every unknown key and wrong value at once;
//! - `validate.rs`: what the types alone cannot say (addresses, URLs, names, combinations).
//!
//! Every key is documented in `docs/configuration.md`.

mod env;
mod load;
#[cfg(test)]
mod tests;
mod validate;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use lookout_app::model::data::ClusterOverrides;
use lookout_app::model::scope::Role;
use lookout_app::model::thresholds::Thresholds;
use serde::Deserialize;

pub use env::ENV_OVERRIDES;
pub use load::{Problem, Problems};

/// Everything `lookout serve` needs.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Address the HTTP server listens on.
    pub listen: String,
    /// The history's database: `sqlite://PATH` (created if missing) or
    /// `postgres://USER@HOST/DATABASE` (the database must exist).
    pub database_url: String,
    /// Hide every action and refuse action API calls.
    pub read_only: bool,
    /// How the actions are sent.
    pub actions: ActionsConfig,
    pub clusters: Vec<ClusterConfig>,
    pub auth: AuthConfig,
    pub access: Vec<AccessRule>,
    /// API bearer tokens for scripts, stored hashed.
    pub tokens: Vec<TokenConfig>,
    /// Thresholds of the health rules.
    pub rules: RulesConfig,
    /// How the watchers behave.
    pub watch: WatchConfig,
    /// The ACME history in SQLite.
    pub history: HistoryConfig,
    /// Limits on the HTTP server's connections.
    pub http: HttpConfig,
    /// What the hosts serve, probed from where Lookout runs.
    pub probe: ProbeConfig,
    /// Who customers contact about what only the platform team can fix.
    pub support: SupportConfig,
}

/// `[support]`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SupportConfig {
    /// Free text shown to readers who see only some namespaces beside a problem only the
    /// platform can fix: a URL (`https://…`, shown as a link), an e-mail address (a
    /// `mailto:` link) or a team's name.
    pub contact: Option<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: "127.0.0.1:8080".into(),
            database_url: "sqlite://lookout.db".into(),
            read_only: false,
            actions: ActionsConfig::default(),
            clusters: Vec::new(),
            auth: AuthConfig::default(),
            access: Vec::new(),
            tokens: Vec::new(),
            rules: RulesConfig::default(),
            watch: WatchConfig::default(),
            history: HistoryConfig::default(),
            http: HttpConfig::default(),
            probe: ProbeConfig::default(),
            support: SupportConfig::default(),
        }
    }
}

/// `[actions]`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ActionsConfig {
    /// Send every request of an action as the person who pressed the button
    /// (`Impersonate-User` and `Impersonate-Group`), so that each cluster's RBAC, admission
    /// and audit log apply to them; Lookout's ServiceAccount then needs `impersonate` on
    /// users and groups instead of write rights.
    pub impersonate: bool,
}

/// `[probe]`: connect to each TLS host on its published load-balancer addresses.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ProbeConfig {
    /// Off: nothing is probed (clusters can also opt out one by one: `clusters[].probe`).
    pub enabled: bool,
    /// How often every host is probed again.
    #[serde(with = "humantime_serde")]
    pub interval: Duration,
    /// The pause between two connections to the same host (its addresses one after another).
    #[serde(with = "humantime_serde")]
    pub spacing: Duration,
    /// Hosts probed at once.
    pub concurrency: usize,
    /// The most one probe (connect, handshake, answer) may take.
    #[serde(with = "humantime_serde")]
    pub timeout: Duration,
    pub https_port: u16,
    pub http_port: u16,
    /// Send a PROXY protocol header first: `off`, `v1` or `v2` (when the load balancers
    /// expect one from every client).
    pub proxy_protocol: ProxySetting,
    /// CIDRs probes may reach; empty: any published address that is not special.
    pub allow: Vec<String>,
    /// CIDRs probes never reach.
    pub deny: Vec<String>,
    /// PEM file of extra trust anchors (a private CA), besides the system's.
    pub ca_file: Option<PathBuf>,
}

/// `probe.proxy_protocol`.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ProxySetting {
    Off,
    V1,
    V2,
}

impl Default for ProbeConfig {
    fn default() -> Self {
        ProbeConfig {
            enabled: true,
            interval: Duration::from_secs(300),
            spacing: Duration::from_millis(100),
            concurrency: 256,
            timeout: Duration::from_secs(5),
            https_port: 443,
            http_port: 80,
            proxy_protocol: ProxySetting::Off,
            allow: Vec::new(),
            deny: Vec::new(),
            ca_file: None,
        }
    }
}

/// `[http]`: what one client may hold of the server.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct HttpConfig {
    /// A request's header must arrive within this; an idle kept-alive connection is closed
    /// after it too.
    #[serde(with = "humantime_serde")]
    pub header_timeout: Duration,
    /// Open connections; beyond, new ones wait in the listen backlog until one closes.
    pub max_connections: usize,
    /// Live-update streams (one per open tab) one identity may hold.
    pub streams_per_identity: usize,
    /// Live-update streams of everyone together.
    pub streams_total: usize,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            header_timeout: Duration::from_secs(30),
            max_connections: 4_096,
            streams_per_identity: 32,
            streams_total: 2_000,
        }
    }
}

/// `[history]`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct HistoryConfig {
    /// How long history is kept.
    #[serde(with = "humantime_serde")]
    pub retention: Duration,
}

impl Default for HistoryConfig {
    fn default() -> Self {
        HistoryConfig {
            retention: Duration::from_secs(180 * 86_400),
        }
    }
}

/// `[rules]`: thresholds of the health rules; unset ones keep [`Thresholds::default`].
#[derive(Debug, Clone, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields, default)]
pub struct RulesConfig {
    #[serde(with = "humantime_serde")]
    pub not_ready_critical_after: Option<Duration>,
    #[serde(with = "humantime_serde")]
    pub challenge_failing_after: Option<Duration>,
    #[serde(with = "humantime_serde")]
    pub challenge_stuck_after: Option<Duration>,
    #[serde(with = "humantime_serde")]
    pub challenge_queued_after: Option<Duration>,
    #[serde(with = "humantime_serde")]
    pub no_address_after: Option<Duration>,
    #[serde(with = "humantime_serde")]
    pub certificate_missing_after: Option<Duration>,
    #[serde(with = "humantime_serde")]
    pub expiry_critical: Option<Duration>,
    /// `0s` or unset: no floor.
    #[serde(with = "humantime_serde")]
    pub expiry_floor: Option<Duration>,
    #[serde(with = "humantime_serde")]
    pub renewal_grace: Option<Duration>,
    #[serde(with = "humantime_serde")]
    pub backoff_min: Option<Duration>,
    #[serde(with = "humantime_serde")]
    pub backoff_max: Option<Duration>,
}

/// `[watch]`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct WatchConfig {
    /// How often a kind whose CRD is absent is looked for again.
    #[serde(with = "humantime_serde")]
    pub crd_recheck_interval: Duration,
    /// How long a list (or discovery) may go unanswered before the kind is in error; the
    /// watch keeps trying.
    #[serde(with = "humantime_serde")]
    pub list_timeout: Duration,
}

impl Default for WatchConfig {
    fn default() -> Self {
        WatchConfig {
            crd_recheck_interval: Duration::from_secs(300),
            list_timeout: Duration::from_secs(60),
        }
    }
}

/// One cluster to watch.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClusterConfig {
    /// Shown in the UI and used in URLs.
    pub name: String,
    /// Path of a kubeconfig file.
    pub kubeconfig: Option<PathBuf>,
    /// Context in that kubeconfig; its current context when absent.
    pub context: Option<String>,
    /// Use the pod's service account instead of a kubeconfig.
    #[serde(default)]
    pub in_cluster: bool,
    /// Overrides Cilium's `enforce-ingress-https` read from the cluster.
    pub enforce_https: Option<bool>,
    /// Overrides Cilium's `enable-ingress-proxy-protocol` read from the cluster.
    pub proxy_protocol: Option<bool>,
    /// Production clusters get `cert.staging-issuer` findings.
    #[serde(default = "yes")]
    pub production: bool,
    /// The Tailscale tailnet its Tailscale Ingresses get names in (`example-tailnet.ts.net`):
    /// its Let's Encrypt budget is shared with every cluster and device of the tailnet.
    pub tailnet: Option<String>,
    /// Probe this cluster's hosts (when `[probe]` is enabled).
    #[serde(default = "yes")]
    pub probe: bool,
}

fn yes() -> bool {
    true
}

impl ClusterConfig {
    /// A cluster reached through a kubeconfig context, with default settings.
    pub fn from_kubeconfig(name: &str, kubeconfig: &Path, context: &str) -> Self {
        ClusterConfig {
            name: name.to_string(),
            kubeconfig: Some(kubeconfig.to_path_buf()),
            context: Some(context.to_string()),
            in_cluster: false,
            enforce_https: None,
            proxy_protocol: None,
            production: true,
            tailnet: None,
            probe: true,
        }
    }

    /// The per-cluster overrides the rules use.
    pub fn overrides(&self) -> ClusterOverrides {
        ClusterOverrides {
            enforce_https: self.enforce_https,
            proxy_protocol: self.proxy_protocol,
            production: self.production,
            tailnet: self
                .tailnet
                .as_deref()
                .map(|t| t.trim_end_matches('.').to_ascii_lowercase()),
        }
    }
}

/// How callers are identified (`auth.mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuthMode {
    /// Nobody signs in; everyone is an admin of everything (the demo, a laptop).
    #[default]
    None,
    /// A reverse proxy in front (oauth2-proxy and the like) names the user and groups in
    /// headers, believed only from `trusted_proxies`.
    Proxy,
    /// Lookout signs users in with an OpenID Connect provider itself.
    Oidc,
}

impl AuthMode {
    /// The value as written in the config.
    pub fn label(self) -> &'static str {
        match self {
            AuthMode::None => "none",
            AuthMode::Proxy => "proxy",
            AuthMode::Oidc => "oidc",
        }
    }
}

/// Who decides what a signed-in person sees and may do (`auth.access_source`).
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum AccessSource {
    /// The `[[access]]` rules.
    #[default]
    Config,
    /// Each cluster's own authorizer, asked with SubjectAccessReviews for the person's user
    /// and groups.
    Kubernetes,
    /// Either: what the rules grant and what the clusters grant, together.
    Both,
}

/// `[auth]`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    pub mode: AuthMode,
    /// CIDRs whose identity headers are believed (`proxy` mode).
    pub trusted_proxies: Vec<String>,
    pub user_header: String,
    /// Comma-separated groups.
    pub groups_header: String,
    /// With `mode = "none"`, allow listening on a non-loopback address anyway.
    pub allow_unauthenticated_remote: bool,
    /// With `mode = "none"`: host names (besides loopback ones) requests may carry in `Host`.
    pub allowed_hosts: Vec<String>,
    /// Base64 of at least 64 random bytes that sign and encrypt session cookies. Without it a
    /// new key is made at every start (everyone signs in again after a restart).
    pub session_key: Option<String>,
    /// How long a sign-in lasts.
    #[serde(with = "humantime_serde")]
    pub session_ttl: Duration,
    /// How old the groups a sign-in read from the provider may get: after this the browser
    /// goes through the provider again (without a form while its session there lasts) and
    /// the groups are read anew.
    #[serde(with = "humantime_serde")]
    pub groups_max_age: Duration,
    /// The URL browsers reach Lookout at (e.g. `https://lookout.example.com`); an `https`
    /// URL makes cookies `Secure`. Needed for `oidc`.
    pub public_url: Option<String>,
    /// `[auth.oidc]`, for `mode = "oidc"`.
    pub oidc: Option<OidcConfig>,
    /// Who decides what a signed-in person sees and may do.
    pub access_source: AccessSource,
    /// How long a cluster's answer about one person is used (`kubernetes`, `both`).
    #[serde(with = "humantime_serde")]
    pub access_ttl: Duration,
    /// How many access reviews Lookout has in flight at once, over all clusters.
    pub access_reviews_in_flight: usize,
}

impl Default for AuthConfig {
    fn default() -> Self {
        AuthConfig {
            mode: AuthMode::None,
            trusted_proxies: Vec::new(),
            user_header: "X-Forwarded-User".into(),
            groups_header: "X-Forwarded-Groups".into(),
            allow_unauthenticated_remote: false,
            allowed_hosts: Vec::new(),
            session_key: None,
            session_ttl: Duration::from_secs(12 * 3600),
            groups_max_age: Duration::from_secs(3600),
            public_url: None,
            oidc: None,
            access_source: AccessSource::Config,
            access_ttl: Duration::from_secs(60),
            access_reviews_in_flight: 32,
        }
    }
}

/// `[auth.oidc]`: an OpenID Connect provider (authorization code flow with PKCE).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OidcConfig {
    /// The issuer; its `/.well-known/openid-configuration` is read at start.
    pub issuer_url: String,
    pub client_id: String,
    /// Empty or absent for a public client (PKCE alone).
    pub client_secret: Option<String>,
    /// The ID-token claim that lists the user's groups.
    #[serde(default = "default_groups_claim")]
    pub groups_claim: String,
    /// Scopes asked for besides `openid`.
    #[serde(default = "default_scopes")]
    pub scopes: Vec<String>,
}

fn default_groups_claim() -> String {
    "groups".into()
}

fn default_scopes() -> Vec<String> {
    vec!["profile".into(), "email".into()]
}

/// `[[tokens]]`: a bearer token for the API, with its role and scope.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    /// Shown in the audit log as the actor (`token:NAME`).
    pub name: String,
    /// Hex SHA-256 of the token (`printf %s TOKEN | sha256sum`).
    pub sha256: String,
    pub role: Role,
    #[serde(default = "everything")]
    pub clusters: Vec<String>,
    #[serde(default = "everything")]
    pub namespaces: Vec<String>,
}

/// `[[access]]`: groups → role × scope.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AccessRule {
    pub groups: Vec<String>,
    pub role: Role,
    #[serde(default = "everything")]
    pub clusters: Vec<String>,
    #[serde(default = "everything")]
    pub namespaces: Vec<String>,
}

fn everything() -> Vec<String> {
    vec!["*".into()]
}

impl Config {
    /// The rule thresholds: the defaults, overridden by `[rules]` (checked by `validate`).
    pub fn thresholds(&self) -> Thresholds {
        let mut t = Thresholds::default();
        let r = &self.rules;
        for (value, slot) in [
            (r.not_ready_critical_after, &mut t.not_ready_critical_after),
            (r.challenge_failing_after, &mut t.challenge_failing_after),
            (r.challenge_stuck_after, &mut t.challenge_stuck_after),
            (r.challenge_queued_after, &mut t.challenge_queued_after),
            (r.no_address_after, &mut t.no_address_after),
            (
                r.certificate_missing_after,
                &mut t.certificate_missing_after,
            ),
            (r.expiry_critical, &mut t.expiry_critical),
            (r.renewal_grace, &mut t.renewal_grace),
            (r.backoff_min, &mut t.backoff_min),
            (r.backoff_max, &mut t.backoff_max),
        ] {
            if let Some(v) = value.and_then(|v| chrono::Duration::from_std(v).ok()) {
                *slot = v;
            }
        }
        t.expiry_floor = r
            .expiry_floor
            .filter(|d| !d.is_zero())
            .and_then(|d| chrono::Duration::from_std(d).ok());
        t
    }

    /// `history.retention` as the history counts it.
    pub fn history_retention(&self) -> chrono::Duration {
        chrono::Duration::from_std(self.history.retention).unwrap_or(chrono::Duration::MAX)
    }

    /// The listen address (validated).
    pub fn listen_addr(&self) -> SocketAddr {
        self.listen.parse().expect("validated at load")
    }
}

/// Parses `a.b.c.d/n` or an IPv6 CIDR.
pub fn parse_cidr(s: &str) -> Option<(std::net::IpAddr, u8)> {
    let (ip, len) = s.split_once('/')?;
    let ip: std::net::IpAddr = ip.parse().ok()?;
    let len: u8 = len.parse().ok()?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    (len <= max).then_some((ip, len))
}

//! The configuration: a TOML file, then `LOOKOUT_*` environment overrides, then flags.
//! Validation collects every problem, each naming its key, before anything starts.

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use lookout_app::model::data::ClusterOverrides;
use lookout_app::model::thresholds::{parse_duration, Thresholds};
use serde::Deserialize;

/// Everything `lookout serve` needs.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Address the HTTP server listens on.
    #[serde(default = "default_listen")]
    pub listen: String,
    /// `sqlite://PATH` of the history database (created if missing).
    #[serde(default = "default_database_url")]
    pub database_url: String,
    /// Hide every action and refuse action API calls.
    #[serde(default)]
    pub read_only: bool,
    #[serde(default)]
    pub clusters: Vec<ClusterConfig>,
    #[serde(default)]
    pub auth: AuthConfig,
    #[serde(default)]
    pub access: Vec<AccessRule>,
    /// API bearer tokens for scripts, stored hashed.
    #[serde(default)]
    pub tokens: Vec<TokenConfig>,
    /// Thresholds of the health rules.
    #[serde(default)]
    pub rules: RulesConfig,
    /// How the watchers behave.
    #[serde(default)]
    pub watch: WatchConfig,
    /// The ACME history in SQLite.
    #[serde(default)]
    pub history: HistoryConfig,
}

/// `[history]`.
#[derive(Debug, Clone, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct HistoryConfig {
    /// How long history is kept (default `180d`).
    pub retention: Option<String>,
}

/// `[rules]`: thresholds as durations like `90s`, `15m`, `1h`, `7d`.
#[derive(Debug, Clone, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct RulesConfig {
    pub not_ready_critical_after: Option<String>,
    pub challenge_failing_after: Option<String>,
    pub challenge_stuck_after: Option<String>,
    pub no_address_after: Option<String>,
    pub expiry_critical: Option<String>,
    pub expiry_floor: Option<String>,
    pub renewal_grace: Option<String>,
    pub backoff_min: Option<String>,
    pub backoff_max: Option<String>,
}

/// `[watch]`.
#[derive(Debug, Clone, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct WatchConfig {
    /// How often a kind whose CRD is absent is looked for again (default `5m`).
    pub crd_recheck_interval: Option<String>,
    /// How long a list (or discovery) may go unanswered before the kind is in error
    /// (default `60s`); the watch keeps trying.
    pub list_timeout: Option<String>,
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
    /// Production clusters get `cert.staging-issuer` findings (default true).
    #[serde(default = "yes")]
    pub production: bool,
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
        }
    }

    /// The per-cluster overrides the rules use.
    pub fn overrides(&self) -> ClusterOverrides {
        ClusterOverrides {
            enforce_https: self.enforce_https,
            proxy_protocol: self.proxy_protocol,
            production: self.production,
        }
    }
}

/// How callers are identified.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    /// `none`, `proxy` or `oidc`.
    #[serde(default = "default_auth_mode")]
    pub mode: String,
    /// CIDRs whose identity headers are believed (`proxy` mode).
    #[serde(default)]
    pub trusted_proxies: Vec<String>,
    #[serde(default = "default_user_header")]
    pub user_header: String,
    /// Comma-separated groups.
    #[serde(default = "default_groups_header")]
    pub groups_header: String,
    /// With `mode = "none"`, allow listening on a non-loopback address anyway.
    #[serde(default)]
    pub allow_unauthenticated_remote: bool,
    /// Base64 of at least 64 random bytes that sign and encrypt session cookies. Without it a
    /// new key is made at every start (everyone signs in again after a restart).
    pub session_key: Option<String>,
    /// How long a sign-in lasts (default `12h`).
    pub session_ttl: Option<String>,
    /// The URL browsers reach Lookout at (e.g. `https://lookout.example.com`); an `https`
    /// URL makes cookies `Secure`. Needed for `oidc`.
    pub public_url: Option<String>,
    /// `[auth.oidc]`, for `mode = "oidc"`.
    pub oidc: Option<OidcConfig>,
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
    /// The ID-token claim that lists the user's groups (default `groups`).
    #[serde(default = "default_groups_claim")]
    pub groups_claim: String,
    /// Scopes asked for besides `openid` (default `profile`, `email`).
    #[serde(default = "default_scopes")]
    pub scopes: Vec<String>,
}

/// `[[tokens]]`: a bearer token for the API, with its role and scope.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    /// Shown in the audit log as the actor (`token:NAME`).
    pub name: String,
    /// Hex SHA-256 of the token (`printf %s TOKEN | sha256sum`).
    pub sha256: String,
    pub role: String,
    #[serde(default = "everything")]
    pub clusters: Vec<String>,
    #[serde(default = "everything")]
    pub namespaces: Vec<String>,
}

impl Default for AuthConfig {
    fn default() -> Self {
        AuthConfig {
            mode: default_auth_mode(),
            trusted_proxies: Vec::new(),
            user_header: default_user_header(),
            groups_header: default_groups_header(),
            allow_unauthenticated_remote: false,
            session_key: None,
            session_ttl: None,
            public_url: None,
            oidc: None,
        }
    }
}

/// Groups → role × scope.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AccessRule {
    pub groups: Vec<String>,
    /// `viewer`, `operator` or `admin`.
    pub role: String,
    #[serde(default = "everything")]
    pub clusters: Vec<String>,
    #[serde(default = "everything")]
    pub namespaces: Vec<String>,
}

fn default_listen() -> String {
    "127.0.0.1:8080".into()
}
fn default_database_url() -> String {
    "sqlite://lookout.db".into()
}
fn default_groups_claim() -> String {
    "groups".into()
}
fn default_scopes() -> Vec<String> {
    vec!["profile".into(), "email".into()]
}
fn default_auth_mode() -> String {
    "none".into()
}
fn default_user_header() -> String {
    "X-Forwarded-User".into()
}
fn default_groups_header() -> String {
    "X-Forwarded-Groups".into()
}
fn everything() -> Vec<String> {
    vec!["*".into()]
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: default_listen(),
            database_url: default_database_url(),
            read_only: false,
            clusters: Vec::new(),
            auth: AuthConfig::default(),
            access: Vec::new(),
            tokens: Vec::new(),
            rules: RulesConfig::default(),
            watch: WatchConfig::default(),
            history: HistoryConfig::default(),
        }
    }
}

/// One thing wrong with the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The key, e.g. `clusters[1].context` or `LOOKOUT_LISTEN`.
    pub key: String,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.key, self.message)
    }
}

/// Every problem found, for `check-config` and a refused `serve`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problems(pub Vec<Problem>);

impl fmt::Display for Problems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for p in &self.0 {
            writeln!(f, "  {p}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Problems {}

fn problem(key: impl Into<String>, message: impl Into<String>) -> Problem {
    Problem {
        key: key.into(),
        message: message.into(),
    }
}

/// The keys each table accepts, for reporting every unknown key at once.
const TOP_KEYS: &[&str] = &[
    "listen",
    "database_url",
    "read_only",
    "clusters",
    "auth",
    "access",
    "tokens",
    "rules",
    "watch",
    "history",
];
const CLUSTER_KEYS: &[&str] = &[
    "name",
    "kubeconfig",
    "context",
    "in_cluster",
    "enforce_https",
    "proxy_protocol",
    "production",
];
const RULES_KEYS: &[&str] = &[
    "not_ready_critical_after",
    "challenge_failing_after",
    "challenge_stuck_after",
    "no_address_after",
    "expiry_critical",
    "expiry_floor",
    "renewal_grace",
    "backoff_min",
    "backoff_max",
];
const WATCH_KEYS: &[&str] = &["crd_recheck_interval", "list_timeout"];
const HISTORY_KEYS: &[&str] = &["retention"];
const AUTH_KEYS: &[&str] = &[
    "mode",
    "trusted_proxies",
    "user_header",
    "groups_header",
    "allow_unauthenticated_remote",
    "session_key",
    "session_ttl",
    "public_url",
    "oidc",
];
const OIDC_KEYS: &[&str] = &[
    "issuer_url",
    "client_id",
    "client_secret",
    "groups_claim",
    "scopes",
];
const TOKEN_KEYS: &[&str] = &["name", "sha256", "role", "clusters", "namespaces"];
const ACCESS_KEYS: &[&str] = &["groups", "role", "clusters", "namespaces"];

/// The environment variables that override keys.
pub const ENV_KEYS: &[(&str, &str)] = &[
    ("LOOKOUT_LISTEN", "listen"),
    ("LOOKOUT_DATABASE_URL", "database_url"),
    ("LOOKOUT_READ_ONLY", "read_only"),
    ("LOOKOUT_AUTH_MODE", "auth.mode"),
];

/// Environment variables with the `LOOKOUT_` prefix that are not config overrides.
const ENV_OTHER: &[&str] = &["LOOKOUT_LOG", "LOOKOUT_CONFIG"];

fn unknown_keys(table: &toml::Table, allowed: &[&str], prefix: &str, out: &mut Vec<Problem>) {
    for key in table.keys() {
        if !allowed.contains(&key.as_str()) {
            out.push(problem(
                format!("{prefix}{key}"),
                format!("unknown key (expected one of: {})", allowed.join(", ")),
            ));
        }
    }
}

fn check_unknown(doc: &toml::Table, out: &mut Vec<Problem>) {
    unknown_keys(doc, TOP_KEYS, "", out);
    let tables = |key: &str| -> Vec<toml::Table> {
        match doc.get(key) {
            Some(toml::Value::Array(a)) => a.iter().filter_map(|v| v.as_table().cloned()).collect(),
            _ => Vec::new(),
        }
    };
    for (i, t) in tables("clusters").iter().enumerate() {
        unknown_keys(t, CLUSTER_KEYS, &format!("clusters[{i}]."), out);
    }
    for (i, t) in tables("access").iter().enumerate() {
        unknown_keys(t, ACCESS_KEYS, &format!("access[{i}]."), out);
    }
    for (i, t) in tables("tokens").iter().enumerate() {
        unknown_keys(t, TOKEN_KEYS, &format!("tokens[{i}]."), out);
    }
    if let Some(toml::Value::Table(oidc)) = doc
        .get("auth")
        .and_then(|a| a.as_table())
        .and_then(|a| a.get("oidc"))
    {
        unknown_keys(oidc, OIDC_KEYS, "auth.oidc.", out);
    }
    for (table, keys) in [
        ("auth", AUTH_KEYS),
        ("rules", RULES_KEYS),
        ("watch", WATCH_KEYS),
        ("history", HISTORY_KEYS),
    ] {
        if let Some(toml::Value::Table(t)) = doc.get(table) {
            unknown_keys(t, keys, &format!("{table}."), out);
        }
    }
}

impl Config {
    /// Sign-in settings: OIDC, the session key and lifetime, the public URL, tokens.
    fn check_auth(&self, out: &mut Vec<Problem>) {
        let a = &self.auth;
        if a.mode == "oidc" {
            match &a.oidc {
                None => out.push(problem(
                    "auth.oidc",
                    "mode \"oidc\" needs an [auth.oidc] table with issuer_url and client_id",
                )),
                Some(o) => {
                    if !(o.issuer_url.starts_with("https://")
                        || o.issuer_url.starts_with("http://"))
                    {
                        out.push(problem(
                            "auth.oidc.issuer_url",
                            format!("{:?} is not an http(s) URL", o.issuer_url),
                        ));
                    }
                    if o.client_id.trim().is_empty() {
                        out.push(problem("auth.oidc.client_id", "must not be empty"));
                    }
                }
            }
            if a.public_url.is_none() {
                out.push(problem("auth.public_url", "mode \"oidc\" needs the URL browsers reach Lookout at (for the redirect back from the provider)"));
            }
        }
        if let Some(url) = &a.public_url {
            if !(url.starts_with("https://") || url.starts_with("http://")) {
                out.push(problem(
                    "auth.public_url",
                    format!("{url:?} is not an http(s) URL"),
                ));
            }
        }
        if let Some(key) = &a.session_key {
            use base64::Engine;
            match base64::engine::general_purpose::STANDARD.decode(key.trim()) {
                Ok(bytes) if bytes.len() >= 64 => {}
                Ok(bytes) => out.push(problem("auth.session_key", format!("decodes to {} bytes; at least 64 are needed (e.g. head -c 64 /dev/urandom | base64 -w0)", bytes.len()))),
                Err(_) => out.push(problem("auth.session_key", "is not base64")),
            }
        }
        if let Some(ttl) = &a.session_ttl {
            if parse_duration(ttl).is_err() {
                out.push(problem(
                    "auth.session_ttl",
                    format!("{ttl:?} is not a duration like 12h"),
                ));
            }
        }
        for (i, t) in self.tokens.iter().enumerate() {
            if t.sha256.len() != 64 || !t.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
                out.push(problem(
                    format!("tokens[{i}].sha256"),
                    "must be 64 hex digits (printf %s TOKEN | sha256sum)",
                ));
            }
            if !["viewer", "operator", "admin"].contains(&t.role.as_str()) {
                out.push(problem(
                    format!("tokens[{i}].role"),
                    format!(
                        "{:?} is not one of \"viewer\", \"operator\", \"admin\"",
                        t.role
                    ),
                ));
            }
            if t.name.trim().is_empty() {
                out.push(problem(format!("tokens[{i}].name"), "must not be empty"));
            }
        }
    }

    /// Parses TOML text and the given environment; every problem is reported.
    pub fn parse(text: &str, env: &[(String, String)]) -> Result<Config, Problems> {
        let mut problems = Vec::new();
        let mut doc: toml::Table = match text.parse() {
            Ok(d) => d,
            Err(e) => {
                return Err(Problems(vec![problem(
                    "(file)",
                    format!("not valid TOML: {e}"),
                )]))
            }
        };
        check_unknown(&doc, &mut problems);
        apply_env(&mut doc, env, &mut problems);
        if !problems.is_empty() {
            return Err(Problems(problems));
        }
        let config: Config = match serde_path_to_error::deserialize(toml::Value::Table(doc)) {
            Ok(c) => c,
            Err(e) => {
                let key = e.path().to_string();
                return Err(Problems(vec![problem(
                    key,
                    e.into_inner().message().to_string(),
                )]));
            }
        };
        config.validate()?;
        Ok(config)
    }

    /// Reads and parses a file with the process environment.
    pub fn load(path: &Path) -> Result<Config, Problems> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Problems(vec![problem(
                "(file)",
                format!("cannot read {}: {e}", path.display()),
            )])
        })?;
        let env: Vec<(String, String)> = std::env::vars()
            .filter(|(k, _)| k.starts_with("LOOKOUT_"))
            .collect();
        Config::parse(&text, &env)
    }

    /// Checks what the types alone cannot.
    pub fn validate(&self) -> Result<(), Problems> {
        let mut out = Vec::new();
        if let Err(e) = self.listen.parse::<SocketAddr>() {
            out.push(problem(
                "listen",
                format!(
                    "{:?} is not an address like 127.0.0.1:8080 ({e})",
                    self.listen
                ),
            ));
        }
        if !self.database_url.starts_with("sqlite:") {
            out.push(problem(
                "database_url",
                format!(
                    "{:?} must start with sqlite: (e.g. sqlite:///var/lib/lookout/lookout.db)",
                    self.database_url
                ),
            ));
        }
        let mut seen = Vec::new();
        for (i, c) in self.clusters.iter().enumerate() {
            let key = |k: &str| format!("clusters[{i}].{k}");
            if c.name.is_empty()
                || !c
                    .name
                    .chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || ch == '-' || ch == '_' || ch == '.')
            {
                out.push(problem(key("name"), format!("{:?} must be non-empty and use only letters, digits, '-', '_' and '.' (it is part of URLs)", c.name)));
            }
            if seen.contains(&&c.name) {
                out.push(problem(
                    key("name"),
                    format!("{:?} is used by another cluster", c.name),
                ));
            }
            seen.push(&c.name);
            match (&c.kubeconfig, c.in_cluster) {
                (Some(_), true) => out.push(problem(
                    key("in_cluster"),
                    "set either kubeconfig (with context) or in_cluster = true, not both",
                )),
                (None, false) => out.push(problem(
                    key("kubeconfig"),
                    "missing: set kubeconfig (with context) or in_cluster = true",
                )),
                (Some(p), false) if !p.exists() => out.push(problem(
                    key("kubeconfig"),
                    format!("{} does not exist", p.display()),
                )),
                _ => {}
            }
            if c.in_cluster && c.context.is_some() {
                out.push(problem(
                    key("context"),
                    "context applies only to a kubeconfig, not to in_cluster",
                ));
            }
        }
        if !["none", "proxy", "oidc"].contains(&self.auth.mode.as_str()) {
            out.push(problem(
                "auth.mode",
                format!(
                    "{:?} is not one of \"none\", \"proxy\", \"oidc\"",
                    self.auth.mode
                ),
            ));
        }
        for (i, cidr) in self.auth.trusted_proxies.iter().enumerate() {
            if parse_cidr(cidr).is_none() {
                out.push(problem(
                    format!("auth.trusted_proxies[{i}]"),
                    format!("{cidr:?} is not a CIDR like 10.0.0.0/8"),
                ));
            }
        }
        if self.auth.mode == "proxy" && self.auth.trusted_proxies.is_empty() {
            out.push(problem(
                "auth.trusted_proxies",
                "proxy mode needs at least one trusted proxy address",
            ));
        }
        for (i, rule) in self.access.iter().enumerate() {
            if !["viewer", "operator", "admin"].contains(&rule.role.as_str()) {
                out.push(problem(
                    format!("access[{i}].role"),
                    format!(
                        "{:?} is not one of \"viewer\", \"operator\", \"admin\"",
                        rule.role
                    ),
                ));
            }
            if rule.groups.is_empty() {
                out.push(problem(
                    format!("access[{i}].groups"),
                    "must name at least one group",
                ));
            }
        }
        self.check_auth(&mut out);
        if let Err(p) = self.thresholds() {
            out.extend(p.0);
        }
        if let Err(p) = self.crd_recheck_interval() {
            out.extend(p.0);
        }
        if let Err(p) = self.list_timeout() {
            out.extend(p.0);
        }
        if let Err(p) = self.history_retention() {
            out.extend(p.0);
        }
        if out.is_empty() {
            Ok(())
        } else {
            Err(Problems(out))
        }
    }

    /// The rule thresholds, defaults filled in.
    pub fn thresholds(&self) -> Result<Thresholds, Problems> {
        let mut t = Thresholds::default();
        let mut out = Vec::new();
        let r = &self.rules;
        let mut set = |key: &str, value: &Option<String>, slot: &mut chrono::Duration| {
            if let Some(v) = value {
                match parse_duration(v) {
                    Ok(d) => *slot = d,
                    Err(e) => out.push(problem(format!("rules.{key}"), e)),
                }
            }
        };
        set(
            "not_ready_critical_after",
            &r.not_ready_critical_after,
            &mut t.not_ready_critical_after,
        );
        set(
            "challenge_failing_after",
            &r.challenge_failing_after,
            &mut t.challenge_failing_after,
        );
        set(
            "challenge_stuck_after",
            &r.challenge_stuck_after,
            &mut t.challenge_stuck_after,
        );
        set(
            "no_address_after",
            &r.no_address_after,
            &mut t.no_address_after,
        );
        set(
            "expiry_critical",
            &r.expiry_critical,
            &mut t.expiry_critical,
        );
        set("renewal_grace", &r.renewal_grace, &mut t.renewal_grace);
        set("backoff_min", &r.backoff_min, &mut t.backoff_min);
        set("backoff_max", &r.backoff_max, &mut t.backoff_max);
        let mut floor = chrono::Duration::zero();
        set("expiry_floor", &r.expiry_floor, &mut floor);
        if r.expiry_floor.is_some() && floor > chrono::Duration::zero() {
            t.expiry_floor = Some(floor);
        }
        if out.is_empty() {
            Ok(t)
        } else {
            Err(Problems(out))
        }
    }

    /// `watch.crd_recheck_interval`, default 5 minutes.
    pub fn crd_recheck_interval(&self) -> Result<std::time::Duration, Problems> {
        positive_duration(
            "watch.crd_recheck_interval",
            self.watch.crd_recheck_interval.as_deref(),
            300,
        )
    }

    /// `watch.list_timeout`, default 60 seconds.
    pub fn list_timeout(&self) -> Result<std::time::Duration, Problems> {
        positive_duration("watch.list_timeout", self.watch.list_timeout.as_deref(), 60)
    }

    /// `history.retention`, default 180 days.
    pub fn history_retention(&self) -> Result<chrono::Duration, Problems> {
        match &self.history.retention {
            None => Ok(chrono::Duration::days(180)),
            Some(v) => parse_duration(v)
                .ok()
                .filter(|d| *d > chrono::Duration::zero())
                .ok_or_else(|| {
                    Problems(vec![problem(
                        "history.retention",
                        format!("{v:?} is not a positive duration like 180d"),
                    )])
                }),
        }
    }

    /// The listen address (validated).
    pub fn listen_addr(&self) -> SocketAddr {
        self.listen.parse().expect("validated at load")
    }
}

fn apply_env(doc: &mut toml::Table, env: &[(String, String)], out: &mut Vec<Problem>) {
    for (name, value) in env {
        let Some((_, key)) = ENV_KEYS.iter().find(|(n, _)| n == name) else {
            if name.starts_with("LOOKOUT_") && !ENV_OTHER.contains(&name.as_str()) {
                let known: Vec<&str> = ENV_KEYS
                    .iter()
                    .map(|(n, _)| *n)
                    .chain(ENV_OTHER.iter().copied())
                    .collect();
                out.push(problem(
                    name.clone(),
                    format!("unknown environment override (known: {})", known.join(", ")),
                ));
            }
            continue;
        };
        let parsed = match *key {
            "read_only" => match value.as_str() {
                "true" | "1" => toml::Value::Boolean(true),
                "false" | "0" => toml::Value::Boolean(false),
                _ => {
                    out.push(problem(
                        name.clone(),
                        format!("{value:?} is not true or false"),
                    ));
                    continue;
                }
            },
            _ => toml::Value::String(value.clone()),
        };
        match key.split_once('.') {
            Some((table, field)) => {
                let t = doc
                    .entry(table)
                    .or_insert_with(|| toml::Value::Table(Default::default()));
                if let Some(t) = t.as_table_mut() {
                    t.insert(field.to_string(), parsed);
                }
            }
            None => {
                doc.insert(key.to_string(), parsed);
            }
        }
    }
}

/// Parses `a.b.c.d/n` or an IPv6 CIDR.
/// A positive duration setting (`30s`, `5m`), `default_secs` when unset.
fn positive_duration(
    key: &str,
    value: Option<&str>,
    default_secs: u64,
) -> Result<std::time::Duration, Problems> {
    match value {
        None => Ok(std::time::Duration::from_secs(default_secs)),
        Some(v) => parse_duration(v)
            .ok()
            .and_then(|d| d.to_std().ok())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| {
                Problems(vec![problem(
                    key,
                    format!("{v:?} is not a positive duration like 30s or 5m"),
                )])
            }),
    }
}

pub fn parse_cidr(s: &str) -> Option<(std::net::IpAddr, u8)> {
    let (ip, len) = s.split_once('/')?;
    let ip: std::net::IpAddr = ip.parse().ok()?;
    let len: u8 = len.parse().ok()?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    (len <= max).then_some((ip, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_design_example_parses() {
        let text = r#"
listen = "127.0.0.1:8080"
database_url = "sqlite:///var/lib/lookout/lookout.db"
read_only = false

[[clusters]]
name = "zrh-prod"
in_cluster = true

[auth]
mode = "proxy"
trusted_proxies = ["127.0.0.1/32"]
user_header = "X-Forwarded-User"
groups_header = "X-Forwarded-Groups"

[[access]]
groups = ["support"]
role = "operator"
clusters = ["*"]
namespaces = ["*"]
"#;
        let c = Config::parse(text, &[]).unwrap();
        assert_eq!(c.clusters[0].name, "zrh-prod");
        assert!(c.clusters[0].production);
        assert_eq!(c.thresholds().unwrap(), Thresholds::default());
        assert_eq!(c.auth.mode, "proxy");
        assert_eq!(c.access[0].role, "operator");
    }

    #[test]
    fn every_unknown_key_is_reported_with_its_path() {
        let text = "lisen = \"x\"\n[[clusters]]\nname = \"a\"\nin_cluster = true\nkube_config = \"x\"\n[auth]\nmood = \"none\"\n";
        let err = Config::parse(text, &[]).unwrap_err();
        let keys: Vec<&str> = err.0.iter().map(|p| p.key.as_str()).collect();
        assert_eq!(keys, vec!["lisen", "clusters[0].kube_config", "auth.mood"]);
    }

    #[test]
    fn semantic_problems_name_their_keys() {
        let text = "listen = \"nope\"\ndatabase_url = \"postgres://x\"\n[[clusters]]\nname = \"a b\"\n[[clusters]]\nname = \"c\"\nin_cluster = true\ncontext = \"x\"\n[[access]]\ngroups = []\nrole = \"root\"\n";
        let err = Config::parse(text, &[]).unwrap_err();
        let keys: Vec<&str> = err.0.iter().map(|p| p.key.as_str()).collect();
        assert_eq!(
            keys,
            vec![
                "listen",
                "database_url",
                "clusters[0].name",
                "clusters[0].kubeconfig",
                "clusters[1].context",
                "access[0].role",
                "access[0].groups"
            ]
        );
    }

    #[test]
    fn environment_overrides_the_file_and_unknown_overrides_are_problems() {
        let c = Config::parse(
            "listen = \"127.0.0.1:1\"\n",
            &env(&[
                ("LOOKOUT_LISTEN", "127.0.0.1:2"),
                ("LOOKOUT_READ_ONLY", "true"),
            ]),
        )
        .unwrap();
        assert_eq!(c.listen, "127.0.0.1:2");
        assert!(c.read_only);
        let err = Config::parse("", &env(&[("LOOKOUT_LISTN", "x")])).unwrap_err();
        assert_eq!(err.0[0].key, "LOOKOUT_LISTN");
    }

    #[test]
    fn rule_thresholds_and_watch_settings_are_durations() {
        let c = Config::parse("[rules]\nchallenge_stuck_after = \"30m\"\nexpiry_floor = \"10d\"\n[watch]\ncrd_recheck_interval = \"30s\"\nlist_timeout = \"15s\"\n", &[]).unwrap();
        let t = c.thresholds().unwrap();
        assert_eq!(t.challenge_stuck_after, chrono::Duration::minutes(30));
        assert_eq!(t.expiry_floor, Some(chrono::Duration::days(10)));
        assert_eq!(
            c.crd_recheck_interval().unwrap(),
            std::time::Duration::from_secs(30)
        );
        assert_eq!(
            c.list_timeout().unwrap(),
            std::time::Duration::from_secs(15)
        );
        let err = Config::parse("[watch]\nlist_timeout = \"0s\"\n", &[]).unwrap_err();
        assert_eq!(err.0[0].key, "watch.list_timeout");
        let err = Config::parse("[rules]\nbackoff_min = \"soon\"\nbogus = 1\n", &[]).unwrap_err();
        assert_eq!(err.0[0].key, "rules.bogus");
        let err = Config::parse("[rules]\nbackoff_min = \"soon\"\n", &[]).unwrap_err();
        assert_eq!(err.0[0].key, "rules.backoff_min");
    }

    #[test]
    fn wrong_types_and_bad_toml_are_explained() {
        let err = Config::parse("read_only = \"yes\"\n", &[]).unwrap_err();
        assert_eq!(err.0[0].key, "read_only");
        assert!(err.0[0].message.contains("bool"), "{}", err.0[0].message);
        let err = Config::parse("[[clusters]]\nname = 5\n", &[]).unwrap_err();
        assert_eq!(err.0[0].key, "clusters[0].name");
        let err = Config::parse("listen = \n", &[]).unwrap_err();
        assert!(err.0[0].message.contains("not valid TOML"));
    }

    #[test]
    fn sign_in_settings_are_checked_and_named() {
        let text = r#"
[auth]
mode = "oidc"
session_key = "c2hvcnQ="
session_ttl = "forever"
[auth.oidc]
issuer_url = "ldap://x"
client_id = ""
[[tokens]]
name = "ci"
sha256 = "abc"
role = "root"
"#;
        let err = Config::parse(text, &[]).unwrap_err();
        let keys: Vec<&str> = err.0.iter().map(|p| p.key.as_str()).collect();
        for key in [
            "auth.oidc.issuer_url",
            "auth.oidc.client_id",
            "auth.public_url",
            "auth.session_key",
            "auth.session_ttl",
            "tokens[0].sha256",
            "tokens[0].role",
        ] {
            assert!(keys.contains(&key), "{key} is not reported: {keys:?}");
        }
        let ok = format!(
            "[auth]\nmode = \"oidc\"\npublic_url = \"https://lookout.example.com\"\n[auth.oidc]\nissuer_url = \"https://login.example.com\"\nclient_id = \"lookout\"\n[[tokens]]\nname = \"ci\"\nsha256 = \"{}\"\nrole = \"viewer\"\n",
            "a".repeat(64)
        );
        let c = Config::parse(&ok, &[]).unwrap();
        let typo = Config::parse(&ok.replace("client_id", "cliend_id"), &[]).unwrap_err();
        assert_eq!(typo.0[0].key, "auth.oidc.cliend_id");
        assert_eq!(c.auth.oidc.unwrap().groups_claim, "groups");
        assert_eq!(c.tokens[0].namespaces, vec!["*".to_string()]);
    }
}

#[cfg(test)]
mod fuzz {
    //! Config files made of the real keys with values of any type, and arbitrary text: parsing
    //! answers a config or named problems, never a panic.

    use proptest::prelude::*;

    use super::*;

    fn leaf() -> impl Strategy<Value = toml::Value> {
        prop_oneof![
            any::<bool>().prop_map(toml::Value::Boolean),
            any::<i64>().prop_map(toml::Value::Integer),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(toml::Value::Float),
            prop::sample::select(vec![
                "5m",
                "-1s",
                "0s",
                "90d",
                "1y",
                "abc",
                "",
                "none",
                "proxy",
                "oidc",
                "viewer",
                "operator",
                "admin",
                "127.0.0.1:8080",
                "0.0.0.0:0",
                "[::1]:80",
                "10.0.0.0/8",
                "300.1.1.1/40",
                "sqlite:///tmp/x.db",
                "https://idp.example",
                "http://",
                "zrh-*",
                "*",
                "acme-?",
                "0123456789abcdef",
                "bücher",
            ])
            .prop_map(|s| toml::Value::String(s.into())),
            "\\PC{0,24}".prop_map(toml::Value::String),
        ]
    }

    fn value() -> impl Strategy<Value = toml::Value> {
        prop_oneof![
            4 => leaf(),
            1 => prop::collection::vec(leaf(), 0..3).prop_map(toml::Value::Array),
        ]
    }

    fn table(keys: &'static [&'static str]) -> impl Strategy<Value = toml::Table> {
        prop::collection::vec(
            (prop::sample::select(keys), value()),
            0..keys.len().min(6) + 1,
        )
        .prop_map(|kv| kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
    }

    fn tables(keys: &'static [&'static str]) -> impl Strategy<Value = toml::Value> {
        prop::collection::vec(table(keys), 0..3)
            .prop_map(|ts| toml::Value::Array(ts.into_iter().map(toml::Value::Table).collect()))
    }

    fn document() -> impl Strategy<Value = toml::Table> {
        (
            table(TOP_KEYS),
            tables(CLUSTER_KEYS),
            tables(ACCESS_KEYS),
            tables(TOKEN_KEYS),
            (table(AUTH_KEYS), table(OIDC_KEYS)),
            (table(RULES_KEYS), table(WATCH_KEYS), table(HISTORY_KEYS)),
        )
            .prop_map(
                |(mut doc, clusters, access, tokens, (mut auth, oidc), (rules, watch, history))| {
                    doc.insert("clusters".into(), clusters);
                    doc.insert("access".into(), access);
                    doc.insert("tokens".into(), tokens);
                    auth.insert("oidc".into(), toml::Value::Table(oidc));
                    doc.insert("auth".into(), toml::Value::Table(auth));
                    doc.insert("rules".into(), toml::Value::Table(rules));
                    doc.insert("watch".into(), toml::Value::Table(watch));
                    doc.insert("history".into(), toml::Value::Table(history));
                    doc
                },
            )
    }

    fn environment() -> impl Strategy<Value = Vec<(String, String)>> {
        let names: Vec<&'static str> = ENV_KEYS
            .iter()
            .map(|(n, _)| *n)
            .chain(["LOOKOUT_NOPE"])
            .collect();
        prop::collection::vec((prop::sample::select(names), "\\PC{0,16}"), 0..3)
            .prop_map(|kv| kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn configs_of_real_keys_and_any_values_parse_or_name_their_problems(doc in document(), env in environment()) {
            let text = toml::to_string(&doc).expect("a table serialises");
            match Config::parse(&text, &env) {
                Ok(_) => {}
                Err(Problems(problems)) => prop_assert!(!problems.is_empty()),
            }
        }

        #[test]
        fn arbitrary_text_is_never_a_panic(text in "\\PC{0,200}") {
            let _ = Config::parse(&text, &[]);
        }
    }
}

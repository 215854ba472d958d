use std::time::Duration;

use lookout_app::model::scope::Role;
use lookout_app::model::thresholds::Thresholds;

use super::*;

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn keys(err: &Problems) -> Vec<&str> {
    let mut keys: Vec<&str> = err.0.iter().map(|p| p.key.as_str()).collect();
    keys.sort();
    keys
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
    assert_eq!(c.thresholds(), Thresholds::default());
    assert_eq!(c.auth.mode, AuthMode::Proxy);
    assert_eq!(c.access[0].role, Role::Operator);
    assert_eq!(c.auth.session_ttl, Duration::from_secs(12 * 3600));
}

#[test]
fn every_unknown_key_is_reported_with_its_path_and_what_is_known_there() {
    let text = "lisen = \"x\"\n[[clusters]]\nname = \"a\"\nin_cluster = true\nkube_config = \"x\"\n[auth]\nmood = \"none\"\n[auth.oidc]\nissuer_url = \"https://x\"\nclient_id = \"c\"\ncliend_id = \"y\"\n";
    let err = Config::parse(text, &[]).unwrap_err();
    assert_eq!(
        keys(&err),
        vec![
            "auth.mood",
            "auth.oidc.cliend_id",
            "clusters[0].kube_config",
            "lisen"
        ]
    );
    let cluster = err
        .0
        .iter()
        .find(|p| p.key == "clusters[0].kube_config")
        .unwrap();
    assert!(
        cluster
            .message
            .starts_with("unknown key (expected one of: name, kubeconfig, context"),
        "{}",
        cluster.message
    );
}

#[test]
fn semantic_problems_name_their_keys() {
    let text = "listen = \"nope\"\ndatabase_url = \"mysql://x\"\n[[clusters]]\nname = \"a b\"\n[[clusters]]\nname = \"c\"\nin_cluster = true\ncontext = \"x\"\n[[access]]\ngroups = []\nrole = \"viewer\"\n";
    let err = Config::parse(text, &[]).unwrap_err();
    assert_eq!(
        err.0.iter().map(|p| p.key.as_str()).collect::<Vec<_>>(),
        vec![
            "listen",
            "database_url",
            "clusters[0].name",
            "clusters[0].kubeconfig",
            "clusters[1].context",
            "access[0].groups"
        ]
    );
}

#[test]
fn wrong_values_are_all_reported_with_the_problems_of_the_rest() {
    let text = "read_only = \"yes\"\nlisten = \"nope\"\n[auth]\nmode = \"ldap\"\nsession_ttl = \"forever\"\n[watch]\nlist_timeout = 30\n";
    let err = Config::parse(text, &[]).unwrap_err();
    assert_eq!(
        keys(&err),
        vec![
            "auth.mode",
            "auth.session_ttl",
            "listen",
            "read_only",
            "watch.list_timeout"
        ]
    );
    let mode = err.0.iter().find(|p| p.key == "auth.mode").unwrap();
    assert!(
        mode.message.contains("`none`, `proxy`, `oidc`"),
        "{}",
        mode.message
    );
}

#[test]
fn identity_headers_must_be_header_names() {
    let err = Config::parse(
        "[auth]\nuser_header = \"X Forwarded User\"\ngroups_header = \"\"\n",
        &[],
    )
    .unwrap_err();
    assert_eq!(keys(&err), vec!["auth.groups_header", "auth.user_header"]);
    assert!(Config::parse("[auth]\nuser_header = \"X-Auth-Request-User\"\n", &[]).is_ok());
}

#[test]
fn a_wrong_role_is_named_with_the_roles_there_are() {
    let text = "[[access]]\ngroups = [\"g\"]\nrole = \"root\"\n[[tokens]]\nname = \"ci\"\nsha256 = \"abc\"\nrole = \"superuser\"\n";
    let err = Config::parse(text, &[]).unwrap_err();
    assert_eq!(keys(&err), vec!["access[0].role", "tokens[0].role"]);
    assert!(
        err.0[0].message.contains("`viewer`, `operator`, `admin`"),
        "{}",
        err.0[0].message
    );
}

#[test]
fn an_entry_with_a_wrong_required_value_is_set_aside_and_the_rest_still_checked() {
    // clusters[0]'s name is wrong and required: the entry goes, and what was clusters[1]
    // is still called clusters[1] in the problems of the checks that follow.
    let text = "listen = \"nowhere\"\n[[clusters]]\nname = 5\nin_cluster = true\n[[clusters]]\nname = \"a b\"\nin_cluster = true\n[[clusters]]\nin_cluster = true\n[[clusters]]\nname = \"ok\"\n";
    let err = Config::parse(text, &[]).unwrap_err();
    assert_eq!(
        keys(&err),
        vec![
            "clusters[0].name",
            "clusters[1].name",
            "clusters[2].name",
            "clusters[3].kubeconfig",
            "listen"
        ]
    );
    let missing = err.0.iter().find(|p| p.key == "clusters[2].name").unwrap();
    assert_eq!(missing.message, "missing (required)");
}

#[test]
fn secrets_come_from_the_environment_into_nested_tables() {
    let key =
        "MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDEyMw==";
    let c = Config::parse(
        "listen = \"127.0.0.1:1\"\n[auth]\nmode = \"oidc\"\npublic_url = \"https://lookout.example.com\"\n[auth.oidc]\nissuer_url = \"https://login.example.com\"\nclient_id = \"lookout\"\n",
        &env(&[
            ("LOOKOUT_AUTH_SESSION_KEY", key),
            ("LOOKOUT_OIDC_CLIENT_SECRET", "s3cret"),
        ]),
    )
    .unwrap();
    assert_eq!(c.auth.session_key.as_deref(), Some(key));
    assert_eq!(
        c.auth
            .oidc
            .as_ref()
            .and_then(|o| o.client_secret.as_deref()),
        Some("s3cret")
    );
    // Without an [auth.oidc] table in the file, the variable makes one.
    let err = Config::parse(
        "listen = \"127.0.0.1:1\"\n",
        &env(&[("LOOKOUT_OIDC_CLIENT_SECRET", "s3cret")]),
    )
    .unwrap_err();
    assert!(
        keys(&err).iter().any(|k| k.starts_with("auth.oidc")),
        "{err}"
    );
}

#[test]
fn environment_overrides_the_file_and_unknown_overrides_are_problems() {
    let c = Config::parse(
        "listen = \"127.0.0.1:1\"\n",
        &env(&[
            ("LOOKOUT_LISTEN", "127.0.0.1:2"),
            ("LOOKOUT_READ_ONLY", "true"),
            ("LOOKOUT_AUTH_MODE", "proxy"),
        ]),
    );
    let err = c.unwrap_err();
    assert_eq!(
        keys(&err),
        vec!["auth.trusted_proxies"],
        "proxy mode was set"
    );
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
    let c = Config::parse("[rules]\nchallenge_stuck_after = \"30m\"\nchallenge_queued_after = \"5m\"\nexpiry_floor = \"10d\"\nbackoff_max = \"1h 30m\"\n[watch]\ncrd_recheck_interval = \"30s\"\nlist_timeout = \"15s\"\n[history]\nretention = \"90d\"\n", &[]).unwrap();
    let t = c.thresholds();
    assert_eq!(t.challenge_stuck_after, chrono::Duration::minutes(30));
    assert_eq!(t.challenge_queued_after, chrono::Duration::minutes(5));
    assert_eq!(t.expiry_floor, Some(chrono::Duration::days(10)));
    assert_eq!(t.backoff_max, chrono::Duration::minutes(90));
    assert_eq!(c.watch.crd_recheck_interval, Duration::from_secs(30));
    assert_eq!(c.watch.list_timeout, Duration::from_secs(15));
    assert_eq!(c.history_retention(), chrono::Duration::days(90));
    let err = Config::parse("[watch]\nlist_timeout = \"0s\"\n", &[]).unwrap_err();
    assert_eq!(keys(&err), vec!["watch.list_timeout"]);
    let err = Config::parse("[rules]\nbackoff_min = \"soon\"\nbogus = 1\n", &[]).unwrap_err();
    assert_eq!(keys(&err), vec!["rules.backoff_min", "rules.bogus"]);
    let err = Config::parse("[rules]\nexpiry_critical = \"100y\"\n", &[]).unwrap_err();
    assert_eq!(keys(&err), vec!["rules.expiry_critical"]);
}

#[test]
fn wrong_types_and_bad_toml_are_explained() {
    let err = Config::parse("read_only = \"yes\"\n", &[]).unwrap_err();
    assert_eq!(err.0[0].key, "read_only");
    assert!(err.0[0].message.contains("bool"), "{}", err.0[0].message);
    let err = Config::parse("[[clusters]]\nname = 5\n", &[]).unwrap_err();
    assert_eq!(keys(&err), vec!["clusters[0].name"]);
    let err = Config::parse("[[clusters]]\nin_cluster = true\n", &[]).unwrap_err();
    assert_eq!(keys(&err), vec!["clusters[0].name"]);
    assert!(err.0[0].message.contains("missing"));
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
role = "viewer"
"#;
    let err = Config::parse(text, &[]).unwrap_err();
    assert_eq!(
        keys(&err),
        vec![
            "auth.oidc.client_id",
            "auth.oidc.issuer_url",
            "auth.public_url",
            "auth.session_key",
            "auth.session_ttl",
            "tokens[0].sha256",
        ]
    );
    let ok = format!(
        "[auth]\nmode = \"oidc\"\npublic_url = \"https://lookout.example.com\"\n[auth.oidc]\nissuer_url = \"https://login.example.com\"\nclient_id = \"lookout\"\n[[tokens]]\nname = \"ci\"\nsha256 = \"{}\"\nrole = \"viewer\"\n",
        "a".repeat(64)
    );
    let c = Config::parse(&ok, &[]).unwrap();
    let typo = Config::parse(&ok.replace("client_id", "cliend_id"), &[]).unwrap_err();
    assert_eq!(typo.0[0].key, "auth.oidc.cliend_id");
    assert_eq!(c.auth.oidc.unwrap().groups_claim, "groups");
    assert_eq!(c.tokens[0].namespaces, vec!["*".to_string()]);
    assert_eq!(c.tokens[0].role, Role::Viewer);
}

/// `docs/configuration.md`, which documents every key.
const DOCS: &str = include_str!("../../../docs/configuration.md");

/// The "Full example" block of the docs, with its kubeconfig path pointing at `kubeconfig`.
fn documented_example(kubeconfig: &std::path::Path) -> String {
    let start = DOCS.find("```toml\n").expect("a toml block") + "```toml\n".len();
    let end = start + DOCS[start..].find("```").expect("its end");
    DOCS[start..end].replace("/etc/lookout/kubeconfig", &kubeconfig.display().to_string())
}

#[test]
fn the_documented_full_example_parses_and_sets_every_key() {
    let kubeconfig = tempfile::NamedTempFile::new().unwrap();
    let c = Config::parse(&documented_example(kubeconfig.path()), &[]).unwrap();
    assert_eq!(c.auth.mode, AuthMode::Oidc);
    assert_eq!(c.tokens[0].role, Role::Admin);
    assert_eq!(
        c.thresholds(),
        Thresholds::default(),
        "the defaults, as documented"
    );
    assert_eq!(c.watch, WatchConfig::default());
    assert_eq!(c.history, HistoryConfig::default());
    assert_eq!(c.http, HttpConfig::default());
}

#[test]
fn connection_limits_that_cannot_work_are_refused() {
    let err = Config::parse(
        "[http]\nmax_connections = 0\nstreams_per_identity = 0\nheader_timeout = \"0s\"\n",
        &[],
    )
    .unwrap_err();
    let keys: Vec<&str> = err.0.iter().map(|p| p.key.as_str()).collect();
    for key in [
        "http.max_connections",
        "http.streams_per_identity",
        "http.streams_total",
        "http.header_timeout",
    ] {
        assert!(keys.contains(&key), "{key} in {err}");
    }
    let err = Config::parse("[http]\nmax_connections = 100\n", &[]).unwrap_err();
    assert_eq!(
        err.0[0].key, "http.streams_total",
        "2000 streams need more than 100 connections"
    );
    assert!(Config::parse("[http]\nmax_connections = 100\nstreams_total = 50\n", &[]).is_ok());
}

/// The keys serde knows in the table at `path` (`""`, `"auth"`, `"clusters[0]"` …), from
/// its own "expected one of" for a key nobody has.
fn known_keys(path: &str) -> Vec<String> {
    let body = "zz_unknown = 1\n";
    let text = match path {
        "" => body.to_string(),
        p if p.ends_with("[0]") => format!("[[{}]]\n{body}", &p[..p.len() - 3]),
        p => format!("[{p}]\n{body}"),
    };
    let err = Config::parse(&text, &[]).unwrap_err();
    let unknown = err
        .0
        .iter()
        .find(|p| p.key.ends_with("zz_unknown"))
        .unwrap_or_else(|| panic!("{path}: {err}"));
    let list = unknown
        .message
        .strip_prefix("unknown key (expected one of: ")
        .and_then(|m| m.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{}", unknown.message));
    list.split(", ").map(str::to_string).collect()
}

#[test]
fn every_key_is_documented() {
    let tables = [
        ("", "### Top level"),
        ("actions", "### `[actions]`"),
        ("clusters[0]", "### `[[clusters]]`"),
        ("rules", "### `[rules]`"),
        ("watch", "### `[watch]`"),
        ("history", "### `[history]`"),
        ("http", "### `[http]`"),
        ("probe", "### `[probe]`"),
        ("support", "### `[support]`"),
        ("auth", "### `[auth]`"),
        ("auth.oidc", "### `[auth.oidc]`"),
        ("access[0]", "### `[[access]]`"),
        ("tokens[0]", "### `[[tokens]]`"),
    ];
    for (path, heading) in tables {
        let start = DOCS.find(heading).unwrap_or_else(|| panic!("{heading}"));
        let section = &DOCS[start + heading.len()..];
        let section = &section[..section.find("\n#").unwrap_or(section.len())];
        let keys = known_keys(path);
        assert!(!keys.is_empty(), "{path}: {keys:?}");
        for key in keys {
            // A table of its own (`auth.oidc`, `clusters`) has its own section.
            if [
                "clusters", "auth", "access", "tokens", "rules", "watch", "history", "http",
                "oidc", "probe", "actions", "support",
            ]
            .contains(&key.as_str())
            {
                continue;
            }
            assert!(
                section.contains(&format!("| `{key}` |")),
                "{path}.{key} is not documented under {heading}"
            );
        }
    }
}

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

    /// Every leaf of the documented full example (which sets every key), as a path.
    fn leaves(v: &toml::Value, at: Vec<String>, out: &mut Vec<Vec<String>>) {
        match v {
            toml::Value::Table(t) => t
                .iter()
                .for_each(|(k, v)| leaves(v, [at.clone(), vec![k.clone()]].concat(), out)),
            toml::Value::Array(a) if a.iter().all(toml::Value::is_table) => a
                .iter()
                .enumerate()
                .for_each(|(i, v)| leaves(v, [at.clone(), vec![i.to_string()]].concat(), out)),
            _ => out.push(at),
        }
    }

    fn set(doc: &mut toml::Value, path: &[String], value: Option<toml::Value>) {
        let Some((last, parents)) = path.split_last() else {
            return;
        };
        let mut node = doc;
        for p in parents {
            node = match node {
                toml::Value::Table(t) => t.get_mut(p).expect("a path of this document"),
                toml::Value::Array(a) => &mut a[p.parse::<usize>().expect("an index")],
                _ => return,
            };
        }
        if let toml::Value::Table(t) = node {
            match value {
                Some(v) => {
                    t.insert(last.clone(), v);
                }
                None => {
                    t.remove(last);
                }
            }
        }
    }

    /// The documented example with some keys given any value, some removed, and some
    /// unknown ones added.
    fn document() -> impl Strategy<Value = toml::Table> {
        prop::collection::vec((any::<usize>(), prop::option::of(value())), 0..8).prop_map(
            |mutations| {
                let example = super::documented_example(std::path::Path::new("/"));
                let mut doc = toml::Value::Table(example.parse().expect("the example parses"));
                let mut all = Vec::new();
                leaves(&doc, Vec::new(), &mut all);
                for (which, value) in mutations {
                    let mut path = all[which % all.len()].clone();
                    if which % 7 == 0 {
                        // A key nobody knows, next to a real one.
                        if let Some(last) = path.last_mut() {
                            last.push_str("_x");
                        }
                    }
                    set(&mut doc, &path, value);
                }
                match doc {
                    toml::Value::Table(t) => t,
                    _ => unreachable!(),
                }
            },
        )
    }

    fn environment() -> impl Strategy<Value = Vec<(String, String)>> {
        let names: Vec<&'static str> = ENV_OVERRIDES
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

#[test]
fn a_tailnet_must_be_a_ts_net_name() {
    let err = Config::parse(
        "[[clusters]]\nname = \"a\"\nin_cluster = true\ntailnet = \"example.com\"\n",
        &[],
    )
    .unwrap_err();
    assert!(
        err.0.iter().any(|p| p.key == "clusters[0].tailnet"),
        "{err:?}"
    );
    let ok = Config::parse(
        "[[clusters]]\nname = \"a\"\nin_cluster = true\ntailnet = \"Example-Tailnet.ts.net.\"\n",
        &[],
    )
    .unwrap();
    assert_eq!(
        ok.clusters[0].overrides().tailnet.as_deref(),
        Some("example-tailnet.ts.net")
    );
}

#[test]
fn durations_too_long_to_count_with_are_named() {
    let err = Config::parse(
        "[auth]\nsession_ttl = \"99999999999999d\"\n[history]\nretention = \"9999999d\"\n",
        &[],
    )
    .unwrap_err();
    assert_eq!(keys(&err), vec!["auth.session_ttl", "history.retention"]);
    let err = Config::parse("[auth]\nsession_ttl = \"400d\"\n", &[]).unwrap_err();
    assert_eq!(keys(&err), vec!["auth.session_ttl"]);
}

#[test]
fn no_sign_in_on_a_non_loopback_address_is_refused_by_check_config_as_by_serve() {
    let err = Config::parse("listen = \"0.0.0.0:8080\"\n", &[]).unwrap_err();
    assert_eq!(keys(&err), vec!["listen"]);
    assert!(
        err.0[0].message.contains("not a loopback address"),
        "{err:?}"
    );
    assert!(Config::parse(
        "listen = \"0.0.0.0:8080\"\n[auth]\nallow_unauthenticated_remote = true\n",
        &[]
    )
    .is_ok());
    assert!(Config::parse("listen = \"127.0.0.1:8080\"\n", &[]).is_ok());
}

#[test]
fn impersonated_actions_need_a_person_who_signs_in() {
    let err = Config::parse("[actions]\nimpersonate = true\n", &[]).unwrap_err();
    assert_eq!(keys(&err), vec!["actions.impersonate"]);
    let proxy = "[auth]\nmode = \"proxy\"\ntrusted_proxies = [\"127.0.0.1/32\"]\n";
    let c = Config::parse(&format!("[actions]\nimpersonate = true\n{proxy}"), &[]).unwrap();
    assert!(c.actions.impersonate);
    let c = Config::parse(proxy, &env(&[("LOOKOUT_ACTIONS_IMPERSONATE", "1")])).unwrap();
    assert!(c.actions.impersonate);
    assert!(!Config::parse(proxy, &[]).unwrap().actions.impersonate);
    let err = Config::parse(proxy, &env(&[("LOOKOUT_ACTIONS_IMPERSONATE", "yes")])).unwrap_err();
    assert_eq!(keys(&err), vec!["LOOKOUT_ACTIONS_IMPERSONATE"]);
}

#[test]
fn the_support_contact_is_one_short_line() {
    let ok = Config::parse(
        "[support]\ncontact = \"https://support.example.com\"\n",
        &[],
    )
    .unwrap();
    assert_eq!(
        ok.support.contact.as_deref(),
        Some("https://support.example.com")
    );
    for bad in [
        "[support]\ncontact = \"line one\\nline two\"\n".to_string(),
        format!("[support]\ncontact = \"{}\"\n", "x".repeat(301)),
    ] {
        let err = Config::parse(&bad, &[]).unwrap_err();
        assert_eq!(keys(&err), vec!["support.contact"], "{bad}");
    }
    let err = Config::parse("[support]\nemail = \"x\"\n", &[]).unwrap_err();
    assert!(
        keys(&err).iter().any(|k| k.starts_with("support")),
        "{err:?}"
    );
}

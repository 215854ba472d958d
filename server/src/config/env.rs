//! `LOOKOUT_*` environment variables that override keys of the file (for containers, where a
//! value comes from a Secret or the Deployment): they are applied to the TOML document before
//! it is read, so a bad value is reported under the variable's name like a bad key.

use super::load::{problem, Problem};

/// Each override and the key it sets.
pub const ENV_OVERRIDES: &[(&str, &str)] = &[
    ("LOOKOUT_LISTEN", "listen"),
    ("LOOKOUT_DATABASE_URL", "database_url"),
    ("LOOKOUT_READ_ONLY", "read_only"),
    ("LOOKOUT_ACTIONS_IMPERSONATE", "actions.impersonate"),
    ("LOOKOUT_AUTH_MODE", "auth.mode"),
    ("LOOKOUT_AUTH_ACCESS_SOURCE", "auth.access_source"),
    // Secrets, for a Deployment that reads them from a Secret (deploy/kubernetes).
    ("LOOKOUT_AUTH_SESSION_KEY", "auth.session_key"),
    ("LOOKOUT_OIDC_CLIENT_SECRET", "auth.oidc.client_secret"),
];

/// Variables with the `LOOKOUT_` prefix that are not overrides (read elsewhere).
const NOT_OVERRIDES: &[&str] = &["LOOKOUT_LOG", "LOOKOUT_CONFIG"];

/// Sets the keys `env` overrides in `doc`; an unknown `LOOKOUT_*` variable or a value that
/// cannot be one is a problem named after the variable.
pub(super) fn apply(doc: &mut toml::Table, env: &[(String, String)], out: &mut Vec<Problem>) {
    for (name, value) in env {
        let Some((_, key)) = ENV_OVERRIDES.iter().find(|(n, _)| n == name) else {
            if name.starts_with("LOOKOUT_") && !NOT_OVERRIDES.contains(&name.as_str()) {
                let known: Vec<&str> = ENV_OVERRIDES
                    .iter()
                    .map(|(n, _)| *n)
                    .chain(NOT_OVERRIDES.iter().copied())
                    .collect();
                out.push(problem(
                    name.clone(),
                    format!("unknown environment override (known: {})", known.join(", ")),
                ));
            }
            continue;
        };
        let parsed = match *key {
            "read_only" | "actions.impersonate" => match value.as_str() {
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
        // Walk (and make) the tables of a dotted key: `auth.oidc.client_secret`.
        let mut path: Vec<&str> = key.split('.').collect();
        let field = path.pop().expect("a key has a last part");
        let mut table = Some(&mut *doc);
        for part in &path {
            table = table.and_then(|t| {
                t.entry(*part)
                    .or_insert_with(|| toml::Value::Table(Default::default()))
                    .as_table_mut()
            });
        }
        match table {
            Some(t) => {
                t.insert(field.to_string(), parsed);
            }
            None => out.push(problem(
                name.clone(),
                format!("{key} cannot be set: the file has a value where a table belongs"),
            )),
        }
    }
}

//! Actions sent as the person who asked for them (`actions.impersonate`): every request of
//! the action carries `Impersonate-User` and `Impersonate-Group`, so that the cluster's
//! RBAC, admission and audit log judge and record the person, not Lookout. The requests go
//! over the cluster's own client (its connections and credentials); only the headers differ.
//!
//! Who is impersonated: the name and groups the sign-in gave, with two guards — a name
//! starting with `system:` (the API server's own identities, ServiceAccounts) is never
//! impersonated, and groups starting with `system:` (`system:masters`…) are dropped: a
//! sign-in must not claim what only the cluster's own authenticators give. The API server
//! adds `system:authenticated` itself. An API token acts as the user `token:NAME`.

use std::sync::Arc;

use http::{HeaderName, HeaderValue, Request};
use kube::client::Body;

use crate::auth::Caller;

const USER: HeaderName = HeaderName::from_static("impersonate-user");
const GROUP: HeaderName = HeaderName::from_static("impersonate-group");
const UID: HeaderName = HeaderName::from_static("impersonate-uid");
const EXTRA_PREFIX: &str = "impersonate-extra-";

/// The user and groups an action of `caller` is sent as.
pub(crate) fn subject(caller: &Caller) -> Result<(String, Vec<String>), String> {
    let user = caller.identity.name.trim();
    if user.is_empty() {
        return Err("Lookout cannot act as someone without a name".into());
    }
    if user.starts_with("system:") {
        return Err(format!(
            "Lookout does not act as {user:?}: names starting with \"system:\" belong to the cluster's own identities"
        ));
    }
    let mut groups: Vec<String> = caller
        .identity
        .groups
        .iter()
        .map(|g| g.trim())
        .filter(|g| !g.is_empty() && !g.starts_with("system:"))
        .map(str::to_string)
        .collect();
    groups.sort();
    groups.dedup();
    Ok((user.to_string(), groups))
}

/// Who the cluster is told the requests come from, in words: `alice (groups ops, team-a)`.
/// A name that holds a comma, a parenthesis, a quote or surrounding space is quoted (with
/// `"` and `\` escaped), so `(groups "team,a")` reads as one group, never two.
pub(crate) fn describe(caller: &Caller) -> String {
    match subject(caller) {
        Ok((user, groups)) if groups.is_empty() => quoted(&user),
        Ok((user, groups)) => format!(
            "{} (groups {})",
            quoted(&user),
            groups
                .iter()
                .map(|g| quoted(g))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Err(_) => quoted(&caller.identity.name),
    }
}

/// `name` as is, or quoted when it could be read as more or less than one name.
fn quoted(name: &str) -> String {
    let ambiguous =
        name.is_empty() || name.trim() != name || name.contains([',', '(', ')', '"', '\\']);
    if ambiguous {
        format!("\"{}\"", name.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        name.to_string()
    }
}

/// Whose right a refusal in the cluster's words says is missing.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The person's (they may not make the change).
    Person,
    /// Lookout's (it may not impersonate them).
    Lookout,
}

/// Reads the API server's refusal (`… is forbidden: User "…" cannot <verb> resource …`).
pub(crate) fn refusal(words: &str) -> Option<Refusal> {
    let (_, rest) = words.split_once(" is forbidden: User \"")?;
    if rest.contains("\" cannot impersonate resource ") {
        Some(Refusal::Lookout)
    } else if rest.contains("\" cannot ") {
        Some(Refusal::Person)
    } else {
        None
    }
}

/// A header value of a name as the sign-in gave it: any UTF-8 (sent as its bytes, as
/// client-go does), but no control characters.
fn value(name: &str) -> Result<HeaderValue, String> {
    HeaderValue::from_bytes(name.as_bytes())
        .map_err(|_| format!("{name:?} cannot be sent in a header (it has a control character)"))
}

/// A client that sends everything as `caller` over `base`'s connections.
pub(crate) fn client_as(base: &kube::Client, caller: &Caller) -> Result<kube::Client, String> {
    let (user, groups) = subject(caller)?;
    let mut headers = vec![(USER, value(&user)?)];
    for g in &groups {
        headers.push((GROUP, value(g)?));
    }
    let headers = Arc::new(headers);
    let inner = base.clone();
    let service = tower::service_fn(move |mut req: Request<Body>| {
        let inner = inner.clone();
        let headers = headers.clone();
        async move {
            let h = req.headers_mut();
            // Only these: nothing else a request carries may choose who it is sent as.
            let extras: Vec<HeaderName> = h
                .keys()
                .filter(|k| k.as_str().starts_with(EXTRA_PREFIX))
                .cloned()
                .collect();
            for k in [USER, GROUP, UID].into_iter().chain(extras) {
                h.remove(k);
            }
            for (k, v) in headers.iter() {
                h.append(k.clone(), v.clone());
            }
            inner.send(req).await
        }
    });
    Ok(kube::Client::new(service, base.default_namespace()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Identity;
    use lookout_app::model::scope::Access;

    fn caller(name: &str, groups: &[&str]) -> Caller {
        Caller::new(
            Identity {
                name: name.into(),
                groups: groups.iter().map(|g| g.to_string()).collect(),
                access: Access::default(),
                via: "proxy",
            },
            [],
        )
    }

    #[test]
    fn who_it_was_sent_as_reads_one_way_only() {
        assert_eq!(
            describe(&caller("alice", &["team-a", "ops"])),
            "alice (groups ops, team-a)"
        );
        // A comma inside a group is one group, not two; a name that looks like a list
        // of groups is quoted.
        assert_eq!(
            describe(&caller("Jürgen", &["team,a", "ops"])),
            "Jürgen (groups ops, \"team,a\")"
        );
        assert_eq!(
            describe(&caller("bob (groups admins)", &[])),
            "\"bob (groups admins)\""
        );
        assert_eq!(
            describe(&caller("eve", &["say \"hi\""])),
            "eve (groups \"say \\\"hi\\\"\")"
        );
    }

    #[test]
    fn the_clusters_own_identities_are_never_claimed() {
        assert!(subject(&caller("system:admin", &[])).is_err());
        assert!(subject(&caller("system:serviceaccount:kube-system:default", &[])).is_err());
        assert!(subject(&caller("  ", &[])).is_err());
        assert_eq!(
            subject(&caller(
                "alice",
                &["team-a", "system:masters", "team-a", " ops "]
            ))
            .unwrap(),
            (
                "alice".to_string(),
                vec!["ops".to_string(), "team-a".to_string()]
            )
        );
        assert_eq!(
            subject(&caller("token:ci", &[])).unwrap(),
            ("token:ci".to_string(), Vec::new())
        );
    }

    #[test]
    fn refusals_say_whose_right_is_missing() {
        assert_eq!(
            refusal(
                r#"ingresses.networking.k8s.io "web" is forbidden: User "bob" cannot patch resource "ingresses" in API group "networking.k8s.io" in the namespace "default" (403)"#
            ),
            Some(Refusal::Person)
        );
        assert_eq!(
            refusal(
                r#"users "bob" is forbidden: User "system:serviceaccount:lookout:lookout" cannot impersonate resource "users" in API group "" at the cluster scope (403)"#
            ),
            Some(Refusal::Lookout)
        );
        assert_eq!(refusal("connection refused"), None);
        assert_eq!(
            refusal(r#"admission webhook "policy.example" denied the request: no"#),
            None
        );
    }

    #[test]
    fn names_are_sent_as_their_bytes_but_control_characters_are_refused() {
        assert_eq!(value("José").unwrap().as_bytes(), "José".as_bytes());
        assert!(value("alice\r\nImpersonate-Group: system:masters").is_err());
    }
}

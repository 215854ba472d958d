//! Gateway API HTTPRoutes, compact: where each attaches (`parentRefs`), the hostnames it
//! answers, each rule's path matches and whether it redirects, and what the Gateways'
//! controllers said of each attachment (`status.parents`). cert-manager's HTTP-01 solver
//! routes are among them, labelled `acme.cert-manager.io/http01-solver: "true"`
//! (`pkg/issuer/acme/http/httproute.go`).

use chrono::{DateTime, Utc};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;
use serde_json::Value;

use super::certificate::ParentRef;
use super::interner::Interner;
use super::object::{at, conditions_at, created, Condition};
use super::text::Text;

/// Whether a Gateway API hostname (a listener's or a route's) matches `host`: the same name,
/// or for `*.suffix` any name of one or more labels before `.suffix`; DNS names compare
/// without case (`apis/v1/shared_types.go` `Hostname`).
pub fn hostname_matches(pattern: &str, host: &str) -> bool {
    match pattern.strip_prefix('*') {
        Some(suffix) => {
            host.len() > suffix.len()
                && host.as_bytes()[host.len() - suffix.len()..]
                    .eq_ignore_ascii_case(suffix.as_bytes())
        }
        None => pattern.eq_ignore_ascii_case(host),
    }
}

/// One HTTPRoute.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HttpRouteView {
    pub namespace: Text,
    pub name: Text,
    pub parents: Vec<ParentRef>,
    /// `spec.hostnames`; empty: every host of the listeners it attaches to.
    pub hostnames: Vec<Text>,
    pub rules: Vec<RouteRule>,
    /// What each parent's controller says of it: the parent and its conditions
    /// (`Accepted`, `ResolvedRefs`).
    pub status: Vec<(ParentRef, Vec<Condition>)>,
    /// cert-manager's HTTP-01 solver route.
    pub solver: bool,
    pub created: Option<DateTime<Utc>>,
}

/// One rule of a route.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RouteRule {
    /// Its path matches; empty: every path (a rule without matches matches `/` as a prefix).
    pub paths: Vec<PathMatch>,
    /// A `RequestRedirect` filter: the scheme it redirects to (None: kept) and its status.
    pub redirect: Option<Redirect>,
}

/// A path match of a rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PathMatch {
    /// `Exact`, `PathPrefix` (the default) or `RegularExpression`.
    pub kind: Text,
    pub value: Text,
}

/// A `RequestRedirect` filter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Redirect {
    pub scheme: Option<Text>,
    pub status: Option<u16>,
}

impl PathMatch {
    /// Whether it matches `path` as the Gateway API defines it: `Exact` the same path,
    /// `PathPrefix` by whole segments (`/foo` matches `/foo` and `/foo/bar`, not `/foobar`);
    /// a regular expression is not evaluated (false).
    pub fn matches(&self, path: &str) -> bool {
        match &*self.kind {
            "Exact" => *self.value == *path,
            "PathPrefix" => {
                let prefix = self.value.trim_end_matches('/');
                prefix.is_empty()
                    || path == prefix
                    || path
                        .strip_prefix(prefix)
                        .is_some_and(|rest| rest.starts_with('/'))
            }
            _ => false,
        }
    }
}

impl RouteRule {
    /// Whether the rule matches `path` (a rule without path matches matches every path).
    pub fn matches(&self, path: &str) -> bool {
        self.paths.is_empty() || self.paths.iter().any(|m| m.matches(path))
    }
}

impl HttpRouteView {
    pub fn project(meta: &ObjectMeta, data: &Value, strings: &mut Interner) -> Option<Self> {
        let own = meta.namespace.as_deref().unwrap_or_default();
        let parents = |v: Option<&Value>, strings: &mut Interner| -> Vec<ParentRef> {
            v.and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|r| ParentRef::project(r, own, strings))
                .collect()
        };
        let rules = at(data, "/spec/rules")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|r| RouteRule {
                paths: r
                    .get("matches")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|m| PathMatch {
                        kind: strings.get(
                            at(m, "/path/type")
                                .and_then(Value::as_str)
                                .unwrap_or("PathPrefix"),
                        ),
                        value: strings
                            .get(at(m, "/path/value").and_then(Value::as_str).unwrap_or("/")),
                    })
                    .collect(),
                redirect: r
                    .get("filters")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .find(|f| f.get("type").and_then(Value::as_str) == Some("RequestRedirect"))
                    .map(|f| Redirect {
                        scheme: at(f, "/requestRedirect/scheme")
                            .and_then(Value::as_str)
                            .map(|s| strings.get(s)),
                        status: at(f, "/requestRedirect/statusCode")
                            .and_then(Value::as_u64)
                            .and_then(|c| u16::try_from(c).ok()),
                    }),
            })
            .collect();
        let status = at(data, "/status/parents")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| {
                let parent = ParentRef::project(p.get("parentRef")?, own, strings)?;
                Some((parent, conditions_at(p, "/conditions", strings)))
            })
            .collect();
        Some(HttpRouteView {
            namespace: strings.get(own),
            name: strings.get(meta.name.as_deref()?),
            parents: parents(at(data, "/spec/parentRefs"), strings),
            hostnames: at(data, "/spec/hostnames")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(|h| strings.get(h))
                .collect(),
            rules,
            status,
            solver: meta
                .labels
                .as_ref()
                .and_then(|l| l.get("acme.cert-manager.io/http01-solver"))
                .is_some_and(|v| v == "true"),
            created: created(meta),
        })
    }

    /// Whether it answers `host`: no hostnames (every host of its listeners), the same name,
    /// or a `*.` hostname as a suffix.
    pub fn answers(&self, host: &str) -> bool {
        self.hostnames.is_empty() || self.hostnames.iter().any(|h| hostname_matches(h, host))
    }

    /// What the controller of Gateway `namespace/name` said of its attachment there:
    /// Some(true) accepted, Some(false) refused, None not said (yet).
    pub fn accepted_by(&self, namespace: &str, name: &str) -> Option<bool> {
        let said: Vec<bool> = self
            .status
            .iter()
            .filter(|(p, _)| *p.namespace == *namespace && *p.name == *name)
            .filter_map(|(_, c)| super::object::condition(c, "Accepted"))
            .map(|c| c.is_true())
            .collect();
        if said.is_empty() {
            None
        } else {
            Some(said.iter().any(|a| *a))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(v: &Value) -> ObjectMeta {
        serde_json::from_value(v["metadata"].clone()).unwrap()
    }

    #[test]
    fn a_wildcard_hostname_is_a_suffix_of_one_or_more_labels_and_case_does_not_count() {
        for (pattern, host, matches) in [
            ("shop.example.com", "SHOP.example.com", true),
            ("shop.example.com", "www.example.com", false),
            ("*.example.com", "shop.example.com", true),
            ("*.example.com", "a.b.Example.COM", true),
            ("*.example.com", "example.com", false),
            ("*.example.com", "shopexample.com", false),
            ("*.example.com", "é.example.com", true),
        ] {
            assert_eq!(hostname_matches(pattern, host), matches, "{pattern} {host}");
        }
    }

    #[test]
    fn a_redirect_route_and_a_solver_route_are_read_with_their_status() {
        let r = serde_json::json!({"metadata": {"name": "redirect", "namespace": "web"},
            "spec": {"parentRefs": [{"name": "edge", "namespace": "gw", "sectionName": "http"}],
                     "hostnames": ["*.example.com"],
                     "rules": [{"filters": [{"type": "RequestRedirect", "requestRedirect": {"scheme": "https", "statusCode": 301}}]}]},
            "status": {"parents": [{"parentRef": {"name": "edge", "namespace": "gw", "sectionName": "http"}, "controllerName": "io.cilium/gateway-controller",
                                    "conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted"}]}]}});
        let v = HttpRouteView::project(&meta(&r), &r, &mut Interner::default()).unwrap();
        assert_eq!(v.parents[0].section.as_deref(), Some("http"));
        assert!(v.rules[0].matches("/.well-known/acme-challenge/x"));
        assert_eq!(
            v.rules[0].redirect.as_ref().unwrap().scheme.as_deref(),
            Some("https")
        );
        assert!(v.answers("shop.example.com") && !v.answers("example.com"));
        assert_eq!(v.accepted_by("gw", "edge"), Some(true));
        assert_eq!(v.accepted_by("gw", "other"), None);
        assert!(!v.solver);
        let s = serde_json::json!({"metadata": {"name": "cm-acme-http-solver-1", "namespace": "web", "labels": {"acme.cert-manager.io/http01-solver": "true"}},
            "spec": {"parentRefs": [{"name": "edge"}], "hostnames": ["shop.example.com"],
                     "rules": [{"matches": [{"path": {"type": "Exact", "value": "/.well-known/acme-challenge/t"}}]}]}});
        let v = HttpRouteView::project(&meta(&s), &s, &mut Interner::default()).unwrap();
        assert!(v.solver);
        assert_eq!(&*v.parents[0].namespace, "web");
        assert!(v.rules[0].matches("/.well-known/acme-challenge/t"));
        assert!(!v.rules[0].matches("/.well-known/acme-challenge/u"));
    }

    #[test]
    fn a_prefix_matches_whole_segments() {
        let m = |v: &str| PathMatch {
            kind: "PathPrefix".into(),
            value: v.into(),
        };
        assert!(m("/").matches("/anything"));
        assert!(m("/.well-known").matches("/.well-known/acme-challenge/x"));
        assert!(m("/.well-known/").matches("/.well-known/acme-challenge/x"));
        assert!(!m("/.well").matches("/.well-known/acme-challenge/x"));
        assert!(!PathMatch {
            kind: "RegularExpression".into(),
            value: ".*".into()
        }
        .matches("/x"));
    }
}

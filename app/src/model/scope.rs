//! What a caller may see: cluster globs × namespace globs. Every read query takes a Scope.

use serde::{Deserialize, Serialize};

/// One grant: the clusters and namespaces matching these globs (`*` matches any run of
/// characters, `?` one character).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    pub clusters: Vec<String>,
    pub namespaces: Vec<String>,
}

/// The union of a caller's grants. An empty scope sees nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scope {
    grants: Vec<Grant>,
}

/// Shell-style wildcard match over bytes.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    let (mut pi, mut ti) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == b'?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

impl Scope {
    /// Everything in every cluster (support, on-call, and `auth.mode = "none"`).
    pub fn everything() -> Self {
        Scope {
            grants: vec![Grant {
                clusters: vec!["*".into()],
                namespaces: vec!["*".into()],
            }],
        }
    }

    /// Whether every namespace of every cluster is visible.
    pub fn sees_everything(&self) -> bool {
        self.grants
            .iter()
            .any(|g| g.clusters.iter().any(|c| c == "*") && g.namespaces.iter().any(|n| n == "*"))
    }

    pub fn from_grants(grants: Vec<Grant>) -> Self {
        Scope { grants }
    }

    pub fn grants(&self) -> &[Grant] {
        &self.grants
    }

    /// Whether any object of `cluster` may be visible.
    pub fn sees_cluster(&self, cluster: &str) -> bool {
        self.grants
            .iter()
            .any(|g| g.clusters.iter().any(|c| glob_match(c, cluster)))
    }

    /// Whether every namespace of `cluster` is visible (needed for cluster-scoped objects,
    /// whose findings may name objects of any namespace).
    pub fn sees_cluster_wide(&self, cluster: &str) -> bool {
        self.grants.iter().any(|g| {
            g.clusters.iter().any(|c| glob_match(c, cluster))
                && g.namespaces.iter().any(|n| n == "*")
        })
    }

    /// Whether objects in `namespace` of `cluster` are visible.
    pub fn sees(&self, cluster: &str, namespace: &str) -> bool {
        self.grants.iter().any(|g| {
            g.clusters.iter().any(|c| glob_match(c, cluster))
                && g.namespaces.iter().any(|n| glob_match(n, namespace))
        })
    }
}

/// What a caller may do where they may see: `viewer` reads, `operator` also runs actions,
/// `admin` also reads fleet-wide operational data (`/metrics`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Viewer,
    Operator,
    Admin,
}

impl Role {
    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "viewer" => Some(Role::Viewer),
            "operator" => Some(Role::Operator),
            "admin" => Some(Role::Admin),
            _ => None,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Operator => "operator",
            Role::Admin => "admin",
        }
    }
}

/// A caller's rules: each a role over a grant. Several combine: the caller sees the union
/// of every grant and may act where a rule with `operator` or more covers the object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Access {
    rules: Vec<(Role, Grant)>,
}

impl Access {
    pub fn new(rules: Vec<(Role, Grant)>) -> Self {
        Access { rules }
    }

    /// Admin of everything (`auth.mode = "none"`).
    pub fn everything() -> Self {
        Access::new(vec![(
            Role::Admin,
            Grant {
                clusters: vec!["*".into()],
                namespaces: vec!["*".into()],
            },
        )])
    }

    /// Where the caller may look.
    pub fn scope(&self) -> Scope {
        Scope::from_grants(self.rules.iter().map(|(_, g)| g.clone()).collect())
    }

    /// Where the caller may run actions.
    pub fn act_scope(&self) -> Scope {
        Scope::from_grants(
            self.rules
                .iter()
                .filter(|(r, _)| *r >= Role::Operator)
                .map(|(_, g)| g.clone())
                .collect(),
        )
    }

    /// The highest role of any rule (None: no rule matched, the caller sees nothing).
    pub fn top_role(&self) -> Option<Role> {
        self.rules.iter().map(|(r, _)| *r).max()
    }

    /// Admin over every cluster and namespace: may read fleet-wide operational data.
    pub fn is_fleet_admin(&self) -> bool {
        self.rules.iter().any(|(r, g)| {
            *r == Role::Admin
                && g.clusters.iter().any(|c| c == "*")
                && g.namespaces.iter().any(|n| n == "*")
        })
    }
}

impl Scope {
    /// Whether the scope sees nothing at all.
    pub fn is_empty(&self) -> bool {
        self.grants.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_prefixes_and_single_characters() {
        assert!(glob_match("acme-*", "acme-shop"));
        assert!(glob_match("*", ""));
        assert!(glob_match("zrh-?", "zrh-1"));
        assert!(!glob_match("acme-*", "globex-web"));
        assert!(glob_match("*-prod", "zrh-prod"));
        assert!(glob_match("a*b*c", "aXXbYYc"));
        assert!(!glob_match("a*b*c", "aXXbYY"));
    }

    #[test]
    fn a_customer_scope_sees_only_its_namespaces_in_its_cluster() {
        let s = Scope::from_grants(vec![Grant {
            clusters: vec!["zrh-prod".into()],
            namespaces: vec!["acme-*".into()],
        }]);
        assert!(s.sees("zrh-prod", "acme-shop"));
        assert!(!s.sees("zrh-prod", "globex"));
        assert!(!s.sees("gva-prod", "acme-shop"));
        assert!(s.sees_cluster("zrh-prod") && !s.sees_cluster("gva-prod"));
        assert!(!Scope::default().sees("zrh-prod", "acme-shop"));
        assert!(!s.sees_everything() && Scope::everything().sees_everything());
        let every_namespace_of_one = Scope::from_grants(vec![Grant {
            clusters: vec!["zrh-prod".into()],
            namespaces: vec!["*".into()],
        }]);
        assert!(!every_namespace_of_one.sees_everything());
    }

    #[test]
    fn rules_combine_a_wide_view_with_a_narrow_right_to_act() {
        let g = |c: &str, n: &str| Grant {
            clusters: vec![c.into()],
            namespaces: vec![n.into()],
        };
        let access = Access::new(vec![
            (Role::Viewer, g("*", "acme-*")),
            (Role::Operator, g("zrh-prod", "acme-shop")),
        ]);
        assert!(access.scope().sees("gva-prod", "acme-blog"));
        assert!(!access.scope().sees("gva-prod", "globex"));
        assert!(access.act_scope().sees("zrh-prod", "acme-shop"));
        assert!(
            !access.act_scope().sees("gva-prod", "acme-blog"),
            "a viewer there"
        );
        assert_eq!(access.top_role(), Some(Role::Operator));
        assert!(!access.is_fleet_admin());
        assert!(Access::everything().is_fleet_admin());
        assert!(Access::default().scope().is_empty());
    }
}

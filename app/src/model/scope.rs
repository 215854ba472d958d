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

    pub fn from_grants(grants: Vec<Grant>) -> Self {
        Scope { grants }
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

    /// Whether a finding is visible: namespaced ones by their namespace; cluster-wide ones
    /// only to callers who see the whole cluster, except that anyone who sees the cluster
    /// learns that it is unreachable.
    pub fn sees_finding(&self, f: &crate::model::Finding) -> bool {
        if f.namespace.is_empty() {
            if f.rule == "cluster.unreachable" {
                self.sees_cluster(&f.cluster)
            } else {
                self.sees_cluster_wide(&f.cluster)
            }
        } else {
            self.sees(&f.cluster, &f.namespace)
        }
    }

    /// Whether objects in `namespace` of `cluster` are visible.
    pub fn sees(&self, cluster: &str, namespace: &str) -> bool {
        self.grants.iter().any(|g| {
            g.clusters.iter().any(|c| glob_match(c, cluster))
                && g.namespaces.iter().any(|n| glob_match(n, namespace))
        })
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
    }
}

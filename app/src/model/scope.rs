//! Who may see and do what: rules of a role over cluster globs × namespace globs, from the
//! configuration. A request turns them into its caller's [`super::view::View`].

use serde::{Deserialize, Serialize};

/// One grant: the clusters and namespaces matching these globs (`*` matches any run of
/// characters, `?` one character).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    pub clusters: Vec<String>,
    pub namespaces: Vec<String>,
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

    /// Each rule: a role over a grant.
    pub fn rules(&self) -> &[(Role, Grant)] {
        &self.rules
    }

    /// Whether some rule covers every namespace of every cluster (whatever its role).
    pub fn is_fleet_wide(&self) -> bool {
        self.rules.iter().any(|(_, g)| {
            g.clusters.iter().any(|c| c == "*") && g.namespaces.iter().any(|n| n == "*")
        })
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
    fn the_top_role_and_fleet_wide_rules_are_told_apart() {
        let g = |c: &str, n: &str| Grant {
            clusters: vec![c.into()],
            namespaces: vec![n.into()],
        };
        let access = Access::new(vec![
            (Role::Viewer, g("*", "acme-*")),
            (Role::Operator, g("zrh-prod", "acme-shop")),
        ]);
        assert_eq!(access.top_role(), Some(Role::Operator));
        assert!(!access.is_fleet_admin() && !access.is_fleet_wide());
        let wide_viewer = Access::new(vec![(Role::Viewer, g("*", "*"))]);
        assert!(wide_viewer.is_fleet_wide() && !wide_viewer.is_fleet_admin());
        assert!(Access::everything().is_fleet_admin());
        assert_eq!(Access::default().top_role(), None);
    }
}

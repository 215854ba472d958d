//! The caller's view: what one person may see and do in the fleet, made once per request
//! from their rules ([`Access`]) and the clusters Lookout is configured with.
//!
//! Every read — the fleet's lists and details, problems, budgets, forecasts, probes, the
//! history, the audit log, recent changes, action records, the live stream — takes a
//! [`View`] and nothing else about the caller. A cluster that is not configured is in no
//! view (a request naming it finds nothing, like a missing object), and each configured
//! cluster is either seen whole or through a list of namespace patterns, resolved once here
//! rather than by glob-matching cluster names per object.

use std::collections::BTreeMap;

use super::scope::{glob_match, Access, Grant, Role};

/// Which namespaces of one cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Namespaces {
    /// Every namespace, and so the cluster-scoped objects and whatever their findings name.
    Every,
    /// The namespaces matching these patterns (`*` any run of characters, `?` one).
    Matching(Vec<String>),
}

impl Namespaces {
    pub fn contains(&self, namespace: &str) -> bool {
        match self {
            Namespaces::Every => true,
            Namespaces::Matching(patterns) => patterns.iter().any(|p| glob_match(p, namespace)),
        }
    }

    /// The union of `self` and `patterns`.
    fn widen(&mut self, patterns: &[String]) {
        if patterns.iter().any(|p| p == "*") {
            *self = Namespaces::Every;
        } else if let Namespaces::Matching(mine) = self {
            for p in patterns {
                if !mine.contains(p) {
                    mine.push(p.clone());
                }
            }
        }
    }

    /// Exactly these namespaces (names, as a cluster's authorizer answered for them:
    /// Kubernetes names hold no `*` or `?`).
    pub fn named(names: Vec<String>) -> Namespaces {
        Namespaces::Matching(names)
    }

    fn union(&mut self, other: &Namespaces) {
        match other {
            Namespaces::Every => *self = Namespaces::Every,
            Namespaces::Matching(patterns) => self.widen(patterns),
        }
    }

    fn of(patterns: &[String]) -> Namespaces {
        let mut n = Namespaces::Matching(Vec::new());
        n.widen(patterns);
        n
    }
}

/// What the caller sees of one cluster, and where there they may act.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sight {
    pub read: Namespaces,
    /// None: they may run no action in this cluster.
    pub act: Option<Namespaces>,
}

impl Sight {
    /// Whether every namespace is visible.
    pub fn whole(&self) -> bool {
        self.read == Namespaces::Every
    }
}

/// One caller's view of the fleet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    clusters: BTreeMap<String, Sight>,
    /// Every namespace of every cluster, including clusters since removed from the
    /// configuration whose history is still kept.
    everything: bool,
    role: Option<Role>,
    fleet_admin: bool,
    /// Clusters that could not say what the caller may see (and so show nothing), with why.
    unanswered: BTreeMap<String, String>,
}

impl View {
    /// The view of a caller with `access` over the configured `clusters`.
    pub fn new<'a>(access: &Access, clusters: impl IntoIterator<Item = &'a str>) -> View {
        let rules = access.rules();
        let mut seen = BTreeMap::new();
        for cluster in clusters {
            let mut sight: Option<Sight> = None;
            for (role, grant) in rules.iter().filter(|(_, g)| covers(g, cluster)) {
                let s = sight.get_or_insert_with(|| Sight {
                    read: Namespaces::of(&grant.namespaces),
                    act: None,
                });
                s.read.widen(&grant.namespaces);
                if *role >= Role::Operator {
                    match &mut s.act {
                        Some(act) => act.widen(&grant.namespaces),
                        None => s.act = Some(Namespaces::of(&grant.namespaces)),
                    }
                }
            }
            if let Some(s) = sight {
                seen.insert(cluster.to_string(), s);
            }
        }
        View {
            clusters: seen,
            everything: access.is_fleet_wide(),
            role: access.top_role(),
            fleet_admin: access.is_fleet_admin(),
            unanswered: BTreeMap::new(),
        }
    }

    /// The view the clusters themselves grant (`auth.access_source = "kubernetes"`): per
    /// cluster what each cluster's authorizer said the person may list and where they may
    /// act. Its role is `operator` where they may act somewhere, else `viewer`; never a
    /// fleet admin.
    pub fn granted(sights: BTreeMap<String, Sight>, unanswered: BTreeMap<String, String>) -> View {
        let role = if sights.values().any(|s| s.act.is_some()) {
            Some(Role::Operator)
        } else if sights.is_empty() {
            None
        } else {
            Some(Role::Viewer)
        };
        View {
            clusters: sights,
            everything: false,
            role,
            fleet_admin: false,
            unanswered,
        }
    }

    /// What either view grants (`auth.access_source = "both"`).
    pub fn union(mut self, other: View) -> View {
        for (cluster, theirs) in other.clusters {
            match self.clusters.get_mut(&cluster) {
                None => {
                    self.clusters.insert(cluster, theirs);
                }
                Some(mine) => {
                    mine.read.union(&theirs.read);
                    match (&mut mine.act, theirs.act) {
                        (Some(a), Some(b)) => a.union(&b),
                        (None, Some(b)) => mine.act = Some(b),
                        _ => {}
                    }
                }
            }
        }
        self.everything |= other.everything;
        self.role = self.role.max(other.role);
        self.fleet_admin |= other.fleet_admin;
        self.unanswered.extend(other.unanswered);
        let seen = &self.clusters;
        self.unanswered.retain(|c, _| !seen.contains_key(c));
        self
    }

    /// Clusters that could not say what the caller may see, with why (nothing of them is
    /// shown unless a rule grants it).
    pub fn unanswered(&self) -> impl Iterator<Item = (&str, &str)> {
        self.unanswered
            .iter()
            .map(|(c, w)| (c.as_str(), w.as_str()))
    }

    /// The whole fleet, for Lookout's own fleet-wide work (metrics, the budgets every
    /// preview is checked against) and for `auth.mode = "none"`.
    pub fn whole_fleet<'a>(clusters: impl IntoIterator<Item = &'a str>) -> View {
        View::new(&Access::everything(), clusters)
    }

    /// Someone who sees nothing.
    pub fn nothing() -> View {
        View::new(&Access::default(), [])
    }

    /// This view narrowed to what a page's filters select: only `cluster` when given, and in
    /// it only `namespace` when given (and visible). What the view does not see stays unseen;
    /// a namespace that is no Kubernetes name (a pattern, say) selects nothing.
    pub fn narrowed(&self, cluster: Option<&str>, namespace: Option<&str>) -> View {
        let mut out = self.clone();
        if cluster.is_none() && namespace.is_none() {
            return out;
        }
        out.everything = false;
        out.unanswered.clear();
        out.clusters
            .retain(|c, _| cluster.is_none_or(|want| want == c));
        if let Some(ns) = namespace {
            let a_name = !ns.is_empty()
                && ns
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
            out.clusters
                .retain(|_, sight| a_name && sight.read.contains(ns));
            for sight in out.clusters.values_mut() {
                sight.read = Namespaces::named(vec![ns.to_string()]);
                if let Some(act) = sight.act.as_mut() {
                    *act = if act.contains(ns) {
                        Namespaces::named(vec![ns.to_string()])
                    } else {
                        Namespaces::named(Vec::new())
                    };
                }
            }
        }
        out
    }

    /// What the caller sees of `cluster`; None when nothing (or it is not configured).
    pub fn sight(&self, cluster: &str) -> Option<&Sight> {
        self.clusters.get(cluster)
    }

    /// The clusters the caller sees anything of, by name.
    pub fn clusters(&self) -> impl Iterator<Item = (&str, &Sight)> {
        self.clusters.iter().map(|(c, s)| (c.as_str(), s))
    }

    /// Whether every namespace of every cluster is visible (also the history of clusters no
    /// longer configured).
    pub fn sees_everything(&self) -> bool {
        self.everything
    }

    /// Whether the caller sees nothing at all.
    pub fn is_empty(&self) -> bool {
        self.clusters.is_empty() && !self.everything
    }

    pub fn sees_cluster(&self, cluster: &str) -> bool {
        self.clusters.contains_key(cluster)
    }

    /// Whether every namespace of `cluster` is visible (needed for cluster-scoped objects,
    /// whose findings may name objects of any namespace).
    pub fn sees_cluster_wide(&self, cluster: &str) -> bool {
        self.sight(cluster).is_some_and(Sight::whole)
    }

    /// Whether objects in `namespace` of `cluster` are visible.
    pub fn sees(&self, cluster: &str, namespace: &str) -> bool {
        self.sight(cluster)
            .is_some_and(|s| s.read.contains(namespace))
    }

    /// Whether the caller may run actions on objects in `namespace` of `cluster`.
    pub fn may_act(&self, cluster: &str, namespace: &str) -> bool {
        self.sight(cluster)
            .and_then(|s| s.act.as_ref())
            .is_some_and(|a| a.contains(namespace))
    }

    /// Whether the caller may run actions somewhere in `cluster`.
    pub fn may_act_in(&self, cluster: &str) -> bool {
        self.sight(cluster).is_some_and(|s| s.act.is_some())
    }

    /// Whether the caller may run actions anywhere.
    pub fn may_act_anywhere(&self) -> bool {
        self.clusters.values().any(|s| s.act.is_some())
    }

    /// The highest role of any rule that matched the caller.
    pub fn role(&self) -> Option<Role> {
        self.role
    }

    /// Admin over every cluster and namespace: may read fleet-wide operational data.
    pub fn fleet_admin(&self) -> bool {
        self.fleet_admin
    }
}

fn covers(grant: &Grant, cluster: &str) -> bool {
    grant.clusters.iter().any(|c| glob_match(c, cluster))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(c: &str, n: &str) -> Grant {
        Grant {
            clusters: vec![c.into()],
            namespaces: vec![n.into()],
        }
    }

    const FLEET: [&str; 3] = ["zrh-prod", "gva-prod", "zrh-test"];

    #[test]
    fn a_customer_sees_only_its_namespaces_of_configured_clusters() {
        let v = View::new(
            &Access::new(vec![(Role::Viewer, g("zrh-*", "acme-*"))]),
            FLEET,
        );
        assert!(v.sees("zrh-prod", "acme-shop") && v.sees("zrh-test", "acme-blog"));
        assert!(!v.sees("zrh-prod", "globex") && !v.sees("gva-prod", "acme-shop"));
        assert!(!v.sees_cluster("zrh-unknown"), "not configured: in no view");
        assert!(!v.sees_cluster_wide("zrh-prod") && !v.sees_everything());
        assert!(!v.may_act("zrh-prod", "acme-shop") && !v.may_act_anywhere());
        assert_eq!(v.clusters().count(), 2);
        assert!(View::nothing().is_empty() && !View::nothing().sees_cluster("zrh-prod"));
    }

    #[test]
    fn rules_combine_a_wide_view_with_a_narrow_right_to_act() {
        let access = Access::new(vec![
            (Role::Viewer, g("*", "acme-*")),
            (Role::Operator, g("zrh-prod", "acme-shop")),
            (Role::Viewer, g("gva-prod", "*")),
        ]);
        let v = View::new(&access, FLEET);
        assert!(v.sees("gva-prod", "acme-blog") && v.sees("gva-prod", "globex"));
        assert!(v.sees_cluster_wide("gva-prod") && !v.sees_cluster_wide("zrh-prod"));
        assert!(v.may_act("zrh-prod", "acme-shop"));
        assert!(!v.may_act("zrh-prod", "acme-blog") && !v.may_act("gva-prod", "acme-shop"));
        assert!(v.may_act_in("zrh-prod") && !v.may_act_in("gva-prod"));
        assert_eq!(v.role(), Some(Role::Operator));
        assert!(!v.fleet_admin() && !v.sees_everything());
    }

    #[test]
    fn a_view_granted_by_the_clusters_and_its_union_with_the_rules() {
        let granted = View::granted(
            BTreeMap::from([
                (
                    "zrh-prod".to_string(),
                    Sight {
                        read: Namespaces::named(vec!["team-a".into(), "team-b".into()]),
                        act: Some(Namespaces::named(vec!["team-a".into()])),
                    },
                ),
                (
                    "gva-prod".to_string(),
                    Sight {
                        read: Namespaces::Every,
                        act: None,
                    },
                ),
            ]),
            BTreeMap::from([("zrh-test".to_string(), "refused".to_string())]),
        );
        assert!(granted.sees("zrh-prod", "team-b") && !granted.sees("zrh-prod", "team-c"));
        assert!(granted.may_act("zrh-prod", "team-a") && !granted.may_act("zrh-prod", "team-b"));
        assert!(granted.sees_cluster_wide("gva-prod") && !granted.may_act_in("gva-prod"));
        assert_eq!(granted.role(), Some(Role::Operator));
        assert!(!granted.fleet_admin() && !granted.sees_everything());
        assert_eq!(granted.unanswered().count(), 1);
        assert_eq!(View::granted(BTreeMap::new(), BTreeMap::new()).role(), None);
        // "both": what either grants.
        let rules = View::new(
            &Access::new(vec![(Role::Operator, g("zrh-prod", "team-c"))]),
            FLEET,
        );
        let both = rules.union(granted);
        assert!(both.sees("zrh-prod", "team-c") && both.sees("zrh-prod", "team-a"));
        assert!(both.may_act("zrh-prod", "team-c") && both.may_act("zrh-prod", "team-a"));
        assert!(!both.may_act("zrh-prod", "team-b") && both.sees_cluster_wide("gva-prod"));
    }

    #[test]
    fn the_whole_fleet_sees_every_configured_cluster_whole() {
        let v = View::whole_fleet(FLEET);
        assert!(v.sees_everything() && v.fleet_admin());
        assert!(FLEET
            .iter()
            .all(|c| v.sees_cluster_wide(c) && v.may_act(c, "any")));
        assert!(!v.sees_cluster("elsewhere"));
    }

    #[test]
    fn a_view_narrowed_to_the_filters_sees_no_more_than_before() {
        let tenant = View::new(
            &Access::new(vec![(
                Role::Operator,
                Grant {
                    clusters: vec!["zrh".into()],
                    namespaces: vec!["acme-*".into()],
                },
            )]),
            ["zrh", "gva"],
        );
        let shop = tenant.narrowed(Some("zrh"), Some("acme-shop"));
        assert!(shop.sees("zrh", "acme-shop"));
        assert!(!shop.sees("zrh", "acme-blog"));
        assert!(shop.may_act("zrh", "acme-shop"));
        // Not widened: a namespace they do not see, a pattern, another cluster.
        assert!(tenant.narrowed(Some("zrh"), Some("globex")).is_empty());
        assert!(tenant.narrowed(None, Some("*")).is_empty());
        assert!(tenant.narrowed(Some("gva"), None).is_empty());
        let all = View::whole_fleet(["zrh", "gva"]);
        let gva = all.narrowed(Some("gva"), None);
        assert!(!gva.sees_everything());
        assert!(gva.sees_cluster_wide("gva"));
        assert!(!gva.sees_cluster("zrh"));
    }
}

//! `FleetReader` over the registry: each read picks the clusters the caller sees and hands
//! their cached data and findings to the app's read model, which applies the caller's
//! visibility (`lookout_app::model::read::Visibility`) and builds the views.

use std::sync::Arc;

use lookout_app::model::budget::Due;
use lookout_app::model::read::problems::{self, Problems};
use lookout_app::model::read::views::{
    BudgetQuery, CertificateDetail, CertificateQuery, CertificateRow, FindingQuery, IngressDetail,
    IngressQuery, IngressRow, ProblemQuery,
};
use lookout_app::model::read::{lists, Visibility};
use lookout_app::model::{Finding, ObjectKey, Page, View};
use lookout_app::ports::FleetReader;

use super::record::ClusterRecord;
use super::Registry;

impl Registry {
    /// The clusters `scope` sees (only `cluster` when given), with what it sees of each.
    fn visible<'a>(
        &'a self,
        view: &'a View,
        cluster: Option<&'a str>,
    ) -> impl Iterator<Item = (&'a Arc<ClusterRecord>, Visibility<'a>)> + 'a {
        self.records()
            .iter()
            .filter(move |c| cluster.is_none_or(|q| q == c.name))
            .filter_map(move |c| Some((c, Visibility::of(view, &c.name)?)))
    }

    /// The cluster of `key`, when the caller sees anything there.
    fn record<'a>(
        &'a self,
        view: &'a View,
        key: &ObjectKey,
    ) -> Option<(&'a Arc<ClusterRecord>, Visibility<'a>)> {
        self.visible(view, None)
            .find(|(c, _)| c.name == key.cluster)
    }
}

impl Registry {
    /// Each cluster `view` sees, as it sees it.
    pub(super) fn cluster_views(&self, view: &View) -> Vec<lookout_app::model::ClusterView> {
        self.visible(view, None)
            .map(|(c, visible)| c.view(&visible))
            .collect()
    }

    /// Every problem `view` sees, the fleet's findings (budgets as it may see them,
    /// tailnets) joined to the problem of the object they are about or standing alone.
    pub(super) fn all_problems(&self, view: &View) -> Vec<problems::Problem> {
        let mut cached = Vec::new();
        let mut own = Vec::new();
        for (c, visible) in self.visible(view, None) {
            if visible.whole_cluster() {
                cached.push(c.problems());
            } else {
                // Judged once for everyone; told as this caller may see it.
                own.extend(c.problems().iter().filter_map(|p| p.seen_by(&visible)));
            }
        }
        let fleet: Vec<Finding> =
            lookout_app::model::budget::findings(&self.budgets_for(view), (self.now)())
                .into_iter()
                .chain(self.tailnet_findings())
                .filter(|f| Visibility::of(view, &f.cluster).is_some_and(|v| v.finding(f)))
                .collect();
        problems::join_fleet(
            cached.iter().flat_map(|c| c.iter()).chain(&own),
            &fleet,
            (self.now)(),
        )
        .into_iter()
        .map(|p| p.into_owned())
        .collect()
    }
}

/// What a caller sees of the fleet, as a number that moves when any of it changes.
pub(crate) enum Seen {
    /// The fleet's change counter: the caller sees everything (it also moves with budgets
    /// and action progress), and reads what everyone who does reads.
    Fleet(u64),
    /// Derived from the visible parts of the visible clusters alone, so that one tenant
    /// cannot watch another's activity (or other clusters') through it.
    Part(u64),
}

/// One cluster as a live stream tells it: its name, sync state and the generation of what
/// the caller sees of it.
pub(crate) struct ClusterSeen {
    pub name: String,
    pub state: &'static str,
    pub generation: u64,
}

impl Registry {
    /// What `view` sees of the fleet, as one number ([`Seen`]).
    pub(crate) fn seen(&self, view: &View) -> Seen {
        use std::hash::{Hash, Hasher};
        if view.sees_everything() {
            return Seen::Fleet(self.changes.revision());
        }
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for c in self.clusters_seen(view) {
            (c.name, c.generation, c.state).hash(&mut h);
        }
        Seen::Part(h.finish())
    }

    /// Each cluster `view` sees, with the generation of what it sees there.
    pub(crate) fn clusters_seen(&self, view: &View) -> Vec<ClusterSeen> {
        self.visible(view, None)
            .map(|(c, visible)| ClusterSeen {
                name: c.name.clone(),
                state: c.state_label(),
                generation: c.visible_generation(&visible),
            })
            .collect()
    }

    /// The clusters still waiting for their first sync, of those `view` sees.
    pub(crate) fn pending_seen(&self, view: &View) -> Vec<String> {
        self.pending()
            .into_iter()
            .filter(|c| Visibility::of(view, c).is_some())
            .collect()
    }

    /// The probe's last round in numbers, for whoever sees everything (how many addresses
    /// were probed and refused across the fleet is the operators').
    pub(crate) fn probe_round(&self, view: &View) -> Option<super::probes::RoundStats> {
        view.sees_everything()
            .then(|| self.probes.last.lock().expect("probe status lock").clone())
    }

    /// The whole fleet's clusters and problems as a caller who sees everything sees them,
    /// made at most once per revision and second.
    fn whole_seen(&self, view: &View) -> Option<Arc<super::Whole>> {
        view.sees_everything().then(|| self.whole(view))
    }
}

impl FleetReader for Registry {
    fn clusters(&self, view: &View) -> Vec<lookout_app::model::ClusterView> {
        // Whoever sees everything reads the one kept copy (the sync strip of every page).
        if let Some(whole) = self.whole_seen(view) {
            return whole.clusters.as_ref().clone();
        }
        self.cluster_views(view)
    }

    fn cluster_list(&self, view: &View) -> Arc<Vec<lookout_app::model::ClusterView>> {
        if let Some(whole) = self.whole_seen(view) {
            return whole.clusters.clone();
        }
        Arc::new(self.cluster_views(view))
    }

    fn findings(&self, view: &View, q: &FindingQuery) -> Vec<Finding> {
        let mut out = Vec::new();
        for (c, visible) in self.visible(view, q.cluster.as_deref()) {
            // Each cluster's findings are in urgency order already: the sort below only
            // merges the clusters' runs.
            out.extend(
                c.findings()
                    .iter()
                    .filter(|f| lists::finding_selected(&visible, q, f))
                    .cloned(),
            );
        }
        // Built from the budgets as the caller may see them: a namespace-scoped caller's
        // findings name no one else's object and no one else's timing.
        let fleet = lookout_app::model::budget::findings(&self.budgets_for(view), (self.now)())
            .into_iter()
            .chain(self.tailnet_findings());
        out.extend(fleet.filter(|f| {
            Visibility::of(view, &f.cluster).is_some_and(|v| lists::finding_selected(&v, q, f))
        }));
        lookout_app::model::read::sort::findings(&mut out, q.sort);
        out
    }

    fn problems(&self, view: &View, q: &ProblemQuery) -> Problems {
        // The counts are of everything the caller sees (filters choose the list, never the
        // facts): `Problems::of` applies the filters to the list alone.
        if let Some(whole) = self.whole_seen(view) {
            return Problems::of(whole.problems.iter(), q);
        }
        let all = self.all_problems(view);
        Problems::of(all.iter(), q)
    }

    fn ingresses(&self, view: &View, q: &IngressQuery) -> Page<IngressRow> {
        let clusters: Vec<_> = self
            .visible(view, q.cluster.as_deref())
            .map(|(c, visible)| (visible, c.ingress_rows(), c.health()))
            .collect();
        lists::ingress_page(
            clusters
                .iter()
                .map(|(v, rows, health)| (*v, rows.as_ref(), health.as_ref())),
            q,
            &self.cluster_names(),
        )
    }

    fn ingress_health(
        &self,
        view: &View,
        q: &IngressQuery,
    ) -> Vec<Option<lookout_app::model::Severity>> {
        let clusters: Vec<_> = self
            .visible(view, q.cluster.as_deref())
            .map(|(c, visible)| (visible, c.ingress_rows(), c.health()))
            .collect();
        lists::ingress_health(
            clusters
                .iter()
                .map(|(v, rows, health)| (*v, rows.as_ref(), health.as_ref())),
            q,
        )
    }

    fn ingress(&self, view: &View, key: &ObjectKey) -> Option<IngressDetail> {
        let (c, visible) = self.record(view, key)?;
        let (findings, facts) = (c.findings(), c.facts());
        c.read(|data| {
            lists::ingress_detail(&visible, &facts, data, &findings, &key.namespace, &key.name)
        })
    }

    fn certificates(&self, view: &View, q: &CertificateQuery) -> Page<CertificateRow> {
        let now = (self.now)();
        let mut rows = Vec::new();
        for (c, visible) in self.visible(view, q.cluster.as_deref()) {
            let (findings, facts, health) = (c.findings(), c.facts(), c.health());
            c.read(|data| {
                lists::certificate_rows(
                    &visible, &facts, data, &findings, &health, q, now, &mut rows,
                )
            });
        }
        lists::certificate_page(rows, q, &self.cluster_names())
    }

    fn certificate(&self, view: &View, key: &ObjectKey) -> Option<CertificateDetail> {
        let (c, visible) = self.record(view, key)?;
        let (findings, facts) = (c.findings(), c.facts());
        c.read(|data| {
            lists::certificate_detail(&visible, &facts, data, &findings, &key.namespace, &key.name)
        })
    }

    fn issuer(
        &self,
        view: &View,
        cluster: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<lookout_app::model::read::issuer::IssuerDetail> {
        let (c, visible) = self.visible(view, Some(cluster)).next()?;
        let (findings, health) = (c.findings(), c.health());
        c.read(|data| {
            lookout_app::model::read::issuer::issuer_detail(
                &visible, &c.name, data, &findings, &health, namespace, name,
            )
        })
    }

    fn issuers(
        &self,
        view: &View,
        q: &lookout_app::model::read::issuer::IssuerQuery,
    ) -> Page<lookout_app::model::read::issuer::IssuerRow> {
        use lookout_app::model::read::issuer;
        let mut rows = Vec::new();
        for (c, visible) in self.visible(view, q.cluster.as_deref()) {
            let health = c.health();
            c.read(|data| issuer::issuer_rows(&visible, &c.name, data, &health, q, &mut rows));
        }
        issuer::issuer_page(rows, q, &self.cluster_names())
    }

    fn gateways(
        &self,
        view: &View,
        q: &lookout_app::model::read::gateways::GatewayQuery,
    ) -> Page<lookout_app::model::read::gateways::ListenerRow> {
        use lookout_app::model::read::gateways;
        let mut rows = Vec::new();
        for (c, visible) in self.visible(view, q.cluster.as_deref()) {
            let (health, facts) = (c.health(), c.facts());
            c.read(|data| {
                let idx = lookout_app::model::chain::Index::new(&facts, data);
                gateways::gateway_rows(&visible, &c.name, &idx, &health, q, &mut rows);
            });
        }
        gateways::gateway_page(rows, q, &self.cluster_names())
    }

    fn gateway(
        &self,
        view: &View,
        cluster: &str,
        namespace: &str,
        name: &str,
    ) -> Option<lookout_app::model::read::gateways::GatewayDetail> {
        let (c, visible) = self.visible(view, Some(cluster)).next()?;
        let (findings, health, facts) = (c.findings(), c.health(), c.facts());
        c.read(|data| {
            let idx = lookout_app::model::chain::Index::new(&facts, data);
            lookout_app::model::read::gateways::gateway_detail(
                &visible,
                &c.name,
                &idx,
                &findings,
                &health,
                (namespace, name),
            )
        })
    }

    fn policies(
        &self,
        view: &View,
        q: &lookout_app::model::read::policies::PolicyQuery,
    ) -> Page<lookout_app::model::read::policies::PolicyRow> {
        use lookout_app::model::read::policies;
        let mut rows = Vec::new();
        for (c, visible) in self.visible(view, q.cluster.as_deref()) {
            let health = c.health();
            c.read(|data| policies::policy_rows(&visible, &c.name, data, &health, q, &mut rows));
        }
        policies::policy_page(rows, q, &self.cluster_names())
    }

    fn policy(
        &self,
        view: &View,
        cluster: &str,
        namespace: &str,
        name: &str,
    ) -> Option<lookout_app::model::read::policies::PolicyDetail> {
        let (c, visible) = self.visible(view, Some(cluster)).next()?;
        let (findings, health, facts) = (c.findings(), c.health(), c.facts());
        c.read(|data| {
            lookout_app::model::read::policies::policy_detail(
                &visible,
                &c.name,
                data,
                &findings,
                &health,
                &facts,
                (namespace, name),
            )
        })
    }

    fn due(&self, view: &View, q: &BudgetQuery, until: chrono::DateTime<chrono::Utc>) -> Vec<Due> {
        let now = (self.now)();
        let mut out = Vec::new();
        for (c, visible) in self.visible(view, q.cluster.as_deref()) {
            let facts = c.facts();
            c.read(|data| {
                lists::due_issuances(
                    &visible,
                    &facts,
                    data,
                    q.namespace.as_deref(),
                    now,
                    until,
                    &mut out,
                )
            });
        }
        out
    }

    fn probes(
        &self,
        view: &View,
        cluster: Option<&str>,
        namespace: Option<&str>,
        host: Option<&str>,
    ) -> Vec<lookout_app::model::probe::ProbeRow> {
        let mut out = Vec::new();
        for (c, visible) in self.visible(view, cluster) {
            let probes = c.read(|d| d.probes.clone());
            out.extend(lookout_app::model::probe::visible_rows(
                &c.name,
                &probes,
                |ns| visible.namespace(ns),
                host,
                namespace,
            ));
        }
        out
    }
}

//! The scoped read side: `FleetReader` over the registry's cached data.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use lookout_app::model::certificate::CertificateView;
use lookout_app::model::chain::Index;
use lookout_app::model::text::Text;
use lookout_app::model::{Finding, IngressView, ObjectKey, Page, Scope, Severity};
use lookout_app::ports::{
    CertificateDetail, CertificateQuery, CertificateRow, FindingQuery, FleetReader, IngressDetail,
    IngressQuery, IngressRow,
};

use super::record::{CachedIngressRow, ClusterRecord, IngressRows};
use super::Registry;

/// (namespace, kind, name) of an object a finding can be about.
type ObjRef = (String, String, String);

fn obj(ns: &str, kind: &str, name: &str) -> ObjRef {
    (ns.to_string(), kind.to_string(), name.to_string())
}

/// The objects of a Certificate's chain: itself, its requests, orders and challenges, and
/// its issuer.
fn certificate_objects(idx: &Index<'_>, c: &CertificateView, out: &mut HashSet<ObjRef>) {
    out.insert(obj(&c.namespace, "Certificate", &c.name));
    if let Some(r) = &c.issuer {
        let ns = if &*r.kind == "ClusterIssuer" {
            ""
        } else {
            &*c.namespace
        };
        out.insert(obj(ns, &r.kind, &r.name));
    }
    for r in idx.requests_of(c) {
        out.insert(obj(&r.namespace, "CertificateRequest", &r.name));
        for o in idx.orders_of(r) {
            out.insert(obj(&o.namespace, "Order", &o.name));
            for ch in idx.challenges_of(o) {
                out.insert(obj(&ch.namespace, "Challenge", &ch.name));
            }
        }
    }
}

fn ingress_objects(idx: &Index<'_>, ing: &IngressView) -> HashSet<ObjRef> {
    let mut out = HashSet::new();
    out.insert(obj(&ing.namespace, "Ingress", &ing.name));
    if let Some(r) = &ing.issuer {
        let ns = if &*r.kind == "ClusterIssuer" {
            ""
        } else {
            &*ing.namespace
        };
        out.insert(obj(ns, &r.kind, &r.name));
    }
    for c in idx.certificates_of(ing) {
        certificate_objects(idx, c, &mut out);
    }
    out
}

/// Findings by the object they are about, so a chain's findings are a few lookups rather than
/// a scan of every finding of the cluster per object.
struct FindingIndex<'a>(HashMap<(&'a str, &'a str, &'a str), Vec<&'a Finding>>);

impl<'a> FindingIndex<'a> {
    fn new(findings: &'a [Finding]) -> Self {
        let mut map: HashMap<_, Vec<&Finding>> = HashMap::new();
        for f in findings {
            map.entry((&*f.namespace, &*f.kind, &*f.name))
                .or_default()
                .push(f);
        }
        FindingIndex(map)
    }

    /// The findings about any of `objects` (no scope applied).
    fn of<'s>(&'s self, objects: &'s HashSet<ObjRef>) -> impl Iterator<Item = &'a Finding> + 's {
        objects
            .iter()
            .filter_map(|(ns, kind, name)| self.0.get(&(ns.as_str(), kind.as_str(), name.as_str())))
            .flatten()
            .copied()
    }

    /// The findings about any of `objects` that `scope` may see.
    fn about(&self, scope: &Scope, objects: &HashSet<ObjRef>) -> Vec<Finding> {
        self.of(objects)
            .filter(|f| scope.sees_finding(f))
            .cloned()
            .collect()
    }
}

/// The Events about every object of a chain, newest first, at most 50.
fn chain_events(
    idx: &Index<'_>,
    objects: &HashSet<ObjRef>,
) -> Vec<lookout_app::model::infra::EventView> {
    let mut events = Vec::new();
    for (ns, kind, name) in objects {
        events.extend(idx.events_of(kind, ns, name, 20));
    }
    events.sort_by_key(|e| std::cmp::Reverse(e.last_seen));
    events.truncate(50);
    events
}

/// The Ingress rows of one cluster (see `ClusterRecord::ingress_rows`).
pub(super) fn ingress_rows(
    findings: &[Finding],
    facts: &lookout_app::model::data::ClusterFacts,
    data: &lookout_app::model::data::ClusterData,
) -> IngressRows {
    let by_object = FindingIndex::new(findings);
    let idx = Index::new(facts, data);
    let mut out = IngressRows::new();
    for ing in data.ingresses.values() {
        let objects = ingress_objects(&idx, ing);
        out.entry(ing.namespace.clone())
            .or_default()
            .push(CachedIngressRow {
                ingress: ing.clone(),
                annotation: idx.annotation_status(ing),
                chain: by_object
                    .of(&objects)
                    .map(|f| (f.severity, needs_cluster_wide(f)))
                    .collect(),
            });
    }
    for rows in out.values_mut() {
        rows.sort_by(|a, b| a.ingress.name.cmp(&b.ingress.name));
        // Kept until the next change: without the slack of its growth.
        rows.shrink_to_fit();
    }
    out
}

/// Whether only callers who see the whole cluster may see a finding (see `Scope::sees_finding`).
fn needs_cluster_wide(f: &Finding) -> bool {
    f.namespace.is_empty() && f.rule != "cluster.unreachable"
}

fn worst(findings: &[Finding]) -> Option<Severity> {
    findings.iter().map(|f| f.severity).min()
}

fn text_matches(hay: &[&str], q: &str) -> bool {
    let q = q.to_ascii_lowercase();
    hay.iter().any(|h| h.to_ascii_lowercase().contains(&q))
}

fn certificate_status_matches(
    c: &CertificateView,
    status: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> bool {
    let expired = c.not_after.is_some_and(|na| na <= now);
    match status {
        "ready" => c.is_ready(),
        "not-ready" => !c.is_ready(),
        "expired" => expired,
        "failing" => c.failed_issuance_attempts.unwrap_or(0) >= 1,
        _ => true,
    }
}

impl Registry {
    fn visible<'a>(
        &'a self,
        scope: &'a Scope,
        cluster: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Arc<ClusterRecord>> + 'a {
        self.records()
            .iter()
            .filter(move |c| scope.sees_cluster(&c.name) && cluster.is_none_or(|q| q == c.name))
    }

    fn record(&self, scope: &Scope, key: &ObjectKey) -> Option<&Arc<ClusterRecord>> {
        if !scope.sees(&key.cluster, &key.namespace) {
            return None;
        }
        self.records().iter().find(|c| c.name == key.cluster)
    }
}

impl FleetReader for Registry {
    fn clusters(&self, scope: &Scope) -> Vec<lookout_app::model::ClusterView> {
        self.visible(scope, None).map(|c| c.view(scope)).collect()
    }

    fn findings(&self, scope: &Scope, q: &FindingQuery) -> Vec<Finding> {
        let wanted = |f: &Finding| {
            scope.sees_finding(f)
                && q.cluster.as_ref().is_none_or(|c| **c == *f.cluster)
                && q.namespace.as_ref().is_none_or(|ns| **ns == *f.namespace)
                && q.severity.is_none_or(|s| s == f.severity)
                && q.rule.as_ref().is_none_or(|r| r == f.rule)
        };
        let mut out = Vec::new();
        for c in self.visible(scope, q.cluster.as_deref()) {
            // Each cluster's findings are in urgency order already: the sort below only
            // merges the clusters' runs.
            out.extend(c.findings().iter().filter(|f| wanted(f)).cloned());
        }
        out.extend(
            lookout_app::model::budget::findings(&self.budgets(), (self.now)())
                .into_iter()
                .filter(|f| wanted(f)),
        );
        lookout_app::sort::findings(&mut out, q.sort);
        out
    }

    fn ingresses(&self, scope: &Scope, q: &IngressQuery) -> Page<IngressRow> {
        let clusters: Vec<_> = self
            .visible(scope, q.cluster.as_deref())
            .map(|c| (c, c.ingress_rows(), scope.sees_cluster_wide(&c.name)))
            .collect();
        // Candidates in the default order: clusters as configured, then namespace, then name.
        let mut matching = Vec::new();
        for (c, rows, cluster_wide) in &clusters {
            let namespaces: Box<dyn Iterator<Item = (&Text, &Vec<CachedIngressRow>)>> =
                match &q.namespace {
                    Some(ns) => Box::new(rows.get_key_value(ns.as_str()).into_iter()),
                    None => Box::new(rows.iter()),
                };
            for (ns, rows) in namespaces {
                if !scope.sees(&c.name, ns) {
                    continue;
                }
                matching.extend(
                    rows.iter()
                        .filter(|r| {
                            q.q.as_ref().is_none_or(|t| r.ingress.matches_text(t))
                                && q.status.as_ref().is_none_or(|s| s == r.annotation.label())
                        })
                        .map(|r| (r, *cluster_wide)),
                );
            }
        }
        let row = |(r, cluster_wide): &(&CachedIngressRow, bool)| {
            let seen = r.chain.iter().filter(|(_, wide)| *cluster_wide || !wide);
            IngressRow {
                ingress: r.ingress.clone(),
                annotation: r.annotation.clone(),
                worst: seen.clone().map(|(s, _)| *s).min(),
                findings: seen.count(),
            }
        };
        let (page, per_page) = (q.page.max(1), q.per_page.max(1));
        if q.sort.is_none() {
            // Already in order: only the page's rows are made.
            return Page {
                items: matching
                    .iter()
                    .skip((page - 1).saturating_mul(per_page))
                    .take(per_page)
                    .map(row)
                    .collect(),
                total: matching.len(),
                page,
                per_page,
            };
        }
        let mut rows: Vec<IngressRow> = matching.iter().map(row).collect();
        lookout_app::sort::ingresses(&mut rows, q.sort, &self.cluster_names());
        Page::of(rows, page, per_page)
    }

    fn ingress(&self, scope: &Scope, key: &ObjectKey) -> Option<IngressDetail> {
        let c = self.record(scope, key)?;
        let findings = c.findings();
        let facts = c.facts();
        c.read(|data| {
            let ing = data
                .ingresses
                .get(&lookout_app::model::data::key(&key.namespace, &key.name))?;
            let idx = Index::new(&facts, data);
            let objects = ingress_objects(&idx, ing);
            let events = chain_events(&idx, &objects);
            Some(IngressDetail {
                ingress: ing.as_ref().clone(),
                annotation: idx.annotation_status(ing),
                controller: idx.controller_of(ing),
                tls: idx.tls_chains(ing),
                findings: FindingIndex::new(&findings).about(scope, &objects),
                events,
            })
        })
    }

    fn certificates(&self, scope: &Scope, q: &CertificateQuery) -> Page<CertificateRow> {
        let now = (self.now)();
        let mut rows = Vec::new();
        for c in self.visible(scope, q.cluster.as_deref()) {
            let findings = c.findings();
            let by_object = FindingIndex::new(&findings);
            let facts = c.facts();
            c.read(|data| {
                let idx = Index::new(&facts, data);
                for ((ns, _), cert) in &data.certificates {
                    if !scope.sees(&c.name, ns) || q.namespace.as_ref().is_some_and(|x| **x != **ns)
                    {
                        continue;
                    }
                    if let Some(t) = &q.q {
                        let mut hay: Vec<&str> = vec![&cert.name, &cert.namespace];
                        hay.extend(cert.dns_names.iter().map(|n| &**n));
                        if !text_matches(&hay, t) {
                            continue;
                        }
                    }
                    if q.status
                        .as_ref()
                        .is_some_and(|s| !certificate_status_matches(cert, s, now))
                    {
                        continue;
                    }
                    let mut objects = HashSet::new();
                    certificate_objects(&idx, cert, &mut objects);
                    let chain_issuer = cert
                        .issuer
                        .as_ref()
                        .and_then(|r| idx.issuer(&cert.namespace, r));
                    rows.push(CertificateRow {
                        certificate: cert.as_ref().clone(),
                        server: chain_issuer
                            .map(|i| i.server)
                            .unwrap_or(lookout_app::model::issuer::AcmeServer::NotAcme),
                        ingress: idx.ingress_of(cert).map(|i| i.name.to_string()),
                        worst: worst(&by_object.about(scope, &objects)),
                    });
                }
            });
        }
        lookout_app::sort::certificates(&mut rows, q.sort, &self.cluster_names());
        Page::of(rows, q.page.max(1), q.per_page.max(1))
    }

    fn certificate(&self, scope: &Scope, key: &ObjectKey) -> Option<CertificateDetail> {
        let c = self.record(scope, key)?;
        let findings = c.findings();
        let facts = c.facts();
        c.read(|data| {
            let cert = data
                .certificates
                .get(&lookout_app::model::data::key(&key.namespace, &key.name))?;
            let idx = Index::new(&facts, data);
            let mut objects = HashSet::new();
            certificate_objects(&idx, cert, &mut objects);
            let events = chain_events(&idx, &objects);
            Some(CertificateDetail {
                chain: idx.certificate_chain(cert),
                ingress: idx.ingress_of(cert).map(|i| i.name.to_string()),
                findings: FindingIndex::new(&findings).about(scope, &objects),
                events,
            })
        })
    }
}

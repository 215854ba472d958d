//! Each list and chain view, built from one cluster's cached data and findings as one
//! caller may see them.

use crate::model::policy::PolicyRef;
use crate::model::Rule;
use foldhash::{HashSet, HashSetExt};
use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::chain::{certificate_objects, chain_events, ingress_objects, FindingIndex};
use super::problems::Health;
use super::views::{
    CertificateDetail, CertificateQuery, CertificateRow, CertificateStatus, FindingQuery,
    IngressDetail, IngressQuery, IngressRow,
};
use super::Visibility;
use crate::model::budget::Due;
use crate::model::certificate::CertificateView;
use crate::model::chain::{AnnotationStatus, Index};
use crate::model::data::{key, ClusterData, ClusterFacts};
use crate::model::issuer::AcmeServer;
use crate::model::text::Text;
use crate::model::{Finding, IngressView, Page, Severity};

/// An Ingress row computed once per data generation for every caller: the findings of its
/// chain are kept as (severity, visible only with the whole cluster) so each caller's
/// visibility can be applied to them.
pub struct CachedIngressRow {
    pub ingress: Arc<IngressView>,
    pub annotation: AnnotationStatus,
    pub chain: Box<[(Severity, bool)]>,
}

/// The Ingress rows of a cluster by namespace, each namespace's rows in name order (so the
/// list's default order needs no sorting and a namespace filter reads only its namespace).
/// Each namespace's rows are shared: after a change, only its namespace's are made again.
pub type IngressRows = BTreeMap<Text, Arc<[CachedIngressRow]>>;

/// The Ingress rows of one cluster, for every caller.
pub fn ingress_rows(findings: &[Finding], facts: &ClusterFacts, data: &ClusterData) -> IngressRows {
    rows(FindingIndex::new(findings), facts, data)
}

/// The Ingress rows of the namespaces of `data` (one namespace's part of a cluster, say),
/// from `findings` — those about its objects and the cluster-scoped ones are enough.
pub fn ingress_rows_of(
    findings: &[&Finding],
    facts: &ClusterFacts,
    data: &ClusterData,
) -> IngressRows {
    rows(FindingIndex::from_refs(findings), facts, data)
}

fn rows(by_object: FindingIndex<'_>, facts: &ClusterFacts, data: &ClusterData) -> IngressRows {
    let idx = Index::new(facts, data);
    let mut out: BTreeMap<Text, Vec<CachedIngressRow>> = BTreeMap::new();
    for ing in data.ingresses.values() {
        let objects = ingress_objects(&idx, ing);
        out.entry(ing.namespace.clone())
            .or_default()
            .push(CachedIngressRow {
                ingress: ing.clone(),
                annotation: idx.annotation_status(ing),
                chain: by_object
                    .of(&objects)
                    .map(|f| (f.severity, f.needs_whole_cluster()))
                    .collect(),
            });
    }
    out.into_iter()
        .map(|(ns, mut rows)| {
            rows.sort_by(|a, b| a.ingress.name.cmp(&b.ingress.name));
            (ns, rows.into())
        })
        .collect()
}

/// The rows of the visible clusters that `q` selects (its paging and order aside), in the
/// default order: clusters as configured, then namespace, then name.
fn matching_ingresses<'a>(
    visible: impl IntoIterator<Item = (Visibility<'a>, &'a IngressRows, &'a Health)>,
    q: &IngressQuery,
) -> Vec<(&'a CachedIngressRow, bool, &'a Health)> {
    let mut matching = Vec::new();
    for (v, rows, health) in visible {
        let namespaces: Box<dyn Iterator<Item = (&Text, &Arc<[CachedIngressRow]>)>> =
            match &q.namespace {
                Some(ns) => Box::new(rows.get_key_value(ns.as_str()).into_iter()),
                None => Box::new(rows.iter()),
            };
        for (ns, rows) in namespaces {
            if !v.namespace(ns) {
                continue;
            }
            matching.extend(
                rows.iter()
                    .filter(|r| {
                        q.q.as_ref().is_none_or(|t| r.ingress.matches_text(t))
                            && q.status
                                .as_ref()
                                .is_none_or(|s| s.contains(r.annotation.state()))
                    })
                    .map(|r| (r, v.whole_cluster(), health)),
            );
        }
    }
    matching
}

/// The health of every Ingress `q` selects, its paging aside: what the Ingress list's health
/// line counts, without making every row.
pub fn ingress_health<'a>(
    visible: impl IntoIterator<Item = (Visibility<'a>, &'a IngressRows, &'a Health)>,
    q: &IngressQuery,
) -> Vec<Option<crate::model::Severity>> {
    matching_ingresses(visible, q)
        .into_iter()
        .map(|(r, _, health)| {
            health
                .get(&(
                    crate::model::Kind::Ingress.into(),
                    r.ingress.namespace.clone(),
                    r.ingress.name.clone(),
                ))
                .copied()
        })
        .collect()
}

/// The page of the Ingress list that `q` asks for, from the visible clusters' rows in
/// configuration order (`clusters` names them all, for sorting by cluster).
pub fn ingress_page<'a>(
    visible: impl IntoIterator<Item = (Visibility<'a>, &'a IngressRows, &'a Health)>,
    q: &IngressQuery,
    clusters: &[String],
) -> Page<IngressRow> {
    let matching = matching_ingresses(visible, q);
    let row = |(r, whole, health): &(&CachedIngressRow, bool, &Health)| {
        let seen = r.chain.iter().filter(|(_, wide)| *whole || !wide);
        IngressRow {
            ingress: r.ingress.clone(),
            annotation: r.annotation.clone(),
            worst: seen.clone().map(|(s, _)| *s).min(),
            severity: health
                .get(&(
                    crate::model::Kind::Ingress.into(),
                    r.ingress.namespace.clone(),
                    r.ingress.name.clone(),
                ))
                .copied(),
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
    super::sort::ingresses(&mut rows, q.sort, clusters);
    Page::of(rows, page, per_page)
}

/// One Ingress with its chain, as the caller may see it; None when it is not there or not
/// visible.
pub fn ingress_detail(
    visible: &Visibility<'_>,
    facts: &ClusterFacts,
    data: &ClusterData,
    findings: &[Finding],
    namespace: &str,
    name: &str,
) -> Option<IngressDetail> {
    if !visible.namespace(namespace) {
        return None;
    }
    let ing = data.ingresses.get(&key(namespace, name))?;
    let idx = Index::new(facts, data);
    let objects = ingress_objects(&idx, ing);
    let mut tls = idx.tls_chains(ing);
    for chain in tls.iter_mut().filter_map(|t| t.certificate.as_mut()) {
        for_the_caller(visible, chain);
    }
    Some(IngressDetail {
        ingress: ing.as_ref().clone(),
        annotation: idx.annotation_status(ing),
        policy: crate::model::policy::PolicyRef::of(data, ing).map(|p| PolicyRef {
            repairable: if p.namespace.is_empty() {
                visible.whole_cluster()
            } else {
                visible.namespace(&p.namespace)
            },
            ..p
        }),
        controller: idx.controller_of(ing),
        tls,
        findings: FindingIndex::new(findings).about(visible, &objects),
        events: chain_events(&idx, visible, &objects),
        clients_get: crate::model::probe::published_in(&data.probes, namespace)
            .into_iter()
            .filter(|o| {
                o.sources
                    .iter()
                    .any(|s| s.kind == "Ingress" && s.name == name)
            })
            .collect(),
    })
}

/// The rules that say a Certificate's hosts serve something else than what was issued.
const SERVES_SOMETHING_ELSE: [crate::model::Rule; 4] = [
    Rule::ProbeWrongCertificate,
    Rule::ProbeExpired,
    Rule::ProbeNameMismatch,
    Rule::ProbeUntrusted,
];

/// Adds the Certificates of one cluster that the caller sees and `q` selects to `out`.
#[allow(clippy::too_many_arguments)]
pub fn certificate_rows(
    visible: &Visibility<'_>,
    facts: &ClusterFacts,
    data: &ClusterData,
    findings: &[Finding],
    health: &Health,
    q: &CertificateQuery,
    now: DateTime<Utc>,
    out: &mut Vec<CertificateRow>,
) {
    let by_object = FindingIndex::new(findings);
    let idx = Index::new(facts, data);
    for ((ns, _), cert) in &data.certificates {
        if !visible.namespace(ns) || q.namespace.as_ref().is_some_and(|x| **x != **ns) {
            continue;
        }
        if q.q
            .as_ref()
            .is_some_and(|t| !certificate_matches_text(cert, t))
        {
            continue;
        }
        if q.status
            .is_some_and(|s| s != CertificateStatus::Failing && !s.holds(cert, &[], now))
        {
            continue;
        }
        if q.expires
            .is_some_and(|w| w != super::views::ExpiryWindow::of(cert.not_after, now))
        {
            continue;
        }
        let mut objects = HashSet::new();
        certificate_objects(&idx, cert, &mut objects);
        let about = by_object.about(visible, &objects);
        if q.status == Some(CertificateStatus::Failing)
            && !CertificateStatus::Failing.holds(cert, &about, now)
        {
            continue;
        }
        if q.served == Some(super::views::ServedFilter::Other)
            && !about.iter().any(|f| {
                SERVES_SOMETHING_ELSE.contains(&f.rule)
                    && f.kind == crate::model::Kind::Certificate
                    && f.name == cert.name
            })
        {
            continue;
        }
        let chain_issuer = cert
            .issuer
            .as_ref()
            .and_then(|r| idx.issuer(&cert.namespace, r));
        out.push(CertificateRow {
            certificate: cert.as_ref().clone(),
            server: chain_issuer
                .map(|i| i.server)
                .unwrap_or(AcmeServer::IssuerNotFound),
            ingress: idx.ingress_of(cert).map(|i| i.name.to_string()),
            worst: about.iter().map(|f| f.severity).min(),
            severity: health
                .get(&(
                    crate::model::Kind::Certificate.into(),
                    cert.namespace.clone(),
                    cert.name.clone(),
                ))
                .copied(),
        });
    }
}

/// The Let's Encrypt Certificates of one cluster the caller sees (in `namespace` when
/// given) that will be issued before `until` ([`Due::of`]).
pub fn due_issuances(
    visible: &Visibility<'_>,
    facts: &ClusterFacts,
    data: &ClusterData,
    namespace: Option<&str>,
    now: DateTime<Utc>,
    until: DateTime<Utc>,
    out: &mut Vec<Due>,
) {
    let idx = Index::new(facts, data);
    for ((ns, _), cert) in &data.certificates {
        if !visible.namespace(ns) || namespace.is_some_and(|x| x != &**ns) {
            continue;
        }
        let Some(issuer) = cert
            .issuer
            .as_ref()
            .and_then(|r| idx.issuer(&cert.namespace, r))
        else {
            continue;
        };
        if !matches!(
            issuer.server,
            AcmeServer::LetsEncryptProduction | AcmeServer::LetsEncryptStaging
        ) {
            continue;
        }
        let Some(server) = issuer.acme_server_url.as_deref() else {
            continue;
        };
        let account = crate::model::budget::account(
            &cert.cluster,
            issuer.namespace.as_deref().unwrap_or(""),
            &issuer.kind,
            &issuer.name,
        );
        out.extend(Due::of(cert, (server, Some(account)), now, until));
    }
}

/// The page of the Certificate list `q` asks for, from every visible cluster's rows.
pub fn certificate_page(
    mut rows: Vec<CertificateRow>,
    q: &CertificateQuery,
    clusters: &[String],
) -> Page<CertificateRow> {
    super::sort::certificates(&mut rows, q.sort, clusters);
    Page::of(rows, q.page.max(1), q.per_page.max(1))
}

/// One Certificate with its chain, as the caller may see it; None when it is not there or
/// not visible.
pub fn certificate_detail(
    visible: &Visibility<'_>,
    facts: &ClusterFacts,
    data: &ClusterData,
    findings: &[Finding],
    namespace: &str,
    name: &str,
) -> Option<CertificateDetail> {
    if !visible.namespace(namespace) {
        return None;
    }
    let cert = data.certificates.get(&key(namespace, name))?;
    let idx = Index::new(facts, data);
    let mut objects = HashSet::new();
    certificate_objects(&idx, cert, &mut objects);
    let mut chain = idx.certificate_chain(cert);
    for_the_caller(visible, &mut chain);
    Some(CertificateDetail {
        chain,
        ingress: idx.ingress_of(cert).map(|i| i.name.to_string()),
        findings: FindingIndex::new(findings).about(visible, &objects),
        events: chain_events(&idx, visible, &objects),
        clients_get: crate::model::probe::published_in(&data.probes, namespace)
            .into_iter()
            .filter(|o| {
                cert.dns_names
                    .iter()
                    .any(|n| crate::model::probe::name_matches(n, &o.host))
            })
            .collect(),
    })
}

/// What a namespace-scoped caller may know of a cluster-scoped issuer: its kind, name,
/// readiness and whether it is Let's Encrypt production, staging or another CA — not another
/// CA's directory URL (an internal address) nor the Ready message that may quote it, nor its
/// solvers (the cluster's setup).
fn for_the_caller(visible: &Visibility<'_>, chain: &mut crate::model::chain::CertificateChain) {
    if visible.whole_cluster() {
        return;
    }
    if let Some(issuer) = chain.issuer.as_mut().filter(|i| i.kind == "ClusterIssuer") {
        if !matches!(
            issuer.server,
            crate::model::issuer::AcmeServer::LetsEncryptProduction
                | crate::model::issuer::AcmeServer::LetsEncryptStaging
        ) {
            issuer.acme_server_url = None;
            // Its Ready message quotes the CA's address when registration fails.
            if let Some(ready) = issuer.ready.as_mut() {
                ready.message = None;
            }
        }
        issuer.solvers = std::sync::Arc::from([]);
    }
}

/// Whether the caller sees `f` and the board's filters select it.
pub fn finding_selected(visible: &Visibility<'_>, q: &FindingQuery, f: &Finding) -> bool {
    visible.finding(f)
        && q.cluster.as_ref().is_none_or(|c| **c == *f.cluster)
        && q.namespace.as_ref().is_none_or(|ns| **ns == *f.namespace)
        && q.severity.is_none_or(|s| s == f.severity)
        && q.rule.as_ref().is_none_or(|r| r == f.rule.id())
}

/// Name, namespace or a dnsName contains `q` (ignoring case).
fn certificate_matches_text(c: &CertificateView, q: &str) -> bool {
    let q = q.to_ascii_lowercase();
    [&*c.name, &*c.namespace]
        .into_iter()
        .chain(c.dns_names.iter().map(|n| &**n))
        .any(|h| h.to_ascii_lowercase().contains(&q))
}

/// The rules that say a Certificate's issuance fails, found on it or on its chain: a failed
/// attempt counted, or the attempt in flight held by a challenge failing its self-check (as
/// with cert-manager's default self-check, which counts no failure), no usable solver, a
/// denied request, or Let's Encrypt's refusal.
const ISSUANCE_FAILS: [Rule; 6] = [
    Rule::CertIssuanceFailing,
    Rule::AcmeChallengeFailing,
    Rule::AcmeNoSolver,
    Rule::CertRequestDenied,
    Rule::AcmeRateLimited,
    Rule::AcmePaused,
];

impl CertificateStatus {
    /// Whether `c` is in this state at `now`, `chain` being the findings on it and its chain
    /// the caller sees (the list's `status=` filter, and what a bulk renew covers).
    pub fn holds(self, c: &CertificateView, chain: &[Finding], now: DateTime<Utc>) -> bool {
        match self {
            CertificateStatus::Ready => c.is_ready(),
            CertificateStatus::NotReady => !c.is_ready(),
            CertificateStatus::Expired => c.not_after.is_some_and(|na| na <= now),
            CertificateStatus::Failing => {
                c.rare.failed_issuance_attempts.unwrap_or(0) >= 1
                    || chain.iter().any(|f| ISSUANCE_FAILS.contains(&f.rule))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::CertificateStatus;
    use crate::model::certificate::CertificateView;
    use crate::model::rules::fixtures::now;
    use crate::model::{Finding, IngressView, Rule, Severity};

    fn on_chain(rule: Rule) -> Finding {
        Finding {
            rule,
            severity: Severity::Critical,
            cluster: "zrh".into(),
            namespace: "acme".into(),
            kind: crate::model::Kind::Challenge.into(),
            name: "shop-tls-1-1-1".into(),
            title: "t".into(),
            message: "m".into(),
            remediation: "r".into(),
            since: None,
            commands: None,
            host: None,
        }
    }

    #[test]
    fn failing_is_a_failed_attempt_or_an_attempt_that_cannot_succeed() {
        let shop = IngressView::test("shop")
            .in_ns("acme")
            .with_issuer("letsencrypt-prod")
            .tls("shop.example.com");
        let cert = CertificateView::of(&shop).issuing();
        // No failure counted: a challenge failing cert-manager's self-check stays pending.
        assert!(!CertificateStatus::Failing.holds(&cert, &[], now()));
        assert!(CertificateStatus::Failing.holds(
            &cert,
            &[on_chain(Rule::AcmeChallengeFailing)],
            now()
        ));
        assert!(CertificateStatus::Failing.holds(
            &cert,
            &[on_chain(Rule::CertRequestDenied)],
            now()
        ));
        // What a new certificate ends is not a failing issuance.
        assert!(!CertificateStatus::Failing.holds(
            &cert,
            &[on_chain(Rule::ProbeNoCertificate)],
            now()
        ));
        let failed = CertificateView::of(&shop).failing(1, chrono::Duration::minutes(5));
        assert!(CertificateStatus::Failing.holds(&failed, &[], now()));
    }
}

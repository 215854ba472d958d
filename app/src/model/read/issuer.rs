//! One issuer as a caller sees it: whether it is ready in words, which ACME server it talks
//! to, how it solves challenges, and the Certificates that use it — what "Open the issuer"
//! opens. A namespace-scoped caller sees a ClusterIssuer's readiness and server kind, and
//! only their own Certificates; its message, URL and solvers (which may name other
//! tenants' hosts and zones) only whoever sees the whole cluster.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::Visibility;
use crate::model::data::ClusterData;
use crate::model::finding::Finding;
use crate::model::issuer::AcmeServer;
use crate::model::refs::IssuerRef;
use crate::model::text::Text;
use crate::model::{Kind, Severity, Subject};

/// Whether an issuerRef names a ClusterIssuer (Some(true)), an Issuer (Some(false)), or
/// another kind (an external issuer: None).
fn cluster_wide(r: &IssuerRef) -> Option<bool> {
    match Kind::from_name(&r.kind)? {
        Kind::ClusterIssuer => Some(true),
        Kind::Issuer => Some(false),
        _ => None,
    }
}

/// A Certificate that names the issuer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IssuerUser {
    pub namespace: Text,
    pub name: Text,
    pub hosts: Vec<Text>,
    /// Its Ready condition's status; None without one.
    pub ready: Option<crate::model::object::ConditionStatus>,
    pub not_after: Option<DateTime<Utc>>,
    /// The Ingress that owns it, when ingress-shim made it.
    pub ingress: Option<Text>,
    /// Its health: the severity of the most severe problem holding it, as every list and
    /// page tells it; None when no problem does.
    pub severity: Option<Severity>,
}

/// The issuer page's data (`/issuers/{cluster}/{namespace or _}/{name}`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IssuerDetail {
    pub cluster: String,
    /// `Issuer` or `ClusterIssuer`.
    pub kind: &'static str,
    /// Empty for a ClusterIssuer.
    pub namespace: String,
    pub name: String,
    /// False when Certificates name it but it does not exist.
    pub exists: bool,
    /// Ready in words: "ready", "not ready", "unknown (no Ready condition yet)".
    pub readiness: String,
    pub ready_reason: Option<Text>,
    /// The Ready condition's message; only for whoever sees the whole cluster (it may name
    /// accounts and other tenants' objects).
    pub ready_message: Option<Text>,
    pub server: AcmeServer,
    /// In words: "Let's Encrypt production", "… staging", "another ACME CA", "not ACME",
    /// "issuer not found".
    pub server_label: &'static str,
    /// The directory URL: Let's Encrypt's for anyone, another CA's only for whoever sees
    /// the whole cluster (an internal address).
    pub server_url: Option<String>,
    /// How it solves challenges, one line each; only for whoever sees the whole cluster.
    pub solvers: Vec<String>,
    /// The Certificates that name it, as far as the caller sees them.
    pub certificates: Vec<IssuerUser>,
    /// The findings the caller may see about it and about the Certificates that use it
    /// (and the Ingresses that own them): its readiness, a missing issuer, its account's
    /// limits reached, their failing issuances.
    pub findings: Vec<Finding>,
    /// Its ACME account's limits as the caller may see them — new orders, names paused,
    /// failed authorizations — filled from the budgets by the server.
    pub account: Vec<crate::model::budget::Budget>,
}

/// A row of the issuer list (`/issuers`, `/api/v1/issuers`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IssuerRow {
    pub cluster: String,
    /// `Issuer` or `ClusterIssuer`.
    pub kind: &'static str,
    /// Empty for a ClusterIssuer.
    pub namespace: String,
    pub name: String,
    /// False when Certificates name it but it does not exist.
    pub exists: bool,
    /// Ready in words, as on its page.
    pub readiness: String,
    pub server: AcmeServer,
    pub server_label: &'static str,
    /// How many Certificates the caller sees use it.
    pub certificates: usize,
    /// The most severe problem holding one of them, or None.
    pub severity: Option<Severity>,
    /// Its account's limits that are reached (used up to capacity), as the caller may see
    /// them; filled by the server from the budgets.
    pub account_limits_reached: Vec<crate::model::budget::Limit>,
}

/// Filters of the issuer list.
pub type IssuerQuery = super::views::NamedQuery;

/// Every issuer of one cluster the caller may see and `q` selects, into `out`: the Issuers
/// of their namespaces, the ClusterIssuers (for a namespace-scoped caller only those their
/// Certificates use), and the issuers their Certificates name that do not exist — each
/// told as its page tells it, with the health of the Certificates that use it.
pub fn issuer_rows(
    visible: &Visibility<'_>,
    cluster: &str,
    data: &ClusterData,
    health: &super::problems::Health,
    q: &IssuerQuery,
    out: &mut Vec<IssuerRow>,
) {
    let in_namespace = |ns: &str| q.namespace.as_deref().is_none_or(|want| want == ns);
    // (namespace — None for a ClusterIssuer —, name)
    let mut named: std::collections::BTreeSet<(Option<Text>, Text)> = Default::default();
    for c in data.certificates.values() {
        if !visible.namespace(&c.namespace) || !in_namespace(&c.namespace) {
            continue;
        }
        if let Some(r) = c.issuer.as_deref() {
            match cluster_wide(r) {
                Some(true) => named.insert((None, r.name.clone())),
                Some(false) => named.insert((Some(c.namespace.clone()), r.name.clone())),
                None => false,
            };
        }
    }
    for i in data.issuers.values() {
        let ns = i.namespace.as_deref().unwrap_or("");
        if visible.namespace(ns) && in_namespace(ns) {
            named.insert((Some(Text::from(ns)), Text::from(i.name.as_str())));
        }
    }
    if visible.whole_cluster() && q.namespace.is_none() {
        for i in data.cluster_issuers.values() {
            named.insert((None, Text::from(i.name.as_str())));
        }
    }
    let text = q.q.as_deref().map(str::to_ascii_lowercase);
    for (namespace, name) in named {
        if text
            .as_deref()
            .is_some_and(|t| !name.to_ascii_lowercase().contains(t))
        {
            continue;
        }
        let Some(d) = issuer_detail(
            visible,
            cluster,
            data,
            &[],
            health,
            namespace.as_deref(),
            &name,
        ) else {
            continue;
        };
        out.push(IssuerRow {
            severity: d.certificates.iter().filter_map(|c| c.severity).min(),
            certificates: d.certificates.len(),
            cluster: d.cluster,
            kind: d.kind,
            namespace: d.namespace,
            name: d.name,
            exists: d.exists,
            readiness: d.readiness,
            server: d.server,
            server_label: d.server_label,
            account_limits_reached: Vec::new(),
        });
    }
}

/// The issuer list's page: the most severe first (failing before the rest), then in
/// configuration order of clusters, namespace and name.
pub fn issuer_page(
    mut rows: Vec<IssuerRow>,
    q: &IssuerQuery,
    clusters: &[String],
) -> crate::model::Page<IssuerRow> {
    let at = |c: &str| clusters.iter().position(|n| n == c).unwrap_or(usize::MAX);
    rows.sort_by(|a, b| {
        let health = |r: &IssuerRow| (r.severity.is_none(), r.severity);
        health(a)
            .cmp(&health(b))
            .then(at(&a.cluster).cmp(&at(&b.cluster)))
            .then_with(|| a.namespace.cmp(&b.namespace))
            .then_with(|| a.name.cmp(&b.name))
    });
    crate::model::Page::of(rows, q.page.max(1), q.per_page.max(1))
}

/// The issuer `name` (in `namespace`; None: a ClusterIssuer) of one cluster, as `visible`
/// sees it; None when it neither exists nor is named by a Certificate the caller sees.
pub fn issuer_detail(
    visible: &Visibility<'_>,
    cluster: &str,
    data: &ClusterData,
    findings: &[Finding],
    health: &super::problems::Health,
    namespace: Option<&str>,
    name: &str,
) -> Option<IssuerDetail> {
    let kind = if namespace.is_some() {
        Kind::Issuer
    } else {
        Kind::ClusterIssuer
    };
    if namespace.is_some_and(|ns| !visible.namespace(ns)) {
        return None;
    }
    let key = crate::model::data::key(namespace.unwrap_or(""), name);
    let found = match namespace {
        Some(_) => data.issuers.get(&key),
        None => data.cluster_issuers.get(&key),
    };
    let certificates: Vec<IssuerUser> = data
        .certificates
        .values()
        .filter(|c| visible.namespace(&c.namespace))
        .filter(|c| {
            c.issuer.as_deref().is_some_and(|r| {
                &*r.name == name
                    && match namespace {
                        Some(ns) => cluster_wide(r) == Some(false) && &*c.namespace == ns,
                        None => cluster_wide(r) == Some(true),
                    }
            })
        })
        .map(|c| IssuerUser {
            namespace: c.namespace.clone(),
            name: c.name.clone(),
            hosts: c.dns_names.to_vec(),
            ready: c.ready.as_ref().map(|r| r.status),
            not_after: c.not_after,
            ingress: c
                .owner
                .as_ref()
                .filter(|o| Kind::from_name(&o.kind) == Some(Kind::Ingress))
                .map(|o| o.name.clone()),
            severity: health
                .get(&(
                    Kind::Certificate.into(),
                    c.namespace.clone(),
                    c.name.clone(),
                ))
                .copied(),
        })
        .collect();
    if found.is_none() && certificates.is_empty() {
        return None;
    }
    let whole = visible.whole_cluster();
    // A ClusterIssuer none of the reader's Certificates use is none of theirs to read: the
    // same answer as one that does not exist, so its name cannot be probed either.
    if namespace.is_none() && !whole && certificates.is_empty() {
        return None;
    }
    let ready = found.and_then(|i| i.ready.as_ref());
    let readiness = match (found, ready.map(|r| r.is_true())) {
        (None, _) => "does not exist".to_string(),
        (Some(_), Some(true)) => "ready".to_string(),
        (Some(_), Some(false)) => "not ready".to_string(),
        (Some(_), None) => "unknown (no Ready condition yet)".to_string(),
    };
    let server = found.map_or(AcmeServer::IssuerNotFound, |i| i.server);
    let server_url = found.and_then(|i| i.acme_server_url.clone()).filter(|_| {
        whole
            || matches!(
                server,
                AcmeServer::LetsEncryptProduction | AcmeServer::LetsEncryptStaging
            )
    });
    let solvers = if whole {
        found
            .map(|i| i.solvers.iter().map(|s| s.describe()).collect())
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    // About it, or about what uses it: a Certificate of it, or the Ingress that owns one.
    let findings = findings
        .iter()
        .filter(|f| visible.finding(f))
        .filter(|f| {
            (&*f.name == name && f.kind == kind && *f.namespace == *namespace.unwrap_or(""))
                || certificates.iter().any(|c| {
                    c.namespace == f.namespace
                        && match f.kind {
                            Subject::Object(Kind::Certificate) => c.name == f.name,
                            Subject::Object(Kind::Ingress) => c.ingress.as_ref() == Some(&f.name),
                            _ => false,
                        }
                })
        })
        .cloned()
        .collect();
    Some(IssuerDetail {
        cluster: cluster.to_string(),
        kind: kind.name(),
        namespace: namespace.unwrap_or("").to_string(),
        name: name.to_string(),
        exists: found.is_some(),
        readiness,
        ready_reason: ready.and_then(|r| r.reason.clone()),
        ready_message: ready.and_then(|r| r.message.clone()).filter(|_| whole),
        server,
        server_label: server.label(),
        server_url,
        solvers,
        certificates,
        findings,
        account: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::certificate::CertificateView;
    use crate::model::ingress::IngressView;
    use crate::model::rules::fixtures::{cluster_issuer, World};
    use crate::model::scope::{Access, Grant, Role};
    use crate::model::View;

    /// An issuer of another CA, not ready, used by two tenants' Certificates.
    fn world() -> World {
        let mut w = World::new().issuer(cluster_issuer(
            "internal-ca",
            "https://acme.ca.internal:9443/directory",
            false,
        ));
        for (ns, name) in [("acme", "shop"), ("globex", "site")] {
            let ing = IngressView::test(name)
                .in_ns(ns)
                .with_issuer("internal-ca")
                .tls(&format!("{name}.example.com"));
            w = w.certificate(CertificateView::of(&ing)).ingress(ing);
        }
        w
    }

    fn detail(w: &World, view: &View, name: &str) -> Option<IssuerDetail> {
        let findings = w.findings();
        let visible = Visibility::of(view, &w.facts.name)?;
        let health = Default::default();
        issuer_detail(
            &visible,
            &w.facts.name,
            &w.data,
            &findings,
            &health,
            None,
            name,
        )
    }

    #[test]
    fn whoever_sees_the_cluster_gets_the_issuer_whole() {
        let d = detail(&world(), &View::whole_fleet(["zrh"]), "internal-ca").unwrap();
        assert_eq!(d.readiness, "not ready");
        assert!(d
            .ready_message
            .as_deref()
            .is_some_and(|m| m.contains("invalidContact")));
        assert_eq!(
            d.server_url.as_deref(),
            Some("https://acme.ca.internal:9443/directory")
        );
        assert_eq!(d.solvers.len(), 1);
        assert_eq!(d.certificates.len(), 2);
        assert!(d
            .findings
            .iter()
            .any(|f| f.rule == crate::model::Rule::IssuerNotReady));
    }

    #[test]
    fn a_tenant_sees_its_readiness_and_only_its_own_certificates() {
        let grant = Grant {
            clusters: vec!["*".into()],
            namespaces: vec!["acme".into()],
        };
        let tenant = View::new(&Access::new(vec![(Role::Viewer, grant)]), ["zrh"]);
        let d = detail(&world(), &tenant, "internal-ca").unwrap();
        assert_eq!(d.readiness, "not ready");
        assert_eq!(
            d.ready_message, None,
            "the message may name others' accounts"
        );
        assert_eq!(d.server_url, None, "another CA's address is internal");
        assert!(d.solvers.is_empty());
        let names: Vec<&str> = d.certificates.iter().map(|c| &*c.name).collect();
        assert_eq!(names, ["shop-tls"]);
        assert!(!serde_json::to_string(&d).unwrap().contains("globex"));
    }

    #[test]
    fn a_missing_issuer_that_certificates_name_has_a_page_and_an_unknown_one_none() {
        let ing = IngressView::test("shop")
            .in_ns("acme")
            .with_issuer("letsencrypt-prd")
            .tls("shop.example.com");
        let w = World::new()
            .certificate(CertificateView::of(&ing))
            .ingress(ing);
        let d = detail(&w, &View::whole_fleet(["zrh"]), "letsencrypt-prd").unwrap();
        assert!(!d.exists);
        assert_eq!(d.readiness, "does not exist");
        // Whether it would be ACME is not known, not "not ACME".
        assert_eq!(d.server_label, "issuer not found");
        assert_eq!(d.certificates.len(), 1);
        // What the board shows of it is on its page too: the Ingress that names it.
        assert!(
            d.findings
                .iter()
                .any(|f| f.rule == crate::model::Rule::IssuerMissing),
            "{:#?}",
            d.findings
        );
        assert!(detail(&w, &View::whole_fleet(["zrh"]), "no-such-issuer").is_none());
    }

    fn rows(w: &World, view: &View, q: &IssuerQuery) -> Vec<IssuerRow> {
        let findings = std::sync::Arc::new(w.findings());
        let problems = crate::model::read::problems::cluster_problems(
            &w.facts,
            &w.data,
            &findings,
            crate::model::rules::fixtures::now(),
        );
        let health = crate::model::read::problems::health(&problems);
        let visible = Visibility::of(view, &w.facts.name).unwrap();
        let mut out = Vec::new();
        issuer_rows(&visible, &w.facts.name, &w.data, &health, q, &mut out);
        let q = IssuerQuery {
            per_page: 100,
            ..q.clone()
        };
        issuer_page(out, &q, std::slice::from_ref(&w.facts.name)).items
    }

    #[test]
    fn the_list_holds_every_issuer_the_reader_may_see_the_failing_first() {
        // Two tenants behind a ClusterIssuer that is not ready, a ready one nobody uses,
        // and a missing one acme's Certificate names.
        let mut w = world().issuer(cluster_issuer(
            "letsencrypt-unused",
            crate::model::issuer::LE_PRODUCTION,
            true,
        ));
        let typo = IngressView::test("blog")
            .in_ns("acme")
            .with_issuer("letsencrypt-prd")
            .tls("blog.example.com");
        w = w.certificate(CertificateView::of(&typo)).ingress(typo);
        let all = rows(&w, &View::whole_fleet(["zrh"]), &IssuerQuery::default());
        let names: Vec<&str> = all.iter().map(|r| r.name.as_str()).collect();
        // The fixtures' cluster has letsencrypt-prod and -staging besides: ready, unused.
        assert_eq!(names.len(), 5, "{all:#?}");
        let mut failing = names[..2].to_vec();
        failing.sort();
        assert_eq!(
            failing,
            ["internal-ca", "letsencrypt-prd"],
            "the failing first: {names:?}"
        );
        assert!(all[2..]
            .iter()
            .all(|r| r.severity.is_none() && r.readiness == "ready"));
        let internal = all.iter().find(|r| r.name == "internal-ca").unwrap();
        assert_eq!(internal.readiness, "not ready");
        assert_eq!(internal.certificates, 2);
        assert!(internal.severity.is_some());
        let missing = all.iter().find(|r| r.name == "letsencrypt-prd").unwrap();
        assert!(!missing.exists);
        assert_eq!(missing.readiness, "does not exist");
        // A tenant: only what their Certificates use, counted as far as they see.
        let grant = Grant {
            clusters: vec!["*".into()],
            namespaces: vec!["globex".into()],
        };
        let tenant = View::new(&Access::new(vec![(Role::Viewer, grant)]), ["zrh"]);
        let theirs = rows(&w, &tenant, &IssuerQuery::default());
        assert_eq!(theirs.len(), 1, "{theirs:#?}");
        assert_eq!(theirs[0].name, "internal-ca");
        assert_eq!(theirs[0].certificates, 1);
        assert!(!serde_json::to_string(&theirs).unwrap().contains("\"acme\""));
        // The name filter.
        let q = IssuerQuery {
            q: Some("PRD".into()),
            ..Default::default()
        };
        let found = rows(&w, &View::whole_fleet(["zrh"]), &q);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].name, "letsencrypt-prd");
    }
}

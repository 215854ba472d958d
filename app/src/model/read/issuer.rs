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
use crate::model::Kind;

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
    /// The findings about it the caller may see (`issuer.not-ready`, `issuer.missing`).
    pub findings: Vec<Finding>,
}

/// The issuer `name` (in `namespace`; None: a ClusterIssuer) of one cluster, as `visible`
/// sees it; None when it neither exists nor is named by a Certificate the caller sees.
pub fn issuer_detail(
    visible: &Visibility<'_>,
    cluster: &str,
    data: &ClusterData,
    findings: &[Finding],
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
        })
        .collect();
    if found.is_none() && certificates.is_empty() {
        return None;
    }
    let whole = visible.whole_cluster();
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
    let findings = findings
        .iter()
        .filter(|f| visible.finding(f))
        .filter(|f| {
            matches!(
                f.rule,
                crate::model::Rule::IssuerNotReady | crate::model::Rule::IssuerMissing
            ) && (&*f.name == name && f.kind == kind
                || certificates
                    .iter()
                    .any(|c| c.namespace == f.namespace && c.name == f.name))
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
        issuer_detail(&visible, &w.facts.name, &w.data, &findings, None, name)
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
        assert!(detail(&w, &View::whole_fleet(["zrh"]), "no-such-issuer").is_none());
    }
}

//! Issuers and ClusterIssuers, and which ACME server they use.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;
use serde_json::Value;

use super::interner::Interner;
use super::object::{condition, conditions_at, str_at, Condition};

/// Let's Encrypt's production directory.
pub(crate) const LE_PRODUCTION: &str = "https://acme-v02.api.letsencrypt.org/directory";
/// Let's Encrypt's staging directory (untrusted certificates).
pub(crate) const LE_STAGING: &str = "https://acme-staging-v02.api.letsencrypt.org/directory";

/// Where an issuer gets certificates from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AcmeServer {
    LetsEncryptProduction,
    LetsEncryptStaging,
    /// Another ACME CA.
    OtherAcme,
    /// Not an ACME issuer (CA, self-signed, Vault, …).
    NotAcme,
    /// The Certificate's issuer does not exist (or is not cached): nothing is known of it.
    IssuerNotFound,
}

impl AcmeServer {
    /// Classifies an ACME directory URL.
    pub fn classify(url: Option<&str>) -> Self {
        match url.map(|u| u.trim_end_matches('/')) {
            None => AcmeServer::NotAcme,
            Some(u) if u == LE_PRODUCTION.trim_end_matches('/') => {
                AcmeServer::LetsEncryptProduction
            }
            Some(u) if u == LE_STAGING.trim_end_matches('/') => AcmeServer::LetsEncryptStaging,
            Some(_) => AcmeServer::OtherAcme,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            AcmeServer::LetsEncryptProduction => "Let's Encrypt production",
            AcmeServer::LetsEncryptStaging => "Let's Encrypt staging",
            AcmeServer::OtherAcme => "another ACME server",
            AcmeServer::NotAcme => "not ACME",
            AcmeServer::IssuerNotFound => "issuer not found",
        }
    }
}

/// An Issuer (namespaced) or ClusterIssuer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IssuerView {
    /// `Issuer` or `ClusterIssuer`.
    pub kind: String,
    /// None for a ClusterIssuer.
    pub namespace: Option<String>,
    pub name: String,
    pub acme_server_url: Option<String>,
    pub server: AcmeServer,
    pub ready: Option<Condition>,
    /// `spec.acme.solvers` (empty when not ACME).
    pub solvers: std::sync::Arc<[super::solvers::Solver]>,
}

impl IssuerView {
    pub fn project(
        kind: &str,
        meta: &ObjectMeta,
        data: &Value,
        strings: &mut Interner,
    ) -> Option<Self> {
        let url = str_at(data, "/spec/acme/server");
        Some(IssuerView {
            kind: kind.to_string(),
            namespace: meta.namespace.clone().filter(|_| kind == "Issuer"),
            name: meta.name.clone()?,
            server: AcmeServer::classify(url.as_deref()),
            acme_server_url: url,
            ready: condition(&conditions_at(data, "/status/conditions", strings), "Ready"),
            solvers: super::solvers::project(data, strings),
        })
    }

    pub fn is_ready(&self) -> bool {
        self.ready.as_ref().is_some_and(Condition::is_true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_are_classified_by_directory_url() {
        assert_eq!(
            AcmeServer::classify(Some(LE_PRODUCTION)),
            AcmeServer::LetsEncryptProduction
        );
        assert_eq!(
            AcmeServer::classify(Some(
                "https://acme-staging-v02.api.letsencrypt.org/directory/"
            )),
            AcmeServer::LetsEncryptStaging
        );
        assert_eq!(
            AcmeServer::classify(Some("https://acme.zerossl.com/v2/DV90")),
            AcmeServer::OtherAcme
        );
        assert_eq!(AcmeServer::classify(None), AcmeServer::NotAcme);
    }
}

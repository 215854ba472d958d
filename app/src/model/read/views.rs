//! What the read model answers: the filters of each list (from the query string) and the rows
//! and chain views it returns. Pages and the JSON API show the same types.

use serde::Serialize;

use crate::model::certificate::CertificateView;
use crate::model::chain::{AnnotationStatus, CertificateChain, ControllerInfo, TlsChain};
use crate::model::choice::choice;
use crate::model::infra::EventView;
use crate::model::issuer::AcmeServer;
use crate::model::{Finding, IngressView, Severity};

/// Filters of `/api/v1/findings` and the triage board.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FindingQuery {
    pub cluster: Option<String>,
    pub namespace: Option<String>,
    pub severity: Option<Severity>,
    /// A rule id.
    pub rule: Option<String>,
    /// None: by urgency.
    pub sort: Option<super::sort::Sort<super::sort::FindingSort>>,
    /// 1-based; the reader returns every match, the caller pages.
    pub page: usize,
    pub per_page: usize,
}

/// Filters of the Ingress list (`/ingresses`, `/api/v1/ingresses`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IngressQuery {
    pub cluster: Option<String>,
    pub namespace: Option<String>,
    /// Free text: name, namespace or host contains it.
    pub q: Option<String>,
    pub status: Option<crate::model::chain::AnnotationState>,
    /// None: by cluster, namespace, name.
    pub sort: Option<super::sort::Sort<super::sort::IngressSort>>,
    /// 1-based.
    pub page: usize,
    pub per_page: usize,
}

/// Filters of the Certificate list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CertificateQuery {
    pub cluster: Option<String>,
    pub namespace: Option<String>,
    /// Name, namespace or a dnsName contains it.
    pub q: Option<String>,
    pub status: Option<CertificateStatus>,
    /// None: by cluster, namespace, name.
    pub sort: Option<super::sort::Sort<super::sort::CertificateSort>>,
    pub page: usize,
    pub per_page: usize,
}

/// Filters of the challenge history (`/challenges`, `/api/v1/challenges`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChallengeQuery {
    pub cluster: Option<String>,
    pub namespace: Option<String>,
    /// A DNS name; its subdomains match too.
    pub domain: Option<String>,
    pub outcome: Option<ChallengeState>,
    pub since: Option<chrono::DateTime<chrono::Utc>>,
    /// `since` as the caller wrote it (`24h` or a time), to show it back in the form.
    pub since_text: Option<String>,
    /// None: the most recently seen first.
    pub sort: Option<super::sort::Sort<super::sort::ChallengeSort>>,
    pub page: usize,
    pub per_page: usize,
}

choice!(
    /// A Challenge state, for `outcome=`.
    ChallengeState {
        Valid = "valid",
        Invalid = "invalid",
        Errored = "errored",
        Pending = "pending",
        Processing = "processing",
        Ready = "ready",
        Expired = "expired",
    }
);

/// Filters of the audit log (`/audit`, `/api/v1/audit`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditQuery {
    pub cluster: Option<String>,
    pub namespace: Option<String>,
    pub actor: Option<String>,
    pub action: Option<String>,
    pub outcome: Option<AuditOutcome>,
    pub since: Option<chrono::DateTime<chrono::Utc>>,
    pub since_text: Option<String>,
    pub page: usize,
    pub per_page: usize,
}

choice!(
    /// The outcome of an audited action, for `outcome=`.
    AuditOutcome {
        Ok = "ok",
        Conflict = "conflict",
        Refused = "refused",
        Error = "error",
    }
);

choice!(
    /// What a Certificate is, for `status=`.
    CertificateStatus {
        Ready = "ready",
        NotReady = "not-ready",
        Expired = "expired",
        Failing = "failing",
    }
);

/// A row of the Ingress list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IngressRow {
    /// Shared with the cache: a row costs a pointer, not a copy of the Ingress.
    #[serde(flatten)]
    pub ingress: std::sync::Arc<IngressView>,
    pub annotation: AnnotationStatus,
    /// The most severe finding on this Ingress or its chain, if any.
    pub worst: Option<Severity>,
    pub findings: usize,
}

/// The chain view of one Ingress.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IngressDetail {
    pub ingress: IngressView,
    pub annotation: AnnotationStatus,
    pub controller: ControllerInfo,
    /// One entry per `spec.tls` entry, with the Certificate and its attempts.
    pub tls: Vec<TlsChain>,
    /// Findings on the Ingress and every object of its chain.
    pub findings: Vec<Finding>,
    pub events: Vec<EventView>,
}

/// A row of the Certificate list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CertificateRow {
    #[serde(flatten)]
    pub certificate: CertificateView,
    pub server: AcmeServer,
    /// The owning Ingress, if ingress-shim made it.
    pub ingress: Option<String>,
    pub worst: Option<Severity>,
}

/// The chain view of one Certificate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CertificateDetail {
    #[serde(flatten)]
    pub chain: CertificateChain,
    pub ingress: Option<String>,
    pub findings: Vec<Finding>,
    pub events: Vec<EventView>,
}

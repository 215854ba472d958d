//! What the read model answers: the filters of each list (from the query string) and the rows
//! and chain views it returns. Pages and the JSON API show the same types.

use serde::Serialize;

use crate::model::certificate::CertificateView;
use crate::model::chain::{AnnotationStatus, CertificateChain, ControllerInfo, TlsChain};
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
    pub sort: Option<super::sort::Sort>,
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
    /// An annotation status: `not-requested`, `set`, `set-not-effective`, `missing`, `invalid`.
    pub status: Option<String>,
    /// None: by cluster, namespace, name.
    pub sort: Option<super::sort::Sort>,
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
    /// `ready`, `not-ready`, `expired` or `failing`.
    pub status: Option<String>,
    /// None: by cluster, namespace, name.
    pub sort: Option<super::sort::Sort>,
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
    /// A Challenge state: `valid`, `invalid`, `errored`, `pending`, …
    pub outcome: Option<String>,
    pub since: Option<chrono::DateTime<chrono::Utc>>,
    /// `since` as the caller wrote it (`24h` or a time), to show it back in the form.
    pub since_text: Option<String>,
    /// None: the most recently seen first.
    pub sort: Option<super::sort::Sort>,
    pub page: usize,
    pub per_page: usize,
}

/// The Challenge states `outcome=` accepts.
pub const CHALLENGE_OUTCOMES: &[&str] = &[
    "valid",
    "invalid",
    "errored",
    "pending",
    "processing",
    "ready",
    "expired",
];

/// Filters of the audit log (`/audit`, `/api/v1/audit`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditQuery {
    pub cluster: Option<String>,
    pub namespace: Option<String>,
    pub actor: Option<String>,
    pub action: Option<String>,
    /// `ok`, `conflict`, `refused` or `error`.
    pub outcome: Option<String>,
    pub since: Option<chrono::DateTime<chrono::Utc>>,
    pub since_text: Option<String>,
    pub page: usize,
    pub per_page: usize,
}

/// The outcomes an audit row can have.
pub const AUDIT_OUTCOMES: &[&str] = &["ok", "conflict", "refused", "error"];

/// The annotation statuses `status=` accepts.
pub const INGRESS_STATUSES: &[&str] = &[
    "not-requested",
    "set",
    "set-not-effective",
    "missing",
    "invalid",
];
/// The certificate statuses `status=` accepts.
pub const CERTIFICATE_STATUSES: &[&str] = &["ready", "not-ready", "expired", "failing"];

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

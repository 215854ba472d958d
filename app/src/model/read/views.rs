//! What the read model answers: the filters of each list — deserialized from the query
//! string, every parameter known by name (an unknown one is refused) — and the rows and chain
//! views it returns. Pages and the JSON API show the same types.

use serde::{Deserialize, Serialize};

use crate::model::certificate::CertificateView;
use crate::model::chain::{AnnotationStatus, CertificateChain, ControllerInfo, TlsChain};
use crate::model::choice::choice;
use crate::model::infra::EventView;
use crate::model::issuer::AcmeServer;
use crate::model::{Finding, IngressView, Severity};

/// Page and page size, as every list reads them: `page` from 1, `per_page` from 1 to
/// [`MAX_PER_PAGE`] (default [`DEFAULT_PER_PAGE`]).
pub mod paging {
    use serde::Deserialize;

    /// Rows per page unless `per_page` says otherwise.
    pub const DEFAULT_PER_PAGE: usize = 100;
    /// The most rows a page may have.
    pub const MAX_PER_PAGE: usize = 1000;
    /// The last page number anyone may ask for.
    const MAX_PAGE: usize = 1_000_000;

    pub fn first() -> usize {
        1
    }

    pub fn default_size() -> usize {
        DEFAULT_PER_PAGE
    }

    /// `page`: empty means the first.
    pub fn page<'de, D: serde::Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
        number(d, 1, MAX_PAGE)
    }

    /// `per_page`: empty means the default.
    pub fn size<'de, D: serde::Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
        number(d, DEFAULT_PER_PAGE, MAX_PER_PAGE)
    }

    fn number<'de, D: serde::Deserializer<'de>>(
        d: D,
        default: usize,
        max: usize,
    ) -> Result<usize, D::Error> {
        match Option::<String>::deserialize(d)? {
            None => Ok(default),
            Some(v) if v.is_empty() => Ok(default),
            Some(v) => match v.parse::<usize>() {
                Ok(n) if (1..=max).contains(&n) => Ok(n),
                _ => Err(serde::de::Error::custom(format!(
                    "{v:?} is not a whole number between 1 and {max}"
                ))),
            },
        }
    }
}

/// Filters of the lists that take a cluster, a namespace, a name to look for and a page —
/// the issuers, the policies and the Gateways. What `namespace` and `q` select is each list's
/// own: the issuers of a namespace and the ClusterIssuers its Certificates use, the policies
/// covering its Ingresses, its Gateways; a name (or a Gateway listener's hostname) that
/// contains `q`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamedQuery {
    pub cluster: Option<String>,
    pub namespace: Option<String>,
    pub q: Option<String>,
    #[serde(default = "paging::first", deserialize_with = "paging::page")]
    pub page: usize,
    #[serde(default = "paging::default_size", deserialize_with = "paging::size")]
    pub per_page: usize,
}

/// Filters of `/api/v1/findings` and the triage board.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FindingQuery {
    pub cluster: Option<String>,
    pub namespace: Option<String>,
    pub severity: Option<Severity>,
    /// A rule id.
    pub rule: Option<String>,
    /// None: by urgency.
    pub sort: Option<super::sort::Sort<super::sort::FindingSort>>,
    /// 1-based; the reader returns every match, the caller pages.
    #[serde(default = "paging::first", deserialize_with = "paging::page")]
    pub page: usize,
    #[serde(default = "paging::default_size", deserialize_with = "paging::size")]
    pub per_page: usize,
}

/// Filters of the board and `/api/v1/problems`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProblemQuery {
    pub cluster: Option<String>,
    pub namespace: Option<String>,
    /// A host, or a domain its hosts are under (`acme.example` matches `shop.acme.example`).
    pub host: Option<String>,
    /// The root cause's rule id.
    pub cause: Option<String>,
    pub severity: Option<Severity>,
    #[serde(default = "paging::first", deserialize_with = "paging::page")]
    pub page: usize,
    #[serde(default = "paging::default_size", deserialize_with = "paging::size")]
    pub per_page: usize,
}

/// Filters of the budgets (`/rate-limits`, `/api/v1/rate-limits`): the budgets spent from a
/// The probe results' filters (`/api/v1/probes`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeQuery {
    pub cluster: Option<String>,
    pub namespace: Option<String>,
    pub host: Option<String>,
}

/// Where a read looks: a cluster, a namespace (of any visible cluster), both or neither —
/// within the caller's view, always.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Place<'a> {
    pub cluster: Option<&'a str>,
    pub namespace: Option<&'a str>,
}

/// cluster, or a namespace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetQuery {
    pub cluster: Option<String>,
    pub namespace: Option<String>,
    /// One budget's key: a registered domain, an exact set (comma-joined), a name.
    pub key: Option<String>,
}

impl BudgetQuery {
    /// Whether a budget was spent where the filters say (by what the viewer may see of it).
    pub fn selects(&self, b: &crate::model::budget::Budget) -> bool {
        self.key
            .as_deref()
            .is_none_or(|k| k.eq_ignore_ascii_case(&b.key))
            && self
                .cluster
                .as_deref()
                .is_none_or(|c| b.clusters.iter().any(|x| x == c))
            && self.namespace.as_deref().is_none_or(|n| {
                b.namespaces
                    .iter()
                    .any(|x| x.split_once('/').is_some_and(|(_, ns)| ns == n))
            })
    }
}

/// Filters of the Ingress list (`/ingresses`, `/api/v1/ingresses`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IngressQuery {
    pub cluster: Option<String>,
    pub namespace: Option<String>,
    /// Free text: name, namespace or host contains it.
    pub q: Option<String>,
    /// One or more states, comma-separated.
    pub status: Option<crate::model::chain::AnnotationStates>,
    /// None: by cluster, namespace, name.
    pub sort: Option<super::sort::Sort<super::sort::IngressSort>>,
    /// 1-based.
    #[serde(default = "paging::first", deserialize_with = "paging::page")]
    pub page: usize,
    #[serde(default = "paging::default_size", deserialize_with = "paging::size")]
    pub per_page: usize,
}

/// Filters of the Certificate list.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CertificateQuery {
    pub cluster: Option<String>,
    pub namespace: Option<String>,
    /// Name, namespace or a dnsName contains it.
    pub q: Option<String>,
    pub status: Option<CertificateStatus>,
    /// When it expires, as the expiry chart's bars.
    pub expires: Option<ExpiryWindow>,
    /// What the probe saw its hosts serve.
    pub served: Option<ServedFilter>,
    /// None: by cluster, namespace, name.
    pub sort: Option<super::sort::Sort<super::sort::CertificateSort>>,
    #[serde(default = "paging::first", deserialize_with = "paging::page")]
    pub page: usize,
    #[serde(default = "paging::default_size", deserialize_with = "paging::size")]
    pub per_page: usize,
}

/// Filters of the challenge history (`/challenges`, `/api/v1/challenges`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChallengeQuery {
    pub cluster: Option<String>,
    pub namespace: Option<String>,
    /// A DNS name; its subdomains match too.
    pub domain: Option<String>,
    pub outcome: Option<ChallengeState>,
    /// From `since_text`, when the request is read (it may be relative to now).
    #[serde(skip)]
    pub since: Option<chrono::DateTime<chrono::Utc>>,
    /// `since` as the caller wrote it (`24h` or a time), to show it back in the form.
    #[serde(rename = "since")]
    pub since_text: Option<String>,
    /// None: the most recently seen first.
    pub sort: Option<super::sort::Sort<super::sort::ChallengeSort>>,
    #[serde(default = "paging::first", deserialize_with = "paging::page")]
    pub page: usize,
    #[serde(default = "paging::default_size", deserialize_with = "paging::size")]
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
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditQuery {
    pub cluster: Option<String>,
    pub namespace: Option<String>,
    pub actor: Option<String>,
    pub action: Option<String>,
    pub outcome: Option<AuditOutcome>,
    /// From `since_text`, when the request is read (it may be relative to now).
    #[serde(skip)]
    pub since: Option<chrono::DateTime<chrono::Utc>>,
    /// `since` as the caller wrote it.
    #[serde(rename = "since")]
    pub since_text: Option<String>,
    #[serde(default = "paging::first", deserialize_with = "paging::page")]
    pub page: usize,
    #[serde(default = "paging::default_size", deserialize_with = "paging::size")]
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

choice!(
    /// What the probe saw a Certificate's hosts serve, for `served=`: `other` is something
    /// else than the issued certificate (expired, another one, not naming the host, not
    /// trusted: a `probe.*` finding on the Certificate).
    ServedFilter {
        Other = "other",
    }
);

choice!(
    /// When a Certificate expires, as the expiry chart's bars, for `expires=`: the next week
    /// by the day, then by weeks — the next 14 days get room of their own.
    ExpiryWindow {
        Expired = "expired",
        Day0 = "0d",
        Day1 = "1d",
        Day2 = "2d",
        Day3 = "3d",
        Day4 = "4d",
        Day5 = "5d",
        Day6 = "6d",
        Week1 = "7-13d",
        Weeks2 = "14-27d",
        Weeks4 = "28-55d",
        Weeks8 = "56-83d",
        Later = "84d+",
        Never = "never",
    }
);

impl ExpiryWindow {
    /// Whole days from now: `[from, to)`, `to` None for no end; None for expired and never.
    fn days(self) -> Option<(i64, Option<i64>)> {
        use ExpiryWindow::*;
        Some(match self {
            Expired | Never => return None,
            Day0 => (0, Some(1)),
            Day1 => (1, Some(2)),
            Day2 => (2, Some(3)),
            Day3 => (3, Some(4)),
            Day4 => (4, Some(5)),
            Day5 => (5, Some(6)),
            Day6 => (6, Some(7)),
            Week1 => (7, Some(14)),
            Weeks2 => (14, Some(28)),
            Weeks4 => (28, Some(56)),
            Weeks8 => (56, Some(84)),
            Later => (84, None),
        })
    }

    /// The window `not_after` falls in at `now` (None: never issued).
    pub fn of(
        not_after: Option<chrono::DateTime<chrono::Utc>>,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Self {
        let Some(t) = not_after else {
            return ExpiryWindow::Never;
        };
        if t <= now {
            return ExpiryWindow::Expired;
        }
        let days = (t - now).num_days();
        <Self as crate::model::choice::Choice>::ALL
            .iter()
            .copied()
            .find(|w| {
                w.days()
                    .is_some_and(|(from, to)| days >= from && to.is_none_or(|to| days < to))
            })
            .unwrap_or(ExpiryWindow::Later)
    }

    /// The window in words: "expired", "today", "in 3 days", "in 1–2 weeks", "never issued".
    pub fn words(self) -> String {
        match (self, self.days()) {
            (ExpiryWindow::Expired, _) => "expired".into(),
            (ExpiryWindow::Never, _) => "never issued".into(),
            (_, Some((0, _))) => "within a day".into(),
            (_, Some((1, _))) => "in 1 day".into(),
            (_, Some((from, Some(to)))) if to - from == 1 => format!("in {from} days"),
            (_, Some((from, Some(to)))) => format!("in {}–{} weeks", from / 7, to / 7),
            (_, Some((from, None))) => format!("in {}+ weeks", from / 7),
            (_, None) => String::new(),
        }
    }

    /// Within the next 14 days, or expired: worth a warning colour.
    pub fn urgent(self) -> bool {
        self == ExpiryWindow::Expired || self.days().is_some_and(|(from, _)| from < 14)
    }
}

/// A row of the Ingress list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IngressRow {
    /// Shared with the cache: a row costs a pointer, not a copy of the Ingress.
    #[serde(flatten)]
    pub ingress: std::sync::Arc<IngressView>,
    pub annotation: AnnotationStatus,
    /// The most severe single finding on this Ingress or its chain, if any (kept for the
    /// rollout view).
    pub worst: Option<Severity>,
    /// Its health: the severity of the most severe problem holding it (the harm to its
    /// clients, as the board and its page tell it), or None when no problem does.
    pub severity: Option<Severity>,
    pub findings: usize,
}

/// The chain view of one Ingress.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IngressDetail {
    pub ingress: IngressView,
    pub annotation: AnnotationStatus,
    /// The policy responsible for its edit-in-place annotation, if one is.
    pub policy: Option<crate::model::policy::PolicyRef>,
    pub controller: ControllerInfo,
    /// One entry per `spec.tls` entry, with the Certificate and its attempts.
    pub tls: Vec<TlsChain>,
    /// Findings on the Ingress and every object of its chain.
    pub findings: Vec<Finding>,
    pub events: Vec<EventView>,
    /// What the probe saw on the hosts of the Certificate (its dnsNames published in the
    /// Certificate's namespace), per address.
    pub clients_get: Vec<crate::model::probe::Observation>,
}

/// A row of the Certificate list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CertificateRow {
    #[serde(flatten)]
    pub certificate: CertificateView,
    pub server: AcmeServer,
    /// The owning Ingress, if ingress-shim made it.
    pub ingress: Option<String>,
    /// The most severe single finding about it, if any.
    pub worst: Option<Severity>,
    /// Its health: the severity of the most severe problem holding it, or None.
    pub severity: Option<Severity>,
}

/// The chain view of one Certificate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CertificateDetail {
    #[serde(flatten)]
    pub chain: CertificateChain,
    pub ingress: Option<String>,
    pub findings: Vec<Finding>,
    pub events: Vec<EventView>,
    /// What the probe saw on the hosts of the Certificate (its dnsNames published in the
    /// Certificate's namespace), per address.
    pub clients_get: Vec<crate::model::probe::Observation>,
}

//! Whether a problem is being fixed: nothing is wrong any more but what a new certificate,
//! issued and then served, ends — and each of its certificates is being issued now or was
//! issued moments ago. Such a problem reads "confirming" with what it waits for, not
//! "broken".

use chrono::{DateTime, Utc};

use crate::model::rule::Rule;
use crate::model::Finding;

/// A Certificate's issuance as far as telling "being fixed" from "failing" needs it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Issuance {
    /// `Issuing=True`: an attempt is under way.
    issuing: bool,
    /// Someone asked for it (`Issuing` reason `ManuallyTriggered`: a renew, as `cmctl renew`
    /// and Lookout's renew and fix set it), not cert-manager's own retry after its backoff.
    asked: bool,
    /// `Ready=True`, since then.
    ready_since: Option<DateTime<Utc>>,
}

impl Issuance {
    pub(super) fn of(c: &crate::model::certificate::CertificateView) -> Issuance {
        Issuance {
            issuing: c.rare.issuing.as_ref().is_some_and(|i| i.is_true()),
            asked: c
                .rare
                .issuing
                .as_ref()
                .is_some_and(|i| i.is_true() && i.reason.as_deref() == Some("ManuallyTriggered")),
            ready_since: c
                .ready
                .as_ref()
                .filter(|r| r.is_true())
                .map(|r| r.last_transition.unwrap_or(DateTime::<Utc>::UNIX_EPOCH)),
        }
    }
}

/// How long after a certificate turns Ready what the probe saw before still counts as
/// awaited: the probe looks again at once and once more 15 s later; past this, what it
/// sees is what clients get.
const SERVED_WITHIN: chrono::Duration = chrono::Duration::seconds(45);

/// Whether a finding is one that a new certificate, issued and served, ends.
pub(super) fn awaited(f: &Finding) -> bool {
    matches!(
        f.rule,
        Rule::CertIssuanceFailing
            | Rule::CertNotReady
            | Rule::CertTemporaryCertificate
            | Rule::CertExpiring
            | Rule::CertExpired
            | Rule::ProbeNameMismatch
            | Rule::ProbeWrongCertificate
            | Rule::ProbeExpired
            | Rule::ProbeUntrusted
            | Rule::ProbeNoCertificate
    )
}

/// What a problem is waiting for when nothing is wrong any more but the results of a fix:
/// every finding is one that a new certificate ends (issuance failed before, not ready,
/// expiring, what the host served), no cause and no failing challenge remains, and each of
/// its certificates is either being issued now or was issued moments ago (its host yet to
/// be seen serving it). None: broken.
pub(super) fn confirming<'f>(
    findings: impl Iterator<Item = &'f Finding> + Clone,
    issuance: &[Issuance],
    now: DateTime<Utc>,
) -> Option<String> {
    if issuance.is_empty() || !findings.clone().all(awaited) {
        return None;
    }
    let issuing = issuance.iter().any(|i| i.issuing);
    let every = issuance
        .iter()
        .all(|i| i.issuing || i.ready_since.is_some_and(|at| now - at <= SERVED_WITHIN));
    // After a failure (a fix applied, or a retry): the new attempt; else a first issuance.
    let failed_before = findings
        .clone()
        .any(|f| f.rule == Rule::CertIssuanceFailing);
    // After a failure, only an attempt someone asked for is a fix under way: cert-manager's
    // own retry when its backoff ends is not evidence that anything changed.
    let asked = issuance.iter().filter(|i| i.issuing).all(|i| i.asked);
    match (every, issuing, failed_before) {
        (false, _, _) => None,
        (true, true, true) if asked => {
            Some("a new certificate is being issued after the last attempt failed".into())
        }
        (true, true, true) => None,
        (true, true, false) => Some("its certificate is being issued".into()),
        (true, false, _) => {
            Some("the certificate is issued; waiting to see the host serve it".into())
        }
    }
}

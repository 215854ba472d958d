//! What a problem does to clients. Severity is harm, urgency is time to harm:
//!
//! - **critical** — clients fail now (an expired, wrong or untrusted certificate is served,
//!   the host does not answer, the certificate has expired), or they will within
//!   [`HORIZON`] and nothing can renew the certificate before then;
//! - **warning** — clients will fail later unless the cause is fixed, or something needs
//!   attention without harming anyone yet (Lookout cannot see a cluster, a budget runs low);
//! - **info** — the rest.
//!
//! A certificate that renews on its own is no harm, however close its expiry: the time to
//! harm is its expiry only while its issuance fails, or will fail when it is next tried (the
//! challenge path is redirected, the fix is missing where it matters).

use chrono::{DateTime, Duration, Utc};

use crate::model::rule::{Bearing, Rule};
use crate::model::{Finding, Severity};

/// How soon a coming failure is critical rather than a warning.
pub const HORIZON: Duration = Duration::days(7);

/// Whether the finding means clients fail now: a rule that observes clients failing, where
/// the finding is critical (a certificate still valid for the host, if not the issued one,
/// or an untrusted one outside production, is a warning: no client fails yet).
pub(super) fn clients_fail_now(f: &Finding) -> bool {
    f.rule.info().bearing == Bearing::ClientsFail && f.severity == Severity::Critical
}

/// Whether the finding means the certificate is not being (re)issued, or will not be when
/// next tried: issuance fails or is refused, nothing can issue it, renewal is overdue, or the
/// challenge cannot pass (a redirected path, the missing or wrong fix where it matters).
/// An expired certificate is one that was not renewed.
fn renewal_fails(f: &Finding) -> bool {
    issuance_fails_now(f)
        || f.rule == Rule::CertExpired
        || f.rule.info().bearing == Bearing::RenewalWillFail
}

/// Whether the finding means issuance fails now (not only when next tried).
fn issuance_fails_now(f: &Finding) -> bool {
    match f.rule.info().bearing {
        Bearing::IssuanceFails => true,
        Bearing::IssuanceFailsWhenCritical => f.severity == Severity::Critical,
        Bearing::ClientsFail | Bearing::RenewalWillFail | Bearing::Attention => false,
    }
}

/// What a problem's chains hold for its hosts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Certificates {
    /// The earliest `notAfter` of the certificates it involves.
    pub expires: Option<DateTime<Utc>>,
    /// A TLS host of it has no issued certificate yet (a Certificate without `notAfter`, or
    /// TLS entries with no Certificate at all): while issuance fails, its clients get none.
    pub unissued: bool,
}

/// How a problem harms clients, judged from its findings and the certificates of its
/// chains.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Harm {
    pub severity: Severity,
    /// Clients fail now, since then (the earliest such finding; `now` when it has no time).
    pub clients_failing_since: Option<DateTime<Utc>>,
    /// Clients will fail then unless the cause is fixed: the certificate's expiry while its
    /// renewal fails. None while clients fail already, or when renewal works.
    pub clients_fail_at: Option<DateTime<Utc>>,
    /// Lookout has no current data from the cluster (`cluster.unreachable`): what its
    /// clients get is unknown, not "no harm seen".
    pub unknown: bool,
}

/// Judges a problem's harm from all its findings (root and symptoms) and its certificates.
pub(super) fn judge<'f>(
    findings: impl Iterator<Item = &'f Finding> + Clone,
    certificates: Certificates,
    now: DateTime<Utc>,
) -> Harm {
    let expires = certificates.expires;
    let observed = findings
        .clone()
        .filter(|f| clients_fail_now(f))
        .map(|f| f.since.unwrap_or(now).min(now))
        .min();
    // A host whose certificate was never issued, while its issuance fails: no certificate
    // for its clients, since the failure began.
    let unissued = findings
        .clone()
        .filter(|f| certificates.unissued && issuance_fails_now(f))
        .map(|f| f.since.unwrap_or(now).min(now))
        .min();
    let failing_since = match (observed, unissued) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let renewal_failing = findings.clone().any(renewal_fails);
    let fail_at = expires
        .filter(|_| renewal_failing && failing_since.is_none())
        // An expiry already past is clients failing now (no probe needed to know it).
        .map(|at| at.max(now));
    let failing_since = failing_since.or(expires.filter(|at| *at <= now && renewal_failing));
    let fail_at = fail_at.filter(|_| failing_since.is_none());
    let needs_attention = findings.clone().any(|f| f.severity <= Severity::Warning);
    let severity = if failing_since.is_some() || fail_at.is_some_and(|at| at - now <= HORIZON) {
        Severity::Critical
    } else if fail_at.is_some() || needs_attention {
        Severity::Warning
    } else {
        Severity::Info
    };
    Harm {
        severity,
        clients_failing_since: failing_since,
        clients_fail_at: fail_at,
        unknown: findings
            .clone()
            .any(|f| f.rule == crate::model::Rule::ClusterUnreachable),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::text::Text;

    fn now() -> DateTime<Utc> {
        "2026-12-04T03:00:00Z".parse().unwrap()
    }

    fn issued(not_after: DateTime<Utc>) -> Certificates {
        Certificates {
            expires: Some(not_after),
            unissued: false,
        }
    }

    fn finding(rule: Rule, severity: Severity, since: Option<Duration>) -> Finding {
        Finding {
            rule,
            severity,
            cluster: Text::from("zrh"),
            namespace: Text::from("shop"),
            kind: crate::model::Subject::Object(crate::model::Kind::Ingress),
            name: Text::from("shop"),
            title: Text::from("t"),
            message: Text::from("m"),
            remediation: Text::from("r"),
            since: since.map(|d| now() - d),
            commands: None,
            host: None,
        }
    }

    #[test]
    fn clients_that_get_a_wrong_certificate_are_failing_now_however_far_the_expiry() {
        let fs = [
            finding(
                Rule::IngressEditInPlaceMissing,
                Severity::Critical,
                Some(Duration::hours(3)),
            ),
            finding(
                Rule::ProbeWrongCertificate,
                Severity::Critical,
                Some(Duration::minutes(20)),
            ),
        ];
        let h = judge(fs.iter(), issued(now() + Duration::days(89)), now());
        assert_eq!(h.severity, Severity::Critical);
        assert_eq!(h.clients_failing_since, Some(now() - Duration::minutes(20)));
        assert_eq!(h.clients_fail_at, None);
    }

    #[test]
    fn a_failing_renewal_is_critical_within_seven_days_and_a_warning_before() {
        let fs = [finding(
            Rule::CertIssuanceFailing,
            Severity::Critical,
            Some(Duration::hours(5)),
        )];
        let soon = now() + Duration::days(4);
        let h = judge(fs.iter(), issued(soon), now());
        assert_eq!(
            (h.severity, h.clients_fail_at),
            (Severity::Critical, Some(soon))
        );
        assert_eq!(h.clients_failing_since, None);
        let later = now() + Duration::days(25);
        let h = judge(fs.iter(), issued(later), now());
        assert_eq!(
            (h.severity, h.clients_fail_at),
            (Severity::Warning, Some(later))
        );
    }

    #[test]
    fn an_expiry_is_no_harm_while_renewal_works() {
        let fs = [finding(Rule::CertStagingIssuer, Severity::Warning, None)];
        let h = judge(fs.iter(), issued(now() + Duration::days(3)), now());
        assert_eq!(h.clients_fail_at, None);
        assert_eq!(h.severity, Severity::Warning, "it still needs attention");
        let fs = [finding(Rule::IngressUnmanagedTls, Severity::Info, None)];
        assert_eq!(
            judge(fs.iter(), Certificates::default(), now()).severity,
            Severity::Info
        );
    }

    #[test]
    fn a_redirected_challenge_path_is_critical_when_the_certificate_expires_within_a_week() {
        let fs = [finding(
            Rule::ProbeAcmePathRedirected,
            Severity::Warning,
            Some(Duration::hours(1)),
        )];
        let h = judge(fs.iter(), issued(now() + Duration::days(6)), now());
        assert_eq!(h.severity, Severity::Critical);
        let h = judge(fs.iter(), issued(now() + Duration::days(60)), now());
        assert_eq!(h.severity, Severity::Warning);
    }

    #[test]
    fn an_expired_certificate_that_is_not_renewed_fails_clients_since_its_expiry() {
        let expired = now() - Duration::days(2);
        let fs = [finding(Rule::IssuerNotReady, Severity::Critical, None)];
        let h = judge(fs.iter(), issued(expired), now());
        assert_eq!(h.clients_failing_since, Some(expired));
        assert_eq!(h.severity, Severity::Critical);
    }

    #[test]
    fn a_host_never_issued_fails_its_clients_while_issuance_fails() {
        let never = Certificates {
            expires: None,
            unissued: true,
        };
        let failing = [finding(
            Rule::AcmeChallengeFailing,
            Severity::Critical,
            Some(Duration::minutes(40)),
        )];
        let h = judge(failing.iter(), never, now());
        assert_eq!(h.severity, Severity::Critical);
        assert_eq!(h.clients_failing_since, Some(now() - Duration::minutes(40)));
        // A first issuance under way for minutes is no failure yet.
        let issuing = [finding(
            Rule::CertNotReady,
            Severity::Warning,
            Some(Duration::minutes(2)),
        )];
        let h = judge(issuing.iter(), never, now());
        assert_eq!(h.clients_failing_since, None);
    }

    #[test]
    fn an_unreachable_cluster_needs_attention_but_hurts_no_known_client() {
        let fs = [finding(Rule::ClusterUnreachable, Severity::Critical, None)];
        let h = judge(fs.iter(), Certificates::default(), now());
        assert_eq!(h.severity, Severity::Warning);
        assert_eq!(h.clients_failing_since, None);
    }

    #[test]
    fn a_budget_reached_blocks_renewal_and_one_getting_near_does_not() {
        let expiry = issued(now() + Duration::days(3));
        let reached = [finding(Rule::AcmeRateLimitBudget, Severity::Critical, None)];
        assert_eq!(
            judge(reached.iter(), expiry, now()).severity,
            Severity::Critical
        );
        let near = [finding(Rule::AcmeRateLimitBudget, Severity::Warning, None)];
        let h = judge(near.iter(), expiry, now());
        assert_eq!((h.severity, h.clients_fail_at), (Severity::Warning, None));
    }
}

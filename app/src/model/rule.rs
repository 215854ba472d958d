//! The rules as a type: every rule Lookout has, and one table of what each is — its stable
//! id, its title in words, how it bears on clients (the severity model of the board), what
//! part it plays in a problem, the action it recommends, whether it blocks issuing again,
//! and the upstream documentation its advice rests on. The cause filter, the labels, the
//! problems and the docs read this table; a new rule is a new variant, and the compiler asks
//! for its row.

use serde::Serialize;

mod docs;
mod table;
use table::WAIT;

/// One health rule. Its id (`cert.expired`) is part of the public contract: API, metrics
/// and docs; never renamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    ClusterUnreachable,
    ClusterCertManagerMissing,
    ClusterIpv6ProxyProtocol,
    CertExpired,
    CertExpiring,
    CertNotReady,
    CertTemporaryCertificate,
    CertAwaitingApproval,
    CertRequestDenied,
    CertIssuanceFailing,
    CertHostsNotCovered,
    CertStagingIssuer,
    AcmeChallengeFailing,
    AcmeChallengeStuck,
    AcmeChallengesQueued,
    AcmeNoSolver,
    AcmeRateLimited,
    AcmeRateLimitBudget,
    AcmeOrdersBudget,
    AcmePaused,
    IssuerMissing,
    IssuerNotReady,
    IngressEditInPlaceMissing,
    IngressEditInPlaceInvalid,
    IngressEditInPlaceNotEffective,
    IngressSharedSecret,
    IngressSharedHostHttpsRedirect,
    IngressCiliumListenerConflict,
    IngressNoAddress,
    IngressUnmanagedTls,
    IngressUnknownClass,
    IngressCertificateMissing,
    PolicyNotReady,
    PolicyMissingCoverage,
    PolicyConflictsWithFix,
    GatewayListenerNotReady,
    GatewayReferenceNotPermitted,
    GatewayHostnameNotCovered,
    GatewayHttp01RouteUnreachable,
    GatewayAcmePathRedirected,
    TailscaleCertBudget,
    ProbeWrongCertificate,
    ProbeExpired,
    ProbeNameMismatch,
    ProbeUntrusted,
    ProbeNoCertificate,
    ProbeAcmePathRedirected,
    ProbeUnreachable,
    ProbeProxyProtocol,
}

/// What part a rule plays in a chain of objects (see the problems).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Part {
    /// Never folded into a chain: its own problem (budgets, tailnet, informational checks).
    Alone,
    /// What a failure looks like; the number ranks how much it explains (higher: deeper).
    Symptom(u8),
    /// Why issuance fails; the number ranks which cause to fix first (higher: first): the
    /// prerequisites (cluster, cert-manager, issuer, the CA) above the Ingress's settings.
    Cause(u8),
}

/// How a finding of the rule bears on clients: what the board's severity is judged from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bearing {
    /// Clients fail now: what they were observed to get, or a certificate past `notAfter`.
    ClientsFail,
    /// The certificate cannot be issued now (refused, failing, nothing to issue it).
    IssuanceFails,
    /// Like [`Bearing::IssuanceFails`], but only when the finding is critical (a limit
    /// reached rather than near; not ready for over an hour rather than issuing).
    IssuanceFailsWhenCritical,
    /// Issuance will fail when it is next tried (the challenge cannot pass), or a renewal
    /// that was due has not happened.
    RenewalWillFail,
    /// Needs attention; no client harm follows from it alone.
    Attention,
}

/// Whether issuing again (renew, restart) is refused while the rule is a problem's root:
/// it would only fail again and spend Let's Encrypt budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blocks {
    Never,
    Always,
    /// Only when the root finding is critical (a certainty, not a risk).
    WhenCritical,
}

/// What a rule is.
#[derive(Debug, Clone, Copy)]
pub struct RuleInfo {
    pub id: &'static str,
    /// A few words, for filters and labels ("Challenge failing").
    pub title: &'static str,
    /// The board's headline lead for a problem rooted at it.
    pub diagnosis: &'static str,
    pub part: Part,
    pub bearing: Bearing,
    /// The one thing to do, as a button's words; `None`: open the root object's page.
    pub action: Option<&'static str>,
    pub blocks: Blocks,
    /// The upstream documentation its advice rests on: title and URL.
    pub docs: (&'static str, &'static str),
}

/// The recommended actions' words, shared by the rules that recommend them.
impl Rule {
    /// Whether what it recommends is to wait (the CA refuses for now): advice, not an
    /// action anyone can take on a page.
    pub fn advises_waiting(self) -> bool {
        self.info().action == WAIT
    }

    /// Every rule, in the order of the docs.
    pub const ALL: [Rule; 49] = [
        Rule::ClusterUnreachable,
        Rule::ClusterCertManagerMissing,
        Rule::ClusterIpv6ProxyProtocol,
        Rule::CertExpired,
        Rule::CertExpiring,
        Rule::CertNotReady,
        Rule::CertTemporaryCertificate,
        Rule::CertAwaitingApproval,
        Rule::CertRequestDenied,
        Rule::CertIssuanceFailing,
        Rule::CertHostsNotCovered,
        Rule::CertStagingIssuer,
        Rule::AcmeChallengeFailing,
        Rule::AcmeChallengeStuck,
        Rule::AcmeChallengesQueued,
        Rule::AcmeNoSolver,
        Rule::AcmeRateLimited,
        Rule::AcmeRateLimitBudget,
        Rule::AcmeOrdersBudget,
        Rule::AcmePaused,
        Rule::IssuerMissing,
        Rule::IssuerNotReady,
        Rule::IngressEditInPlaceMissing,
        Rule::IngressEditInPlaceInvalid,
        Rule::IngressEditInPlaceNotEffective,
        Rule::IngressSharedSecret,
        Rule::IngressSharedHostHttpsRedirect,
        Rule::IngressCiliumListenerConflict,
        Rule::IngressNoAddress,
        Rule::IngressUnmanagedTls,
        Rule::IngressUnknownClass,
        Rule::IngressCertificateMissing,
        Rule::PolicyNotReady,
        Rule::PolicyMissingCoverage,
        Rule::PolicyConflictsWithFix,
        Rule::GatewayListenerNotReady,
        Rule::GatewayReferenceNotPermitted,
        Rule::GatewayHostnameNotCovered,
        Rule::GatewayHttp01RouteUnreachable,
        Rule::GatewayAcmePathRedirected,
        Rule::TailscaleCertBudget,
        Rule::ProbeWrongCertificate,
        Rule::ProbeExpired,
        Rule::ProbeNameMismatch,
        Rule::ProbeUntrusted,
        Rule::ProbeNoCertificate,
        Rule::ProbeAcmePathRedirected,
        Rule::ProbeUnreachable,
        Rule::ProbeProxyProtocol,
    ];

    /// The rule of an id; None for anything else.
    pub fn parse(id: &str) -> Option<Rule> {
        Rule::ALL.into_iter().find(|r| r.id() == id)
    }

    pub fn id(self) -> &'static str {
        self.info().id
    }

    pub fn title(self) -> &'static str {
        self.info().title
    }

    /// The table: its row ([`table::info`]).
    pub fn info(self) -> RuleInfo {
        table::info(self)
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

impl Serialize for Rule {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.id())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_parse_back() {
        let mut ids: Vec<&str> = Rule::ALL.iter().map(|r| r.id()).collect();
        for r in Rule::ALL {
            assert_eq!(Rule::parse(r.id()), Some(r));
        }
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), Rule::ALL.len());
        assert_eq!(Rule::parse("cert.expird"), None);
    }

    #[test]
    fn every_rule_of_the_docs_is_a_rule_and_every_rule_is_in_the_docs() {
        let docs = include_str!("../../../docs/rules.md");
        for r in Rule::ALL {
            assert!(
                docs.contains(&format!("| `{}` |", r.id())),
                "{} has no row in docs/rules.md",
                r.id()
            );
        }
    }

    #[test]
    fn titles_are_words_not_ids() {
        for r in Rule::ALL {
            let t = r.title();
            assert!(!t.contains('.') && !t.is_empty(), "{t}");
        }
    }
}

//! The rules as a type: every rule Lookout has, and one table of what each is — its stable
//! id, its title in words, how it bears on clients (the severity model of the board), what
//! part it plays in a problem, the action it recommends, whether it blocks issuing again,
//! and the upstream documentation its advice rests on. The cause filter, the labels, the
//! problems and the docs read this table; a new rule is a new variant, and the compiler asks
//! for its row.

use serde::Serialize;

mod docs;
use docs::{
    ACME_ISSUERS, ACME_TROUBLESHOOTING, APPROVAL, CILIUM_INGRESS, EDIT_IN_PLACE_DOCS, ESPEJOTE,
    RATE_LIMITS, SECURING_INGRESS, STAGING, TROUBLESHOOTING,
};

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
const APPLY_FIX: Option<&str> = Some("Add edit-in-place");
const FIX_INGRESS: Option<&str> = Some("Fix the Ingress");
const CHECK_ISSUER: Option<&str> = Some("Open the issuer");
const CHECK_CLUSTER: Option<&str> = Some("Open the cluster's state");
const CHECK_LB: Option<&str> = Some("Check the load balancer");
const WAIT: Option<&str> = Some("Wait, and hold back new certificates");
const REPAIR_POLICY: Option<&str> = Some("Repair the policy");

impl Rule {
    /// Whether what it recommends is to wait (the CA refuses for now): advice, not an
    /// action anyone can take on a page.
    pub fn advises_waiting(self) -> bool {
        self.info().action == WAIT
    }

    /// Every rule, in the order of the docs.
    pub const ALL: [Rule; 44] = [
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

    /// The table.
    pub fn info(self) -> RuleInfo {
        use Bearing::*;
        use Blocks::{Always, Never, WhenCritical};
        use Part::*;
        let row = |id, title, diagnosis, part, bearing, action, blocks, docs| RuleInfo {
            id,
            title,
            diagnosis,
            part,
            bearing,
            action,
            blocks,
            docs,
        };
        match self {
            Rule::ClusterUnreachable => row(
                "cluster.unreachable",
                "Cluster unreachable",
                "Lookout cannot reach this cluster; what it shows may be out of date",
                Cause(9),
                Attention,
                CHECK_CLUSTER,
                Never,
                TROUBLESHOOTING,
            ),
            Rule::ClusterCertManagerMissing => row(
                "cluster.cert-manager-missing",
                "cert-manager not installed",
                "cert-manager is not installed here, so nothing issues certificates",
                Cause(9),
                IssuanceFails,
                // Found on each Ingress that asks for a certificate: its page says why.
                None,
                Always,
                TROUBLESHOOTING,
            ),
            Rule::ClusterIpv6ProxyProtocol => row(
                "cluster.ipv6-proxy-protocol",
                "IPv6 clients fail behind PROXY protocol",
                "IPv6 clients fail: the load balancer and Cilium disagree on PROXY protocol",
                Cause(2),
                ClientsFail,
                // Its finding says which side to change: the button opens it.
                None,
                Never,
                CILIUM_INGRESS,
            ),
            Rule::CertExpired => row(
                "cert.expired",
                "Certificate expired",
                "The certificate has expired",
                Symptom(4),
                ClientsFail,
                None,
                Never,
                TROUBLESHOOTING,
            ),
            Rule::CertExpiring => row(
                "cert.expiring",
                "Certificate expiring, renewal overdue",
                "The certificate expires soon and is not being renewed",
                Symptom(2),
                RenewalWillFail,
                None,
                Never,
                TROUBLESHOOTING,
            ),
            Rule::CertNotReady => row(
                "cert.not-ready",
                "Certificate not ready",
                "The certificate is not ready",
                Symptom(6),
                IssuanceFailsWhenCritical,
                None,
                Never,
                TROUBLESHOOTING,
            ),
            Rule::CertTemporaryCertificate => row(
                "cert.temporary-certificate",
                "Temporary certificate served",
                "The first issuance is in progress: clients get cert-manager's temporary certificate until it completes",
                Symptom(6),
                Attention,
                None,
                Never,
                (
                    "cert-manager: the issue-temporary-certificate annotation",
                    "https://cert-manager.io/docs/reference/annotations/#cert-managerioissue-temporary-certificate",
                ),
            ),
            Rule::CertAwaitingApproval => row(
                "cert.awaiting-approval",
                "Request waiting for approval",
                "No approver has approved the certificate's request, so nothing signs it",
                Cause(8),
                IssuanceFails,
                None,
                Always,
                APPROVAL,
            ),
            Rule::CertRequestDenied => row(
                "cert.request-denied",
                "Request denied by a policy",
                "An approval policy denied the certificate's request",
                Cause(6),
                IssuanceFails,
                None,
                Always,
                APPROVAL,
            ),
            Rule::CertIssuanceFailing => row(
                "cert.issuance-failing",
                "Issuance failing",
                "Issuing the certificate keeps failing",
                Symptom(8),
                IssuanceFails,
                None,
                Never,
                TROUBLESHOOTING,
            ),
            Rule::CertHostsNotCovered => row(
                "cert.hosts-not-covered",
                "Host missing from the certificate",
                "The certificate does not cover every host the Ingress serves",
                Cause(1),
                Attention,
                FIX_INGRESS,
                Never,
                TROUBLESHOOTING,
            ),
            Rule::CertStagingIssuer => row(
                "cert.staging-issuer",
                "Staging certificate in production",
                "A production host has a Let's Encrypt staging certificate, which browsers do not trust",
                Cause(1),
                Attention,
                None,
                Never,
                STAGING,
            ),
            Rule::AcmeChallengeFailing => row(
                "acme.challenge-failing",
                "Challenge failing",
                "Let's Encrypt's challenge fails",
                Symptom(12),
                IssuanceFails,
                None,
                Never,
                ACME_TROUBLESHOOTING,
            ),
            Rule::AcmeChallengeStuck => row(
                "acme.challenge-stuck",
                "Challenge stuck",
                "The challenge has made no progress",
                Symptom(10),
                IssuanceFails,
                None,
                Never,
                ACME_TROUBLESHOOTING,
            ),
            Rule::AcmeChallengesQueued => row(
                "acme.challenges-queued",
                "Challenges queued",
                "Challenges wait for cert-manager's limit of concurrent challenges",
                Symptom(9),
                Attention,
                None,
                Never,
                ACME_TROUBLESHOOTING,
            ),
            Rule::AcmeNoSolver => row(
                "acme.no-solver",
                "No solver for a name",
                "No solver of the issuer can validate a name of the certificate, so no challenge is made",
                Cause(6),
                IssuanceFails,
                None,
                Always,
                ACME_ISSUERS,
            ),
            Rule::AcmeRateLimited => row(
                "acme.rate-limited",
                "Let's Encrypt limit hit",
                "Let's Encrypt refuses new certificates for now (rate limit)",
                Cause(7),
                IssuanceFails,
                WAIT,
                Always,
                RATE_LIMITS,
            ),
            Rule::AcmeRateLimitBudget => row(
                "acme.rate-limit-budget",
                "Let's Encrypt limit running out",
                "A Let's Encrypt limit is used up or nearly",
                Alone,
                IssuanceFailsWhenCritical,
                WAIT,
                WhenCritical,
                RATE_LIMITS,
            ),
            Rule::AcmeOrdersBudget => row(
                "acme.orders-budget",
                "New-orders limit running out",
                "The ACME account's new orders are used up or nearly",
                Alone,
                IssuanceFailsWhenCritical,
                WAIT,
                WhenCritical,
                RATE_LIMITS,
            ),
            Rule::AcmePaused => row(
                "acme.paused",
                "Names paused by Let's Encrypt",
                "Let's Encrypt has paused issuance for these names after repeated failures",
                Cause(7),
                IssuanceFails,
                WAIT,
                Always,
                RATE_LIMITS,
            ),
            Rule::IssuerMissing => row(
                "issuer.missing",
                "Issuer does not exist",
                "The issuer these certificates ask for does not exist",
                Cause(8),
                IssuanceFails,
                CHECK_ISSUER,
                Always,
                ACME_ISSUERS,
            ),
            Rule::IssuerNotReady => row(
                "issuer.not-ready",
                "Issuer not ready",
                "The issuer is not ready, so no certificate can be issued",
                Cause(8),
                IssuanceFails,
                CHECK_ISSUER,
                Always,
                ACME_ISSUERS,
            ),
            Rule::IngressEditInPlaceMissing => row(
                "ingress.edit-in-place-missing",
                "Edit-in-place missing",
                "Let's Encrypt cannot reach the HTTP-01 challenge: the solver needs edit-in-place here",
                Cause(4),
                RenewalWillFail,
                APPLY_FIX,
                WhenCritical,
                EDIT_IN_PLACE_DOCS,
            ),
            Rule::IngressEditInPlaceInvalid => row(
                "ingress.edit-in-place-invalid",
                "Edit-in-place has a value cert-manager ignores",
                "The edit-in-place annotation has a value cert-manager ignores",
                Cause(5),
                RenewalWillFail,
                APPLY_FIX,
                WhenCritical,
                EDIT_IN_PLACE_DOCS,
            ),
            Rule::IngressEditInPlaceNotEffective => row(
                "ingress.edit-in-place-not-effective",
                "Edit-in-place set, not yet in effect",
                "The fix is set on the Ingress but not yet in effect for its challenges",
                Cause(4),
                RenewalWillFail,
                APPLY_FIX,
                Never,
                EDIT_IN_PLACE_DOCS,
            ),
            Rule::IngressSharedSecret => row(
                "ingress.shared-secret",
                "TLS Secret shared by several entries",
                "Several Ingresses write the same TLS Secret",
                Cause(1),
                Attention,
                FIX_INGRESS,
                Never,
                SECURING_INGRESS,
            ),
            Rule::IngressSharedHostHttpsRedirect => row(
                "ingress.shared-host-https-redirect",
                "Another Ingress redirects the host to HTTPS",
                "Another Ingress's HTTPS redirect catches this host's challenge path",
                Cause(3),
                RenewalWillFail,
                FIX_INGRESS,
                WhenCritical,
                CILIUM_INGRESS,
            ),
            Rule::IngressCiliumListenerConflict => row(
                "ingress.cilium-listener-conflict",
                "Host with two Secrets on Cilium's shared listener",
                "Cilium's shared listener refuses updates: one host has two TLS Secrets",
                Cause(2),
                RenewalWillFail,
                FIX_INGRESS,
                Never,
                CILIUM_INGRESS,
            ),
            Rule::IngressNoAddress => row(
                "ingress.no-address",
                "No load-balancer address",
                "The Ingress has no load-balancer address, so nothing reaches it",
                Cause(2),
                Attention,
                FIX_INGRESS,
                Never,
                SECURING_INGRESS,
            ),
            Rule::IngressUnmanagedTls => row(
                "ingress.unmanaged-tls",
                "TLS Secret not made by cert-manager",
                "The TLS Secret is not made by cert-manager",
                Alone,
                Attention,
                None,
                Never,
                SECURING_INGRESS,
            ),
            Rule::IngressUnknownClass => row(
                "ingress.unknown-class",
                "Ingress class nobody serves",
                "No controller serves this Ingress's class",
                Cause(6),
                Attention,
                FIX_INGRESS,
                Never,
                SECURING_INGRESS,
            ),
            Rule::IngressCertificateMissing => row(
                "ingress.certificate-missing",
                "No Certificate made for the Ingress",
                "The Ingress asks for a certificate, but none is made",
                Cause(6),
                IssuanceFails,
                FIX_INGRESS,
                Always,
                SECURING_INGRESS,
            ),
            Rule::PolicyNotReady => row(
                "policy.not-ready",
                "Annotation policy failing",
                "The policy that sets edit-in-place is failing, so the Ingresses it covers lack it",
                Cause(6),
                RenewalWillFail,
                REPAIR_POLICY,
                WhenCritical,
                ESPEJOTE,
            ),
            Rule::PolicyMissingCoverage => row(
                "policy.missing-coverage",
                "Ingresses the policy misses",
                "Ingresses the edit-in-place policy is meant for lack the annotation",
                Cause(6),
                RenewalWillFail,
                REPAIR_POLICY,
                WhenCritical,
                ESPEJOTE,
            ),
            Rule::PolicyConflictsWithFix => row(
                "policy.conflicts-with-fix",
                "Policy holds edit-in-place at another value",
                "The policy that owns edit-in-place sets a value cert-manager ignores, so a fix on the Ingress would fight it",
                Cause(6),
                RenewalWillFail,
                REPAIR_POLICY,
                WhenCritical,
                ESPEJOTE,
            ),
            Rule::TailscaleCertBudget => row(
                "tailscale.cert-budget",
                "Tailnet certificate limit running out",
                "The tailnet's Let's Encrypt certificates are used up or nearly",
                Alone,
                Attention,
                WAIT,
                Never,
                (
                    "Tailscale: HTTPS certificates",
                    "https://tailscale.com/kb/1153/enabling-https",
                ),
            ),
            Rule::ProbeWrongCertificate => row(
                "probe.wrong-certificate",
                "Clients get another certificate",
                "Observed: clients get another certificate than the issued one",
                Symptom(5),
                ClientsFail,
                Some("Check what the listener serves"),
                Never,
                TROUBLESHOOTING,
            ),
            Rule::ProbeExpired => row(
                "probe.expired",
                "Clients get an expired certificate",
                "Observed: clients get an expired certificate",
                Symptom(5),
                ClientsFail,
                Some("Check what the listener serves"),
                Never,
                TROUBLESHOOTING,
            ),
            Rule::ProbeNameMismatch => row(
                "probe.name-mismatch",
                "Clients get a certificate for other names",
                "Observed: the served certificate does not name the host",
                Symptom(5),
                ClientsFail,
                None,
                Never,
                TROUBLESHOOTING,
            ),
            Rule::ProbeUntrusted => row(
                "probe.untrusted",
                "Clients do not trust the certificate",
                "Observed: clients do not trust the served certificate",
                Symptom(5),
                ClientsFail,
                None,
                Never,
                STAGING,
            ),
            Rule::ProbeNoCertificate => row(
                "probe.no-certificate",
                "Clients get no certificate",
                "Observed: the host serves no certificate, because its Certificate has not been issued",
                Symptom(5),
                ClientsFail,
                None,
                Never,
                TROUBLESHOOTING,
            ),
            Rule::ProbeAcmePathRedirected => row(
                "probe.acme-path-redirected",
                "Challenge path redirected to HTTPS",
                "Observed: the ACME challenge path is redirected to HTTPS, so HTTP-01 cannot pass",
                Cause(3),
                RenewalWillFail,
                FIX_INGRESS,
                WhenCritical,
                (
                    "Let's Encrypt: the HTTP-01 challenge",
                    "https://letsencrypt.org/docs/challenge-types/#http-01-challenge",
                ),
            ),
            Rule::ProbeUnreachable => row(
                "probe.unreachable",
                "Host does not answer",
                "Observed: clients get no answer from the load balancer",
                Alone,
                ClientsFail,
                CHECK_LB,
                Never,
                CILIUM_INGRESS,
            ),
            Rule::ProbeProxyProtocol => row(
                "probe.proxy-protocol",
                "Load balancer wants PROXY protocol",
                "Observed: the load balancer answers only PROXY-protocol clients",
                Alone,
                ClientsFail,
                CHECK_LB,
                Never,
                CILIUM_INGRESS,
            ),
        }
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

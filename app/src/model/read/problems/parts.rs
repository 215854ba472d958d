//! The parts a problem is told with — how much and how soon it hurts (`Urgency`), each
//! chain it reaches (`Affected`), whose move it is (`Owner`), the one next action — and the
//! split of stacked causes, judged in [`super`].

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::{harm, part_of, rank, supports, Problem, ProblemObject};
use crate::model::finding::FindingRef;
use crate::model::rule::{Part, Rule};
use crate::model::text::Text;
use crate::model::{Finding, Kind, Severity};

/// How much and how soon the problem hurts clients (see [`harm`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Urgency {
    /// Harm to clients: critical when they fail now or will within seven days with
    /// issuance failing; warning when they will later, or something needs attention.
    pub severity: Severity,
    /// Clients fail now, since then.
    pub clients_failing_since: Option<DateTime<Utc>>,
    /// Clients will fail then unless the cause is fixed (a certificate's expiry while its
    /// renewal fails); None while they fail already or when renewal works.
    pub clients_fail_at: Option<DateTime<Utc>>,
    /// The earliest `notAfter` of the certificates it involves.
    pub expires: Option<DateTime<Utc>>,
    /// A TLS host it involves has no issued certificate yet.
    #[serde(skip)]
    unissued: bool,
    /// Since when the root or any symptom has held.
    pub failing_since: Option<DateTime<Utc>>,
    /// Lookout has no current data from the cluster: the harm to clients is unknown.
    pub harm_unknown: bool,
}

impl Urgency {
    /// The problem's urgency over the chains it reaches (`parts`, each judged once): the
    /// worst severity, clients failing since the earliest, else the soonest time to harm;
    /// None without parts.
    pub fn worst<'u>(parts: impl IntoIterator<Item = &'u Urgency>) -> Option<Urgency> {
        let earliest = |a: Option<DateTime<Utc>>, b: Option<DateTime<Utc>>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let mut out: Option<Urgency> = None;
        for u in parts {
            out = Some(match out {
                None => u.clone(),
                Some(w) => Urgency {
                    severity: w.severity.min(u.severity),
                    clients_failing_since: earliest(
                        w.clients_failing_since,
                        u.clients_failing_since,
                    ),
                    clients_fail_at: earliest(w.clients_fail_at, u.clients_fail_at),
                    expires: earliest(w.expires, u.expires),
                    unissued: w.unissued || u.unissued,
                    failing_since: earliest(w.failing_since, u.failing_since),
                    harm_unknown: w.harm_unknown && u.harm_unknown,
                },
            });
        }
        // A time to harm is told only while no client fails yet.
        if let Some(u) = out.as_mut().filter(|u| u.clients_failing_since.is_some()) {
            u.clients_fail_at = None;
        }
        out
    }

    /// What the problem's chains hold, as it was judged with.
    pub(super) fn certificates(&self) -> harm::Certificates {
        harm::Certificates {
            expires: self.expires,
            unissued: self.unissued,
        }
    }

    /// Judges the harm of `findings` (a problem's root and symptoms); a problem being
    /// confirmed (nothing to do but wait) is info, not counted among what is broken.
    pub(super) fn of<'f>(
        findings: impl Iterator<Item = &'f Finding> + Clone,
        certificates: harm::Certificates,
        since: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
        confirming: bool,
    ) -> Urgency {
        let h = harm::judge(findings, certificates, now);
        Urgency {
            severity: if confirming {
                Severity::Info
            } else {
                h.severity
            },
            clients_failing_since: h.clients_failing_since,
            clients_fail_at: h.clients_fail_at,
            expires: certificates.expires,
            unissued: certificates.unissued,
            failing_since: since,
            harm_unknown: h.unknown,
        }
    }
}

/// The one next thing to do, and where.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NextAction {
    /// A short imperative that says where it leads ("Add edit-in-place", "Open the issuer",
    /// "Open Certificate shop-tls").
    pub label: String,
    /// The page where it is done (the root object's page).
    pub href: Option<String>,
    /// The root finding's remediation, in full.
    pub detail: Text,
    /// The reader cannot do it: only the platform team can (a customer's view of a
    /// platform problem). No button and no command is offered; the support contact is.
    pub provider: bool,
    /// The advice is to wait (the CA refuses for now): told as advice, not as a button;
    /// `href` opens where the retry time is.
    pub wait: bool,
}

impl NextAction {
    /// What a reader who does not run the cluster is told to do about a platform problem.
    pub fn provider() -> NextAction {
        NextAction {
            label: "On the provider's side".into(),
            href: None,
            detail: Text::from(
                "Only the platform team that runs the cluster can fix this (the cluster, \
                 cert-manager, a ClusterIssuer and its account, the load balancer or the \
                 ingress controller); nothing in your namespaces needs to change. Tell them, \
                 with the hosts above.",
            ),
            provider: true,
            wait: false,
        }
    }
}

/// One chain a problem reaches — an Ingress with what it uses, a Certificate no Ingress
/// owns, or the object of a finding no chain took — and how the problem harms that chain's
/// clients. Judged once, with the problem: every page, list and reader tells the same of
/// the object, whatever else the problem reaches.
#[derive(Debug, Clone, Serialize)]
pub struct Affected {
    pub object: ProblemObject,
    /// The Certificates of the chain (in the object's namespace), when the object is an
    /// Ingress.
    pub certificates: Box<[Text]>,
    pub hosts: Box<[Text]>,
    pub urgency: Urgency,
    /// What this chain was judged on besides the problem's root: its own findings, kept so
    /// that a finding joining later (a budget, a tailnet) is judged with them.
    #[serde(skip)]
    pub(super) findings: Box<[FindingRef]>,
}

/// Two chains read the same when they say the same (the findings they were judged on may
/// be gathered in another order).
impl PartialEq for Affected {
    fn eq(&self, other: &Self) -> bool {
        self.object == other.object
            && self.certificates == other.certificates
            && self.hosts == other.hosts
            && self.urgency == other.urgency
    }
}

impl Affected {
    /// Whether this chain holds the object: its head, or one of its Certificates.
    pub fn holds(&self, kind: Kind, namespace: &str, name: &str) -> bool {
        let o = &self.object;
        &*o.namespace == namespace
            && ((o.kind == kind && &*o.name == name)
                || (kind == Kind::Certificate && self.certificates.iter().any(|c| &**c == name)))
    }
}

/// Whose move a problem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Owner {
    /// The namespace's owner can fix it: their Ingress, Certificate, Issuer, or the domain
    /// their certificates spend.
    Namespace,
    /// Only the platform can: the cluster, cert-manager, a ClusterIssuer and its ACME
    /// account, the load balancer, the ingress controller.
    Platform,
}

impl Owner {
    /// Whose move the problem rooted at `root` is; `issuer_kind` is the kind of the issuer
    /// its chains name (an account's limits are its issuer's owner's).
    pub(super) fn of(root: &Finding, issuer_kind: Option<&str>) -> Owner {
        use crate::model::{Kind, Subject};
        let cluster_issuer = issuer_kind.and_then(Kind::from_name) == Some(Kind::ClusterIssuer);
        let platform = match root.rule {
            Rule::ClusterUnreachable
            | Rule::ClusterCertManagerMissing
            | Rule::ClusterIpv6ProxyProtocol
            | Rule::ProbeUnreachable
            | Rule::ProbeProxyProtocol
            | Rule::IngressNoAddress
            // The approvers (cert-manager's own, approver-policy's policies) are the
            // cluster's.
            | Rule::CertAwaitingApproval
            // cert-manager's controller flag, and the other challenges holding the slots.
            | Rule::AcmeChallengesQueued
            | Rule::TailscaleCertBudget => true,
            // An account's state and limits: its issuer's.
            Rule::IssuerNotReady
            | Rule::AcmePaused
            | Rule::AcmeOrdersBudget
            // The solvers are the issuer's.
            | Rule::AcmeNoSolver => {
                cluster_issuer || root.kind == Subject::Object(Kind::ClusterIssuer)
            }
            _ => matches!(
                root.kind,
                Subject::Cluster | Subject::Object(Kind::ClusterIssuer)
            ),
        };
        if platform {
            Owner::Platform
        } else {
            Owner::Namespace
        }
    }
}

/// The next action for a root finding: its rule's recommendation, else the root object's
/// page, named by what it is ("Open Certificate shop-tls").
pub(super) fn next_action(root: &Finding) -> NextAction {
    let label = match root.rule.info().action {
        Some(words) => words.to_string(),
        None if root.kind == crate::model::Subject::Cluster => "Open its findings".to_string(),
        None => format!("Open {} {}", root.kind, root.name),
    };
    NextAction {
        label,
        href: href(root),
        detail: root.remediation.clone(),
        provider: false,
        wait: root.rule.advises_waiting(),
    }
}

/// The page of the object a finding is about, when Lookout has one.
fn href(f: &Finding) -> Option<String> {
    match f.kind {
        // Whether Lookout reaches the cluster is what /clusters shows; anything else about
        // the cluster as a whole is told, with its evidence and remedy, by its findings.
        crate::model::Subject::Cluster if f.rule == Rule::ClusterUnreachable => {
            Some("/clusters".into())
        }
        crate::model::Subject::Cluster => Some(format!(
            "/findings?cluster={}&rule={}",
            crate::model::links::encode(&f.cluster),
            crate::model::links::encode(f.rule.id())
        )),
        crate::model::Subject::Object(kind) => {
            crate::model::links::object_path(kind.name(), &f.cluster, &f.namespace, &f.name)
        }
    }
}

/// Stacked causes in one chain: when its clients fail now for a reason its root does not
/// explain (a host missing from an issued certificate, another certificate served) while
/// the root only bears on issuing (a challenge path that breaks the next renewal), the harm
/// leads — a problem of its own, rooted at the cause that explains what clients get, else at
/// what the probe saw — and the root keeps the rest, with its own time to harm. A chain whose
/// certificate was never issued is not split: its clients fail because issuance fails.
pub(super) fn harm_first<'f>(
    root: &'f Finding,
    in_chain: Vec<&'f Finding>,
    unissued: bool,
) -> Vec<(&'f Finding, Vec<&'f Finding>)> {
    // What an issuance that works would end (an expired certificate, one served expired) is
    // the root's own harm when the root stops issuing: not another cause.
    let renewal_ends = |f: &Finding| {
        matches!(
            f.rule,
            Rule::CertExpired
                | Rule::ProbeExpired
                | Rule::CertNotReady
                | Rule::CertTemporaryCertificate
                | Rule::CertIssuanceFailing
        )
    };
    let failing: Vec<&Finding> = in_chain
        .iter()
        .copied()
        .filter(|f| harm::clients_fail_now(f) && !supports(f.rule, root.rule) && !renewal_ends(f))
        .collect();
    if unissued || failing.is_empty() || harm::clients_fail_now(root) {
        return vec![(root, in_chain)];
    }
    let explains = |c: &Finding| failing.iter().any(|f| supports(f.rule, c.rule));
    let lead = in_chain
        .iter()
        .copied()
        .filter(|c| matches!(part_of(c), Part::Cause(_)) && explains(c))
        .max_by_key(|c| (part_of(c), std::cmp::Reverse(c.severity)))
        .or_else(|| failing.iter().copied().min_by_key(|f| rank(f)))
        .expect("failing is not empty");
    let (harm, rest): (Vec<&Finding>, Vec<&Finding>) = in_chain.into_iter().partition(|f| {
        std::ptr::eq(*f, lead)
            || failing.iter().any(|g| std::ptr::eq(*f, *g))
            || supports(f.rule, lead.rule)
    });
    vec![(lead, harm), (root, rest)]
}

/// The severity of each Ingress and Certificate a cluster's problems reach — the worst of
/// the chains that hold it, over every problem — by (kind, namespace, name): what every
/// list tells of the object, the same for every reader.
pub type Health = std::collections::HashMap<(crate::model::Subject, Text, Text), Severity>;

/// [`Health`] of a cluster's problems.
pub fn health(problems: &[Problem]) -> Health {
    let mut out = Health::new();
    let mut note = |key: (crate::model::Subject, Text, Text), s: Severity| {
        out.entry(key).and_modify(|w| *w = (*w).min(s)).or_insert(s);
    };
    for p in problems {
        for a in p.affected.iter() {
            let o = &a.object;
            let s = a.urgency.severity;
            note((o.kind, o.namespace.clone(), o.name.clone()), s);
            for c in a.certificates.iter() {
                note(
                    (Kind::Certificate.into(), o.namespace.clone(), c.clone()),
                    s,
                );
            }
        }
    }
    out
}

//! Problems: the findings grouped by root cause along the chain (Ingress → Certificate →
//! CertificateRequest → Order → Challenge, and the issuer the chain names), so the board
//! lists what is broken rather than every symptom of it.
//!
//! Each chain's findings are split into causes (a setting or a dependency that makes
//! issuance fail: the Ingress's annotations, the issuer, the CA's refusal, the cluster) and
//! symptoms (what that failure looks like: a failing challenge, a request that is not
//! ready, an expiring certificate). The chain's root is its highest-ranked cause — or, when
//! it has none, its deepest symptom (a failing challenge says more than a Certificate that
//! is not ready). Chains with the same root (one issuer behind many Ingresses) are one
//! problem whose hosts, objects and namespaces are all of theirs. A finding that is no
//! chain's (a budget, a cluster-wide setting, a tailnet) is a problem of its own.
//!
//! Problems are judged once per cluster revision over every finding, whoever reads them;
//! each chain a problem reaches keeps its own urgency ([`Affected`]). A reader who sees only
//! some namespaces gets each problem through [`Problem::seen_by`]: the problems that reach
//! their chains, narrowed to what they may know.

use foldhash::{HashSet, HashSetExt};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::chain::FindingIndex;
use super::views::ProblemQuery;
use crate::model::chain::Index;
use crate::model::data::{ClusterData, ClusterFacts};
use crate::model::rule::{Blocks, Part, Rule};
use crate::model::text::Text;
use crate::model::{Finding, FindingRef, Kind, Severity, Subject};

/// The part a finding plays: its rule's, except that a Let's Encrypt limit reached
/// (critical) is a cause like the CA's refusal, while a limit only getting near stays alone.
fn part_of(f: &Finding) -> Part {
    match f.rule {
        Rule::AcmeOrdersBudget | Rule::AcmeRateLimitBudget if f.severity == Severity::Critical => {
            Part::Cause(7)
        }
        rule => rule.info().part,
    }
}

/// An object a problem involves.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
pub struct ProblemObject {
    pub cluster: Text,
    /// Empty for cluster-scoped objects.
    pub namespace: Text,
    pub kind: crate::model::Subject,
    pub name: Text,
}

/// One root cause and everything it breaks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Problem {
    /// Stable while the root cause stays (cluster, rule and object of the root finding).
    pub id: String,
    /// The root finding's rule.
    pub cause: Rule,
    /// One line in plain words.
    pub diagnosis: String,
    /// The root finding's explanation with its evidence.
    pub evidence: Text,
    pub hosts: Arc<[Text]>,
    /// The root's object first, then the Ingresses and Certificates it affects.
    pub objects: Arc<[ProblemObject]>,
    pub clusters: Vec<Text>,
    pub namespaces: Arc<[Text]>,
    /// The worst of what it does to the chains it reaches ([`Problem::affected`]).
    pub urgency: Urgency,
    /// Each chain it reaches, with its own urgency.
    pub affected: Arc<[Affected]>,
    /// Since when the root or any symptom has held.
    pub since: Option<DateTime<Utc>>,
    pub action: NextAction,
    /// Whose move it is: the namespace's owner or the platform.
    pub owner: Owner,
    /// Set while the problem is being fixed: nothing is wrong any more but what a fix is
    /// waiting for (a new issuance under way, the host yet to serve the renewed
    /// certificate), in words. None: broken.
    pub confirming: Option<String>,
    /// The root finding itself (held in the cluster's list of findings, not copied).
    pub root: FindingRef,
    /// The other findings it explains, most urgent first.
    pub symptoms: Arc<[FindingRef]>,
}

impl Problem {
    /// Whether the problem concerns `namespace` (one of its objects is there).
    pub fn in_namespace(&self, namespace: &str) -> bool {
        self.namespaces.iter().any(|n| &**n == namespace)
    }

    /// Whether the problem involves the object: one of its objects, a Certificate of a chain
    /// it reaches, or what its root or a symptom is about.
    pub fn concerns(&self, kind: Kind, namespace: &str, name: &str) -> bool {
        let is = |k: Subject, n: &str, m: &str| k == kind && n == namespace && m == name;
        self.objects
            .iter()
            .any(|o| is(o.kind, &o.namespace, &o.name))
            // A Certificate of a chain it reaches, with no finding of its own.
            || self.affected.iter().any(|a| a.holds(kind, namespace, name))
            || std::iter::once(&self.root)
                .chain(self.symptoms.iter())
                .any(|f| is(f.kind, &f.namespace, &f.name))
    }

    /// Whether the root finding is about this object (not merely one of its symptoms): a
    /// problem only touching an Ingress through a neighbour's symptom does not stop that
    /// Ingress's own issuance.
    pub fn rooted_at(&self, kind: Kind, namespace: &str, name: &str) -> bool {
        self.root.kind == kind && &*self.root.namespace == namespace && &*self.root.name == name
    }

    /// Whether issuing the certificate again cannot succeed until the root cause is fixed
    /// (renewing or restarting would only fail again, and spend a failed authorization): a
    /// critical root of these rules.
    /// Not `ingress.edit-in-place-not-effective` in general: with the override on the
    /// Certificate a new request is what applies it (see `offer::issue_again` for the case
    /// where the Certificate lacks it).
    pub fn blocks_issuance(&self) -> bool {
        match self.cause.info().blocks {
            Blocks::Always => true,
            // A warning (edit-in-place missing while no challenge fails, a limit only
            // getting near) is a risk, not a certainty: only a critical root blocks.
            Blocks::WhenCritical => self.root.severity == Severity::Critical,
            Blocks::Never => false,
        }
    }

    /// Whether it must be fixed before the edit-in-place fix can help: it blocks issuance
    /// and is not itself what edit-in-place fixes (cert-manager missing, the issuer, the
    /// CA's refusal).
    pub fn blocks_edit_in_place(&self) -> bool {
        self.blocks_issuance()
            && !matches!(
                self.cause,
                Rule::IngressEditInPlaceMissing
                    | Rule::IngressEditInPlaceInvalid
                    | Rule::IngressSharedHostHttpsRedirect
                    // The fix on the Ingress is the stop-gap for the policy meant to set it.
                    | Rule::PolicyNotReady
                    | Rule::PolicyMissingCoverage
            )
    }

    /// Whether one of its hosts is `host` or under it (`acme.example` matches
    /// `shop.acme.example`), case-insensitively.
    pub fn has_host(&self, host: &str) -> bool {
        let host = host.trim().trim_end_matches('.').to_ascii_lowercase();
        self.hosts.iter().any(|h| {
            let h = h.to_ascii_lowercase();
            h == host || h.ends_with(&format!(".{host}"))
        })
    }
}

/// A stable short id: FNV-1a over the root's identity, as 16 hex digits.
fn problem_id(f: &Finding) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in [
        &*f.cluster,
        f.rule.id(),
        &*f.namespace,
        f.kind.name(),
        &*f.name,
    ] {
        for b in part.bytes().chain([0]) {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{hash:016x}")
}

/// The plain-words headline of a root finding.
fn diagnosis(root: &Finding) -> String {
    format!("{}: {}", root.rule.info().diagnosis, root.title)
}

/// The problem's headline and evidence: the root's, backed by what the probe saw when a
/// symptom observes what the root explains ("observed", not "likely").
fn headline<'f>(root: &Finding, mut symptoms: impl Iterator<Item = &'f Finding>) -> (String, Text) {
    match symptoms.find(|f| supports(f.rule, root.rule)) {
        Some(o) => (
            format!("{} (observed: {})", diagnosis(root), o.title),
            Text::from(format!(
                "{}\nObserved by the probe: {}",
                root.message, o.message
            )),
        ),
        None => (diagnosis(root), root.message.clone()),
    }
}

fn object_of(f: &Finding) -> ProblemObject {
    ProblemObject {
        cluster: f.cluster.clone(),
        namespace: f.namespace.clone(),
        kind: f.kind,
        name: f.name.clone(),
    }
}

/// The most urgent finding first: severity, then the rule's part, then the oldest.
fn rank(f: &Finding) -> (Severity, std::cmp::Reverse<Part>, Option<DateTime<Utc>>) {
    (f.severity, std::cmp::Reverse(part_of(f)), f.since)
}

/// A problem being gathered: the root and what has joined it.
struct Gathering<'a> {
    root: &'a Finding,
    symptoms: Vec<&'a Finding>,
    seen: HashSet<*const Finding>,
    hosts: BTreeSet<Text>,
    heads: BTreeSet<ProblemObject>,
    expires: Option<DateTime<Utc>>,
    unissued: bool,
    issuance: Vec<Issuance>,
    /// The issuer its chains name: (namespace — empty for a ClusterIssuer —, kind, name).
    issuer: Option<(Text, Text, Text)>,
    /// The chains it reaches, by head.
    reached: BTreeMap<ProblemObject, Reach<'a>>,
}

/// One chain a problem reaches, being gathered: its findings, certificates and hosts.
#[derive(Default)]
struct Reach<'a> {
    findings: Vec<&'a Finding>,
    expires: Option<DateTime<Utc>>,
    unissued: bool,
    hosts: BTreeSet<Text>,
    certificates: BTreeSet<Text>,
}

impl<'a> Reach<'a> {
    fn join(&mut self, other: Reach<'a>) {
        self.findings.extend(other.findings);
        self.expires = match (self.expires, other.expires) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.unissued |= other.unissued;
        self.hosts.extend(other.hosts);
        self.certificates.extend(other.certificates);
    }
}

impl<'a> Gathering<'a> {
    fn new(root: &'a Finding) -> Self {
        Gathering {
            root,
            symptoms: Vec::new(),
            seen: HashSet::from_iter([root as *const Finding]),
            hosts: BTreeSet::new(),
            heads: BTreeSet::new(),
            expires: None,
            unissued: false,
            issuance: Vec::new(),
            issuer: None,
            reached: BTreeMap::new(),
        }
    }

    fn add(&mut self, f: &'a Finding) {
        if self.seen.insert(f as *const Finding) {
            self.symptoms.push(f);
        }
    }

    fn expires(&mut self, at: Option<DateTime<Utc>>) {
        self.expires = match (self.expires, at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }

    /// The problem, holding its findings in `list` (where they all are).
    fn finish(mut self, now: DateTime<Utc>, list: &Arc<Vec<Finding>>) -> Problem {
        self.symptoms.sort_by_key(|f| rank(f));
        let root = self.root;
        let first = object_of(root);
        let mut objects = vec![first.clone()];
        objects.extend(self.heads.into_iter().filter(|o| *o != first));
        let all = || std::iter::once(root).chain(self.symptoms.iter().copied());
        let namespaces: BTreeSet<Text> = objects
            .iter()
            .map(|o| o.namespace.clone())
            .chain(all().map(|f| f.namespace.clone()))
            .filter(|n| !n.is_empty())
            .collect();
        let since = all().filter_map(|f| f.since).min();
        let certificates = harm::Certificates {
            expires: self.expires,
            unissued: self.unissued,
        };
        let confirming = confirming(all(), &self.issuance, now);
        if self.reached.is_empty() {
            self.reached.insert(
                first.clone(),
                Reach {
                    findings: vec![root],
                    ..Reach::default()
                },
            );
        }
        // Each chain judged on its own: the root and that chain's findings and certificates.
        let affected: Vec<Affected> = std::mem::take(&mut self.reached)
            .into_iter()
            .map(|(object, r)| {
                let of = || std::iter::once(root).chain(r.findings.iter().copied());
                let since = of().filter_map(|f| f.since).min();
                let certificates = harm::Certificates {
                    expires: r.expires,
                    unissued: r.unissued,
                };
                Affected {
                    object,
                    certificates: r.certificates.into_iter().collect(),
                    hosts: r.hosts.into_iter().collect(),
                    urgency: Urgency::of(of(), certificates, since, now, confirming.is_some()),
                    findings: r.findings.iter().map(|f| FindingRef::of(list, f)).collect(),
                }
            })
            .collect();
        let urgency = Urgency::worst(affected.iter().map(|a| &a.urgency))
            .unwrap_or_else(|| Urgency::of(all(), certificates, since, now, confirming.is_some()));
        let (diagnosis, evidence) = headline(root, self.symptoms.iter().copied());
        Problem {
            id: problem_id(root),
            cause: root.rule,
            diagnosis,
            evidence,
            hosts: self.hosts.into_iter().collect(),
            clusters: vec![root.cluster.clone()],
            namespaces: namespaces.into_iter().collect(),
            urgency,
            affected: affected.into(),
            since,
            action: {
                let mut action = next_action(root);
                // "Open the issuer" opens the issuer's page, also when the finding is
                // about an Ingress or Certificate that names a missing one.
                if let (Rule::IssuerMissing, Some((ns, kind, name))) = (root.rule, &self.issuer) {
                    let cluster_wide = crate::model::Kind::from_name(kind)
                        == Some(crate::model::Kind::ClusterIssuer);
                    let ns = (!cluster_wide).then_some(&**ns);
                    action.href = Some(crate::model::links::issuer_path(&root.cluster, ns, name));
                }
                // A root without a page of its own (a Challenge, a request): the button opens
                // the first of the problem's objects that has one, and names that object.
                if action.href.is_none() {
                    if let Some(o) = objects
                        .iter()
                        .find(|o| crate::model::links::detail_pages(o.kind.name()).is_some())
                    {
                        action.href = crate::model::links::object_path(
                            o.kind.name(),
                            &o.cluster,
                            &o.namespace,
                            &o.name,
                        );
                        if root.rule.info().action.is_none() {
                            action.label = format!("Open {} {}", o.kind, o.name);
                        }
                    }
                }
                action
            },
            confirming,
            owner: Owner::of(root, self.issuer.as_ref().map(|(_, kind, _)| &**kind)),
            objects: objects.into(),
            root: FindingRef::of(list, root),
            symptoms: self
                .symptoms
                .into_iter()
                .map(|f| FindingRef::of(list, f))
                .collect(),
        }
    }
}

/// The problems of one cluster from all its findings, most urgent first — the same for
/// every reader ([`Problem::seen_by`] tells each reader theirs). The problems hold their
/// findings in `all`.
pub fn cluster_problems(
    facts: &ClusterFacts,
    data: &ClusterData,
    all: &Arc<Vec<Finding>>,
    now: DateTime<Utc>,
) -> Vec<Problem> {
    problems(facts, data, all, now, Chains::WithFindings)
}

/// Which chains [`cluster_problems`] makes: those of the namespaces with findings a chain
/// can take, or (for the tests, to check that it is the same) all of them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Chains {
    WithFindings,
    #[cfg(test)]
    All,
}

fn problems(
    facts: &ClusterFacts,
    data: &ClusterData,
    all: &Arc<Vec<Finding>>,
    now: DateTime<Utc>,
    which: Chains,
) -> Vec<Problem> {
    let findings: Vec<&Finding> = all.iter().collect();
    let findings = &findings[..];
    // A chain holds objects of one namespace and its issuer: only the namespaces with a
    // finding a chain can take have chains with a root (all of them when a finding about a
    // cluster-scoped object, an issuer, may be in any chain).
    let in_chains: BTreeSet<&str> = findings
        .iter()
        .filter(|f| part_of(f) != Part::Alone)
        .map(|f| &*f.namespace)
        .collect();
    let part;
    let with_chains = match in_chains.contains("") || which != Chains::WithFindings {
        true => data,
        false => {
            part = data.namespaces_part(&in_chains.into_iter().collect::<Vec<_>>());
            &part
        }
    };
    let idx = Index::new(facts, with_chains);
    let by_object = FindingIndex::from_refs(findings);
    let mut gathered: BTreeMap<String, Gathering<'_>> = BTreeMap::new();
    let mut placed: HashSet<*const Finding> = HashSet::new();
    let cluster = Text::from(facts.name.as_str());
    for chain in chains(&cluster, &idx, with_chains) {
        let in_chain: Vec<&Finding> = by_object
            .of(&chain.objects)
            .filter(|f| part_of(f) != Part::Alone)
            .collect();
        let Some(root) = in_chain.iter().copied().max_by(|a, b| {
            (part_of(a), std::cmp::Reverse(a.severity))
                .cmp(&(part_of(b), std::cmp::Reverse(b.severity)))
                .then_with(|| b.rule.id().cmp(a.rule.id()))
        }) else {
            continue;
        };
        let certificates: BTreeSet<Text> = chain
            .objects
            .iter()
            .filter(|(_, kind, _)| kind == "Certificate")
            .map(|(_, _, name)| Text::from(name.as_str()))
            .collect();
        for (root, in_chain) in harm_first(root, in_chain, chain.unissued) {
            let g = gathered
                .entry(gathering_key(root, &chain))
                .or_insert_with(|| Gathering::new(root));
            placed.insert(root as *const Finding);
            for &f in &in_chain {
                placed.insert(f as *const Finding);
                g.add(f);
            }
            let reach = g.reached.entry(chain.head.clone()).or_default();
            reach.join(Reach {
                findings: in_chain,
                expires: chain.expires,
                unissued: chain.unissued,
                hosts: chain.hosts.iter().cloned().collect(),
                certificates: certificates.clone(),
            });
            g.hosts.extend(chain.hosts.iter().cloned());
            g.heads.insert(chain.head.clone());
            g.expires(chain.expires);
            g.unissued |= chain.unissued;
            g.issuance.extend(chain.issuance.iter().copied());
            if g.issuer.is_none() {
                g.issuer = chain.issuer.clone();
            }
        }
    }
    // What no chain took: a problem each (merged when the same root comes twice); the
    // load balancer's findings last, so that the cluster-wide finding that explains them is
    // their problem's root.
    // A Gateway host's observation last of all, into its listener's problem.
    let (observed, unplaced): (Vec<&Finding>, Vec<&Finding>) = findings
        .iter()
        .copied()
        .filter(|f| !placed.contains(&(*f as *const Finding)))
        .partition(|f| gateway_cause(f, findings).is_some());
    let (network, rest): (Vec<&Finding>, Vec<&Finding>) = unplaced
        .into_iter()
        .partition(|f| network_key(f, findings).is_some());
    for f in rest.into_iter().chain(network).chain(observed) {
        let key = match gateway_cause(f, findings) {
            Some(cause) => problem_id(cause),
            None => network_key(f, findings).unwrap_or_else(|| problem_id(f)),
        };
        let g = gathered.entry(key).or_insert_with(|| Gathering::new(f));
        g.add(f);
        if !std::ptr::eq(g.root, f) {
            g.heads.insert(object_of(f));
        }
        let hosts = hosts_of(data, f).unwrap_or_default();
        g.reached.entry(object_of(f)).or_default().join(Reach {
            findings: vec![f],
            hosts: hosts.iter().cloned().collect(),
            ..Reach::default()
        });
        g.hosts.extend(hosts);
    }
    fold_shared_hosts(&mut gathered);
    fold_waiting_listeners(&mut gathered);
    let mut out: Vec<Problem> = gathered.into_values().map(|g| g.finish(now, all)).collect();
    sort(&mut out);
    out
}

/// The hosts of the object a finding is about, for findings that no chain took.
fn hosts_of(data: &ClusterData, f: &Finding) -> Option<Vec<Text>> {
    if let Some(host) = &f.host {
        return Some(vec![host.clone()]);
    }
    let key = crate::model::data::key(&f.namespace, &f.name);
    match f.kind.kind()? {
        crate::model::Kind::Ingress => data.ingresses.get(&key).map(|i| i.all_hosts()),
        crate::model::Kind::Certificate => {
            data.certificates.get(&key).map(|c| c.dns_names.to_vec())
        }
        crate::model::Kind::Challenge => {
            data.challenges.get(&key).map(|c| vec![c.dns_name.clone()])
        }
        _ => None,
    }
}

mod chains;
mod confirming;
mod harm;
mod joins;
mod list;
mod parts;
mod seen;

use chains::{chains, gathering_key};
use confirming::{awaited, confirming, Issuance};
use joins::{fold_shared_hosts, fold_waiting_listeners, gateway_cause, network_key, supports};

pub use harm::HORIZON;
pub use list::{join_fleet, selected, sort, Problems};
use parts::{harm_first, next_action};
pub use parts::{health, Affected, Health, NextAction, Owner, Urgency};

#[cfg(test)]
mod tests;

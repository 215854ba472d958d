//! The problems as a caller gets them: the fleet's own findings joined, the filters, the
//! order (most urgent first) and the page.

use std::borrow::Cow;
use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::*;

/// The cluster's problems with the fleet's findings (budgets, tailnets) joined: one about
/// an object that a problem's root or a symptom is about joins that problem — as its root
/// when it is a limit reached (critical) and the root is only a symptom (the request fails
/// *because* the CA refuses it), else as a symptom; any other is a problem of its own.
/// Only the problems that change are copied.
pub fn join_fleet<'a>(
    problems: impl IntoIterator<Item = &'a Problem>,
    fleet: &[Finding],
    now: DateTime<Utc>,
) -> Vec<Cow<'a, Problem>> {
    let mut out: Vec<Cow<'a, Problem>> = problems.into_iter().map(Cow::Borrowed).collect();
    if fleet.is_empty() {
        return out;
    }
    // The problems that fleet findings join or make hold them here.
    let fleet_list = Arc::new(fleet.to_vec());
    let fleet = &fleet_list[..];
    // Which problem each fleet finding joins: its objects are looked up while the
    // problems' findings are scanned once, borrowed (no copy of any problem's list).
    type About<'f> = (&'f str, &'f str, &'f str, &'f str);
    let about =
        |f: &'a Finding| -> About<'a> { (&f.cluster, &f.namespace, f.kind.name(), &f.name) };
    let mut wanted: std::collections::HashMap<About<'_>, Vec<usize>> =
        std::collections::HashMap::new();
    for (j, f) in fleet.iter().enumerate() {
        wanted
            .entry((&f.cluster, &f.namespace, f.kind.name(), &f.name))
            .or_default()
            .push(j);
    }
    let mut joins: Vec<Option<usize>> = vec![None; fleet.len()];
    for (i, p) in out.iter().enumerate() {
        let Cow::Borrowed(p) = p else { continue };
        for f in std::iter::once(&p.root).chain(p.symptoms.iter()) {
            if let Some(js) = wanted.get(&about(f)) {
                for &j in js {
                    joins[j].get_or_insert(i);
                }
            }
        }
    }
    for (f, join) in fleet.iter().zip(joins) {
        match join {
            Some(i) => {
                let p = out[i].to_mut();
                // Shared with the cache: the lists are copied only for the one that changes.
                let mut symptoms = p.symptoms.to_vec();
                let mut objects = p.objects.to_vec();
                let reroot = f.severity == Severity::Critical
                    && matches!(part_of(&p.root), Part::Symptom(_));
                let mut displaced = None;
                if reroot {
                    let old = std::mem::replace(&mut p.root, FindingRef::of(&fleet_list, f));
                    displaced = Some(old.clone());
                    symptoms.push(old);
                    p.id = problem_id(f);
                    p.cause = f.rule;
                    p.diagnosis = diagnosis(f);
                    p.evidence = f.message.clone();
                    p.action = next_action(f);
                    let first = object_of(f);
                    objects.retain(|o| *o != first);
                    objects.insert(0, first);
                } else {
                    symptoms.push(FindingRef::of(&fleet_list, f));
                }
                symptoms.sort_by_key(|f| rank(f));
                p.symptoms = symptoms.into();
                p.objects = objects.into();
                p.since = match (p.since, f.since) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                // A limit or a tailnet joining is something a new certificate does not end.
                if !awaited(f) {
                    p.confirming = None;
                }
                // Each chain judged again with it — those that hold its object, or all of
                // them when it becomes the root or is about something they share (an issuer,
                // an account) — so that every reader, told only their chains, reads the same.
                let joined = FindingRef::of(&fleet_list, f);
                let held = p.affected.iter().any(|a| {
                    f.kind
                        .kind()
                        .is_some_and(|k| a.holds(k, &f.namespace, &f.name))
                });
                let confirming = p.confirming.is_some();
                let root = p.root.clone();
                let mut affected = p.affected.to_vec();
                for a in affected.iter_mut() {
                    if reroot
                        || !held
                        || f.kind
                            .kind()
                            .is_some_and(|k| a.holds(k, &f.namespace, &f.name))
                    {
                        let mut findings = a.findings.to_vec();
                        // The old root stays part of each chain's judgement, as a symptom.
                        findings.extend(displaced.clone());
                        findings.push(joined.clone());
                        a.findings = findings.into();
                    }
                    let all = std::iter::once(&root)
                        .chain(a.findings.iter())
                        .map(|f| &**f);
                    let since = all.clone().filter_map(|f| f.since).min();
                    a.urgency = Urgency::of(all, a.urgency.certificates(), since, now, confirming);
                }
                let all = std::iter::once(&p.root)
                    .chain(p.symptoms.iter())
                    .map(|f| &**f);
                let certificates = p.urgency.certificates();
                p.urgency = Urgency::worst(affected.iter().map(|a| &a.urgency))
                    .unwrap_or_else(|| Urgency::of(all, certificates, p.since, now, confirming));
                p.affected = affected.into();
            }
            None => out.push(Cow::Owned(Gathering::new(f).finish(now, &fleet_list))),
        }
    }
    out
}

/// Whether a problem is one `q` asks for (its paging aside).
pub fn selected(p: &Problem, q: &ProblemQuery) -> bool {
    q.cluster
        .as_deref()
        .is_none_or(|c| p.clusters.iter().any(|x| &**x == c))
        && q.namespace.as_deref().is_none_or(|n| p.in_namespace(n))
        && q.host.as_deref().is_none_or(|h| p.has_host(h))
        && q.cause.as_deref().is_none_or(|c| p.cause.id() == c)
        && q.severity.is_none_or(|s| p.urgency.severity == s)
}

/// The problems a caller asked for, one page of them, with how many of each severity there
/// are per cluster (of every problem the caller sees there, before the filters).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Problems {
    #[serde(flatten)]
    pub page: crate::model::Page<Problem>,
    /// Cluster → (critical, warning, info).
    pub by_cluster: BTreeMap<String, [usize; 3]>,
    /// Of every problem the caller sees, how many are being fixed (confirming).
    pub confirming: usize,
}

impl Problems {
    /// Filters, orders and pages `all` (references into the caches: only the page is copied).
    pub fn of<'a>(all: impl IntoIterator<Item = &'a Problem>, q: &ProblemQuery) -> Problems {
        let mut by_cluster: BTreeMap<String, [usize; 3]> = BTreeMap::new();
        let mut matching: Vec<&Problem> = Vec::new();
        let mut confirming = 0;
        for p in all {
            confirming += usize::from(p.confirming.is_some());
            for c in &p.clusters {
                by_cluster.entry(c.to_string()).or_default()[p.urgency.severity as usize] += 1;
            }
            if selected(p, q) {
                matching.push(p);
            }
        }
        matching.sort_by(|a, b| order(a, b));
        let total = matching.len();
        let items = matching
            .into_iter()
            .skip(q.page.saturating_sub(1) * q.per_page)
            .take(q.per_page)
            .cloned()
            .collect();
        Problems {
            page: crate::model::Page {
                items,
                total,
                page: q.page,
                per_page: q.per_page,
            },
            by_cluster,
            confirming,
        }
    }
}

/// Most urgent first: severity (harm to clients), then clients failing now (the longest
/// first), then the soonest time to harm, then blast radius (hosts), then the longest
/// failing, then id.
pub fn sort(problems: &mut [Problem]) {
    problems.sort_by(order);
}

/// Earlier first; a time before none.
fn earliest(a: Option<DateTime<Utc>>, b: Option<DateTime<Utc>>) -> std::cmp::Ordering {
    match (a, b) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    }
}

/// The order of [`sort`].
fn order(a: &Problem, b: &Problem) -> std::cmp::Ordering {
    let (x, y) = (&a.urgency, &b.urgency);
    x.severity
        .cmp(&y.severity)
        .then_with(|| earliest(x.clients_failing_since, y.clients_failing_since))
        .then_with(|| earliest(x.clients_fail_at, y.clients_fail_at))
        // A tie breaks by blast radius: the more hosts, the higher.
        .then_with(|| b.hosts.len().cmp(&a.hosts.len()))
        .then_with(|| earliest(a.since, b.since))
        .then_with(|| a.id.cmp(&b.id))
}

//! A Certificate's history as issuance attempts: each CertificateRequest with its Orders and
//! Challenges and their state changes, one row per change, newest attempt first.
//!
//! The history keeps every object by uid, but children name their parent only by name
//! (`orders.request`, `challenges.order_name`), and names come back: cert-manager names a
//! request after the Certificate's revision (a request deleted to restart an issuance is
//! recreated under the same name) and an Order after a hash of its request. So a child
//! belongs to the latest parent of that name created at or before it — never to every
//! parent of the name, which repeated each event once per namesake.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::history::TimelineEntry;

/// One issuance attempt: a CertificateRequest and what happened under it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Attempt {
    /// 1 for the first attempt the history knows; 0 for what happened before any.
    pub number: usize,
    /// The CertificateRequest (None for the changes before the first attempt).
    pub request: Option<String>,
    /// `pending`, `issued`, `failed` or `denied`.
    pub outcome: Option<String>,
    pub started: Option<String>,
    /// Oldest first; consecutive repeats of one state of one object are one row.
    pub events: Vec<TimelineEntry>,
}

/// A CertificateRequest of the Certificate, as the history has it.
#[derive(Debug, Clone)]
pub struct RequestRow {
    pub name: String,
    pub outcome: String,
    pub message: Option<String>,
    pub created: String,
    pub finished: Option<String>,
}

/// An Order or a Challenge: its history row id, name, parent's name and creation time.
#[derive(Debug, Clone)]
pub struct ChildRow {
    pub id: i64,
    pub name: String,
    /// Shown after the name (a Challenge's DNS name).
    pub label: Option<String>,
    pub parent: String,
    pub created: String,
}

/// A state change of an Order or Challenge (by its row id), or of the Certificate's
/// readiness (owner None).
#[derive(Debug, Clone)]
pub struct Change {
    pub owner: i64,
    pub at: String,
    pub state: String,
    pub reason: Option<String>,
}

/// A readiness change of the Certificate.
#[derive(Debug, Clone)]
pub struct ReadinessRow {
    pub at: String,
    pub status: String,
    pub reason: Option<String>,
}

fn time(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// The index of the latest of `parents` named `name` created at or before `created` (else
/// the first of that name).
fn parent_of<'a>(
    parents: impl Iterator<Item = (usize, &'a str, &'a str)>,
    name: &str,
    created: &str,
) -> Option<usize> {
    let at = time(created);
    let mut first = None;
    let mut best: Option<(usize, Option<DateTime<Utc>>)> = None;
    for (i, _, c) in parents.filter(|(_, n, _)| *n == name) {
        first.get_or_insert(i);
        let c = time(c);
        if at.is_some() && c.is_some() && c > at {
            continue;
        }
        if best.is_none_or(|(_, b)| c >= b) {
            best = Some((i, c));
        }
    }
    best.map(|(i, _)| i).or(first)
}

/// Adds `owner`'s changes as rows, skipping a change that repeats the one before it.
fn push_changes(
    events: &mut Vec<TimelineEntry>,
    kind: &'static str,
    name: &str,
    changes: &[Change],
    owner: i64,
) {
    let mut last: Option<(&str, Option<&str>)> = None;
    for c in changes.iter().filter(|c| c.owner == owner) {
        let state = if c.state.is_empty() {
            "created"
        } else {
            c.state.as_str()
        };
        let now = (state, c.reason.as_deref());
        if last == Some(now) {
            continue;
        }
        last = Some(now);
        events.push(TimelineEntry {
            at: c.at.clone(),
            kind,
            name: name.to_string(),
            state: state.to_string(),
            detail: c.reason.clone(),
        });
    }
}

/// The attempts, newest first, from the history's rows (each list in any order).
pub fn attempts(
    mut requests: Vec<RequestRow>,
    orders: &[ChildRow],
    challenges: &[ChildRow],
    mut changes: Vec<Change>,
    mut readiness: Vec<ReadinessRow>,
) -> Vec<Attempt> {
    let by_time = |a: &str, b: &str| time(a).cmp(&time(b)).then_with(|| a.cmp(b));
    requests.sort_by(|a, b| by_time(&a.created, &b.created));
    changes.sort_by(|a, b| by_time(&a.at, &b.at));
    readiness.sort_by(|a, b| by_time(&a.at, &b.at));
    let mut out: Vec<Attempt> = requests
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut events = vec![TimelineEntry {
                at: r.created.clone(),
                kind: "request",
                name: r.name.clone(),
                state: "created".into(),
                detail: None,
            }];
            if let Some(done) = &r.finished {
                events.push(TimelineEntry {
                    at: done.clone(),
                    kind: "request",
                    name: r.name.clone(),
                    state: r.outcome.clone(),
                    detail: r.message.clone(),
                });
            }
            Attempt {
                number: i + 1,
                request: Some(r.name.clone()),
                outcome: Some(r.outcome.clone()),
                started: Some(r.created.clone()),
                events,
            }
        })
        .collect();
    // Each Order to its request, each Challenge to its Order (and so to a request).
    let order_attempt: Vec<Option<usize>> = orders
        .iter()
        .map(|o| {
            parent_of(
                requests
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (i, r.name.as_str(), r.created.as_str())),
                &o.parent,
                &o.created,
            )
        })
        .collect();
    for (o, attempt) in orders.iter().zip(&order_attempt) {
        if let Some(i) = attempt {
            push_changes(&mut out[*i].events, "order", &o.name, &changes, o.id);
        }
    }
    for ch in challenges {
        let order = parent_of(
            orders
                .iter()
                .enumerate()
                .map(|(i, o)| (i, o.name.as_str(), o.created.as_str())),
            &ch.parent,
            &ch.created,
        );
        if let Some(i) = order.and_then(|o| order_attempt[o]) {
            let name = match &ch.label {
                Some(l) => format!("{} ({l})", ch.name),
                None => ch.name.clone(),
            };
            push_changes(&mut out[i].events, "challenge", &name, &changes, ch.id);
        }
    }
    // A readiness change belongs to the attempt under way when it happened.
    let mut before = Vec::new();
    let mut last: Option<(&str, Option<&str>)> = None;
    for r in &readiness {
        let now = (r.status.as_str(), r.reason.as_deref());
        if last == Some(now) {
            continue;
        }
        last = Some(now);
        let entry = TimelineEntry {
            at: r.at.clone(),
            kind: "readiness",
            name: String::new(),
            state: format!("Ready {}", r.status),
            detail: r.reason.clone(),
        };
        let at = time(&r.at);
        match requests
            .iter()
            .rposition(|q| time(&q.created).is_some_and(|c| Some(c) <= at))
        {
            Some(i) => out[i].events.push(entry),
            None => before.push(entry),
        }
    }
    for a in &mut out {
        a.events.sort_by(|x, y| by_time(&x.at, &y.at));
    }
    if !before.is_empty() {
        out.insert(
            0,
            Attempt {
                number: 0,
                request: None,
                outcome: None,
                started: None,
                events: before,
            },
        );
    }
    out.reverse();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(name: &str, created: &str, outcome: &str) -> RequestRow {
        RequestRow {
            name: name.into(),
            outcome: outcome.into(),
            message: None,
            created: created.into(),
            finished: None,
        }
    }

    fn child(id: i64, name: &str, parent: &str, created: &str) -> ChildRow {
        ChildRow {
            id,
            name: name.into(),
            label: None,
            parent: parent.into(),
            created: created.into(),
        }
    }

    fn change(owner: i64, at: &str, state: &str, reason: Option<&str>) -> Change {
        Change {
            owner,
            at: at.into(),
            state: state.into(),
            reason: reason.map(Into::into),
        }
    }

    /// A dozen failed attempts, each request recreated under the same name (a restart) with
    /// the same Order name: every event shows once, in its own attempt.
    #[test]
    fn a_dozen_namesake_attempts_show_each_event_once_in_its_own_attempt() {
        let mut requests = Vec::new();
        let mut orders = Vec::new();
        let mut challenges = Vec::new();
        let mut changes = Vec::new();
        for i in 0..12i64 {
            let t = |m: i64| format!("2026-01-01T{:02}:{:02}:00Z", i, m);
            requests.push(request("shop-tls-2", &t(0), "failed"));
            orders.push(child(100 + i, "shop-tls-2-123", "shop-tls-2", &t(1)));
            challenges.push(child(200 + i, "shop-tls-2-123-1", "shop-tls-2-123", &t(2)));
            changes.push(change(100 + i, &t(1), "pending", None));
            changes.push(change(200 + i, &t(2), "", None));
            // The self-check fails, flips presented/processing (same state, same reason
            // twice in the history), then the CA says invalid.
            changes.push(change(200 + i, &t(3), "pending", Some("404")));
            changes.push(change(200 + i, &t(4), "pending", Some("404")));
            changes.push(change(200 + i, &t(5), "invalid", Some("404")));
            changes.push(change(100 + i, &t(5), "invalid", None));
        }
        let readiness = vec![ReadinessRow {
            at: "2026-01-01T00:00:30Z".into(),
            status: "False".into(),
            reason: Some("Failed".into()),
        }];
        let a = attempts(requests, &orders, &challenges, changes, readiness);
        assert_eq!(a.len(), 12);
        assert_eq!(a[0].number, 12, "newest first");
        for attempt in &a {
            let kinds: Vec<(&str, &str)> = attempt
                .events
                .iter()
                .map(|e| (e.kind, e.state.as_str()))
                .collect();
            let expected_challenge = [
                ("challenge", "created"),
                ("challenge", "pending"),
                ("challenge", "invalid"),
            ];
            for e in expected_challenge {
                assert_eq!(kinds.iter().filter(|k| **k == e).count(), 1, "{kinds:?}");
            }
            assert_eq!(
                kinds.iter().filter(|k| k.0 == "order").count(),
                2,
                "{kinds:?}"
            );
        }
        let total: usize = a.iter().map(|x| x.events.len()).sum();
        // Per attempt: request created, order pending/invalid, challenge created/pending/
        // invalid = 6; plus one readiness change in the first attempt.
        assert_eq!(total, 12 * 6 + 1);
        assert_eq!(
            a[11]
                .events
                .iter()
                .filter(|e| e.kind == "readiness")
                .count(),
            1
        );
    }

    #[test]
    fn readiness_before_any_attempt_is_its_own_group() {
        let a = attempts(
            vec![request("c-1", "2026-01-01T10:00:00Z", "issued")],
            &[],
            &[],
            Vec::new(),
            vec![ReadinessRow {
                at: "2026-01-01T09:00:00.5Z".into(),
                status: "False".into(),
                reason: Some("DoesNotExist".into()),
            }],
        );
        assert_eq!(a.len(), 2);
        assert_eq!(a[1].number, 0);
        assert_eq!(a[1].events[0].kind, "readiness");
    }
}

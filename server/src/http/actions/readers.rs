//! An action's record as a reader is shown it (what of it they may read is the actions'
//! [`crate::actions::Actions::readable`]), an applied action followed through (request →
//! order → challenge → issued → served) as the reader sees the cluster now — until it
//! settles, when its steps are kept as they settled.

use lookout_app::actions::{ActionKind, ActionRecord, Outcome};
use lookout_app::model::{Kind, ObjectKey};

use crate::auth::Caller;
use crate::http::{AppError, AppState};

/// A preview or result the caller may see ([`crate::actions::Actions::readable`]); an
/// applied action with its follow-through as the caller sees the cluster now.
pub(super) async fn visible_record(
    state: &AppState,
    caller: &Caller,
    id: &str,
) -> Result<ActionRecord, AppError> {
    state
        .actions
        .readable(caller, id)
        .await
        .map(|r| with_progress(state, caller, r))
        .ok_or_else(|| AppError::NotFound(format!("There is no action {id} (previews and results are kept for the last 500 actions; the audit log keeps every one).")))
}

/// Adds what an applied fix, renew or restart set going: the issuance of each Certificate
/// it touched, step by step, read within the caller's scope (a Certificate they do not see
/// adds nothing).
fn with_progress(state: &AppState, caller: &Caller, mut r: ActionRecord) -> ActionRecord {
    use lookout_app::model::read::progress::{follow_through, Settled};
    // A bulk run follows each item as the single action's page would, and is settled once
    // every item that ran is: ready when all are, failed when one failed.
    if r.action.is_bulk() && !r.dry_run && r.outcome != Outcome::Running {
        r.items = std::mem::take(&mut r.items)
            .into_iter()
            .map(|i| with_progress(state, caller, i))
            .collect();
        let ran: Vec<Option<Settled>> = r
            .items
            .iter()
            .filter(|i| i.outcome.succeeded() && !i.progress.is_empty())
            .map(|i| i.settled)
            .collect();
        r.settled = if ran.is_empty() || ran.contains(&None) {
            None
        } else if ran.contains(&Some(Settled::Failed)) {
            Some(Settled::Failed)
        } else {
            Some(Settled::Ready)
        };
        return r;
    }
    let applies = matches!(
        r.action,
        ActionKind::EditInPlace | ActionKind::Renew | ActionKind::Restart
    );
    if r.dry_run || !applies || !r.outcome.succeeded() {
        return r;
    }
    // The Certificates it touched, and whether it asked for a new certificate.
    let mut certificates: Vec<String> = Vec::new();
    if r.kind == Kind::Certificate {
        certificates.push(r.name.clone());
    }
    for s in r.steps.iter().filter(|s| s.kind == Kind::Certificate) {
        if !certificates.contains(&s.name) {
            certificates.push(s.name.clone());
        }
    }
    use lookout_app::model::read::progress::Expects;
    let expects = if r.steps.iter().any(|s| s.kind == Kind::Order) {
        Expects::InFlight
    } else if matches!(r.action, ActionKind::Renew | ActionKind::Restart)
        || r.steps.iter().any(|s| {
            s.kind == Kind::CertificateRequest
                || s.change.contains("renew")
                || s.change.contains("restart")
        })
    {
        Expects::NewRequest
    } else {
        Expects::Nothing
    };
    let probed = state.probes.last.lock().expect("probe status lock").rounds > 0;
    let seen: Vec<_> = certificates
        .into_iter()
        .filter_map(|name| {
            let key = ObjectKey {
                cluster: r.cluster.as_str().into(),
                namespace: r.namespace.as_str().into(),
                name,
            };
            state
                .fleet()
                .certificate(&caller.view, &key)
                .map(|d| (key, d))
        })
        .collect();
    // Settled once: shown as it settled to whoever sees its Certificates.
    if let Some(f) = r.final_progress.take() {
        if !seen.is_empty() {
            r.progress = f.steps;
            r.settled = Some(f.settled);
            r.settled_at = Some(f.at);
        }
        return r;
    }
    let mut settled: Vec<Option<Settled>> = Vec::new();
    let several = seen.len() > 1;
    for (key, d) in seen {
        let (mut steps, s) = follow_through(&d.chain, &d.clients_get, probed, r.at, expects);
        if several {
            for step in &mut steps {
                step.detail = format!("{}: {}", key.name, step.detail);
            }
        }
        r.progress.extend(steps);
        settled.push(s);
    }
    r.settled = if settled.contains(&Some(Settled::Failed)) {
        Some(Settled::Failed)
    } else if !settled.is_empty() && settled.iter().all(|s| *s == Some(Settled::Ready)) {
        Some(Settled::Ready)
    } else {
        None
    };
    if let Some(end) = r.settled {
        let at = (state.registry.now)();
        state.actions.keep_settled(
            &r.id,
            &lookout_app::actions::FinalProgress {
                at,
                steps: r.progress.clone(),
                settled: end,
            },
        );
        r.settled_at = Some(at);
    }
    r
}

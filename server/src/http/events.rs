//! `/api/v1/events`: one Server-Sent Events stream per tab. Every message says the fleet's
//! change counter and the sync state of each cluster the caller can see; the live script
//! refetches the page when the counter moved. Changes are coalesced: at most one message
//! every 250 ms, however fast the clusters change.

use std::convert::Infallible;
use std::time::Duration;

use crate::auth::Caller;
use crate::clusters::read::Seen;
use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use serde::Serialize;

use super::AppState;

/// The shortest time between two messages of one stream (at most 4 flushes a second).
pub(super) const FLUSH_INTERVAL: Duration = Duration::from_millis(250);
/// The open streams, by identity, and how many there may be.
#[derive(Debug)]
pub struct Streams {
    open: std::sync::Mutex<std::collections::HashMap<String, usize>>,
    per_identity: usize,
    total: usize,
    /// The last message for callers who see everything, at its revision: made once, sent by
    /// every such stream (a thousand tabs do not each walk the fleet).
    everything: std::sync::Mutex<Option<(u64, std::sync::Arc<String>)>>,
}

/// One open stream: counted until it is dropped.
struct Slot {
    streams: std::sync::Arc<Streams>,
    who: String,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.streams.open.lock().expect("streams lock");
        if let Some(n) = open.get_mut(&self.who) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.who);
            }
        }
    }
}

impl Streams {
    /// At most `per_identity` streams for one identity and `total` for everyone
    /// (`http.streams_per_identity`, `http.streams_total`).
    pub fn new(per_identity: usize, total: usize) -> Streams {
        Streams {
            open: Default::default(),
            per_identity,
            total,
            everything: Default::default(),
        }
    }

    /// A slot for `who`, or why not.
    fn open(self: &std::sync::Arc<Self>, who: &str) -> Result<Slot, super::AppError> {
        let mut open = self.open.lock().expect("streams lock");
        let total: usize = open.values().sum();
        if total >= self.total {
            return Err(super::AppError::Rejected {
                status: axum::http::StatusCode::SERVICE_UNAVAILABLE,
                message: format!(
                    "{} live-update streams are open; try again later",
                    self.total
                ),
            });
        }
        let mine = open.entry(who.to_string()).or_default();
        if *mine >= self.per_identity {
            return Err(super::AppError::Rejected {
                status: axum::http::StatusCode::TOO_MANY_REQUESTS,
                message: format!(
                    "{who} already has {} live-update streams open; close some tabs",
                    self.per_identity
                ),
            });
        }
        *mine += 1;
        Ok(Slot {
            streams: self.clone(),
            who: who.to_string(),
        })
    }
}

#[derive(Serialize)]
struct ClusterChange {
    name: String,
    state: &'static str,
    /// Bumped on every change of this cluster's data or state.
    generation: u64,
}

#[derive(Serialize)]
struct Change {
    /// What the caller sees, as a number that moves when it changes; pages carry the one
    /// they were rendered at.
    rev: u64,
    clusters: Vec<ClusterChange>,
}

/// What the caller sees of the fleet, as one number that moves when any of it changes
/// ([`crate::clusters::read::Seen`]): the fleet's change counter for who sees everything;
/// otherwise the visible parts of the visible clusters, and the caller's own actions.
pub(super) fn revision(state: &AppState, caller: &Caller) -> u64 {
    use std::hash::{Hash, Hasher};
    match state.registry.seen(&caller.view) {
        Seen::Fleet(rev) => rev,
        Seen::Part(seen) => {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            seen.hash(&mut h);
            // The caller's own actions move too (a bulk run's page shows its progress).
            for (id, done, outcome) in state.actions.progress_of(caller.actor()) {
                (id, done, outcome).hash(&mut h);
            }
            h.finish()
        }
    }
}

fn change(state: &AppState, caller: &Caller) -> Change {
    Change {
        rev: revision(state, caller),
        clusters: state
            .registry
            .clusters_seen(&caller.view)
            .into_iter()
            .map(|c| ClusterChange {
                name: c.name,
                state: c.state,
                generation: c.generation,
            })
            .collect(),
    }
}

/// The caller's message now: its revision and its JSON (shared among everyone who sees
/// everything while the fleet's revision does not move).
fn message(state: &AppState, caller: &Caller) -> (u64, std::sync::Arc<String>) {
    let json =
        |c: &Change| std::sync::Arc::new(serde_json::to_string(c).expect("a change serializes"));
    let Seen::Fleet(rev) = state.registry.seen(&caller.view) else {
        let c = change(state, caller);
        return (c.rev, json(&c));
    };
    let mut kept = state.streams.everything.lock().expect("streams lock");
    if let Some((at, text)) = kept.as_ref() {
        if *at == rev {
            return (rev, text.clone());
        }
    }
    let c = change(state, caller);
    let text = json(&c);
    *kept = Some((c.rev, text.clone()));
    (c.rev, text)
}

fn event(json: &str) -> Event {
    Event::default().event("change").data(json)
}

/// How often an open stream asks again who its caller is: a stream whose caller signed out,
/// whose groups expired or whose rights were taken ends (or narrows) within this, and sends
/// nothing meanwhile that a check more than a second old would not allow (pages ask at every
/// request).
pub(super) const RECHECK_INTERVAL: Duration = Duration::from_secs(5);
/// Before a message, the caller is asked again when the last check is older than this.
const CHECKED_WITHIN: Duration = Duration::from_secs(1);

pub(super) async fn stream(
    State(state): State<AppState>,
    caller: crate::auth::Caller,
    presented: Option<axum::Extension<crate::auth::Presented>>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, super::error::ApiError> {
    let slot = state.streams.open(caller.actor())?;
    let presented = presented.map(|axum::Extension(p)| p);
    let view = caller;
    let mut changes = state.changes.subscribe();
    changes.borrow_and_update();
    let shutdown = state.shutdown.clone();
    let (last, first) = message(&state, &view);
    let first = event(&first);
    let checked = tokio::time::Instant::now();
    let rest = futures::stream::unfold(
        (changes, state, view, slot, last, checked),
        move |(mut changes, state, mut view, slot, mut last, mut checked)| {
            let shutdown = shutdown.clone();
            let presented = presented.clone();
            async move {
                // Only what the caller sees moving makes a message: silence otherwise, so
                // that neither the messages nor their timing tell of others' changes.
                loop {
                    tokio::select! {
                        _ = tokio::time::sleep(FLUSH_INTERVAL) => {}
                        _ = shutdown.cancelled() => return None,
                    }
                    tokio::select! {
                        changed = changes.changed() => changed.ok()?,
                        _ = tokio::time::sleep_until(checked + RECHECK_INTERVAL) => {}
                        _ = shutdown.cancelled() => return None,
                    }
                    changes.borrow_and_update();
                    // Who the caller is now: gone, the stream ends; narrower, it follows that.
                    if let Some(p) = &presented {
                        if checked.elapsed() >= CHECKED_WITHIN {
                            view = super::session::recheck(&state, p).await?;
                            checked = tokio::time::Instant::now();
                        }
                    }
                    let (rev, json) = message(&state, &view);
                    if rev != last {
                        last = rev;
                        let e = event(&json);
                        return Some((Ok(e), (changes, state, view, slot, last, checked)));
                    }
                }
            }
        },
    );
    let stream = futures::StreamExt::chain(futures::stream::once(async { Ok(first) }), rest);
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

//! `/api/v1/events`: one Server-Sent Events stream per tab. Every message says the fleet's
//! change counter and the sync state of each cluster the caller can see; the live script
//! refetches the page when the counter moved. Changes are coalesced: at most one message
//! every 250 ms, however fast the clusters change.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use lookout_app::model::Scope;
use serde::Serialize;

use super::AppState;

/// The shortest time between two messages of one stream (at most 4 flushes a second).
pub(super) const FLUSH_INTERVAL: Duration = Duration::from_millis(250);
/// Open streams one identity may hold (a tab each), and all of them together.
pub(crate) const STREAMS_PER_IDENTITY: usize = 32;
pub(crate) const STREAMS_IN_TOTAL: usize = 2_000;

/// The open streams, by identity.
#[derive(Debug, Default)]
pub struct Streams(std::sync::Mutex<std::collections::HashMap<String, usize>>);

/// One open stream: counted until it is dropped.
struct Slot {
    streams: std::sync::Arc<Streams>,
    who: String,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.streams.0.lock().expect("streams lock");
        if let Some(n) = open.get_mut(&self.who) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.who);
            }
        }
    }
}

impl Streams {
    /// A slot for `who`, or why not.
    fn open(self: &std::sync::Arc<Self>, who: &str) -> Result<Slot, super::AppError> {
        let mut open = self.0.lock().expect("streams lock");
        let total: usize = open.values().sum();
        if total >= STREAMS_IN_TOTAL {
            return Err(super::AppError::Rejected {
                status: axum::http::StatusCode::SERVICE_UNAVAILABLE,
                message: format!(
                    "{STREAMS_IN_TOTAL} live-update streams are open; try again later"
                ),
            });
        }
        let mine = open.entry(who.to_string()).or_default();
        if *mine >= STREAMS_PER_IDENTITY {
            return Err(super::AppError::Rejected {
                status: axum::http::StatusCode::TOO_MANY_REQUESTS,
                message: format!("{who} already has {STREAMS_PER_IDENTITY} live-update streams open; close some tabs"),
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
    /// The fleet-wide change counter; pages carry the one they were rendered at.
    rev: u64,
    clusters: Vec<ClusterChange>,
}

fn message(state: &AppState, scope: &Scope) -> Event {
    let change = Change {
        rev: state.changes.revision(),
        clusters: state
            .registry
            .records()
            .iter()
            .filter(|c| lookout_app::model::read::Visibility::of(scope, &c.name).is_some())
            .map(|c| ClusterChange {
                name: c.name.clone(),
                state: c.state_label(),
                generation: c.generation(),
            })
            .collect(),
    };
    Event::default()
        .event("change")
        .json_data(change)
        .expect("a change serializes")
}

pub(super) async fn stream(
    State(state): State<AppState>,
    caller: crate::auth::Caller,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, super::error::ApiError> {
    let slot = state.streams.open(caller.actor())?;
    let scope = caller.scope;
    let mut changes = state.changes.subscribe();
    changes.borrow_and_update();
    let shutdown = state.shutdown.clone();
    let first = message(&state, &scope);
    let rest = futures::stream::unfold(
        (changes, state, scope, slot),
        move |(mut changes, state, scope, slot)| {
            let shutdown = shutdown.clone();
            async move {
                tokio::select! {
                    _ = tokio::time::sleep(FLUSH_INTERVAL) => {}
                    _ = shutdown.cancelled() => return None,
                }
                tokio::select! {
                    changed = changes.changed() => changed.ok()?,
                    _ = shutdown.cancelled() => return None,
                }
                changes.borrow_and_update();
                let event = message(&state, &scope);
                Some((Ok(event), (changes, state, scope, slot)))
            }
        },
    );
    let stream = futures::StreamExt::chain(futures::stream::once(async { Ok(first) }), rest);
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

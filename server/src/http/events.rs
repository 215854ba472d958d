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
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let scope = caller.scope;
    let mut changes = state.changes.subscribe();
    changes.borrow_and_update();
    let shutdown = state.shutdown.clone();
    let first = message(&state, &scope);
    let rest = futures::stream::unfold(
        (changes, state, scope),
        move |(mut changes, state, scope)| {
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
                Some((Ok(event), (changes, state, scope)))
            }
        },
    );
    let stream = futures::StreamExt::chain(futures::stream::once(async { Ok(first) }), rest);
    Sse::new(stream).keep_alive(KeepAlive::default())
}

//! cert-manager's challenge scheduler: at most `--max-concurrent-challenges` (60 by
//! default) Challenges are processed at once. A new Challenge waits with `processing:
//! false`, state `""` and no reason until a slot is free; the oldest are scheduled first, one
//! per (dnsName, type) at a time, and none for a name and type already being processed.
//!
//! Upstream: `pkg/controller/acmechallenges/scheduler/scheduler.go` (`scheduleN`,
//! `determineChallengeCandidates`, `dedupeChallenges`, `sortChallengesByTimestamp`) and
//! `pkg/controller/acmechallenges/controller.go` (the scheduler marks `processing: true`;
//! a final Challenge is no longer processing).

use std::collections::HashSet;

use serde_json::{json, Value};

use super::{ACME, CHALLENGES};
use crate::sim::{s, time, Api};

/// cert-manager's default `--max-concurrent-challenges`.
pub const DEFAULT_MAX_CONCURRENT: usize = 60;

fn processing(ch: &Value) -> bool {
    ch.pointer("/status/processing") == Some(&json!(true))
}

fn is_final(ch: &Value) -> bool {
    matches!(
        s(ch, "/status/state"),
        Some("valid" | "invalid" | "errored" | "expired")
    )
}

fn identity(ch: &Value) -> (String, String) {
    (
        s(ch, "/spec/dnsName").unwrap_or_default().to_string(),
        s(ch, "/spec/type").unwrap_or_default().to_string(),
    )
}

/// One pass of the scheduler over the cluster's Challenges.
pub(super) fn schedule(api: &Api<'_>, max: usize) {
    let all = api.list(ACME, "challenges");
    let in_progress: Vec<&Value> = all.iter().filter(|c| processing(c)).collect();
    let slots = max.saturating_sub(in_progress.len());
    if slots == 0 {
        return;
    }
    let busy: HashSet<(String, String)> = in_progress.iter().map(|c| identity(c)).collect();
    let mut candidates: Vec<&Value> = all
        .iter()
        .filter(|c| !processing(c) && !is_final(c))
        .filter(|c| !busy.contains(&identity(c)))
        .collect();
    candidates.sort_by_key(|c| time(c, "/metadata/creationTimestamp"));
    let mut chosen: HashSet<(String, String)> = HashSet::new();
    for ch in candidates {
        if chosen.len() >= slots {
            break;
        }
        if !chosen.insert(identity(ch)) {
            continue;
        }
        api.patch_status(
            ACME,
            "challenges",
            s(ch, "/metadata/namespace"),
            s(ch, "/metadata/name").unwrap_or_default(),
            &json!({"status": {"processing": true, "state": "pending"}}),
            CHALLENGES,
        );
    }
}

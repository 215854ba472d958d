//! `/metrics` in Prometheus text format: findings by rule and severity per cluster, sync
//! state, cached objects, watch errors and relists, the history writer's queue and waits,
//! the heap in use, and HTTP requests with their latency.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use lookout_app::model::read::views::FindingQuery;
use lookout_app::ports::FleetReader;

use super::AppState;
use crate::store::writer::WriterState;

/// Requests by (method, route, status) and latency sums by route.
#[derive(Debug, Default)]
pub struct HttpMetrics {
    requests: Mutex<BTreeMap<(String, String, u16), u64>>,
    latency: Mutex<BTreeMap<String, (f64, u64)>>,
}

/// Counts every request by its route pattern (not its raw path, which would be unbounded).
pub(super) async fn track(
    State(metrics): State<Arc<HttpMetrics>>,
    req: Request,
    next: Next,
) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "unmatched".into());
    let method = req.method().to_string();
    let started = Instant::now();
    let resp = next.run(req).await;
    let elapsed = started.elapsed().as_secs_f64();
    *metrics
        .requests
        .lock()
        .expect("metrics lock")
        .entry((method, route.clone(), resp.status().as_u16()))
        .or_default() += 1;
    let mut latency = metrics.latency.lock().expect("metrics lock");
    let entry = latency.entry(route).or_default();
    entry.0 += elapsed;
    entry.1 += 1;
    resp
}

/// A label value escaped for the text format.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// The database writers: whether their writes go through, what they hold, failures, drops.
fn storage(out: &mut String, writers: &BTreeMap<&'static str, WriterState>) {
    type Value = fn(&WriterState) -> u64;
    let metrics: [(&str, &str, &str, Value); 4] = [
        (
            "lookout_storage_writable",
            "gauge",
            "1 while the database takes this writer's writes, 0 while it refuses them.",
            |s| u64::from(s.failure.is_none()),
        ),
        (
            "lookout_storage_held",
            "gauge",
            "Records held in memory until the database takes writes again.",
            |s| s.held as u64,
        ),
        (
            "lookout_storage_write_errors_total",
            "counter",
            "Writes the database refused.",
            |s| s.errors,
        ),
        (
            "lookout_storage_dropped_total",
            "counter",
            "Records given up because the database refused writes for longer than the writer holds.",
            |s| s.dropped,
        ),
    ];
    for (name, kind, help, value) in metrics {
        family(out, name, kind, help);
        for (writer, s) in writers {
            let _ = writeln!(out, "{name}{{writer=\"{writer}\"}} {}", value(s));
        }
    }
}

/// Fleet-wide numbers: only for admins of every cluster (and with sign-in off).
pub(super) async fn render(State(state): State<AppState>, caller: crate::auth::Caller) -> Response {
    if !caller.view.fleet_admin() {
        return super::AppError::Forbidden(
            "/metrics shows the whole fleet: it needs the admin role over every cluster and namespace (e.g. an API token with role = \"admin\")".into(),
        )
        .into_response();
    }
    let mut out = String::new();
    let registry = &state.registry;
    let all = state.registry.whole_fleet();

    family(
        &mut out,
        "lookout_findings",
        "gauge",
        "Findings by cluster, rule and severity.",
    );
    let mut counts: BTreeMap<(String, &'static str, &'static str), u64> = BTreeMap::new();
    for f in registry.findings(&all, &FindingQuery::default()) {
        *counts
            .entry((f.cluster.to_string(), f.rule.id(), f.severity.label()))
            .or_default() += 1;
    }
    for ((cluster, rule, severity), n) in counts {
        let _ = writeln!(
            out,
            "lookout_findings{{cluster=\"{}\",rule=\"{rule}\",severity=\"{severity}\"}} {n}",
            label(&cluster)
        );
    }

    // Each Let's Encrypt bucket, how full (the alert "rate-limit budget low" in
    // deploy/kubernetes/overlays/with-prometheus reads it).
    family(
        &mut out,
        "lookout_letsencrypt_budget_used_ratio",
        "gauge",
        "How full each Let's Encrypt rate-limit bucket is (used / capacity), by ACME server, limit and key.",
    );
    for b in lookout_app::ports::BudgetReader::budgets(&*state.budgets, &all) {
        let limit = serde_json::to_value(b.limit)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "lookout_letsencrypt_budget_used_ratio{{server=\"{}\",limit=\"{limit}\",key=\"{}\"}} {}",
            label(&b.server),
            label(&b.key),
            b.ratio
        );
    }

    family(
        &mut out,
        "lookout_cluster_state",
        "gauge",
        "1 for the cluster's current sync state (connecting, synced, stale, failed).",
    );
    family(
        &mut out,
        "lookout_cached_objects",
        "gauge",
        "Objects cached per cluster and kind.",
    );
    family(
        &mut out,
        "lookout_watch_errors_total",
        "counter",
        "Failed watch calls per cluster (410 relists excluded).",
    );
    family(
        &mut out,
        "lookout_watch_relists_total",
        "counter",
        "Initial lists and relists started per cluster.",
    );
    family(
        &mut out,
        "lookout_history_waits_total",
        "counter",
        "Times a watcher waited for the history writer (back-pressure).",
    );
    family(
        &mut out,
        "lookout_findings_evaluations_total",
        "counter",
        "Evaluations of the rules per cluster: scope=\"cluster\" on the whole cluster (start, relist, sync state, cluster-scoped objects, time), scope=\"namespace\" on one namespace after a change in it.",
    );
    for c in registry.records() {
        let name = label(&c.name);
        for state_name in ["connecting", "synced", "stale", "failed"] {
            let _ = writeln!(
                out,
                "lookout_cluster_state{{cluster=\"{name}\",state=\"{state_name}\"}} {}",
                u8::from(c.state_label() == state_name)
            );
        }
        for (kind, n) in c.kind_counts() {
            let _ = writeln!(
                out,
                "lookout_cached_objects{{cluster=\"{name}\",kind=\"{kind}\"}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "lookout_watch_errors_total{{cluster=\"{name}\"}} {}",
            c.counters.watch_errors.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "lookout_watch_relists_total{{cluster=\"{name}\"}} {}",
            c.counters.relists.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "lookout_history_waits_total{{cluster=\"{name}\"}} {}",
            c.counters.history_waits.load(Ordering::Relaxed)
        );
        for (scope, n) in [
            ("cluster", &c.counters.evaluations_whole),
            ("namespace", &c.counters.evaluations_namespace),
        ] {
            let _ = writeln!(
                out,
                "lookout_findings_evaluations_total{{cluster=\"{name}\",scope=\"{scope}\"}} {}",
                n.load(Ordering::Relaxed)
            );
        }
    }
    family(
        &mut out,
        "lookout_objects_skipped_total",
        "counter",
        "Objects that could not be cached at all (no name), per cluster and kind; other malformed fields are projected as empty.",
    );
    for c in registry.records() {
        for (kind, n) in c.counters.skipped() {
            let _ = writeln!(
                out,
                "lookout_objects_skipped_total{{cluster=\"{}\",kind=\"{kind}\"}} {n}",
                label(&c.name)
            );
        }
    }
    family(
        &mut out,
        "lookout_history_queue_depth",
        "gauge",
        "Events waiting for the history writer.",
    );
    let _ = writeln!(
        out,
        "lookout_history_queue_depth {}",
        registry.history_queue_depth()
    );
    storage(&mut out, &state.storage.writers());
    family(
        &mut out,
        "lookout_relists_in_progress",
        "gauge",
        "Relists under way across the fleet (at most 8 at a time; the rest wait their turn).",
    );
    let _ = writeln!(
        out,
        "lookout_relists_in_progress {}",
        registry.relists.in_progress()
    );
    family(
        &mut out,
        "lookout_relists_waited_total",
        "counter",
        "Relists that waited for a turn (a 410 storm or many watches ending at once).",
    );
    let _ = writeln!(
        out,
        "lookout_relists_waited_total {}",
        registry.relists.waited()
    );
    if let Some(reviews) = &state.auth.reviews {
        family(
            &mut out,
            "lookout_access_reviews_total",
            "counter",
            "SubjectAccessReviews sent to the clusters to learn what people may see and do.",
        );
        let _ = writeln!(out, "lookout_access_reviews_total {}", reviews.sent());
    }

    family(
        &mut out,
        "lookout_sqlite_memory_bytes",
        "gauge",
        "Bytes SQLite has allocated (page caches, statements); part of lookout_heap_bytes in the binary.",
    );
    let _ = writeln!(
        out,
        "lookout_sqlite_memory_bytes {}",
        crate::memory::sqlite()
    );
    if let Some(heap) = crate::memory::heap() {
        family(
            &mut out,
            "lookout_heap_bytes",
            "gauge",
            "Heap bytes in use (allocated and not freed), as jemalloc counts them.",
        );
        let _ = writeln!(out, "lookout_heap_bytes {}", heap.allocated);
        family(
            &mut out,
            "lookout_heap_resident_bytes",
            "gauge",
            "Bytes of jemalloc's pages resident in memory (allocations, metadata, freed pages not yet returned).",
        );
        let _ = writeln!(out, "lookout_heap_resident_bytes {}", heap.resident);
        if let Some(cache) = heap.cache {
            family(
                &mut out,
                "lookout_heap_cache_bytes",
                "gauge",
                "Of lookout_heap_bytes, the bytes in the cache's own allocator arena (the watched objects' views, their strings and maps).",
            );
            let _ = writeln!(out, "lookout_heap_cache_bytes {cache}");
        }
    }

    probes(&mut out, &state);

    family(
        &mut out,
        "lookout_http_requests_total",
        "counter",
        "HTTP requests by method, route and status.",
    );
    for ((method, route, status), n) in state.http.requests.lock().expect("metrics lock").iter() {
        let _ = writeln!(out, "lookout_http_requests_total{{method=\"{method}\",route=\"{}\",status=\"{status}\"}} {n}", label(route));
    }
    family(
        &mut out,
        "lookout_http_request_duration_seconds",
        "summary",
        "HTTP request latency by route.",
    );
    for (route, (sum, count)) in state.http.latency.lock().expect("metrics lock").iter() {
        let _ = writeln!(
            out,
            "lookout_http_request_duration_seconds_sum{{route=\"{}\"}} {sum}",
            label(route)
        );
        let _ = writeln!(
            out,
            "lookout_http_request_duration_seconds_count{{route=\"{}\"}} {count}",
            label(route)
        );
    }
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        out,
    )
        .into_response()
}

/// `lookout_probe_*`: what the probe served and what its rounds cost. What it found per rule
/// is in `lookout_findings{rule="probe.…"}`.
fn probes(out: &mut String, state: &AppState) {
    let last = state.probes.last.lock().expect("probe status lock").clone();
    for (name, kind, help, value) in [
        ("lookout_probe_rounds_total", "counter", "Probe rounds finished.", last.rounds as f64),
        ("lookout_probe_round_duration_seconds", "gauge", "How long the last probe round took.", last.seconds),
        ("lookout_probe_refused_addresses", "gauge", "Published addresses the last round did not connect to (outside probe.allow, in probe.deny, or special).", last.refused as f64),
    ] {
        family(out, name, kind, help);
        let _ = writeln!(out, "{name} {value}");
    }
    family(
        out,
        "lookout_probe_addresses",
        "gauge",
        "Host × address pairs of the last round, by whether a certificate was served.",
    );
    let _ = writeln!(
        out,
        "lookout_probe_addresses{{result=\"served\"}} {}",
        last.probed - last.failed
    );
    let _ = writeln!(
        out,
        "lookout_probe_addresses{{result=\"failed\"}} {}",
        last.failed
    );
    family(
        out,
        "lookout_probe_duration_seconds",
        "summary",
        "Single probes (TLS, then the ACME path) of one host on one address.",
    );
    let _ = writeln!(
        out,
        "lookout_probe_duration_seconds_sum {}",
        last.probe_seconds_total
    );
    let _ = writeln!(
        out,
        "lookout_probe_duration_seconds_count {}",
        last.probes_total
    );

    let rows = state
        .fleet()
        .probes(&state.registry.whole_fleet(), None, None, None);
    // Per host: the earliest notAfter served on any address; per family: whether every
    // address served a certificate.
    let mut not_after: BTreeMap<(&str, &str), i64> = BTreeMap::new();
    let mut served: BTreeMap<(&str, &str, &'static str), bool> = BTreeMap::new();
    for r in &rows {
        let o = &r.observation;
        let key = (r.cluster.as_str(), o.host.as_str());
        if let Some(t) = &o.tls {
            let at = t.leaf.not_after.timestamp();
            not_after
                .entry(key)
                .and_modify(|v| *v = (*v).min(at))
                .or_insert(at);
        }
        *served.entry((key.0, key.1, o.family())).or_insert(true) &= o.tls.is_some();
    }
    family(
        out,
        "lookout_probe_certificate_not_after_seconds",
        "gauge",
        "The earliest notAfter (Unix seconds) of the certificates a host served on its addresses.",
    );
    for ((cluster, host), at) in &not_after {
        let _ = writeln!(
            out,
            "lookout_probe_certificate_not_after_seconds{{cluster=\"{}\",host=\"{}\"}} {at}",
            label(cluster),
            label(host)
        );
    }
    family(
        out,
        "lookout_probe_served",
        "gauge",
        "1 when every address of the family served a host a certificate, else 0.",
    );
    for ((cluster, host, family), ok) in &served {
        let _ = writeln!(
            out,
            "lookout_probe_served{{cluster=\"{}\",host=\"{}\",family=\"{family}\"}} {}",
            label(cluster),
            label(host),
            u8::from(*ok)
        );
    }
}

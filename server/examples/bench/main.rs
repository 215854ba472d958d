//! The fleet benchmark (`bash scripts/bench.sh`, see docs/benchmarks.md): kubesim with its
//! scale generator in this process, the release `lookout` binary as a separate process
//! (so its CPU time and memory are its own), and measurements of cold start, memory per
//! cached object, page latency under concurrency, SSE delivery to 1,000 clients, and
//! "which Ingresses serve host X" through Lookout versus kubectl against every cluster.
//! Prints a Markdown table and writes JSON.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use kubesim::{Clock, Fleet, FleetOptions};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

mod access;
mod hundreds;
mod measure;
mod probe;
mod soak;

use measure::*;
use soak::soak;

/// The bound on one step of the benchmark (a step that takes longer fails the run).
const MINUTES_5: Duration = Duration::from_secs(300);

/// Live streams the benchmark's Lookout admits: above the most SSE clients it opens.
const SSE_ROOM: usize = 2_000;

struct Args {
    quick: bool,
    /// Only the one-cluster page latencies (for comparing changes to the request path).
    pages_only: bool,
    /// Instead of the benchmarks: churn for this many minutes and watch RSS and descriptors.
    soak_minutes: Option<f64>,
    /// Instead of the benchmarks: the probe's round over 10,000 hosts × 2 address families.
    probe: bool,
    /// Instead of the benchmarks: what asking the clusters who sees what costs.
    access: bool,
    /// Instead of the benchmarks: fleets of 10 to 300 clusters.
    hundreds: bool,
    /// Another `lookout` binary measured side by side (`--hundreds`).
    baseline: Option<PathBuf>,
    /// The fleet sizes of `--hundreds` (default 10, 30, 100, 300).
    sizes: Option<Vec<usize>>,
    json: PathBuf,
    lookout: PathBuf,
}

fn args() -> Args {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut a = Args {
        quick: false,
        pages_only: false,
        soak_minutes: None,
        probe: false,
        access: false,
        hundreds: false,
        baseline: None,
        sizes: None,
        json: root.join("target/bench/bench.json"),
        lookout: root.join("target/release/lookout"),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--quick" => a.quick = true,
            "--pages-only" => a.pages_only = true,
            "--probe" => a.probe = true,
            "--access" => a.access = true,
            "--hundreds" => a.hundreds = true,
            "--baseline" => a.baseline = Some(it.next().expect("--baseline BINARY").into()),
            "--clusters" => {
                let sizes: Vec<usize> = it
                    .next()
                    .expect("--clusters N[,N…]")
                    .split(',')
                    .map(|n| {
                        n.trim()
                            .parse()
                            .expect("--clusters takes numbers: 10,30,100")
                    })
                    .collect();
                assert!(
                    sizes.iter().all(|n| *n > 0),
                    "--clusters takes positive numbers"
                );
                a.sizes = Some(sizes);
            }
            "--soak" => {
                let m: f64 = it
                    .next()
                    .and_then(|m| m.parse().ok())
                    .filter(|m: &f64| *m > 0.0)
                    .expect("--soak MINUTES (a positive number)");
                a.soak_minutes = Some(m);
            }
            "--json" => a.json = it.next().expect("--json FILE").into(),
            "--lookout" => a.lookout = it.next().expect("--lookout BINARY").into(),
            other => {
                panic!("unknown argument {other} (takes --quick, --pages-only, --probe, --access, --hundreds, --baseline BINARY, --clusters N[,N…], --soak MINUTES, --json FILE, --lookout BINARY)")
            }
        }
    }
    a
}

struct Lookout {
    child: tokio::process::Child,
    base: String,
    pid: u32,
    _dir: tempfile::TempDir,
}

impl Lookout {
    async fn stop(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}

/// Starts `lookout serve` against the fleet, without the probe; returns it and how long it
/// took to be ready.
async fn start_lookout(bin: &Path, fleet: &Fleet, kubeconfig: &Path) -> (Lookout, Duration) {
    start_lookout_with(bin, fleet, kubeconfig, "[probe]\nenabled = false\n").await
}

/// As [`start_lookout`], with `extra` appended to the configuration (its tables).
async fn start_lookout_with(
    bin: &Path,
    fleet: &Fleet,
    kubeconfig: &Path,
    extra: &str,
) -> (Lookout, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut config = format!(
        "listen = \"127.0.0.1:{port}\"\ndatabase_url = \"sqlite://{}\"\n",
        dir.path().join("lookout.db").display()
    );
    // The benchmark's live streams all come from one identity (sign-in off): room for them,
    // rather than the per-identity cap a deployment keeps against one runaway client.
    config.push_str(&format!(
        "[http]\nstreams_per_identity = {SSE_ROOM}\nstreams_total = {SSE_ROOM}\n"
    ));
    for c in &fleet.clusters {
        config.push_str(&format!(
            "[[clusters]]\nname = \"{0}\"\nkubeconfig = \"{1}\"\ncontext = \"{0}\"\n",
            c.cluster.name,
            kubeconfig.display()
        ));
    }
    config.push_str(extra);
    let path = dir.path().join("lookout.toml");
    std::fs::write(&path, config).unwrap();
    let started = Instant::now();
    let child = tokio::process::Command::new(bin)
        .args(["serve", "--config"])
        .arg(&path)
        .env("LOOKOUT_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(if std::env::var_os("BENCH_LOOKOUT_STDERR").is_some() {
            Stdio::inherit()
        } else {
            Stdio::null()
        })
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot start {}: {e} (build it: cargo build --release --bin lookout)",
                bin.display()
            )
        });
    let pid = child.id().unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    loop {
        let ready = client
            .get(format!("{base}/readyz"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success());
        if ready {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "lookout was not ready within 10 minutes"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let ready_after = started.elapsed();
    (
        Lookout {
            child,
            base,
            pid,
            _dir: dir,
        },
        ready_after,
    )
}

async fn fleet(
    clusters: usize,
    ingresses: usize,
) -> (Fleet, tempfile::TempDir, PathBuf, CancellationToken) {
    let token = CancellationToken::new();
    // HTTPS with the fleet's own CA, as real API servers serve (and offer HTTP/2).
    let fleet = Fleet::start(
        &FleetOptions {
            tls: true,
            ..FleetOptions::numbered(clusters)
        },
        Arc::new(Clock::Real),
        token.clone(),
    )
    .await
    .unwrap();
    // Both cores generate: the clusters are independent.
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(c) = fleet.clusters.get(i) else {
                    break;
                };
                kubesim::sim::scale::populate(&c.cluster, 10, ingresses);
            });
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    fleet.write_kubeconfig(&kubeconfig).unwrap();
    (fleet, dir, kubeconfig, token)
}

/// The memory rows of one measurement.
fn memory_rows(row: &mut impl FnMut(&str, String, &str, Option<bool>), what: &str, m: &Value) {
    let f = |k: &str| m[k].as_f64().unwrap();
    row(
        &format!("steady RSS per cached Ingress/Certificate, {what}: (RSS − empty-cluster RSS) / (Ingresses + Certificates)"),
        format!("{:.0} B ({} MiB RSS)", f("bytes_per_object"), m["rss_kib"].as_u64().unwrap() / 1024),
        "≤ 1 KB average",
        Some(f("bytes_per_object") <= 1024.0),
    );
    row(
        &format!(
            "steady memory per cached object of every kind, {what} ({} objects)",
            m["cached_objects"]
        ),
        format!(
            "{:.0} B RSS, {:.0} B heap in use (of which SQLite {:.1} MiB)",
            f("rss_bytes_per_cached_object"),
            f("heap_bytes_per_cached_object"),
            f("sqlite_bytes") / (1024.0 * 1024.0)
        ),
        "",
        None,
    );
}

#[tokio::main]
async fn main() {
    let a = args();
    if let Some(minutes) = a.soak_minutes {
        soak(&a, minutes).await;
        return;
    }
    if a.probe {
        probe::probe_bench(&a).await;
        return;
    }
    if a.access {
        access::access_bench(&a).await;
        return;
    }
    if a.hundreds {
        hundreds::hundreds_bench(&a).await;
        return;
    }
    let (small, large_clusters, large) = if a.quick {
        (1_000, 4, 500)
    } else {
        (10_000, 20, 5_000)
    };
    let mut rows: Vec<(String, String, String, String)> = Vec::new();
    let mut out = json!({"quick": a.quick});
    let mut row = |what: &str, value: String, target: &str, met: Option<bool>| {
        let verdict = match met {
            Some(true) => "met",
            Some(false) => "MISSED",
            None => "",
        };
        println!("| {what} | {value} | {target} | {verdict} |");
        rows.push((what.into(), value, target.into(), verdict.into()));
    };
    println!("| measurement | value | target | |\n|---|---:|---|---|");

    // Baseline: an empty cluster.
    let (f, _d, kc, token) = fleet(1, 0).await;
    let (l, _) = start_lookout(&a.lookout, &f, &kc).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (_, base_rss, _) = proc_stats(l.pid);
    let (_, base_heap, _, base_sqlite) = cached(&l.base).await;
    l.stop().await;
    token.cancel();
    drop(f);
    row(
        "baseline: Lookout watching an empty cluster",
        format!(
            "{} MiB RSS, {:.1} MiB heap in use (of which SQLite {:.1} MiB)",
            base_rss / 1024,
            base_heap as f64 / (1024.0 * 1024.0),
            base_sqlite as f64 / (1024.0 * 1024.0)
        ),
        "",
        None,
    );
    out["baseline_rss_kib"] = json!(base_rss);
    out["baseline_heap_bytes"] = json!(base_heap);

    // One cluster.
    let (f, _d, kc, token) = fleet(1, small).await;
    let (l, ready) = start_lookout(&a.lookout, &f, &kc).await;
    let (cpu, _, hwm) = proc_stats(l.pid);
    row(&format!("cold start, 1 cluster × {small} Ingresses + {small} Certificates (+ Secrets, requests)"), format!("{:.2} s ready, {cpu:.2} s CPU, {} MiB peak RSS", ready.as_secs_f64(), hwm / 1024), "≤ 3 s", Some(ready.as_secs_f64() <= 3.0));
    out["one_cluster"] = json!({"objects": small, "ready_s": ready.as_secs_f64(), "cpu_s": cpu, "peak_rss_kib": hwm});
    let m = bounded(
        "memory, 1 cluster",
        MINUTES_5,
        memory(&l, base_rss, 2 * small),
    )
    .await;
    memory_rows(&mut row, "1 cluster", &m);
    out["one_cluster"]["memory"] = m;
    // The same cluster failing: its ClusterIssuer deleted, every Ingress raises
    // issuer.missing (a finding per Ingress held in memory). The pages below run on it.
    let findings = bounded(
        "the issuer deleted",
        MINUTES_5,
        failing(&l.base, &f.clusters[0].cluster, small),
    )
    .await;
    let m = bounded(
        "memory, 1 cluster",
        MINUTES_5,
        memory(&l, base_rss, 2 * small),
    )
    .await;
    memory_rows(
        &mut row,
        &format!("1 cluster with its issuer deleted ({findings} findings)"),
        &m,
    );
    out["one_cluster"]["memory_failing"] = m;
    for (name, path) in [
        ("triage board", "/"),
        (
            "Ingress list, filtered, 100 rows",
            "/ingresses?namespace=tenant-3&per_page=100",
        ),
    ] {
        for c in [1usize, 16, 64] {
            let (p50, p99, rps) = bounded(
                "page latency",
                MINUTES_5,
                latency(&l.base, path, c, if a.quick { 2.0 } else { 5.0 }),
            )
            .await;
            let target = (name != "triage board" && c == 64).then_some(p99 <= 25.0);
            row(
                &format!("{name} at {c} clients"),
                format!("p50 {p50:.1} ms, p99 {p99:.1} ms, {rps:.0} req/s"),
                if target.is_some() {
                    "p99 ≤ 25 ms"
                } else {
                    ""
                },
                target,
            );
            out["latency"][format!("{name} @{c}")] =
                json!({"p50_ms": p50, "p99_ms": p99, "rps": rps});
        }
    }
    if a.pages_only {
        l.stop().await;
        token.cancel();
        return;
    }
    let clients = if a.quick { 200 } else { 1_000 };
    let (p50, p99, delivered) =
        bounded("SSE delivery", MINUTES_5, sse(&l.base, &f, clients, 10)).await;
    row(
        &format!("SSE delivery, {clients} clients, 10 changes"),
        format!("p50 {p50:.0} ms, p99 {p99:.0} ms ({delivered} deliveries)"),
        "p99 ≤ 50 ms",
        Some(p99 <= 50.0 && delivered == clients * 10),
    );
    out["sse"] = json!({"clients": clients, "p50_ms": p50, "p99_ms": p99, "delivered": delivered});
    let host = format!("app-{}.tenant-{}.example.com", small / 2, (small / 2) % 10);
    let (k, lk, kh, lh) = bounded("host lookup", MINUTES_5, by_host(&l.base, &kc, &f, &host)).await;
    row(
        "host lookup, 1 cluster: kubectl get ingress -A -o json + filter vs Lookout API",
        format!(
            "{:.0} ms vs {:.1} ms ({:.0}×; {kh} and {lh} found)",
            k * 1000.0,
            lk * 1000.0,
            k / lk
        ),
        "",
        None,
    );
    out["by_host_1"] =
        json!({"kubectl_s": k, "lookout_s": lk, "found_kubectl": kh, "found_lookout": lh});
    l.stop().await;
    token.cancel();
    drop(f);

    // The fleet.
    let (f, _d, kc, token) = fleet(large_clusters, large).await;
    let (l, ready) = start_lookout(&a.lookout, &f, &kc).await;
    let (cpu, _, hwm) = proc_stats(l.pid);
    row(
        &format!(
            "cold start, {large_clusters} clusters × {large} Ingresses + {large} Certificates"
        ),
        format!(
            "{:.2} s ready, {cpu:.2} s CPU, {} MiB peak RSS",
            ready.as_secs_f64(),
            hwm / 1024
        ),
        "",
        None,
    );
    out["fleet"] = json!({"clusters": large_clusters, "objects_per_cluster": large, "ready_s": ready.as_secs_f64(), "cpu_s": cpu, "peak_rss_kib": hwm});
    // How close the start is to decoding the same JSON alone (no projection, cache,
    // history or HTTP), on one thread.
    let contexts: Vec<String> = f.clusters.iter().map(|c| c.cluster.name.clone()).collect();
    let (objects, bytes, decoding) =
        bounded("decoding alone", MINUTES_5, decode_alone(&kc, &contexts)).await;
    row(
        &format!("decoding the same lists alone ({objects} Ingresses, Certificates and CertificateRequests, {} MiB of JSON, one thread, as kube's DynamicObject)", bytes / (1024 * 1024)),
        format!("{decoding:.2} s (Lookout's start: {cpu:.2} s CPU, {:.2} s ready)", ready.as_secs_f64()),
        "",
        None,
    );
    out["fleet"]["decode_alone"] = json!({"objects": objects, "bytes": bytes, "seconds": decoding});
    let m = bounded(
        "memory, fleet",
        MINUTES_5,
        memory(&l, base_rss, 2 * large * large_clusters),
    )
    .await;
    memory_rows(&mut row, "fleet", &m);
    out["fleet"]["memory"] = m;
    let host = format!("app-{}.tenant-{}.example.com", large / 3, (large / 3) % 10);
    let (k, lk, kh, lh) = bounded("host lookup", MINUTES_5, by_host(&l.base, &kc, &f, &host)).await;
    row(&format!("host lookup across {large_clusters} clusters: kubectl per cluster + filter vs Lookout API"), format!("{:.0} ms vs {:.1} ms ({:.0}×; {kh} and {lh} found)", k * 1000.0, lk * 1000.0, k / lk), "", None);
    out["by_host_fleet"] =
        json!({"kubectl_s": k, "lookout_s": lk, "found_kubectl": kh, "found_lookout": lh});
    l.stop().await;
    token.cancel();

    if let Some(dir) = a.json.parent() {
        std::fs::create_dir_all(dir).unwrap();
    }
    out["rows"] = json!(rows
        .iter()
        .map(|(w, v, t, m)| json!({"measurement": w, "value": v, "target": t, "verdict": m}))
        .collect::<Vec<_>>());
    std::fs::write(&a.json, serde_json::to_string_pretty(&out).unwrap()).unwrap();
    println!("\nJSON written to {}", a.json.display());
}

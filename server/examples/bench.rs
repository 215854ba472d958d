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

struct Args {
    quick: bool,
    /// Only the one-cluster page latencies (for comparing changes to the request path).
    pages_only: bool,
    /// Instead of the benchmarks: churn for this many minutes and watch RSS and descriptors.
    soak_minutes: Option<f64>,
    json: PathBuf,
    lookout: PathBuf,
}

fn args() -> Args {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut a = Args {
        quick: false,
        pages_only: false,
        soak_minutes: None,
        json: root.join("target/bench/bench.json"),
        lookout: root.join("target/release/lookout"),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--quick" => a.quick = true,
            "--pages-only" => a.pages_only = true,
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
                panic!("unknown argument {other} (takes --quick, --pages-only, --soak MINUTES, --json FILE, --lookout BINARY)")
            }
        }
    }
    a
}

/// CPU seconds, resident and peak resident memory (KiB) of a process, from /proc.
fn proc_stats(pid: u32) -> (f64, u64, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, r)| r.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // After the command: state is field 0, utime 11, stime 12 (clock ticks of 1/100 s).
    let cpu = (ticks(11) + ticks(12)) / 100.0;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib = |key: &str| {
        status
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (cpu, kib("VmRSS:"), kib("VmHWM:"))
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

/// Starts `lookout serve` against the fleet; returns it and how long it took to be ready.
async fn start_lookout(bin: &Path, fleet: &Fleet, kubeconfig: &Path) -> (Lookout, Duration) {
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
    for c in &fleet.clusters {
        config.push_str(&format!(
            "[[clusters]]\nname = \"{0}\"\nkubeconfig = \"{1}\"\ncontext = \"{0}\"\n",
            c.cluster.name,
            kubeconfig.display()
        ));
    }
    let path = dir.path().join("lookout.toml");
    std::fs::write(&path, config).unwrap();
    let started = Instant::now();
    let child = tokio::process::Command::new(bin)
        .args(["serve", "--config"])
        .arg(&path)
        .env("LOOKOUT_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
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
    let fleet = Fleet::start(
        &FleetOptions::numbered(clusters),
        Arc::new(Clock::Real),
        token.clone(),
    )
    .await
    .unwrap();
    for c in &fleet.clusters {
        kubesim::sim::scale::populate(&c.cluster, 10, ingresses);
    }
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    fleet.write_kubeconfig(&kubeconfig).unwrap();
    (fleet, dir, kubeconfig, token)
}

/// Open file descriptors of a process.
fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// The soak: 2,000 Ingresses with their chains, then for `minutes` a steady churn — an
/// Ingress created and an old one deleted, a Challenge created and an old one deleted (the
/// history writer records both), watches dropped every minute and a 410 relist every five —
/// while a client reads pages. RSS, heap and open descriptors are sampled every 15 s.
async fn soak(a: &Args, minutes: f64) {
    let (f, _d, kc, token) = fleet(1, 2_000).await;
    let (l, ready) = start_lookout(&a.lookout, &f, &kc).await;
    println!(
        "soak: {minutes} min of churn against 2,000 Ingresses (ready in {:.1} s)\n",
        ready.as_secs_f64()
    );
    println!("| minute | RSS MiB | heap MiB | jemalloc resident MiB | SQLite MiB | open fds | cached objects | changes |\n|---:|---:|---:|---:|---:|---:|---:|---:|");
    let cluster = f.clusters[0].cluster.clone();
    let ingresses = cluster.resolve("networking.k8s.io", "ingresses").unwrap();
    let challenges = cluster
        .resolve("acme.cert-manager.io", "challenges")
        .unwrap();
    let opts = kubesim::WriteOpts::system();
    let reader = {
        let base = l.base.clone();
        tokio::spawn(async move {
            let client = reqwest::Client::new();
            loop {
                for path in [
                    "/",
                    "/ingresses?namespace=tenant-1",
                    "/challenges",
                    "/api/v1/findings",
                ] {
                    let _ = client
                        .get(format!("{base}{path}"))
                        .send()
                        .await
                        .map(|r| r.bytes());
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
    };
    let started = Instant::now();
    let until = started + Duration::from_secs_f64(minutes * 60.0);
    let mut samples: Vec<(f64, u64, u64, usize)> = Vec::new();
    let mut next_sample = started;
    let (mut i, mut changes) = (0usize, 0usize);
    while Instant::now() < until {
        let ns = format!("tenant-{}", i % 10);
        let _ = cluster.create(&ingresses, Some(&ns), json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": format!("soak-{i}"), "annotations": {"cert-manager.io/cluster-issuer": "letsencrypt-prod"}},
            "spec": {"rules": [{"host": format!("soak-{i}.example.com")}], "tls": [{"hosts": [format!("soak-{i}.example.com")], "secretName": format!("soak-{i}-tls")}]}}), &opts);
        let _ = cluster.create(&challenges, Some(&ns), json!({"apiVersion": "acme.cert-manager.io/v1", "kind": "Challenge",
            "metadata": {"name": format!("soak-{i}"), "uid": format!("00000000-0000-4000-a000-{i:012x}")},
            "spec": {"dnsName": format!("soak-{i}.example.com"), "type": "HTTP-01", "url": "https://acme.example/chall", "token": "t", "key": "k",
                     "issuerRef": {"name": "letsencrypt-prod", "kind": "ClusterIssuer"}},
            "status": {"state": "pending", "presented": true, "processing": true}}), &opts);
        if i >= 200 {
            let old = i - 200;
            let ns = format!("tenant-{}", old % 10);
            let _ = cluster.delete(&ingresses, Some(&ns), &format!("soak-{old}"), false);
            let _ = cluster.delete(&challenges, Some(&ns), &format!("soak-{old}"), false);
        }
        i += 1;
        changes += 4;
        if i % 1200 == 0 {
            cluster.drop_watches();
        }
        if i % 6000 == 0 {
            cluster.expire_watches();
        }
        if Instant::now() >= next_sample {
            let (_, rss, _) = proc_stats(l.pid);
            let (count, heap, resident, sqlite) = cached(&l.base).await;
            let fds = open_fds(l.pid);
            let minute = started.elapsed().as_secs_f64() / 60.0;
            println!(
                "| {minute:.2} | {} | {} | {} | {:.1} | {fds} | {count} | {changes} |",
                rss / 1024,
                heap / (1024 * 1024),
                resident / (1024 * 1024),
                sqlite as f64 / (1024.0 * 1024.0)
            );
            samples.push((minute, rss, heap, fds));
            next_sample += Duration::from_secs(15);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    reader.abort();
    // From the first sample after a minute to the last: everything, warm-up included.
    let base = samples
        .iter()
        .find(|s| s.0 >= 1.0)
        .or(samples.first())
        .copied()
        .unwrap();
    let last = *samples.last().unwrap();
    let growth = (last.1 as f64 / base.1 as f64 - 1.0) * 100.0;
    println!(
        "\nRSS {} → {} MiB ({growth:+.1}%), heap {} → {} MiB, open fds {} → {} over {minutes} min; {changes} changes",
        base.1 / 1024,
        last.1 / 1024,
        base.2 / (1024 * 1024),
        last.2 / (1024 * 1024),
        base.3,
        last.3
    );
    // Flat: the first third is warm-up (bounded caches fill as the history grows: SQLite's
    // page cache of each connection, the allocator's per-thread caches); a leak keeps
    // growing after it. The median of the last third against the median of the middle
    // third (medians, so one sample taken during a page render does not decide).
    let third = |k: usize| {
        let mut part: Vec<(u64, usize)> = samples
            .iter()
            .filter(|s| (s.0 * 3.0 / minutes).floor() as usize == k)
            .map(|s| (s.1, s.3))
            .collect();
        part.sort_unstable();
        let rss = part.get(part.len() / 2).map_or(0, |p| p.0);
        let fds = part.iter().map(|p| p.1).max().unwrap_or(0);
        (rss, fds)
    };
    let ((middle, middle_fds), (end, end_fds)) = (third(1), third(2));
    let steady = (end as f64 / middle.max(1) as f64 - 1.0) * 100.0;
    println!(
        "after warm-up: median RSS {} MiB in the middle third, {} MiB in the last ({steady:+.1}%); most open fds {middle_fds} and {end_fds}",
        middle / 1024,
        end / 1024
    );
    let flat = steady < 5.0 && end_fds <= middle_fds + 5;
    println!("verdict: {}", if flat { "flat" } else { "GROWING" });
    l.stop().await;
    token.cancel();
    if !flat {
        std::process::exit(1);
    }
}

/// What Lookout says it caches (every kind), its heap in use, jemalloc's resident bytes and
/// SQLite's memory, from `/metrics`.
async fn cached(base: &str) -> (u64, u64, u64, u64) {
    let text = reqwest::get(format!("{base}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let value = |l: &str| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap();
    let objects = text
        .lines()
        .filter(|l| l.starts_with("lookout_cached_objects{"))
        .map(value)
        .sum();
    let gauge = |name: &str| {
        text.lines()
            .find(|l| l.strip_prefix(name).is_some_and(|r| r.starts_with(' ')))
            .map_or(0, value)
    };
    (
        objects,
        gauge("lookout_heap_bytes"),
        gauge("lookout_heap_resident_bytes"),
        gauge("lookout_sqlite_memory_bytes"),
    )
}

/// Deletes the fleet's ClusterIssuer and waits until Lookout reports at least `expected`
/// findings; returns how many.
async fn failing(base: &str, cluster: &kubesim::store::Cluster, expected: usize) -> u64 {
    let issuers = cluster
        .resolve("cert-manager.io", "clusterissuers")
        .unwrap();
    cluster
        .delete(&issuers, None, "letsencrypt-prod", false)
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let found: Value = reqwest::get(format!("{base}/api/v1/findings?per_page=1"))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let total = found["total"].as_u64().unwrap_or(0);
        if total >= expected as u64 {
            return total;
        }
        assert!(
            Instant::now() < deadline,
            "only {total} findings a minute after the issuer was deleted"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Steady memory: RSS above the empty-cluster baseline per cached Ingress/Certificate (the
/// target), and RSS and heap per cached object of every kind.
async fn memory(l: &Lookout, base_rss: u64, ingresses_and_certificates: usize) -> Value {
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (_, rss, _) = proc_stats(l.pid);
    let (objects, heap, _, sqlite) = cached(&l.base).await;
    let above = rss.saturating_sub(base_rss) as f64 * 1024.0;
    json!({
        "rss_kib": rss,
        "heap_bytes": heap,
        "sqlite_bytes": sqlite,
        "cached_objects": objects,
        "bytes_per_object": above / ingresses_and_certificates as f64,
        "rss_bytes_per_cached_object": above / objects.max(1) as f64,
        "heap_bytes_per_cached_object": heap as f64 / objects.max(1) as f64,
    })
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

/// `concurrency` clients GET `path` in a loop for `seconds`: p50, p99 (ms) and requests/s.
async fn latency(base: &str, path: &str, concurrency: usize, seconds: f64) -> (f64, f64, f64) {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(concurrency)
        .build()
        .unwrap();
    let url = format!("{base}{path}");
    let until = Instant::now() + Duration::from_secs_f64(seconds);
    let tasks: Vec<_> = (0..concurrency)
        .map(|_| {
            let (client, url) = (client.clone(), url.clone());
            tokio::spawn(async move {
                let mut times = Vec::new();
                while Instant::now() < until {
                    let t = Instant::now();
                    let r = client.get(&url).send().await.unwrap();
                    assert!(r.status().is_success(), "{url}: {}", r.status());
                    r.bytes().await.unwrap();
                    times.push(t.elapsed());
                }
                times
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    all.sort();
    (
        percentile(&all, 0.5),
        percentile(&all, 0.99),
        all.len() as f64 / seconds,
    )
}

/// `clients` SSE streams; `changes` Ingresses created one at a time: the time from each
/// write to each client's next message (p50, p99 in ms).
async fn sse(base: &str, fleet: &Fleet, clients: usize, changes: usize) -> (f64, f64, usize) {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(usize, Instant)>();
    let mut tasks = Vec::new();
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    for i in 0..clients {
        let (client, tx, ready) = (client.clone(), tx.clone(), ready_tx.clone());
        let url = format!("{base}/api/v1/events");
        tasks.push(tokio::spawn(async move {
            let mut body = client.get(url).send().await.unwrap().bytes_stream();
            let mut first = true;
            while let Some(Ok(chunk)) = body.next().await {
                if String::from_utf8_lossy(&chunk).contains("event: change") {
                    if first {
                        first = false;
                        let _ = ready.send(());
                    } else if tx.send((i, Instant::now())).is_err() {
                        return;
                    }
                }
            }
        }));
    }
    for _ in 0..clients {
        ready_rx.recv().await.unwrap();
    }
    let cluster = &fleet.clusters[0].cluster;
    let rt = cluster.resolve("networking.k8s.io", "ingresses").unwrap();
    let mut delays = Vec::new();
    for n in 0..changes {
        // Let the previous coalescing window pass and drain what it sent.
        tokio::time::sleep(Duration::from_millis(600)).await;
        while rx.try_recv().is_ok() {}
        let written = Instant::now();
        cluster
            .create(&rt, Some("tenant-0"), json!({"metadata": {"name": format!("sse-{n}")}, "spec": {"rules": [{"host": format!("sse-{n}.example.com")}]}}), &kubesim::WriteOpts::system())
            .unwrap();
        let mut seen = vec![false; clients];
        let mut got = 0;
        while got < clients {
            match tokio::time::timeout(Duration::from_secs(10), rx.recv()).await {
                Ok(Some((i, at))) if !seen[i] => {
                    seen[i] = true;
                    got += 1;
                    delays.push(at - written);
                }
                Ok(Some(_)) => {}
                _ => break,
            }
        }
    }
    for t in tasks {
        t.abort();
    }
    let delivered = delays.len();
    delays.sort();
    (
        percentile(&delays, 0.5),
        percentile(&delays, 0.99),
        delivered,
    )
}

/// "Which Ingresses serve host X across the fleet": kubectl against every cluster, then a
/// filter, versus one API call to Lookout. Seconds for each.
async fn by_host(
    base: &str,
    kubeconfig: &Path,
    fleet: &Fleet,
    host: &str,
) -> (f64, f64, usize, usize) {
    let started = Instant::now();
    let mut kubectl_hits = 0;
    for c in &fleet.clusters {
        let out = tokio::process::Command::new("kubectl")
            .env("KUBECONFIG", kubeconfig)
            .args([
                "--context",
                &c.cluster.name,
                "get",
                "ingress",
                "-A",
                "-o",
                "json",
            ])
            .output()
            .await
            .expect("kubectl");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let list: Value = serde_json::from_slice(&out.stdout).unwrap();
        kubectl_hits += list["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| {
                i["spec"]["rules"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|r| r["host"] == host)
            })
            .count();
    }
    let kubectl = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let found: Value = reqwest::get(format!("{base}/api/v1/ingresses?q={host}"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let lookout = started.elapsed().as_secs_f64();
    (
        kubectl,
        lookout,
        kubectl_hits,
        found["total"].as_u64().unwrap_or(0) as usize,
    )
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
    let m = memory(&l, base_rss, 2 * small).await;
    memory_rows(&mut row, "1 cluster", &m);
    out["one_cluster"]["memory"] = m;
    // The same cluster failing: its ClusterIssuer deleted, every Ingress raises
    // issuer.missing (a finding per Ingress held in memory). The pages below run on it.
    let findings = failing(&l.base, &f.clusters[0].cluster, small).await;
    let m = memory(&l, base_rss, 2 * small).await;
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
            let (p50, p99, rps) = latency(&l.base, path, c, if a.quick { 2.0 } else { 5.0 }).await;
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
    let (p50, p99, delivered) = sse(&l.base, &f, clients, 10).await;
    row(
        &format!("SSE delivery, {clients} clients, 10 changes"),
        format!("p50 {p50:.0} ms, p99 {p99:.0} ms ({delivered} deliveries)"),
        "p99 ≤ 50 ms",
        Some(p99 <= 50.0 && delivered == clients * 10),
    );
    out["sse"] = json!({"clients": clients, "p50_ms": p50, "p99_ms": p99, "delivered": delivered});
    let host = format!("app-{}.tenant-{}.example.com", small / 2, (small / 2) % 10);
    let (k, lk, kh, lh) = by_host(&l.base, &kc, &f, &host).await;
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
    let m = memory(&l, base_rss, 2 * large * large_clusters).await;
    memory_rows(&mut row, "fleet", &m);
    out["fleet"]["memory"] = m;
    let host = format!("app-{}.tenant-{}.example.com", large / 3, (large / 3) % 10);
    let (k, lk, kh, lh) = by_host(&l.base, &kc, &f, &host).await;
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

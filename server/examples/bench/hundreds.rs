//! A fleet of hundreds (`bench --hundreds`): kubesim serving N clusters × 300 Ingresses +
//! 300 Certificates (with their Secrets and requests) from this process, for N in 10, 30,
//! 100 and 300, and `lookout serve` watching all of them — this build and, with
//! `--baseline BIN`, another binary side by side on the same fleet. For each: ready time,
//! CPU, peak and steady RSS, the triage board's latency at 64 clients, and how long a change
//! in the last cluster takes to reach the board; at the largest fleet also SSE delivery, the
//! fixed cost of a cluster (empty clusters only), and a relist storm (every cluster's
//! watches expired at once: page latency while it recovers, nothing lost, the memory peak).
//! kubesim's own cost (generation time, the RSS it adds to this process) is reported
//! before Lookout starts. Writes a table, JSON, and an SVG plot of ready time and RSS
//! against the number of clusters.

use super::*;

/// One binary's numbers on one fleet.
#[derive(Debug, Clone)]
struct Run {
    binary: String,
    clusters: usize,
    ready_s: f64,
    steady_rss_kib: u64,
    change_ms: f64,
}

/// The binaries compared: this build, and the baseline when given.
fn binaries(a: &Args) -> Vec<(String, PathBuf)> {
    let mut out = vec![("this build".to_string(), a.lookout.clone())];
    if let Some(b) = &a.baseline {
        out.push(("baseline".to_string(), b.clone()));
    }
    out
}

/// Creates a Certificate of a ClusterIssuer that does not exist in the last cluster and
/// returns how long until the board's problems name that issuer.
async fn change_on_board(base: &str, fleet: &Fleet, n: usize) -> Duration {
    let cluster = &fleet.clusters.last().unwrap().cluster;
    let rt = cluster.resolve("cert-manager.io", "certificates").unwrap();
    let issuer = format!("bench-missing-{n}");
    let written = Instant::now();
    cluster
        .create(
            &rt,
            Some("tenant-0"),
            json!({"metadata": {"name": format!("bench-change-{n}")},
                "spec": {"secretName": format!("bench-change-{n}"), "dnsNames": [format!("change-{n}.example.com")],
                    "issuerRef": {"name": issuer, "kind": "ClusterIssuer", "group": "cert-manager.io"}}}),
            &kubesim::WriteOpts::system(),
        )
        .unwrap();
    let client = reqwest::Client::new();
    loop {
        let text = client
            .get(format!("{base}/api/v1/problems?per_page=1000"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if text.contains(&issuer) {
            return written.elapsed();
        }
        assert!(
            written.elapsed() < Duration::from_secs(60),
            "the change did not reach the board within a minute"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Lookout's cached objects of every kind, from `/metrics`.
async fn cached_objects(base: &str) -> u64 {
    cached(base).await.0
}

/// Lists and relists started since start over the fleet, and relists under way now.
async fn relists(base: &str) -> (u64, u64) {
    let m = Metrics::of(base).await;
    (
        m.sum("lookout_watch_relists_total"),
        m.gauge("lookout_relists_in_progress"),
    )
}

/// How many kinds are synced over the fleet.
async fn synced_kinds(base: &str) -> u64 {
    let clusters: Value = reqwest::get(format!("{base}/api/v1/clusters"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    clusters["items"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["kinds"].as_array().cloned().unwrap_or_default())
        .filter(|k| k["state"] == "synced")
        .count() as u64
}

/// Every cluster's watches expired at once (410 Gone on resume): the board's latency at 16
/// clients while Lookout relists everything, how long until it caches what it did before,
/// and its RSS peak meanwhile.
async fn relist_storm(l: &Lookout, fleet: &Fleet) -> Value {
    let before = cached_objects(&l.base).await;
    let kinds = synced_kinds(&l.base).await;
    let (relists_before, _) = relists(&l.base).await;
    let (_, rss_before, _) = proc_stats(l.pid);
    let peak = Arc::new(std::sync::atomic::AtomicU64::new(rss_before));
    let sampling = {
        let (peak, pid) = (peak.clone(), l.pid);
        tokio::spawn(async move {
            loop {
                let (_, rss, _) = proc_stats(pid);
                peak.fetch_max(rss, std::sync::atomic::Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    let started = Instant::now();
    for c in &fleet.clusters {
        c.cluster.expire_watches();
    }
    let pages = latency(&l.base, "/", 16, 5.0);
    let recovered = async {
        // Recovered: relists have started (every kind that was watching ends in a 410) and
        // none has for a second, none is under way, and everything is cached again.
        let mut last = (relists_before, Instant::now());
        loop {
            let (started_now, in_progress) = relists(&l.base).await;
            if started_now != last.0 {
                last = (started_now, Instant::now());
            }
            if started_now > relists_before
                && in_progress == 0
                && last.1.elapsed() >= Duration::from_secs(1)
                && cached_objects(&l.base).await >= before
                && synced_kinds(&l.base).await >= kinds
            {
                return last.1.duration_since(started);
            }
            assert!(
                started.elapsed() < Duration::from_secs(280),
                "the fleet was not cached again within 280 s"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let ((p50, p99, rps), recovered) = tokio::join!(pages, recovered);
    tokio::time::sleep(Duration::from_secs(2)).await;
    sampling.abort();
    let after = cached_objects(&l.base).await;
    json!({
        "kinds": kinds,
        "cached_before": before, "cached_after": after,
        "recovered_s": recovered.as_secs_f64(),
        "board_p50_ms": p50, "board_p99_ms": p99, "rps": rps,
        "rss_before_kib": rss_before,
        "rss_peak_kib": peak.load(std::sync::atomic::Ordering::Relaxed),
    })
}

/// Lookout's steady RSS watching `clusters` empty clusters (the cert-manager CRDs installed).
async fn empty_fleet_rss(bin: &Path, clusters: usize) -> u64 {
    let (f, _d, kc, token) = fleet(clusters, 0).await;
    let (l, _) = start_lookout(bin, &f, &kc).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (_, rss, _) = proc_stats(l.pid);
    l.stop().await;
    token.cancel();
    rss
}

/// The plot: ready time and steady RSS against the number of clusters, one line per binary.
fn svg(runs: &[Run]) -> String {
    let mut sizes: Vec<usize> = runs.iter().map(|r| r.clusters).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let mut names: Vec<String> = Vec::new();
    for r in runs {
        if !names.contains(&r.binary) {
            names.push(r.binary.clone());
        }
    }
    let (w, h, pad) = (360.0, 220.0, 48.0);
    let panel = |title: &str, unit: &str, value: &dyn Fn(&Run) -> f64, x0: f64| {
        let max = runs.iter().map(value).fold(0.0f64, f64::max).max(1e-9) * 1.1;
        let x = |i: usize| x0 + pad + (w - 2.0 * pad) * i as f64 / (sizes.len().max(2) - 1) as f64;
        let y = |v: f64| h - pad + 8.0 - (h - 2.0 * pad) * v / max;
        let mut s = format!(
            r##"<text x="{}" y="20" font-size="13" text-anchor="middle">{title}</text><line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#888"/><line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#888"/>"##,
            x0 + w / 2.0,
            x0 + pad,
            h - pad + 8.0,
            x0 + w - pad,
            h - pad + 8.0,
            x0 + pad,
            h - pad + 8.0,
            x0 + pad,
            pad - 8.0
        );
        for (i, n) in sizes.iter().enumerate() {
            s += &format!(
                r#"<text x="{}" y="{}" font-size="11" text-anchor="middle">{n}</text>"#,
                x(i),
                h - pad + 24.0
            );
        }
        s += &format!(
            r#"<text x="{}" y="{}" font-size="11" text-anchor="middle">clusters</text><text x="{}" y="{}" font-size="11" text-anchor="end">{:.0} {unit}</text><text x="{}" y="{}" font-size="11" text-anchor="end">0</text>"#,
            x0 + w / 2.0,
            h - 6.0,
            x0 + pad - 4.0,
            y(max / 1.1) + 4.0,
            max / 1.1,
            x0 + pad - 4.0,
            y(0.0) + 4.0
        );
        for (k, name) in names.iter().enumerate() {
            let colour = ["#1f6feb", "#d1242f"][k % 2];
            let points: Vec<String> = sizes
                .iter()
                .enumerate()
                .filter_map(|(i, n)| {
                    runs.iter()
                        .find(|r| &r.binary == name && r.clusters == *n)
                        .map(|r| format!("{:.1},{:.1}", x(i), y(value(r))))
                })
                .collect();
            s += &format!(
                r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"/>"#,
                points.join(" ")
            );
            for p in &points {
                let (px, py) = p.split_once(',').unwrap();
                s += &format!(r#"<circle cx="{px}" cy="{py}" r="3" fill="{colour}"/>"#);
            }
            s += &format!(
                r#"<text x="{}" y="{}" font-size="11" fill="{colour}">{name}</text>"#,
                x0 + pad + 6.0,
                pad + 6.0 + 14.0 * k as f64
            );
        }
        s
    };
    let ready = panel("ready after start (s)", "s", &|r: &Run| r.ready_s, 0.0);
    let rss = panel(
        "steady RSS (MiB)",
        "MiB",
        &|r: &Run| r.steady_rss_kib as f64 / 1024.0,
        w,
    );
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{h}" viewBox="0 0 {} {h}" font-family="sans-serif"><rect width="100%" height="100%" fill="white"/>{ready}{rss}</svg>
"#,
        2.0 * w,
        2.0 * w
    )
}

pub(super) async fn hundreds_bench(a: &Args) {
    let sizes: Vec<usize> = match (&a.sizes, a.quick) {
        (Some(s), _) => s.clone(),
        (None, true) => vec![2, 6],
        (None, false) => vec![10, 30, 100, 300],
    };
    let per = if a.quick { 30 } else { 300 };
    let largest = *sizes.last().unwrap();
    let mut out = json!({"quick": a.quick, "per_cluster": per, "fleets": []});
    let mut runs: Vec<Run> = Vec::new();
    println!("| measurement | value | target | |\n|---|---:|---|---|");
    let row = |what: String, value: String, target: &str, met: Option<bool>| {
        let verdict = match met {
            Some(true) => "met",
            Some(false) => "MISSED",
            None => "",
        };
        println!("| {what} | {value} | {target} | {verdict} |");
    };
    for &n in &sizes {
        let me = std::process::id();
        let (_, rss_before, _) = proc_stats(me);
        let generating = Instant::now();
        let (f, _d, kc, token) = fleet(n, per).await;
        let generated = generating.elapsed();
        let (_, rss_after, _) = proc_stats(me);
        row(
            format!("kubesim alone: {n} clusters × {per} Ingresses + {per} Certificates generated"),
            format!(
                "{:.1} s, +{} MiB RSS",
                generated.as_secs_f64(),
                rss_after.saturating_sub(rss_before) / 1024
            ),
            "",
            None,
        );
        // kubesim answers its first full reads of a fresh fleet much more slowly than later
        // ones (measured at 300 clusters, the same binary: 34.7 s, then 20.8 s, then 13.5 s):
        // unmeasured starts until one is within 15 % of the one before (four at most), so the
        // binaries are compared on equal terms and not by who reads first.
        let mut warm_ups = Vec::new();
        for _ in 0..4 {
            let (warm, warmed) = start_lookout(&a.lookout, &f, &kc).await;
            warm.stop().await;
            let settled = warm_ups
                .last()
                .is_some_and(|&before: &f64| warmed.as_secs_f64() >= 0.85 * before);
            warm_ups.push(warmed.as_secs_f64());
            if settled {
                break;
            }
        }
        row(
            format!("warm-up starts (not compared), {n} clusters"),
            warm_ups
                .iter()
                .map(|s| format!("{s:.1} s"))
                .collect::<Vec<_>>()
                .join(", "),
            "",
            None,
        );
        let mut fleet_json = json!({"clusters": n, "kubesim_generate_s": generated.as_secs_f64(),
            "kubesim_rss_kib": rss_after.saturating_sub(rss_before), "binaries": []});
        for (name, bin) in binaries(a) {
            let (l, ready) = start_lookout(bin.as_path(), &f, &kc).await;
            let (cpu, _, hwm) = proc_stats(l.pid);
            tokio::time::sleep(Duration::from_secs(3)).await;
            let (_, steady, _) = proc_stats(l.pid);
            let (_, board_p99, rps) = bounded(
                "board latency",
                MINUTES_5,
                latency(&l.base, "/", 64, if a.quick { 2.0 } else { 5.0 }),
            )
            .await;
            let change = bounded(
                "a change on the board",
                MINUTES_5,
                change_on_board(&l.base, &f, runs.len()),
            )
            .await;
            let run = Run {
                binary: name.clone(),
                clusters: n,
                ready_s: ready.as_secs_f64(),
                steady_rss_kib: steady,
                change_ms: change.as_secs_f64() * 1000.0,
            };
            let full = n >= 300;
            row(
                format!("{name}, {n} clusters: ready"),
                format!(
                    "{:.1} s, {cpu:.1} s CPU, {} MiB peak RSS",
                    run.ready_s,
                    hwm / 1024
                ),
                if full { "≤ 15 s" } else { "" },
                full.then_some(run.ready_s <= 15.0),
            );
            row(
                format!("{name}, {n} clusters: steady RSS"),
                format!("{} MiB", steady / 1024),
                if full { "≤ 300 MiB" } else { "" },
                full.then_some(steady <= 300 * 1024),
            );
            row(
                format!("{name}, {n} clusters: triage board at 64 clients"),
                format!("p99 {board_p99:.1} ms, {rps:.0} req/s"),
                "p99 ≤ 25 ms",
                Some(board_p99 <= 25.0),
            );
            row(
                format!("{name}, {n} clusters: a change in the last cluster on the board"),
                format!("{:.0} ms", run.change_ms),
                "≤ 1 s",
                Some(run.change_ms <= 1000.0),
            );
            let mut bin_json = json!({"binary": name, "ready_s": run.ready_s, "cpu_s": cpu,
                "peak_rss_kib": hwm, "steady_rss_kib": steady, "board_p99_ms": board_p99,
                "board_rps": rps, "change_ms": run.change_ms});
            if n == largest {
                let clients = if a.quick { 200 } else { 1_000 };
                let (_, sse_p99, delivered) =
                    bounded("SSE delivery", MINUTES_5, sse(&l.base, &f, clients, 10)).await;
                row(
                    format!("{name}, {n} clusters: SSE delivery to {clients} clients"),
                    format!("p99 {sse_p99:.0} ms ({delivered} deliveries)"),
                    "p99 ≤ 50 ms",
                    Some(sse_p99 <= 50.0 && delivered == clients * 10),
                );
                bin_json["sse"] =
                    json!({"clients": clients, "p99_ms": sse_p99, "delivered": delivered});
                let storm = bounded("relist storm", MINUTES_5, relist_storm(&l, &f)).await;
                let lost = storm["cached_after"].as_u64() < storm["cached_before"].as_u64();
                row(
                    format!("{name}, {n} clusters: relist storm (every watch expired at once)"),
                    format!(
                        "board p99 {:.1} ms while recovering ({:.1} s); {} → {} cached objects; RSS {} → peak {} MiB",
                        storm["board_p99_ms"].as_f64().unwrap(),
                        storm["recovered_s"].as_f64().unwrap(),
                        storm["cached_before"],
                        storm["cached_after"],
                        storm["rss_before_kib"].as_u64().unwrap() / 1024,
                        storm["rss_peak_kib"].as_u64().unwrap() / 1024
                    ),
                    "p99 ≤ 100 ms, nothing lost",
                    Some(storm["board_p99_ms"].as_f64().unwrap() <= 100.0 && !lost),
                );
                bin_json["relist_storm"] = storm;
            }
            l.stop().await;
            fleet_json["binaries"]
                .as_array_mut()
                .unwrap()
                .push(bin_json);
            runs.push(run);
        }
        out["fleets"].as_array_mut().unwrap().push(fleet_json);
        token.cancel();
        drop(f);
    }
    // The fixed cost of a cluster: empty clusters, one against the largest fleet.
    for (name, bin) in binaries(a) {
        let one = empty_fleet_rss(&bin, 1).await;
        let many = empty_fleet_rss(&bin, largest).await;
        let per_cluster = many.saturating_sub(one) as f64 / (largest - 1).max(1) as f64;
        row(
            format!("{name}: fixed cost per cluster ({largest} empty clusters against 1)"),
            format!(
                "{per_cluster:.0} KiB ({} → {} MiB RSS)",
                one / 1024,
                many / 1024
            ),
            "≤ 150 KiB",
            Some(per_cluster <= 150.0),
        );
        out["fixed_cost"][&name] = json!({"one_kib": one, "many_kib": many, "clusters": largest, "per_cluster_kib": per_cluster});
    }
    let plot = a.json.with_file_name("hundreds.svg");
    if let Some(dir) = a.json.parent() {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(&plot, svg(&runs)).unwrap();
    let json_path = a.json.with_file_name("hundreds.json");
    std::fs::write(&json_path, serde_json::to_string_pretty(&out).unwrap()).unwrap();
    println!(
        "\nJSON written to {}, the plot to {}",
        json_path.display(),
        plot.display()
    );
}

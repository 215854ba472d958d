//! The measurements: process and memory statistics, page latency, SSE delivery, the
//! kubectl comparison.

use super::*;

/// CPU seconds, resident and peak resident memory (KiB) of a process, from /proc.
pub(super) fn proc_stats(pid: u32) -> (f64, u64, u64) {
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

/// Open file descriptors of a process.
pub(super) fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// Lookout's `/metrics` text, read once for several values.
pub(super) struct Metrics(String);

impl Metrics {
    pub(super) async fn of(base: &str) -> Metrics {
        Metrics(
            reqwest::get(format!("{base}/metrics"))
                .await
                .unwrap()
                .text()
                .await
                .unwrap(),
        )
    }

    fn value(line: &str) -> u64 {
        line.rsplit(' ').next().unwrap().parse::<u64>().unwrap()
    }

    /// The sum of a family's labelled series (`name{…} v`).
    pub(super) fn sum(&self, name: &str) -> u64 {
        let prefix = format!("{name}{{");
        self.0
            .lines()
            .filter(|l| l.starts_with(&prefix))
            .map(Self::value)
            .sum()
    }

    /// An unlabelled series (`name v`), 0 when absent.
    pub(super) fn gauge(&self, name: &str) -> u64 {
        self.0
            .lines()
            .find(|l| l.strip_prefix(name).is_some_and(|r| r.starts_with(' ')))
            .map_or(0, Self::value)
    }
}

/// What Lookout says it caches (every kind), its heap in use, jemalloc's resident bytes and
/// SQLite's memory, from `/metrics`.
pub(super) async fn cached(base: &str) -> (u64, u64, u64, u64) {
    let m = Metrics::of(base).await;
    (
        m.sum("lookout_cached_objects"),
        m.gauge("lookout_heap_bytes"),
        m.gauge("lookout_heap_resident_bytes"),
        m.gauge("lookout_sqlite_memory_bytes"),
    )
}

/// Deletes the fleet's ClusterIssuer and waits until Lookout reports at least `expected`
/// findings; returns how many.
pub(super) async fn failing(base: &str, cluster: &kubesim::store::Cluster, expected: usize) -> u64 {
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
pub(super) async fn memory(l: &Lookout, base_rss: u64, ingresses_and_certificates: usize) -> Value {
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

pub(super) fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

/// `concurrency` clients GET `path` in a loop for `seconds`: p50, p99 (ms) and requests/s.
pub(super) async fn latency(
    base: &str,
    path: &str,
    concurrency: usize,
    seconds: f64,
) -> (f64, f64, f64) {
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

/// Runs one step of the benchmark and fails, naming it, when it takes longer than `bound`:
/// the benchmark never waits for ever.
pub(super) async fn bounded<T>(
    step: &str,
    bound: Duration,
    work: impl std::future::Future<Output = T>,
) -> T {
    match tokio::time::timeout(bound, work).await {
        Ok(v) => v,
        Err(_) => panic!("benchmark step {step:?} did not complete within {bound:?}"),
    }
}

/// `clients` SSE streams; `changes` Ingresses created one at a time: the time from each
/// write to each client's next message (p50, p99 in ms).
pub(super) async fn sse(
    base: &str,
    fleet: &Fleet,
    clients: usize,
    changes: usize,
) -> (f64, f64, usize) {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(usize, Instant)>();
    let mut tasks = Vec::new();
    // Each stream says once whether it opened: Ok when its first message came, or why not.
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::unbounded_channel::<Result<(), String>>();
    for i in 0..clients {
        let (client, tx, ready) = (client.clone(), tx.clone(), ready_tx.clone());
        let url = format!("{base}/api/v1/events");
        tasks.push(tokio::spawn(async move {
            let response = match client.get(url).send().await {
                Ok(r) if r.status().is_success() => r,
                Ok(r) => {
                    let status = r.status();
                    let body = r.text().await.unwrap_or_default();
                    let _ = ready.send(Err(format!("stream {i} refused: {status} {body}")));
                    return;
                }
                Err(e) => {
                    let _ = ready.send(Err(format!("stream {i} failed: {e}")));
                    return;
                }
            };
            let mut body = response.bytes_stream();
            let mut first = true;
            while let Some(Ok(chunk)) = body.next().await {
                if String::from_utf8_lossy(&chunk).contains("event: change") {
                    if first {
                        first = false;
                        let _ = ready.send(Ok(()));
                    } else if tx.send((i, Instant::now())).is_err() {
                        return;
                    }
                }
            }
        }));
    }
    // Every stream open within a minute, or the step fails with the first reason.
    let opened = tokio::time::timeout(Duration::from_secs(60), async {
        for n in 0..clients {
            match ready_rx.recv().await {
                Some(Ok(())) => {}
                Some(Err(why)) => return Err(format!("{n} of {clients} streams open; {why}")),
                None => return Err(format!("{n} of {clients} streams open; the rest ended")),
            }
        }
        Ok(())
    })
    .await;
    match opened {
        Ok(Ok(())) => {}
        Ok(Err(why)) => panic!("SSE step: {why}"),
        Err(_) => panic!("SSE step: not every one of {clients} streams opened within 60 s"),
    }
    let cluster = &fleet.clusters[0].cluster;
    let rt = cluster.resolve("networking.k8s.io", "ingresses").unwrap();
    // Runs on the same fleet (two binaries side by side) write other names.
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut delays = Vec::new();
    for n in 0..changes {
        // Let the previous coalescing window pass and drain what it sent.
        tokio::time::sleep(Duration::from_millis(600)).await;
        while rx.try_recv().is_ok() {}
        let written = Instant::now();
        cluster
            .create(&rt, Some("tenant-0"), json!({"metadata": {"name": format!("sse-{n}-{run}")}, "spec": {"rules": [{"host": format!("sse-{n}-{run}.example.com")}]}}), &kubesim::WriteOpts::system())
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
pub(super) async fn by_host(
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

/// Decoding alone: the lists of Ingresses, Certificates and CertificateRequests of every
/// cluster in `kubeconfig` (the objects a start spends its time on), read in pages of 100
/// as Lookout reads them, then decoded on one thread as kube decodes a page
/// (`ObjectList<DynamicObject>`). Returns (objects, bytes, seconds of decoding).
pub(crate) async fn decode_alone(kubeconfig: &Path, contexts: &[String]) -> (usize, usize, f64) {
    let kinds = [
        "/apis/networking.k8s.io/v1/ingresses",
        "/apis/cert-manager.io/v1/certificates",
        "/apis/cert-manager.io/v1/certificaterequests",
    ];
    let file = kube::config::Kubeconfig::read_from(kubeconfig).unwrap();
    let mut pages = Vec::new();
    for context in contexts {
        let options = kube::config::KubeConfigOptions {
            context: Some(context.clone()),
            ..Default::default()
        };
        let config = kube::Config::from_custom_kubeconfig(file.clone(), &options)
            .await
            .unwrap();
        let client = kube::Client::try_from(config).unwrap();
        for path in kinds {
            let mut next: Option<String> = None;
            loop {
                let mut uri = format!("{path}?limit=100");
                if let Some(c) = &next {
                    uri.push_str(&format!("&continue={c}"));
                }
                let request = http::Request::get(uri).body(Vec::new()).unwrap();
                let text = client.request_text(request).await.unwrap();
                let page: Value = serde_json::from_str(&text).unwrap();
                next = page["metadata"]["continue"]
                    .as_str()
                    .filter(|c| !c.is_empty())
                    .map(str::to_string);
                pages.push(text);
                if next.is_none() {
                    break;
                }
            }
        }
    }
    let bytes = pages.iter().map(String::len).sum();
    let started = Instant::now();
    let mut objects = 0;
    for page in &pages {
        let list: kube::core::ObjectList<kube::api::DynamicObject> =
            serde_json::from_str(page).unwrap();
        objects += list.items.len();
    }
    (objects, bytes, started.elapsed().as_secs_f64())
}

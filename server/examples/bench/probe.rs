//! The probe benchmark (`bash scripts/bench.sh --probe`): kubesim's listeners serve 10,000
//! hosts with real certificates on one IPv4 address and `::1`; `lookout serve` probes them
//! with the default concurrency, spacing and timeout. Measured: one full round (time, and
//! Lookout's CPU and memory over it), and the Ingress list's latency at 64 clients with the
//! probe off and then with rounds running back to back, in one run.

use super::*;

/// Two free ports on loopback.
fn free_ports() -> kubesim::sim::edge::EdgePorts {
    let a = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let b = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    kubesim::sim::edge::EdgePorts {
        https: a.local_addr().unwrap().port(),
        http: b.local_addr().unwrap().port(),
    }
}

/// The probe's counters from `/api/v1/probes` (one host asked, to keep the answer small).
async fn round(base: &str) -> Value {
    let v: Value = reqwest::get(format!(
        "{base}/api/v1/probes?host=app-0.tenant-0.example.com"
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    v["round"].clone()
}

async fn rounds_reach(base: &str, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(600);
    while round(base).await["rounds"].as_u64().unwrap_or(0) < n {
        assert!(
            Instant::now() < deadline,
            "no probe round {n} within 10 minutes"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub(super) async fn probe_bench(a: &Args) {
    let hosts = if a.quick { 500 } else { 10_000 };
    let token = CancellationToken::new();
    let ports = free_ports();
    let fleet = Fleet::start(
        &FleetOptions {
            edge: Some(ports),
            ..FleetOptions::numbered(1)
        },
        Arc::new(Clock::Real),
        token.clone(),
    )
    .await
    .unwrap();
    let t = Instant::now();
    kubesim::sim::scale::populate_served(
        &fleet.clusters[0].cluster,
        10,
        hosts,
        &["127.1.10.1", "::1"],
    );
    let populated = t.elapsed();
    // kubesim's listeners pick the addresses up within a tick.
    let deadline = Instant::now() + Duration::from_secs(60);
    while tokio::net::TcpStream::connect(("127.1.10.1", ports.https))
        .await
        .is_err()
    {
        assert!(
            Instant::now() < deadline,
            "kubesim's listeners did not start"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    fleet.write_kubeconfig(&kubeconfig).unwrap();
    let ca = dir.path().join("kubesim-root.pem");
    std::fs::write(&ca, kubesim::sim::pki::production_root_pem()).unwrap();
    let probe = format!(
        "[probe]\ninterval = \"10s\"\nhttps_port = {}\nhttp_port = {}\nallow = [\"127.0.0.0/8\", \"::1/128\"]\nca_file = \"{}\"\n",
        ports.https,
        ports.http,
        ca.display()
    );

    println!("| measurement | value | target | |\n|---|---:|---|---|");
    println!("| hosts served by kubesim (IPv4 + IPv6 each) | {hosts} (signed and populated in {:.1} s) | 10,000 | |", populated.as_secs_f64());
    let path = "/ingresses?cluster=sim-1";
    let mut latencies = Vec::new();
    for on in [false, true] {
        let extra = if on {
            probe.as_str()
        } else {
            "[probe]\nenabled = false\n"
        };
        let (l, _) = start_lookout_with(&a.lookout, &fleet, &kubeconfig, extra).await;
        if on {
            rounds_reach(&l.base, 1).await;
            let (cpu0, rss0, _) = proc_stats(l.pid);
            let first = round(&l.base).await;
            rounds_reach(&l.base, 2).await;
            let (cpu1, rss1, hwm) = proc_stats(l.pid);
            let second = round(&l.base).await;
            let seconds = second["seconds"].as_f64().unwrap();
            println!(
                "| one full round: {} hosts × 2 families, default concurrency (256), spacing (100 ms) and timeout (5 s) | {seconds:.1} s (first round {:.1} s); {} served, {} failed | ≤ 60 s | {} |",
                hosts,
                first["seconds"].as_f64().unwrap(),
                second["probed"].as_u64().unwrap() - second["failed"].as_u64().unwrap(),
                second["failed"],
                if seconds <= 60.0 { "met" } else { "MISSED" }
            );
            println!(
                "| Lookout's cost of that round (between the ends of rounds 1 and 2) | {:.1} CPU s; RSS {} → {} MiB (peak {} MiB) | | |",
                cpu1 - cpu0,
                rss0 / 1024,
                rss1 / 1024,
                hwm / 1024
            );
        }
        let (p50, p99, rps) = latency(&l.base, path, 64, 10.0).await;
        let (_, rss, _) = proc_stats(l.pid);
        println!(
            "| `{path}` at 64 clients, probe {} | p50 {p50:.1} ms, p99 {p99:.1} ms, {rps:.0} req/s; RSS {} MiB | unchanged by the probe | |",
            if on { "on (a round every 10 s)" } else { "off" },
            rss / 1024
        );
        latencies.push(p99);
        l.stop().await;
    }
    println!(
        "| p99 with the probe / without | {:.2}× | ≈ 1 | |",
        latencies[1] / latencies[0].max(0.001)
    );
    token.cancel();
}

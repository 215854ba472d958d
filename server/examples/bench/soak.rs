//! The soak run.

use super::*;

/// The soak: 2,000 Ingresses with their chains, then for `minutes` a steady churn — an
/// Ingress created and an old one deleted, a Challenge created and an old one deleted (the
/// history writer records both), watches dropped every minute and a 410 relist every five —
/// while a client reads pages. RSS, heap and open descriptors are sampled every 15 s.
pub(super) async fn soak(a: &Args, minutes: f64) {
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

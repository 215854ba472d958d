//! The probe worker of `lookout serve`: every `probe.interval`, each TLS host of each
//! probed cluster on each address its Ingress or Gateway publishes — TLS with SNI = the host
//! on `https_port`, then the ACME path on `http_port` — `concurrency` hosts at once, a host's
//! addresses one after another `spacing` apart. Each cluster's observations replace its
//! previous ones (the `probe.*` rules read them); an outcome that changed is stored.
//! Between rounds, a host whose objects changed (a certificate issued, a fix applied, an
//! address moved) is probed again at once and once more shortly after, so what clients get
//! follows the cluster rather than the round's timer.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::store::Pool;
use chrono::{DateTime, Utc};
use futures::StreamExt;
use lookout_app::model::probe::{targets, Observation, ProbeSource, Target};
use tokio_util::sync::CancellationToken;

use super::policy::Networks;
use super::tls::Roots;
use super::{acme, tls, ProxyHeader};
use crate::clock::Now;
use crate::clusters::ClusterRecord;
use crate::config::{ProbeConfig, ProxySetting};

/// The probe's settings, read from `[probe]`.
#[derive(Clone)]
pub struct Settings {
    pub interval: Duration,
    pub spacing: Duration,
    pub concurrency: usize,
    pub timeout: Duration,
    pub https_port: u16,
    pub http_port: u16,
    pub proxy: Option<ProxyHeader>,
    pub networks: Networks,
    pub roots: Roots,
}

impl Settings {
    /// From a validated `[probe]`; the CA file is read here.
    pub fn from_config(c: &ProbeConfig) -> Result<Self, String> {
        let nets = |list: &[String]| -> Result<Vec<ipnet::IpNet>, String> {
            list.iter()
                .map(|n| n.parse().map_err(|_| format!("{n:?} is not a network")))
                .collect()
        };
        let mut roots = Roots::system();
        if let Some(path) = &c.ca_file {
            let pem = std::fs::read(path)
                .map_err(|e| format!("probe.ca_file: cannot read {}: {e}", path.display()))?;
            roots = roots
                .with_pem(&pem)
                .map_err(|e| format!("probe.ca_file: {}: {e}", path.display()))?;
        }
        Ok(Settings {
            interval: c.interval,
            spacing: c.spacing,
            concurrency: c.concurrency.max(1),
            timeout: c.timeout,
            https_port: c.https_port,
            http_port: c.http_port,
            proxy: match c.proxy_protocol {
                ProxySetting::Off => None,
                ProxySetting::V1 => Some(ProxyHeader::V1),
                ProxySetting::V2 => Some(ProxyHeader::V2),
            },
            networks: Networks {
                allow: nets(&c.allow)?,
                deny: nets(&c.deny)?,
            },
            roots,
        })
    }
}

/// The probe as `lookout serve` runs it: its settings and the clusters it probes.
pub struct ProbeParts {
    pub settings: Settings,
    /// Names of the clusters probed (`clusters[].probe`).
    pub clusters: Vec<String>,
}

impl ProbeParts {
    /// From the configuration: None when `[probe] enabled = false`.
    pub fn from_config(c: &crate::config::Config) -> Result<Option<Self>, String> {
        if !c.probe.enabled {
            return Ok(None);
        }
        Ok(Some(ProbeParts {
            settings: Settings::from_config(&c.probe)?,
            clusters: c
                .clusters
                .iter()
                .filter(|k| k.probe)
                .map(|k| k.name.clone())
                .collect(),
        }))
    }
}

pub use crate::clusters::probes::{ProbeStatus, RoundStats};

/// What the probe last saw per (cluster, host, address): since when, and a digest of the
/// outcome (comparing digests keeps 20,000 addresses' outcomes out of memory).
type Known = HashMap<(usize, String, IpAddr), (DateTime<Utc>, [u8; 32])>;

fn digest(outcome: &str) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(outcome.as_bytes()).into()
}

/// One host of one cluster, with its addresses.
struct HostJob {
    cluster: usize,
    host: String,
    addresses: Vec<(IpAddr, Vec<ProbeSource>)>,
}

/// Runs rounds until shutdown.
pub(crate) async fn run(
    settings: Settings,
    clusters: Vec<Arc<ClusterRecord>>,
    pool: Option<Pool>,
    now: Now,
    status: Arc<ProbeStatus>,
    shutdown: CancellationToken,
) {
    // Start from what is stored, so a restart neither stores a change nor resets "since".
    let mut known: Known = HashMap::new();
    if let Some(pool) = &pool {
        for (i, c) in clusters.iter().enumerate() {
            match crate::store::probes::latest(pool, &c.name).await {
                Ok(rows) => {
                    for (host, address, at, outcome) in rows {
                        if let Ok(ip) = address.parse() {
                            known.insert((i, host, ip), (at, digest(&outcome)));
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(cluster = %c.name, error = %e, "stored probe results could not be read")
                }
            }
        }
    }
    // The first round once the clusters have listed what they publish (or failed to), so
    // that it probes the whole fleet — at most one interval later.
    let synced = tokio::time::Instant::now() + settings.interval;
    while !clusters.iter().all(|c| c.settled()) && tokio::time::Instant::now() < synced {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(Duration::from_millis(200)) => {}
        }
    }
    let mut tick = tokio::time::interval(settings.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut recheck = tokio::time::interval(RECHECK_EVERY);
    recheck.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut changes = Changes::new(clusters.len());
    loop {
        let only = tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tick.tick() => {
                // A full round covers whatever was due.
                changes.due.clear();
                None
            }
            _ = recheck.tick() => {
                changes.look(&clusters);
                match changes.take_due() {
                    Some(hosts) => Some(hosts),
                    None => continue,
                }
            }
        };
        let round = tokio::select! {
            _ = shutdown.cancelled() => return,
            r = round(&settings, &clusters, &now, &mut known, only.as_ref()) => r,
        };
        let (observations, mut stats) = round;
        for (i, c) in clusters.iter().enumerate() {
            let mut mine: Vec<Observation> = Vec::new();
            let mut changed: Vec<usize> = Vec::new();
            for (cluster, o, is_new) in &observations {
                if *cluster == i {
                    if *is_new {
                        changed.push(mine.len());
                    }
                    mine.push(o.clone());
                }
            }
            // A recheck of some hosts keeps what the last round saw of the others.
            if let Some(only) = &only {
                if !only.iter().any(|(k, _)| *k == i) {
                    continue;
                }
                let kept: Vec<Observation> = c.read(|d| {
                    d.probes
                        .iter()
                        .filter(|o| !only.contains(&(i, o.host.clone())))
                        .cloned()
                        .collect()
                });
                let fresh = std::mem::replace(&mut mine, kept);
                let offset = mine.len();
                changed.iter_mut().for_each(|k| *k += offset);
                mine.extend(fresh);
            }
            let gone = c.read(|d| d.probes.len()) != mine.len();
            if changed.is_empty() && !gone {
                continue;
            }
            if let Some(pool) = &pool {
                let list: Vec<&Observation> = changed.iter().map(|&k| &mine[k]).collect();
                if let Err(e) = crate::store::probes::record(pool, &c.name, &list).await {
                    tracing::warn!(cluster = %c.name, error = %e, "probe results could not be stored");
                }
            }
            let namespaces: HashSet<String> = changed
                .iter()
                .flat_map(|&k| mine[k].sources.iter().map(|s| s.namespace.clone()))
                .collect();
            mine.sort_by(|a, b| (&a.host, a.address).cmp(&(&b.host, b.address)));
            let namespaces: Vec<&str> = namespaces.iter().map(String::as_str).collect();
            c.observed(mine, &namespaces, gone);
        }
        if only.is_some() {
            // Rechecks are not rounds: the round statistics stay the full rounds'.
            continue;
        }
        stats.finished = Some(now());
        let mut last = status.last.lock().expect("probe status lock");
        stats.rounds = last.rounds + 1;
        stats.probes_total = last.probes_total + stats.probed as u64;
        stats.probe_seconds_total = last.probe_seconds_total + stats.probe_seconds;
        *last = stats;
    }
}

/// How often the worker looks for hosts whose objects changed.
const RECHECK_EVERY: Duration = Duration::from_secs(1);
/// After a change, a host is probed again at once and once more this much later: a load
/// balancer may take a moment to load a renewed Secret.
const RECHECK_AGAIN_AFTER: Duration = Duration::from_secs(15);
/// At most this many hosts in one recheck (the rest wait for the next).
const RECHECK_MAX_HOSTS: usize = 64;

/// The hosts whose objects changed since the probe last looked, and when to probe them.
struct Changes {
    /// Per cluster: the data generation last looked at and each host's signature then.
    seen: Vec<Option<(u64, HashMap<String, u64>)>>,
    /// (cluster, host) → when it is due (de-duplicated: the earliest wins).
    due: HashMap<(usize, String), tokio::time::Instant>,
}

impl Changes {
    fn new(clusters: usize) -> Self {
        Changes {
            seen: vec![None; clusters],
            due: HashMap::new(),
        }
    }

    /// Compares each changed cluster's hosts with what they were; a host that changed (or
    /// appeared) is due now and again a little later. The first look only remembers.
    fn look(&mut self, clusters: &[Arc<ClusterRecord>]) {
        let now = tokio::time::Instant::now();
        for (i, c) in clusters.iter().enumerate() {
            let generation = c.generation();
            if self.seen[i].as_ref().is_some_and(|(g, _)| *g == generation) {
                continue;
            }
            let fresh = c.read(lookout_app::model::probe::serving_signatures);
            if let Some((_, before)) = &self.seen[i] {
                for (host, sig) in &fresh {
                    if before.get(host) != Some(sig) {
                        for at in [now, now + RECHECK_AGAIN_AFTER] {
                            self.due
                                .insert((i, format!("{host}\0{}", at_key(at, now))), at);
                        }
                    }
                }
            }
            self.seen[i] = Some((generation, fresh));
        }
    }

    /// The hosts due now (at most [`RECHECK_MAX_HOSTS`]), or None.
    fn take_due(&mut self) -> Option<HashSet<(usize, String)>> {
        let now = tokio::time::Instant::now();
        let ready: Vec<(usize, String)> = self
            .due
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(k, _)| k.clone())
            .take(RECHECK_MAX_HOSTS)
            .collect();
        if ready.is_empty() {
            return None;
        }
        let mut hosts = HashSet::new();
        for key in ready {
            self.due.remove(&key);
            let host = key.1.split('\0').next().unwrap_or_default().to_string();
            hosts.insert((key.0, host));
        }
        Some(hosts)
    }
}

/// Which of a change's two rechecks a due entry is (now, or the later one), so that both
/// are kept side by side.
fn at_key(at: tokio::time::Instant, now: tokio::time::Instant) -> u8 {
    u8::from(at > now)
}

/// One round over every cluster: (cluster, observation, whether its outcome is new).
async fn round(
    s: &Settings,
    clusters: &[Arc<ClusterRecord>],
    now: &Now,
    known: &mut Known,
    only: Option<&HashSet<(usize, String)>>,
) -> (Vec<(usize, Observation, bool)>, RoundStats) {
    let started = Instant::now();
    let mut stats = RoundStats::default();
    let mut jobs: Vec<HostJob> = Vec::new();
    for (i, c) in clusters.iter().enumerate() {
        if only.is_some_and(|o| !o.iter().any(|(k, _)| *k == i)) {
            continue;
        }
        let mut list: Vec<Target> = c.read(targets);
        if let Some(only) = only {
            list.retain(|t| only.contains(&(i, t.host.clone())));
        }
        let mut by_host: Vec<HostJob> = Vec::new();
        for t in list {
            let ips = match t.address.parse::<IpAddr>() {
                Ok(ip) => vec![ip],
                Err(_) => resolve(&t.address, s.timeout).await,
            };
            for ip in ips {
                // Only what a watched object published (or its hostname resolved to), within
                // the allowed networks.
                if let Err(why) = s.networks.permits(ip) {
                    tracing::debug!(cluster = %c.name, host = %t.host, address = %ip, %why, "address not probed");
                    stats.refused += 1;
                    continue;
                }
                match by_host.last_mut() {
                    Some(j) if j.host == t.host => j.addresses.push((ip, t.sources.clone())),
                    _ => by_host.push(HostJob {
                        cluster: i,
                        host: t.host.clone(),
                        addresses: vec![(ip, t.sources.clone())],
                    }),
                }
            }
        }
        jobs.extend(by_host);
    }
    let token = format!("lookout-probe-{}", uuid::Uuid::new_v4().simple());
    let results: Vec<Vec<(usize, Observation, f64)>> = futures::stream::iter(jobs)
        .map(|job| probe_host(s, job, &token, now))
        .buffer_unordered(s.concurrency)
        .collect()
        .await;
    let mut out = Vec::new();
    for (cluster, mut o, took) in results.into_iter().flatten() {
        stats.probed += 1;
        stats.probe_seconds += took;
        if o.tls.is_none() {
            stats.failed += 1;
        }
        let outcome = digest(&o.outcome());
        let key = (cluster, o.host.clone(), o.address);
        let is_new = match known.get(&key) {
            Some((since, previous)) if *previous == outcome => {
                o.since = *since;
                false
            }
            _ => {
                known.insert(key, (o.since, outcome));
                true
            }
        };
        out.push((cluster, o, is_new));
    }
    out.sort_by(|a, b| (a.0, &a.1.host, a.1.address).cmp(&(b.0, &b.1.host, b.1.address)));
    stats.seconds = started.elapsed().as_secs_f64();
    (out, stats)
}

/// The addresses a published hostname resolves to (none when it does not resolve in time).
async fn resolve(name: &str, timeout: Duration) -> Vec<IpAddr> {
    match tokio::time::timeout(timeout, tokio::net::lookup_host((name, 0))).await {
        Ok(Ok(addrs)) => {
            let mut ips: Vec<IpAddr> = addrs.map(|a| a.ip()).collect();
            ips.sort();
            ips.dedup();
            ips
        }
        _ => Vec::new(),
    }
}

/// Probes one host on each of its addresses, `spacing` apart.
async fn probe_host(
    s: &Settings,
    job: HostJob,
    token: &str,
    now: &Now,
) -> Vec<(usize, Observation, f64)> {
    let mut out = Vec::with_capacity(job.addresses.len());
    for (n, (ip, sources)) in job.addresses.into_iter().enumerate() {
        if n > 0 && !s.spacing.is_zero() {
            tokio::time::sleep(s.spacing).await;
        }
        let started = Instant::now();
        let o = probe_address(s, &job.host, ip, sources, token, now()).await;
        out.push((job.cluster, o, started.elapsed().as_secs_f64()));
    }
    out
}

/// TLS then the ACME path on one address. A connection dropped before the handshake is
/// tried once more with a PROXY v1 header, unless the settings send one anyway: when that
/// one is answered, the load balancer expects PROXY protocol.
pub(crate) async fn probe_address(
    s: &Settings,
    host: &str,
    ip: IpAddr,
    sources: Vec<ProbeSource>,
    token: &str,
    at: DateTime<Utc>,
) -> Observation {
    let https = SocketAddr::new(ip, s.https_port);
    let mut needs_proxy_header = false;
    let now = rustls::pki_types::UnixTime::since_unix_epoch(Duration::from_secs(
        u64::try_from(at.timestamp()).unwrap_or_default(),
    ));
    let served = match tls::served_at(https, host, s.timeout, s.proxy, &s.roots, now).await {
        Err(e) if s.proxy.is_none() && e.dropped_before_answer() => {
            match tls::served_at(https, host, s.timeout, Some(ProxyHeader::V1), &s.roots, now).await
            {
                Ok(t) => {
                    needs_proxy_header = true;
                    Ok(t)
                }
                Err(_) => Err(e),
            }
        }
        r => r,
    };
    let header = s.proxy.or(needs_proxy_header.then_some(ProxyHeader::V1));
    let path = acme::acme_path(
        SocketAddr::new(ip, s.http_port),
        host,
        token,
        s.timeout,
        header,
    )
    .await;
    let (tls, tls_error) = match served {
        Ok(t) => (Some(t), None),
        Err(e) => (None, Some(e)),
    };
    let (acme, acme_error) = match path {
        Ok(a) => (Some(a), None),
        Err(e) => (None, Some(e)),
    };
    Observation {
        host: host.to_string(),
        address: ip,
        sources,
        since: at,
        tls,
        tls_error,
        needs_proxy_header,
        acme,
        acme_error,
    }
}

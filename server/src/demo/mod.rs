//! `lookout demo`: starts kubesim in-process with three clusters and its cert-manager,
//! Cilium and Let's Encrypt controllers on an accelerated clock, seeds the stories of
//! [`scenarios`] through the Kubernetes API, and serves the dashboard against them with a
//! temporary SQLite file.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use anyhow::Context;
use kubesim::{Clock, Fleet, FleetOptions};
use tokio_util::sync::CancellationToken;

use crate::app;
use crate::clusters;
use crate::config::ClusterConfig;
use crate::store::Db;

mod gateways;
mod platform;
mod policies;
mod scenarios;
mod seeder;
mod week;

/// The simulated clusters of the demo fleet.
pub const CLUSTERS: [&str; 3] = ["zrh-prod", "gva-prod", "lab-dev"];

/// A fourth configured cluster that cannot be reached, to show what that looks like.
pub const UNREACHABLE: &str = "fra-edge";

/// How much faster than real time the simulated clusters run.
pub const SPEED: f64 = 60.0;

/// A kubeconfig for a cluster whose port refuses connections.
fn unreachable_kubeconfig(path: &std::path::Path) -> anyhow::Result<()> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    std::fs::write(
        path,
        format!("apiVersion: v1\nkind: Config\nclusters:\n- name: {UNREACHABLE}\n  cluster:\n    server: http://127.0.0.1:{port}\ncontexts:\n- name: {UNREACHABLE}\n  context:\n    cluster: {UNREACHABLE}\n    user: demo\nusers:\n- name: demo\n  user:\n    token: demo\ncurrent-context: {UNREACHABLE}\n"),
    )?;
    Ok(())
}

/// Runs the demo until `shutdown`.
pub async fn run(listen: SocketAddr, shutdown: CancellationToken) -> anyhow::Result<()> {
    // Bind first: a busy port should fail before anything is started.
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    let dir = tempfile::Builder::new()
        .prefix("lookout-demo-")
        .tempdir()
        .context("creating a temporary directory")?;
    // kubesim's Cilium serves the load balancers on loopback, on two free ports.
    let edge = free_ports().context("finding two free ports for kubesim's listeners")?;
    let options = FleetOptions {
        names: CLUSTERS.iter().map(|s| s.to_string()).collect(),
        bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
        base_port: 0,
        install_crds: true,
        // Espejote and Kyverno are installed in one cluster only (see the scenario).
        policy_crds: false,
        controllers: true,
        tick: std::time::Duration::from_millis(250),
        seed: 42,
        edge: Some(edge),
        // The demo's kubeconfig is the admin's; the API servers still authorize every
        // request, as real ones do.
        authorize: true,
        tls: true,
        // As on a real cluster, a deleted object's dependents go a little later (the garbage
        // collector): a restarted request meets its predecessor's Order for a while.
        gc_delay: Some(chrono::Duration::seconds(30)),
        // cert-manager's default: no default issuer, so `kubernetes.io/tls-acme` alone is
        // refused.
        default_issuer: None,
        // approver-policy's two refusals: a request no policy applies to stays unapproved,
        // one a policy refuses is denied.
        approver: kubesim::sim::approver::Approver {
            unapproved: vec!["team-ml/mlflow-tls-*".into()],
            deny: vec!["acme-shop/partners-tls-*".into()],
        },
        // A firewall in front of one host admits Let's Encrypt's primary vantage point only.
        remote_blocked: vec!["extranet.globex.example".into()],
        // cert-manager's default.
        max_concurrent_challenges: kubesim::sim::issuance::scheduler::DEFAULT_MAX_CONCURRENT,
    };
    let clock = Arc::new(Clock::accelerated(SPEED));
    let fleet = Fleet::start(&options, clock.clone(), shutdown.clone())
        .await
        .context("starting kubesim")?;
    // Espejote (and Kyverno's kinds) in gva-prod, whose platform sets edit-in-place by policy.
    kubesim::fleet::install_policy_crds(
        &fleet
            .cluster("gva-prod")
            .context("the demo's gva-prod cluster")?
            .cluster,
    );
    let kubeconfig = dir.path().join("kubeconfig");
    fleet.write_kubeconfig(&kubeconfig)?;
    let dead = dir.path().join("unreachable.kubeconfig");
    unreachable_kubeconfig(&dead)?;
    let mut configs: Vec<ClusterConfig> = CLUSTERS
        .iter()
        .map(|name| ClusterConfig {
            production: *name != "lab-dev",
            ..ClusterConfig::from_kubeconfig(name, &kubeconfig, name)
        })
        .collect();
    configs.push(ClusterConfig::from_kubeconfig(
        UNREACHABLE,
        &dead,
        UNREACHABLE,
    ));

    let sources = clusters::connect(&configs).await;
    let client = |name: &str| -> anyhow::Result<kube::Client> {
        let source = sources
            .iter()
            .find(|s| s.name == name)
            .context("a configured demo cluster")?;
        source.client.clone().map_err(|e| anyhow::anyhow!("{e}"))
    };
    let seeder = |name: &str| -> anyhow::Result<seeder::Seeder> {
        Ok(seeder::Seeder::new(client(name)?, clock.now()))
    };
    scenarios::zurich(&seeder("zrh-prod")?, &fleet)
        .await
        .context("seeding zrh-prod")?;
    platform::zurich(&seeder("zrh-prod")?)
        .await
        .context("seeding zrh-prod's platform stories")?;
    scenarios::geneva(&seeder("gva-prod")?)
        .await
        .context("seeding gva-prod")?;
    // gva-prod's broken Espejote policy: one problem rooted at the policy.
    policies::geneva(&seeder("gva-prod")?)
        .await
        .context("seeding gva-prod's policy")?;
    gateways::geneva(&seeder("gva-prod")?)
        .await
        .context("seeding gva-prod's Gateway")?;
    scenarios::lab(&seeder("lab-dev")?)
        .await
        .context("seeding lab-dev")?;

    let db = Db::open(&format!(
        "sqlite://{}",
        dir.path().join("lookout.db").display()
    ))
    .await?;
    week::history(&db, clock.now())
        .await
        .context("seeding the history")?;
    let later = seeder("zrh-prod")?;
    tokio::spawn(async move {
        if let Err(e) = scenarios::zurich_later(&later).await {
            tracing::warn!(error = %e, "the demo's served-certificate cases were not seeded");
        }
    });
    let bound = listener.local_addr().context("reading the bound address")?;
    println!("Lookout demo: http://{bound}/");
    println!("  {} simulated clusters ({}) running {SPEED}x faster than real time, and {UNREACHABLE}, which is unreachable on purpose.", CLUSTERS.len(), CLUSTERS.join(", "));
    println!("  kubeconfig for kubectl: {}", kubeconfig.display());
    println!("  Press Ctrl-C to stop.");
    let banner = Some(format!("Demo: a simulated fleet ({SPEED}x real time), sign-in off. Nothing here touches a real cluster."));
    let sim_clock = clock.clone();
    let settings = clusters::WatchSettings {
        now: Arc::new(move || sim_clock.now()),
        ..clusters::WatchSettings::default()
    };
    let result = app::run(
        app::Parts {
            listener,
            db,
            clusters: sources,
            settings,
            banner,
            support: Some("platform-support@example.net".into()),
            read_only: false,
            auth: demo_auth(),
            limits: Default::default(),
            probe: Some(demo_probe(edge)?),
        },
        shutdown,
    )
    .await;
    drop(fleet);
    result
}

/// The identities a demo visitor can switch between (header, "Viewing as"): the platform's
/// support engineer, the on-call engineer, and a customer who sees only `acme-*`.
pub fn demo_auth() -> crate::auth::Auth {
    use crate::auth::DemoIdentity;
    use lookout_app::model::scope::{Grant, Role};
    let all = || Grant {
        clusters: vec!["*".into()],
        namespaces: vec!["*".into()],
    };
    let identity = |name: &str, description: &str, group: &str| DemoIdentity {
        name: name.into(),
        description: description.into(),
        groups: vec![group.into()],
    };
    crate::auth::Auth::open().with_demo(
        vec![
            identity("support", "support engineer: every cluster", "support"),
            identity(
                "on-call",
                "on-call engineer: every cluster, admin",
                "oncall",
            ),
            identity(
                "customer-acme",
                "customer ACME: only acme-* namespaces",
                "customer-acme",
            ),
        ],
        vec![
            (vec!["support".into()], Role::Operator, all()),
            (vec!["oncall".into()], Role::Admin, all()),
            (
                vec!["customer-acme".into()],
                Role::Operator,
                Grant {
                    clusters: vec!["*".into()],
                    namespaces: vec!["acme-*".into()],
                },
            ),
        ],
    )
}

/// Two ports free on loopback, for kubesim's TLS and HTTP listeners.
fn free_ports() -> std::io::Result<kubesim::sim::edge::EdgePorts> {
    let https = std::net::TcpListener::bind("127.0.0.1:0")?;
    let http = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(kubesim::sim::edge::EdgePorts {
        https: https.local_addr()?.port(),
        http: http.local_addr()?.port(),
    })
}

/// The probe of the demo: kubesim's listeners on loopback (allowed by name), every 10 s,
/// trusting the system roots and kubesim's production root (not its staging one).
fn demo_probe(
    edge: kubesim::sim::edge::EdgePorts,
) -> anyhow::Result<crate::probe::worker::ProbeParts> {
    let roots = crate::probe::tls::Roots::system()
        .with_pem(kubesim::sim::pki::production_root_pem().as_bytes())
        .map_err(|e| anyhow::anyhow!("kubesim's root: {e}"))?;
    Ok(crate::probe::worker::ProbeParts {
        settings: crate::probe::worker::Settings {
            interval: std::time::Duration::from_secs(10),
            spacing: std::time::Duration::ZERO,
            concurrency: 32,
            timeout: std::time::Duration::from_secs(2),
            https_port: edge.https,
            http_port: edge.http,
            proxy: None,
            networks: crate::probe::policy::Networks {
                allow: vec![
                    "127.0.0.0/8".parse().expect("a network"),
                    "::1/128".parse().expect("a network"),
                ],
                deny: Vec::new(),
            },
            roots,
        },
        clusters: CLUSTERS.iter().map(|c| c.to_string()).collect(),
    })
}

//! `kubesim serve --clusters N --kubeconfig-out FILE`: simulated clusters until Ctrl-C.

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use kubesim::{Clock, Fleet, FleetOptions};
use tokio_util::sync::CancellationToken;

#[derive(Parser)]
#[command(
    name = "kubesim",
    version,
    about = "A simulated Kubernetes API server for tests and demos"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve N simulated clusters, each on its own port, until stopped.
    Serve {
        /// How many clusters to simulate.
        #[arg(long, default_value_t = 1)]
        clusters: usize,
        /// Where to write a kubeconfig with one context per cluster.
        #[arg(long)]
        kubeconfig_out: PathBuf,
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1")]
        bind: IpAddr,
        /// First port (the others follow it); 0 picks free ports.
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// Start without kubesim's built-in cert-manager and Gateway API CRDs.
        #[arg(long)]
        no_crds: bool,
        /// Also install Espejote's and Kyverno's CRDs (annotation policies); with
        /// --controllers, Espejote's ManagedResources are rendered and applied.
        #[arg(long)]
        policy_crds: bool,
        /// Run the cert-manager, Cilium and Let's Encrypt controllers.
        #[arg(long)]
        controllers: bool,
        /// How much faster than real time the clock runs (1 = real time).
        #[arg(long, default_value_t = 1.0)]
        speed: f64,
        /// Authenticate requests (bearer tokens) and authorize them with RBAC, like a real
        /// API server; without it every request may do everything.
        #[arg(long)]
        authorize: bool,
        /// Serve HTTPS (HTTP/2 or HTTP/1.1, by ALPN) with a certificate of a CA of the fleet's
        /// own, which the kubeconfig carries, as real API servers do (always with --authorize).
        #[arg(long)]
        tls: bool,
        /// Scale generator: this many Ingresses (with issued Certificates) per cluster.
        #[arg(long, default_value_t = 0)]
        scale_ingresses: usize,
        /// Scale generator: spread over this many namespaces.
        #[arg(long, default_value_t = 10)]
        scale_namespaces: usize,
        /// cert-manager's default issuer for Ingresses annotated only with
        /// `kubernetes.io/tls-acme: "true"` (`--default-issuer-name/-kind/-group`), as
        /// `Kind/name` or `Kind.group/name`; without it such an Ingress is refused with a
        /// `BadConfig` event, as upstream's empty default name makes it.
        #[arg(long)]
        default_issuer: Option<String>,
        /// Leave CertificateRequests matching this pattern (`<namespace>/<request name>`, `*`
        /// for any run of characters) unapproved, as approver-policy does when no policy
        /// applies; repeatable.
        #[arg(long = "leave-unapproved", value_name = "PATTERN")]
        leave_unapproved: Vec<String>,
        /// Deny CertificateRequests matching this pattern, as approver-policy does when its
        /// policies refuse them; repeatable.
        #[arg(long = "deny-requests", value_name = "PATTERN")]
        deny_requests: Vec<String>,
        /// Hosts (`*` patterns) whose challenges pass Let's Encrypt's primary vantage point
        /// and fail its remote ones ("During secondary validation: …"), as behind a firewall
        /// or allow-list; repeatable.
        #[arg(long = "block-remote-validation", value_name = "HOST")]
        block_remote_validation: Vec<String>,
        /// cert-manager's `--max-concurrent-challenges`: how many Challenges are processed at
        /// once; the others wait for a slot, oldest first.
        #[arg(long, default_value_t = 60)]
        max_concurrent_challenges: usize,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let Command::Serve {
        clusters,
        kubeconfig_out,
        bind,
        port,
        no_crds,
        policy_crds,
        controllers,
        speed,
        authorize,
        tls,
        scale_ingresses,
        scale_namespaces,
        default_issuer,
        leave_unapproved,
        deny_requests,
        block_remote_validation,
        max_concurrent_challenges,
    } = Cli::parse().command;
    if clusters == 0 {
        anyhow::bail!("--clusters must be at least 1");
    }
    let mut opts = FleetOptions::numbered(clusters);
    opts.bind = bind;
    opts.base_port = port;
    opts.install_crds = !no_crds;
    opts.policy_crds = policy_crds;
    opts.controllers = controllers;
    opts.authorize = authorize;
    opts.tls = tls;
    opts.approver = kubesim::sim::approver::Approver {
        unapproved: leave_unapproved,
        deny: deny_requests,
    };
    opts.remote_blocked = block_remote_validation;
    if max_concurrent_challenges == 0 {
        anyhow::bail!("--max-concurrent-challenges must be at least 1");
    }
    opts.max_concurrent_challenges = max_concurrent_challenges;
    opts.default_issuer = default_issuer
        .as_deref()
        .map(kubesim::sim::shim::DefaultIssuer::parse)
        .transpose()
        .map_err(|e| anyhow::anyhow!("--default-issuer: {e}"))?;
    if scale_ingresses > 0 && no_crds {
        anyhow::bail!("--scale-ingresses needs the cert-manager CRDs (drop --no-crds)");
    }
    if speed.is_nan() || speed <= 0.0 {
        anyhow::bail!("--speed must be a positive number");
    }
    let shutdown = CancellationToken::new();
    let clock = if speed == 1.0 {
        Clock::Real
    } else {
        Clock::accelerated(speed)
    };
    let fleet = Fleet::start(&opts, Arc::new(clock), shutdown.clone()).await?;
    if scale_ingresses > 0 {
        for c in &fleet.clusters {
            let made = kubesim::sim::scale::populate(&c.cluster, scale_namespaces, scale_ingresses);
            println!(
                "cluster {}: {} Ingresses and Certificates in {} namespaces",
                c.cluster.name, made.ingresses, made.namespaces
            );
        }
    }
    fleet.write_kubeconfig(&kubeconfig_out)?;
    for c in &fleet.clusters {
        println!("cluster {} at {}", c.cluster.name, c.url());
    }
    println!("kubeconfig written to {}", kubeconfig_out.display());
    tokio::signal::ctrl_c().await?;
    shutdown.cancel();
    Ok(())
}

//! Several simulated clusters, each listening on its own port, and the kubeconfig for them.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::Arc;

use base64::Engine;
use serde_json::json;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;
use crate::sim::World;
use crate::store::{Cluster, WriteOpts};

/// How a fleet starts.
#[derive(Debug, Clone)]
pub struct FleetOptions {
    /// Cluster names, one per simulated API server.
    pub names: Vec<String>,
    /// Address to bind; port 0 picks free ports.
    pub bind: IpAddr,
    /// First port to use (consecutive ports after it); 0 for any free port.
    pub base_port: u16,
    /// Install kubesim's built-in cert-manager and Gateway API CRDs at start.
    pub install_crds: bool,
    /// Install Espejote's and Kyverno's CRDs too (the annotation policies; Espejote's
    /// controller then runs with the others).
    pub policy_crds: bool,
    /// Run the cert-manager, Cilium and Let's Encrypt controllers (every `tick` of real
    /// time; with a manual clock, tests call [`Fleet::step`] instead).
    pub controllers: bool,
    /// How often the controllers run.
    pub tick: std::time::Duration,
    /// Seed of every token and generated name.
    pub seed: u64,
    /// Serve the load balancers' traffic: loopback addresses with TLS and HTTP listeners on
    /// these ports ([`crate::sim::edge`]).
    pub edge: Option<crate::sim::edge::EdgePorts>,
    /// Authenticate and authorize every API request with RBAC ([`crate::auth`]); off, every
    /// request may do everything.
    pub authorize: bool,
    /// Serve HTTPS (HTTP/2 or HTTP/1.1, by ALPN) with a certificate of the fleet's own CA,
    /// which the kubeconfig carries, as real API servers do; always on with `authorize`.
    pub tls: bool,
    /// How long the garbage collector waits, on the fleet's clock, before it removes the
    /// dependents of a deleted object (None: they go with it at once).
    pub gc_delay: Option<chrono::Duration>,
    /// cert-manager's `--default-issuer-name/-kind/-group`: the issuer of an Ingress that
    /// asks with `kubernetes.io/tls-acme: "true"` alone (None: upstream's empty default,
    /// so ingress-shim refuses such an Ingress with `BadConfig`).
    pub default_issuer: Option<crate::sim::shim::DefaultIssuer>,
    /// Which CertificateRequests the approver leaves unapproved or denies (by default every
    /// one is approved at once, as cert-manager's own approver does).
    pub approver: crate::sim::approver::Approver,
    /// Hosts (`*` patterns) whose challenges fail Let's Encrypt's secondary validation (a
    /// firewall admits only its primary vantage point).
    pub remote_blocked: Vec<String>,
    /// cert-manager's `--max-concurrent-challenges` (60 by default).
    pub max_concurrent_challenges: usize,
}

impl FleetOptions {
    /// `n` clusters named `sim-1`…`sim-n` on free loopback ports, with the CRDs installed.
    pub fn numbered(n: usize) -> Self {
        FleetOptions {
            names: (1..=n).map(|i| format!("sim-{i}")).collect(),
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            base_port: 0,
            install_crds: true,
            policy_crds: false,
            controllers: false,
            tick: std::time::Duration::from_millis(250),
            seed: 0,
            edge: None,
            authorize: false,
            tls: false,
            gc_delay: None,
            default_issuer: None,
            approver: Default::default(),
            remote_blocked: Vec::new(),
            max_concurrent_challenges: crate::sim::issuance::scheduler::DEFAULT_MAX_CONCURRENT,
        }
    }
}

/// A running cluster and where it listens.
pub struct RunningCluster {
    pub cluster: Arc<Cluster>,
    pub addr: SocketAddr,
    /// Stops this cluster's server alone.
    stop: CancellationToken,
    /// The CA of its serving certificate, when it serves HTTPS (an authorizing fleet).
    pub ca_pem: Option<String>,
    /// Its authentication and authorization state (tokens issued, whether it authorizes).
    pub access: Arc<crate::auth::Access>,
}

impl RunningCluster {
    /// Fault injection: the API server goes away (its port closes, open watches end).
    pub fn stop(&self) {
        self.stop.cancel();
        self.cluster.expire_watches();
    }

    /// `http://127.0.0.1:PORT`, or `https://` when it serves TLS.
    pub fn url(&self) -> String {
        let scheme = if self.ca_pem.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", self.addr)
    }
}

/// The clusters of one kubesim process.
pub struct Fleet {
    pub clusters: Vec<RunningCluster>,
    /// What the controllers share (Let's Encrypt's state).
    pub world: Arc<World>,
}

impl Fleet {
    /// Starts every cluster and serves it until `shutdown` is cancelled.
    pub async fn start(
        opts: &FleetOptions,
        clock: Arc<Clock>,
        shutdown: CancellationToken,
    ) -> std::io::Result<Fleet> {
        let mut clusters = Vec::new();
        let world = Arc::new(World {
            seed: opts.seed,
            loopback: opts.edge.is_some(),
            default_issuer: opts.default_issuer.clone(),
            approver: opts.approver.clone(),
            remote_blocked: opts.remote_blocked.clone(),
            max_concurrent_challenges: opts.max_concurrent_challenges,
            ..World::default()
        });
        let manual = matches!(*clock, Clock::Manual(_));
        // Credentials go over TLS only: an authorizing fleet serves HTTPS.
        let serving = if opts.authorize || opts.tls {
            Some(crate::tls::Serving::new(opts.bind).map_err(std::io::Error::other)?)
        } else {
            None
        };
        for (i, name) in opts.names.iter().enumerate() {
            let cluster = Cluster::new(name.clone(), clock.clone());
            cluster.set_gc_delay(opts.gc_delay);
            if opts.install_crds {
                install_builtin_crds(&cluster);
            }
            if opts.policy_crds {
                install_policy_crds(&cluster);
            }
            let access = Arc::new(crate::auth::Access::default());
            if opts.authorize {
                crate::auth::enable(&cluster, &access);
            }
            let port = if opts.base_port == 0 {
                0
            } else {
                opts.base_port + i as u16
            };
            let listener = TcpListener::bind((opts.bind, port)).await?;
            let addr = listener.local_addr()?;
            let app = crate::api::router(cluster.clone(), access.clone());
            let token = shutdown.child_token();
            let stop = token.clone();
            match &serving {
                Some(s) => {
                    tokio::spawn(crate::tls::serve(listener, app, s.config.clone(), token));
                }
                None => {
                    tokio::spawn(async move {
                        let served = axum::serve(listener, app)
                            .with_graceful_shutdown(token.cancelled_owned())
                            .await;
                        if let Err(e) = served {
                            tracing::error!(cluster = %addr, error = %e, "kubesim cluster stopped serving");
                        }
                    });
                }
            }
            tracing::info!(cluster = %name, %addr, "kubesim cluster listening");
            if opts.controllers && !manual {
                crate::sim::spawn(cluster.clone(), world.clone(), opts.tick, shutdown.clone());
            }
            clusters.push(RunningCluster {
                cluster,
                addr,
                stop,
                ca_pem: serving.as_ref().map(|s| s.ca_pem.clone()),
                access,
            });
        }
        if let Some(ports) = opts.edge {
            crate::sim::edge::Edge::spawn(
                clusters.iter().map(|c| c.cluster.clone()).collect(),
                ports,
                shutdown.clone(),
            );
        }
        Ok(Fleet { clusters, world })
    }

    /// Runs one pass of every controller on every cluster (with a manual clock).
    pub fn step(&self) {
        for c in &self.clusters {
            crate::sim::step(&c.cluster, &self.world);
        }
    }

    /// A kubeconfig with one context per cluster; the current context is the first cluster.
    pub fn kubeconfig(&self) -> String {
        let clusters: Vec<_> = self
            .clusters
            .iter()
            .map(|c| {
                let mut cluster = json!({"server": c.url()});
                if let Some(ca) = &c.ca_pem {
                    cluster["certificate-authority-data"] =
                        json!(base64::engine::general_purpose::STANDARD.encode(ca));
                }
                json!({"name": c.cluster.name, "cluster": cluster})
            })
            .collect();
        let contexts: Vec<_> = self
            .clusters
            .iter()
            .map(|c| json!({"name": c.cluster.name, "context": {"cluster": c.cluster.name, "user": "kubesim", "namespace": "default"}}))
            .collect();
        let doc = json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": clusters,
            "contexts": contexts,
            "current-context": self.clusters.first().map(|c| c.cluster.name.clone()).unwrap_or_default(),
            "users": [{"name": "kubesim", "user": {"token": "kubesim"}}],
            "preferences": {},
        });
        serde_yaml_ng::to_string(&doc).expect("a JSON document serialises as YAML")
    }

    /// Writes [`Fleet::kubeconfig`] to `path` (mode 0600: it holds credentials).
    pub fn write_kubeconfig(&self, path: &Path) -> std::io::Result<()> {
        std::fs::write(path, self.kubeconfig())?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        }
        Ok(())
    }

    /// The cluster called `name`.
    pub fn cluster(&self, name: &str) -> Option<&RunningCluster> {
        self.clusters.iter().find(|c| c.cluster.name == name)
    }
}

/// Creates Espejote's and Kyverno's CRDs in `cluster` (a cluster whose Ingresses get their
/// annotations from a policy).
pub fn install_policy_crds(cluster: &Cluster) {
    let rt = cluster
        .resolve("apiextensions.k8s.io", "customresourcedefinitions")
        .expect("CRDs are built in");
    for crd in crate::crds::policies() {
        cluster
            .create(&rt, None, crd, &WriteOpts::system())
            .expect("the built-in CRD table is valid");
    }
}

/// Creates kubesim's built-in cert-manager and Gateway API CRDs in `cluster`.
pub fn install_builtin_crds(cluster: &Cluster) {
    let rt = cluster
        .resolve("apiextensions.k8s.io", "customresourcedefinitions")
        .expect("CRDs are built in");
    for crd in crate::crds::cert_manager()
        .into_iter()
        .chain(crate::crds::gateway_api())
    {
        cluster
            .create(&rt, None, crd, &WriteOpts::system())
            .expect("the built-in CRD table is valid");
    }
}

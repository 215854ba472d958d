//! Starting the application against kubesim, and driving kubectl.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kubesim::{Clock, Fleet, FleetOptions};
use lookout_server::auth::Auth;
use lookout_server::config::ClusterConfig;
pub use lookout_server::config::HttpConfig;
use lookout_server::{app, store};
use lookout_server::{ClusterSource, WatchSettings};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

pub struct TestApp {
    pub base: String,
    pub http: reqwest::Client,
    pub fleet: Fleet,
    pub dir: tempfile::TempDir,
    /// Stops kubesim and the app.
    pub token: CancellationToken,
    /// Stops the app alone (a child of `token`).
    pub app_token: CancellationToken,
    pub server: tokio::task::JoinHandle<anyhow::Result<()>>,
    pub clusters: Vec<String>,
    /// The history's database URL (SQLite in `dir` unless [`AppOptions::database`]).
    pub database: String,
}

/// Starts kubesim with `clusters` (with the cert-manager CRDs, without controllers) and the
/// application against them, with default settings.
pub async fn spawn_app(clusters: &[&str]) -> TestApp {
    app_with(clusters).await
}

/// An application that differs from [`spawn_app`]'s: set what differs, then `.await` it.
pub fn app_with(clusters: &[&str]) -> AppOptions {
    AppOptions {
        clusters: clusters.iter().map(|c| c.to_string()).collect(),
        extra: Vec::new(),
        install_crds: true,
        policy_crds: false,
        controllers: false,
        read_only: false,
        auth: Auth::open(),
        listener: None,
        tune: |_| {},
        dir: None,
        limits: HttpConfig::default(),
        probe: None,
        edge: None,
        manifests: None,
        gc_delay: None,
        approver: Default::default(),
        remote_blocked: Vec::new(),
        max_concurrent_challenges: 60,
        tls: false,
        database: None,
    }
}

/// What a test application starts with (see [`app_with`]).
pub struct AppOptions {
    clusters: Vec<String>,
    extra: Vec<ClusterConfig>,
    install_crds: bool,
    policy_crds: bool,
    controllers: bool,
    read_only: bool,
    auth: Auth,
    listener: Option<tokio::net::TcpListener>,
    tune: fn(&mut WatchSettings),
    dir: Option<tempfile::TempDir>,
    limits: HttpConfig,
    probe: Option<lookout_server::probe::worker::Settings>,
    edge: Option<kubesim::sim::edge::EdgePorts>,
    manifests: Option<String>,
    gc_delay: Option<chrono::Duration>,
    approver: kubesim::sim::approver::Approver,
    remote_blocked: Vec<String>,
    max_concurrent_challenges: usize,
    tls: bool,
    database: Option<String>,
}

impl AppOptions {
    /// The history in this database instead of a SQLite file in the app's directory.
    pub fn database(mut self, url: String) -> Self {
        self.database = Some(url);
        self
    }

    /// kubesim authorizes every request; these manifests (kustomize's output) are applied
    /// to each cluster with kubectl as the admin, and Lookout connects with a token of their
    /// ServiceAccount `lookout/lookout` (written to `lookout.kubeconfig`).
    pub fn with_service_account_of(mut self, manifests: String) -> Self {
        self.manifests = Some(manifests);
        self
    }

    /// Further cluster configs after kubesim's (e.g. broken ones).
    pub fn extra(mut self, extra: Vec<ClusterConfig>) -> Self {
        self.extra = extra;
        self
    }

    /// kubesim starts without the cert-manager CRDs.
    pub fn without_crds(mut self) -> Self {
        self.install_crds = false;
        self
    }

    /// kubesim serves Espejote's and Kyverno's kinds too.
    pub fn with_policies(mut self) -> Self {
        self.policy_crds = true;
        self
    }

    /// kubesim runs its cert-manager, Cilium and Let's Encrypt controllers.
    pub fn with_controllers(mut self) -> Self {
        self.controllers = true;
        self
    }

    /// `read_only = true`.
    pub fn read_only(mut self) -> Self {
        self.read_only = true;
        self
    }

    /// These sign-in settings.
    pub fn auth(mut self, auth: Auth) -> Self {
        self.auth = auth;
        self
    }

    /// Serves on a listener bound beforehand (its URL had to be known to build the sign-in
    /// settings, e.g. for an OIDC redirect).
    pub fn listener(mut self, listener: tokio::net::TcpListener) -> Self {
        self.listener = Some(listener);
        self
    }

    /// Changes the watch settings (e.g. a short list timeout).
    pub fn tune(mut self, tune: fn(&mut WatchSettings)) -> Self {
        self.tune = tune;
        self
    }

    /// These connection limits (`[http]`).
    pub fn limits(mut self, limits: HttpConfig) -> Self {
        self.limits = limits;
        self
    }

    /// kubesim serves its load balancers' traffic on loopback addresses, on these ports.
    pub fn edge(mut self, ports: kubesim::sim::edge::EdgePorts) -> Self {
        self.edge = Some(ports);
        self
    }

    /// The probe runs with these settings on every cluster.
    pub fn probe(mut self, settings: lookout_server::probe::worker::Settings) -> Self {
        self.probe = Some(settings);
        self
    }

    /// kubesim's garbage collector removes a deleted object's dependents this long after it.
    pub fn gc_delay(mut self, delay: chrono::Duration) -> Self {
        self.gc_delay = Some(delay);
        self
    }

    /// kubesim's approver leaves these requests unapproved and denies those
    /// (`<namespace>/<request>` patterns), as approver-policy would.
    pub fn approver(mut self, unapproved: &[&str], deny: &[&str]) -> Self {
        self.approver = kubesim::sim::approver::Approver {
            unapproved: unapproved.iter().map(|p| p.to_string()).collect(),
            deny: deny.iter().map(|p| p.to_string()).collect(),
        };
        self
    }

    /// kubesim's Let's Encrypt reaches these hosts from its primary vantage point only.
    pub fn remote_blocked(mut self, hosts: &[&str]) -> Self {
        self.remote_blocked = hosts.iter().map(|h| h.to_string()).collect();
        self
    }

    /// kubesim's cert-manager processes at most `n` Challenges at once.
    pub fn max_concurrent_challenges(mut self, n: usize) -> Self {
        self.max_concurrent_challenges = n;
        self
    }

    /// kubesim serves HTTPS (HTTP/2 or HTTP/1.1 by ALPN) with its own CA, as real API
    /// servers do, without authorizing.
    pub fn tls(mut self) -> Self {
        self.tls = true;
        self
    }

    /// The database (and kubeconfig) in `dir`, e.g. a small filesystem mounted there.
    pub fn dir(mut self, dir: tempfile::TempDir) -> Self {
        self.dir = Some(dir);
        self
    }

    async fn spawn(self) -> TestApp {
        let token = CancellationToken::new();
        let opts = FleetOptions {
            names: self.clusters.clone(),
            install_crds: self.install_crds,
            policy_crds: self.policy_crds,
            controllers: self.controllers,
            edge: self.edge,
            authorize: self.manifests.is_some(),
            gc_delay: self.gc_delay,
            tls: self.tls,
            approver: self.approver.clone(),
            remote_blocked: self.remote_blocked.clone(),
            max_concurrent_challenges: self.max_concurrent_challenges,
            ..FleetOptions::numbered(0)
        };
        let fleet = Fleet::start(&opts, Arc::new(Clock::Real), token.clone())
            .await
            .unwrap();
        let dir = self.dir.unwrap_or_else(|| tempfile::tempdir().unwrap());
        let database = self
            .database
            .unwrap_or_else(|| format!("sqlite://{}", dir.path().join("lookout.db").display()));
        let kubeconfig = dir.path().join("kubeconfig");
        fleet.write_kubeconfig(&kubeconfig).unwrap();
        let lookouts = match &self.manifests {
            Some(m) => service_account_kubeconfig(&kubeconfig, &self.clusters, m),
            None => kubeconfig.clone(),
        };
        let mut configs: Vec<ClusterConfig> = self
            .clusters
            .iter()
            .map(|c| ClusterConfig::from_kubeconfig(c, &lookouts, c))
            .collect();
        configs.extend(self.extra);
        let (base, app_token, server) = start_app(
            &configs,
            &database,
            &token,
            Serving {
                read_only: self.read_only,
                auth: self.auth,
                listener: self.listener,
                tune: self.tune,
                limits: self.limits,
                probe: self.probe,
            },
        )
        .await;
        TestApp {
            base,
            http: reqwest::Client::new(),
            fleet,
            dir,
            token,
            app_token,
            server,
            clusters: self.clusters,
            database,
        }
    }
}

impl std::future::IntoFuture for AppOptions {
    type Output = TestApp;
    type IntoFuture = std::pin::Pin<Box<dyn std::future::Future<Output = TestApp> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.spawn())
    }
}

/// Applies `manifests` to every cluster as the admin, then writes a kubeconfig beside
/// `admin` whose user is a token of ServiceAccount `lookout/lookout` from each cluster.
fn service_account_kubeconfig(admin: &Path, clusters: &[String], manifests: &str) -> PathBuf {
    let mut doc: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(admin).unwrap()).unwrap();
    let mut users = Vec::new();
    for (i, c) in clusters.iter().enumerate() {
        kubectl(
            admin,
            c,
            &["apply", "--server-side", "-f", "-"],
            Some(manifests),
        );
        let token = kubectl_output(
            admin,
            c,
            &[
                "create",
                "token",
                "lookout",
                "-n",
                "lookout",
                "--duration=2h",
            ],
            None,
        );
        let user = format!("lookout-{c}");
        users.push(json!({"name": user, "user": {"token": token.trim()}}));
        doc["contexts"][i]["context"]["user"] = json!(user);
    }
    doc["users"] = json!(users);
    let path = admin.with_file_name("lookout.kubeconfig");
    std::fs::write(&path, serde_yaml_ng::to_string(&doc).unwrap()).unwrap();
    path
}

/// How the application serves (see [`AppOptions`]).
struct Serving {
    read_only: bool,
    auth: Auth,
    listener: Option<tokio::net::TcpListener>,
    tune: fn(&mut WatchSettings),
    limits: HttpConfig,
    probe: Option<lookout_server::probe::worker::Settings>,
}

/// Starts the application against `configs` with the history in `database`.
async fn start_app(
    configs: &[ClusterConfig],
    database: &str,
    parent: &CancellationToken,
    serving: Serving,
) -> (
    String,
    CancellationToken,
    tokio::task::JoinHandle<anyhow::Result<()>>,
) {
    let Serving {
        read_only,
        auth,
        listener,
        tune,
        limits,
        probe,
    } = serving;
    let sources: Vec<ClusterSource> = lookout_server::connect(configs).await;
    let db = store::Db::open(database).await.unwrap();
    let listener = match listener {
        Some(l) => l,
        None => tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(),
    };
    let base = format!("http://{}", listener.local_addr().unwrap());
    let mut settings = WatchSettings {
        crd_recheck: Duration::from_millis(500),
        budget_interval: Duration::from_millis(200),
        ..WatchSettings::default()
    };
    tune(&mut settings);
    let app_token = parent.child_token();
    let server = tokio::spawn(app::run(
        app::Parts {
            listener,
            db,
            clusters: sources,
            settings,
            banner: None,
            support: Some("https://support.provider.example/tickets".into()),
            read_only,
            auth,
            limits,
            probe: probe.map(|settings| lookout_server::probe::worker::ProbeParts {
                settings,
                clusters: configs.iter().map(|c| c.name.clone()).collect(),
            }),
        },
        app_token.clone(),
    ));
    (base, app_token, server)
}

impl TestApp {
    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.http
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .unwrap()
    }

    /// The JSON body of a successful GET, or None on an error status.
    pub async fn json_opt(&self, path: &str) -> Option<Value> {
        let resp = self.get(path).await;
        if resp.status().is_success() {
            resp.json().await.ok()
        } else {
            None
        }
    }

    pub async fn json(&self, path: &str) -> Value {
        let resp = self.get(path).await;
        assert!(resp.status().is_success(), "GET {path}: {}", resp.status());
        resp.json().await.unwrap()
    }

    /// Polls `check` until it holds (watch events arrive asynchronously), at most 10 s.
    pub async fn eventually<F, Fut>(&self, what: &str, check: F)
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        within(10, what, check).await
    }

    pub async fn wait_ready(&self) {
        self.eventually("/readyz to answer 200", || async {
            self.get("/readyz").await.status() == 200
        })
        .await;
    }

    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("kubeconfig")
    }

    /// Stops the app (not kubesim) and starts it again on the same database.
    pub async fn restart(self) -> TestApp {
        self.restart_after(|_| {}).await
    }

    /// Stops the app, runs `meanwhile` against kubesim, then starts the app again.
    pub async fn restart_after(self, meanwhile: impl FnOnce(&Fleet)) -> TestApp {
        let TestApp {
            http,
            fleet,
            dir,
            token,
            app_token,
            server,
            clusters,
            database,
            ..
        } = self;
        app_token.cancel();
        tokio::time::timeout(Duration::from_secs(10), server)
            .await
            .expect("the app stops within 10 s")
            .unwrap()
            .unwrap();
        meanwhile(&fleet);
        let kubeconfig = dir.path().join("kubeconfig");
        let configs: Vec<ClusterConfig> = clusters
            .iter()
            .map(|c| ClusterConfig::from_kubeconfig(c, &kubeconfig, c))
            .collect();
        let (base, app_token, server) = start_app(
            &configs,
            &database,
            &token,
            Serving {
                read_only: false,
                auth: Auth::open(),
                listener: None,
                tune: |_| {},
                limits: HttpConfig::default(),
                probe: None,
            },
        )
        .await;
        TestApp {
            base,
            http,
            fleet,
            dir,
            token,
            app_token,
            server,
            clusters,
            database,
        }
    }

    /// Stops the app; the returned directory still holds its database.
    pub async fn stop(self) -> tempfile::TempDir {
        self.token.cancel();
        tokio::time::timeout(Duration::from_secs(10), self.server)
            .await
            .expect("the app stops within 10 s")
            .unwrap()
            .unwrap();
        self.dir
    }
}

pub fn kubectl_available() -> bool {
    let ok = std::process::Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "kubectl is required under CI=true"
        );
        eprintln!("skipping: kubectl is not installed");
    }
    ok
}

pub fn kubectl(kubeconfig: &Path, context: &str, args: &[&str], stdin: Option<&str>) {
    kubectl_output(kubeconfig, context, args, stdin);
}

/// Runs kubectl and returns what it printed; a failure fails the test.
pub fn kubectl_output(
    kubeconfig: &Path,
    context: &str,
    args: &[&str],
    stdin: Option<&str>,
) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new("kubectl")
        .env("KUBECONFIG", kubeconfig)
        .arg("--context")
        .arg(context)
        .arg("--cache-dir")
        .arg(kubeconfig.with_extension("cache"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

pub fn ingress_yaml(ns: &str, name: &str, host: &str) -> String {
    format!(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: {name}\n  namespace: {ns}\n  annotations:\n    cert-manager.io/cluster-issuer: letsencrypt-prod\nspec:\n  ingressClassName: cilium\n  rules:\n  - host: {host}\n  tls:\n  - hosts: [\"{host}\"]\n    secretName: {name}-tls\n"
    )
}

/// Creates an object in kubesim directly (as a controller would).
pub fn create(
    app: &TestApp,
    cluster: usize,
    group: &str,
    plural: &str,
    ns: Option<&str>,
    obj: Value,
) {
    let c = &app.fleet.clusters[cluster].cluster;
    let rt = c
        .resolve(group, plural)
        .unwrap_or_else(|| panic!("{plural} is served"));
    c.create(&rt, ns, obj, &kubesim::WriteOpts::system())
        .unwrap();
}

/// A Let's Encrypt production ClusterIssuer `name` in cluster 0, as created (not Ready: no
/// controller registered its account).
pub fn cluster_issuer(app: &TestApp, name: &str) {
    create(
        app,
        0,
        "cert-manager.io",
        "clusterissuers",
        None,
        json!({"metadata": {"name": name}, "spec": {"acme": {"server": "https://acme-v02.api.letsencrypt.org/directory", "privateKeySecretRef": {"name": "le"}, "solvers": [{"http01": {"ingress": {}}}]}}}),
    );
}

/// Marks ClusterIssuer `name` of cluster 0 Ready, as cert-manager does once its account is
/// registered.
pub fn mark_cluster_issuer_ready(app: &TestApp, name: &str) {
    let c = &app.fleet.clusters[0].cluster;
    let opts = kubesim::WriteOpts {
        status: true,
        ..kubesim::WriteOpts::system()
    };
    c.merge_patch(
        &c.resolve("cert-manager.io", "clusterissuers").unwrap(),
        None,
        name,
        &json!({"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "ACMEAccountRegistered", "message": "The ACME account was registered with the ACME server"}]}}),
        &opts,
    )
    .unwrap();
}

/// A Ready Let's Encrypt production ClusterIssuer `name` in cluster 0.
pub fn ready_cluster_issuer(app: &TestApp, name: &str) {
    cluster_issuer(app, name);
    mark_cluster_issuer_ready(app, name);
}

/// Waits up to `secs` seconds for `check` to hold (polling every 50 ms), else fails naming
/// `what`.
pub async fn within<F, Fut>(secs: u64, what: &str, check: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Replaces fields of an object's status in kubesim (merge patch on the status
/// subresource, as a controller would); the object is `name` in `default` of cluster 0.
pub fn patch_status(app: &TestApp, group: &str, plural: &str, name: &str, status: Value) {
    let c = &app.fleet.clusters[0].cluster;
    let rt = c
        .resolve(group, plural)
        .unwrap_or_else(|| panic!("{plural} is served"));
    let opts = kubesim::WriteOpts {
        status: true,
        ..kubesim::WriteOpts::system()
    };
    c.merge_patch(
        &rt,
        Some("default"),
        name,
        &json!({ "status": status }),
        &opts,
    )
    .unwrap();
}

/// An Ingress `name` (host `NAME.example.com`, class cilium, TLS) with these annotations.
pub fn ingress(name: &str, annotations: Value) -> Value {
    json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
           "metadata": {"name": name, "annotations": annotations},
           "spec": {"ingressClassName": "cilium", "rules": [{"host": format!("{name}.example.com")}],
                    "tls": [{"hosts": [format!("{name}.example.com")], "secretName": format!("{name}-tls")}]}})
}

/// Creates a plain Ingress `name` in `default` of cluster `i`.
pub fn add_ingress(app: &TestApp, i: usize, name: &str) {
    create(
        app,
        i,
        "networking.k8s.io",
        "ingresses",
        Some("default"),
        ingress(name, json!({})),
    );
}

impl TestApp {
    /// POSTs `body` as JSON.
    pub async fn post(&self, path: &str, body: Value) -> reqwest::Response {
        self.http
            .post(format!("{}{path}", self.base))
            .json(&body)
            .send()
            .await
            .unwrap()
    }

    pub async fn delete(&self, path: &str) -> reqwest::Response {
        self.http
            .delete(format!("{}{path}", self.base))
            .send()
            .await
            .unwrap()
    }
}

/// Challenge `name`'s row in `/api/v1/challenges` and the states of its transitions.
pub async fn challenge_history(app: &TestApp, name: &str) -> Option<(Value, Vec<String>)> {
    let list = app.json("/api/v1/challenges?per_page=1000").await;
    let row = list["items"]
        .as_array()?
        .iter()
        .find(|c| c["name"] == name)?
        .clone();
    let states = row["transitions"]
        .as_array()?
        .iter()
        .map(|t| t["state"].as_str().unwrap_or_default().to_string())
        .collect();
    Some((row, states))
}

/// A number from `/metrics`, by its whole name.
pub async fn metric(app: &TestApp, name: &str) -> f64 {
    let text = app.get("/metrics").await.text().await.unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("{name} in /metrics"))
        .parse()
        .unwrap()
}

/// Writes a kubeconfig with one context, `name`, for an API server at `addr` (`host:port`),
/// without credentials.
pub fn write_kubeconfig(path: &Path, name: &str, addr: impl std::fmt::Display) {
    std::fs::write(
        path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: {name}\n  cluster:\n    server: http://{addr}\ncontexts:\n- name: {name}\n  context:\n    cluster: {name}\n    user: u\nusers:\n- name: u\n  user: {{}}\ncurrent-context: {name}\n"
        ),
    )
    .unwrap();
}

/// `ownerReferences` naming object `name` of `kind` in `default` of cluster 0 as its
/// controller, with its real uid (an owner reference must carry the owner's uid: a request
/// made again under an old name is another owner).
pub fn controlled_by(
    app: &TestApp,
    api_version: &str,
    kind: &str,
    plural: &str,
    name: &str,
) -> Value {
    let c = &app.fleet.clusters[0].cluster;
    let group = api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
    let rt = c
        .resolve(group, plural)
        .unwrap_or_else(|| panic!("{plural} is served"));
    let uid =
        c.get(&rt, Some("default"), name).expect("the owner exists")["metadata"]["uid"].clone();
    json!([{"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": true}])
}

/// Another Lookout over the same clusters as a [`TestApp`], with a database of its own: a
/// second instance, started later.
pub struct Other {
    pub base: String,
    http: reqwest::Client,
    token: CancellationToken,
    server: tokio::task::JoinHandle<anyhow::Result<()>>,
    _dir: tempfile::TempDir,
}

impl Other {
    pub async fn json(&self, path: &str) -> Value {
        self.http
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    pub async fn stop(self) {
        self.token.cancel();
        tokio::time::timeout(Duration::from_secs(10), self.server)
            .await
            .expect("the other Lookout stops within 10 s")
            .unwrap()
            .unwrap();
    }
}

impl TestApp {
    /// Starts another Lookout over the same clusters, with its own SQLite database.
    pub async fn another(&self) -> Other {
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = self.dir.path().join("kubeconfig");
        let configs: Vec<ClusterConfig> = self
            .clusters
            .iter()
            .map(|c| ClusterConfig::from_kubeconfig(c, &kubeconfig, c))
            .collect();
        let database = format!("sqlite://{}", dir.path().join("lookout.db").display());
        let token = CancellationToken::new();
        let (base, app_token, server) = start_app(
            &configs,
            &database,
            &token,
            Serving {
                read_only: false,
                auth: Auth::open(),
                listener: None,
                tune: |_| {},
                limits: HttpConfig::default(),
                probe: None,
            },
        )
        .await;
        let other = Other {
            base,
            http: reqwest::Client::new(),
            token: app_token,
            server,
            _dir: dir,
        };
        within(30, "the other Lookout is ready", || async {
            other
                .http
                .get(format!("{}/readyz", other.base))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success())
        })
        .await;
        other
    }
}

//! `lookout`: parses the command line and configuration, builds the application and runs it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use lookout_server::config::{AuthMode, Config, Problems};
use lookout_server::{app, demo, store, WatchSettings};
use tokio_util::sync::CancellationToken;

#[derive(Parser)]
#[command(
    name = "lookout",
    version,
    about = "Health of Kubernetes Ingresses and their TLS certificates across a fleet"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the dashboard for the clusters in a config file.
    Serve {
        /// The TOML configuration file.
        #[arg(long, env = "LOOKOUT_CONFIG")]
        config: PathBuf,
        /// Listen address; overrides `listen` in the file.
        #[arg(long)]
        listen: Option<String>,
        /// Hide every action; overrides `read_only` in the file.
        #[arg(long)]
        read_only: bool,
    },
    /// Start a simulated fleet in-process and serve the dashboard for it.
    Demo {
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: SocketAddr,
    },
    /// Check a configuration file and report every problem.
    CheckConfig { file: PathBuf },
    /// Copy the whole history from one database to another (SQLite to PostgreSQL, or back).
    /// Run it while no Lookout writes to the target. An interrupted copy is finished by
    /// running the same command again; nothing is copied twice.
    MigrateDb {
        /// The database to copy from, e.g. sqlite:///var/lib/lookout/lookout.db.
        #[arg(long)]
        from: String,
        /// The database to copy into, e.g. postgres://lookout@db/lookout (created tables;
        /// an empty database or the result of an earlier, interrupted copy).
        #[arg(long)]
        to: String,
    },
    /// Ask each configured cluster for every Kubernetes right Lookout needs and print what
    /// is missing (exit status 1 when anything is).
    CheckAccess {
        /// The TOML configuration file.
        #[arg(long, env = "LOOKOUT_CONFIG")]
        config: PathBuf,
    },
}

fn init_tracing() {
    let mut filter = tracing_subscriber::EnvFilter::try_from_env("LOOKOUT_LOG")
        .unwrap_or_else(|_| "info,sqlx=warn,kube=warn,tower_http=info".into());
    // kube's client logs every failed request at ERROR, once per kind and retry: a cluster
    // that stays unreachable would flood the log. The watchers say it once, then once a
    // minute (clusters::complaints). Named in LOOKOUT_LOG, it is logged as asked.
    if !std::env::var("LOOKOUT_LOG").is_ok_and(|v| v.contains("kube_client")) {
        filter = filter.add_directive(
            "kube_client::client::builder=off"
                .parse()
                .expect("a valid directive"),
        );
    }
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

/// Cancels the token on Ctrl-C or SIGTERM.
fn on_signal(token: CancellationToken) {
    tokio::spawn(async move {
        let ctrl_c = tokio::signal::ctrl_c();
        #[cfg(unix)]
        {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                    .expect("SIGTERM handler");
            tokio::select! {
                _ = ctrl_c => {},
                _ = term.recv() => {},
            }
        }
        #[cfg(not(unix))]
        let _ = ctrl_c.await;
        token.cancel();
    });
}

fn report(problems: &Problems) -> ExitCode {
    eprintln!(
        "error: the configuration has {} problem(s):\n{problems}",
        problems.0.len()
    );
    ExitCode::from(2)
}

/// jemalloc: a page renders with hundreds of small allocations, which it serves about twice
/// as fast as glibc's allocator here, and it hands freed memory back to the system.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: lookout_server::memory::Allocator = lookout_server::memory::Allocator;

/// jemalloc's settings (`MALLOC_CONF` in the environment adds to them): a background thread
/// returns freed pages to the system after a second, so what a relist freed does not stay in
/// the RSS. jemalloc also serves the C code's `malloc` (SQLite's caches and statements), so
/// those are returned the same way instead of staying in glibc's arenas.
#[cfg(not(target_env = "msvc"))]
#[allow(non_upper_case_globals)]
#[export_name = "malloc_conf"]
pub static malloc_conf: &[u8] = b"background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0\0";

fn main() -> ExitCode {
    #[cfg(not(target_env = "msvc"))]
    {
        lookout_server::memory::jemalloc_is_the_allocator();
        ALLOCATOR.init();
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("cannot start the async runtime")
        .block_on(run())
}

async fn run() -> ExitCode {
    init_tracing();
    let result = match Cli::parse().command {
        Command::CheckConfig { file } => {
            return match Config::load(&file) {
                Ok(c) => {
                    println!(
                        "{}: OK ({} cluster(s), auth mode {:?}, listen {})",
                        file.display(),
                        c.clusters.len(),
                        c.auth.mode.label(),
                        c.listen
                    );
                    ExitCode::SUCCESS
                }
                Err(p) => report(&p),
            };
        }
        Command::CheckAccess { config } => {
            let c = match Config::load(&config) {
                Ok(c) => c,
                Err(p) => return report(&p),
            };
            let results = lookout_server::check_access::check(&c).await;
            print!("{}", lookout_server::check_access::report(&results));
            return if results.iter().all(|r| r.missing() == 0) {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            };
        }
        Command::Serve {
            config,
            listen,
            read_only,
        } => {
            let mut c = match Config::load(&config) {
                Ok(c) => c,
                Err(p) => return report(&p),
            };
            if let Some(l) = listen {
                c.listen = l;
            }
            c.read_only |= read_only;
            // Again: --listen may have moved it.
            if let Err(p) = c.validate() {
                return report(&p);
            }
            serve(c).await
        }
        Command::MigrateDb { from, to } => migrate_db(&from, &to).await,
        Command::Demo { listen } => {
            let token = CancellationToken::new();
            on_signal(token.clone());
            demo::run(listen, token).await
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `lookout migrate-db`: the copy with a line of progress per table (and every 20 batches
/// within a large one); Ctrl-C stops it after the batch being written.
async fn migrate_db(from: &str, to: &str) -> anyhow::Result<()> {
    use std::ops::ControlFlow;
    let token = CancellationToken::new();
    on_signal(token.clone());
    let mut batches = 0u64;
    let copied = store::copy::copy(from, to, |p| {
        batches += 1;
        if p.read == p.total || batches.is_multiple_of(20) {
            eprintln!(
                "{}: {} of {} rows read, {} written",
                p.table, p.read, p.total, p.written
            );
        }
        if token.is_cancelled() {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .await?;
    let written: u64 = copied.iter().map(|(_, n)| n).sum();
    println!("copied {written} rows; the history is complete in the target");
    Ok(())
}

async fn serve(c: Config) -> anyhow::Result<()> {
    let token = CancellationToken::new();
    on_signal(token.clone());
    // A database that cannot be opened now (read-only or full filesystem, a lock) is shown
    // and opened later; a bad URL or a migration that does not fit stops here.
    // One clock for everything that asks the time: sessions, storage health, sync, rules.
    let now = lookout_server::clock::wall_clock();
    if store::Engine::of(&c.database_url) == Some(store::Engine::Postgres)
        && c.auth.session_key.is_none()
    {
        tracing::warn!("auth.session_key is not set: replicas sharing this PostgreSQL database each make their own key, so a session or form made by one is refused by the others; give them all the same key");
    }
    let db = store::Db::open_or_retry(&c.database_url, now.clone()).await?;
    let listener = tokio::net::TcpListener::bind(c.listen_addr())
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", c.listen))?;
    let clusters = lookout_server::connect(&c.clusters).await;
    tracing::info!(listen = %c.listen, clusters = c.clusters.len(), "serving");
    let banner = (c.auth.mode == AuthMode::None).then(|| "Sign-in is off (auth.mode = \"none\"): everyone who reaches this address sees every cluster.".to_string());
    let auth = lookout_server::auth::Auth::from_config(&c)
        .await?
        .with_clock(now.clone());
    let probe = lookout_server::probe::worker::ProbeParts::from_config(&c)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let settings = WatchSettings {
        thresholds: c.thresholds(),
        crd_recheck: c.watch.crd_recheck_interval,
        list_timeout: c.watch.list_timeout,
        now,
        history_retention: c.history_retention(),
        budget_interval: std::time::Duration::from_secs(30),
        ..WatchSettings::default()
    };
    app::run(
        app::Parts {
            listener,
            db,
            clusters,
            settings,
            banner,
            support: c.support.contact.clone(),
            read_only: c.read_only,
            auth,
            limits: c.http.clone(),
            probe,
        },
        token,
    )
    .await
}

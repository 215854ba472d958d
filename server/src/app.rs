//! Builds the application from injected parts (listener, database, cluster clients) and runs
//! it until the shutdown token is cancelled. Tests start the very same thing on port 0.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::actions::Actions;
use crate::clusters::{ClusterSource, Registry, WatchSettings};
use crate::fleet::{Budgets, Changes};
use crate::http::{self, AppState};
use crate::store::audit::AuditLog;
use crate::store::{self, sync_events, Db};

/// How long open requests get to finish after shutdown starts.
const DRAIN: Duration = Duration::from_secs(5);

/// Everything the application needs from the outside.
pub struct Parts {
    pub listener: TcpListener,
    pub db: Db,
    pub clusters: Vec<ClusterSource>,
    pub settings: WatchSettings,
    /// Shown on every page.
    pub banner: Option<String>,
    /// `[support] contact`: shown to customers beside what only the platform can fix.
    pub support: Option<String>,
    /// Hide every action and refuse the action API (`read_only = true`).
    pub read_only: bool,
    /// Sign-in, roles and scopes.
    pub auth: crate::auth::Auth,
    /// Connection limits (`[http]`).
    pub limits: crate::config::HttpConfig,
    /// The probe of what hosts serve (`[probe]`); None: off.
    pub probe: Option<crate::probe::worker::ProbeParts>,
}

/// Serves until `shutdown`, then stops the watchers, flushes the writer and closes the
/// database.
pub async fn run(parts: Parts, shutdown: CancellationToken) -> anyhow::Result<()> {
    let Parts {
        listener,
        db,
        clusters,
        settings,
        banner,
        support,
        read_only,
        auth,
        limits,
        probe,
    } = parts;
    let (events_tx, events_rx) = mpsc::channel(1024);
    let events = spawn_writer(
        sync_events::writer(),
        &db,
        events_rx,
        &shutdown,
        &settings.now,
    );
    let (history_tx, history_rx) = mpsc::channel(10_000);
    let history = spawn_writer(
        store::history::writer(db.engine),
        &db,
        history_rx,
        &shutdown,
        &settings.now,
    );
    let (audit_tx, audit_rx) = mpsc::channel(1024);
    let audit = spawn_writer(
        store::audit::writer(),
        &db,
        audit_rx,
        &shutdown,
        &settings.now,
    );
    let maintenance = tokio::spawn(store::history::run_maintenance(
        db.separate_writer(),
        settings.history_retention,
        settings.now.clone(),
        shutdown.clone(),
    ));
    let budget_interval = settings.budget_interval;
    let now = settings.now.clone();
    let now_for_probe = settings.now.clone();
    let review_clients: Vec<(String, kube::Client)> = clusters
        .iter()
        .filter_map(|c| c.client.as_ref().ok().map(|k| (c.name.clone(), k.clone())))
        .collect();
    let clients = review_clients.iter().cloned().collect();
    let changes = Changes::default();
    let fleet_budgets = Arc::new(Budgets::new(changes.clone()));
    let registry = Registry::start(
        clusters,
        settings,
        events_tx,
        Some(history_tx),
        (changes.clone(), fleet_budgets.clone()),
        shutdown.clone(),
    );
    let publish = {
        let fleet_budgets = fleet_budgets.clone();
        move |b| fleet_budgets.set(b)
    };
    let budgets = tokio::spawn(store::history::run_budgets(
        db.reader.clone(),
        budget_interval,
        now,
        publish,
        shutdown.clone(),
    ));
    let probe_status = registry.probes.clone();
    let prober = probe.map(|p| {
        let probed = registry
            .records()
            .iter()
            .filter(|r| p.clusters.contains(&r.name))
            .cloned()
            .collect();
        // On a thread of its own at the lowest priority: a round's handshakes never take
        // CPU from requests.
        let (done, finished) = tokio::sync::oneshot::channel::<()>();
        let (status, stop) = (probe_status.clone(), shutdown.clone());
        let db_for_probe = db.clone();
        // Built on the probe's own runtime: a PostgreSQL pool's connections belong to it.
        let work = async move {
            let pool = db_for_probe.separate_writer();
            crate::probe::worker::run(p.settings, probed, Some(pool), now_for_probe, status, stop)
                .await
        };
        let started = std::thread::Builder::new()
            .name("lookout-probe".into())
            .spawn(move || {
                crate::background::lower_priority();
                match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt.block_on(work),
                    Err(e) => tracing::error!(error = %e, "the probe could not start"),
                }
                let _ = done.send(());
            });
        if let Err(e) = started {
            tracing::error!(error = %e, "the probe thread could not start");
        }
        finished
    });
    // Where the clusters decide who sees what, they are asked with these clients.
    let mut auth = auth;
    if auth.access_source != crate::config::AccessSource::Config {
        auth.reviews = Some(crate::auth::reviews::AccessReviews::new(
            review_clients,
            registry.clone(),
            auth.access_ttl,
            auth.access_reviews_in_flight,
        ));
    }
    // Sign-outs from before this start stay in force.
    match store::sessions::ended(&db.reader, auth.now()).await {
        Ok(ended) => auth.remember_ended(ended),
        Err(e) => {
            tracing::error!(error = %e, "ended sign-ins could not be read; copies of signed-out session cookies work until they expire")
        }
    }
    let auth = Arc::new(auth);
    if db.engine == store::Engine::Postgres {
        // Other replicas share the database: a sign-out there is refused here too.
        let (now, remember) = (auth.clone(), auth.clone());
        tokio::spawn(store::sessions::follow_ended(
            db.reader.clone(),
            move || now.now(),
            move |ended| remember.remember_ended(ended),
            shutdown.clone(),
        ));
    }
    let router = http::router(AppState {
        registry: registry.clone(),
        changes: changes.clone(),
        budgets: fleet_budgets.clone(),
        history: store::reads::HistoryStore::new(db.reader.clone()).with_writes(db.health.clone()),
        storage: db.health.clone(),
        http: Default::default(),
        streams: Arc::new(http::Streams::new(
            limits.streams_per_identity,
            limits.streams_total,
        )),
        banner,
        support,
        shutdown: shutdown.clone(),
        actions: Arc::new(
            Actions::new(
                registry.clone(),
                (changes, fleet_budgets),
                clients,
                AuditLog {
                    pool: db.writer.clone(),
                    held: audit_tx,
                    health: db.health.clone(),
                },
                read_only,
            )
            .impersonating(auth.impersonate_actions)
            .stored_in(
                db.reader.clone(),
                store::action_records::saver(db.writer.clone()),
            ),
        ),
        auth,
        ended_sessions: store::sessions::EndedSessions {
            pool: db.writer.clone(),
            now: registry.now.clone(),
        },
        probes: probe_status,
    });

    let serve_token = CancellationToken::new();
    let stop = serve_token.clone();
    let server = tokio::spawn(async move { http::serve(listener, router, &limits, stop).await });
    shutdown.cancelled().await;
    tracing::info!("shutting down");
    serve_token.cancel();
    let server = tokio::time::timeout(DRAIN, server).await;
    if server.is_err() {
        tracing::warn!("open requests did not finish within {DRAIN:?}; closing them");
    }
    if let Some(prober) = prober {
        if prober.await.is_err() {
            tracing::error!("the probe ended abnormally");
        }
    }
    registry.stopped().await;
    drop(registry);
    for (name, task) in [
        ("history writer", history),
        ("sync-event writer", events),
        ("audit writer", audit),
        ("history maintenance", maintenance),
        ("budget", budgets),
    ] {
        if let Err(e) = task.await {
            tracing::error!(error = %e, "the {name} ended abnormally");
        }
    }
    db.close().await;
    match server {
        Ok(Ok(Ok(()))) | Err(_) => Ok(()),
        Ok(Ok(Err(e))) => Err(e.into()),
        Ok(Err(e)) => Err(e.into()),
    }
}

/// Starts one database writer (see [`store::writer`]).
fn spawn_writer<T: Send + Sync + 'static>(
    w: store::writer::Writer<T>,
    db: &Db,
    rx: mpsc::Receiver<T>,
    shutdown: &CancellationToken,
    now: &crate::clock::Now,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(store::writer::run(
        w,
        db.writer.clone(),
        rx,
        shutdown.clone(),
        now.clone(),
        db.health.clone(),
    ))
}

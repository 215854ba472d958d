//! Measures the history writer: rows per second through the batched writer while another task
//! keeps reading the history, and whether anything was lost or written twice — on SQLite, on
//! PostgreSQL, and on PostgreSQL with two writers (two replicas' pools) given the same events.
//!
//! `cargo run --release -p lookout-server --example history_throughput [CHALLENGES]` prints a
//! table (target: ≥ 10,000 rows/s with zero "database is locked" errors) and fails when a
//! row was lost or written twice or a write or read failed. PostgreSQL is a server this
//! program starts from the installed programs (as the tests do); without them those rows are
//! skipped with the reason.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use chrono::Utc;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use lookout_app::model::certificate::ChallengeView;
use lookout_app::model::interner::Interner;
use lookout_app::model::read::views::ChallengeQuery;
use lookout_app::model::View;
use lookout_app::ports::HistoryReader;
use lookout_server::store::history::{self, HistoryEvent};
use lookout_server::store::reads::HistoryStore;
use lookout_server::store::Db;

#[path = "../src/store/testdb.rs"]
#[allow(dead_code)]
mod testdb;
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

fn challenge(i: usize, state: &str, strings: &mut Interner) -> Arc<ChallengeView> {
    let meta: ObjectMeta = serde_json::from_value(json!({"name": format!("ch-{i}"), "namespace": format!("tenant-{}", i % 50),
        "uid": format!("00000000-0000-4000-8000-{i:012x}"), "creationTimestamp": "2026-01-01T00:00:00Z"})).expect("metadata");
    let data = json!({"spec": {"dnsName": format!("host-{i}.example.com"), "type": "HTTP-01"},
        "status": {"state": state, "presented": !state.is_empty(), "processing": state == "pending", "reason": if state == "valid" { "Successfully authorized domain" } else { "" }}});
    Arc::new(ChallengeView::project(&meta, &data, strings).expect("a challenge"))
}

/// One measured run.
struct Run {
    engine: &'static str,
    writers: usize,
    rows: i64,
    expected: i64,
    seconds: f64,
    reads: u64,
    read_errors: u64,
    write_errors: u64,
}

/// Writes every Challenge new, pending and valid through `writers` writers (each its own
/// pools on `url`, each sent every event, as replicas sharing a database are), while a task
/// reads the first page of the challenge history in a loop.
async fn run(engine: &'static str, url: &str, n: usize, writers: usize) -> anyhow::Result<Run> {
    let mut dbs = Vec::new();
    for _ in 0..writers {
        dbs.push(Db::open(url).await?);
    }
    let token = CancellationToken::new();
    let mut senders = Vec::new();
    let mut tasks = Vec::new();
    for db in &dbs {
        let (tx, rx) = mpsc::channel(10_000);
        senders.push(tx);
        tasks.push(tokio::spawn(lookout_server::store::writer::run(
            history::writer(db.engine),
            db.writer.clone(),
            rx,
            token.clone(),
            Arc::new(Utc::now),
            db.health.clone(),
        )));
    }

    // Pages reading while the writers write.
    let reads = Arc::new(AtomicU64::new(0));
    let read_errors = Arc::new(AtomicU64::new(0));
    let reader = {
        let (history, reads, errors, stop) = (
            HistoryStore::new(dbs[0].reader.clone()),
            reads.clone(),
            read_errors.clone(),
            token.clone(),
        );
        tokio::spawn(async move {
            // The first page of everything, as the challenge list reads it.
            let everything = View::whole_fleet(["bench"]);
            let query = ChallengeQuery {
                page: 1,
                per_page: 100,
                ..Default::default()
            };
            while !stop.is_cancelled() {
                match history.challenges(&everything, &query).await {
                    Ok(_) => reads.fetch_add(1, Ordering::Relaxed),
                    Err(e) => {
                        eprintln!("read error: {}", e.0);
                        errors.fetch_add(1, Ordering::Relaxed)
                    }
                };
            }
        })
    };

    let mut strings = Interner::default();
    let started = Instant::now();
    for (s, state) in ["", "pending", "valid"].into_iter().enumerate() {
        for i in 0..n {
            let view = challenge(i, state, &mut strings);
            // Each state of an object at a later resource version, as the API server has it.
            let revision = (s * n + i + 1).to_string();
            for tx in &senders {
                let event = HistoryEvent::Challenge {
                    cluster: "bench".into(),
                    view: view.clone(),
                    deleted: false,
                    revision: None,
                }
                .at_revision(Some(&revision));
                tx.send(event).await?;
            }
        }
    }
    drop(senders);
    for task in tasks {
        task.await?;
    }
    let seconds = started.elapsed().as_secs_f64();
    token.cancel();
    reader.await?;

    let db = &dbs[0];
    let challenges: i64 = sqlx::query_scalar("SELECT count(*) FROM challenges")
        .fetch_one(&db.reader)
        .await?;
    let transitions: i64 = sqlx::query_scalar("SELECT count(*) FROM challenge_transitions")
        .fetch_one(&db.reader)
        .await?;
    let write_errors = dbs
        .iter()
        .flat_map(|db| db.health.writers().into_values())
        .map(|w| w.errors)
        .sum();
    for db in dbs {
        db.close().await;
    }
    Ok(Run {
        engine,
        writers,
        rows: challenges + transitions,
        expected: (n as i64) * 4,
        seconds,
        reads: reads.load(Ordering::Relaxed),
        read_errors: read_errors.load(Ordering::Relaxed),
        write_errors,
    })
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20_000);
    let dir = tempfile::tempdir()?;
    let sqlite = format!("sqlite://{}", dir.path().join("bench.db").display());
    let mut runs = vec![run("SQLite", &sqlite, n, 1).await?];
    match testdb::postgres_url().await {
        Some(url) => runs.push(run("PostgreSQL", &url, n, 1).await?),
        None => eprintln!("PostgreSQL rows skipped: its programs are not installed"),
    }
    if let Some(url) = testdb::postgres_url().await {
        runs.push(run("PostgreSQL", &url, n, 2).await?);
    }
    println!("| engine | writers (same events) | events per writer | rows written | expected rows | seconds | rows/s | concurrent reads | read errors | failed writes | target |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for r in &runs {
        println!(
            "| {} | {} | {} | {} | {} | {:.2} | {:.0} | {} | {} | {} | ≥ 10,000 rows/s, 0 errors, nothing twice |",
            r.engine,
            r.writers,
            3 * n,
            r.rows,
            r.expected,
            r.seconds,
            r.rows as f64 / r.seconds,
            r.reads,
            r.read_errors,
            r.write_errors
        );
    }
    // Speed is measured, not asserted; losing, doubling or failing a write is a defect.
    for r in &runs {
        anyhow::ensure!(
            r.rows == r.expected && r.write_errors == 0 && r.read_errors == 0,
            "the history writer on {} ({} writers) lost, doubled or failed: {} of {} rows, {} failed writes, {} failed reads",
            r.engine,
            r.writers,
            r.rows,
            r.expected,
            r.write_errors,
            r.read_errors
        );
    }
    Ok(())
}

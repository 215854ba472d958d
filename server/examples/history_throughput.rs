//! Measures the history writer: rows per second through the single batched writer while
//! another task keeps reading the history, and whether anything was lost.
//!
//! `cargo run --release -p lookout-server --example history_throughput [CHALLENGES]` prints a
//! table (target: ≥ 10,000 rows/s with zero "database is locked" errors) and fails when a
//! row was lost or a write or read failed.

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

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20_000);
    let dir = tempfile::tempdir()?;
    let db = Db::open(&format!(
        "sqlite://{}",
        dir.path().join("bench.db").display()
    ))
    .await?;
    let token = CancellationToken::new();
    let (tx, rx) = mpsc::channel(10_000);
    let writer = tokio::spawn(lookout_server::store::writer::run(
        history::writer(),
        db.writer.clone(),
        rx,
        token.clone(),
        Arc::new(Utc::now),
        db.health.clone(),
    ));

    // Pages reading while the writer writes.
    let reads = Arc::new(AtomicU64::new(0));
    let read_errors = Arc::new(AtomicU64::new(0));
    let reader = {
        let (history, reads, errors, stop) = (
            HistoryStore::new(db.reader.clone()),
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
    for state in ["", "pending", "valid"] {
        for i in 0..n {
            tx.send(HistoryEvent::Challenge {
                cluster: "bench".into(),
                view: challenge(i, state, &mut strings),
                deleted: false,
                revision: None,
            })
            .await?;
        }
    }
    drop(tx);
    writer.await?;
    let elapsed = started.elapsed();
    token.cancel();
    reader.await?;

    let challenges: i64 = sqlx::query_scalar("SELECT count(*) FROM challenges")
        .fetch_one(&db.reader)
        .await?;
    let transitions: i64 = sqlx::query_scalar("SELECT count(*) FROM challenge_transitions")
        .fetch_one(&db.reader)
        .await?;
    let rows = challenges + transitions;
    let expected = (n as i64) * 4;
    let write_errors: u64 = db.health.writers().values().map(|w| w.errors).sum();
    println!("| events | rows written | expected rows | seconds | rows/s | concurrent reads | read errors (locked) | failed writes | target |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    println!(
        "| {} | {rows} | {expected} | {:.2} | {:.0} | {} | {} | {write_errors} | ≥ 10,000 rows/s, 0 errors |",
        3 * n,
        elapsed.as_secs_f64(),
        rows as f64 / elapsed.as_secs_f64(),
        reads.load(Ordering::Relaxed),
        read_errors.load(Ordering::Relaxed)
    );
    db.close().await;
    // Speed is measured, not asserted; losing or failing a write is a defect.
    let read_errors = read_errors.load(Ordering::Relaxed);
    anyhow::ensure!(
        rows == expected && write_errors == 0 && read_errors == 0,
        "the history writer lost data or failed: {rows} of {expected} rows, {write_errors} failed writes, {read_errors} locked reads"
    );
    Ok(())
}

//! The copy between engines: every table, both ways, an interrupted copy finished by running
//! it again with nothing twice, and a target holding another history refused.

use std::ops::ControlFlow;

use super::*;
use crate::store::testdb;

/// Every row of every table, by table, in id order.
async fn everything(db: &Db) -> Vec<(&'static str, Vec<Vec<Value>>)> {
    let mut out = Vec::new();
    for table in TABLES {
        let columns = columns(db, table).await.unwrap();
        let sql = format!("SELECT {} FROM {table} ORDER BY id", names(&columns));
        let rows = sqlx::query(&sql).fetch_all(&db.reader).await.unwrap();
        let rows = rows.iter().map(|r| values(r, &columns).unwrap()).collect();
        out.push((table, rows));
    }
    out
}

/// A history with more than a batch of Challenges (each with the transition the database
/// made) and rows in every other table.
async fn fill(db: &Db) {
    let at = "2026-06-01T10:00:00.000Z";
    for i in 0..(BATCH + 120) {
        sqlx::query("INSERT INTO challenges (cluster, namespace, name, uid, dns_name, challenge_type, state, presented, processing, last_seen, resource_version) VALUES ('zrh', 'shop', $1, $2, 'h.example', 'HTTP-01', 'pending', 0, 1, $3, $4)")
            .bind(format!("c{i}"))
            .bind(format!("u{i}"))
            .bind(at)
            .bind(i as i64)
            .execute(&db.writer)
            .await
            .unwrap();
    }
    // A second state of a few: more transitions than Challenges.
    sqlx::query("UPDATE challenges SET state = 'valid', processing = 0 WHERE id % 7 = 0")
        .execute(&db.writer)
        .await
        .unwrap();
    for sql in [
        "INSERT INTO cluster_sync_events (cluster, state, error, at) VALUES ('zrh', 'failed', 'refused', '2026-06-01T09:00:00.000Z')",
        "INSERT INTO orders (cluster, namespace, name, uid, request, state, created_at, last_seen, replaces) VALUES ('zrh', 'shop', 'o', 'ou', 'r', 'pending', '2026-06-01T09:00:00.000Z', '2026-06-01T09:00:00.000Z', 1)",
        "INSERT INTO order_transitions (order_id, at, state) VALUES (1, '2026-06-01T09:00:00.000Z', 'pending')",
        "INSERT INTO certificate_requests (cluster, namespace, name, uid, certificate, revision, names, outcome, last_seen) VALUES ('zrh', 'shop', 'r', 'ru', 'shop-tls', 3, '[\"shop.example\"]', 'issued', '2026-06-01T09:00:00.000Z')",
        "INSERT INTO certificate_readiness (cluster, namespace, name, at, status, reason, message) VALUES ('zrh', 'shop', 'shop-tls', '2026-06-01T09:00:00.000Z', 'False', 'Failed', 'it''s \"quoted\" — and ünïcode')",
        "INSERT INTO audit_log (at, actor, action, cluster, namespace, kind, name, dry_run, outcome) VALUES ('2026-06-01T09:00:00.000Z', 'sue', 'renew', 'zrh', 'shop', 'Certificate', 'shop-tls', 1, 'ok')",
        "INSERT INTO ended_sessions (id, expires) VALUES ('s1', 4102444800)",
        "INSERT INTO probe_results (cluster, host, address, at, namespaces, outcome) VALUES ('zrh', 'shop.example', '192.0.2.1', '2026-06-01T09:00:00.000Z', '[\"shop\"]', '{}')",
        "INSERT INTO action_records (id, actor, at, record) VALUES ('a1', 'sue', '2026-06-01T09:00:00.000Z', '{}')",
    ] {
        sqlx::query(sql).execute(&db.writer).await.unwrap();
    }
}

/// Copies `from` into `to`, stopping once the first batch of transitions is written; then
/// again to the end. Returns the rows the second run wrote.
async fn interrupted_then_finished(from: &str, to: &str) -> Copied {
    let stopped = copy(from, to, |p| {
        if p.table == "challenge_transitions" && p.read >= BATCH as u64 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .await;
    assert!(
        matches!(
            stopped,
            Err(CopyError::Stopped {
                table: "challenge_transitions"
            })
        ),
        "{stopped:?}"
    );
    let mut seen = Vec::new();
    let copied = copy(from, to, |p| {
        seen.push(p.clone());
        ControlFlow::Continue(())
    })
    .await
    .unwrap();
    // Progress was told for every table, up to its total.
    for table in TABLES {
        let last = seen.iter().rev().find(|p| p.table == table).unwrap();
        assert_eq!(last.read, last.total, "{table}");
    }
    copied
}

#[tokio::test]
async fn the_copy_names_every_table_of_the_schema() {
    let db = testdb::sqlite().await;
    let mut tables: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\' AND name NOT LIKE 'sqlite%'",
    )
    .fetch_all(&db.reader)
    .await
    .unwrap();
    tables.sort();
    let mut ours: Vec<String> = TABLES.iter().map(|t| t.to_string()).collect();
    ours.sort();
    assert_eq!(tables, ours);
}

#[tokio::test]
async fn an_interrupted_copy_is_finished_by_running_it_again_both_ways() {
    let Some(postgres) = testdb::postgres_url().await else {
        return;
    };
    let sqlite = testdb::sqlite().await;
    fill(&sqlite).await;
    let expected = everything(&sqlite).await;
    let transitions = expected
        .iter()
        .find(|(t, _)| *t == "challenge_transitions")
        .unwrap()
        .1
        .len();
    assert!(transitions > BATCH + 120, "{transitions} transitions");

    // SQLite to PostgreSQL.
    let copied = interrupted_then_finished(&sqlite.url, &postgres).await;
    let to_postgres = Db::open(&postgres).await.unwrap();
    assert_eq!(
        everything(&to_postgres).await,
        expected,
        "nothing lost, nothing twice"
    );
    let written = |table: &str| copied.iter().find(|(t, _)| *t == table).unwrap().1;
    assert_eq!(written("challenges"), 0, "the first run copied them all");
    assert_eq!(
        written("challenge_transitions") as usize,
        transitions - BATCH,
        "the second run wrote only what the first had not"
    );
    // Lookout goes on writing there: new rows get new ids.
    sqlx::query("INSERT INTO challenges (cluster, namespace, name, uid, dns_name, challenge_type, state, presented, processing, last_seen) VALUES ('zrh', 'shop', 'new', 'new', 'h', 'HTTP-01', '', 0, 0, '2026-06-02T00:00:00.000Z')")
        .execute(&to_postgres.writer)
        .await
        .unwrap();
    sqlx::query("DELETE FROM challenges WHERE uid = 'new'")
        .execute(&to_postgres.writer)
        .await
        .unwrap();
    to_postgres.close().await;

    // And back, PostgreSQL to a new SQLite file.
    let back = testdb::sqlite().await;
    interrupted_then_finished(&postgres, &back.url).await;
    assert_eq!(everything(&back).await, expected);

    // A third run changes nothing.
    let again = copy(&sqlite.url, &postgres, |_| ControlFlow::Continue(()))
        .await
        .unwrap();
    assert!(again.iter().all(|(_, n)| *n == 0), "{again:?}");
}

#[tokio::test]
async fn a_target_with_another_history_is_refused_before_anything_is_written() {
    for target in testdb::engines().await {
        let source = testdb::sqlite().await;
        fill(&source).await;
        sqlx::query("INSERT INTO audit_log (at, actor, action, cluster, namespace, kind, name, dry_run, outcome) VALUES ('2026-07-01T00:00:00.000Z', 'someone else', 'renew', 'gva', 'web', 'Certificate', 'web-tls', 0, 'ok')")
            .execute(&target.writer)
            .await
            .unwrap();
        let before = everything(&target).await;
        let err = copy(&source.url, &target.url, |_| ControlFlow::Continue(()))
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                CopyError::Different {
                    table: "audit_log",
                    ..
                }
            ),
            "{err}"
        );
        assert!(err
            .to_string()
            .contains("already holds a different history"));
        assert_eq!(everything(&target).await, before, "nothing written");
    }
}

#[tokio::test]
async fn a_missing_sqlite_source_is_refused_not_created() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("typo.db");
    let target = testdb::sqlite().await;
    let err = copy(
        &format!("sqlite://{}", missing.display()),
        &target.url,
        |_| ControlFlow::Continue(()),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, CopyError::NoSource(_)), "{err}");
    assert!(!missing.exists(), "no empty database made in its place");
}

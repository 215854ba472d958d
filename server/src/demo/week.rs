//! The demo's week before it starts: issuances Let's Encrypt counted (kubesim's CA is seeded
//! with them) and Lookout would have recorded had it been running.

/// When `globex-web/promo` was issued the `i`th of five times (1–5), within the last day:
/// what kubesim's Let's Encrypt counts and what Lookout's history recorded are the same
/// issuances.
pub(super) fn promo_issued_at(
    now: chrono::DateTime<chrono::Utc>,
    i: i64,
) -> chrono::DateTime<chrono::Utc> {
    now - chrono::Duration::hours(20) + chrono::Duration::minutes(10 * i)
}

/// How many one-day campaign sites `globex-web` had certificates issued for two days ago
/// (each a new name, so each took a slot of globex.example's 50 per 7 days; the Certificates
/// are gone since).
pub(super) const CAMPAIGNS: i64 = 30;

pub(super) fn campaign_name(i: i64) -> String {
    format!("sale-{i}.globex.example")
}

/// When the `i`th campaign certificate (1–30) was issued: one every 10 minutes from 40 hours
/// before the demo starts. Boulder's bucket for a registered domain gets a slot back every
/// 3.36 hours, so globex.example's budget stays in use for about two and a half days of demo
/// time (an hour at 60×) rather than draining in the first minutes; each name's own bucket
/// (5 per 7 days, a slot back every 33.6 hours) is full again by the start, so the campaign
/// adds no row per name to the budgets page.
pub(super) fn campaign_issued_at(
    now: chrono::DateTime<chrono::Utc>,
    i: i64,
) -> chrono::DateTime<chrono::Utc> {
    now - chrono::Duration::hours(40) + chrono::Duration::minutes(10 * i)
}

/// What Lookout would have recorded had it been running all week: the five issuances of
/// `globex-web/promo` that used up its exact-set budget and the campaign certificates of two
/// days ago that spent much of globex.example's (kubesim's Let's Encrypt counts the same
/// issuances), so the budget page, the `acme.rate-limit-budget` finding and a renew's
/// preview tell the story.
pub(super) async fn history(
    db: &crate::store::Db,
    now: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<()> {
    // Five issuances of one exact set within the last day (as kubesim's CA was seeded): a
    // bucket of 5 that gets one back every ~34 h is empty.
    for day in 1..=5i64 {
        let at = promo_issued_at(now, day).to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        sqlx::query(
            "INSERT INTO certificate_requests (cluster, namespace, name, uid, certificate, revision, issuer_kind, issuer_name, acme_server, names, outcome, reason, message, created_at, finished_at, last_seen, deleted_at) \
             VALUES ('zrh-prod', 'globex-web', $1, $2, 'promo-tls', $3, 'ClusterIssuer', 'letsencrypt-prod', 'https://acme-v02.api.letsencrypt.org/directory', '[\"promo.globex.example\"]', 'issued', NULL, NULL, $4, $5, $6, $7)",
        )
        .bind(format!("promo-tls-old-{day}"))
        .bind(format!("demo-history-promo-{day}"))
        .bind(-day)
        .bind(&at)
        .bind(&at)
        .bind(&at)
        .bind(&at)
        .execute(&db.writer)
        .await?;
    }
    for i in 1..=CAMPAIGNS {
        let at = campaign_issued_at(now, i).to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let names = serde_json::to_string(&[campaign_name(i)])?;
        sqlx::query(
            "INSERT INTO certificate_requests (cluster, namespace, name, uid, certificate, revision, issuer_kind, issuer_name, acme_server, names, outcome, reason, message, created_at, finished_at, last_seen, deleted_at) \
             VALUES ('zrh-prod', 'globex-web', $1, $2, $3, 1, 'ClusterIssuer', 'letsencrypt-prod', 'https://acme-v02.api.letsencrypt.org/directory', $4, 'issued', NULL, NULL, $5, $6, $7, $8)",
        )
        .bind(format!("sale-{i}-tls-1"))
        .bind(format!("demo-history-campaign-{i}"))
        .bind(format!("sale-{i}-tls"))
        .bind(&names)
        .bind(&at)
        .bind(&at)
        .bind(&at)
        .bind(&at)
        .execute(&db.writer)
        .await?;
    }
    Ok(())
}

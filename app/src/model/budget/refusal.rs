//! The CA's own word on a budget: an order it refused over a limit, with the time it named.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use super::{rate, set_key, Budget, Key, Limit, Origin};

/// An order the CA refused over a limit, with the time it named ("retry after …"), from a
/// failed CertificateRequest. Boulder's word on a budget outranks the replay: Lookout's
/// history may miss spends (another fleet, an account used elsewhere, a gap in the watch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaRefusal {
    pub server: String,
    pub limit: Limit,
    /// The budget's key, as [`Budget::key`].
    pub key: String,
    /// The account, for the per-account limits.
    pub account: Option<String>,
    pub at: DateTime<Utc>,
    pub retry_after: DateTime<Utc>,
    pub origin: Origin,
}

impl CaRefusal {
    /// Reads a refusal from the CA's message about an order for `names` by `account`: which
    /// limit, from Boulder's wording (`ratelimits/limiter.go`, `ra/ra.go`), and its retry
    /// time. None for a message that is no such refusal or names no retry time.
    pub fn read(
        server: &str,
        account: &str,
        names: &[String],
        message: &str,
        at: DateTime<Utc>,
        origin: Origin,
    ) -> Option<CaRefusal> {
        let retry_after = crate::model::reasons::parse_retry_after(message)?;
        let quoted = || {
            let start = message.find("for \"")? + "for \"".len();
            let end = message[start..].find('"')? + start;
            Some(message[start..end].to_ascii_lowercase())
        };
        let (limit, key, account) = if message.contains("exact set") {
            (Limit::ExactSet, set_key(names), None)
        } else if message.contains("too many new orders") {
            (
                Limit::NewOrders,
                account.to_string(),
                Some(account.to_string()),
            )
        } else if message.contains("too many failed authorizations") {
            (
                Limit::FailedAuthorizations,
                quoted()?,
                Some(account.to_string()),
            )
        } else if message.contains("too many certificates") {
            (Limit::RegisteredDomain, quoted()?, None)
        } else {
            return None;
        };
        Some(CaRefusal {
            server: server.to_string(),
            limit,
            key,
            account,
            at,
            retry_after,
            origin,
        })
    }
}

/// Applies the CA's refusals still in force: the budget has no room until the latest retry
/// time the CA named, whatever the replay counted (a budget the history never saw spent
/// appears, its spends all from elsewhere).
pub(super) fn refusals(out: &mut Vec<Budget>, refusals: &[CaRefusal], now: DateTime<Utc>) {
    let mut latest: BTreeMap<Key, &CaRefusal> = BTreeMap::new();
    for r in refusals
        .iter()
        .filter(|r| r.at <= now && r.retry_after > now)
    {
        let key: Key = (r.server.clone(), r.limit, r.key.clone(), r.account.clone());
        let entry = latest.entry(key).or_insert(r);
        if (r.at, r.retry_after) > (entry.at, entry.retry_after) {
            *entry = r;
        }
    }
    for ((server, limit, key, account), r) in latest {
        let capacity = u32::try_from(rate(&server, limit).burst).unwrap_or(u32::MAX);
        let i = match out.iter().position(|b| {
            b.server == server && b.limit == limit && b.key == key && b.account == account
        }) {
            Some(i) => i,
            None => {
                out.push(Budget {
                    server,
                    limit,
                    key,
                    account,
                    used: capacity,
                    capacity,
                    ratio: 1.0,
                    frees_at: None,
                    latest: Some(r.origin.clone()),
                    counted: Vec::new(),
                    elsewhere: 0,
                    clusters: vec![r.origin.cluster.clone()],
                    namespaces: vec![format!("{}/{}", r.origin.cluster, r.origin.namespace)],
                    spent_by: Vec::new(),
                    refused: None,
                    frees_at_from_ca: false,
                });
                out.len() - 1
            }
        };
        let b = &mut out[i];
        b.used = b.capacity;
        b.ratio = 1.0;
        b.frees_at = Some(r.retry_after);
        b.frees_at_from_ca = true;
        b.refused = Some(r.origin.clone());
    }
}

//! What planned issuances (a renew, a restart, a bulk run) would cost of the budgets, as
//! their previews show it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::*;

/// What one more issuance would do to a budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Impact {
    pub server: String,
    pub limit: Limit,
    pub key: String,
    pub used: u32,
    pub capacity: u32,
    /// `used` after the planned issuances.
    pub after: u32,
    /// Let's Encrypt would refuse at least one of them.
    pub exceeds: bool,
    /// When one more becomes available.
    pub frees_at: Option<DateTime<Utc>>,
    /// Of `used`, how many came from outside what the viewer sees.
    pub elsewhere: u32,
}

/// Renders impacts — computed now, or kept in someone else's record — through a viewer's
/// view of the current budgets, each by [`Budget::for_viewer`] (the one rule for what a
/// viewer who does not see everything reads of a budget): how many spends came from
/// elsewhere, the time one frees up only as the viewer's budget has it (kept when every
/// spend is theirs, or when the CA named it to their own object), and the server as their
/// budget names it. A budget no longer in use tells nothing more.
pub fn as_seen_by(impacts: &mut [Impact], budgets: &[Budget], sees: impl Fn(&Origin) -> bool) {
    for i in impacts.iter_mut() {
        let current = budgets
            .iter()
            .find(|b| b.server == i.server && b.limit == i.limit && b.key == i.key);
        let seen = current.and_then(|b| b.for_viewer(&sees));
        i.elsewhere = seen
            .as_ref()
            .map_or_else(|| current.map_or(0, |b| b.used), |b| b.elsewhere);
        // Nothing was spent when it was judged: nothing to free up, whatever the budget
        // holds since (a kept record read later, on another replica).
        i.frees_at = seen
            .as_ref()
            .and_then(|b| b.frees_at)
            .filter(|_| i.used > 0);
        i.server = seen.map_or_else(|| shown_server(&i.server), |b| b.server);
    }
}

/// A planned issuance: its ACME server, its ACME account when known, its names, and
/// whether it is a renewal (that exact set issued in the last 120 days).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    pub server: String,
    pub account: Option<String>,
    pub names: Vec<String>,
    pub renewal: bool,
}

/// The budgets that `planned` issuances touch, with what they leave: each costs one of its
/// exact set, and (unless a renewal) one per registered domain and one new order of its
/// account; the failed-authorization budget of each name is checked (a name without room is
/// refused), and a paused name is refused. Sorted: refused first, then fullest.
pub fn impact(budgets: &[Budget], planned: &[Planned]) -> Vec<Impact> {
    let mut adds: BTreeMap<(String, Limit, String, Option<String>), u32> = BTreeMap::new();
    for p in planned.iter().filter(|p| !p.names.is_empty()) {
        *adds
            .entry((p.server.clone(), Limit::ExactSet, set_key(&p.names), None))
            .or_default() += 1;
        if !p.renewal {
            for d in domains(&p.names) {
                *adds
                    .entry((p.server.clone(), Limit::RegisteredDomain, d, None))
                    .or_default() += 1;
            }
            if let Some(a) = &p.account {
                *adds
                    .entry((
                        p.server.clone(),
                        Limit::NewOrders,
                        a.clone(),
                        Some(a.clone()),
                    ))
                    .or_default() += 1;
            }
        }
        if let Some(a) = &p.account {
            for n in &p.names {
                for limit in [Limit::FailedAuthorizations, Limit::Paused] {
                    adds.entry((
                        p.server.clone(),
                        limit,
                        n.to_ascii_lowercase(),
                        Some(a.clone()),
                    ))
                    .or_default();
                }
            }
        }
    }
    let mut out: Vec<Impact> = adds
        .into_iter()
        .filter_map(|((server, limit, key, account), n)| {
            let current = budgets.iter().find(|b| {
                b.server == server && b.limit == limit && b.key == key && b.account == account
            });
            // Checked, not spent: shown when it already blocks or nearly does — and the
            // failed authorizations of a name as soon as it has failed once, since that is
            // what a retry that fails again burns.
            let shown =
                |b: &Budget| b.ratio >= 0.8 || (limit == Limit::FailedAuthorizations && b.used > 0);
            if n == 0 && !current.is_some_and(shown) {
                return None;
            }
            let used = current.map_or(0, |b| b.used);
            let capacity = current.map_or_else(
                || u32::try_from(rate(&server, limit).burst).unwrap_or(u32::MAX),
                |b| b.capacity,
            );
            Some(Impact {
                elsewhere: 0,
                after: used + n,
                exceeds: if n == 0 {
                    used >= capacity
                } else {
                    used + n > capacity
                },
                frees_at: current.and_then(|b| b.frees_at),
                server,
                limit,
                key,
                used,
                capacity,
            })
        })
        .collect();
    out.sort_by(|a, b| {
        (b.exceeds, f64::from(b.after) / f64::from(b.capacity))
            .partial_cmp(&(a.exceeds, f64::from(a.after) / f64::from(a.capacity)))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    out
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use chrono::Duration;
    /// Renewal or new, one answer: the same names issued in the last 120 days, by the
    /// Certificate's current certificate or an issuance the history counted on that server.
    #[test]
    fn a_renewal_is_the_same_set_issued_in_the_last_120_days() {
        let now = DateTime::parse_from_rfc3339("2026-12-03T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let names = vec!["Shop.example.com".to_string()];
        let le = "https://acme-v02.api.letsencrypt.org/directory";
        assert!(is_renewal(
            le,
            &names,
            Some(now - Duration::days(119)),
            now,
            &[]
        ));
        assert!(!is_renewal(
            le,
            &names,
            Some(now - Duration::days(121)),
            now,
            &[]
        ));
        assert!(!is_renewal(le, &names, None, now, &[]));
        let history = History {
            issuances: vec![Issuance {
                server: le.into(),
                names: vec!["shop.example.com".into()],
                // Still held in its exact-set budget (one comes back every 33.6 h).
                at: now - Duration::hours(10),
                origin: Origin::default(),
            }],
            ..History::default()
        };
        let budgets = compute(&history, now);
        assert!(
            is_renewal(le, &names, None, now, &budgets),
            "the history counted it"
        );
        let staging = "https://acme-staging-v02.api.letsencrypt.org/directory";
        assert!(
            !is_renewal(staging, &names, None, now, &budgets),
            "another CA's issuance"
        );
    }

    /// A kept record's budget line judged when nothing of the set had been spent reads no time
    /// to free up, even when the budget holds spends since (read later, or on another replica).
    #[test]
    fn a_kept_line_with_nothing_spent_has_nothing_to_free_up() {
        let now = DateTime::parse_from_rfc3339("2026-12-03T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let le = "https://acme-v02.api.letsencrypt.org/directory";
        let planned = [Planned {
            server: le.into(),
            account: None,
            names: vec!["shop.example.com".into()],
            renewal: false,
        }];
        // Judged with nothing spent ...
        let mut kept = impact(&[], &planned);
        let set = kept
            .iter()
            .position(|i| i.limit == Limit::ExactSet)
            .unwrap();
        assert_eq!(kept[set].used, 0);
        // ... read after the set was issued.
        let history = History {
            issuances: vec![Issuance {
                server: le.into(),
                names: vec!["shop.example.com".into()],
                at: now - Duration::hours(1),
                origin: Origin::default(),
            }],
            ..History::default()
        };
        let budgets = compute(&history, now);
        assert!(budgets.iter().any(|b| b.frees_at.is_some()));
        as_seen_by(&mut kept, &budgets, |_| true);
        assert_eq!(kept[set].frees_at, None, "{:?}", kept[set]);
    }
}

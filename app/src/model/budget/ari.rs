//! ARI replacements as Boulder judges them (`wfe2/wfe.go` `validateReplacementOrder`,
//! `core/objects.go` `RenewalInfoSimple`, `sa/saro.go` `ReplacementOrderExists`): an order
//! that `replaces` a certificate is exempt from every limit only while the certificate is in
//! its suggested renewal window and no other replacement of it is under way or done. A
//! replacement the CA refuses (`alreadyReplaced`) is sent again without `replaces` by
//! cert-manager (`pkg/controller/acmeorders/sync.go`), so it then counts as any order; one
//! outside the window is a plain order to Boulder.

use chrono::{DateTime, Duration, Utc};

/// How long a Let's Encrypt certificate is valid (its default profile; the history keeps when
/// a certificate was issued, not until when).
pub(super) const VALIDITY: Duration = Duration::days(90);

/// How long an order lives before it expires unfinished (Boulder's order lifetime).
const ORDER_LIFETIME: Duration = Duration::days(7);

/// One issued certificate, as the replay met it.
struct Issued {
    server: String,
    names: Vec<String>,
    at: DateTime<Utc>,
    /// A replacement order for it was finalized.
    replaced: bool,
    /// A replacement order for it under way since then (until it is issued, fails or expires).
    replacing: Option<DateTime<Utc>>,
}

/// The certificates issued so far and the replacements made of them.
#[derive(Default)]
pub(super) struct Replacements {
    issued: Vec<Issued>,
}

/// The window in which Boulder suggests renewing a certificate issued at `issued` and valid
/// for `validity`: a third of the lifetime before it ends (half for lifetimes under ten
/// days), give or take a hundredth of it.
pub(super) fn suggested_window(
    issued: DateTime<Utc>,
    validity: Duration,
) -> (DateTime<Utc>, DateTime<Utc>) {
    let expires = issued + validity - Duration::seconds(1);
    let lifetime = expires + Duration::seconds(1) - issued;
    let offset = if lifetime < Duration::days(10) {
        lifetime / 2
    } else {
        lifetime / 3
    };
    let ideal = expires - offset;
    let margin = lifetime / 100;
    (ideal - margin, ideal + margin)
}

impl Replacements {
    /// Whether an order for `names` at `at` that `replaces` a certificate is exempt from the
    /// limits. The certificate replaced is the latest one of the server with a name in common
    /// issued before the order; when the history does not reach back to it, the order counts
    /// as any other (the conservative reading).
    pub(super) fn exempt(&mut self, server: &str, names: &[String], at: DateTime<Utc>) -> bool {
        let Some(cert) =
            self.issued.iter_mut().rev().find(|c| {
                c.server == server && c.at < at && c.names.iter().any(|n| names.contains(n))
            })
        else {
            return false;
        };
        let under_way = cert
            .replacing
            .is_some_and(|since| at - since < ORDER_LIFETIME);
        if cert.replaced || under_way {
            return false;
        }
        let (start, end) = suggested_window(cert.at, VALIDITY);
        if start <= at && at < end {
            cert.replacing = Some(at);
            true
        } else {
            false
        }
    }

    /// A certificate issued: it finalizes the replacement under way of any certificate with
    /// a name in common, and may be replaced itself from now on.
    pub(super) fn issued(&mut self, server: &str, names: &[String], at: DateTime<Utc>) {
        for cert in self.issued.iter_mut().filter(|c| {
            c.server == server && c.replacing.is_some() && c.names.iter().any(|n| names.contains(n))
        }) {
            cert.replaced = true;
            cert.replacing = None;
        }
        self.issued.push(Issued {
            server: server.to_string(),
            names: names.to_vec(),
            at,
            replaced: false,
            replacing: None,
        });
    }

    /// A failed authorization for `name`: a replacement under way for it is invalid now, and
    /// no longer stands in the way of another.
    pub(super) fn failed(&mut self, server: &str, name: &str) {
        for cert in self
            .issued
            .iter_mut()
            .filter(|c| c.server == server && c.names.iter().any(|n| n == name))
        {
            cert.replacing = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{failed, find, issued, now, ordered, ACCOUNT, PROD};
    use super::super::{compute, History, Limit};
    use super::*;
    use chrono::TimeZone;

    /// An ARI replacement skips every limit only inside the replaced certificate's suggested
    /// window and while no other replacement of it is under way or done; otherwise (and when the
    /// history does not know the certificate) it is an order like any other.
    #[test]
    fn ari_replacements_are_exempt_only_in_the_window_and_once() {
        let d = Duration::days;
        let s = Duration::seconds;
        let mut history = History {
            issuances: vec![
                issued(PROD, &["a.example.com"], d(60)),
                issued(PROD, &["c.example.com"], d(20)),
                issued(PROD, &["e.example.com"], d(60)),
                issued(PROD, &["i.example.com"], d(60)),
            ],
            ..Default::default()
        };
        // Each order adds a name, so none is a renewal: only ARI can exempt it from new orders.
        // (All within 36 s, the time one new order takes to come back.)
        for (names, ago) in [
            (["a.example.com", "b.example.com"], s(29)), // in the window: exempt
            (["c.example.com", "d.example.com"], s(28)), // 20 days in: outside, counted
            (["e.example.com", "f.example.com"], s(27)), // exempt ...
            (["e.example.com", "f.example.com"], s(26)), // ... and then already under way: counted
            (["g.example.com", "h.example.com"], s(25)), // replaces an unknown certificate: counted
            (["i.example.com", "j.example.com"], s(24)), // exempt, then its authorization fails ...
            (["i.example.com", "j.example.com"], s(22)), // ... so this one is exempt again
        ] {
            history.orders.push(ordered(&names, ago, true));
        }
        history
            .failures
            .push(failed(ACCOUNT, "i.example.com", s(23)));
        let b = compute(&history, now());
        let orders = find(&b, Limit::NewOrders, ACCOUNT).unwrap();
        assert_eq!(orders.used, 3, "{b:#?}");
        // Boulder's window for a 90-day certificate (`RenewalInfoSimple`).
        let at = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let (start, end) = suggested_window(at, VALIDITY);
        assert_eq!(start, Utc.with_ymd_and_hms(2026, 3, 1, 2, 23, 59).unwrap());
        assert_eq!(end, Utc.with_ymd_and_hms(2026, 3, 2, 21, 35, 59).unwrap());
        let (start, end) = suggested_window(at, Duration::hours(160));
        assert_eq!(
            (start, end),
            (
                at + Duration::hours(80) - s(1) - Duration::minutes(96),
                at + Duration::hours(80) - s(1) + Duration::minutes(96)
            )
        );
    }
}

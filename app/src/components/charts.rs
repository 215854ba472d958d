//! Charts drawn as SVG on the server: every bar has a text label and a `<title>`, and each
//! chart a text summary, so nothing depends on colour or on JavaScript.

use chrono::{DateTime, Duration, Utc};
use leptos::prelude::*;

/// One bar of the expiry timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExpiryBucket {
    pub label: String,
    /// What the bar covers, in words (for its tooltip and the summary).
    pub title: String,
    pub count: usize,
    /// `critical`, `warning` or `ok`.
    pub class: &'static str,
}

/// Weeks shown after "expired" before everything later is one bar.
const WEEKS: i64 = 12;
/// Expiring within this is a warning (cert-manager renews at 2/3 of 90 days, so a healthy
/// Let's Encrypt certificate never gets this close).
const SOON: Duration = Duration::days(14);

/// Buckets `notAfter` times: expired, one per week for 12 weeks, later, unknown.
pub(crate) fn expiry_buckets(
    not_after: &[Option<DateTime<Utc>>],
    now: DateTime<Utc>,
) -> Vec<ExpiryBucket> {
    let mut expired = 0;
    let mut weeks = [0usize; WEEKS as usize];
    let mut soon_in_week = [false; WEEKS as usize];
    let mut later = 0;
    let mut unknown = 0;
    for t in not_after {
        match t {
            None => unknown += 1,
            Some(t) if *t <= now => expired += 1,
            Some(t) => {
                let week = (*t - now).num_weeks();
                if week < WEEKS {
                    weeks[week as usize] += 1;
                    if *t - now < SOON {
                        soon_in_week[week as usize] = true;
                    }
                } else {
                    later += 1;
                }
            }
        }
    }
    let mut out = vec![ExpiryBucket {
        label: "expired".into(),
        title: format!("{expired} expired"),
        count: expired,
        class: "critical",
    }];
    for (i, n) in weeks.iter().enumerate() {
        out.push(ExpiryBucket {
            label: format!("{}w", i + 1),
            title: format!("{n} expiring {} to {} days from now", i * 7, (i + 1) * 7),
            count: *n,
            class: if soon_in_week[i] { "warning" } else { "ok" },
        });
    }
    out.push(ExpiryBucket {
        label: "later".into(),
        title: format!("{later} expiring in {} days or more", WEEKS * 7),
        count: later,
        class: "ok",
    });
    out.push(ExpiryBucket {
        label: "?".into(),
        title: format!("{unknown} without a notAfter (never issued)"),
        count: unknown,
        class: "unknown",
    });
    out
}

/// A bar chart of [`expiry_buckets`] with a one-line summary.
pub(crate) fn expiry_chart(
    not_after: &[Option<DateTime<Utc>>],
    now: DateTime<Utc>,
) -> impl IntoView {
    let buckets = expiry_buckets(not_after, now);
    let max = buckets.iter().map(|b| b.count).max().unwrap_or(0).max(1);
    let (bar_w, gap, height, top, bottom) = (38.0, 6.0, 120.0, 16.0, 18.0);
    let width = buckets.len() as f64 * (bar_w + gap);
    let bars = buckets
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let x = i as f64 * (bar_w + gap) + gap / 2.0;
            let h = (b.count as f64 / max as f64 * (height - top - bottom)).round();
            let y = height - bottom - h;
            let title = b.title.clone();
            view! {
                <g>
                    <title>{title}</title>
                    <rect x=x.to_string() y=y.to_string() width=bar_w.to_string() height=h.to_string() class=format!("bar {}", b.class)></rect>
                    <text x=(x + bar_w / 2.0).to_string() y=(y - 3.0).to_string() text-anchor="middle" class="chart-count">{b.count.to_string()}</text>
                    <text x=(x + bar_w / 2.0).to_string() y=(height - 4.0).to_string() text-anchor="middle" class="chart-label">{b.label.clone()}</text>
                </g>
            }
        })
        .collect_view();
    let expired = buckets[0].count;
    let soon = not_after
        .iter()
        .flatten()
        .filter(|t| **t > now && **t - now < SOON)
        .count();
    let summary = format!(
        "{} certificates: {expired} expired, {soon} expiring within 14 days, {} later, {} never issued.",
        not_after.len(),
        not_after.len() - expired - soon - buckets[buckets.len() - 1].count,
        buckets[buckets.len() - 1].count,
    );
    let label = summary.clone();
    view! {
        <figure class="chart" data-testid="expiry-chart">
            <svg viewBox=format!("0 0 {width} {height}") width=width.to_string() height=height.to_string() role="img" aria-label=label>
                <title>"Certificates by expiry week"</title>
                {bars}
            </svg>
            <figcaption>{summary}</figcaption>
        </figure>
    }
}

/// One certificate's lifetime: issued → renewal time → expiry, with "now" marked.
pub(crate) fn lifetime_bar(
    not_before: Option<DateTime<Utc>>,
    renewal: Option<DateTime<Utc>>,
    not_after: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Option<impl IntoView> {
    let (start, end) = (not_before?, not_after?);
    let span = (end - start).num_seconds().max(1) as f64;
    let (width, height) = (400.0, 34.0);
    let x_of = |t: DateTime<Utc>| ((t - start).num_seconds() as f64 / span).clamp(0.0, 1.0) * width;
    let now_x = x_of(now);
    let class = if now >= end {
        "bar critical"
    } else if renewal.is_some_and(|r| now >= r) {
        "bar warning"
    } else {
        "bar ok"
    };
    let renewal_mark = renewal.map(|r| {
        let x = x_of(r).to_string();
        view! { <g><title>"Renewal time"</title><line x1=x.clone() x2=x y1="0" y2="14" class="chart-mark"></line></g> }
    });
    let label = format!(
        "Valid from {} to {}; now is {:.0}% through its lifetime.",
        start.format("%Y-%m-%d"),
        end.format("%Y-%m-%d"),
        now_x / width * 100.0
    );
    let text = label.clone();
    Some(view! {
        <figure class="chart" data-testid="lifetime-chart">
            <svg viewBox=format!("0 0 {width} {height}") width=width.to_string() height=height.to_string() role="img" aria-label=label>
                <rect width=width.to_string() height="14" class="bar-track"></rect>
                <rect width=now_x.to_string() height="14" class=class></rect>
                {renewal_mark}
                <text x="0" y="30" class="chart-label">"issued"</text>
                <text x=width.to_string() y="30" text-anchor="end" class="chart-label">"expires"</text>
            </svg>
            <figcaption>{text}</figcaption>
        </figure>
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_buckets_put_each_certificate_in_one_bar() {
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let at = |days: i64| Some(now + Duration::days(days));
        let certs = [at(-1), at(3), at(10), at(40), at(200), None];
        let b = expiry_buckets(&certs, now);
        assert_eq!(b.iter().map(|b| b.count).sum::<usize>(), certs.len());
        assert_eq!((b[0].label.as_str(), b[0].count), ("expired", 1));
        assert_eq!(
            (b[1].count, b[1].class),
            (1, "warning"),
            "3 days: week 1, soon"
        );
        assert_eq!(
            (b[2].count, b[2].class),
            (1, "warning"),
            "10 days: week 2, soon"
        );
        assert_eq!((b[6].count, b[6].class), (1, "ok"), "40 days: week 6");
        assert_eq!(b[13].label, "later");
        assert_eq!(b[13].count, 1);
        assert_eq!(b[14].count, 1, "unknown");
        let html = expiry_chart(&certs, now).to_html();
        assert!(
            html.contains(
                "6 certificates: 1 expired, 2 expiring within 14 days, 2 later, 1 never issued."
            ),
            "{html}"
        );
    }
}

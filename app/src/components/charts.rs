//! Charts drawn as SVG on the server: every bar has a text label and a `<title>`, and each
//! chart a text summary, so nothing depends on colour or on JavaScript.

use chrono::{DateTime, Utc};
use leptos::prelude::*;

use crate::components::encode;

use crate::model::choice::Choice;
use crate::model::read::views::ExpiryWindow;
use crate::model::Severity;

/// One bar of the expiry chart: its window and how many certificates are in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ExpiryBucket {
    pub window: ExpiryWindow,
    pub count: usize,
    /// The health of its most severe certificate (a renewal overdue, failing): the bar's
    /// colour, whatever its window.
    pub worst: Option<Severity>,
}

/// Counts `notAfter` times by [`ExpiryWindow`]: expired, each of the next 7 days, then
/// weeks, later, never issued.
pub(crate) fn expiry_buckets(
    certificates: &[(Option<DateTime<Utc>>, Option<Severity>)],
    now: DateTime<Utc>,
) -> Vec<ExpiryBucket> {
    let mut out: Vec<ExpiryBucket> = ExpiryWindow::ALL
        .iter()
        .map(|w| ExpiryBucket {
            window: *w,
            count: 0,
            worst: None,
        })
        .collect();
    for (t, health) in certificates {
        let w = ExpiryWindow::of(*t, now);
        if let Some(b) = out.iter_mut().find(|b| b.window == w) {
            b.count += 1;
            b.worst = match (b.worst, *health) {
                (Some(a), Some(h)) => Some(a.min(h)),
                (a, h) => a.or(h),
            };
        }
    }
    out
}

/// The expiry chart: one bar per window, each a link to the list of the certificates in it
/// (with the page's other filters, `filters`; `chosen` is marked). Bars are on a square-root scale, so that the few
/// expiring ones stay visible beside the many that expire later; the count is written
/// beside each. "Now" sits between the expired and the rest. The labels are page text (not
/// SVG text), so they keep their size on a phone.
pub(crate) fn expiry_chart(
    not_after: &[(Option<DateTime<Utc>>, Option<Severity>)],
    now: DateTime<Utc>,
    filters: &str,
    chosen: Option<ExpiryWindow>,
) -> impl IntoView {
    let buckets = expiry_buckets(not_after, now);
    let max = (buckets.iter().map(|b| b.count).max().unwrap_or(0).max(1) as f64).sqrt();
    let bars = buckets
        .iter()
        .map(|b| {
            let width = if b.count == 0 {
                0.0
            } else {
                ((b.count as f64).sqrt() / max * 100.0).max(2.0)
            };
            // The certificates' own health first: a renewal overdue or failing months before
            // expiry is not green.
            let class = match (b.window, b.worst) {
                (ExpiryWindow::Expired, _) | (_, Some(Severity::Critical)) => "bar critical",
                (_, Some(Severity::Warning)) => "bar warning",
                (ExpiryWindow::Never, _) => "bar unknown",
                (w, _) if w.urgent() => "bar warning",
                _ => "bar ok",
            };
            let href = if filters.is_empty() {
                format!("/certificates?expires={}", encode(b.window.label()))
            } else {
                format!("/certificates?{filters}&expires={}", encode(b.window.label()))
            };
            let words = b.window.words();
            let title = format!("{} {words}", b.count);
            let current = (chosen == Some(b.window)).then_some("true");
            let now_mark = (b.window == ExpiryWindow::Day0).then(|| {
                view! { <li class="now-mark" aria-hidden="true">"now"</li> }
            });
            view! {
                {now_mark}
                <li>
                    <a href=href title=title data-testid="expiry-bar" data-window=b.window.label() aria-current=current>
                        <span class="label">{words}</span>
                        <svg viewBox="0 0 100 12" preserveAspectRatio="none" aria-hidden="true">
                            <rect width="100" height="12" class="bar-track"></rect>
                            <rect width=format!("{width:.1}") height="12" class=class></rect>
                        </svg>
                        <span class="count">{b.count.to_string()}</span>
                    </a>
                </li>
            }
        })
        .collect_view();
    let count = |w: ExpiryWindow| {
        buckets
            .iter()
            .find(|b| b.window == w)
            .map_or(0, |b| b.count)
    };
    let expired = count(ExpiryWindow::Expired);
    let never = count(ExpiryWindow::Never);
    let soon: usize = buckets
        .iter()
        .filter(|b| b.window != ExpiryWindow::Expired && b.window.urgent())
        .map(|b| b.count)
        .sum();
    let summary = format!(
        "{} certificates: {expired} expired, {soon} expiring within 14 days, {} later, {never} never issued.",
        not_after.len(),
        not_after.len() - expired - soon - never,
    );
    view! {
        <figure class="chart expiry" data-testid="expiry-chart">
            <figcaption>{summary}" Each bar lists its certificates; bar lengths are on a square-root scale."</figcaption>
            <ol class="hbars">{bars}</ol>
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
    let (width, height) = (400.0, 46.0);
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
        view! { <g><title>"Renewal time"</title><line x1=x.clone() x2=x y1="14" y2="28" class="chart-mark"></line></g> }
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
                <rect y="14" width=width.to_string() height="14" class="bar-track"></rect>
                <rect y="14" width=now_x.to_string() height="14" class=class></rect>
                {renewal_mark}
                <line x1=now_x.to_string() x2=now_x.to_string() y1="12" y2="30" class="now-line"></line>
                <text x=now_x.clamp(16.0, width - 16.0).to_string() y="10" text-anchor="middle" class="chart-label">"now"</text>
                <text x="0" y="44" class="chart-label">"issued"</text>
                <text x=width.to_string() y="44" text-anchor="end" class="chart-label">"expires"</text>
            </svg>
            <figcaption>{text}</figcaption>
        </figure>
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    #[test]
    fn expiry_buckets_put_each_certificate_in_one_bar() {
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let at = |hours: i64| Some(now + Duration::hours(hours));
        let certs = [
            at(-1),
            at(3),
            at(30),
            at(24 * 10),
            at(24 * 40),
            at(24 * 200),
            None,
        ]
        .map(|t| (t, None));
        let b = expiry_buckets(&certs, now);
        assert_eq!(b.iter().map(|b| b.count).sum::<usize>(), certs.len());
        let count = |w: ExpiryWindow| b.iter().find(|b| b.window == w).unwrap().count;
        assert_eq!(count(ExpiryWindow::Expired), 1);
        assert_eq!(count(ExpiryWindow::Day0), 1, "3 hours: within a day");
        assert_eq!(count(ExpiryWindow::Day1), 1, "30 hours: in 1 day");
        assert_eq!(count(ExpiryWindow::Week1), 1, "10 days");
        assert_eq!(count(ExpiryWindow::Weeks4), 1, "40 days");
        assert_eq!(count(ExpiryWindow::Later), 1);
        assert_eq!(count(ExpiryWindow::Never), 1);
        let html = expiry_chart(&certs, now, "cluster=zrh-prod", None).to_html();
        assert!(
            html.contains(
                "7 certificates: 1 expired, 3 expiring within 14 days, 2 later, 1 never issued."
            ),
            "{html}"
        );
        // Every bar links to its certificates, with the page's filters.
        assert_eq!(
            html.matches("data-testid=\"expiry-bar\"").count(),
            ExpiryWindow::ALL.len()
        );
        assert!(
            html.contains("href=\"/certificates?cluster=zrh-prod&amp;expires=0d\""),
            "{html}"
        );
        // A "+" in a query is a space: encoded, the longest window's link answers.
        assert!(
            html.contains("href=\"/certificates?cluster=zrh-prod&amp;expires=84d%2B\""),
            "{html}"
        );
        // One expired beside one later: the square-root scale, not a sliver.
        assert!(html.contains("width=\"100.0\""), "{html}");
    }

    /// A certificate whose renewal is overdue or failing colours its bar by its health,
    /// not green because its expiry is weeks away.
    #[test]
    fn a_bar_takes_the_health_of_its_worst_certificate() {
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let later = Some(now + Duration::days(200));
        let bar = |health| {
            let html = expiry_chart(&[(later, health)], now, "", None).to_html();
            let at = html.find("data-window=\"84d+\"").expect("the later bar");
            let bar = &html[at..];
            let end = bar.find("</li>").unwrap();
            bar[..end].to_string()
        };
        assert!(bar(None).contains("bar ok"));
        assert!(bar(Some(Severity::Warning)).contains("bar warning"));
        assert!(bar(Some(Severity::Critical)).contains("bar critical"));
    }

    #[test]
    fn the_lifetime_bar_marks_now() {
        let now = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let html = lifetime_bar(
            Some(now - Duration::days(60)),
            Some(now - Duration::days(1)),
            Some(now + Duration::days(30)),
            now,
        )
        .unwrap()
        .to_html();
        assert!(html.contains("class=\"now-line\""), "{html}");
        assert!(html.contains(">now<"), "{html}");
    }
}

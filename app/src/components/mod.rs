//! View pieces shared by every page: the document shell, times, state badges, pagination.

pub mod charts;
pub mod findings;
pub mod served;
pub mod why;

use chrono::{DateTime, Utc};
use leptos::prelude::*;

use crate::model::choice::Choice;
use crate::model::SyncState;

/// The sections of the navigation bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Nav {
    Board,
    Clusters,
    Ingresses,
    Certificates,
    Issuers,
    Gateways,
    Policies,
    Challenges,
    RateLimits,
    Audit,
    #[default]
    None,
}

/// One cluster's sync state, shown on every page.
#[derive(Debug, Clone)]
pub struct SyncLine {
    pub name: String,
    pub state: SyncState,
    pub last_sync: Option<DateTime<Utc>>,
}

/// Up to this many clusters, the sync strip lists each; beyond, the ones not in sync (one
/// line fewer) and a count of the rest.
pub const SYNC_LISTED: usize = 6;

/// What every page needs besides its own data.
#[derive(Debug, Clone, Default)]
pub struct Shell {
    /// The `<title>`, before " · Lookout".
    pub title: String,
    pub active: Nav,
    /// When the page was rendered (all relative times are against it).
    pub now: DateTime<Utc>,
    /// The stylesheet URL, with its content hash so it can be cached forever.
    pub stylesheet: String,
    /// A warning shown on every page, e.g. that sign-in is off.
    pub banner: Option<String>,
    /// Shown on every page while the database refuses writes.
    pub storage: Option<String>,
    /// The text of the header search box.
    pub search: String,
    /// The fleet's change counter when the data was read; the live script compares it with
    /// the stream's.
    pub rev: u64,
    /// The live-update script's URL; None renders a page without it (error pages).
    pub script: Option<String>,
    /// Every visible cluster's sync state and last sync.
    pub sync: Vec<SyncLine>,
    /// Whether action buttons are shown (false with `read_only = true` or for a caller who
    /// may act nowhere).
    pub actions: bool,
    /// The CSRF token every form carries.
    pub csrf: String,
    /// Who is looking.
    pub user: Option<UserInfo>,
    /// The demo's identities (name, description) to switch between; empty outside the demo.
    pub demo: Vec<(String, String)>,
    /// An error or sign-in page: it shows no data, so no "Data as of" and no clock of its
    /// own (`now` is unused).
    pub without_data: bool,
    /// Who a reader contacts about what only the platform can fix (`[support] contact`).
    pub support: Option<String>,
}

/// The caller, for the header.
#[derive(Debug, Clone, Default)]
pub struct UserInfo {
    pub name: String,
    /// The highest role of the caller's rules.
    pub role: Option<&'static str>,
    /// How they were identified: `none`, `demo`, `proxy`, `session`, `token`.
    pub via: &'static str,
}

/// Renders a whole HTML document around `body`.
pub fn document(shell: &Shell, body: impl IntoView + 'static) -> String {
    let link = |nav: Nav, href: &'static str, label: &'static str| {
        let current = (shell.active == nav).then_some("page");
        view! { <li><a href=href aria-current=current>{label}</a></li> }
    };
    let nav = view! {
        <nav aria-label="Main">
            <a class="brand" href="/">"Lookout"</a>
            <ul>
                {link(Nav::Board, "/", "Triage")}
                {link(Nav::Clusters, "/clusters", "Clusters")}
                {link(Nav::Ingresses, "/ingresses", "Ingresses")}
                {link(Nav::Certificates, "/certificates", "Certificates")}
                {link(Nav::Issuers, "/issuers", "Issuers")}
                {link(Nav::Gateways, "/gateways", "Gateways")}
                {link(Nav::Policies, "/policies", "Policies")}
                {link(Nav::Challenges, "/challenges", "Challenges")}
                {link(Nav::RateLimits, "/rate-limits", "Let's Encrypt limits")}
                {link(Nav::Audit, "/audit", "Audit")}
            </ul>
            <form class="search" role="search" method="get" action="/search">
                <label for="global-search" class="visually-hidden">"Search hosts and names"</label>
                <input id="global-search" type="search" name="q" value=shell.search.clone() placeholder="Host or name"/>
                <button type="submit">"Search"</button>
            </form>
        </nav>
    };
    let banner = shell
        .banner
        .clone()
        .map(|b| view! { <div class="banner" role="alert"><span aria-hidden="true">"⚠ "</span>{b}</div> });
    let storage = shell.storage.clone().map(|b| {
        view! { <div class="banner banner-error" role="alert" data-testid="storage-banner"><span aria-hidden="true">"⚠ "</span>{b}</div> }
    });
    let now = shell.now;
    let who = user_box(shell);
    let sync = (!shell.sync.is_empty()).then(|| {
        // Clusters not in sync first: on a phone the strip scrolls sideways, and the one
        // that failed must be in its first screen.
        let mut lines: Vec<&SyncLine> = shell.sync.iter().collect();
        lines.sort_by_key(|c| match c.state {
            SyncState::Failed { .. } => 0,
            SyncState::Stale { .. } => 1,
            SyncState::Connecting => 2,
            SyncState::Synced => 3,
        });
        // A fleet of hundreds is not listed on every page: the clusters that are not in sync
        // are (the first few), the rest are counted.
        let total = lines.len();
        let shown = if total <= SYNC_LISTED {
            total
        } else {
            lines
                .iter()
                .take(SYNC_LISTED - 1)
                .filter(|c| !matches!(c.state, SyncState::Synced))
                .count()
        };
        let rest = &lines[shown..];
        let items = lines[..shown]
            .iter()
            .map(|c| {
                let last = c.last_sync.map(|at| view! { <span class="last">" · synced " <Time at=at now=now/></span> });
                view! { <li><a href="/clusters">{c.name.clone()}</a>" " <SyncBadge state=c.state.clone()/>{last}</li> }
            })
            .collect_view();
        let summary = (!rest.is_empty()).then(|| {
            let behind = rest
                .iter()
                .filter(|c| !matches!(c.state, SyncState::Synced))
                .count();
            let in_sync = rest.len() - behind;
            let mut words = Vec::new();
            if behind > 0 {
                words.push(format!("{behind} more not in sync"));
            }
            if in_sync > 0 {
                words.push(format!(
                    "{} {in_sync} {}in sync",
                    if shown > 0 { "✓" } else { "✓ all" },
                    if shown > 0 { "more " } else { "" }
                ));
            }
            view! { <li data-testid="sync-summary"><a href="/clusters">{words.join(", ")}</a></li> }
        });
        view! { <ul>{items}{summary}</ul> }
    });
    let script = shell
        .script
        .clone()
        .map(|src| view! { <script src=src defer></script> });
    let page = view! {
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <meta name="color-scheme" content="light dark"/>
                <title>{format!("{} · Lookout", shell.title)}</title>
                <link rel="stylesheet" href=shell.stylesheet.clone()/>
                <link rel="icon" type="image/svg+xml" href="/favicon.svg"/>
                {script}
            </head>
            <body data-rev=shell.rev.to_string()>
                <a class="skip" href="#main">"Skip to content"</a>
                {banner}
                {storage}
                <header>
                    {nav}
                    <div class="sync-strip">
                        <section id="sync" data-live="" aria-label="Cluster sync">{sync}</section>
                        {who}
                        <p id="live-status" class="live" role="status" aria-live="polite"></p>
                    </div>
                </header>
                <main id="main" data-live="">{body}</main>
                {(!shell.without_data).then(|| view! {
                    <footer id="rendered" data-live="">
                        "Data as of " <Time at=shell.now now=shell.now/>
                    </footer>
                })}
            </body>
        </html>
    };
    // One buffer of about a large page's size: rendering into it does not reallocate as the
    // rows go in, nor copy the page once more behind the doctype.
    let mut html = String::with_capacity(64 * 1024);
    html.push_str("<!DOCTYPE html>");
    page.to_html_with_buf(
        &mut html,
        &mut leptos::tachys::view::Position::FirstChild,
        true,
        false,
        vec![],
    );
    html
}

/// Who is looking: the demo's identity switch, or the signed-in user with "sign out".
fn user_box(shell: &Shell) -> Option<impl IntoView> {
    let user = shell.user.clone()?;
    let role = user.role.unwrap_or("no access");
    if !shell.demo.is_empty() {
        let options = shell
            .demo
            .iter()
            .map(|(name, description)| {
                let selected = *name == user.name;
                view! { <option value=name.clone() selected=selected>{format!("{name} — {description}")}</option> }
            })
            .collect_view();
        return Some(
            view! {
                <form class="who" method="post" action="/auth/demo" data-testid="demo-identity">
                    <input type="hidden" name="csrf" value=shell.csrf.clone()/>
                    <label><span class="label-text">"Viewing as "</span><select name="identity">{options}</select></label>
                    " " <button type="submit">"Switch"</button>
                </form>
            }
            .into_any(),
        );
    }
    if user.via == "none" {
        return None;
    }
    let sign_out = (user.via == "session").then(|| {
        view! {
            <form class="who" method="post" action="/auth/logout">
                <input type="hidden" name="csrf" value=shell.csrf.clone()/>
                <button type="submit">"Sign out"</button>
            </form>
        }
    });
    Some(
        view! {
            <span class="who" data-testid="signed-in-as">{format!("{} ({role})", user.name)}</span>
            {sign_out}
        }
        .into_any(),
    )
}

/// "3 min ago" / "in 2 h", for humans at 3 a.m.
pub(crate) fn relative(at: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let secs = (now - at).num_seconds();
    let (n, future) = (secs.unsigned_abs(), secs < 0);
    let text = match n {
        0..=9 => return "just now".into(),
        10..=59 => format!("{n} s"),
        60..=3599 => format!("{} min", n / 60),
        3600..=172_799 => format!("{} h", n / 3600),
        _ => format!("{} d", n / 86_400),
    };
    if future {
        format!("in {text}")
    } else {
        format!("{text} ago")
    }
}

/// A time shown relative ("3 min ago"), the one way times are shown: the absolute time in
/// UTC on hover, and after it when tapped or focused (it takes the focus); the script turns
/// the absolute time to the browser's zone when the reader asks for local times.
#[component]
pub fn Time(at: DateTime<Utc>, now: DateTime<Utc>) -> impl IntoView {
    let iso = at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let utc = at.format("%Y-%m-%d %H:%M:%S UTC").to_string();
    view! { <time datetime=iso title=utc tabindex="0">{relative(at, now)}</time> }
}

/// What a problem does to clients and how soon, in words: "clients failing since 2 h ago",
/// "clients fail in 4 d" (a certificate expiring while its renewal fails), or no harm seen.
#[component]
pub fn Harm(urgency: crate::model::read::problems::Urgency, now: DateTime<Utc>) -> impl IntoView {
    let since = urgency
        .failing_since
        .map(|at| view! { <br/><span class="since">"problem since "<Time at=at now=now/></span> });
    // The problem's own start says more only when it is not when clients began to fail.
    let since = since.filter(|_| !urgency.harm_unknown).filter(|_| {
        match (urgency.failing_since, urgency.clients_failing_since) {
            (Some(a), Some(b)) => (a - b).num_minutes().abs() > 5,
            _ => true,
        }
    });
    let harm = match (urgency.clients_failing_since, urgency.clients_fail_at) {
        // No data from the cluster: not "no harm", unknown.
        (None, None) if urgency.harm_unknown => match urgency.failing_since {
            Some(at) => view! { <strong class="harm unknown">"unknown — no data from the cluster since "<Time at=at now=now/></strong> }.into_any(),
            None => view! { <strong class="harm unknown">"unknown — the cluster was never synced"</strong> }.into_any(),
        },
        (Some(at), _) => view! { <strong class="harm now">"clients failing since "<Time at=at now=now/></strong> }.into_any(),
        (None, Some(at)) => view! { <strong class="harm soon">"clients fail "<Time at=at now=now/>" unless fixed"</strong> }.into_any(),
        (None, None) => view! { <span class="harm none">"no client harm seen"</span> }.into_any(),
    };
    view! { {harm}{since} }
}

/// A list's first line: how many of its matching objects are in a problem, and how bad (the
/// problems' severity, as the board tells it) — health before the filters, on a phone too.
pub(crate) fn health_line(what: &str, health: &[Option<crate::model::Severity>]) -> impl IntoView {
    use crate::model::Severity;
    let count = |s: Severity| health.iter().filter(|h| **h == Some(s)).count();
    let (critical, warning) = (count(Severity::Critical), count(Severity::Warning));
    let class = if critical > 0 {
        "summary critical"
    } else if warning > 0 {
        "summary warning"
    } else {
        "summary ok"
    };
    view! {
        <p class=class data-testid="list-health">{format!(
            "{} {}: {critical} critical, {warning} warning, {} with nothing to do.",
            health.len(),
            what.to_lowercase(),
            health.len() - critical - warning
        )}</p>
    }
}

/// Who to contact about what only the platform can fix (`[support] contact`): a link for
/// a URL or an e-mail address, else the text as given.
pub fn support_contact(contact: Option<&str>) -> impl IntoView {
    let contact = contact.map(str::trim).filter(|c| !c.is_empty());
    let who = match contact {
        Some(c) if c.starts_with("https://") || c.starts_with("http://") => {
            view! { <a href=c.to_string() rel="noopener">{c.to_string()}</a> }.into_any()
        }
        Some(c) if c.contains('@') && !c.contains(char::is_whitespace) => {
            view! { <a href=format!("mailto:{c}")>{c.to_string()}</a> }.into_any()
        }
        Some(c) => c.to_string().into_any(),
        None => "your provider's platform team".into_any(),
    };
    view! { <span class="contact" data-testid="support-contact">"Contact: "{who}</span> }
}

/// A page's supporting section, folded under its diagnosis and action: the heading is the
/// summary.
pub(crate) fn fold(title: impl Into<String>, body: impl IntoView) -> impl IntoView {
    view! { <details class="fold"><summary><h2>{title.into()}</h2></summary>{body}</details> }
}

/// The folded findings of an object's page (the evidence, first of the folds).
pub(crate) fn findings_fold(count: usize, table: impl IntoView) -> impl IntoView {
    view! {
        <details class="fold" data-testid="findings-fold">
            <summary><h2>{format!("Findings ({count})")}</h2></summary>
            {table}
        </details>
    }
}

/// A time stored as RFC 3339 text (the history's) as [`Time`]; text that is not one is
/// shown as it is.
pub(crate) fn time_text(at: &str, now: DateTime<Utc>) -> AnyView {
    match DateTime::parse_from_rfc3339(at) {
        Ok(t) => view! { <Time at=t.with_timezone(&Utc) now=now/> }.into_any(),
        Err(_) => view! { <span>{at.to_string()}</span> }.into_any(),
    }
}

/// A sync state as icon and word (never colour alone).
#[component]
pub(crate) fn SyncBadge(state: SyncState) -> impl IntoView {
    let (icon, class) = match state {
        SyncState::Synced => ("✓", "badge ok"),
        SyncState::Connecting => ("…", "badge info"),
        SyncState::Stale { .. } => ("⚠", "badge warning"),
        SyncState::Failed { .. } => ("✗", "badge critical"),
    };
    view! { <span class=class><span aria-hidden="true">{icon}" "</span>{state.label()}</span> }
}

/// Previous/next links that keep the other query parameters.
#[component]
pub(crate) fn Pager(page: usize, pages: usize, total: usize, base_query: String) -> impl IntoView {
    let href = move |p: usize| {
        if base_query.is_empty() {
            format!("?page={p}")
        } else {
            format!("?{base_query}&page={p}")
        }
    };
    let prev = (page > 1).then(|| view! { <a rel="prev" href=href(page - 1)>"← Previous"</a> });
    let next = (page < pages).then(|| view! { <a rel="next" href=href(page + 1)>"Next →"</a> });
    view! {
        <nav class="pager" aria-label="Pages">
            {prev}
            <span>{format!("Page {page} of {pages} · {total} rows")}</span>
            {next}
        </nav>
    }
}

/// `k=v&…` of the parameters that are set, each value percent-encoded.
pub(crate) fn query_string(params: &[(&str, Option<&str>)]) -> String {
    params
        .iter()
        .filter_map(|(k, v)| v.map(|v| format!("{k}={}", encode(v))))
        .collect::<Vec<_>>()
        .join("&")
}

/// A column header that sorts by `key`: a link to sort by it, or to reverse it when it is
/// the current order; `aria-sort` says which column is sorted and how.
pub(crate) fn sort_header<K: Choice>(
    label: &'static str,
    key: K,
    current: Option<crate::model::read::sort::Sort<K>>,
    filters: &str,
) -> impl IntoView {
    // The first key is the list's default order.
    let (active, reversed) = match current {
        Some(s) => (s.key == key, s.reversed),
        None => (key == K::ALL[0], false),
    };
    let key = key.label();
    let next = if active && !reversed {
        format!("-{key}")
    } else {
        key.to_string()
    };
    let href = if filters.is_empty() {
        format!("?sort={next}")
    } else {
        format!("?{filters}&sort={next}")
    };
    let aria = active.then_some(if reversed { "descending" } else { "ascending" });
    let arrow = match (active, reversed) {
        (true, false) => " ▲",
        (true, true) => " ▼",
        _ => "",
    };
    view! {
        <th scope="col" aria-sort=aria>
            <a href=href data-testid=format!("sort-{key}")>{label}<span aria-hidden="true">{arrow}</span></a>
        </th>
    }
}

/// "As JSON" and "as CSV": the list's API endpoint and its CSV export (`<api_path>.csv`:
/// every page), with the same filters, for scripts, spreadsheets and tickets.
pub(crate) fn json_link(api_path: &str, query: &str) -> impl IntoView {
    let with = |path: String| {
        if query.is_empty() {
            path
        } else {
            format!("{path}?{query}")
        }
    };
    let (json, csv) = (with(api_path.to_string()), with(format!("{api_path}.csv")));
    view! {
        <p class="export">
            "This list (the same filters): "
            <a href=json data-testid="as-json">"as JSON"</a>" · "
            <a href=csv data-testid="as-csv" download="">"as CSV"</a>
        </p>
    }
}

/// Text with the upstream issues it cites as links (`cert-manager#6805`).
pub(crate) fn cited(text: &str) -> AnyView {
    use crate::model::links::{citations, Cited};
    citations(text)
        .into_iter()
        .map(|part| match part {
            Cited::Text(t) => t.to_string().into_any(),
            Cited::Issue { label, url } => {
                view! { <a href=url rel="noopener noreferrer" class="upstream">{label.to_string()}</a> }.into_any()
            }
        })
        .collect_view()
        .into_any()
}

/// "Upstream: <docs>" for a rule, linked.
pub(crate) fn rule_docs_link(rule: crate::model::Rule) -> impl IntoView {
    let (title, url) = rule.info().docs;
    view! { <a href=url rel="noopener noreferrer" class="upstream" data-testid="rule-docs">{title}</a> }
}

pub use crate::model::links::encode;
pub(crate) use crate::model::links::{detail_pages, encode_into};

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn clusters_out_of_sync_lead_the_strip() {
        let line = |name: &str, state| SyncLine {
            name: name.into(),
            state,
            last_sync: None,
        };
        let shell = Shell {
            sync: vec![
                line("zrh-prod", SyncState::Synced),
                line("gva-prod", SyncState::Synced),
                line(
                    "fra-edge",
                    SyncState::Failed {
                        error: "connection refused".into(),
                    },
                ),
            ],
            ..Shell::default()
        };
        let html = document(&shell, view! { <p>"x"</p> });
        let at = |name: &str| html.find(&format!(">{name}<")).unwrap();
        assert!(at("fra-edge") < at("zrh-prod"), "{html}");
        assert!(at("zrh-prod") < at("gva-prod"), "the rest keep their order");
    }

    #[test]
    fn relative_times_read_naturally() {
        let now = Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 0).unwrap();
        assert_eq!(relative(now, now), "just now");
        assert_eq!(
            relative(now - chrono::Duration::minutes(3), now),
            "3 min ago"
        );
        assert_eq!(relative(now + chrono::Duration::hours(2), now), "in 2 h");
        assert_eq!(relative(now - chrono::Duration::days(3), now), "3 d ago");
    }
}

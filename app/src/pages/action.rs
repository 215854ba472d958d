//! `/actions/{id}`: the preview of an action (what the cluster's dry run said, what it costs
//! of the Let's Encrypt budgets, and the button that runs it) or its result (with undo and
//! undo where it makes sense). A bulk run shows each item and its progress.

use leptos::prelude::*;

use crate::actions::{ActionKind, ActionRecord, Outcome, Step};
use crate::components::encode;
use crate::components::{document, Nav, Shell};
use crate::model::budget::Impact;

/// An outcome as icon and word.
pub(crate) fn outcome_badge(o: Outcome) -> impl IntoView {
    let (icon, class) = match o {
        Outcome::Ok => ("✓ ", "badge ok"),
        Outcome::Unchanged => ("= ", "badge info"),
        Outcome::Running => ("… ", "badge info"),
        Outcome::Conflict | Outcome::Refused | Outcome::Partial => ("▲ ", "badge warning"),
        Outcome::NotFound | Outcome::Error => ("✖ ", "badge critical"),
    };
    view! { <span class=class data-testid="outcome"><span aria-hidden="true">{icon}</span>{o.label()}</span> }
}

fn object_href(
    kind: impl Into<crate::model::Subject>,
    cluster: &str,
    ns: &str,
    name: &str,
) -> String {
    let list = if kind.into() == crate::model::Kind::Certificate {
        "certificates"
    } else {
        "ingresses"
    };
    format!(
        "/{list}/{}/{}/{}",
        encode(cluster),
        encode(ns),
        encode(name)
    )
}

fn steps_table(cluster: &str, steps: &[Step]) -> impl IntoView {
    let rows = steps
        .iter()
        .map(|s| {
            let href = object_href(s.kind, cluster, &s.namespace, &s.name);
            let diff =
                (!s.diff.is_empty()).then(|| view! { <pre class="diff" tabindex="0">{s.diff.join("\n")}</pre> });
            view! {
                <tr data-testid="action-step">
                    <td data-label="Object"><a href=href>{format!("{} {}/{}", s.kind, s.namespace, s.name)}</a></td>
                    <td data-label="Change">{s.change.clone()}{diff}</td>
                    <td data-label="Outcome">{outcome_badge(s.outcome)}</td>
                    <td data-label="Why" class="message">{s.message.clone().unwrap_or_default()}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <table>
            <caption class="visually-hidden">"Steps"</caption>
            <thead><tr><th scope="col">"Object"</th><th scope="col">"Change"</th><th scope="col">"Outcome"</th><th scope="col">"Why"</th></tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
}

fn budget_table(budget: &[Impact]) -> impl IntoView {
    let rows = budget
        .iter()
        .map(|b| {
            let limit = b.limit.description();
            let verdict = if b.exceeds {
                view! { <span class="badge critical"><span aria-hidden="true">"✖ "</span>"exceeds"</span> }.into_any()
            } else {
                view! { <span class="badge ok"><span aria-hidden="true">"✓ "</span>"within"</span> }.into_any()
            };
            view! {
                <tr data-testid="budget-impact">
                    <td data-label="Limit">{limit}</td>
                    <th scope="row">{b.key.clone()}</th>
                    <td data-label="Used now → after">{format!("{} → {} of {}", b.used, b.after, b.capacity)}{crate::pages::rate_limits::elsewhere(b.elsewhere)}</td>
                    <td data-label="Verdict">{verdict}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <table>
            <caption class="visually-hidden">"Let's Encrypt budgets"</caption>
            <thead><tr><th scope="col">"Limit"</th><th scope="col">"For"</th><th scope="col">"Used now → after"</th><th scope="col">"Verdict"</th></tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
}

/// What a form's button does: preview, or run (asking to confirm a budget overrun).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FormMode {
    Preview,
    Apply { confirm_budget: bool },
}

/// A form that posts a bulk preview to `/actions`: the list it covers and that list's
/// filters, exactly the rows the reader is looking at.
pub(crate) fn bulk_form(
    csrf: &str,
    action: ActionKind,
    scope: &crate::actions::BulkScope,
    mode: FormMode,
    label: String,
) -> impl IntoView {
    let fields = vec![
        ("list", scope.list.label().to_string()),
        ("filters", scope.filters.clone()),
    ];
    post_form(csrf, action, fields, mode, label)
}

/// A form that applies a bulk preview: exactly the items it showed, judged again.
fn apply_preview_form(
    csrf: &str,
    r: &ActionRecord,
    mode: FormMode,
    label: String,
) -> impl IntoView {
    post_form(csrf, r.action, vec![("preview", r.id.clone())], mode, label)
}

/// What a bulk run covers, in words: the list and its filters.
fn scope_words(r: &ActionRecord) -> String {
    let Some(scope) = &r.scope else {
        return match (r.cluster.as_str(), r.namespace.as_str()) {
            ("", "") => "everything you can see".to_string(),
            (c, "") => format!("cluster {c}"),
            ("", ns) => format!("namespace {ns} in every cluster"),
            (c, ns) => format!("namespace {ns} in cluster {c}"),
        };
    };
    let list = match scope.list {
        crate::actions::BulkList::Board => "the triage board",
        crate::actions::BulkList::Ingresses => "the Ingress list",
        crate::actions::BulkList::Certificates => "the Certificate list",
    };
    let filters: Vec<String> = form_urlencoded::parse(scope.filters.as_bytes())
        .filter(|(k, v)| !v.is_empty() && k != "page" && k != "per_page" && k != "sort")
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    if filters.is_empty() {
        format!("every row of {list} you can see")
    } else {
        format!("the rows of {list} with {}", filters.join(", "))
    }
}

/// The objects a bulk run leaves alone, each with why.
fn skipped_table(r: &ActionRecord) -> Option<impl IntoView> {
    if r.skipped.is_empty() {
        return None;
    }
    let rows = r
        .skipped
        .iter()
        .map(|i| {
            let o = &i.object;
            let href = object_href(o.kind, &o.cluster, &o.namespace, &o.name);
            view! {
                <tr data-testid="bulk-skipped">
                    <td data-label="Cluster" class="cluster">{o.cluster.to_string()}</td>
                    <td data-label="Object"><a href=href>{format!("{} {}/{}", o.kind, o.namespace, o.name)}</a></td>
                    <td data-label="Why not" class="message">{i.why.clone()}</td>
                </tr>
            }
        })
        .collect_view();
    Some(view! {
        <h2>{format!("Left alone ({})", r.skipped.len())}</h2>
        <p>"Nothing is sent for these: they are not counted in the run and cost no Let's Encrypt budget."</p>
        <table>
            <caption class="visually-hidden">"Left alone"</caption>
            <thead><tr><th scope="col">"Cluster"</th><th scope="col">"Object"</th><th scope="col">"Why not"</th></tr></thead>
            <tbody>{rows}</tbody>
        </table>
    })
}

/// A form that posts one action to `/actions`.
pub(crate) fn action_form(
    csrf: &str,
    action: ActionKind,
    cluster: &str,
    namespace: &str,
    name: &str,
    mode: FormMode,
    label: String,
) -> impl IntoView {
    let fields = vec![
        ("cluster", cluster.to_string()),
        ("namespace", namespace.to_string()),
        ("name", name.to_string()),
    ];
    post_form(csrf, action, fields, mode, label)
}

/// The form both kinds of action post: what it is about (`fields`), the mode, and the
/// budget confirmation when a run needs it.
fn post_form(
    csrf: &str,
    action: ActionKind,
    fields: Vec<(&'static str, String)>,
    mode: FormMode,
    label: String,
) -> impl IntoView {
    let (apply, confirm_budget) = match mode {
        FormMode::Preview => (false, false),
        FormMode::Apply { confirm_budget } => (true, confirm_budget),
    };
    let confirm = confirm_budget.then(|| {
        view! {
            <label class="confirm">
                <input type="checkbox" name="confirm_budget" required=true data-testid="confirm-budget"/>
                " I know this exceeds a Let's Encrypt budget; Let's Encrypt will refuse the issuances over the limit"
            </label>
        }
    });
    let testid = format!(
        "{}-{}",
        if apply { "apply" } else { "preview" },
        action.label()
    );
    let fields = fields
        .into_iter()
        .map(|(name, value)| view! { <input type="hidden" name=name value=value/> })
        .collect_view();
    view! {
        <form method="post" action="/actions" class="action">
            <input type="hidden" name="csrf" value=csrf.to_string()/>
            <input type="hidden" name="action" value=action.label()/>
            {fields}
            <input type="hidden" name="mode" value=if apply { "apply" } else { "preview" }/>
            {confirm}
            <button type="submit" data-testid=testid class=apply.then_some("primary")>{label}</button>
        </form>
    }
}

fn items_table(items: &[ActionRecord]) -> impl IntoView {
    let rows = items
        .iter()
        .map(|i| {
            let href = object_href(i.kind, &i.cluster, &i.namespace, &i.name);
            let diff = i.diff_text();
            let diff = (!diff.is_empty()).then(|| view! { <pre class="diff" tabindex="0">{diff}</pre> });
            // Followed as its own page follows it: ready and served, failed, or what it waits for.
            let now = match (i.settled, i.progress.is_empty()) {
                (_, true) => view! { <span class="muted">"—"</span> }.into_any(),
                (Some(crate::model::read::progress::Settled::Ready), _) => view! { <span class="badge ok" data-testid="item-settled" data-settled="ready"><span aria-hidden="true">"✓ "</span>"ready and served"</span> }.into_any(),
                (Some(crate::model::read::progress::Settled::Failed), _) => {
                    let why = i.progress.iter().find(|s| s.state == crate::model::read::progress::StepState::Failed).map(|s| s.detail.clone()).unwrap_or_default();
                    view! { <span class="badge critical" data-testid="item-settled" data-settled="failed"><span aria-hidden="true">"✖ "</span>"failed"</span>" "{why}<a href=format!("/actions/{}", i.id)>" (its steps)"</a> }.into_any()
                }
                (None, false) => {
                    let waiting = i.progress.iter().find(|s| s.state == crate::model::read::progress::StepState::Pending).map(|s| s.detail.clone()).unwrap_or_default();
                    view! { <span class="badge info" data-testid="item-settled" data-settled=""><span aria-hidden="true">"… "</span>"under way"</span>" "{waiting} }.into_any()
                }
            };
            view! {
                <tr data-testid="bulk-item">
                    <td data-label="Cluster" class="cluster">{i.cluster.clone()}</td>
                    <td data-label="Object"><a href=href>{format!("{} {}/{}", i.kind, i.namespace, i.name)}</a></td>
                    <td data-label="Outcome">{outcome_badge(i.outcome)}</td>
                    <td data-label="What happened" class="message">{i.message.clone()}{diff}</td>
                    <td data-label="Now">{now}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <table>
            <caption class="visually-hidden">"Items"</caption>
            <thead><tr><th scope="col">"Cluster"</th><th scope="col">"Object"</th><th scope="col">"Outcome"</th><th scope="col">"What happened"</th><th scope="col">"Now"</th></tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
}

pub fn page(shell: &Shell, r: &ActionRecord) -> String {
    let target = if r.action.is_bulk() {
        scope_words(r)
    } else {
        format!("{} {}/{} in {}", r.kind, r.namespace, r.name, r.cluster)
    };
    // A preview, a run under way, a success and a failure each look different (and say
    // which they are in words).
    let (banner, banner_class) = if r.dry_run {
        (
            "Preview (dry run): the cluster checked every change below; nothing has changed yet.",
            "notice info",
        )
    } else if r.outcome == Outcome::Running {
        ("Running…", "notice info")
    } else if r.outcome.succeeded() {
        ("✓ Done: this is what happened.", "notice ok")
    } else {
        (
            "▲ Done, not as planned: this is what happened.",
            "notice critical",
        )
    };
    let back = (!r.action.is_bulk()).then(|| {
        let href = object_href(r.kind, &r.cluster, &r.namespace, &r.name);
        view! { <p><a href=href>{format!("Back to {} {}", r.kind, r.name)}</a></p> }
    });
    let progress = (r.action.is_bulk() && !r.dry_run).then(|| {
        let done = r.items.len();
        view! {
            <p><progress max=r.total.to_string() value=done.to_string() data-testid="bulk-progress"></progress>
            {format!(" {done} of {} done", r.total)}</p>
        }
    });
    let budget = (!r.budget.is_empty()).then(|| {
        view! { <h2>"Let's Encrypt limits"</h2>{budget_table(&r.budget)} }
    });
    let steps = (!r.steps.is_empty())
        .then(|| view! { <h2>"Changes"</h2>{steps_table(&r.cluster, &r.steps)} });
    let items = r.action.is_bulk().then(|| {
        let empty = (r.total == 0).then(|| {
            if r.skipped.is_empty() {
                view! { <p class="empty" data-testid="bulk-empty">"Nothing to do: no object in this scope needs it."</p> }.into_any()
            } else {
                view! { <p class="empty" data-testid="bulk-empty">"Nothing to run: each object here that needs it would be refused or fail the same way. Fix the causes below first; nothing was sent and no Let's Encrypt budget is spent."</p> }.into_any()
            }
        });
        let list = r.scope.as_ref().map(|scope| {
            view! { <p><a href=scope.href() data-testid="bulk-scope">"The rows this run covers"</a></p> }
        });
        let exactly = match (&r.from_preview, r.dry_run) {
            (Some(id), _) => Some(view! {
                <p data-testid="bulk-from-preview">"Applied to exactly the items of "<a href=format!("/actions/{id}")>"its preview"</a>", each judged again first; what changed since is left alone below."</p>
            }.into_any()),
            (None, true) if r.total > 0 => Some(view! {
                <p data-testid="bulk-from-preview">"Applying runs exactly the items that pass here, each judged again first; rows that join the list later are left for another preview."</p>
            }.into_any()),
            _ => None,
        };
        view! { <h2>{format!("Items ({})", r.total)}</h2>{empty}{exactly}{items_table(&r.items)}{list} }
    });
    let skipped = skipped_table(r);
    // A bulk run's items followed to the end, counted.
    let followed: Vec<&ActionRecord> = r.items.iter().filter(|i| !i.progress.is_empty()).collect();
    let bulk_settled = (r.action.is_bulk() && !followed.is_empty()).then(|| {
        use crate::model::read::progress::Settled;
        let count = |s: Option<Settled>| followed.iter().filter(|i| i.settled == s).count();
        let (ready, failed, open) = (count(Some(Settled::Ready)), count(Some(Settled::Failed)), count(None));
        let class = if failed > 0 { "notice critical" } else if open > 0 { "notice info" } else { "notice ok" };
        view! {
            <p class=class data-testid="bulk-settled">
                {format!("Of the {} items issuing again: {ready} ready and served, {failed} failed, {open} under way.", followed.len())}
                {(open > 0).then_some(" This page follows them as they happen.")}
            </p>
        }
    });
    let sent_as = r.sent_as.clone().map(|who| {
        view! {
            <p class="muted" data-testid="sent-as">"Sent to the cluster as "<strong>{who}</strong>
            ": its own rights, admission and audit log apply, as if you had made the change yourself."</p>
        }
    });
    let next = next_actions(shell, r);
    let follow = follow_through(r, shell.now);
    document(
        &Shell {
            title: format!("{}: {target}", r.action.title()),
            active: Nav::None,
            ..shell.clone()
        },
        view! {
            <h1>{r.action.title()}</h1>
            <p>{target}</p>
            <p class=banner_class data-testid="action-banner">{banner}</p>
            <p data-testid="action-summary">{outcome_badge(r.outcome)}" "{r.message.clone()}</p>
            {sent_as}
            {follow}
            {bulk_settled}
            {progress}
            {budget}
            {steps}
            {items}
            {skipped}
            {next}
            {back}
        },
    )
}

/// What an applied action set going, live: one line that says where it stands ("Ready and
/// served", the first failure and what to do, or what it waits for), then each step.
fn follow_through(r: &ActionRecord, now: chrono::DateTime<chrono::Utc>) -> Option<impl IntoView> {
    use crate::model::read::progress::{Settled, StepState};
    if r.progress.is_empty() {
        return None;
    }
    let back = object_href(r.kind, &r.cluster, &r.namespace, &r.name);
    let (class, headline) = match r.settled {
        Some(Settled::Ready) => {
            // Settled where the hosts answer; an address that answers nothing is another
            // problem's, linked, and does not hold this one open.
            let unanswered: Vec<String> = r
                .progress
                .iter()
                .flat_map(|s| s.unanswered.iter().cloned())
                .collect();
            if unanswered.is_empty() {
                (
                    "notice ok",
                    view! { <strong>"✓ Ready and served."</strong>" The certificate is issued and the hosts serve it; clients get it now." }.into_any(),
                )
            } else {
                let host = unanswered[0]
                    .split(" on ")
                    .next()
                    .unwrap_or_default()
                    .to_string();
                let board = format!(
                    "/?{}",
                    crate::components::query_string(&[("host", Some(&host))])
                );
                (
                    "notice ok",
                    view! {
                        <strong data-testid="settled-partly">"✓ Ready and served where the hosts answer."</strong>
                        {format!(" No answer at all on {} — not this fix: ", unanswered.join(", "))}
                        <a href=board>"the problem of that address"</a>"."
                    }
                    .into_any(),
                )
            }
        }
        Some(Settled::Failed) => {
            let first = r
                .progress
                .iter()
                .find(|s| s.state == StepState::Failed)
                .map(|s| s.detail.clone())
                .unwrap_or_default();
            (
                "notice critical",
                view! { <strong>"✖ It did not work: "</strong>{first}". "<a href=back.clone()>{format!("See why on the {} page", r.kind)}</a> }.into_any(),
            )
        }
        None => {
            let waiting = r
                .progress
                .iter()
                .find(|s| s.state == StepState::Pending)
                .map(|s| s.detail.clone())
                .unwrap_or_else(|| "under way".into());
            (
                "notice info",
                view! { <strong>"… Under way: "</strong>{waiting}". This page follows it as it happens (reload it without JavaScript)." }.into_any(),
            )
        }
    };
    let steps = r
        .progress
        .iter()
        .map(|s| {
            let (icon, word) = match s.state {
                StepState::Done => ("✓", "done"),
                StepState::Failed => ("✖", "failed"),
                StepState::Pending => ("…", "waiting"),
                StepState::Skipped => ("–", "not needed"),
            };
            let at = s.at.map(|at| view! { " · "<crate::components::Time at=at now=now/> });
            let name = s.step.title();
            view! {
                <li data-testid="progress-step" data-step=s.step.label() data-state=word>
                    <span aria-hidden="true">{icon}" "</span><strong>{name}</strong>{format!(" — {word}: ")}{s.detail.clone()}{at}
                </li>
            }
        })
        .collect_view();
    let settled = match r.settled {
        Some(Settled::Ready) => "ready",
        Some(Settled::Failed) => "failed",
        None => "",
    };
    Some(view! {
        <section class="follow" data-testid="progress" data-settled=settled>
            <p class=class data-testid="progress-headline">{headline}</p>
            <ol class="steps">{steps}</ol>
        </section>
    })
}

/// The buttons that follow: run the previewed action, undo a fix, retry a failing
/// Certificate now.
fn next_actions(shell: &Shell, r: &ActionRecord) -> Option<impl IntoView> {
    if !shell.actions {
        return None;
    }
    let mut forms = Vec::new();
    // A plan is offered only when all of it would be done: a conflict, a refusal or an
    // error in a single action's preview means nothing is applied (bulk runs apply each
    // item that can be, so a partial bulk preview still offers its items).
    let runnable = r.dry_run
        && (r.outcome == Outcome::Ok || (r.action.is_bulk() && r.outcome == Outcome::Partial));
    let bulk_has_items = !r.action.is_bulk() || r.total > 0;
    // A bulk preview's items whose dry run failed are not counted: the run would fail there.
    let ok = r.items.iter().filter(|i| i.outcome.succeeded()).count();
    if runnable
        && bulk_has_items
        && r.outcome != Outcome::Running
        && (!r.action.is_bulk() || ok > 0)
    {
        let mode = FormMode::Apply {
            confirm_budget: r.needs_confirmation,
        };
        let label = if r.action.is_bulk() {
            format!("Apply to {} item{}", ok, if ok == 1 { "" } else { "s" })
        } else {
            format!("Apply: {}", r.action.title().to_lowercase())
        };
        // A bulk preview applies its own items (older records: their cluster and namespace).
        let form = match r.scope.as_ref().filter(|_| r.action.is_bulk()) {
            Some(_) => apply_preview_form(&shell.csrf, r, mode, label).into_any(),
            None => action_form(
                &shell.csrf,
                r.action,
                &r.cluster,
                &r.namespace,
                &r.name,
                mode,
                label,
            )
            .into_any(),
        };
        forms.push(form);
    }
    // Undo is there, never the main button: folded.
    if !r.dry_run && r.action == ActionKind::EditInPlace && r.outcome.succeeded() {
        forms.push(
            view! {
                <details class="undo">
                    <summary>"Undo this fix"</summary>
                    {action_form(
                        &shell.csrf,
                        ActionKind::UndoEditInPlace,
                        &r.cluster,
                        &r.namespace,
                        &r.name,
                        crate::pages::action::FormMode::Preview,
                        "Preview undo".into(),
                    )}
                </details>
            }
            .into_any(),
        );
    }
    (!forms.is_empty())
        .then(|| view! { <div class="actions" data-testid="next-actions">{forms}</div> })
}

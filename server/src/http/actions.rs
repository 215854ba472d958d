//! The action endpoints: the JSON API of DESIGN.md §9 and the browser's form posts, which
//! answer `303 See Other` to `/actions/{id}` where the preview or the result is shown.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::Json;
use lookout_app::actions::{ActionKind, ActionRecord, Outcome};
use lookout_app::model::{ClusterName, Namespace, ObjectKey};
use lookout_app::pages;
use serde::Deserialize;

use super::error::ApiError;
use super::session::CsrfToken;
use super::{query, AppError, AppState};

mod readers;
use crate::actions::ActionError;
use crate::auth::Caller;
use axum_extra::extract::cookie::PrivateCookieJar;
use readers::visible_record;

impl From<ActionError> for AppError {
    fn from(e: ActionError) -> Self {
        match e {
            ActionError::NotFound(m) => AppError::NotFound(m),
            ActionError::ReadOnly => AppError::ReadOnly,
            ActionError::Forbidden(m) => AppError::Forbidden(m),
        }
    }
}

/// A JSON body, `{}` when empty; the content type must be JSON, unknown fields are named.
fn json_body<T: serde::de::DeserializeOwned>(
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<T, AppError> {
    let body: &[u8] = if body.iter().all(u8::is_ascii_whitespace) {
        b"{}"
    } else {
        body
    };
    if body != b"{}" {
        let json = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.split(';')
                    .next()
                    .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
            });
        if !json {
            return Err(AppError::UnsupportedMediaType(
                "send the body as JSON with Content-Type: application/json".into(),
            ));
        }
    }
    // An object, nothing else: serde would read a struct from an array too (`[]` meaning
    // "no fields", i.e. a real run).
    let value: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| AppError::bad("body", format!("not JSON: {e}")))?;
    if !value.is_object() {
        return Err(AppError::bad(
            "body",
            "must be a JSON object, e.g. {\"dry_run\": true}",
        ));
    }
    // From the bytes, not the parsed value (which keeps the last of a repeated key): a key
    // given twice is refused by name — `{"dry_run": true, "dry_run": false}` is no dry run.
    let mut de = serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let message = e.inner().to_string();
        let path = e.path().to_string();
        let param = match message
            .strip_prefix("duplicate field `")
            .and_then(|m| m.split_once('`'))
        {
            Some((name, _)) => name.to_string(),
            None if path == "." => "body".to_string(),
            None => path,
        };
        let message = if message.starts_with("duplicate field") {
            "given more than once".to_string()
        } else {
            message
        };
        AppError::bad(&param, message)
    })
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct DryRun {
    #[serde(default)]
    dry_run: bool,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RenewBody {
    #[serde(default)]
    dry_run: bool,
    #[serde(default)]
    confirm_budget: bool,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct BulkBody {
    cluster: Option<String>,
    namespace: Option<String>,
    /// The list the run covers (`board`, `ingresses`, `certificates`).
    list: Option<String>,
    /// That list's filters, as its query string.
    filters: Option<String>,
    /// Apply exactly the items of this preview (its id), judged again now, rather than
    /// the list as it is now.
    preview: Option<String>,
    #[serde(default)]
    dry_run: bool,
    #[serde(default)]
    confirm_budget: bool,
}

/// The API answer for a finished action: the record, or the error a real run ended in.
fn api_answer(r: ActionRecord) -> Result<Json<ActionRecord>, ApiError> {
    if r.dry_run || r.outcome.succeeded() || r.outcome == Outcome::Partial {
        return Ok(Json(r));
    }
    let message = r.error_text().unwrap_or_else(|| r.message.clone());
    Err(match r.outcome {
        Outcome::Conflict => AppError::Conflict {
            code: "conflict",
            message,
        },
        // Refused before any step ran: the budget check.
        Outcome::Refused if r.needs_confirmation && r.steps.is_empty() && r.items.is_empty() => {
            AppError::Conflict {
                code: "budget_exceeded",
                message: r.message.clone(),
            }
        }
        Outcome::Refused => AppError::Conflict {
            code: "refused",
            message,
        },
        Outcome::NotFound => AppError::NotFound(message),
        _ => AppError::Upstream(message),
    }
    .into())
}

fn key((cluster, namespace, name): (ClusterName, Namespace, String)) -> ObjectKey {
    ObjectKey {
        cluster,
        namespace,
        name,
    }
}

pub(super) async fn api_edit_in_place(
    State(state): State<AppState>,
    caller: Caller,
    Path(path): Path<(ClusterName, Namespace, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<ActionRecord>, ApiError> {
    let b: DryRun = json_body(&headers, &body)?;
    let r = state
        .actions
        .edit_in_place(&caller, &key(path), b.dry_run)
        .await
        .map_err(AppError::from)?;
    api_answer(r)
}

pub(super) async fn api_undo_edit_in_place(
    State(state): State<AppState>,
    caller: Caller,
    Path(path): Path<(ClusterName, Namespace, String)>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<ActionRecord>, ApiError> {
    let mut b: DryRun = json_body(&headers, &body)?;
    let p: UndoParams = query::read(raw.as_deref())?;
    match p.dry_run.as_deref() {
        None | Some("false") => {}
        Some("true") => b.dry_run = true,
        Some(other) => {
            return Err(AppError::bad("dry_run", format!("{other:?} is not true or false")).into())
        }
    }
    let r = state
        .actions
        .undo_edit_in_place(&caller, &key(path), b.dry_run)
        .await
        .map_err(AppError::from)?;
    api_answer(r)
}

pub(super) async fn api_renew(
    State(state): State<AppState>,
    caller: Caller,
    Path(path): Path<(ClusterName, Namespace, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<ActionRecord>, ApiError> {
    let b: RenewBody = json_body(&headers, &body)?;
    let r = state
        .actions
        .renew(&caller, &key(path), b.dry_run, b.confirm_budget)
        .await
        .map_err(AppError::from)?;
    api_answer(r)
}

pub(super) async fn api_restart(
    State(state): State<AppState>,
    caller: Caller,
    Path(path): Path<(ClusterName, Namespace, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<ActionRecord>, ApiError> {
    let b: RenewBody = json_body(&headers, &body)?;
    let r = state
        .actions
        .restart(&caller, &key(path), b.dry_run, b.confirm_budget)
        .await
        .map_err(AppError::from)?;
    api_answer(r)
}

/// What a bulk request names: a list and its filters (or the cluster and namespace
/// shorthand), and for an apply, optionally the preview it applies.
struct BulkRequest<'a> {
    list: Option<&'a str>,
    filters: Option<&'a str>,
    cluster: Option<&'a str>,
    namespace: Option<&'a str>,
    preview: Option<&'a str>,
}

/// Plans a bulk run for the form and the API alike. From a preview: the caller's own
/// preview of the same action, still kept; its list and filters are the run's (a list or
/// filters given beside it must be the same).
async fn plan(
    state: &AppState,
    caller: &Caller,
    action: ActionKind,
    req: BulkRequest<'_>,
    dry_run: bool,
) -> Result<(ActionRecord, Vec<ObjectKey>), AppError> {
    let previewed = match req.preview.filter(|p| !p.is_empty()) {
        None => None,
        Some(_) if dry_run => {
            return Err(AppError::bad(
                "preview",
                "a preview applies; it cannot be previewed again (leave it out to preview)",
            ))
        }
        Some(id) => Some(
            state
                .actions
                .get(id)
                .await
                .filter(|r| r.actor == caller.actor() && r.dry_run && r.action.is_bulk())
                .ok_or_else(|| AppError::NotFound(format!(
                    "There is no preview {id} of yours (previews are kept for the last 500 actions): preview again."
                )))?,
        ),
    };
    let (target, scope) = match &previewed {
        None => {
            super::query::bulk_target(action, req.list, req.filters, req.cluster, req.namespace)?
        }
        Some(p) => {
            if p.action != action {
                return Err(AppError::bad(
                    "preview",
                    format!("it previews {}, not {}", p.action.label(), action.label()),
                ));
            }
            if p.outcome == Outcome::Running {
                return Err(AppError::bad(
                    "preview",
                    "it is still being made; apply it once it has finished",
                ));
            }
            let Some(scope) = &p.scope else {
                return Err(AppError::bad(
                    "preview",
                    "it is from an older version that did not keep its list: preview again",
                ));
            };
            let given = super::query::bulk_target(
                action,
                req.list.or(Some(scope.list.label())),
                req.filters.or(Some(&scope.filters)),
                None,
                None,
            )?;
            if given.1 != *scope
                || req.cluster.is_some_and(|c| !c.is_empty())
                || req.namespace.is_some_and(|n| !n.is_empty())
            {
                return Err(AppError::bad(
                    "preview",
                    format!("it covers {}, not the list given with it", scope.href()),
                ));
            }
            given
        }
    };
    Ok(state
        .actions
        .plan_bulk(caller, action, &target, scope, dry_run, previewed.as_ref())
        .await?)
}

async fn api_bulk(
    state: AppState,
    caller: Caller,
    action: ActionKind,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<ActionRecord>, ApiError> {
    let b: BulkBody = json_body(&headers, &body)?;
    let (record, keys) = plan(
        &state,
        &caller,
        action,
        BulkRequest {
            list: b.list.as_deref(),
            filters: b.filters.as_deref(),
            cluster: b.cluster.as_deref(),
            namespace: b.namespace.as_deref(),
            preview: b.preview.as_deref(),
        },
        b.dry_run,
    )
    .await?;
    let r = state
        .actions
        .run_bulk(&caller, record, keys, b.confirm_budget)
        .await;
    api_answer(r)
}

pub(super) async fn api_bulk_edit_in_place(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<ActionRecord>, ApiError> {
    api_bulk(state, caller, ActionKind::BulkEditInPlace, headers, body).await
}

pub(super) async fn api_bulk_renew(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<ActionRecord>, ApiError> {
    api_bulk(state, caller, ActionKind::BulkRenew, headers, body).await
}

pub(super) async fn api_action(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<ActionRecord>, ApiError> {
    Ok(Json(visible_record(&state, &caller, &id).await?))
}

/// The fields of the action forms.
struct ActionForm {
    csrf: Option<String>,
    action: ActionKind,
    key: ObjectKey,
    /// A bulk run's list and filters.
    list: Option<String>,
    filters: Option<String>,
    /// The preview a bulk apply applies.
    preview: Option<String>,
    apply: bool,
    confirm_budget: bool,
}

/// The parameters of an undo (`?dry_run=true`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UndoParams {
    dry_run: Option<String>,
}

/// The fields of an action form, as the browser sends them.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FormFields {
    csrf: Option<String>,
    action: Option<String>,
    cluster: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    mode: Option<String>,
    /// A bulk run's list and its filters (a query string).
    list: Option<String>,
    filters: Option<String>,
    /// The preview a bulk apply applies (its id).
    preview: Option<String>,
    /// A checkbox: present when ticked.
    confirm_budget: Option<String>,
}

fn parse_form(body: &Bytes) -> Result<ActionForm, AppError> {
    let raw =
        std::str::from_utf8(body).map_err(|_| AppError::bad("body", "the form is not UTF-8"))?;
    let p: FormFields = query::read(Some(raw))?;
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    let action = match text(&p.action).as_str() {
        "edit-in-place" => ActionKind::EditInPlace,
        "undo-edit-in-place" => ActionKind::UndoEditInPlace,
        "renew" => ActionKind::Renew,
        "restart" => ActionKind::Restart,
        "bulk-edit-in-place" => ActionKind::BulkEditInPlace,
        "bulk-renew" => ActionKind::BulkRenew,
        other => return Err(AppError::bad("action", format!("{other:?} is not one of: edit-in-place, undo-edit-in-place, renew, restart, bulk-edit-in-place, bulk-renew"))),
    };
    let apply = match text(&p.mode).as_str() {
        "preview" => false,
        "apply" => true,
        other => {
            return Err(AppError::bad(
                "mode",
                format!("{other:?} is not preview or apply"),
            ))
        }
    };
    let key = ObjectKey {
        cluster: text(&p.cluster).into(),
        namespace: text(&p.namespace).into(),
        name: text(&p.name),
    };
    if !action.is_bulk() {
        for (param, value) in [
            ("cluster", key.cluster.as_str()),
            ("namespace", key.namespace.as_str()),
            ("name", key.name.as_str()),
        ] {
            if value.is_empty() {
                return Err(AppError::bad(param, "required"));
            }
        }
    }
    Ok(ActionForm {
        action,
        key,
        list: p.list,
        filters: p.filters,
        preview: p.preview,
        apply,
        confirm_budget: p.confirm_budget.is_some(),
        csrf: p.csrf,
    })
}

/// `POST /actions`: a form from a page. Runs the preview or the action and sends the browser
/// to its page; a bulk run goes on in the background and its page shows the progress.
pub(super) async fn post_action(
    State(state): State<AppState>,
    caller: Caller,
    jar: PrivateCookieJar,
    body: Bytes,
) -> Result<Response, AppError> {
    let form = parse_form(&body)?;
    super::session::check_csrf(&jar, form.csrf.as_deref())?;
    let dry_run = !form.apply;
    let id = match form.action {
        ActionKind::EditInPlace => {
            state
                .actions
                .edit_in_place(&caller, &form.key, dry_run)
                .await?
                .id
        }
        ActionKind::UndoEditInPlace => {
            state
                .actions
                .undo_edit_in_place(&caller, &form.key, dry_run)
                .await?
                .id
        }
        ActionKind::Renew => {
            state
                .actions
                .renew(&caller, &form.key, dry_run, form.confirm_budget)
                .await?
                .id
        }
        ActionKind::Restart => {
            state
                .actions
                .restart(&caller, &form.key, dry_run, form.confirm_budget)
                .await?
                .id
        }
        bulk => {
            let (record, keys) = plan(
                &state,
                &caller,
                bulk,
                BulkRequest {
                    list: form.list.as_deref(),
                    filters: form.filters.as_deref(),
                    cluster: Some(form.key.cluster.as_str()),
                    namespace: Some(form.key.namespace.as_str()),
                    preview: form.preview.as_deref(),
                },
                dry_run,
            )
            .await?;
            let id = record.id.clone();
            let actions = Arc::clone(&state.actions);
            let confirm = form.confirm_budget;
            tokio::spawn(async move {
                actions.run_bulk(&caller, record, keys, confirm).await;
            });
            id
        }
    };
    Ok(Redirect::to(&format!("/actions/{id}")).into_response())
}

/// `GET /actions/{id}`: a preview (with the button that runs it) or a result.
pub(super) async fn action_page(
    State(state): State<AppState>,
    caller: Caller,
    csrf: CsrfToken,
    Path(id): Path<String>,
) -> Result<Response, AppError> {
    let record = visible_record(&state, &caller, &id).await?;
    let html = pages::action::page(&super::pages::shell(&state, &caller, &csrf), &record);
    Ok((StatusCode::OK, Html(html)).into_response())
}

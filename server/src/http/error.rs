//! One error type for every handler, mapped to a status in one place: an HTML page for
//! browsers, `{"error": {"code", "message"}}` for the API.

use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::Json;
use lookout_app::components::{Nav, Shell};
use lookout_app::pages;
use serde_json::json;

/// Why a request failed, in words for the caller.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AppError {
    /// The object or route does not exist, or the caller may not see it (indistinguishable).
    #[error("{0}")]
    NotFound(String),
    /// A query parameter or body field is malformed; names the parameter.
    #[error("{param}: {message}")]
    BadRequest { param: String, message: String },
    /// Actions are turned off (`read_only = true`).
    #[error("Lookout runs read-only (read_only = true): actions are turned off.")]
    ReadOnly,
    /// The action was not done: a field owned by another manager, a budget, a refusal.
    #[error("{message}")]
    Conflict { code: &'static str, message: String },
    /// The cluster refused or could not be reached.
    #[error("{0}")]
    Upstream(String),
    /// A request body in a format this endpoint does not take.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// The request is not allowed (e.g. a form posted from another site, a viewer's action).
    #[error("{0}")]
    Forbidden(String),
    /// No identity, or a bad one.
    #[error("{0}")]
    Unauthorized(String),
    /// A request the framework refused before a handler saw it (a body over the limit, a path
    /// that does not decode, a method the route does not take), with what was wrong.
    #[error("{message}")]
    Rejected { status: StatusCode, message: String },
    /// The history database cannot be read now (it could not be opened, an I/O error).
    #[error("The history database cannot be read now ({0}). Live data — triage, Ingresses, Certificates — is still served; try again once the banner is gone.")]
    Storage(String),
}

impl AppError {
    pub(crate) fn bad(param: &str, message: impl Into<String>) -> Self {
        AppError::BadRequest {
            param: param.to_string(),
            message: message.into(),
        }
    }

    fn status(&self) -> StatusCode {
        match self {
            AppError::NotFound(_) => StatusCode::NOT_FOUND,
            AppError::BadRequest { .. } => StatusCode::BAD_REQUEST,
            AppError::ReadOnly => StatusCode::METHOD_NOT_ALLOWED,
            AppError::Conflict { .. } => StatusCode::CONFLICT,
            AppError::Upstream(_) => StatusCode::BAD_GATEWAY,
            AppError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            AppError::Forbidden(_) => StatusCode::FORBIDDEN,
            AppError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            AppError::Rejected { status, .. } => *status,
            AppError::Storage(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            AppError::NotFound(_) => "not_found",
            AppError::BadRequest { .. } => "bad_request",
            AppError::ReadOnly => "read_only",
            AppError::Conflict { code, .. } => code,
            AppError::Upstream(_) => "cluster_error",
            AppError::UnsupportedMediaType(_) => "unsupported_media_type",
            AppError::Forbidden(_) => "forbidden",
            AppError::Unauthorized(_) => "unauthorized",
            AppError::Rejected { status, .. } => match *status {
                StatusCode::PAYLOAD_TOO_LARGE => "payload_too_large",
                StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
                StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
                StatusCode::TOO_MANY_REQUESTS => "too_many_requests",
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => "request_header_fields_too_large",
                StatusCode::SERVICE_UNAVAILABLE => "unavailable",
                StatusCode::INTERNAL_SERVER_ERROR => "internal",
                _ => "bad_request",
            },
            AppError::Storage(_) => "storage_unavailable",
        }
    }

    fn user_message(&self) -> String {
        self.to_string()
    }

    /// As a JSON API response.
    pub(crate) fn into_api(self) -> Response {
        let status = self.status();
        let body = json!({"error": {"code": self.code(), "message": self.user_message()}});
        (status, Json(body)).into_response()
    }
}

/// The shell of error pages (they have no data of their own, and so no time).
pub(crate) fn error_shell() -> Shell {
    Shell {
        title: String::new(),
        active: Nav::None,
        without_data: true,
        stylesheet: super::stylesheet_href(),
        ..Shell::default()
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let status = self.status();
        let shell = error_shell();
        let html = match &self {
            AppError::NotFound(what) => pages::error::not_found(&shell, what),
            AppError::BadRequest { .. } => {
                pages::error::error(&shell, 400, "Bad request", &self.user_message())
            }
            other => {
                let title = match other {
                    AppError::ReadOnly => "Read-only",
                    AppError::Conflict { .. } => "Not done",
                    AppError::Upstream(_) => "The cluster said no",
                    AppError::UnsupportedMediaType(_) => "Unsupported body",
                    AppError::Unauthorized(_) => "Sign-in required",
                    AppError::Storage(_) => "History unavailable",
                    AppError::Rejected { status, .. } => {
                        status.canonical_reason().unwrap_or("Bad request")
                    }
                    _ => "Forbidden",
                };
                pages::error::error(&shell, status.as_u16(), title, &other.user_message())
            }
        };
        (status, Html(html)).into_response()
    }
}

/// An [`AppError`] answered as JSON.
pub(crate) struct ApiError(pub AppError);

impl From<AppError> for ApiError {
    fn from(e: AppError) -> Self {
        ApiError(e)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        self.0.into_api()
    }
}

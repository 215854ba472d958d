//! One error type for every handler, mapped to a status in one place: an HTML page for
//! browsers, `{"error": {"code", "message"}}` for the API.

use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::Json;
use chrono::Utc;
use lookout_app::components::{Nav, Shell};
use lookout_app::pages;
use serde_json::json;

/// Why a request failed, in words for the caller.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The object or route does not exist, or the caller may not see it (indistinguishable).
    #[error("{0}")]
    NotFound(String),
    /// A query parameter or body field is malformed; names the parameter.
    #[error("{param}: {message}")]
    BadRequest { param: String, message: String },
    /// Something broke inside; logged with its cause, shown as a sentence.
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

impl AppError {
    pub fn bad(param: &str, message: impl Into<String>) -> Self {
        AppError::BadRequest {
            param: param.to_string(),
            message: message.into(),
        }
    }

    fn status(&self) -> StatusCode {
        match self {
            AppError::NotFound(_) => StatusCode::NOT_FOUND,
            AppError::BadRequest { .. } => StatusCode::BAD_REQUEST,
            AppError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            AppError::NotFound(_) => "not_found",
            AppError::BadRequest { .. } => "bad_request",
            AppError::Internal(_) => "internal",
        }
    }

    fn user_message(&self) -> String {
        match self {
            AppError::Internal(e) => {
                tracing::error!(error = ?e, "request failed");
                "Lookout hit an internal error; it has been logged. Try again, and if it persists, check the server log.".into()
            }
            other => other.to_string(),
        }
    }

    /// As a JSON API response.
    pub fn into_api(self) -> Response {
        let status = self.status();
        let body = json!({"error": {"code": self.code(), "message": self.user_message()}});
        (status, Json(body)).into_response()
    }
}

/// The shell of error pages (they have no data of their own).
pub fn error_shell() -> Shell {
    Shell {
        title: String::new(),
        active: Nav::None,
        now: Utc::now(),
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
            AppError::Internal(_) => {
                pages::error::error(&shell, 500, "Internal error", &self.user_message())
            }
        };
        (status, Html(html)).into_response()
    }
}

/// An [`AppError`] answered as JSON.
pub struct ApiError(pub AppError);

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

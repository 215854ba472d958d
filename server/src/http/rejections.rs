//! Lookout's own error shape for the requests axum refuses before a handler runs: a body over
//! [`MAX_BODY`], a path that does not decode, a method the route does not take. axum answers
//! those with plain text or nothing; this answers JSON under `/api/` and an error page
//! elsewhere, with a message that says what was wrong.

use axum::extract::Request;
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::{ApiError, AppError};

/// The largest request body Lookout takes. Its forms and JSON bodies are a few hundred bytes.
pub(super) const MAX_BODY: usize = 64 * 1024;

/// How much of a refusal's own text is kept as its message.
const MAX_TEXT: usize = 4 * 1024;

/// Rewrites axum's plain-text (or empty) client errors into Lookout's errors.
pub(super) async fn explain(req: Request, next: Next) -> Response {
    let api = req.uri().path().starts_with("/api/");
    let method = req.method().clone();
    let resp = next.run(req).await;
    let status = resp.status();
    let plain = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .is_none_or(|v| v.as_bytes().starts_with(b"text/plain"));
    if !status.is_client_error() || !plain {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    let text = axum::body::to_bytes(body, MAX_TEXT)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .unwrap_or_default();
    let error = AppError::Rejected {
        status,
        message: message(status, &method, &parts.headers, text),
    };
    let mut out = if api {
        ApiError(error).into_response()
    } else {
        error.into_response()
    };
    if let Some(allow) = parts.headers.get(header::ALLOW) {
        out.headers_mut().insert(header::ALLOW, allow.clone());
    }
    out
}

fn message(
    status: StatusCode,
    method: &Method,
    headers: &header::HeaderMap,
    text: String,
) -> String {
    match status {
        StatusCode::PAYLOAD_TOO_LARGE => format!(
            "The request body is larger than Lookout takes ({} KiB).",
            MAX_BODY / 1024
        ),
        StatusCode::METHOD_NOT_ALLOWED => {
            let allowed = headers
                .get(header::ALLOW)
                .and_then(|v| v.to_str().ok())
                .filter(|v| !v.is_empty())
                .map(|v| format!(" (it takes {v})"))
                .unwrap_or_default();
            format!("This address does not take {method}{allowed}.")
        }
        _ if text.is_empty() => status
            .canonical_reason()
            .unwrap_or("Bad request")
            .to_string(),
        _ => text,
    }
}

/// The largest request header Lookout takes (name and value), and all of them together.
/// Browsers and proxies send a few KiB; more is a mistake or an attack.
pub(super) const MAX_HEADER: usize = 16 * 1024;
pub(super) const MAX_HEADERS: usize = 64 * 1024;

/// Refuses a request whose headers exceed [`MAX_HEADER`] one or [`MAX_HEADERS`] all with
/// 431 Request Header Fields Too Large, naming the header.
pub(super) async fn header_limits(req: Request, next: Next) -> Response {
    let api = req.uri().path().starts_with("/api/");
    let mut total = 0;
    let mut refusal = None;
    for (name, value) in req.headers() {
        let size = name.as_str().len() + value.len();
        total += size;
        if size > MAX_HEADER {
            refusal = Some(format!(
                "The {name} header is {} KiB; Lookout takes headers of up to {} KiB each.",
                size / 1024,
                MAX_HEADER / 1024
            ));
            break;
        }
    }
    if refusal.is_none() && total > MAX_HEADERS {
        refusal = Some(format!(
            "The request's headers are {} KiB together; Lookout takes up to {} KiB.",
            total / 1024,
            MAX_HEADERS / 1024
        ));
    }
    match refusal {
        None => next.run(req).await,
        Some(message) => {
            let error = AppError::Rejected {
                status: StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                message,
            };
            if api {
                ApiError(error).into_response()
            } else {
                error.into_response()
            }
        }
    }
}

/// Refuses any query parameter on a route that takes none (see `no_query` in the routes).
pub(super) async fn refuse_query(req: Request, next: Next) -> Response {
    let api = req.uri().path().starts_with("/api/");
    let first = req.uri().query().and_then(|q| {
        form_urlencoded::parse(q.as_bytes())
            .next()
            .map(|(k, _)| k.to_string())
    });
    match first {
        None => next.run(req).await,
        Some(name) => {
            let error = AppError::bad(&name, "unknown parameter (this page takes none)");
            if api {
                ApiError(error).into_response()
            } else {
                error.into_response()
            }
        }
    }
}

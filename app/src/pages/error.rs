//! The page for a missing object or route (404) and for every other failed request.

use leptos::prelude::*;

use crate::components::{document, Nav, Shell};

/// A 404 page: what was asked for, and where to go instead.
pub fn not_found(shell: &Shell, what: &str) -> String {
    let what = what.to_string();
    document(
        &Shell {
            title: "Not found".into(),
            active: Nav::None,
            ..shell.clone()
        },
        view! {
            <h1>"Not found"</h1>
            <p>{what}</p>
            <p><a href="/">"Back to the triage board"</a>" · "<a href="/ingresses">"All Ingresses"</a></p>
        },
    )
}

/// Any other error page: a title naming the status and a sentence saying what to do.
pub fn error(shell: &Shell, status: u16, title: &str, message: &str) -> String {
    let (title, message) = (title.to_string(), message.to_string());
    document(
        &Shell {
            title: title.clone(),
            active: Nav::None,
            ..shell.clone()
        },
        view! {
            <h1>{format!("{status} · {title}")}</h1>
            <p class="error-message">{message}</p>
            <p><a href="/">"Back to the triage board"</a></p>
        },
    )
}

//! Lookout's domain and its server-rendered pages: pure code, no network, no database, no
//! clock of its own (callers pass `now`).
//!
//! # Layout
//!
//! - [`actions`]: what a fix, undo, renew or bulk run did or would do (the server runs them).
//! - [`model`]: projections of Kubernetes objects into compact views, cluster sync state,
//!   and [`model::scope::Scope`], which every read query takes.
//! - [`ports`]: the traits the server implements for the pages ([`ports::FleetReader`]).
//! - [`pages`]: one module per page, each rendering a whole HTML document with Leptos (SSR
//!   only: there is no WebAssembly target, so nothing hydrates).
//! - [`components`]: view pieces shared by pages (the shell, times, badges).

pub mod actions;
pub mod components;
pub mod model;
pub mod pages;
pub mod ports;

//! Lookout's domain and its server-rendered pages: pure code, no network, no database, no
//! clock of its own (callers pass `now`).
//!
//! # Layout
//!
//! - [`actions`]: what a fix, undo, renew or bulk run did or would do (the server runs them).
//! - [`model`]: projections of Kubernetes objects into compact views ([`model::Kind`] names
//!   the watched kinds), correlation ([`model::chain`]), the health rules, budgets, cluster
//!   sync state, the caller's [`model::View`], and the read model ([`model::read`]): every list
//!   and chain view as a caller may see it.
//! - [`ports`]: the traits the server implements — [`ports::FleetReader`],
//!   [`ports::HistoryReader`], [`ports::BudgetReader`] — each taking the caller's view.
//! - [`pages`]: one module per page, each rendering a whole HTML document with Leptos (SSR
//!   only: there is no WebAssembly target, so nothing hydrates).
//! - [`components`]: view pieces shared by pages (the shell, times, badges, URL encoding).
//!
//! Dependencies run `pages → components → model` and `ports → model`, never back.

pub mod actions;
pub mod components;
pub mod model;
pub mod pages;
pub mod ports;

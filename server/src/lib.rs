//! The `lookout` server: configuration, cluster watchers, the SQLite store and the HTTP
//! application. `main.rs` only wires these together.
//!
//! # Layout
//!
//! - [`config`]: the TOML file, `LOOKOUT_*` overrides and validation that names every key.
//! - [`clusters`]: the registry of clusters — kube clients, one generic watcher per kind
//!   (`clusters/kinds/projections.rs` lists the kinds), sync state, the cache and what is derived
//!   from it; implements the app's `FleetReader` port.
//! - [`store`]: SQLite (WAL, one writer task per table group, a read pool, embedded
//!   migrations); `store::reads` implements the `HistoryReader` port.
//! - [`actions`]: the fixes (server-side apply as `lookout`), undo, renew, bulk runs.
//! - [`auth`]: who a caller is and what they may see and do (no HTTP in it).
//! - [`http`]: the axum router — pages, `/api/v1`, sign-in (`http::session`), `/metrics`,
//!   `/healthz`, `/readyz`, the assets; one loader per view (`http::load`).
//! - [`app`]: builds the whole application from injected parts and runs it until shutdown.
//! - [`fleet`]: what is the whole fleet's: the change counter and the Let's Encrypt budgets.
//! - [`clock`]: where "now" comes from (the wall clock, or the demo's).
//! - [`background`]: a low-priority thread for recomputations only time asks for.
//! - [`memory`]: the binary's global allocator is jemalloc (see `main.rs`); this module gives
//!   the cache's views an arena of their own (they would otherwise share pages with
//!   short-lived data and leave them half empty: ~200 bytes per cached object, measured)
//!   and reports the heap for `/metrics`.
//! - [`demo`]: `lookout demo`, kubesim in-process with a seeded fleet.
//! - [`check_access`]: `lookout check-access`, the rights of `clusters::access` and the actions
//!   asked of each cluster.
//!
//! Items are `pub(crate)` unless the binary, the integration tests or the examples use them
//! (`unreachable_pub` is on).
//!
//! Dependencies: `http → {clusters, store, actions, auth} → lookout_app`; `clusters` and
//! `store` never import each other; no cycles (docs/architecture.md).

#![warn(unreachable_pub)]

mod actions;
pub mod app;
pub mod auth;
mod background;
pub mod check_access;
pub mod clock;
mod clusters;
pub mod config;
pub mod demo;
mod fleet;
mod http;
pub mod memory;
pub mod probe;
#[cfg(test)]
mod source_scan;
pub mod store;

pub use clusters::{connect, watched_kinds, ClusterSource, WatchSettings};
pub use http::{routes, Route};

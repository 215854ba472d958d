//! The `lookout` server: configuration, cluster watchers, the SQLite store and the HTTP
//! application. `main.rs` only wires these together.
//!
//! # Layout
//!
//! - [`config`]: the TOML file, `LOOKOUT_*` overrides and validation that names every key.
//! - [`clusters`]: the registry of clusters, their kube clients, watchers and sync state;
//!   implements the app's `FleetReader` port.
//! - [`store`]: SQLite (WAL, one writer, a read pool, embedded migrations).
//! - [`http`]: the axum router — pages, `/api/v1`, `/healthz`, `/readyz`, the stylesheet.
//! - [`app`]: builds the whole application from injected parts and runs it until shutdown.
//! - [`clock`]: where "now" comes from (the wall clock, or the demo's).
//! - [`background`]: a low-priority thread for recomputations only time asks for.
//! - [`memory`]: the heap (allocated and resident), for `/metrics`.
//! - [`demo`]: `lookout demo`, kubesim in-process with a seeded fleet.

pub mod actions;
pub mod app;
pub mod auth;
pub mod background;
pub mod clock;
pub mod clusters;
pub mod config;
pub mod demo;
pub mod http;
pub mod memory;
pub mod store;

//! The lookout application against kubesim over HTTP, with a real SQLite file, started the
//! same way `main` starts it (on port 0), plus the `lookout` binary itself. One
//! integration-test binary, in modules.

mod actions;
mod binary;
mod budgets;
mod bulk;
mod client;
mod cluster_access;
mod connections;
mod derived;
mod existence;
mod faults;
mod forecast;
mod gateway_probe;
mod gateways;
mod helpers;
mod history;
mod http;
mod image;
mod impersonation;
mod live;
mod oidc;
/// Test databases of both engines: the store's own test support, which opens them as
/// `super::Db`.
#[path = "../../src/store/testdb.rs"]
#[allow(dead_code)] // The integration tests need the PostgreSQL half only.
mod testdb;
use lookout_server::store::Db;
mod pages;
mod policies;
mod probe;
mod probing;
mod rbac;
mod replicas;
mod restart;
mod storage;
mod tenancy;
mod truth;
mod watch;

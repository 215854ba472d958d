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
mod faults;
mod forecast;
mod helpers;
mod history;
mod http;
mod image;
mod impersonation;
mod live;
mod oidc;
mod pages;
mod probe;
mod probing;
mod rbac;
mod restart;
mod storage;
mod tenancy;
mod watch;

//! kubesim: a simulated Kubernetes API server that real clients (kube-rs, kubectl) cannot
//! tell apart for what Lookout uses, with several clusters per process.
//!
//! # Layout
//!
//! - [`store`]: one cluster's objects and resource versions; its write verbs
//!   (`store/writes.rs`) and watch window (`store/watches.rs`).
//! - [`fields`]: managedFields and server-side apply.
//! - [`api`]: the HTTP router (URL parsing, content types, watch streams).
//! - [`discovery`]: `/version`, `/api`, `/apis`, OpenAPI documents.
//! - [`schemas`]: the built-in kinds' schemas (k8s-openapi), for OpenAPI and field validation.
//! - [`resources`]: the served kinds, built in or read from CRDs; [`crds`]: kubesim's own
//!   compact table of cert-manager and Gateway API kinds.
//! - [`selectors`], [`table`], [`jsonpatch`], [`protobuf`], [`status`], [`clock`]: protocol
//!   pieces.
//! - [`fleet`]: several clusters on their own ports, and the kubeconfig that reaches them.
//! - [`sim`]: controllers that behave like cert-manager, Cilium and Let's Encrypt.
//! - [`auth`]: bearer tokens, impersonation and RBAC (off unless a fleet asks for it; each
//!   cluster's [`auth::Access`] sits beside it, not in the store), and
//!   the access reviews.
//! - [`faults`]: the faults a cluster can have; [`admin`]: applying them to API requests, and
//!   the admin endpoint that sets them.

pub mod admin;
pub mod api;
pub mod auth;
pub mod clock;
pub mod crds;
pub mod discovery;
pub mod faults;
pub mod fields;
pub mod fleet;
pub mod jsonpatch;
pub mod protobuf;
pub mod resources;
pub mod schemas;
pub mod selectors;
pub mod sim;
pub mod status;
pub mod store;
pub mod table;
pub mod tls;

pub use clock::Clock;
pub use fleet::{Fleet, FleetOptions};
pub use status::ApiError;
pub use store::{Cluster, WriteOpts};

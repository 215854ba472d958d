//! Controllers that behave like cert-manager, Cilium and Let's Encrypt. They act only through
//! the cluster's API verbs (create, merge patch, status patch, delete — with their field
//! managers, resource versions and watch events), one reconcile pass per [`step`], at the
//! time of the cluster's clock.
//!
//! - [`shim`]: cert-manager's ingress-shim (Certificates from annotated Ingresses).
//! - [`issuance`]: Certificate → CertificateRequest → Order → Challenges → Secret, renewal,
//!   backoff, manual renew.
//! - [`issuers`]: ACME account registration of Issuers and ClusterIssuers.
//! - [`cilium`]: load-balancer addresses, HTTPS enforcement, shared hosts.
//! - [`espejote`]: Espejote's ManagedResources, rendered and applied as their ServiceAccount.
//! - [`letsencrypt`]: the CA and its rate limits.
//! - [`scale`]: a generator of large fleets for benchmarks.

pub mod approver;
pub mod cilium;
pub mod edge;
pub mod espejote;
pub mod gateway;
mod gateway_shim;
pub mod issuance;
pub mod issuers;
pub mod letsencrypt;
pub mod pki;
pub mod scale;
pub mod shim;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::resources::ResourceType;
use crate::store::{Cluster, Selection, WriteOpts};
use letsencrypt::LetsEncrypt;

/// What the controllers share across a fleet.
#[derive(Debug, Default)]
pub struct World {
    pub letsencrypt: Mutex<LetsEncrypt>,
    /// Seed of every "random" token and name, so runs are reproducible.
    pub seed: u64,
    /// Load balancers get loopback addresses that [`edge`] serves (tests and the demo).
    pub loopback: bool,
    /// cert-manager's default issuer for ingress-shim (`--default-issuer-*`).
    pub default_issuer: Option<shim::DefaultIssuer>,
    /// Which CertificateRequests are left unapproved or denied ([`approver`]).
    pub approver: approver::Approver,
    /// Hosts (`*` patterns) Let's Encrypt's remote vantage points cannot reach: a firewall
    /// or allow-list admits only the primary one, so validation fails "During secondary
    /// validation".
    pub remote_blocked: Vec<String>,
    /// cert-manager's `--max-concurrent-challenges` (0 means its default, 60).
    pub max_concurrent_challenges: usize,
    /// The Orders (`<cluster>/<uid>`) whose missing solver was reported by an event.
    pub solver_warned: Mutex<std::collections::HashSet<String>>,
    /// When each Espejote ManagedResource's controller started.
    pub espejote: espejote::Started,
}

/// The cluster's API as controllers use it, with a field manager per call.
pub(crate) struct Api<'a> {
    pub cluster: &'a Cluster,
    pub now: DateTime<Utc>,
}

impl<'a> Api<'a> {
    pub fn new(cluster: &'a Cluster) -> Self {
        Api {
            cluster,
            now: cluster.clock.now(),
        }
    }

    fn rt(&self, group: &str, plural: &str) -> Option<ResourceType> {
        self.cluster.resolve(group, plural)
    }

    /// Whether a kind is served (its CRD installed).
    pub fn serves(&self, group: &str, plural: &str) -> bool {
        self.rt(group, plural).is_some()
    }

    pub fn list(&self, group: &str, plural: &str) -> Vec<Value> {
        let Some(rt) = self.rt(group, plural) else {
            return Vec::new();
        };
        self.cluster
            .list(&rt, &Selection::default(), None, None)
            .map(|p| p.items.into_iter().map(Arc::unwrap_or_clone).collect())
            .unwrap_or_default()
    }

    pub fn get(&self, group: &str, plural: &str, ns: Option<&str>, name: &str) -> Option<Value> {
        let rt = self.rt(group, plural)?;
        self.cluster.get(&rt, ns, name).ok()
    }

    pub fn create(
        &self,
        group: &str,
        plural: &str,
        ns: Option<&str>,
        obj: Value,
        manager: &str,
    ) -> Option<Value> {
        let rt = self.rt(group, plural)?;
        let opts = WriteOpts {
            manager: manager.into(),
            dry_run: false,
            status: false,
            version: rt.versions[0].clone(),
        };
        match self.cluster.create(&rt, ns, obj, &opts) {
            Ok(v) => Some(v),
            Err(e) => {
                tracing::debug!(cluster = %self.cluster.name, %plural, error = %e, "controller create failed");
                None
            }
        }
    }

    fn patch_as(
        &self,
        (group, plural): (&str, &str),
        ns: Option<&str>,
        name: &str,
        patch: &Value,
        manager: &str,
        status: bool,
    ) -> Option<Value> {
        let rt = self.rt(group, plural)?;
        let opts = WriteOpts {
            manager: manager.into(),
            dry_run: false,
            status,
            version: rt.versions[0].clone(),
        };
        match self.cluster.merge_patch(&rt, ns, name, patch, &opts) {
            Ok(v) => Some(v),
            Err(e) => {
                tracing::debug!(cluster = %self.cluster.name, %plural, %name, error = %e, "controller patch failed");
                None
            }
        }
    }

    pub fn patch(
        &self,
        group: &str,
        plural: &str,
        ns: Option<&str>,
        name: &str,
        patch: &Value,
        manager: &str,
    ) -> Option<Value> {
        self.patch_as((group, plural), ns, name, patch, manager, false)
    }

    pub fn patch_status(
        &self,
        group: &str,
        plural: &str,
        ns: Option<&str>,
        name: &str,
        patch: &Value,
        manager: &str,
    ) -> Option<Value> {
        self.patch_as((group, plural), ns, name, patch, manager, true)
    }

    pub fn delete(&self, group: &str, plural: &str, ns: Option<&str>, name: &str) {
        if let Some(rt) = self.rt(group, plural) {
            let _ = self.cluster.delete(&rt, ns, name, false);
        }
    }

    /// Records a Kubernetes Event about an object, as controllers do.
    pub fn event(
        &self,
        about: &Value,
        kind: &str,
        event_type: &str,
        reason: &str,
        message: &str,
        component: &str,
    ) {
        // An Event about a cluster-scoped object is kept in `default`; its reference keeps
        // the object's (empty) namespace (client-go `tools/record/event.go` `makeEvent`).
        let own = about.pointer("/metadata/namespace").and_then(Value::as_str);
        let ns = own.unwrap_or("default");
        let name = about
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let stamp = letsencrypt::rfc3339(self.now);
        let mut ev = json!({
            "metadata": {"generateName": format!("{name}."), "namespace": ns},
            "involvedObject": {"kind": kind, "namespace": own, "name": name, "uid": about.pointer("/metadata/uid")},
            "type": event_type, "reason": reason, "message": message, "count": 1,
            "firstTimestamp": stamp, "lastTimestamp": stamp, "source": {"component": component},
        });
        if own.is_none() {
            if let Some(reference) = ev["involvedObject"].as_object_mut() {
                reference.remove("namespace");
            }
        }
        self.create("", "events", Some(ns), ev, component);
    }
}

/// A string field of an object.
pub(crate) fn s<'v>(v: &'v Value, pointer: &str) -> Option<&'v str> {
    v.pointer(pointer).and_then(Value::as_str)
}

/// The time at `pointer`.
pub(crate) fn time(v: &Value, pointer: &str) -> Option<DateTime<Utc>> {
    s(v, pointer)
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc))
}

/// A deterministic short hash, for names and tokens.
pub(crate) fn hash(seed: u64, parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    for p in parts {
        for b in p.bytes().chain(std::iter::once(0)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// Go's `strconv.ParseBool`: `1 t T TRUE true True`, `0 f F FALSE false False`, else not a
/// bool — how Cilium reads its bool settings (cilium/cilium `operator/pkg/ingress/cell.go`
/// declares `enforce-ingress-https` and `enable-ingress-proxy-protocol` as bool flags) and
/// ingress-shim its `kubernetes.io/tls-acme` trigger.
pub(crate) fn go_bool(v: &str) -> Option<bool> {
    match v {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// One reconcile pass of every controller over one cluster.
pub fn step(cluster: &Cluster, world: &World) {
    cluster.collect_garbage();
    let api = Api::new(cluster);
    issuers::reconcile(&api, world);
    cilium::reconcile(&api, world.loopback);
    gateway::reconcile(&api, world.loopback);
    espejote::reconcile(&api, world);
    if api.serves("cert-manager.io", "certificates") && !cluster.faults().cert_manager_down {
        shim::reconcile(&api, world.default_issuer.as_ref());
        issuance::reconcile(&api, world);
    }
}

/// Runs [`step`] every `interval` of real time until `shutdown` (not for a manual clock:
/// tests step by hand).
pub fn spawn(
    cluster: Arc<Cluster>,
    world: Arc<World>,
    interval: Duration,
    shutdown: CancellationToken,
) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(interval);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tick.tick() => {
                    let (c, w) = (cluster.clone(), world.clone());
                    if tokio::task::spawn_blocking(move || step(&c, &w)).await.is_err() {
                        tracing::error!(cluster = %cluster.name, "a controller pass panicked");
                    }
                }
            }
        }
    });
}

//! Fixture builders that read like sentences:
//! `IngressView::test("shop").in_ns("acme").with_issuer("letsencrypt").tls("shop.example.com")`.

use crate::model::Rule;
use std::sync::Arc;

use chrono::{DateTime, Duration, TimeZone, Utc};

use crate::model::certificate::{
    CertificateRequestView, CertificateView, ChallengeView, OrderView,
};
use crate::model::cluster::{KindState, KindStatus, SyncState};
use crate::model::data::key;
use crate::model::data::{ClusterData, ClusterFacts, ClusterOverrides};
use crate::model::finding::Finding;
use crate::model::infra::{CiliumConfig, IngressClassView, LoadBalancerView};
use crate::model::ingress::{IngressView, IssuerRef, TlsEntry};
use crate::model::issuer::{AcmeServer, IssuerView, LE_PRODUCTION, LE_STAGING};
use crate::model::kind::Kind;
use crate::model::object::{Condition, Owner};
use crate::model::text::{Text, Uid};
use crate::model::thresholds::Thresholds;

/// The fixed "now" of every rule test.
pub fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 1, 12, 0, 0).unwrap()
}

pub fn ago(d: Duration) -> Option<DateTime<Utc>> {
    Some(now() - d)
}

pub fn cond(
    kind: &str,
    status: &str,
    reason: &str,
    message: &str,
    since: Option<DateTime<Utc>>,
) -> Condition {
    Condition {
        kind: kind.into(),
        status: status.into(),
        reason: Some(reason.into()),
        message: Some(message.into()),
        last_transition: since,
    }
}

impl IngressView {
    pub fn test(name: &str) -> Self {
        IngressView {
            cluster: "zrh".into(),
            namespace: "default".into(),
            name: name.into(),
            uid: Uid::parse(&format!("uid-ing-{name}")),
            class: Some("cilium".into()),
            hosts: Default::default(),
            tls: Box::default(),
            issuer: None,
            tls_acme: false,
            edit_in_place: None,
            edit_in_place_managers: Default::default(),
            rare: Default::default(),
            labels: Default::default(),
            addresses: std::sync::Arc::from(["192.0.2.1".into()]),
            created: ago(Duration::days(30)),
            // No write time unless a test gives one: the grace of `ingress.certificate-missing`
            // is then not judged.
            changed: None,
        }
    }
    /// Last written `since` before the fixtures' now.
    pub fn changed_ago(mut self, since: Duration) -> Self {
        self.changed = ago(since);
        self
    }
    pub fn in_ns(mut self, ns: &str) -> Self {
        self.namespace = ns.into();
        self
    }
    pub fn with_issuer(mut self, name: &str) -> Self {
        self.issuer = Some(Arc::new(IssuerRef {
            kind: "ClusterIssuer".into(),
            name: name.into(),
            group: "cert-manager.io".into(),
        }));
        self
    }
    /// Issuer annotations ingress-shim refuses (`why` as it words it).
    /// `kubernetes.io/tls-acme: "true"` and no issuer annotation.
    pub fn with_tls_acme(mut self) -> Self {
        self.issuer = None;
        self.tls_acme = true;
        self
    }
    pub fn with_issuer_conflict(mut self, why: &str) -> Self {
        self.rare.make_mut().issuer_conflict = Some(why.into());
        self
    }
    /// Adds a rule and a TLS entry for `host`, with secret `<name>-tls`.
    pub fn tls(self, host: &str) -> Self {
        let secret = format!("{}-tls", self.name);
        self.tls_secret(host, &secret)
    }
    pub fn tls_secret(mut self, host: &str, secret: &str) -> Self {
        let mut hosts = self.hosts.to_vec();
        hosts.push(host.into());
        self.hosts = hosts.into();
        let mut tls = self.tls.to_vec();
        tls.push(TlsEntry {
            hosts: std::sync::Arc::from([host.into()]),
            secret_name: Some(secret.into()),
        });
        self.tls = tls.into();
        self
    }
    pub fn edit_in_place(mut self, value: &str) -> Self {
        self.edit_in_place = Some(value.into());
        self.edit_in_place_managers = std::sync::Arc::from(["lookout".into()]);
        self
    }
    /// The annotation's value, owned by field manager `manager`.
    pub fn edit_in_place_by(mut self, value: &str, manager: &str) -> Self {
        self.edit_in_place = Some(value.into());
        self.edit_in_place_managers = std::sync::Arc::from([manager.into()]);
        self
    }
    pub fn label(mut self, key: &str, value: &str) -> Self {
        let mut labels = self.labels.to_vec();
        labels.push((key.into(), value.into()));
        self.labels = labels.into();
        self
    }
    pub fn class(mut self, class: &str) -> Self {
        self.class = Some(class.into());
        self
    }
    pub fn force_https(mut self, v: &str) -> Self {
        self.rare.make_mut().force_https = Some(v.into());
        self
    }
    pub fn without_address(mut self, created: Duration) -> Self {
        self.addresses = Default::default();
        self.created = ago(created);
        self
    }
}

impl CertificateView {
    /// A ready Certificate of an Ingress, as ingress-shim makes it (with the override
    /// annotation when the Ingress has edit-in-place).
    pub fn of(ing: &IngressView) -> Self {
        let secret = ing.tls[0].secret_name.clone().unwrap();
        CertificateView {
            cluster: ing.cluster.clone(),
            namespace: ing.namespace.clone(),
            name: secret.clone(),
            uid: Uid::parse(&format!("uid-cert-{secret}")),
            secret_name: Some(secret),
            dns_names: ing.tls[0].hosts.clone(),
            issuer: ing.issuer.clone(),
            owner: Some(Owner {
                kind: "Ingress".into(),
                name: ing.name.clone(),
                uid: ing.uid,
            }),
            ready: Some(cond(
                "Ready",
                "True",
                "Ready",
                "Certificate is up to date and has not expired",
                ago(Duration::days(20)),
            )),
            not_before: ago(Duration::days(20)),
            not_after: Some(now() + Duration::days(70)),
            renewal_time: Some(now() + Duration::days(40)),
            revision: Some(1),
            rare: Default::default(),
            override_ingress_name: (ing.edit_in_place.as_deref() == Some("true"))
                .then(|| ing.name.clone()),
            issue_temporary: ing.edit_in_place.as_deref() == Some("true"),
            created: ago(Duration::days(20)),
        }
    }
    pub fn not_ready(mut self, reason: &str, since: Duration) -> Self {
        self.ready = Some(cond("Ready", "False", reason, "details", ago(since)));
        self
    }
    pub fn expiring(mut self, not_after_in: Duration, renewal_ago: Duration) -> Self {
        self.not_after = Some(now() + not_after_in);
        self.renewal_time = ago(renewal_ago);
        self.not_before = Some(now() + not_after_in - Duration::days(90));
        self
    }
    pub fn failing(mut self, attempts: i64, last: Duration) -> Self {
        let rare = self.rare.make_mut();
        rare.failed_issuance_attempts = Some(attempts);
        rare.last_failure_time = ago(last);
        self.rare.make_mut().issuing = Some(Box::new(cond(
            "Issuing",
            "False",
            "Failed",
            "The certificate request has failed to complete and will be retried",
            ago(last),
        )));
        self
    }
    /// Issuing=True: a request is in flight.
    pub fn issuing(mut self) -> Self {
        self.rare.make_mut().issuing = Some(Box::new(cond(
            "Issuing",
            "True",
            "DoesNotExist",
            "Issuing certificate as Secret does not exist",
            ago(Duration::minutes(30)),
        )));
        self
    }
    /// Renewed by hand (`cmctl renew`, Lookout's renew or fix): Issuing=True,
    /// `ManuallyTriggered`.
    pub fn renewed(mut self) -> Self {
        self.rare.make_mut().issuing = Some(Box::new(cond(
            "Issuing",
            "True",
            "ManuallyTriggered",
            "Certificate re-issuance manually triggered",
            ago(Duration::minutes(1)),
        )));
        self
    }
    pub fn without_override(mut self) -> Self {
        self.override_ingress_name = None;
        self
    }
    pub fn dns(mut self, names: &[&str]) -> Self {
        self.dns_names = names.iter().map(|s| Text::from(*s)).collect();
        self
    }
}

/// A request (revision 2, in flight), its Order, and one Challenge for the Certificate.
pub fn attempt(
    cert: &CertificateView,
    order_state: &str,
    order_reason: Option<&str>,
    challenge: Option<(&str, &str, Duration)>,
) -> (CertificateRequestView, OrderView, Option<ChallengeView>) {
    let cr_name = format!("{}-2", cert.name);
    let request = CertificateRequestView {
        namespace: cert.namespace.clone(),
        name: cr_name.as_str().into(),
        uid: Uid::parse(&format!("uid-cr-{cr_name}")),
        owner: Some(Owner {
            kind: "Certificate".into(),
            name: cert.name.clone(),
            uid: cert.uid,
        }),
        revision: Some(2),
        names: cert.dns_names.clone(),
        issuer: cert.issuer.clone(),
        ready: Some(cond(
            "Ready",
            "False",
            "Pending",
            "Waiting on certificate issuance",
            ago(Duration::minutes(30)),
        )),
        failure_time: None,
        issued: None,
        created: ago(Duration::minutes(30)),
        approved: true,
        denied: None,
    };
    let order_name = format!("{cr_name}-123");
    let order = OrderView {
        namespace: cert.namespace.clone(),
        name: order_name.as_str().into(),
        uid: Uid::parse(&format!("uid-order-{order_name}")),
        owner: Some(Owner {
            kind: "CertificateRequest".into(),
            name: cr_name.as_str().into(),
            uid: request.uid,
        }),
        state: order_state.into(),
        reason: order_reason.map(Text::from),
        dns_names: cert.dns_names.to_vec(),
        replaces: false,
        failure_time: None,
        created: ago(Duration::minutes(30)),
    };
    let challenge = challenge.map(|(state, reason, age)| ChallengeView {
        namespace: cert.namespace.clone(),
        name: format!("{order_name}-456").into(),
        uid: Uid::parse("uid-ch"),
        owner: Some(Owner {
            kind: "Order".into(),
            name: order_name.as_str().into(),
            uid: order.uid,
        }),
        dns_name: cert.dns_names.first().cloned().unwrap_or_default(),
        challenge_type: "HTTP-01".into(),
        state: state.into(),
        reason: (!reason.is_empty()).then(|| Text::from(reason)),
        presented: true,
        processing: state == "pending",
        created: ago(age),
        in_place_ingress: None,
        gateway_parents: None,
        failure: (!reason.is_empty() && state != "valid")
            .then(|| crate::model::failure::Failure::classify(reason)),
    });
    (request, order, challenge)
}

pub fn cluster_issuer(name: &str, server: &str, ready: bool) -> IssuerView {
    IssuerView {
        solvers: crate::model::solvers::project(
            &serde_json::json!({"spec": {"acme": {"solvers": [{"http01": {"ingress": {"ingressClassName": "cilium"}}}]}}}),
            &mut crate::model::interner::Interner::default(),
        ),
        kind: "ClusterIssuer".into(),
        namespace: None,
        name: name.into(),
        acme_server_url: Some(server.into()),
        server: AcmeServer::classify(Some(server)),
        ready: Some(if ready {
            cond(
                "Ready",
                "True",
                "ACMEAccountRegistered",
                "The ACME account was registered",
                ago(Duration::days(90)),
            )
        } else {
            cond(
                "Ready",
                "False",
                "ErrRegisterACMEAccount",
                "Failed to register ACME account: 400 urn:ietf:params:acme:error:invalidContact",
                ago(Duration::hours(2)),
            )
        }),
    }
}

/// A cluster under test: everything watched and synced, Cilium with HTTPS enforcement,
/// ClusterIssuers `letsencrypt-prod` and `letsencrypt-staging`.
pub struct World {
    pub facts: ClusterFacts,
    pub data: ClusterData,
}

impl World {
    pub fn new() -> Self {
        let kinds = Kind::ALL
            .iter()
            .map(|k| KindStatus {
                kind: *k,
                state: KindState::Synced,
                objects: 0,
            })
            .collect();
        let mut data = ClusterData::default();
        data.ingress_classes.insert(
            key("", "cilium"),
            Arc::new(IngressClassView {
                name: "cilium".into(),
                controller: Some("cilium.io/ingress-controller".into()),
                is_default: true,
            }),
        );
        data.cilium_configs.insert(
            key("kube-system", "cilium-config"),
            Arc::new(CiliumConfig {
                present: true,
                enforce_https: Some(true),
                default_lb_mode: None,
                proxy_protocol: Some(false),
                gateway_proxy_protocol: None,
            }),
        );
        for (n, url) in [
            ("letsencrypt-prod", LE_PRODUCTION),
            ("letsencrypt-staging", LE_STAGING),
        ] {
            data.cluster_issuers
                .insert(key("", n), Arc::new(cluster_issuer(n, url, true)));
        }
        World {
            facts: ClusterFacts {
                name: "zrh".into(),
                state: SyncState::Synced,
                kinds,
                overrides: ClusterOverrides::default(),
            },
            data,
        }
    }
    pub fn ingress(mut self, i: IngressView) -> Self {
        self.data
            .ingresses
            .insert(key(&i.namespace, &i.name), Arc::new(i));
        self
    }
    pub fn certificate(mut self, c: CertificateView) -> Self {
        self.data
            .certificates
            .insert(key(&c.namespace, &c.name), Arc::new(c));
        self
    }
    pub fn attempt(
        mut self,
        a: (CertificateRequestView, OrderView, Option<ChallengeView>),
    ) -> Self {
        let (r, o, c) = a;
        self.data
            .requests
            .insert(key(&r.namespace, &r.name), Arc::new(r));
        self.data
            .orders
            .insert(key(&o.namespace, &o.name), Arc::new(o));
        if let Some(c) = c {
            self.data
                .challenges
                .insert(key(&c.namespace, &c.name), Arc::new(c));
        }
        self
    }
    /// An Event about the Ingress `name` of `namespace`.
    pub fn ingress_event(self, namespace: &str, name: &str, reason: &str, message: &str) -> Self {
        self.event("Ingress", namespace, name, reason, message)
    }
    /// A Warning Event about the object `kind` `name` of `namespace`.
    pub fn event(
        mut self,
        kind: &str,
        namespace: &str,
        name: &str,
        reason: &str,
        message: &str,
    ) -> Self {
        // Kept where Kubernetes keeps it: `default` for a cluster-scoped object's.
        let kept = if namespace.is_empty() {
            "default"
        } else {
            namespace
        };
        let event = crate::model::infra::EventView {
            namespace: kept.into(),
            name: format!("{name}.{}", self.data.events.len()),
            object_kind: kind.into(),
            object_namespace: namespace.into(),
            object_name: name.into(),
            event_type: "Warning".into(),
            reason: reason.into(),
            message: message.into(),
            count: 1,
            last_seen: ago(Duration::minutes(1)),
        };
        self.data
            .events
            .insert(key(kept, &event.name), Arc::new(event));
        self
    }
    /// An Espejote ManagedResource `platform/edit-in-place` with `spec` and `status`.
    pub fn policy(mut self, spec: serde_json::Value, status: &str) -> Self {
        let meta = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            namespace: Some("platform".into()),
            name: Some("edit-in-place".into()),
            ..Default::default()
        };
        let p = crate::model::policy::PolicyView::project(
            &meta,
            &serde_json::json!({"spec": spec, "status": {"status": status}}),
            &mut crate::model::interner::Interner::default(),
        )
        .expect("a policy");
        self.data
            .policies
            .insert(key("platform", "edit-in-place"), Arc::new(p));
        self
    }
    /// A Kyverno ClusterPolicy (or MutatingPolicy) `add-edit-in-place` with `spec` and
    /// `status`.
    pub fn kyverno(
        mut self,
        kind: Kind,
        spec: serde_json::Value,
        status: serde_json::Value,
    ) -> Self {
        let meta = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some("add-edit-in-place".into()),
            ..Default::default()
        };
        let obj = serde_json::json!({"spec": spec, "status": status});
        let mut strings = crate::model::interner::Interner::default();
        let p = match kind {
            Kind::MutatingPolicy => {
                crate::model::policy::PolicyView::mutating(&meta, &obj, &mut strings)
            }
            _ => crate::model::policy::PolicyView::kyverno(kind, &meta, &obj, &mut strings),
        }
        .expect("a policy");
        let views = match kind {
            Kind::MutatingPolicy => &mut self.data.mutating_policies,
            _ => &mut self.data.cluster_policies,
        };
        views.insert(key("", "add-edit-in-place"), Arc::new(p));
        self
    }
    pub fn issuer(mut self, i: IssuerView) -> Self {
        self.data
            .cluster_issuers
            .insert(key("", &i.name), Arc::new(i));
        self
    }
    pub fn load_balancer(mut self, families: &[&str]) -> Self {
        let lb = LoadBalancerView {
            namespace: "kube-system".into(),
            name: "cilium-ingress".into(),
            ip_families: families.iter().map(|s| s.to_string()).collect(),
            addresses: vec!["192.0.2.1".into()],
        };
        self.data
            .load_balancers
            .insert(key("kube-system", "cilium-ingress"), Arc::new(lb));
        self
    }
    pub fn kind_state(mut self, kind: Kind, state: KindState) -> Self {
        for k in self.facts.kinds.iter_mut().filter(|k| k.kind == kind) {
            k.state = state.clone();
        }
        self
    }
    /// Every finding; and, for every test of a rule, the check that evaluating the cluster
    /// namespace by namespace (as the server does after a change) finds the same: each
    /// namespace's namespaced rules on that namespace's data alone, plus the rules across
    /// namespaces on all of it.
    pub fn findings(&self) -> Vec<Finding> {
        let t = Thresholds::default();
        let whole = super::evaluate(&self.facts, &self.data, now(), &t);
        let mut parts = Vec::new();
        for ns in self.data.namespaces() {
            let part = self.data.namespace(&ns);
            let found =
                super::evaluate_split(&self.facts, &part, now(), &t, super::Rules::Namespaced);
            for f in &found.namespaced {
                assert_eq!(
                    f.namespace, ns,
                    "a namespaced rule judged another namespace's object: {f:?}"
                );
                assert!(!super::across_namespaces(f), "told apart as across: {f:?}");
            }
            parts.push(found.namespaced);
        }
        let across =
            super::evaluate_split(&self.facts, &self.data, now(), &t, super::Rules::Across);
        for f in &across.across {
            assert!(
                super::across_namespaces(f),
                "not told apart as across: {f:?}"
            );
        }
        parts.push(across.across);
        let mut combined: Vec<Finding> = parts.into_iter().flatten().collect();
        crate::model::finding::sort_by_urgency(&mut combined);
        assert_eq!(
            combined, whole,
            "namespace by namespace differs from the whole cluster"
        );
        whole
    }
    /// The findings of one rule, as (severity, kind, name).
    pub fn fired(&self, rule: Rule) -> Vec<(String, String, String)> {
        self.findings()
            .into_iter()
            .filter(|f| f.rule == rule)
            .map(|f| {
                (
                    f.severity.label().to_string(),
                    f.kind.to_string(),
                    f.name.to_string(),
                )
            })
            .collect()
    }
}

//! Correlation: Ingress TLS entry → Certificate → CertificateRequest → Order → Challenges;
//! Certificate → issuer and ACME server; Gateway listener → Certificate; Ingress → its
//! controller and Cilium's HTTPS/PROXY settings.

use foldhash::{HashMap, HashMapExt};
use std::cell::OnceCell;
use std::sync::Arc;

use serde::Serialize;

use super::certificate::{CertificateRequestView, CertificateView, ChallengeView, OrderView};
use super::data::{key, ClusterData, ClusterFacts};
use super::infra::{force_https_annotation, EventView, GatewayView, LbMode, CILIUM_CONTROLLER};
use super::ingress::{IngressView, IssuerRef};
use super::issuer::{AcmeServer, IssuerView};
use super::text::{Text, Uid};

mod annotation;
pub use annotation::{AnnotationState, AnnotationStates, AnnotationStatus};

/// The ingress controller of an Ingress and the Cilium settings that apply to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ControllerInfo {
    /// The class (explicit, legacy annotation, or the default IngressClass).
    pub class: Option<Text>,
    /// The IngressClass's controller string.
    pub controller: Option<Text>,
    pub cilium: bool,
    /// Whether plain HTTP is redirected to HTTPS for its TLS hosts; None when unknown.
    pub enforce_https: Option<bool>,
    /// Where `enforce_https` came from.
    pub enforce_https_source: String,
    pub proxy_protocol: Option<bool>,
    /// Cilium's load-balancer mode for it (None when not a Cilium Ingress).
    pub lb_mode: Option<LbMode>,
}

/// An Order with its Challenges.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OrderChain {
    pub order: OrderView,
    pub challenges: Vec<ChallengeView>,
}

/// A CertificateRequest (one attempt) with its Orders.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestChain {
    pub request: CertificateRequestView,
    /// The request for the in-flight revision (status.revision + 1).
    pub current: bool,
    pub orders: Vec<OrderChain>,
    /// An Order that holds the name of this request's Order but belongs to an earlier
    /// request of the same name, deleted and not yet removed with its dependents by
    /// Kubernetes' garbage collector: cert-manager computes the Order's name from the
    /// request's name and the order's spec, finds this one and retries until it is gone.
    pub held_by: Option<Text>,
}

/// A Certificate with its issuer and attempts (newest first).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CertificateChain {
    pub certificate: CertificateView,
    pub issuer: Option<IssuerView>,
    pub server: AcmeServer,
    pub requests: Vec<RequestChain>,
}

/// One `spec.tls` entry and the Certificate that serves it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TlsChain {
    pub hosts: Vec<Text>,
    pub secret_name: Option<Text>,
    pub certificate: Option<CertificateChain>,
}

mod by_name;
use by_name::ByName;

/// Lookup tables over one cluster's data, each built once, when first used (a pass that
/// needs none of them does not pay for them).
pub struct Index<'a> {
    pub facts: &'a ClusterFacts,
    pub data: &'a ClusterData,
    certificates: OnceCell<Certificates<'a>>,
    requests_by_cert: OnceCell<ByName<'a, CertificateRequestView>>,
    orders_by_request: OnceCell<ByName<'a, OrderView>>,
    challenges_by_order: OnceCell<ByName<'a, ChallengeView>>,
    /// Events by involved object kind, then (namespace, name).
    events_by_object: OnceCell<HashMap<&'a str, ByName<'a, EventView>>>,
    /// Who set edit-in-place where, for the policies' coverage.
    setters: OnceCell<super::policy::Setters<'a>>,
}

/// Certificates by their controller's uid and by the Secret they write.
struct Certificates<'a> {
    by_owner: HashMap<Uid, Vec<&'a Arc<CertificateView>>>,
    by_secret: ByName<'a, CertificateView>,
}

fn owned_by<'a>(owner: &'a Option<super::object::Owner>, kind: &str) -> Option<&'a str> {
    owner
        .as_ref()
        .filter(|o| &*o.kind == kind)
        .map(|o| &*o.name)
}

impl<'a> Index<'a> {
    pub fn new(facts: &'a ClusterFacts, data: &'a ClusterData) -> Self {
        Index {
            facts,
            data,
            certificates: OnceCell::new(),
            requests_by_cert: OnceCell::new(),
            orders_by_request: OnceCell::new(),
            challenges_by_order: OnceCell::new(),
            events_by_object: OnceCell::new(),
            setters: OnceCell::new(),
        }
    }

    fn certificates(&self) -> &Certificates<'a> {
        self.certificates.get_or_init(|| {
            let mut t = Certificates {
                by_owner: HashMap::new(),
                by_secret: ByName::new(),
            };
            for c in self.data.certificates.values() {
                if let Some(o) = &c.owner {
                    t.by_owner.entry(o.uid).or_default().push(c);
                }
                if let Some(s) = &c.secret_name {
                    t.by_secret.add(&c.namespace, s, c);
                }
            }
            t
        })
    }

    fn requests_by_cert(&self) -> &ByName<'a, CertificateRequestView> {
        self.requests_by_cert.get_or_init(|| {
            let mut t = ByName::new();
            for r in self.data.requests.values() {
                if let Some(cert) = owned_by(&r.owner, "Certificate") {
                    t.add(&r.namespace, cert, r);
                }
            }
            t
        })
    }

    fn orders_by_request(&self) -> &ByName<'a, OrderView> {
        self.orders_by_request.get_or_init(|| {
            let mut t = ByName::new();
            for o in self.data.orders.values() {
                if let Some(cr) = owned_by(&o.owner, "CertificateRequest") {
                    t.add(&o.namespace, cr, o);
                }
            }
            t
        })
    }

    fn challenges_by_order(&self) -> &ByName<'a, ChallengeView> {
        self.challenges_by_order.get_or_init(|| {
            let mut t = ByName::new();
            for ch in self.data.challenges.values() {
                if let Some(order) = owned_by(&ch.owner, "Order") {
                    t.add(&ch.namespace, order, ch);
                }
            }
            t
        })
    }

    /// Who set edit-in-place on which Ingresses ([`super::policy::Setters`]).
    pub fn setters(&self) -> &super::policy::Setters<'a> {
        self.setters
            .get_or_init(|| super::policy::Setters::of(self.data))
    }

    fn events_by_object(&self) -> &HashMap<&'a str, ByName<'a, EventView>> {
        self.events_by_object.get_or_init(|| {
            let mut t: HashMap<&'a str, ByName<'a, EventView>> = HashMap::new();
            for e in self.data.events.values() {
                t.entry(e.object_kind.as_str())
                    .or_insert_with(ByName::new)
                    .add(&e.object_namespace, &e.object_name, e);
            }
            t
        })
    }

    /// The Certificate serving a TLS entry: owned by the Ingress with that secretName, else
    /// any Certificate in the namespace writing that Secret.
    pub fn certificate_for(
        &self,
        ing: &IngressView,
        secret: &str,
    ) -> Option<&'a Arc<CertificateView>> {
        let certificates = self.certificates();
        let owned = certificates
            .by_owner
            .get(&ing.uid)
            .and_then(|cs| cs.iter().find(|c| c.secret_name.as_deref() == Some(secret)));
        owned
            .or_else(|| certificates.by_secret.get(&ing.namespace, secret).first())
            .copied()
    }

    /// Every Certificate of an Ingress (one per TLS entry that has one).
    pub fn certificates_of(&self, ing: &IngressView) -> Vec<&'a Arc<CertificateView>> {
        let mut out: Vec<&'a Arc<CertificateView>> = Vec::new();
        for t in &ing.tls {
            if let Some(c) = t
                .secret_name
                .as_deref()
                .and_then(|s| self.certificate_for(ing, s))
            {
                if !out.iter().any(|x| x.name == c.name) {
                    out.push(c);
                }
            }
        }
        out
    }

    /// Certificates writing the Secret `secret` in `namespace`.
    pub fn certificates_writing(
        &self,
        namespace: &str,
        secret: &str,
    ) -> &[&'a Arc<CertificateView>] {
        self.certificates().by_secret.get(namespace, secret)
    }

    /// The issuer a reference names (a ClusterIssuer, or an Issuer in `namespace`).
    pub fn issuer(&self, namespace: &str, r: &IssuerRef) -> Option<&'a Arc<IssuerView>> {
        if r.cluster_scoped() {
            self.data.cluster_issuers.get(&key("", &r.name))
        } else {
            self.data.issuers.get(&key(namespace, &r.name))
        }
    }

    /// Requests of a Certificate, newest revision first.
    pub fn requests_of(&self, c: &CertificateView) -> Vec<&'a Arc<CertificateRequestView>> {
        let mut rs = self.requests_by_cert().get(&c.namespace, &c.name).to_vec();
        rs.sort_by(|a, b| b.revision.cmp(&a.revision).then(b.created.cmp(&a.created)));
        rs
    }

    /// The request of the attempt in flight or last failed: the next revision's.
    pub fn next_request(&self, c: &CertificateView) -> Option<&'a Arc<CertificateRequestView>> {
        let next = c.revision.unwrap_or(0) + 1;
        self.requests_of(c)
            .into_iter()
            .find(|r| r.revision == Some(next))
    }

    /// The Orders of a request: named after it and controlled by this very request (a
    /// request made again under the same name is another request).
    pub fn orders_of(&self, r: &CertificateRequestView) -> Vec<&'a Arc<OrderView>> {
        self.orders_by_request()
            .get(&r.namespace, &r.name)
            .iter()
            .filter(|o| o.owner.as_ref().is_some_and(|ow| ow.uid == r.uid))
            .copied()
            .collect()
    }

    /// Orders under the name of `r` that belong to an earlier request of that name.
    pub fn stale_orders_of(&self, r: &CertificateRequestView) -> Vec<&'a Arc<OrderView>> {
        self.orders_by_request()
            .get(&r.namespace, &r.name)
            .iter()
            .filter(|o| o.owner.as_ref().is_some_and(|ow| ow.uid != r.uid))
            .copied()
            .collect()
    }

    /// The Challenges controlled by this very Order (Orders of two requests of one name share
    /// their name).
    pub fn challenges_of(&self, o: &OrderView) -> Vec<&'a Arc<ChallengeView>> {
        self.challenges_by_order()
            .get(&o.namespace, &o.name)
            .iter()
            .filter(|c| c.owner.as_ref().is_some_and(|ow| ow.uid == o.uid))
            .copied()
            .collect()
    }

    /// Every Challenge under a Certificate (all its requests and orders).
    pub fn challenges_under(&self, c: &CertificateView) -> Vec<&'a Arc<ChallengeView>> {
        self.requests_of(c)
            .into_iter()
            .flat_map(|r| self.orders_of(r))
            .flat_map(|o| self.challenges_of(o))
            .collect()
    }

    /// The Certificate a CertificateRequest belongs to.
    pub fn certificate_of_request(
        &self,
        r: &CertificateRequestView,
    ) -> Option<&'a Arc<CertificateView>> {
        let name = owned_by(&r.owner, "Certificate")?;
        self.data.certificates.get(&key(&r.namespace, name))
    }

    /// The Order a Challenge belongs to.
    pub fn order_of_challenge(&self, ch: &ChallengeView) -> Option<&'a Arc<OrderView>> {
        let name = owned_by(&ch.owner, "Order")?;
        self.data.orders.get(&key(&ch.namespace, name))
    }

    /// The CertificateRequest an Order belongs to.
    pub fn request_of_order(&self, o: &OrderView) -> Option<&'a Arc<CertificateRequestView>> {
        let name = owned_by(&o.owner, "CertificateRequest")?;
        self.data.requests.get(&key(&o.namespace, name))
    }

    /// The Ingress owning a Certificate, if any.
    pub fn ingress_of(&self, c: &CertificateView) -> Option<&'a Arc<IngressView>> {
        let name = owned_by(&c.owner, "Ingress")?;
        self.data.ingresses.get(&key(&c.namespace, name))
    }

    /// Events about an object, newest first, at most `limit`.
    pub fn events_of(
        &self,
        kind: &str,
        namespace: &str,
        name: &str,
        limit: usize,
    ) -> Vec<EventView> {
        let mut es: Vec<EventView> = self
            .events_by_object()
            .get(kind)
            .map(|b| b.get(namespace, name))
            .unwrap_or(&[])
            .iter()
            .map(|e| e.as_ref().clone())
            .collect();
        es.sort_by_key(|e| std::cmp::Reverse(e.last_seen));
        es.truncate(limit);
        es
    }

    /// The whole chain of one Certificate.
    pub fn certificate_chain(&self, c: &CertificateView) -> CertificateChain {
        let issuer = c
            .issuer
            .as_ref()
            .and_then(|r| self.issuer(&c.namespace, r))
            .map(|i| i.as_ref().clone());
        let server = issuer
            .as_ref()
            .map(|i| i.server)
            .unwrap_or(AcmeServer::IssuerNotFound);
        let in_flight = c.revision.unwrap_or(0) + 1;
        let requests = self
            .requests_of(c)
            .into_iter()
            .map(|r| {
                let orders: Vec<OrderChain> = self
                    .orders_of(r)
                    .into_iter()
                    .map(|o| OrderChain {
                        order: o.as_ref().clone(),
                        challenges: self
                            .challenges_of(o)
                            .into_iter()
                            .map(|ch| ch.as_ref().clone())
                            .collect(),
                    })
                    .collect();
                RequestChain {
                    // Only an Order of its own frees the name: two cannot coexist.
                    held_by: orders
                        .is_empty()
                        .then(|| self.stale_orders_of(r).first().map(|o| o.name.clone()))
                        .flatten(),
                    request: r.as_ref().clone(),
                    current: r.revision == Some(in_flight),
                    orders,
                }
            })
            .collect();
        CertificateChain {
            certificate: c.clone(),
            issuer,
            server,
            requests,
        }
    }

    /// The TLS entries of an Ingress with their chains.
    pub fn tls_chains(&self, ing: &IngressView) -> Vec<TlsChain> {
        ing.tls
            .iter()
            .map(|t| TlsChain {
                hosts: t.hosts.to_vec(),
                secret_name: t.secret_name.clone(),
                certificate: t
                    .secret_name
                    .as_deref()
                    .and_then(|s| self.certificate_for(ing, s))
                    .map(|c| self.certificate_chain(c)),
            })
            .collect()
    }

    /// The Certificates serving each TLS listener of a Gateway, by listener name.
    pub fn gateway_certificates(
        &self,
        gw: &GatewayView,
    ) -> Vec<(String, Vec<&'a Arc<CertificateView>>)> {
        gw.listeners
            .iter()
            .map(|l| {
                let certs = l
                    .certificate_refs
                    .iter()
                    .flat_map(|r| {
                        self.certificates_writing(&r.namespace, &r.name)
                            .iter()
                            .copied()
                    })
                    .collect();
                (l.name.clone(), certs)
            })
            .collect()
    }

    /// The edit-in-place status of an Ingress.
    pub fn annotation_status(&self, ing: &IngressView) -> AnnotationStatus {
        if !ing.asks_for_certificate() {
            return AnnotationStatus::NotRequested;
        }
        if matches!(
            self.facts.kind(super::kind::Kind::Certificate),
            Some(super::cluster::KindState::NotInstalled)
        ) {
            return AnnotationStatus::NotApplicable;
        }
        match ing.edit_in_place.as_deref() {
            None => AnnotationStatus::Missing,
            Some("true") => {
                let lacking: Vec<Text> = self
                    .certificates_of(ing)
                    .into_iter()
                    .filter(|c| c.override_ingress_name.as_deref() != Some(&*ing.name))
                    .map(|c| c.name.clone())
                    .collect();
                if lacking.is_empty() {
                    AnnotationStatus::Set {
                        managers: ing.edit_in_place_managers.clone(),
                    }
                } else {
                    AnnotationStatus::SetNotEffective {
                        managers: ing.edit_in_place_managers.clone(),
                        certificates: lacking.into(),
                    }
                }
            }
            Some(other) => AnnotationStatus::Invalid {
                value: Text::from(other),
            },
        }
    }

    /// The controller and Cilium settings that apply to an Ingress.
    pub fn controller_of(&self, ing: &IngressView) -> ControllerInfo {
        let classes = &self.data.ingress_classes;
        let class = ing.class.clone().or_else(|| {
            classes
                .values()
                .find(|c| c.is_default)
                .map(|c| Text::from(c.name.as_str()))
        });
        let ic = class.as_ref().and_then(|n| classes.get(&key("", n)));
        let controller: Option<Text> = ic.and_then(|c| c.controller.as_deref()).map(Text::from);
        let cilium = controller.as_deref() == Some(CILIUM_CONTROLLER)
            || (controller.is_none() && class.as_deref() == Some("cilium"));
        let overrides = &self.facts.overrides;
        let cfg = self.data.cilium();
        let (enforce_https, source) = match ing
            .rare
            .force_https
            .as_deref()
            .and_then(force_https_annotation)
        {
            Some(v) if cilium => (
                Some(v),
                "annotation ingress.cilium.io/force-https".to_string(),
            ),
            _ if !cilium => (None, "not a Cilium Ingress".to_string()),
            _ => match (
                overrides.enforce_https,
                cfg.and_then(|c| c.enforce_https),
                cfg.is_some(),
            ) {
                (Some(v), _, _) => (
                    Some(v),
                    "Lookout config (clusters[].enforce_https)".to_string(),
                ),
                (None, Some(v), _) => (
                    Some(v),
                    "kube-system/cilium-config enforce-ingress-https".to_string(),
                ),
                (None, None, true) => (
                    Some(true),
                    "Cilium's default (enforce-ingress-https unset)".to_string(),
                ),
                (None, None, false) => (
                    None,
                    "unknown: kube-system/cilium-config not found".to_string(),
                ),
            },
        };
        let proxy_protocol = if cilium {
            overrides
                .proxy_protocol
                .or(cfg.and_then(|c| c.proxy_protocol))
        } else {
            None
        };
        // The annotation when it names a mode, else cilium-config, else the operator's
        // default (cilium/cilium operator/pkg/ingress: isEffectiveLoadbalancerModeDedicated).
        let lb_mode = cilium.then(|| {
            ing.rare
                .lb_mode
                .as_deref()
                .and_then(LbMode::parse)
                .or(cfg.and_then(|c| c.default_lb_mode))
                .unwrap_or(LbMode::Dedicated)
        });
        ControllerInfo {
            class,
            controller,
            cilium,
            enforce_https,
            enforce_https_source: source,
            proxy_protocol,
            lb_mode,
        }
    }
}

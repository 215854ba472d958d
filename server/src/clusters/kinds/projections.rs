//! The [`Projection`] of each watched kind: where its objects are served, how one becomes a
//! view, which map of `ClusterData` holds the views, and what the history keeps.

use std::marker::PhantomData;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use lookout_app::model::certificate::{
    CertificateRequestView, CertificateView, ChallengeView, OrderView,
};
use lookout_app::model::data::{ClusterData, Views};
use lookout_app::model::history::HistoryEvent;
use lookout_app::model::infra::{
    CiliumConfig, EventView, GatewayView, IngressClassView, LoadBalancerView,
};
use lookout_app::model::interner::Interner;
use lookout_app::model::issuer::IssuerView;
use lookout_app::model::{IngressView, Kind};
use serde_json::Value;

use super::policies::{ClusterPolicies, KyvernoPolicies, ManagedResources, MutatingPolicies};
use super::{Kept, Of, Projection, Source, Watched};

/// Every kind Lookout watches in each cluster.
pub(crate) const WATCHED: &[&dyn Watched] = &[
    &Of::<Ingresses>(PhantomData),
    &Of::<IngressClasses>(PhantomData),
    &Of::<LoadBalancers>(PhantomData),
    &Of::<CiliumConfigs>(PhantomData),
    &Of::<Events>(PhantomData),
    &Of::<Certificates>(PhantomData),
    &Of::<CertificateRequests>(PhantomData),
    &Of::<Issuers>(PhantomData),
    &Of::<ClusterIssuers>(PhantomData),
    &Of::<Orders>(PhantomData),
    &Of::<Challenges>(PhantomData),
    &Of::<Gateways>(PhantomData),
    &Of::<HttpRoutes>(PhantomData),
    &Of::<ManagedResources>(PhantomData),
    &Of::<ClusterPolicies>(PhantomData),
    &Of::<KyvernoPolicies>(PhantomData),
    &Of::<MutatingPolicies>(PhantomData),
];

/// Ingresses.
pub(crate) struct Ingresses;

impl Projection for Ingresses {
    const KIND: Kind = Kind::Ingress;
    const API: Source = Source::core("networking.k8s.io", "ingresses");
    type View = IngressView;

    fn project(
        cluster: &str,
        meta: &ObjectMeta,
        data: &Value,
        strings: &mut Interner,
    ) -> Option<IngressView> {
        IngressView::project(cluster, meta, data, strings)
    }

    fn views(data: &ClusterData) -> &Views<IngressView> {
        &data.ingresses
    }

    fn views_mut(data: &mut ClusterData) -> &mut Views<IngressView> {
        &mut data.ingresses
    }
}

/// IngressClasses (which controller serves a class).
pub(crate) struct IngressClasses;

impl Projection for IngressClasses {
    const KIND: Kind = Kind::IngressClass;
    const API: Source = Source::core("networking.k8s.io", "ingressclasses");
    type View = IngressClassView;

    fn project(
        _cluster: &str,
        meta: &ObjectMeta,
        data: &Value,
        _strings: &mut Interner,
    ) -> Option<IngressClassView> {
        IngressClassView::project(meta, data)
    }

    fn views(data: &ClusterData) -> &Views<IngressClassView> {
        &data.ingress_classes
    }

    fn views_mut(data: &mut ClusterData) -> &mut Views<IngressClassView> {
        &mut data.ingress_classes
    }
}

/// Cilium's LoadBalancer Services (the others are not kept).
pub(crate) struct LoadBalancers;

impl Projection for LoadBalancers {
    const KIND: Kind = Kind::Service;
    const API: Source = Source::core("", "services");
    type View = LoadBalancerView;

    fn project(
        _cluster: &str,
        meta: &ObjectMeta,
        data: &Value,
        _strings: &mut Interner,
    ) -> Option<LoadBalancerView> {
        LoadBalancerView::project(meta, data)
    }

    fn views(data: &ClusterData) -> &Views<LoadBalancerView> {
        &data.load_balancers
    }

    fn views_mut(data: &mut ClusterData) -> &mut Views<LoadBalancerView> {
        &mut data.load_balancers
    }
}

/// `kube-system/cilium-config` alone.
pub(crate) struct CiliumConfigs;

impl Projection for CiliumConfigs {
    const KIND: Kind = Kind::ConfigMap;
    const API: Source = Source {
        namespace: Some("kube-system"),
        field_selector: Some("metadata.name=cilium-config"),
        ..Source::core("", "configmaps")
    };
    type View = CiliumConfig;

    fn project(
        _cluster: &str,
        _meta: &ObjectMeta,
        data: &Value,
        _strings: &mut Interner,
    ) -> Option<CiliumConfig> {
        Some(CiliumConfig::project(data))
    }

    fn views(data: &ClusterData) -> &Views<CiliumConfig> {
        &data.cilium_configs
    }

    fn views_mut(data: &mut ClusterData) -> &mut Views<CiliumConfig> {
        &mut data.cilium_configs
    }
}

/// Events (shown with the chain of the object they are about).
pub(crate) struct Events;

impl Projection for Events {
    const KIND: Kind = Kind::Event;
    const API: Source = Source::core("", "events");
    type View = EventView;

    fn project(
        _cluster: &str,
        meta: &ObjectMeta,
        data: &Value,
        _strings: &mut Interner,
    ) -> Option<EventView> {
        EventView::project(meta, data)
    }

    fn views(data: &ClusterData) -> &Views<EventView> {
        &data.events
    }

    fn views_mut(data: &mut ClusterData) -> &mut Views<EventView> {
        &mut data.events
    }
}

/// cert-manager's Certificates; the history keeps their readiness.
pub(crate) struct Certificates;

impl Projection for Certificates {
    const KIND: Kind = Kind::Certificate;
    const API: Source = Source::custom("cert-manager.io", "certificates");
    type View = CertificateView;

    fn project(
        cluster: &str,
        meta: &ObjectMeta,
        data: &Value,
        strings: &mut Interner,
    ) -> Option<CertificateView> {
        CertificateView::project(cluster, meta, data, strings)
    }

    fn views(data: &ClusterData) -> &Views<CertificateView> {
        &data.certificates
    }

    fn views_mut(data: &mut ClusterData) -> &mut Views<CertificateView> {
        &mut data.certificates
    }

    const KEPT: Kept = Kept::States;

    fn history(
        cluster: &str,
        view: &Arc<CertificateView>,
        _deleted: bool,
        _live: &ClusterData,
    ) -> Option<HistoryEvent> {
        Some(HistoryEvent::Readiness {
            cluster: cluster.to_string(),
            namespace: view.namespace.to_string(),
            name: view.name.to_string(),
            ready: view.ready.clone(),
            // Set from the object's metadata by the watcher (kinds::Of::history).
            revision: None,
        })
    }
}

/// CertificateRequests; the history keeps them after they are deleted.
pub(crate) struct CertificateRequests;

impl Projection for CertificateRequests {
    const KIND: Kind = Kind::CertificateRequest;
    const API: Source = Source::custom("cert-manager.io", "certificaterequests");
    type View = CertificateRequestView;

    fn project(
        _cluster: &str,
        meta: &ObjectMeta,
        data: &Value,
        strings: &mut Interner,
    ) -> Option<CertificateRequestView> {
        CertificateRequestView::project(meta, data, strings)
    }

    fn views(data: &ClusterData) -> &Views<CertificateRequestView> {
        &data.requests
    }

    fn views_mut(data: &mut ClusterData) -> &mut Views<CertificateRequestView> {
        &mut data.requests
    }

    const KEPT: Kept = Kept::Objects;

    /// With the ACME server of its issuer, for the Let's Encrypt budgets.
    fn history(
        cluster: &str,
        view: &Arc<CertificateRequestView>,
        deleted: bool,
        live: &ClusterData,
    ) -> Option<HistoryEvent> {
        let acme_server = view.issuer.as_ref().and_then(|r| {
            let (issuers, namespace) = if r.cluster_scoped() {
                (&live.cluster_issuers, "")
            } else {
                (&live.issuers, &*view.namespace)
            };
            let key = lookout_app::model::data::key(namespace, &r.name);
            issuers.get(&key).and_then(|i| i.acme_server_url.clone())
        });
        Some(HistoryEvent::Request {
            cluster: cluster.to_string(),
            view: view.clone(),
            acme_server,
            deleted,
            revision: None,
        })
    }
}

/// Issuers.
pub(crate) struct Issuers;

impl Projection for Issuers {
    const KIND: Kind = Kind::Issuer;
    const API: Source = Source::custom("cert-manager.io", "issuers");
    type View = IssuerView;

    fn project(
        _cluster: &str,
        meta: &ObjectMeta,
        data: &Value,
        strings: &mut Interner,
    ) -> Option<IssuerView> {
        IssuerView::project("Issuer", meta, data, strings)
    }

    fn views(data: &ClusterData) -> &Views<IssuerView> {
        &data.issuers
    }

    fn views_mut(data: &mut ClusterData) -> &mut Views<IssuerView> {
        &mut data.issuers
    }

    const KEPT: Kept = Kept::States;

    fn history(
        cluster: &str,
        view: &Arc<IssuerView>,
        _deleted: bool,
        _live: &ClusterData,
    ) -> Option<HistoryEvent> {
        issuer_event(cluster, Kind::Issuer, view)
    }
}

/// What the history learns of an ACME issuer: its server, for the requests recorded before
/// it was seen.
fn issuer_event(cluster: &str, kind: Kind, view: &IssuerView) -> Option<HistoryEvent> {
    Some(HistoryEvent::Issuer {
        cluster: cluster.to_string(),
        kind,
        namespace: view.namespace.clone().unwrap_or_default(),
        name: view.name.clone(),
        acme_server: view.acme_server_url.clone()?,
    })
}

/// ClusterIssuers.
pub(crate) struct ClusterIssuers;

impl Projection for ClusterIssuers {
    const KIND: Kind = Kind::ClusterIssuer;
    const API: Source = Source::custom("cert-manager.io", "clusterissuers");
    type View = IssuerView;

    fn project(
        _cluster: &str,
        meta: &ObjectMeta,
        data: &Value,
        strings: &mut Interner,
    ) -> Option<IssuerView> {
        IssuerView::project("ClusterIssuer", meta, data, strings)
    }

    fn views(data: &ClusterData) -> &Views<IssuerView> {
        &data.cluster_issuers
    }

    fn views_mut(data: &mut ClusterData) -> &mut Views<IssuerView> {
        &mut data.cluster_issuers
    }

    const KEPT: Kept = Kept::States;

    fn history(
        cluster: &str,
        view: &Arc<IssuerView>,
        _deleted: bool,
        _live: &ClusterData,
    ) -> Option<HistoryEvent> {
        issuer_event(cluster, Kind::ClusterIssuer, view)
    }
}

/// ACME Orders; the history keeps them after they are deleted.
pub(crate) struct Orders;

impl Projection for Orders {
    const KIND: Kind = Kind::Order;
    const API: Source = Source::custom("acme.cert-manager.io", "orders");
    type View = OrderView;

    fn project(
        _cluster: &str,
        meta: &ObjectMeta,
        data: &Value,
        strings: &mut Interner,
    ) -> Option<OrderView> {
        OrderView::project(meta, data, strings)
    }

    fn views(data: &ClusterData) -> &Views<OrderView> {
        &data.orders
    }

    fn views_mut(data: &mut ClusterData) -> &mut Views<OrderView> {
        &mut data.orders
    }

    const KEPT: Kept = Kept::Objects;

    fn history(
        cluster: &str,
        view: &Arc<OrderView>,
        deleted: bool,
        _live: &ClusterData,
    ) -> Option<HistoryEvent> {
        Some(HistoryEvent::Order {
            cluster: cluster.to_string(),
            view: view.clone(),
            deleted,
            revision: None,
        })
    }
}

/// ACME Challenges; the history keeps them after they are deleted.
pub(crate) struct Challenges;

impl Projection for Challenges {
    const KIND: Kind = Kind::Challenge;
    const API: Source = Source::custom("acme.cert-manager.io", "challenges");
    type View = ChallengeView;

    fn project(
        _cluster: &str,
        meta: &ObjectMeta,
        data: &Value,
        strings: &mut Interner,
    ) -> Option<ChallengeView> {
        ChallengeView::project(meta, data, strings)
    }

    fn views(data: &ClusterData) -> &Views<ChallengeView> {
        &data.challenges
    }

    fn views_mut(data: &mut ClusterData) -> &mut Views<ChallengeView> {
        &mut data.challenges
    }

    const KEPT: Kept = Kept::Objects;

    fn history(
        cluster: &str,
        view: &Arc<ChallengeView>,
        deleted: bool,
        _live: &ClusterData,
    ) -> Option<HistoryEvent> {
        Some(HistoryEvent::Challenge {
            cluster: cluster.to_string(),
            view: view.clone(),
            deleted,
            revision: None,
        })
    }
}

/// Gateway API Gateways.
pub(crate) struct Gateways;

impl Projection for Gateways {
    const KIND: Kind = Kind::Gateway;
    const API: Source = Source::custom("gateway.networking.k8s.io", "gateways");
    type View = GatewayView;

    fn project(
        _cluster: &str,
        meta: &ObjectMeta,
        data: &Value,
        strings: &mut Interner,
    ) -> Option<GatewayView> {
        GatewayView::project(meta, data, strings)
    }

    fn views(data: &ClusterData) -> &Views<GatewayView> {
        &data.gateways
    }

    fn views_mut(data: &mut ClusterData) -> &mut Views<GatewayView> {
        &mut data.gateways
    }
}

/// Gateway API HTTPRoutes.
pub(crate) struct HttpRoutes;

impl Projection for HttpRoutes {
    const KIND: Kind = Kind::HTTPRoute;
    const API: Source = Source::custom("gateway.networking.k8s.io", "httproutes");
    type View = lookout_app::model::route::HttpRouteView;

    fn project(
        _cluster: &str,
        meta: &ObjectMeta,
        data: &Value,
        strings: &mut Interner,
    ) -> Option<Self::View> {
        Self::View::project(meta, data, strings)
    }

    fn views(data: &ClusterData) -> &Views<Self::View> {
        &data.routes
    }

    fn views_mut(data: &mut ClusterData) -> &mut Views<Self::View> {
        &mut data.routes
    }
}

//! The lists of cluster objects: Ingresses, Certificates, issuers, Gateways, policies.

use lookout_app::model::read::gateways::{GatewayQuery, ListenerRow};
use lookout_app::model::read::issuer::{IssuerQuery, IssuerRow};
use lookout_app::model::read::policies::{PolicyQuery, PolicyRow};
use lookout_app::model::read::views::{
    CertificateQuery, CertificateRow, ExpiryWindow, IngressQuery, IngressRow,
};
use lookout_app::model::{Page, View};
use lookout_app::pages;

use super::{List, ListPage};
use crate::auth::Caller;
use crate::http::pages::{cluster_names, shell, shell_of};
use crate::http::session::CsrfToken;
use crate::http::{load, query, AppError, AppState};

/// The Ingresses.
pub(in crate::http) struct Ingresses;

impl List for Ingresses {
    const NAME: &'static str = "ingresses";
    type Query = IngressQuery;
    type Row = IngressRow;
    type Answer = Page<IngressRow>;

    fn query(_: &AppState, raw: Option<&str>) -> Result<IngressQuery, AppError> {
        query::ingress_query(raw)
    }

    async fn answer(
        state: &AppState,
        view: &View,
        q: &IngressQuery,
    ) -> Result<Page<IngressRow>, AppError> {
        Ok(load::ingresses(state, view, q))
    }

    async fn every(
        state: &AppState,
        view: &View,
        q: &IngressQuery,
    ) -> Result<(Vec<IngressRow>, bool), AppError> {
        let q = IngressQuery {
            page: 1,
            per_page: usize::MAX,
            ..q.clone()
        };
        Ok((load::ingresses(state, view, &q).items, false))
    }
}

impl ListPage for Ingresses {
    async fn page(
        state: &AppState,
        caller: &Caller,
        csrf: &CsrfToken,
        q: &IngressQuery,
    ) -> Result<String, AppError> {
        // One page of rows, and the health of every match for the health line (without
        // making every row).
        let page = Self::answer(state, &caller.view, q).await?;
        let health = state.fleet().ingress_health(&caller.view, q);
        Ok(pages::ingresses::page(
            &shell(state, caller, csrf),
            q,
            cluster_names(state, caller),
            page,
            &health,
        ))
    }
}

/// The Certificates.
pub(in crate::http) struct Certificates;

impl List for Certificates {
    const NAME: &'static str = "certificates";
    type Query = CertificateQuery;
    type Row = CertificateRow;
    type Answer = Page<CertificateRow>;

    fn query(_: &AppState, raw: Option<&str>) -> Result<CertificateQuery, AppError> {
        query::certificate_query(raw)
    }

    async fn answer(
        state: &AppState,
        view: &View,
        q: &CertificateQuery,
    ) -> Result<Page<CertificateRow>, AppError> {
        Ok(load::certificates(state, view, q))
    }

    async fn every(
        state: &AppState,
        view: &View,
        q: &CertificateQuery,
    ) -> Result<(Vec<CertificateRow>, bool), AppError> {
        let q = CertificateQuery {
            page: 1,
            per_page: usize::MAX,
            ..q.clone()
        };
        Ok((load::certificates(state, view, &q).items, false))
    }
}

impl ListPage for Certificates {
    async fn page(
        state: &AppState,
        caller: &Caller,
        csrf: &CsrfToken,
        q: &CertificateQuery,
    ) -> Result<String, AppError> {
        // Every match but for the expiry window, for the chart (so that it keeps every bar
        // when one is chosen); the table shows one page of those in the window.
        let any_expiry = CertificateQuery {
            expires: None,
            ..q.clone()
        };
        let (mut all, _) = Self::every(state, &caller.view, &any_expiry).await?;
        let expiries = all
            .iter()
            .map(|r| (r.certificate.not_after, r.severity))
            .collect();
        let now = (state.registry.now)();
        if let Some(window) = q.expires {
            all.retain(|r| ExpiryWindow::of(r.certificate.not_after, now) == window);
        }
        Ok(pages::certificates::page(
            &shell(state, caller, csrf),
            q,
            cluster_names(state, caller),
            expiries,
            Page::of(all, q.page, q.per_page),
        ))
    }
}

/// The issuers.
pub(in crate::http) struct Issuers;

impl List for Issuers {
    const NAME: &'static str = "issuers";
    type Query = IssuerQuery;
    type Row = IssuerRow;
    type Answer = Page<IssuerRow>;

    fn query(_: &AppState, raw: Option<&str>) -> Result<IssuerQuery, AppError> {
        query::issuer_query(raw)
    }

    async fn answer(
        state: &AppState,
        view: &View,
        q: &IssuerQuery,
    ) -> Result<Page<IssuerRow>, AppError> {
        Ok(load::issuers(state, view, q))
    }

    async fn every(
        state: &AppState,
        view: &View,
        q: &IssuerQuery,
    ) -> Result<(Vec<IssuerRow>, bool), AppError> {
        let q = IssuerQuery {
            page: 1,
            per_page: usize::MAX,
            ..q.clone()
        };
        Ok((load::issuers(state, view, &q).items, false))
    }
}

impl ListPage for Issuers {
    async fn page(
        state: &AppState,
        caller: &Caller,
        csrf: &CsrfToken,
        q: &IssuerQuery,
    ) -> Result<String, AppError> {
        let rows = Self::answer(state, &caller.view, q).await?;
        let clusters = state.fleet().cluster_list(&caller.view);
        Ok(pages::issuers::page(
            &shell_of(state, caller, csrf, &clusters),
            q,
            rows,
            &clusters,
        ))
    }
}

/// The TLS listeners of Gateways, one row each.
pub(in crate::http) struct Gateways;

impl List for Gateways {
    const NAME: &'static str = "gateways";
    type Query = GatewayQuery;
    type Row = ListenerRow;
    type Answer = Page<ListenerRow>;

    fn query(_: &AppState, raw: Option<&str>) -> Result<GatewayQuery, AppError> {
        query::gateway_query(raw)
    }

    async fn answer(
        state: &AppState,
        view: &View,
        q: &GatewayQuery,
    ) -> Result<Page<ListenerRow>, AppError> {
        Ok(state.fleet().gateways(view, q))
    }

    async fn every(
        state: &AppState,
        view: &View,
        q: &GatewayQuery,
    ) -> Result<(Vec<ListenerRow>, bool), AppError> {
        let q = GatewayQuery {
            page: 1,
            per_page: usize::MAX,
            ..q.clone()
        };
        Ok((state.fleet().gateways(view, &q).items, false))
    }
}

impl ListPage for Gateways {
    async fn page(
        state: &AppState,
        caller: &Caller,
        csrf: &CsrfToken,
        q: &GatewayQuery,
    ) -> Result<String, AppError> {
        let rows = Self::answer(state, &caller.view, q).await?;
        let clusters = state.fleet().cluster_list(&caller.view);
        Ok(pages::gateways::page(
            &shell_of(state, caller, csrf, &clusters),
            q,
            rows,
            &clusters,
        ))
    }
}

/// The policies that set edit-in-place.
pub(in crate::http) struct Policies;

impl List for Policies {
    const NAME: &'static str = "policies";
    type Query = PolicyQuery;
    type Row = PolicyRow;
    type Answer = Page<PolicyRow>;

    fn query(_: &AppState, raw: Option<&str>) -> Result<PolicyQuery, AppError> {
        query::policy_query(raw)
    }

    async fn answer(
        state: &AppState,
        view: &View,
        q: &PolicyQuery,
    ) -> Result<Page<PolicyRow>, AppError> {
        Ok(state.fleet().policies(view, q))
    }

    async fn every(
        state: &AppState,
        view: &View,
        q: &PolicyQuery,
    ) -> Result<(Vec<PolicyRow>, bool), AppError> {
        let q = PolicyQuery {
            page: 1,
            per_page: usize::MAX,
            ..q.clone()
        };
        Ok((state.fleet().policies(view, &q).items, false))
    }
}

impl ListPage for Policies {
    async fn page(
        state: &AppState,
        caller: &Caller,
        csrf: &CsrfToken,
        q: &PolicyQuery,
    ) -> Result<String, AppError> {
        let rows = Self::answer(state, &caller.view, q).await?;
        let clusters = state.fleet().cluster_list(&caller.view);
        Ok(pages::policies::page(
            &shell_of(state, caller, csrf, &clusters),
            q,
            rows,
            &clusters,
        ))
    }
}

//! The traits the server implements for the pages and the JSON API; they return the read
//! model's view types. Every read takes the caller's [`View`] — made once per request — and
//! nothing else about the caller: there is no unscoped query.

use crate::model::read::views::{
    CertificateDetail, CertificateQuery, CertificateRow, FindingQuery, IngressDetail, IngressQuery,
    IngressRow,
};
use std::future::Future;
use std::pin::Pin;

use chrono::{DateTime, Utc};

use crate::model::budget::Budget;
use crate::model::history::{AuditEntry, ChallengeRecord, RecentChange};
use crate::model::read::views::{AuditQuery, ChallengeQuery};
use crate::model::{ClusterView, Finding, ObjectKey, Page, View};

/// Reads the cached state of the fleet.
pub trait FleetReader: Send + Sync {
    /// The clusters the view holds, in configuration order.
    fn clusters(&self, view: &View) -> Vec<ClusterView>;
    /// The same, shared: what every page's sync strip reads (a reader may keep one copy for
    /// everyone who sees the same).
    fn cluster_list(&self, view: &View) -> std::sync::Arc<Vec<ClusterView>> {
        std::sync::Arc::new(self.clusters(view))
    }
    /// Findings across the visible fleet, most urgent first.
    fn findings(&self, view: &View, query: &FindingQuery) -> Vec<Finding>;
    /// The visible findings grouped by root cause, most urgent first.
    fn problems(
        &self,
        view: &View,
        query: &crate::model::read::views::ProblemQuery,
    ) -> crate::model::read::problems::Problems;
    /// Ingresses in the query's sort order (by cluster, namespace, name by default).
    fn ingresses(&self, view: &View, query: &IngressQuery) -> Page<IngressRow>;
    /// The health (severity) of every Ingress the query selects, its paging aside: what the
    /// list's health line counts, without making every row.
    fn ingress_health(
        &self,
        view: &View,
        query: &IngressQuery,
    ) -> Vec<Option<crate::model::Severity>>;
    /// One Ingress with its chain; None when it does not exist or is outside the view.
    fn ingress(&self, view: &View, key: &ObjectKey) -> Option<IngressDetail>;
    fn certificates(&self, view: &View, query: &CertificateQuery) -> Page<CertificateRow>;
    fn certificate(&self, view: &View, key: &ObjectKey) -> Option<CertificateDetail>;
    /// Every issuer the view holds (a namespace-scoped view: its Issuers and the
    /// ClusterIssuers its Certificates use, and the missing ones they name), the most
    /// severe first.
    fn issuers(
        &self,
        view: &View,
        query: &crate::model::read::issuer::IssuerQuery,
    ) -> Page<crate::model::read::issuer::IssuerRow>;
    /// One issuer (`namespace` None: a ClusterIssuer) with the Certificates that use it;
    /// None when it neither exists nor is named by a Certificate the view holds.
    fn issuer(
        &self,
        view: &View,
        cluster: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<crate::model::read::issuer::IssuerDetail>;
    /// The TLS listeners of the Gateways the view holds, one row each, the most severe
    /// first.
    fn gateways(
        &self,
        view: &View,
        query: &crate::model::read::gateways::GatewayQuery,
    ) -> Page<crate::model::read::gateways::ListenerRow>;
    /// One Gateway's page: its listeners followed to their certificates; None when the view
    /// does not hold it.
    fn gateway(
        &self,
        view: &View,
        cluster: &str,
        namespace: &str,
        name: &str,
    ) -> Option<crate::model::read::gateways::GatewayDetail>;
    /// The policies that set edit-in-place the view holds (a namespace-scoped view: those
    /// covering its Ingresses), the most severe first.
    fn policies(
        &self,
        view: &View,
        query: &crate::model::read::policies::PolicyQuery,
    ) -> Page<crate::model::read::policies::PolicyRow>;
    /// One policy with the Ingresses it covers; None when it does not exist or the view
    /// holds none of it.
    fn policy(
        &self,
        view: &View,
        cluster: &str,
        namespace: &str,
        name: &str,
    ) -> Option<crate::model::read::policies::PolicyDetail>;
    /// The Let's Encrypt Certificates the view holds (where `query` says) that will be
    /// issued before `until`: for the budgets' forecast.
    fn due(
        &self,
        view: &View,
        query: &crate::model::read::views::BudgetQuery,
        until: DateTime<Utc>,
    ) -> Vec<crate::model::budget::Due>;
    /// What the probe last saw on each visible host × address (`cluster`, `namespace` and
    /// `host` narrow it).
    fn probes(
        &self,
        view: &View,
        cluster: Option<&str>,
        namespace: Option<&str>,
        host: Option<&str>,
    ) -> Vec<crate::model::probe::ProbeRow>;
}

/// The history could not be read: why, in words for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryUnavailable(pub String);

/// A read of the history under way.
pub type Reading<'a, T> = Pin<Box<dyn Future<Output = Result<T, HistoryUnavailable>> + Send + 'a>>;

/// One page of the challenge history, and the failures among every match by reason.
#[derive(Debug, Clone, PartialEq)]
pub struct ChallengePage {
    pub page: Page<ChallengeRecord>,
    /// Failed challenges by class (redirected, 404 not found, …), most frequent
    /// first.
    pub failures: Vec<(&'static str, usize)>,
}

/// Reads the history (SQLite). Each read returns only what the view holds; the adapter
/// applies it in its queries.
pub trait HistoryReader: Send + Sync {
    /// The page of Challenges `query` asks for.
    fn challenges<'a>(
        &'a self,
        view: &'a View,
        query: &'a ChallengeQuery,
    ) -> Reading<'a, ChallengePage>;
    /// The page of audit rows `query` asks for, newest first.
    fn audit<'a>(&'a self, view: &'a View, query: &'a AuditQuery) -> Reading<'a, Page<AuditEntry>>;
    /// What changed since `since` where `place` looks (a cluster, a namespace, both or
    /// neither), newest first, at most `limit` lines.
    fn recent_changes<'a>(
        &'a self,
        view: &'a View,
        place: crate::model::read::views::Place<'a>,
        since: DateTime<Utc>,
        limit: usize,
    ) -> Reading<'a, Vec<RecentChange>>;
    /// Everything the history knows about one Certificate, as issuance attempts, newest
    /// first.
    fn certificate_timeline<'a>(
        &'a self,
        view: &'a View,
        certificate: &'a ObjectKey,
    ) -> Reading<'a, Vec<crate::model::timeline::Attempt>>;
    /// The Challenges for `hosts` (exactly those names) in one namespace, newest first, at
    /// most `per_host` of each.
    fn host_challenges<'a>(
        &'a self,
        view: &'a View,
        cluster: &'a str,
        namespace: &'a str,
        hosts: Vec<String>,
        per_host: usize,
    ) -> Reading<'a, Vec<ChallengeRecord>>;
}

/// Reads the Let's Encrypt budgets (recomputed from the history).
pub trait BudgetReader: Send + Sync {
    /// The budgets as the view may see them.
    fn budgets(&self, view: &View) -> Vec<Budget>;
}

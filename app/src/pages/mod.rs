//! One module per page. Each renders a whole HTML document from view types; the server
//! fetches the data through the ports and sets the HTTP status.

pub mod action;
pub mod audit;
pub mod board;
pub mod certificate_detail;
pub mod certificates;
pub mod challenges;
pub mod clusters;
pub mod error;
pub mod findings;
pub mod forecast;
pub mod gateways;
pub mod ingress_detail;
pub mod ingresses;
pub mod issuer;
pub mod issuers;
pub mod policies;
pub mod rate_limits;
pub mod search;

/// A detail page's title: its worst problem first, then the object and where it is, e.g.
/// "✖ shop · acme-shop · zrh-prod".
pub(crate) fn page_title(
    worst: Option<crate::model::Severity>,
    name: &str,
    namespace: &str,
    cluster: &str,
) -> String {
    let mark = worst.map(|s| format!("{} ", s.icon())).unwrap_or_default();
    format!("{mark}{name} · {namespace} · {cluster}")
}

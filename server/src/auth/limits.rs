//! What the limits of a caller's view tell them: an address that filters outside it, and
//! clusters that could not say what they may see.

use lookout_app::model::View;

/// What a query's `cluster` and `namespace` filters name outside the caller's view, if
/// anything: such a filter is answered like a missing object (404), the same whether the
/// cluster or namespace does not exist or is someone else's.
pub(crate) fn outside_view(view: &View, query: Option<&str>) -> Option<String> {
    let (mut cluster, mut namespace) = (None, None);
    for (key, value) in form_urlencoded::parse(query?.as_bytes()) {
        match &*key {
            "cluster" if !value.is_empty() => cluster = Some(value.into_owned()),
            "namespace" if !value.is_empty() => namespace = Some(value.into_owned()),
            _ => {}
        }
    }
    match (cluster, namespace) {
        (Some(c), _) if !view.sees_cluster(&c) => Some(format!(
            "no cluster \"{c}\" in your view (the address filters on it)"
        )),
        (Some(c), Some(n)) if !view.sees(&c, &n) => Some(format!(
            "no namespace \"{n}\" of cluster \"{c}\" in your view (the address filters on it)"
        )),
        (None, Some(n)) if !view.clusters().any(|(_, s)| s.read.contains(&n)) => Some(format!(
            "no namespace \"{n}\" in your view (the address filters on it)"
        )),
        _ => None,
    }
}

/// The banner, with a line when some clusters could not say what the caller may see —
/// which ones and why (an API server's words, Lookout's own account) are for Lookout's
/// operators, on the cluster pages and in its log, not for whoever signs in.
pub(crate) fn with_unanswered(banner: Option<String>, view: &View) -> Option<String> {
    if view.unanswered().next().is_none() {
        return banner;
    }
    let line = "Some clusters could not say what you may see: nothing of them is shown to you until they can. Lookout's operators see why on its cluster pages.".to_string();
    Some(match banner {
        Some(b) => format!("{b} {line}"),
        None => line,
    })
}

//! The Kubernetes rights Lookout needs, and asking a cluster whether it has them
//! (`lookout check-access`): one SelfSubjectAccessReview per right, as `kubectl auth can-i`
//! asks. The read rights follow from the watched kinds; the actions name theirs
//! (`actions::RIGHTS`). `deploy/kubernetes/base` grants exactly these.

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::api::PostParams;
use kube::{Api, Client};

use super::kinds::WATCHED;

/// One right: a verb on a resource, cluster-wide or in one namespace, optionally on one name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Right {
    pub verb: &'static str,
    pub group: &'static str,
    pub resource: &'static str,
    pub subresource: &'static str,
    pub namespace: Option<&'static str>,
    pub name: Option<&'static str>,
    /// What Lookout does with it, in a few words.
    pub purpose: String,
}

impl Right {
    /// `list ingresses.networking.k8s.io`, `update certificates.cert-manager.io/status`.
    pub fn describe(&self) -> String {
        let mut r = self.resource.to_string();
        if !self.group.is_empty() {
            r = format!("{r}.{}", self.group);
        }
        if !self.subresource.is_empty() {
            r = format!("{r}/{}", self.subresource);
        }
        if let Some(n) = self.name {
            r = format!("{r} {n:?}");
        }
        format!("{} {r}", self.verb)
    }

    /// `cluster-wide` or `in kube-system`.
    pub fn scope(&self) -> String {
        match self.namespace {
            Some(ns) => format!("in {ns}"),
            None => "cluster-wide".to_string(),
        }
    }
}

/// list and watch of every watched kind, where Lookout watches it.
pub(crate) fn read_rights() -> Vec<Right> {
    let mut out = Vec::new();
    for w in WATCHED {
        let api = w.api();
        let name = api
            .field_selector
            .and_then(|f| f.strip_prefix("metadata.name="));
        for verb in ["list", "watch"] {
            out.push(Right {
                verb,
                group: api.group,
                resource: api.plural,
                subresource: "",
                namespace: api.namespace,
                name,
                purpose: format!("watching {}", w.kind().name()),
            });
        }
    }
    out
}

/// Whether the client's identity has `right` (its SelfSubjectAccessReview's answer).
pub(crate) async fn has(client: &Client, right: &Right) -> Result<bool, kube::Error> {
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                verb: Some(right.verb.to_string()),
                group: Some(right.group.to_string()),
                resource: Some(right.resource.to_string()),
                subresource: (!right.subresource.is_empty()).then(|| right.subresource.to_string()),
                namespace: right.namespace.map(str::to_string),
                name: right.name.map(str::to_string),
                ..ResourceAttributes::default()
            }),
            ..SelfSubjectAccessReviewSpec::default()
        },
        ..SelfSubjectAccessReview::default()
    };
    let answer = Api::<SelfSubjectAccessReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await?;
    Ok(answer.status.is_some_and(|s| s.allowed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_watched_kind_needs_list_and_watch_where_it_is_watched() {
        let rights = read_rights();
        assert_eq!(rights.len(), 2 * WATCHED.len());
        let cilium = rights
            .iter()
            .find(|r| r.resource == "configmaps" && r.verb == "watch")
            .unwrap();
        assert_eq!(cilium.describe(), "watch configmaps \"cilium-config\"");
        assert_eq!(cilium.scope(), "in kube-system");
        assert!(rights.iter().any(
            |r| r.describe() == "list certificaterequests.cert-manager.io"
                && r.scope() == "cluster-wide"
        ));
    }
}

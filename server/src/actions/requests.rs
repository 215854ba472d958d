//! The Kubernetes side of the actions: reading the live object, server-side apply as field
//! manager `lookout`, the status update of a renew, deleting an in-flight request, and who
//! owns a field.

use std::collections::BTreeMap;

use kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, Preconditions,
};
use kube::discovery::ApiResource;
use kube::Client;
use lookout_app::actions::FIELD_MANAGER;
use serde_json::{json, Value};

/// The kinds actions change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Ingress,
    Certificate,
    /// Deleted to restart an issuance.
    CertificateRequest,
    /// Annotated so that cert-manager re-solves its pending Challenges in place.
    Order,
    /// Read: what the Order's Challenges are and how they are solved.
    Challenge,
}

impl Kind {
    /// The same kind as the model names it.
    pub(crate) fn model(self) -> lookout_app::model::Kind {
        use lookout_app::model::Kind as M;
        match self {
            Kind::Ingress => M::Ingress,
            Kind::Certificate => M::Certificate,
            Kind::CertificateRequest => M::CertificateRequest,
            Kind::Order => M::Order,
            Kind::Challenge => M::Challenge,
        }
    }

    fn resource(self) -> ApiResource {
        let (group, version, kind, plural) = match self {
            Kind::Ingress => ("networking.k8s.io", "v1", "Ingress", "ingresses"),
            Kind::Certificate => ("cert-manager.io", "v1", "Certificate", "certificates"),
            Kind::CertificateRequest => (
                "cert-manager.io",
                "v1",
                "CertificateRequest",
                "certificaterequests",
            ),
            Kind::Order => ("acme.cert-manager.io", "v1", "Order", "orders"),
            Kind::Challenge => ("acme.cert-manager.io", "v1", "Challenge", "challenges"),
        };
        ApiResource {
            group: group.into(),
            version: version.into(),
            api_version: format!("{group}/{version}"),
            kind: kind.into(),
            plural: plural.into(),
        }
    }

    fn api(self, client: &Client, ns: &str) -> Api<DynamicObject> {
        Api::namespaced_with(client.clone(), ns, &self.resource())
    }
}

/// Why a call to the cluster failed.
#[derive(Debug)]
pub(crate) enum CallError {
    NotFound,
    /// 409 from server-side apply: another manager owns a field with another value.
    Conflict(String),
    /// 409 from a resourceVersion precondition: the object changed meanwhile.
    Stale,
    Other(String),
}

impl From<kube::Error> for CallError {
    fn from(e: kube::Error) -> Self {
        match e {
            kube::Error::Api(s) if s.code == 404 => CallError::NotFound,
            kube::Error::Api(s) if s.code == 409 && s.message.contains("has been modified") => {
                CallError::Stale
            }
            kube::Error::Api(s) if s.code == 409 => CallError::Conflict(s.message),
            kube::Error::Api(s) => CallError::Other(format!("{} ({})", s.message, s.code)),
            other => CallError::Other(other.to_string()),
        }
    }
}

/// The object as the cluster has it now.
pub(crate) async fn get(
    client: &Client,
    kind: Kind,
    ns: &str,
    name: &str,
) -> Result<DynamicObject, CallError> {
    Ok(kind.api(client, ns).get(name).await?)
}

/// Every object of a kind in a namespace, as the cluster has them now.
pub(crate) async fn list(
    client: &Client,
    kind: Kind,
    ns: &str,
) -> Result<Vec<DynamicObject>, CallError> {
    Ok(kind
        .api(client, ns)
        .list(&ListParams::default())
        .await?
        .items)
}

/// Deletes the object if it still is the one with `uid` (a precondition: one made again
/// meanwhile under the same name is not touched).
pub(crate) async fn delete(
    client: &Client,
    kind: Kind,
    ns: &str,
    name: &str,
    uid: &str,
    dry_run: bool,
) -> Result<(), CallError> {
    let params = DeleteParams {
        dry_run,
        preconditions: Some(Preconditions {
            uid: Some(uid.to_string()),
            resource_version: None,
        }),
        ..Default::default()
    };
    kind.api(client, ns).delete(name, &params).await?;
    Ok(())
}

/// Server-side apply of just these annotations (an empty map gives up every field Lookout
/// owns on the object), as field manager `lookout`, never forced.
pub(crate) async fn apply_annotations(
    client: &Client,
    kind: Kind,
    ns: &str,
    name: &str,
    annotations: &BTreeMap<String, String>,
    dry_run: bool,
) -> Result<DynamicObject, CallError> {
    let r = kind.resource();
    let mut metadata = json!({"name": name, "namespace": ns});
    if !annotations.is_empty() {
        metadata["annotations"] = json!(annotations);
    }
    let body = json!({"apiVersion": r.api_version, "kind": r.kind, "metadata": metadata});
    let mut params = PatchParams::apply(FIELD_MANAGER);
    params.dry_run = dry_run;
    Ok(kind
        .api(client, ns)
        .patch(name, &params, &Patch::Apply(body))
        .await?)
}

/// Replaces the status of `obj` (a PUT to the status subresource). `obj` carries its
/// resourceVersion, so a change made meanwhile is a [`CallError::Stale`].
pub(crate) async fn replace_status(
    client: &Client,
    kind: Kind,
    obj: &DynamicObject,
    dry_run: bool,
) -> Result<DynamicObject, CallError> {
    let ns = obj.metadata.namespace.as_deref().unwrap_or_default();
    let name = obj.metadata.name.as_deref().unwrap_or_default();
    let params = PostParams {
        dry_run,
        field_manager: Some(FIELD_MANAGER.into()),
    };
    Ok(kind
        .api(client, ns)
        .replace_status(name, &params, obj)
        .await?)
}

/// The object's annotations.
pub(crate) fn annotations(obj: &DynamicObject) -> BTreeMap<String, String> {
    obj.metadata.annotations.clone().unwrap_or_default()
}

/// The field managers (with their operation) that own `metadata.annotations[key]`.
pub(crate) fn annotation_owners(obj: &DynamicObject, key: &str) -> Vec<(String, String)> {
    let field = format!("f:{key}");
    obj.metadata
        .managed_fields
        .iter()
        .flatten()
        .filter(|m| {
            m.fields_v1
                .as_ref()
                .and_then(|f| f.0.pointer("/f:metadata/f:annotations"))
                .and_then(Value::as_object)
                .is_some_and(|a| a.contains_key(&field))
        })
        .map(|m| {
            (
                m.manager.clone().unwrap_or_else(|| "unknown".into()),
                m.operation.clone().unwrap_or_else(|| "unknown".into()),
            )
        })
        .collect()
}

/// Whether Lookout (with server-side apply) owns any field of the object.
pub(crate) fn lookout_owns_something(obj: &DynamicObject) -> bool {
    obj.metadata.managed_fields.iter().flatten().any(|m| {
        m.manager.as_deref() == Some(FIELD_MANAGER)
            && m.operation.as_deref() == Some("Apply")
            && m.subresource.is_none()
    })
}

/// `+`/`-`/`~` lines for the annotations that differ between two objects.
pub(crate) fn annotation_diff(
    before: &BTreeMap<String, String>,
    after: &BTreeMap<String, String>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (k, v) in after {
        match before.get(k) {
            None => out.push(format!("+ metadata.annotations[{k:?}]: {v:?}")),
            Some(old) if old != v => {
                out.push(format!("~ metadata.annotations[{k:?}]: {old:?} → {v:?}"))
            }
            Some(_) => {}
        }
    }
    for (k, v) in before {
        if !after.contains_key(k) {
            out.push(format!("- metadata.annotations[{k:?}]: {v:?}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotation_diff_shows_added_changed_and_removed_keys() {
        let before = BTreeMap::from([("a".to_string(), "1".to_string()), ("b".into(), "x".into())]);
        let after = BTreeMap::from([("a".to_string(), "2".to_string()), ("c".into(), "y".into())]);
        assert_eq!(
            annotation_diff(&before, &after),
            [
                "~ metadata.annotations[\"a\"]: \"1\" → \"2\"",
                "+ metadata.annotations[\"c\"]: \"y\"",
                "- metadata.annotations[\"b\"]: \"x\"",
            ]
        );
    }

    #[test]
    fn owners_are_read_from_managed_fields() {
        let obj: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "shop", "managedFields": [
                {"manager": "argocd-controller", "operation": "Apply", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:metadata": {"f:annotations": {"f:acme.cert-manager.io/http01-edit-in-place": {}}}}},
                {"manager": "kubectl", "operation": "Update", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:spec": {}}}
            ]}
        }))
        .unwrap();
        assert_eq!(
            annotation_owners(&obj, "acme.cert-manager.io/http01-edit-in-place"),
            [("argocd-controller".to_string(), "Apply".to_string())]
        );
        assert!(!lookout_owns_something(&obj));
    }
}

//! The objects the watchers decode: metadata and the rest of the object as JSON, like kube's
//! `DynamicObject`, read in one pass over the JSON. `DynamicObject` gathers the rest of the
//! object by `#[serde(flatten)]`, which buffers every object whole before decoding it a
//! second time, and keeps each `managedFields` entry's `fieldsV1` — a tree the size of the
//! object — for every object. Lookout reads only who owns which annotations there, so an
//! entry keeps `f:metadata.f:annotations` of its `fieldsV1` and nothing else.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    FieldsV1, ManagedFieldsEntry, ObjectMeta, OwnerReference, Time,
};
use kube::core::{ApiResource, DynamicResourceScope};
use kube::Resource;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

/// A watched object: its metadata, and everything but `metadata`, `apiVersion` and `kind`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Object {
    pub metadata: ObjectMeta,
    pub data: Value,
}

impl Resource for Object {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        dt.group.as_str().into()
    }

    fn version(dt: &ApiResource) -> Cow<'_, str> {
        dt.version.as_str().into()
    }

    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        dt.api_version.as_str().into()
    }

    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl<'de> Deserialize<'de> for Object {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Object, D::Error> {
        struct Fields;
        impl<'de> Visitor<'de> for Fields {
            type Value = Object;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a Kubernetes object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Object, A::Error> {
                let mut metadata = None;
                let mut data = serde_json::Map::new();
                while let Some(key) = map.next_key_seed(TopKey::TypeMeta)? {
                    match key {
                        TopKey::Metadata => {
                            if metadata.is_some() {
                                return Err(de::Error::duplicate_field("metadata"));
                            }
                            metadata = Some(map.next_value::<Meta>()?.into());
                        }
                        TopKey::TypeMeta => {
                            map.next_value::<IgnoredAny>()?;
                        }
                        TopKey::Other(key) => {
                            let value = map.next_value::<Value>()?;
                            data.insert(key, value);
                        }
                    }
                }
                Ok(Object {
                    metadata: metadata.unwrap_or_default(),
                    data: Value::Object(data),
                })
            }
        }
        d.deserialize_map(Fields)
    }
}

/// The metadata fields Lookout reads, and those a watch's bookkeeping does.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Meta {
    name: Option<String>,
    generate_name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    generation: Option<i64>,
    creation_timestamp: Option<Time>,
    deletion_timestamp: Option<Time>,
    labels: Option<BTreeMap<String, String>>,
    annotations: Option<BTreeMap<String, String>>,
    owner_references: Option<Vec<OwnerReference>>,
    finalizers: Option<Vec<String>>,
    managed_fields: Option<Vec<Entry>>,
}

impl From<Meta> for ObjectMeta {
    fn from(m: Meta) -> ObjectMeta {
        ObjectMeta {
            name: m.name,
            generate_name: m.generate_name,
            namespace: m.namespace,
            uid: m.uid,
            resource_version: m.resource_version,
            generation: m.generation,
            creation_timestamp: m.creation_timestamp,
            deletion_timestamp: m.deletion_timestamp,
            labels: m.labels,
            annotations: m.annotations,
            owner_references: m.owner_references,
            finalizers: m.finalizers,
            managed_fields: m
                .managed_fields
                .map(|entries| entries.into_iter().map(Into::into).collect()),
            ..ObjectMeta::default()
        }
    }
}

/// A `managedFields` entry, its `fieldsV1` cut to the annotations.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    manager: Option<String>,
    operation: Option<String>,
    api_version: Option<String>,
    time: Option<Time>,
    subresource: Option<String>,
    fields_type: Option<String>,
    fields_v1: Option<Annotations>,
}

impl From<Entry> for ManagedFieldsEntry {
    fn from(e: Entry) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            manager: e.manager,
            operation: e.operation,
            api_version: e.api_version,
            time: e.time,
            subresource: e.subresource,
            fields_type: e.fields_type,
            fields_v1: e.fields_v1.map(|a| {
                FieldsV1(match a.0 {
                    Some(owned) => serde_json::json!({"f:metadata": {"f:annotations": owned}}),
                    None => Value::Object(Default::default()),
                })
            }),
        }
    }
}

/// `f:metadata.f:annotations` of a `fieldsV1`, when there; the rest is skipped unread.
struct Annotations(Option<Value>);

impl<'de> Deserialize<'de> for Annotations {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Annotations, D::Error> {
        let metadata = d.deserialize_map(Find::<MetadataFields>::new("f:metadata"))?;
        Ok(Annotations(metadata.and_then(|m| m.0)))
    }
}

/// `f:metadata` of a `fieldsV1`: its `f:annotations`.
struct MetadataFields(Option<Value>);

impl<'de> Deserialize<'de> for MetadataFields {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<MetadataFields, D::Error> {
        d.deserialize_map(Find::<Value>::new("f:annotations"))
            .map(MetadataFields)
    }
}

/// Visits a map for the value of one key, skipping the others unread.
struct Find<T> {
    key: &'static str,
    value: PhantomData<T>,
}

impl<T> Find<T> {
    fn new(key: &'static str) -> Self {
        Find {
            key,
            value: PhantomData,
        }
    }
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for Find<T> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a map (looking for {:?})", self.key)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<T>, A::Error> {
        let mut found = None;
        while let Some(wanted) = map.next_key_seed(KeyIs(self.key))? {
            if wanted {
                found = Some(map.next_value::<T>()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// Whether a map's key is this one, compared where it lies (not copied).
struct KeyIs(&'static str);

impl<'de> DeserializeSeed<'de> for KeyIs {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for KeyIs {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<bool, E> {
        Ok(key == self.0)
    }
}

/// A key of an object: `metadata`, `apiVersion` or `kind` (not copied), or another (kept).
enum TopKey {
    Metadata,
    TypeMeta,
    Other(String),
}

impl<'de> DeserializeSeed<'de> for TopKey {
    type Value = TopKey;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<TopKey, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for TopKey {
    type Value = TopKey;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key of a Kubernetes object")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<TopKey, E> {
        Ok(match key {
            "metadata" => TopKey::Metadata,
            "apiVersion" | "kind" => TopKey::TypeMeta,
            other => TopKey::Other(other.to_string()),
        })
    }

    fn visit_string<E: de::Error>(self, key: String) -> Result<TopKey, E> {
        match self.visit_str::<E>(&key)? {
            TopKey::Other(_) => Ok(TopKey::Other(key)),
            known => Ok(known),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::DynamicObject;
    use serde_json::json;

    fn certificate() -> Value {
        json!({
            "apiVersion": "cert-manager.io/v1",
            "kind": "Certificate",
            "metadata": {
                "name": "web-tls", "namespace": "shop", "uid": "3f1c7e9a-0000-4000-8000-000000000001",
                "resourceVersion": "42", "generation": 3,
                "creationTimestamp": "2026-12-01T10:00:00Z",
                "labels": {"app": "web"},
                "annotations": {"acme.cert-manager.io/http01-edit-in-place": "true", "note": "x"},
                "ownerReferences": [{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "web", "uid": "u1", "controller": true}],
                "finalizers": ["f"],
                "managedFields": [
                    {"manager": "kubectl", "operation": "Apply", "apiVersion": "cert-manager.io/v1",
                     "time": "2026-12-01T11:00:00Z", "fieldsType": "FieldsV1",
                     "fieldsV1": {"f:metadata": {"f:annotations": {"f:acme.cert-manager.io/http01-edit-in-place": {}},
                                                 "f:labels": {"f:app": {}}},
                                  "f:spec": {"f:dnsNames": {}, "f:secretName": {}}}},
                    {"manager": "cert-manager", "operation": "Update", "subresource": "status",
                     "time": "2026-12-01T12:00:00Z", "fieldsType": "FieldsV1",
                     "fieldsV1": {"f:status": {"f:conditions": {}}}},
                    {"manager": "escaped", "operation": "Update",
                     "fieldsV1": {"F:METADATA": {"F:ANNOTATIONS": {"f:note": {}}}}}
                ]
            },
            "spec": {"secretName": "web-tls", "dnsNames": ["shop.example"]},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}
        })
    }

    /// What Lookout reads of an object is what kube's `DynamicObject` holds: every metadata
    /// field the projections and the watch read, the rest of the object, and who owns which
    /// annotation; of `fieldsV1` only the annotations are kept.
    #[test]
    fn an_object_reads_as_kubes_dynamic_object_without_the_field_trees() {
        // The third entry's keys escaped, as a JSON encoder may write them.
        let text = serde_json::to_string(&certificate())
            .unwrap()
            .replace("F:METADATA", "f:meta\\u0064ata")
            .replace("F:ANNOTATIONS", "f:annot\\u0061tions");
        assert!(text.contains(r"f:meta\u0064ata"));
        let ours: Object = serde_json::from_str(&text).unwrap();
        let theirs: DynamicObject = serde_json::from_str(&text).unwrap();
        let mut expected = theirs.metadata.clone();
        let entries = expected.managed_fields.as_mut().unwrap();
        entries[0].fields_v1 = Some(FieldsV1(json!({"f:metadata": {"f:annotations":
            {"f:acme.cert-manager.io/http01-edit-in-place": {}}}})));
        entries[1].fields_v1 = Some(FieldsV1(json!({})));
        entries[2].fields_v1 = Some(FieldsV1(
            json!({"f:metadata": {"f:annotations": {"f:note": {}}}}),
        ));
        assert_eq!(ours.metadata, expected);
        assert_eq!(ours.data, theirs.data);
        assert!(ours.data.get("apiVersion").is_none() && ours.data.get("kind").is_none());
    }

    #[test]
    fn a_malformed_object_is_an_error_not_a_guess() {
        for bad in [
            json!({"metadata": {"name": 7}}),
            json!({"metadata": {"managedFields": [{"fieldsV1": []}]}}),
            json!([]),
        ] {
            let text = bad.to_string();
            assert!(serde_json::from_str::<Object>(&text).is_err(), "{text}");
        }
        // A duplicate key written as text (json! keeps one).
        let twice = r#"{"metadata": {"name": "a"}, "metadata": {"name": "b"}}"#;
        assert!(serde_json::from_str::<Object>(twice).is_err());
        let bare: Object = serde_json::from_str(r#"{"spec": 1}"#).unwrap();
        assert_eq!(bare.metadata, ObjectMeta::default());
        assert_eq!(bare.data, json!({"spec": 1}));
    }
}

//! One simulated cluster's object store: resource versions, the retained event window that
//! watches resume from, and every write verb with the API server's rules.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{json, Map, Value};
use tokio::sync::{broadcast, watch};

use crate::clock::Clock;
use crate::fields::Scope;
use crate::resources::{builtin_types, crd_status, ResourceType};
use crate::selectors::{FieldSelector, LabelSelector};
use crate::status::ApiError;

mod gc;
mod watches;
mod writes;

pub use watches::WatchStart;
pub use writes::Preconditions;

/// A change, as a watch stream reports it.
#[derive(Debug, Clone)]
pub struct WatchEvent {
    pub rv: u64,
    pub group: String,
    pub plural: String,
    pub namespace: Option<String>,
    /// `ADDED`, `MODIFIED` or `DELETED`.
    pub kind: &'static str,
    pub object: Arc<Value>,
}

type TypeKey = (String, String);
type ObjKey = (String, String);

struct State {
    rv: u64,
    /// Watches from a resource version below this one get 410 Gone.
    floor: u64,
    log: VecDeque<Arc<WatchEvent>>,
    /// Shared with the watch events that carry them (an object and its last event are one
    /// allocation).
    objects: HashMap<TypeKey, BTreeMap<ObjKey, Arc<Value>>>,
    types: Vec<ResourceType>,
    uid_seq: u64,
    /// When each deleted object went, by uid, while the garbage collector waits ([`gc`]).
    gone: HashMap<String, chrono::DateTime<chrono::Utc>>,
}

/// How a write is made: who makes it, which part of the object, whether it persists.
#[derive(Debug, Clone)]
pub struct WriteOpts {
    /// The field manager; defaults to the client's user agent.
    pub manager: String,
    pub dry_run: bool,
    /// True for the `/status` subresource.
    pub status: bool,
    /// The version the client spoke (recorded in managedFields).
    pub version: String,
}

/// The result of a list call.
pub struct ListPage {
    /// The stored objects themselves (shared, not copied: a list of a large kind is
    /// serialized straight from them).
    pub items: Vec<Arc<Value>>,
    pub resource_version: u64,
    pub continue_token: Option<String>,
    pub remaining: Option<usize>,
}

/// What a list or watch selects.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub namespace: Option<String>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

impl Selection {
    pub fn matches(&self, obj: &Value) -> bool {
        if let Some(ns) = &self.namespace {
            if obj.pointer("/metadata/namespace").and_then(Value::as_str) != Some(ns) {
                return false;
            }
        }
        self.labels.matches(obj) && self.fields.matches(obj)
    }
}

/// One simulated cluster.
pub struct Cluster {
    pub name: String,
    pub clock: Arc<Clock>,
    state: Mutex<State>,
    events: broadcast::Sender<Arc<WatchEvent>>,
    /// Bumped to end every open watch (fault injection).
    watch_epoch: watch::Sender<u64>,
    /// How many events are retained for watches to resume from.
    window: usize,
    /// Injected faults (see [`crate::faults`]).
    faults: Mutex<crate::faults::Faults>,
    /// Requests answered 429 by fault injection.
    throttled: std::sync::atomic::AtomicU64,
    /// How long the garbage collector waits before removing a deleted owner's dependents.
    gc_delay: std::sync::RwLock<Option<chrono::Duration>>,
}

fn is_path_segment(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '%'])
}

fn is_dns_subdomain(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
}

fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(field)?.as_str()
}

fn without(obj: &Value, keys: &[&str]) -> Value {
    let mut o = obj.clone();
    if let Some(m) = o.as_object_mut() {
        for k in keys {
            m.remove(*k);
        }
    }
    o
}

impl Cluster {
    pub fn new(name: impl Into<String>, clock: Arc<Clock>) -> Arc<Self> {
        let (events, _) = broadcast::channel(8192);
        let (watch_epoch, _) = watch::channel(0);
        let cluster = Arc::new(Cluster {
            name: name.into(),
            clock,
            state: Mutex::new(State {
                rv: 1,
                floor: 0,
                log: VecDeque::new(),
                objects: HashMap::new(),
                types: builtin_types(),
                uid_seq: 0,
                gone: HashMap::new(),
            }),
            events,
            watch_epoch,
            window: 20_000,
            faults: Mutex::new(crate::faults::Faults::default()),
            throttled: std::sync::atomic::AtomicU64::new(0),
            gc_delay: std::sync::RwLock::new(None),
        });
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            let rt = cluster
                .resolve("", "namespaces")
                .expect("namespaces are built in");
            cluster
                .create(
                    &rt,
                    None,
                    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
                    &WriteOpts::system(),
                )
                .expect("fresh cluster accepts its system namespaces");
        }
        cluster
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().expect("kubesim state lock poisoned")
    }

    /// Every kind served now (built-in and from CRDs).
    pub fn types(&self) -> Vec<ResourceType> {
        self.lock().types.clone()
    }

    /// The kind at `group`/`plural`, if served.
    pub fn resolve(&self, group: &str, plural: &str) -> Option<ResourceType> {
        self.lock()
            .types
            .iter()
            .find(|t| t.group == group && t.plural == plural)
            .cloned()
    }

    /// The current resource version.
    pub fn resource_version(&self) -> u64 {
        self.lock().rv
    }

    pub fn get(&self, rt: &ResourceType, ns: Option<&str>, name: &str) -> Result<Value, ApiError> {
        let st = self.lock();
        st.objects
            .get(&(rt.group.clone(), rt.plural.clone()))
            .and_then(|m| m.get(&(ns.unwrap_or("").to_string(), name.to_string())))
            .map(|o| Value::clone(o))
            .ok_or_else(|| ApiError::not_found(&rt.qualified(), name))
    }

    pub fn list(
        &self,
        rt: &ResourceType,
        sel: &Selection,
        limit: Option<usize>,
        continue_from: Option<&str>,
    ) -> Result<ListPage, ApiError> {
        let st = self.lock();
        let start: Option<ObjKey> = match continue_from {
            Some(tok) => Some(decode_continue(tok)?),
            None => None,
        };
        let mut items = Vec::new();
        let mut last = None;
        // Whether a matching object follows the page, and how many when that is known.
        let (mut more, mut remaining) = (false, None);
        if let Some(objs) = st.objects.get(&(rt.group.clone(), rt.plural.clone())) {
            // From just after the continue token's key: a page costs its own objects, not
            // every object before it.
            let range = match &start {
                Some(s) => objs
                    .range::<ObjKey, _>((std::ops::Bound::Excluded(s), std::ops::Bound::Unbounded)),
                None => objs.range::<ObjKey, _>(..),
            };
            let mut rest = range.filter(|(_, obj)| sel.matches(obj)).peekable();
            while let Some((k, obj)) = rest.next() {
                items.push(Arc::clone(obj));
                last = Some(k.clone());
                if limit.is_some_and(|l| items.len() >= l) {
                    more = rest.peek().is_some();
                    break;
                }
            }
            // The API server counts what is left only for a list without label or field
            // selectors (etcd3 `store.go`: `pred.Empty()`); then the keys say it (the
            // namespace is the key's first part), no object is read.
            if more && sel.labels.is_empty() && sel.fields.is_empty() {
                let after = last.clone().expect("a full page has a last key");
                remaining = Some(
                    objs.range::<ObjKey, _>((
                        std::ops::Bound::Excluded(&after),
                        std::ops::Bound::Unbounded,
                    ))
                    .filter(|((ns, _), _)| sel.namespace.as_ref().is_none_or(|n| n == ns))
                    .count(),
                );
            }
        }
        let continue_token =
            more.then(|| encode_continue(last.as_ref().expect("a full page has a last key")));
        Ok(ListPage {
            items,
            resource_version: st.rv,
            continue_token,
            remaining,
        })
    }
}

impl State {
    fn get_obj(&self, rt: &ResourceType, key: &ObjKey) -> Option<&Value> {
        self.objects
            .get(&(rt.group.clone(), rt.plural.clone()))?
            .get(key)
            .map(|o| o.as_ref())
    }
}

impl WriteOpts {
    /// Writes kubesim makes by itself.
    pub fn system() -> Self {
        WriteOpts {
            manager: "kube-apiserver".into(),
            dry_run: false,
            status: false,
            version: "v1".into(),
        }
    }
}

fn namespaces_type() -> ResourceType {
    builtin_types()
        .into_iter()
        .find(|t| t.plural == "namespaces")
        .expect("namespaces are built in")
}

fn scope_for(rt: &ResourceType, status: bool) -> Scope {
    if status {
        Scope::StatusOnly
    } else if rt.status_subresource {
        Scope::MainWithoutStatus
    } else {
        Scope::Whole
    }
}

fn invalid(rt: &ResourceType, name: &str, field: &str, detail: &str) -> ApiError {
    let group_kind = if rt.group.is_empty() {
        rt.kind.clone()
    } else {
        format!("{}.{}", rt.kind, rt.group)
    };
    ApiError::new(422, "Invalid", format!("{group_kind} \"{name}\" is invalid: {field}: {detail}"))
        .with_details(json!({"name": name, "group": rt.group, "kind": rt.kind, "causes": [{"reason": "FieldValueInvalid", "message": detail, "field": field}]}))
}

fn conflict_stale(rt: &ResourceType, name: &str) -> ApiError {
    ApiError::new(409, "Conflict", format!("Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again", rt.qualified()))
        .with_details(json!({"name": name, "group": rt.group, "kind": rt.plural}))
}

/// RFC 7386: objects merge, `null` deletes, everything else replaces.
pub fn json_merge_patch(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(p) => {
            if !target.is_object() {
                *target = Value::Object(Map::new());
            }
            let t = target.as_object_mut().expect("made an object above");
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    json_merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        other => *target = other.clone(),
    }
}

fn encode_continue(key: &ObjKey) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json!([key.0, key.1]).to_string())
}

fn decode_continue(token: &str) -> Result<ObjKey, ApiError> {
    use base64::Engine;
    let bad =
        || ApiError::bad_request("continue key is not valid: it was not issued by this server");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| bad())?;
    let v: (String, String) = serde_json::from_slice(&bytes).map_err(|_| bad())?;
    Ok(v)
}

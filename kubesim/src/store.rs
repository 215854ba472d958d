//! One simulated cluster's object store: resource versions, the retained event window that
//! watches resume from, and every write verb with the API server's rules.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{json, Map, Value};
use tokio::sync::{broadcast, watch};

use crate::clock::Clock;
use crate::fields::{self, ApplyRequest, Scope};
use crate::resources::{builtin_types, crd_status, ResourceType};
use crate::selectors::{FieldSelector, LabelSelector};
use crate::status::ApiError;

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
    objects: HashMap<TypeKey, BTreeMap<ObjKey, Value>>,
    types: Vec<ResourceType>,
    uid_seq: u64,
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
    pub items: Vec<Value>,
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
            }),
            events,
            watch_epoch,
            window: 20_000,
            faults: Mutex::new(crate::faults::Faults::default()),
            throttled: std::sync::atomic::AtomicU64::new(0),
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
            .cloned()
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
        let mut remaining = 0usize;
        if let Some(objs) = st.objects.get(&(rt.group.clone(), rt.plural.clone())) {
            let range = objs
                .iter()
                .filter(|(k, _)| start.as_ref().is_none_or(|s| *k > s));
            for (k, obj) in range {
                if !sel.matches(obj) {
                    continue;
                }
                if limit.is_some_and(|l| items.len() >= l) {
                    remaining += 1;
                    continue;
                }
                items.push(obj.clone());
                last = Some(k.clone());
            }
        }
        let continue_token = (remaining > 0)
            .then(|| encode_continue(last.as_ref().expect("a full page has a last key")));
        Ok(ListPage {
            items,
            resource_version: st.rv,
            continue_token,
            remaining: (remaining > 0).then_some(remaining),
        })
    }

    /// Creates an object (POST).
    pub fn create(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        mut body: Value,
        opts: &WriteOpts,
    ) -> Result<Value, ApiError> {
        let mut st = self.lock();
        let name = self.prepare_new(&mut st, rt, ns, &mut body)?;
        let key = (ns.unwrap_or("").to_string(), name.clone());
        if st.get_obj(rt, &key).is_some() {
            return Err(ApiError::new(
                409,
                "AlreadyExists",
                format!("{} \"{name}\" already exists", rt.qualified()),
            )
            .with_details(json!({"name": name, "group": rt.group, "kind": rt.plural})));
        }
        if rt.status_subresource {
            if let Some(m) = body.as_object_mut() {
                m.remove("status");
            }
        }
        let now = self.clock.stamp();
        fields::track_update(
            None,
            &mut body,
            &opts.manager,
            &rt.api_version(&opts.version),
            scope_for(rt, false),
            &now,
        );
        self.commit(&mut st, rt, key, Some(body), opts.dry_run)
    }

    /// Checks a new object's name and namespace and fills in the server-set metadata.
    fn prepare_new(
        &self,
        st: &mut State,
        rt: &ResourceType,
        ns: Option<&str>,
        body: &mut Value,
    ) -> Result<String, ApiError> {
        if !body.is_object() {
            return Err(ApiError::bad_request(
                "the body of the request must be a JSON object",
            ));
        }
        if let Some(kind) = body.get("kind").and_then(Value::as_str) {
            if kind != rt.kind {
                return Err(ApiError::bad_request(format!(
                    "the kind {kind:?} of the body does not match the resource {}",
                    rt.qualified()
                )));
            }
        }
        let meta = body
            .as_object_mut()
            .expect("checked above")
            .entry("metadata")
            .or_insert_with(|| json!({}));
        let Some(meta) = meta.as_object_mut() else {
            return Err(ApiError::bad_request("metadata must be an object"));
        };
        let name = match meta.get("name").and_then(Value::as_str) {
            Some(n) => n.to_string(),
            None => match meta.get("generateName").and_then(Value::as_str) {
                Some(prefix) => format!("{prefix}{:05x}", st.uid_seq + 1),
                None => {
                    return Err(invalid(
                        rt,
                        "",
                        "metadata.name",
                        "Required value: name or generateName is required",
                    ));
                }
            },
        };
        if !is_dns_subdomain(&name) {
            return Err(invalid(rt, &name, "metadata.name",
                &format!("Invalid value: {name:?}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character")));
        }
        match (rt.namespaced, ns) {
            (true, Some(ns)) => {
                if let Some(body_ns) = meta.get("namespace").and_then(Value::as_str) {
                    if body_ns != ns {
                        return Err(ApiError::bad_request("the namespace of the provided object does not match the namespace sent on the request"));
                    }
                }
                if st
                    .get_obj(&namespaces_type(), &(String::new(), ns.to_string()))
                    .is_none()
                {
                    return Err(ApiError::not_found("namespaces", ns));
                }
                meta.insert("namespace".into(), json!(ns));
            }
            (true, None) => {
                return Err(ApiError::bad_request(
                    "a namespaced resource must be created in a namespace",
                ))
            }
            (false, _) => {
                meta.remove("namespace");
            }
        }
        st.uid_seq += 1;
        let cluster_tag = self
            .name
            .bytes()
            .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(b as u32));
        meta.insert("name".into(), json!(name));
        meta.insert(
            "uid".into(),
            json!(format!(
                "{cluster_tag:08x}-0000-4000-8000-{:012x}",
                st.uid_seq
            )),
        );
        meta.insert("creationTimestamp".into(), json!(self.clock.stamp()));
        meta.insert("generation".into(), json!(1));
        meta.remove("resourceVersion");
        meta.remove("deletionTimestamp");
        Ok(name)
    }

    /// Replaces an object (PUT), on the main resource or the status subresource.
    pub fn update(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        name: &str,
        body: Value,
        opts: &WriteOpts,
    ) -> Result<Value, ApiError> {
        let mut st = self.lock();
        let key = (ns.unwrap_or("").to_string(), name.to_string());
        let old = st
            .get_obj(rt, &key)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&rt.qualified(), name))?;
        if let Some(rv) = meta_str(&body, "resourceVersion") {
            if rv != meta_str(&old, "resourceVersion").unwrap_or("") {
                return Err(conflict_stale(rt, name));
            }
        }
        if let Some(body_name) = meta_str(&body, "name") {
            if body_name != name {
                return Err(ApiError::bad_request(format!("the name of the object ({body_name}) does not match the name on the URL ({name})")));
            }
        }
        let new = self.finish_write(rt, &old, body, opts)?;
        self.commit(&mut st, rt, key, Some(new), opts.dry_run)
    }

    /// Applies a JSON merge patch (RFC 7386); strategic merge patch is served the same way.
    pub fn merge_patch(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        name: &str,
        patch: &Value,
        opts: &WriteOpts,
    ) -> Result<Value, ApiError> {
        let mut st = self.lock();
        let key = (ns.unwrap_or("").to_string(), name.to_string());
        let old = st
            .get_obj(rt, &key)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&rt.qualified(), name))?;
        if let Some(rv) = patch
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
        {
            if rv != meta_str(&old, "resourceVersion").unwrap_or("") {
                return Err(conflict_stale(rt, name));
            }
        }
        let mut body = old.clone();
        json_merge_patch(&mut body, patch);
        let new = self.finish_write(rt, &old, body, opts)?;
        self.commit(&mut st, rt, key, Some(new), opts.dry_run)
    }

    /// Server-side apply; creates the object when it does not exist.
    pub fn apply(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        name: &str,
        body: Value,
        force: bool,
        opts: &WriteOpts,
    ) -> Result<Value, ApiError> {
        let mut st = self.lock();
        if meta_str(&body, "name").is_some_and(|n| n != name) {
            return Err(ApiError::bad_request(format!(
                "the name of the object does not match the name on the URL ({name})"
            )));
        }
        let key = (ns.unwrap_or("").to_string(), name.to_string());
        let old = st.get_obj(rt, &key).cloned();
        if let (Some(old), Some(rv)) = (&old, meta_str(&body, "resourceVersion")) {
            if rv != meta_str(old, "resourceVersion").unwrap_or("") {
                return Err(conflict_stale(rt, name));
            }
        }
        let now = self.clock.stamp();
        let api_version = rt.api_version(&opts.version);
        let req = ApplyRequest {
            manager: &opts.manager,
            api_version: &api_version,
            force,
            scope: scope_for(rt, opts.status),
            now: &now,
        };
        let merged = match &old {
            Some(old) => fields::apply(Some(old), &body, &req),
            None => {
                if opts.status {
                    return Err(ApiError::not_found(&rt.qualified(), name));
                }
                let mut fresh =
                    json!({"apiVersion": api_version, "kind": rt.kind, "metadata": {"name": name}});
                self.prepare_new(&mut st, rt, ns, &mut fresh)?;
                fields::apply(Some(&fresh), &body, &req)
            }
        };
        let new = merged.map_err(|conflicts| {
            let message = fields::conflict_message(&conflicts, &api_version);
            let causes: Vec<Value> = conflicts
                .iter()
                .map(|c| json!({"type": "FieldManagerConflict", "message": format!("conflict with \"{}\" using {api_version}", c.manager), "field": c.field}))
                .collect();
            ApiError::new(409, "Conflict", message).with_details(json!({"name": name, "group": rt.group, "kind": rt.plural, "causes": causes}))
        })?;
        let new = match &old {
            Some(old) => self.bump_generation(old, new),
            None => new,
        };
        self.commit(&mut st, rt, key, Some(new), opts.dry_run)
    }

    /// Keeps what a write may not change and bumps the generation when the spec changed.
    fn finish_write(
        &self,
        rt: &ResourceType,
        old: &Value,
        mut body: Value,
        opts: &WriteOpts,
    ) -> Result<Value, ApiError> {
        if !body.is_object() {
            return Err(ApiError::bad_request(
                "the body of the request must be a JSON object",
            ));
        }
        let obj = body.as_object_mut().expect("checked above");
        if opts.status {
            // The status subresource changes nothing but status.
            let status = obj.remove("status");
            let mut kept = old.clone();
            match status {
                Some(s) => kept["status"] = s,
                None => {
                    kept.as_object_mut()
                        .expect("stored objects are objects")
                        .remove("status");
                }
            }
            body = kept;
        } else if rt.status_subresource {
            match old.get("status") {
                Some(s) => {
                    obj.insert("status".into(), s.clone());
                }
                None => {
                    obj.remove("status");
                }
            }
        }
        let explicit_managed = body.pointer("/metadata/managedFields").cloned();
        for (k, v) in old["metadata"]
            .as_object()
            .expect("stored objects have metadata")
        {
            if [
                "name",
                "namespace",
                "uid",
                "creationTimestamp",
                "generation",
                "resourceVersion",
            ]
            .contains(&k.as_str())
            {
                body["metadata"][k] = v.clone();
            }
        }
        body["apiVersion"] = old["apiVersion"].clone();
        body["kind"] = old["kind"].clone();
        let old_managed = old.pointer("/metadata/managedFields").cloned();
        match explicit_managed {
            // A client that writes managedFields itself (e.g. `[{}]` to reset) gets them.
            Some(m) if Some(&m) != old_managed.as_ref() => {
                let cleaned: Vec<Value> = m
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter(|e| e.get("manager").is_some())
                            .cloned()
                            .collect()
                    })
                    .unwrap_or_default();
                body["metadata"]["managedFields"] = Value::Array(cleaned);
            }
            _ => {
                let now = self.clock.stamp();
                fields::track_update(
                    Some(old),
                    &mut body,
                    &opts.manager,
                    &rt.api_version(&opts.version),
                    scope_for(rt, opts.status),
                    &now,
                );
            }
        }
        Ok(self.bump_generation(old, body))
    }

    fn bump_generation(&self, old: &Value, mut new: Value) -> Value {
        let spec_changed =
            without(old, &["metadata", "status"]) != without(&new, &["metadata", "status"]);
        let generation = old
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(1);
        new["metadata"]["generation"] = json!(if spec_changed {
            generation + 1
        } else {
            generation
        });
        new
    }

    /// Deletes an object, its owned dependents and, for a namespace, everything in it.
    pub fn delete(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        name: &str,
        dry_run: bool,
    ) -> Result<Value, ApiError> {
        let mut st = self.lock();
        let key = (ns.unwrap_or("").to_string(), name.to_string());
        let old = st
            .get_obj(rt, &key)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&rt.qualified(), name))?;
        if dry_run {
            return Ok(old);
        }
        let deleted = self.commit(&mut st, rt, key, None, false)?;
        let mut doomed: Vec<String> = vec![meta_str(&old, "uid").unwrap_or_default().to_string()];
        let is_namespace = rt.group.is_empty() && rt.plural == "namespaces";
        while let Some(uid) = doomed.pop() {
            let mut victims = Vec::new();
            for t in st.types.clone() {
                for (k, obj) in st
                    .objects
                    .get(&(t.group.clone(), t.plural.clone()))
                    .into_iter()
                    .flatten()
                {
                    let owned = obj
                        .pointer("/metadata/ownerReferences")
                        .and_then(Value::as_array)
                        .is_some_and(|refs| refs.iter().any(|r| r["uid"].as_str() == Some(&uid)));
                    let in_ns = is_namespace && t.namespaced && k.0 == name;
                    if owned || in_ns {
                        victims.push((
                            t.clone(),
                            k.clone(),
                            meta_str(obj, "uid").unwrap_or_default().to_string(),
                        ));
                    }
                }
            }
            for (t, k, victim_uid) in victims {
                if st.get_obj(&t, &k).is_some() {
                    self.commit(&mut st, &t, k, None, false)?;
                    doomed.push(victim_uid);
                }
            }
        }
        Ok(deleted)
    }

    /// Stores (or removes, when `new` is None) an object under a new resource version and
    /// tells the watchers.
    fn commit(
        &self,
        st: &mut State,
        rt: &ResourceType,
        key: ObjKey,
        new: Option<Value>,
        dry_run: bool,
    ) -> Result<Value, ApiError> {
        let tkey = (rt.group.clone(), rt.plural.clone());
        let next_rv = st.rv + 1;
        let (kind, mut obj) = match new {
            Some(mut obj) => {
                if rt.plural == "customresourcedefinitions" && rt.group == "apiextensions.k8s.io" {
                    let crd_type = ResourceType::from_crd(&obj).ok_or_else(|| invalid(rt, &key.1, "spec", "Invalid value: the definition names no served version, group, kind or plural"))?;
                    if key.1 != format!("{}.{}", crd_type.plural, crd_type.group) {
                        return Err(invalid(
                            rt,
                            &key.1,
                            "metadata.name",
                            "Invalid value: must be spec.names.plural+\".\"+spec.group",
                        ));
                    }
                    obj["status"] = crd_status(&obj, &self.clock.stamp());
                }
                let existed = st.get_obj(rt, &key).is_some();
                (if existed { "MODIFIED" } else { "ADDED" }, obj)
            }
            None => (
                "DELETED",
                st.get_obj(rt, &key)
                    .cloned()
                    .ok_or_else(|| ApiError::not_found(&rt.qualified(), &key.1))?,
            ),
        };
        if dry_run {
            return Ok(obj);
        }
        st.rv = next_rv;
        obj["metadata"]["resourceVersion"] = json!(next_rv.to_string());
        let map = st.objects.entry(tkey.clone()).or_default();
        if kind == "DELETED" {
            map.remove(&key);
        } else {
            map.insert(key.clone(), obj.clone());
        }
        let event = Arc::new(WatchEvent {
            rv: next_rv,
            group: tkey.0,
            plural: tkey.1,
            namespace: (!key.0.is_empty()).then(|| key.0.clone()),
            kind,
            object: Arc::new(obj.clone()),
        });
        st.log.push_back(event.clone());
        while st.log.len() > self.window {
            if let Some(old) = st.log.pop_front() {
                st.floor = old.rv;
            }
        }
        let _ = self.events.send(event);
        if rt.plural == "customresourcedefinitions" && rt.group == "apiextensions.k8s.io" {
            self.refresh_types(st, (kind == "DELETED").then_some(&obj));
        }
        Ok(obj)
    }

    /// Recomputes the served kinds after a CRD changed; a deleted CRD takes its objects along.
    fn refresh_types(&self, st: &mut State, deleted_crd: Option<&Value>) {
        let mut types = builtin_types();
        if let Some(crds) = st.objects.get(&(
            "apiextensions.k8s.io".to_string(),
            "customresourcedefinitions".to_string(),
        )) {
            types.extend(crds.values().filter_map(ResourceType::from_crd));
        }
        st.types = types;
        if let Some(rt) = deleted_crd.and_then(ResourceType::from_crd) {
            let keys: Vec<ObjKey> = st
                .objects
                .get(&(rt.group.clone(), rt.plural.clone()))
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default();
            for k in keys {
                let _ = self.commit(st, &rt, k, None, false);
            }
        }
    }

    /// Starts a watch: the events after `from` (or synthetic ADDED events for everything when
    /// `from` is None), and a receiver for what follows.
    pub fn watch_from(
        &self,
        rt: &ResourceType,
        sel: &Selection,
        from: Option<u64>,
    ) -> Result<WatchStart, ApiError> {
        let st = self.lock();
        let receiver = self.events.subscribe();
        let epoch = self.watch_epoch.subscribe();
        let backlog: Vec<Arc<WatchEvent>> = match from {
            None => st
                .objects
                .get(&(rt.group.clone(), rt.plural.clone()))
                .into_iter()
                .flatten()
                .filter(|(_, o)| sel.matches(o))
                .map(|((ns, _), o)| {
                    Arc::new(WatchEvent {
                        rv: st.rv,
                        group: rt.group.clone(),
                        plural: rt.plural.clone(),
                        namespace: (!ns.is_empty()).then(|| ns.clone()),
                        kind: "ADDED",
                        object: Arc::new(o.clone()),
                    })
                })
                .collect(),
            Some(rv) if rv < st.floor => {
                return Err(ApiError::gone(format!(
                    "too old resource version: {rv} ({})",
                    st.floor
                )));
            }
            Some(rv) if rv > st.rv => return Err(ApiError::too_large(rv, st.rv)),
            Some(rv) => st
                .log
                .iter()
                .filter(|e| {
                    e.rv > rv
                        && e.group == rt.group
                        && e.plural == rt.plural
                        && sel.matches(&e.object)
                })
                .cloned()
                .collect(),
        };
        Ok(WatchStart {
            backlog,
            receiver,
            epoch,
            start_rv: from.unwrap_or(st.rv),
        })
    }

    /// The faults in force.
    pub fn faults(&self) -> crate::faults::Faults {
        self.faults.lock().expect("faults lock").clone()
    }

    /// Switches faults on or off.
    pub fn set_faults(&self, faults: crate::faults::Faults) {
        *self.faults.lock().expect("faults lock") = faults;
    }

    /// How many requests fault injection has answered 429 so far.
    pub fn throttled(&self) -> u64 {
        self.throttled.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub(crate) fn count_throttled(&self) {
        self.throttled
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Fault injection: ends every open watch; clients resume from their resource version.
    pub fn drop_watches(&self) {
        self.watch_epoch.send_modify(|e| *e += 1);
    }

    /// Fault injection: the API server comes back on an etcd restored from an older backup —
    /// every object's resource version is handed out again from 1, lower than what clients
    /// hold, and open watches end. A client resuming from its version is told it is too large
    /// (504, `ResourceVersionTooLarge`) and must list again.
    pub fn reset_resource_versions(&self) {
        let mut st = self.lock();
        let mut rv = 0u64;
        for objects in st.objects.values_mut() {
            for obj in objects.values_mut() {
                rv += 1;
                obj["metadata"]["resourceVersion"] = json!(rv.to_string());
            }
        }
        st.rv = rv;
        st.floor = 0;
        st.log.clear();
        drop(st);
        self.watch_epoch.send_modify(|e| *e += 1);
    }

    /// Fault injection: ends every open watch and makes every resource version handed out so
    /// far too old, so clients must relist (a 410 Gone storm).
    pub fn expire_watches(&self) {
        let mut st = self.lock();
        st.rv += 1;
        st.floor = st.rv;
        st.log.clear();
        drop(st);
        self.watch_epoch.send_modify(|e| *e += 1);
    }
}

/// The opening of a watch stream.
pub struct WatchStart {
    pub backlog: Vec<Arc<WatchEvent>>,
    pub receiver: broadcast::Receiver<Arc<WatchEvent>>,
    /// Changes when the cluster ends all watches.
    pub epoch: watch::Receiver<u64>,
    pub start_rv: u64,
}

impl State {
    fn get_obj(&self, rt: &ResourceType, key: &ObjKey) -> Option<&Value> {
        self.objects
            .get(&(rt.group.clone(), rt.plural.clone()))?
            .get(key)
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

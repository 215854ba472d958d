//! The write verbs — create, update, merge patch, server-side apply, delete — with the API
//! server's rules (names, resource-version preconditions, generation, managedFields,
//! dry-run), and the commit that hands every change to the watches.

use super::*;
use crate::fields::{self, ApplyRequest};

impl Cluster {
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
        // RBAC objects are named by path segments (`system:discovery`); the rest are DNS
        // subdomains (`ValidatePathSegmentName` / `NameIsDNSSubdomain` in apimachinery).
        let rbac = rt.group == "rbac.authorization.k8s.io";
        if rbac && !is_path_segment(&name) {
            return Err(invalid(rt, &name, "metadata.name",
                &format!("Invalid value: {name:?}: may not be '.' or '..' and may not contain '/' or '%'")));
        }
        if !rbac && !is_dns_subdomain(&name) {
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
        self.delete_if(rt, ns, name, dry_run, &Preconditions::default())
    }

    /// [`Cluster::delete`] with DeleteOptions' preconditions: a uid or resourceVersion that
    /// does not match is a 409, worded as the API server's
    /// (`staging/src/k8s.io/apiserver/pkg/storage/interfaces.go`, `Preconditions.Check`).
    pub fn delete_if(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        name: &str,
        dry_run: bool,
        pre: &Preconditions,
    ) -> Result<Value, ApiError> {
        let mut st = self.lock();
        let key = (ns.unwrap_or("").to_string(), name.to_string());
        let old = st
            .get_obj(rt, &key)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&rt.qualified(), name))?;
        let failed = |what: &str, want: &str, have: &str| {
            ApiError::new(
                409,
                "Conflict",
                format!(
                    "Operation cannot be fulfilled on {} \"{name}\": Precondition failed: {what} in precondition: {want}, {what} in object meta: {have}",
                    rt.qualified()
                ),
            )
        };
        if let Some(uid) = &pre.uid {
            let have = meta_str(&old, "uid").unwrap_or_default();
            if uid != have {
                return Err(failed("UID", uid, have));
            }
        }
        if let Some(rv) = &pre.resource_version {
            let have = meta_str(&old, "resourceVersion").unwrap_or_default();
            if rv != have {
                return Err(failed("ResourceVersion", rv, have));
            }
        }
        if dry_run {
            return Ok(old);
        }
        let deleted = self.commit(&mut st, rt, key, None, false)?;
        let mut doomed: Vec<String> = vec![meta_str(&old, "uid").unwrap_or_default().to_string()];
        let is_namespace = rt.group.is_empty() && rt.plural == "namespaces";
        if !is_namespace && self.gc_delay().is_some() {
            // Background propagation: the garbage collector removes the dependents later.
            st.gone.insert(doomed.remove(0), self.clock.now());
            return Ok(deleted);
        }
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
        let shared = Arc::new(obj);
        let map = st.objects.entry(tkey.clone()).or_default();
        if kind == "DELETED" {
            map.remove(&key);
        } else {
            map.insert(key.clone(), shared.clone());
        }
        let event = Arc::new(WatchEvent {
            rv: next_rv,
            group: tkey.0,
            plural: tkey.1,
            namespace: (!key.0.is_empty()).then(|| key.0.clone()),
            kind,
            object: shared.clone(),
        });
        st.log.push_back(event.clone());
        while st.log.len() > self.window {
            if let Some(old) = st.log.pop_front() {
                st.floor = old.rv;
            }
        }
        let _ = self.events.send(event);
        if rt.plural == "customresourcedefinitions" && rt.group == "apiextensions.k8s.io" {
            self.refresh_types(st, (kind == "DELETED").then_some(&shared));
        }
        Ok(Value::clone(&shared))
    }

    /// Recomputes the served kinds after a CRD changed; a deleted CRD takes its objects along.
    fn refresh_types(&self, st: &mut State, deleted_crd: Option<&Value>) {
        let mut types = builtin_types();
        if let Some(crds) = st.objects.get(&(
            "apiextensions.k8s.io".to_string(),
            "customresourcedefinitions".to_string(),
        )) {
            types.extend(crds.values().filter_map(|c| ResourceType::from_crd(c)));
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
}

/// `DeleteOptions.preconditions`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Preconditions {
    pub uid: Option<String>,
    pub resource_version: Option<String>,
}

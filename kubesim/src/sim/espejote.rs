//! Espejote's ManagedResource controller (vshn/espejote): each ManagedResource renders its
//! Jsonnet template over its context and server-side applies what the template returns, as
//! its ServiceAccount, with the field manager `managed-resource:<name>`; `status.status`
//! tells how its last reconcile went.
//!
//! Followed from upstream (`controllers/managedresource_controller_manager.go`,
//! `controllers/managedresource_controller.go`, `controllers/applygroup/applygroup.go`):
//!
//! - the configuration is checked first: two triggers or two contexts of one name, a
//!   context without a resource, a trigger that neither watches nor ticks, or one that
//!   watches a context that does not exist → `DependencyConfigurationError`;
//! - the ServiceAccount (`spec.serviceAccountRef.name`, default `default`) must exist, or the
//!   token request fails → `ServiceAccountError`;
//! - the controller's caches list and watch every context and watched resource as that
//!   ServiceAccount; while one is not allowed the caches do not sync → `WaitingForCacheSync`
//!   (no event), and once `spec.cacheSyncTimeout` (controller-runtime's default, 2 minutes)
//!   has passed since the controller started → `ControllerStartError`;
//! - the template is evaluated with the trigger and the context as external variables
//!   (`espejote.libsonnet` reads them) → `TemplateError` when it fails, and
//!   `TemplateReturnError` when it returns something other than an object, a list of them
//!   (nested, nulls dropped) or null;
//! - each object is applied (server-side apply as the ServiceAccount, the field manager and
//!   `force` from the object's own apply options, then `spec.applyOptions`, then the
//!   defaults), or deleted when marked so → `ApplyError` on a refusal or a conflict;
//! - otherwise `Ready`. Each error is a Warning event on the ManagedResource whose reason is
//!   the status and whose message reads `Reconcile error: <status>: <why>`.
//!
//! kubesim renders every ManagedResource in full on each pass (Espejote renders once per
//! trigger; a template that handles a full reconcile gives the same objects) and writes
//! nothing when what it would apply is already there, as a real API server keeps a no-op
//! apply from changing the object.

use std::collections::{BTreeSet, HashMap};

use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Value};

use super::{s, Api, World};
use crate::auth::attributes::Attributes;
use crate::auth::Identity;
use crate::resources::ResourceType;
use crate::selectors::LabelSelector;
use crate::store::WriteOpts;

pub(crate) const GROUP: &str = "espejote.io";
pub(crate) const PLURAL: &str = "managedresources";
/// Who writes `status` (the controller's own client).
const MANAGER: &str = "espejote";
/// The event recorder's name (`cmd/controller.go`).
const COMPONENT: &str = "managed-resource-controller";
const LIB: &str = include_str!("espejote/espejote.libsonnet");
const TRIGGER_VAR: &str = "__internal_use_espejote_lib_trigger";
const CONTEXT_VAR: &str = "__internal_use_espejote_lib_context";
const APPLY_OPTIONS: &str = "__internal_use_espejote_lib_apply_options";
const DELETION: &str = "__internal_use_espejote_lib_deletion";

/// What the controller remembers across passes: when each ManagedResource's controller
/// started (by uid and generation: a changed spec starts it again), for
/// `spec.cacheSyncTimeout`; and the last error it told by an event (Espejote records one per
/// failed reconcile; kubesim, which reconciles every second, one per different error).
#[derive(Debug, Default)]
pub struct Started {
    started: std::sync::Mutex<HashMap<String, DateTime<Utc>>>,
    told: std::sync::Mutex<HashMap<String, String>>,
}

/// How one reconcile ended: `Ready`, or a status with why.
struct Failure {
    status: &'static str,
    why: String,
}

fn fail(status: &'static str, why: impl Into<String>) -> Failure {
    Failure {
        status,
        why: why.into(),
    }
}

pub(super) fn reconcile(api: &Api<'_>, world: &World) {
    if !api.serves(GROUP, PLURAL) {
        return;
    }
    for mr in api.list(GROUP, PLURAL) {
        let outcome = run(api, world, &mr);
        record(api, world, &mr, outcome);
    }
}

/// Writes the status (when it changed) and the Warning event of a failure.
fn record(api: &Api<'_>, world: &World, mr: &Value, outcome: Result<(), Failure>) {
    let (ns, name) = (
        s(mr, "/metadata/namespace"),
        s(mr, "/metadata/name").unwrap_or_default(),
    );
    let status = match &outcome {
        Ok(()) => "Ready",
        Err(f) => f.status,
    };
    if s(mr, "/status/status") != Some(status) {
        api.patch_status(
            GROUP,
            PLURAL,
            ns,
            name,
            &json!({"status": {"status": status}}),
            MANAGER,
        );
    }
    let uid = s(mr, "/metadata/uid").unwrap_or_default().to_string();
    let mut told = world.espejote.told.lock().expect("espejote lock");
    let Err(f) = &outcome else {
        told.remove(&uid);
        return;
    };
    // Waiting for the caches is transient: no event (`EspejoteError.Transient`).
    let message = format!("Reconcile error: {}: {}", f.status, f.why);
    if f.status != "WaitingForCacheSync" && told.get(&uid) != Some(&message) {
        api.event(
            mr,
            "ManagedResource",
            "Warning",
            f.status,
            &message,
            COMPONENT,
        );
        told.insert(uid, message);
    }
}

/// One ManagedResource's reconcile.
fn run(api: &Api<'_>, world: &World, mr: &Value) -> Result<(), Failure> {
    let ns = s(mr, "/metadata/namespace").unwrap_or("default");
    let contexts = mr
        .pointer("/spec/context")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let triggers = mr
        .pointer("/spec/triggers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    check_configuration(&contexts, &triggers)?;
    let account = s(mr, "/spec/serviceAccountRef/name").unwrap_or("default");
    let Some(sa) = api.get("", "serviceaccounts", Some(ns), account) else {
        return Err(fail(
            "ServiceAccountError",
            format!("token request for \"system:serviceaccount:{ns}:{account}\" failed: serviceaccounts \"{account}\" not found"),
        ));
    };
    let who = Identity::service_account(ns, account, s(&sa, "/metadata/uid").unwrap_or_default());
    // The caches: every context and every watched resource, listed and watched as the
    // ServiceAccount.
    let watched: Vec<&Value> = contexts
        .iter()
        .filter_map(|c| c.get("resource"))
        .chain(triggers.iter().filter_map(|t| t.get("watchResource")))
        .collect();
    let mut lists = Vec::new();
    for resource in &watched {
        let Some(rt) = resource_type(api, resource) else {
            return Err(fail(
                "DependencyConfigurationError",
                format!(
                    "failed to get REST mapping: no matches for kind \"{}\" in version \"{}\"",
                    s(resource, "/kind").unwrap_or_default(),
                    s(resource, "/apiVersion").unwrap_or_default()
                ),
            ));
        };
        let scope = watch_namespace(resource, ns, &rt);
        lists.push((rt, scope));
    }
    let synced = lists.iter().all(|(rt, scope)| {
        ["list", "watch"]
            .iter()
            .all(|v| allowed(api, &who, v, rt, scope.unwrap_or(""), ""))
    });
    if !synced {
        let key = format!(
            "{}/{}",
            s(mr, "/metadata/uid").unwrap_or_default(),
            mr.pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(1)
        );
        let started = *world
            .espejote
            .started
            .lock()
            .expect("espejote lock")
            .entry(key)
            .or_insert(api.now);
        let timeout = s(mr, "/spec/cacheSyncTimeout")
            .and_then(go_duration)
            .unwrap_or_else(|| Duration::minutes(2));
        if api.now - started < timeout {
            return Err(fail("WaitingForCacheSync", "waiting for caches to sync"));
        }
        return Err(fail(
            "ControllerStartError",
            format!("failed to wait for managedresource/{ns}/{} caches to sync kind source: *unstructured.Unstructured: timed out waiting for cache to be synced for Kind *unstructured.Unstructured", s(mr, "/metadata/name").unwrap_or_default()),
        ));
    }
    // The context, as the caches hold it.
    let mut context = serde_json::Map::new();
    for (c, (rt, scope)) in contexts.iter().zip(&lists) {
        let name = s(c, "/name").unwrap_or_default().to_string();
        context.insert(
            name,
            Value::Array(selected(api, &c["resource"], rt, *scope)),
        );
    }
    let template = s(mr, "/spec/template").unwrap_or_default();
    let rendered = render(template, &json!({}), &Value::Object(context))
        .map_err(|e| fail("TemplateError", format!("failed to render template: {e}")))?;
    let objects = flatten(rendered).map_err(|e| fail("TemplateReturnError", e))?;
    let options = mr
        .pointer("/spec/applyOptions")
        .cloned()
        .unwrap_or(json!({}));
    let default_manager = format!(
        "managed-resource:{}",
        s(mr, "/metadata/name").unwrap_or_default()
    );
    let mut errors = Vec::new();
    for obj in objects {
        if let Err(e) = apply(api, &who, ns, obj, &options, &default_manager) {
            errors.push(e);
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(fail(
            "ApplyError",
            format!("failed to apply objects: {}", errors.join("; ")),
        ))
    }
}

/// The configuration checks `ensureInstanceControllerFor` makes.
fn check_configuration(contexts: &[Value], triggers: &[Value]) -> Result<(), Failure> {
    let mut names = BTreeSet::new();
    for c in contexts {
        let name = s(c, "/name").unwrap_or_default();
        if !names.insert(name) {
            return Err(fail(
                "DependencyConfigurationError",
                format!("duplicate context definition with name {name:?}"),
            ));
        }
        if s(c, "/resource/kind").unwrap_or_default().is_empty() {
            return Err(fail(
                "DependencyConfigurationError",
                format!("context {name:?} has no resource definition"),
            ));
        }
    }
    let mut seen = BTreeSet::new();
    for t in triggers {
        let name = s(t, "/name").unwrap_or_default();
        if !seen.insert(name) {
            return Err(fail(
                "DependencyConfigurationError",
                format!("duplicate trigger definition with name {name:?}"),
            ));
        }
        let watches = s(t, "/watchResource/kind").is_some_and(|k| !k.is_empty());
        let ticks = s(t, "/interval").is_some_and(|i| !i.is_empty());
        match s(t, "/watchContextResource/name").filter(|n| !n.is_empty()) {
            Some(context) if !names.contains(context) => {
                return Err(fail(
                    "DependencyConfigurationError",
                    format!("trigger {name:?} watches context {context:?}, which is not defined"),
                ));
            }
            Some(_) => {}
            None if !watches && !ticks => {
                return Err(fail(
                    "DependencyConfigurationError",
                    format!("trigger {name:?} has no watch resource or interval"),
                ));
            }
            None => {}
        }
    }
    Ok(())
}

/// The served kind an `apiVersion`/`kind` names.
fn resource_type(api: &Api<'_>, resource: &Value) -> Option<ResourceType> {
    let api_version = s(resource, "/apiVersion").unwrap_or_default();
    let kind = s(resource, "/kind")?;
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    api.cluster
        .types()
        .into_iter()
        .find(|t| t.group == group && t.kind == kind)
}

/// Where a context or watch looks: unset is the ManagedResource's namespace, `""` every
/// namespace (None), else that one; cluster-scoped kinds everywhere.
fn watch_namespace<'v>(resource: &'v Value, own: &'v str, rt: &ResourceType) -> Option<&'v str> {
    if !rt.namespaced {
        return None;
    }
    match resource.get("namespace").and_then(Value::as_str) {
        None => Some(own),
        Some("") => None,
        Some(ns) => Some(ns),
    }
}

/// Whether `who` may `verb` the kind in `namespace` ("" for every namespace).
fn allowed(
    api: &Api<'_>,
    who: &Identity,
    verb: &str,
    rt: &ResourceType,
    namespace: &str,
    name: &str,
) -> bool {
    let a = Attributes {
        verb: verb.into(),
        resource_request: true,
        group: rt.group.clone(),
        resource: rt.plural.clone(),
        namespace: namespace.into(),
        name: name.into(),
        ..Attributes::default()
    };
    crate::auth::rbac::decide(api.cluster, who, &a).allowed
}

/// The objects a context holds: its kind where it looks, narrowed by its label selector and
/// names, without managed fields unless asked.
fn selected(api: &Api<'_>, resource: &Value, rt: &ResourceType, scope: Option<&str>) -> Vec<Value> {
    let selector = resource
        .get("labelSelector")
        .map(LabelSelector::from_object)
        .transpose()
        .ok()
        .flatten();
    let names = |key: &str| -> Vec<&str> {
        resource
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect()
    };
    let (only, ignore) = (names("matchNames"), names("ignoreNames"));
    let name = s(resource, "/name").filter(|n| !n.is_empty());
    let strip = resource
        .get("stripManagedFields")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    api.list(&rt.group, &rt.plural)
        .into_iter()
        .filter(|o| scope.is_none_or(|ns| s(o, "/metadata/namespace") == Some(ns)))
        .filter(|o| selector.as_ref().is_none_or(|sel| sel.matches(o)))
        .filter(|o| {
            let n = s(o, "/metadata/name").unwrap_or_default();
            name.is_none_or(|want| want == n)
                && (only.is_empty() || only.contains(&n))
                && !ignore.contains(&n)
        })
        .map(|mut o| {
            if strip {
                if let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.remove("managedFields");
                }
            }
            o
        })
        .collect()
}

/// Evaluates a template with the trigger and the context, as JSON.
fn render(template: &str, trigger: &Value, context: &Value) -> Result<Value, String> {
    use rsjsonnet_lang::program::{
        Callbacks, ImportError, NativeError, Program, Thunk, Value as J,
    };

    struct Lib;
    impl<'p> Callbacks<'p> for Lib {
        fn import(
            &mut self,
            program: &mut Program<'p>,
            _: rsjsonnet_lang::span::SpanId,
            path: &str,
        ) -> Result<Thunk<'p>, ImportError> {
            if path != "espejote.libsonnet" {
                return Err(ImportError);
            }
            let (ctx, _) = program.span_manager_mut().insert_source_context(LIB.len());
            program
                .load_source(ctx, LIB.as_bytes(), true, path)
                .map_err(|_| ImportError)
        }
        fn import_str(
            &mut self,
            _: &mut Program<'p>,
            _: rsjsonnet_lang::span::SpanId,
            _: &str,
        ) -> Result<String, ImportError> {
            Err(ImportError)
        }
        fn import_bin(
            &mut self,
            _: &mut Program<'p>,
            _: rsjsonnet_lang::span::SpanId,
            _: &str,
        ) -> Result<Vec<u8>, ImportError> {
            Err(ImportError)
        }
        fn trace(
            &mut self,
            _: &mut Program<'p>,
            _: &str,
            _: &[rsjsonnet_lang::program::EvalStackTraceItem],
        ) {
        }
        fn native_call(
            &mut self,
            _: &mut Program<'p>,
            _: rsjsonnet_lang::interner::InternedStr<'p>,
            _: &[J<'p>],
        ) -> Result<J<'p>, NativeError> {
            Err(NativeError)
        }
    }

    let arena = rsjsonnet_lang::arena::Arena::new();
    let mut program = Program::new(&arena);
    for (name, value) in [(TRIGGER_VAR, trigger), (CONTEXT_VAR, context)] {
        // JSON is Jsonnet.
        let text = value.to_string();
        let (ctx, _) = program.span_manager_mut().insert_source_context(text.len());
        let thunk = program
            .load_source(ctx, text.as_bytes(), false, name)
            .map_err(|e| format!("{e:?}"))?;
        let name = program.intern_str(name);
        program.add_ext_var(name, &thunk);
    }
    let (ctx, _) = program
        .span_manager_mut()
        .insert_source_context(template.len());
    let thunk = program
        .load_source(ctx, template.as_bytes(), true, "template.jsonnet")
        .map_err(|e| format!("STATIC ERROR: {}", words(&format!("{e:?}"))))?;
    let value = program.eval_value(&thunk, &mut Lib).map_err(|e| {
        use rsjsonnet_lang::program::EvalErrorKind;
        // go-jsonnet's words (what Espejote's evaluator says) for the common mistakes.
        match e.kind {
            EvalErrorKind::UnknownObjectField { field_name, .. } => {
                format!("RUNTIME ERROR: field does not exist: {field_name}")
            }
            kind => format!("RUNTIME ERROR: {}", words(&format!("{kind:?}"))),
        }
    })?;
    let text = program
        .manifest_json(&value, false)
        .map_err(|e| format!("RUNTIME ERROR: {}", words(&format!("{:?}", e.kind))))?;
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

/// An evaluator's error in a few words: its kind and the names it carries, without the
/// evaluator's source positions.
fn words(debug: &str) -> String {
    debug
        .split(['{', '}', ','])
        .map(str::trim)
        .filter(|p| !p.is_empty() && !p.starts_with("span") && !p.contains("SpanId"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a template returned, as the objects to apply: an object, a list (nested lists
/// flattened, nulls dropped) or null.
fn flatten(v: Value) -> Result<Vec<Value>, String> {
    match v {
        Value::Null => Ok(Vec::new()),
        Value::Object(_) => Ok(vec![v]),
        Value::Array(items) => {
            let mut out = Vec::new();
            for i in items {
                out.extend(flatten(i)?);
            }
            Ok(out)
        }
        other => Err(format!(
            "failed to unmarshal template output: the template returned {}, not an object, a list of objects or null",
            match other {
                Value::Bool(_) => "a boolean",
                Value::Number(_) => "a number",
                _ => "a string",
            }
        )),
    }
}

/// Applies (or deletes) one rendered object as the ServiceAccount.
fn apply(
    api: &Api<'_>,
    who: &Identity,
    own: &str,
    mut obj: Value,
    spec: &Value,
    default_manager: &str,
) -> Result<(), String> {
    if !obj.get("metadata").is_some_and(Value::is_object) {
        return Err("Object 'metadata' is missing".into());
    }
    let per_object = obj
        .as_object_mut()
        .and_then(|o| o.remove(APPLY_OPTIONS))
        .unwrap_or(Value::Null);
    let deletion = obj.as_object_mut().and_then(|o| o.remove(DELETION));
    let pick = |key: &str| {
        per_object
            .get(key)
            .filter(|v| !v.is_null())
            .or_else(|| spec.get(key))
    };
    let mut manager = pick("fieldManager")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
        .unwrap_or(default_manager)
        .to_string();
    if let Some(suffix) = per_object.get("fieldManagerSuffix").and_then(Value::as_str) {
        manager.push_str(suffix);
    }
    let force = pick("force").and_then(Value::as_bool).unwrap_or(false);
    let Some(rt) = resource_type(api, &obj) else {
        return Err(format!(
            "no matches for kind \"{}\" in version \"{}\"",
            s(&obj, "/kind").unwrap_or_default(),
            s(&obj, "/apiVersion").unwrap_or_default()
        ));
    };
    let name = s(&obj, "/metadata/name").unwrap_or_default().to_string();
    let ns = if rt.namespaced {
        let ns = s(&obj, "/metadata/namespace").unwrap_or(own).to_string();
        obj["metadata"]["namespace"] = json!(ns);
        Some(ns)
    } else {
        None
    };
    let verb = if deletion.is_some() {
        "delete"
    } else {
        "patch"
    };
    if !allowed(api, who, verb, &rt, ns.as_deref().unwrap_or(""), &name) {
        let place = ns
            .as_deref()
            .map(|n| format!(" in the namespace \"{n}\""))
            .unwrap_or_default();
        let group = if rt.group.is_empty() {
            String::new()
        } else {
            format!(" in API group \"{}\"", rt.group)
        };
        return Err(format!(
            "{}{} \"{name}\" is forbidden: User \"{}\" cannot {verb} resource \"{}\"{group}{place}",
            rt.plural,
            if rt.group.is_empty() {
                String::new()
            } else {
                format!(".{}", rt.group)
            },
            who.user,
            rt.plural
        ));
    }
    if deletion.is_some() {
        api.delete(&rt.group, &rt.plural, ns.as_deref(), &name);
        return Ok(());
    }
    let version = s(&obj, "/apiVersion")
        .and_then(|v| v.rsplit('/').next())
        .unwrap_or("v1")
        .to_string();
    let opts = |dry_run| WriteOpts {
        manager: manager.clone(),
        dry_run,
        status: false,
        version: version.clone(),
    };
    let before = api.cluster.get(&rt, ns.as_deref(), &name).ok();
    let tried = api
        .cluster
        .apply(&rt, ns.as_deref(), &name, obj.clone(), force, &opts(true))
        .map_err(|e| e.message.clone())?;
    if before.as_ref().is_some_and(|b| same(b, &tried)) {
        return Ok(());
    }
    api.cluster
        .apply(&rt, ns.as_deref(), &name, obj, force, &opts(false))
        .map(|_| ())
        .map_err(|e| e.message)
}

/// Whether an apply would change nothing but the times of its managed fields.
fn same(before: &Value, after: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(fields) = v
            .pointer_mut("/metadata/managedFields")
            .and_then(Value::as_array_mut)
        {
            for f in fields {
                if let Some(f) = f.as_object_mut() {
                    f.remove("time");
                }
            }
        }
        v
    };
    strip(before) == strip(after)
}

/// A Go duration (`90s`, `2m`, `1h30m`, `500ms`).
fn go_duration(text: &str) -> Option<Duration> {
    let re = regex::Regex::new(r"(\d+(?:\.\d+)?)(ms|h|m|s)").expect("a valid pattern");
    let mut total = Duration::zero();
    let mut covered = 0;
    for c in re.captures_iter(text) {
        let n: f64 = c[1].parse().ok()?;
        let ms = n * match &c[2] {
            "h" => 3_600_000.0,
            "m" => 60_000.0,
            "s" => 1000.0,
            _ => 1.0,
        };
        total += Duration::milliseconds(ms as i64);
        covered += c[0].len();
    }
    (covered == text.len() && covered > 0).then_some(total)
}

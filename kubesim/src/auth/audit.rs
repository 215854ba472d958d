//! The cluster's audit log, as an API server with an audit policy of "every write at the
//! `Metadata` level" keeps it: one `audit.k8s.io/v1` Event per create, update, patch, delete
//! and deletecollection, refused or not, with who sent it (`user`), who it was sent as
//! (`impersonatedUser`, when the request impersonated someone), the object and the response
//! code. Reads are not recorded (as such policies leave them out: watches would drown the
//! rest). Kept only while authorization is on, the last [`KEPT`] per cluster, and served at
//! `GET /kubesim/audit` as an EventList.
//!
//! Upstream: the Event type in `staging/src/k8s.io/apiserver/pkg/apis/audit/v1/types.go`;
//! `WithAudit` (`staging/src/k8s.io/apiserver/pkg/endpoints/filters/audit.go`) makes the event
//! with the authenticated user before impersonation, and `WithImpersonation`
//! (`…/filters/impersonation.go`) adds `impersonatedUser` once the impersonation is allowed;
//! a refused impersonation is recorded without it.

use std::collections::VecDeque;
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::{Attributes, Identity};

/// How many events a cluster keeps.
pub const KEPT: usize = 1024;

/// One recorded request.
#[derive(Debug, Clone)]
pub struct Event {
    pub id: u64,
    pub at: DateTime<Utc>,
    pub uri: String,
    pub attributes: Attributes,
    pub user: Identity,
    pub impersonated: Option<Identity>,
    pub code: u16,
}

impl Event {
    /// As `audit.k8s.io/v1` writes it.
    pub fn to_json(&self) -> Value {
        let user = |i: &Identity| {
            let mut u = json!({"username": i.user, "groups": i.groups});
            if !i.uid.is_empty() {
                u["uid"] = json!(i.uid);
            }
            u
        };
        let a = &self.attributes;
        let mut object = json!({"resource": a.resource});
        for (key, value) in [
            ("namespace", &a.namespace),
            ("name", &a.name),
            ("apiGroup", &a.group),
            ("subresource", &a.subresource),
        ] {
            if !value.is_empty() {
                object[key] = json!(value);
            }
        }
        let at = self.at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
        let mut e = json!({
            "kind": "Event",
            "apiVersion": "audit.k8s.io/v1",
            "level": "Metadata",
            "auditID": format!("kubesim-{:016x}", self.id),
            "stage": "ResponseComplete",
            "requestURI": self.uri,
            "verb": a.verb,
            "user": user(&self.user),
            "objectRef": object,
            "responseStatus": {"metadata": {}, "code": self.code},
            "requestReceivedTimestamp": at,
            "stageTimestamp": at,
        });
        if let Some(i) = &self.impersonated {
            e["impersonatedUser"] = user(i);
        }
        e
    }
}

/// Whether the policy records requests with this verb.
pub fn recorded(a: &Attributes) -> bool {
    a.resource_request
        && matches!(
            a.verb.as_str(),
            "create" | "update" | "patch" | "delete" | "deletecollection"
        )
}

/// The last [`KEPT`] events of a cluster.
#[derive(Debug, Default)]
pub struct Log {
    events: Mutex<(u64, VecDeque<Event>)>,
}

impl Log {
    pub fn record(&self, mut e: Event) {
        let mut guard = self.events.lock().expect("audit log lock");
        let (next, events) = &mut *guard;
        *next += 1;
        e.id = *next;
        events.push_back(e);
        while events.len() > KEPT {
            events.pop_front();
        }
    }

    pub fn events(&self) -> Vec<Event> {
        self.events
            .lock()
            .expect("audit log lock")
            .1
            .iter()
            .cloned()
            .collect()
    }

    /// The log as an `audit.k8s.io/v1` EventList.
    pub fn to_json(&self) -> Value {
        json!({
            "kind": "EventList",
            "apiVersion": "audit.k8s.io/v1",
            "metadata": {},
            "items": self.events().iter().map(Event::to_json).collect::<Vec<_>>(),
        })
    }
}

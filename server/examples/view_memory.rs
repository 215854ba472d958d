//! Measures the heap cost of Lookout's cached views against the objects they come from.
//!
//! `cargo run --release -p lookout-server --example view_memory [COUNT]` prints a table of
//! bytes per cached Ingress and Certificate (target: ≤ 1 KB on average), measured with a
//! counting allocator over COUNT (default 10,000) realistic objects of each kind.

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use lookout_app::model::certificate::CertificateView;
use lookout_app::model::data::Key;
use lookout_app::model::interner::Interner;
use lookout_app::model::IngressView;
use serde_json::{json, Value};

/// Live heap bytes.
static LIVE: AtomicIsize = AtomicIsize::new(0);

struct Counting;

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

/// An Ingress as the API server returns it: managedFields, last-applied, two hosts.
fn ingress(i: usize) -> Value {
    let host = format!("shop-{i}.tenant-{}.example.com", i % 97);
    let spec = json!({"ingressClassName": "cilium", "rules": [{"host": host, "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {"service": {"name": format!("shop-{i}"), "port": {"number": 80}}}}]}}],
                      "tls": [{"hosts": [host], "secretName": format!("shop-{i}-tls")}]});
    json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": format!("shop-{i}"), "namespace": format!("tenant-{}", i % 97), "uid": format!("00000000-0000-4000-8000-{i:012x}"),
            "resourceVersion": (1000 + i).to_string(), "generation": 1, "creationTimestamp": "2026-01-01T00:00:00Z",
            "annotations": {"cert-manager.io/cluster-issuer": "letsencrypt-prod", "acme.cert-manager.io/http01-edit-in-place": "true",
                "kubectl.kubernetes.io/last-applied-configuration": json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "spec": spec}).to_string()},
            "managedFields": [{"manager": "argocd-controller", "operation": "Apply", "apiVersion": "networking.k8s.io/v1", "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:annotations": {"f:cert-manager.io/cluster-issuer": {}, "f:acme.cert-manager.io/http01-edit-in-place": {}}}, "f:spec": {"f:ingressClassName": {}, "f:rules": {}, "f:tls": {}}}}]},
        "spec": spec,
        "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.10"}]}}})
}

fn certificate(i: usize) -> Value {
    let host = format!("shop-{i}.tenant-{}.example.com", i % 97);
    json!({"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
        "metadata": {"name": format!("shop-{i}-tls"), "namespace": format!("tenant-{}", i % 97), "uid": format!("00000000-0000-4000-9000-{i:012x}"),
            "resourceVersion": (5000 + i).to_string(), "generation": 1, "creationTimestamp": "2026-01-01T00:00:00Z",
            "annotations": {"acme.cert-manager.io/http01-override-ingress-name": format!("shop-{i}"), "cert-manager.io/issue-temporary-certificate": "true"},
            "ownerReferences": [{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": format!("shop-{i}"), "uid": format!("00000000-0000-4000-8000-{i:012x}"), "controller": true, "blockOwnerDeletion": true}],
            "managedFields": [{"manager": "cert-manager-certificates-issuing", "operation": "Update", "apiVersion": "cert-manager.io/v1", "subresource": "status", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:status": {"f:conditions": {}, "f:notAfter": {}, "f:notBefore": {}, "f:renewalTime": {}, "f:revision": {}}}}]},
        "spec": {"secretName": format!("shop-{i}-tls"), "dnsNames": [host], "issuerRef": {"name": "letsencrypt-prod", "kind": "ClusterIssuer", "group": "cert-manager.io"}, "usages": ["digital signature", "key encipherment"]},
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Ready", "message": "Certificate is up to date and has not expired", "lastTransitionTime": "2026-01-01T00:05:00Z", "observedGeneration": 1}],
            "notBefore": "2026-01-01T00:04:00Z", "notAfter": "2026-04-01T00:04:00Z", "renewalTime": "2026-03-02T00:04:00Z", "revision": 1}})
}

fn request(i: usize) -> Value {
    json!({"apiVersion": "cert-manager.io/v1", "kind": "CertificateRequest",
        "metadata": {"name": format!("shop-{i}-tls-1"), "namespace": format!("tenant-{}", i % 97), "uid": format!("00000000-0000-4000-a000-{i:012x}"),
            "resourceVersion": (9000 + i).to_string(), "generation": 1, "creationTimestamp": "2026-01-01T00:04:00Z",
            "annotations": {"cert-manager.io/certificate-revision": "1", "cert-manager.io/certificate-name": format!("shop-{i}-tls"), "cert-manager.io/private-key-secret-name": format!("shop-{i}-tls-abcde")},
            "ownerReferences": [{"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "name": format!("shop-{i}-tls"), "uid": format!("00000000-0000-4000-9000-{i:012x}"), "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"request": "", "issuerRef": {"name": "letsencrypt-prod", "kind": "ClusterIssuer", "group": "cert-manager.io"}, "usages": ["digital signature", "key encipherment"]},
        "status": {"conditions": [{"type": "Approved", "status": "True", "reason": "cert-manager.io", "message": "Certificate request has been approved by cert-manager.io", "lastTransitionTime": "2026-01-01T00:04:00Z"},
            {"type": "Ready", "status": "True", "reason": "Issued", "message": "Certificate fetched from issuer successfully", "lastTransitionTime": "2026-01-01T00:05:00Z"}]}})
}

fn measure<V>(
    n: usize,
    make: fn(usize) -> Value,
    project: fn(&ObjectMeta, &Value, &mut Interner) -> Option<V>,
) -> (f64, f64) {
    let mut raw_bytes = 0usize;
    let before = live();
    let mut strings = Interner::default();
    let mut map: BTreeMap<Key, Arc<V>> = BTreeMap::new();
    for i in 0..n {
        let obj = make(i);
        raw_bytes += obj.to_string().len();
        let meta: ObjectMeta =
            serde_json::from_value(obj["metadata"].clone()).expect("valid metadata");
        let key = (
            strings.get(meta.namespace.as_deref().unwrap_or_default()),
            strings.get(meta.name.as_deref().unwrap_or_default()),
        );
        if let Some(v) = project(&meta, &obj, &mut strings) {
            map.insert(key, Arc::new(v));
        }
    }
    // As a finished list moves into the live data (`kinds::replace`): rebuilt in bulk.
    let map: BTreeMap<Key, Arc<V>> = map.into_iter().collect();
    strings.prune();
    let cached = (live() - before) as f64 / n as f64;
    assert_eq!(map.len(), n);
    (cached, raw_bytes as f64 / n as f64)
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000);
    let (ing, ing_raw) = measure(n, ingress, |m, d, s| {
        IngressView::project("zrh-prod", m, d, s)
    });
    let (cert, cert_raw) = measure(n, certificate, |m, d, s| {
        CertificateView::project("zrh-prod", m, d, s)
    });
    let (req, req_raw) = measure(n, request, |m, d, s| {
        lookout_app::model::certificate::CertificateRequestView::project(m, d, s)
    });
    println!("| kind | objects | bytes per cached view (heap, incl. map entry) | bytes per object as JSON | target |");
    println!("|---|---:|---:|---:|---:|");
    println!("| Ingress | {n} | {ing:.0} | {ing_raw:.0} | ≤ 1024 |");
    println!("| Certificate | {n} | {cert:.0} | {cert_raw:.0} | ≤ 1024 |");
    println!("| CertificateRequest | {n} | {req:.0} | {req_raw:.0} | |");
    println!(
        "| average of Ingress and Certificate | {} | {:.0} | {:.0} | ≤ 1024 |",
        2 * n,
        (ing + cert) / 2.0,
        (ing_raw + cert_raw) / 2.0
    );
    println!("\n| struct | bytes (without what it points to) |\n|---|---:|");
    for (name, size) in [
        ("IngressView", std::mem::size_of::<IngressView>()),
        ("CertificateView", std::mem::size_of::<CertificateView>()),
        (
            "CertificateRequestView",
            std::mem::size_of::<lookout_app::model::certificate::CertificateRequestView>(),
        ),
        (
            "Condition",
            std::mem::size_of::<lookout_app::model::object::Condition>(),
        ),
        (
            "Option<DateTime<Utc>>",
            std::mem::size_of::<Option<chrono::DateTime<chrono::Utc>>>(),
        ),
        (
            "Finding",
            std::mem::size_of::<lookout_app::model::Finding>(),
        ),
    ] {
        println!("| {name} | {size} |");
    }
}

//! A scale generator: N Ingresses with issued Certificates (and their last request) per
//! cluster, written straight through the store, for benchmarks.

use serde_json::json;

use crate::store::{Cluster, WriteOpts};

use super::letsencrypt::rfc3339;

/// What [`populate`] created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Populated {
    pub namespaces: usize,
    pub ingresses: usize,
    pub certificates: usize,
}

/// Creates the IngressClass `cilium`, the ready ClusterIssuer `letsencrypt-prod` and
/// `ingresses` Ingresses over `namespaces` namespaces, each with its load-balancer address and
/// a Certificate issued by it, its Secret's metadata and its issued CertificateRequest: a
/// healthy fleet. Needs the cert-manager CRDs.
pub fn populate(cluster: &Cluster, namespaces: usize, ingresses: usize) -> Populated {
    populate_with(cluster, namespaces, ingresses, None)
}

/// As [`populate`], with traffic: each Ingress published on `addresses` (loopback ones, for
/// [`super::edge`]) and each issuance with a real certificate — in the request's
/// `status.certificate` and the Secret's data — so that the listeners serve it.
pub fn populate_served(
    cluster: &Cluster,
    namespaces: usize,
    ingresses: usize,
    addresses: &[&str],
) -> Populated {
    populate_with(cluster, namespaces, ingresses, Some(addresses))
}

fn populate_with(
    cluster: &Cluster,
    namespaces: usize,
    ingresses: usize,
    served_on: Option<&[&str]>,
) -> Populated {
    let rt = |g: &str, p: &str| {
        cluster
            .resolve(g, p)
            .unwrap_or_else(|| panic!("{p} must be served to populate"))
    };
    let (issuer_rt, ns_rt, ing_rt, cert_rt, cr_rt, secret_rt) = (
        rt("cert-manager.io", "clusterissuers"),
        rt("", "namespaces"),
        rt("networking.k8s.io", "ingresses"),
        rt("cert-manager.io", "certificates"),
        rt("cert-manager.io", "certificaterequests"),
        rt("", "secrets"),
    );
    let user = WriteOpts {
        manager: "scale-generator".into(),
        ..WriteOpts::system()
    };
    let status_opts = WriteOpts {
        status: true,
        ..user.clone()
    };
    let now = cluster.clock.now();
    let class_rt = rt("networking.k8s.io", "ingressclasses");
    let _ = cluster.create(
        &class_rt,
        None,
        json!({"metadata": {"name": "cilium"}, "spec": {"controller": "cilium.io/ingress-controller"}}),
        &user,
    );
    let issuer = "letsencrypt-prod";
    if let Ok(created) = cluster.create(
        &issuer_rt,
        None,
        json!({"metadata": {"name": issuer},
            "spec": {"acme": {"server": "https://acme-v02.api.letsencrypt.org/directory", "email": "ops@example.com",
                "privateKeySecretRef": {"name": issuer}, "solvers": [{"http01": {"ingress": {"ingressClassName": "cilium"}}}]}}}),
        &user,
    ) {
        let status = json!({"status": {"acme": {"uri": "https://acme-v02.api.letsencrypt.org/acme/acct/1"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "ACMEAccountRegistered", "message": "The ACME account was registered with the ACME server",
                "lastTransitionTime": rfc3339(now), "observedGeneration": created["metadata"]["generation"]}]}});
        let _ = cluster.merge_patch(&issuer_rt, None, issuer, &status, &status_opts);
    }
    let namespaces = namespaces.max(1);
    for n in 0..namespaces {
        let _ = cluster.create(
            &ns_rt,
            None,
            json!({"metadata": {"name": format!("tenant-{n}")}}),
            &user,
        );
    }
    let mut made = 0;
    for i in 0..ingresses {
        let ns = format!("tenant-{}", i % namespaces);
        let name = format!("app-{i}");
        let host = format!("app-{i}.tenant-{}.example.com", i % namespaces);
        let secret = format!("{name}-tls");
        let ing = json!({"metadata": {"name": name, "annotations": {"cert-manager.io/cluster-issuer": "letsencrypt-prod", "acme.cert-manager.io/http01-edit-in-place": "true"}},
            "spec": {"ingressClassName": "cilium", "rules": [{"host": host, "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {"service": {"name": name, "port": {"number": 80}}}}]}}],
                     "tls": [{"hosts": [host], "secretName": secret}]}});
        let Ok(ing) = cluster.create(&ing_rt, Some(&ns), ing, &user) else {
            continue;
        };
        // Served: the ingress controller gave it the shared load-balancer address.
        let addresses: Vec<serde_json::Value> = served_on
            .unwrap_or(&["192.0.2.10"])
            .iter()
            .map(|a| json!({"ip": a}))
            .collect();
        let served = json!({"status": {"loadBalancer": {"ingress": addresses}}});
        let _ = cluster.merge_patch(&ing_rt, Some(&ns), &name, &served, &status_opts);
        let cert = json!({"metadata": {"name": secret, "annotations": {"acme.cert-manager.io/http01-override-ingress-name": name, "cert-manager.io/issue-temporary-certificate": "true"},
                "ownerReferences": [{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": name, "uid": ing["metadata"]["uid"], "controller": true}]},
            "spec": {"secretName": secret, "dnsNames": [host], "issuerRef": {"name": "letsencrypt-prod", "kind": "ClusterIssuer", "group": "cert-manager.io"}}});
        let Ok(cert) = cluster.create(&cert_rt, Some(&ns), cert, &user) else {
            continue;
        };
        let issued = now - chrono::Duration::days((i % 60) as i64);
        let signed = served_on.and_then(|_| {
            super::pki::issue(
                super::pki::Hierarchy::Production,
                std::slice::from_ref(&host),
                issued,
                issued + chrono::Duration::days(90),
                i as u64 + 1,
            )
        });
        let status = json!({"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Ready", "message": "Certificate is up to date and has not expired", "lastTransitionTime": rfc3339(issued)}],
            "notBefore": rfc3339(issued), "notAfter": rfc3339(issued + chrono::Duration::days(90)), "renewalTime": rfc3339(issued + chrono::Duration::days(60)), "revision": 1}});
        let _ = cluster.merge_patch(&cert_rt, Some(&ns), &secret, &status, &status_opts);
        let mut secret_body = json!({"metadata": {"name": secret, "annotations": {"cert-manager.io/certificate-name": secret, "cert-manager.io/alt-names": host}}, "type": "kubernetes.io/tls"});
        if let Some((chain, key)) = &signed {
            secret_body["data"] = json!({"tls.crt": chain, "tls.key": key});
        }
        let _ = cluster.create(&secret_rt, Some(&ns), secret_body, &user);
        let cr = json!({"metadata": {"name": format!("{secret}-1"), "annotations": {"cert-manager.io/certificate-revision": "1", "cert-manager.io/certificate-name": secret},
                "ownerReferences": [{"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "name": secret, "uid": cert["metadata"]["uid"], "controller": true}]},
            "spec": {"request": "", "issuerRef": {"name": "letsencrypt-prod", "kind": "ClusterIssuer", "group": "cert-manager.io"}}});
        if cluster.create(&cr_rt, Some(&ns), cr, &user).is_ok() {
            let mut issued = json!({"status": {"conditions": [
                {"type": "Approved", "status": "True", "reason": "cert-manager.io", "message": "Certificate request has been approved by cert-manager.io", "lastTransitionTime": rfc3339(issued)},
                {"type": "Ready", "status": "True", "reason": "Issued", "message": "Certificate fetched from issuer successfully", "lastTransitionTime": rfc3339(issued)}]}});
            if let Some((chain, _)) = &signed {
                issued["status"]["certificate"] = json!(chain);
            }
            let _ = cluster.merge_patch(
                &cr_rt,
                Some(&ns),
                &format!("{secret}-1"),
                &issued,
                &status_opts,
            );
        }
        made += 1;
    }
    Populated {
        namespaces,
        ingresses: made,
        certificates: made,
    }
}

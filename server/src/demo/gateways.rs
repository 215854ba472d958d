//! gva-prod's Gateway-served tenant: Hooli's API Gateway, whose controller (Cilium) leaves
//! two of its TLS listeners out — one names a certificate the platform keeps in its own
//! namespace without a ReferenceGrant to let the Gateway use it, the other a Secret nothing
//! writes — and whose third listener serves `shop.hooli.example` with the certificate issued
//! for `www.hooli.example` alone; its port-80 listener redirects everything to HTTPS, the
//! challenge path too, in front of www's certificate, which an Ingress solver renews. The
//! status page's Gateway has cert-manager issue its certificate through a route on itself,
//! but no port-80 listener to serve the route: its first challenge cannot pass.
//! Creating the ReferenceGrant in the cluster
//! (`kubectl -n platform-certs apply -f -`, from Gateways of `hooli-gateway` to Secret
//! `api-hooli-tls`) clears the first; adding the shop's name to Certificate
//! `hooli-www-tls` clears the third once it is issued again.

use base64::Engine;
use serde_json::json;

use super::seeder::Seeder;

const GATEWAY: (&str, &str, &str, &str) =
    ("gateway.networking.k8s.io", "v1", "Gateway", "gateways");

pub(super) async fn geneva(s: &Seeder) -> anyhow::Result<()> {
    s.namespaces(&["hooli-gateway", "platform-certs"]).await?;
    // The platform's certificate for the API, kept in its own namespace.
    let b64 = |pem: &str| base64::engine::general_purpose::STANDARD.encode(pem);
    s.object(
        ("", "v1", "Secret", "secrets"),
        Some("platform-certs"),
        json!({"metadata": {"name": "api-hooli-tls"}, "type": "kubernetes.io/tls",
               "data": {"tls.crt": b64("-----BEGIN CERTIFICATE-----\nMIIBdemo\n-----END CERTIFICATE-----\n"),
                        "tls.key": b64("-----BEGIN PRIVATE KEY-----\nMIIEdemo\n-----END PRIVATE KEY-----\n")}}),
    )
    .await?;
    // The web team's certificate, written by hand for www alone.
    s.old_certificate(
        "hooli-gateway",
        "hooli-www-tls",
        &["www.hooli.example"],
        json!({"kind": "ClusterIssuer", "name": "letsencrypt-prod", "group": "cert-manager.io"}),
        60,
        30,
    )
    .await?;
    s.object(
        GATEWAY,
        Some("hooli-gateway"),
        json!({"metadata": {"name": "edge"},
               "spec": {"gatewayClassName": "cilium", "listeners": [
                   {"name": "https-api", "hostname": "api.hooli.example", "port": 443, "protocol": "HTTPS",
                    "tls": {"mode": "Terminate", "certificateRefs": [{"name": "api-hooli-tls", "namespace": "platform-certs"}]}},
                   {"name": "https-docs", "hostname": "docs.hooli.example", "port": 443, "protocol": "HTTPS",
                    "tls": {"mode": "Terminate", "certificateRefs": [{"name": "docs-hooli-tls"}]}},
                   {"name": "https-shop", "hostname": "shop.hooli.example", "port": 443, "protocol": "HTTPS",
                    "tls": {"mode": "Terminate", "certificateRefs": [{"name": "hooli-www-tls"}]}},
                   {"name": "https-www", "hostname": "www.hooli.example", "port": 443, "protocol": "HTTPS",
                    "tls": {"mode": "Terminate", "certificateRefs": [{"name": "hooli-www-tls"}]}},
                   {"name": "http", "port": 80, "protocol": "HTTP"}]}}),
    )
    .await?;
    // Everything on port 80 redirected to HTTPS — the challenge path too — while www's
    // certificate is renewed by the issuer's Ingress solver, whose Ingress is not behind
    // this Gateway: its renewal will fail.
    s.object(
        ("gateway.networking.k8s.io", "v1", "HTTPRoute", "httproutes"),
        Some("hooli-gateway"),
        json!({"metadata": {"name": "to-https"},
               "spec": {"parentRefs": [{"name": "edge", "sectionName": "http"}],
                        "rules": [{"filters": [{"type": "RequestRedirect",
                                                "requestRedirect": {"scheme": "https", "statusCode": 301}}]}]}}),
    )
    .await?;
    // The status page's Gateway asks cert-manager for its certificate, solved by a route on
    // the Gateway itself — which has no port-80 listener for the route to be served on.
    s.object(
        ("cert-manager.io", "v1", "ClusterIssuer", "clusterissuers"),
        None,
        json!({"metadata": {"name": "letsencrypt-gateway"},
               "spec": {"acme": {"server": kubesim::sim::letsencrypt::PRODUCTION, "email": "ops@example.com",
                                 "privateKeySecretRef": {"name": "letsencrypt-gateway-account"},
                                 "solvers": [{"http01": {"gatewayHTTPRoute": {}}}]}}}),
    )
    .await?;
    s.object(
        GATEWAY,
        Some("hooli-gateway"),
        json!({"metadata": {"name": "status", "annotations": {"cert-manager.io/cluster-issuer": "letsencrypt-gateway"}},
               "spec": {"gatewayClassName": "cilium", "listeners": [
                   {"name": "https", "hostname": "status.hooli.example", "port": 443, "protocol": "HTTPS",
                    "tls": {"mode": "Terminate", "certificateRefs": [{"name": "status-hooli-tls"}]}}]}}),
    )
    .await
}

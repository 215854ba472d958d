//! gva-prod's Gateway-served tenant: Hooli's API Gateway, whose controller (Cilium) leaves
//! two of its TLS listeners out — one names a certificate the platform keeps in its own
//! namespace without a ReferenceGrant to let the Gateway use it, the other a Secret nothing
//! writes — and whose third listener serves `shop.hooli.example` with the certificate issued
//! for `www.hooli.example` alone. Creating the ReferenceGrant in the cluster
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
                    "tls": {"mode": "Terminate", "certificateRefs": [{"name": "hooli-www-tls"}]}}]}}),
    )
    .await
}

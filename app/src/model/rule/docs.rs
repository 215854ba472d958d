//! The upstream documentation the rules' advice rests on: title and URL.

pub(super) const EDIT_IN_PLACE_DOCS: (&str, &str) = (
    "cert-manager: the edit-in-place annotation",
    "https://cert-manager.io/docs/usage/ingress/#supported-annotations",
);
pub(super) const CILIUM_INGRESS: (&str, &str) = (
    "Cilium: Ingress",
    "https://docs.cilium.io/en/stable/network/servicemesh/ingress/",
);
pub(super) const RATE_LIMITS: (&str, &str) = (
    "Let's Encrypt: rate limits",
    "https://letsencrypt.org/docs/rate-limits/",
);
pub(super) const STAGING: (&str, &str) = (
    "Let's Encrypt: the staging environment",
    "https://letsencrypt.org/docs/staging-environment/",
);
pub(super) const TROUBLESHOOTING: (&str, &str) = (
    "cert-manager: troubleshooting",
    "https://cert-manager.io/docs/troubleshooting/",
);
pub(super) const ACME_TROUBLESHOOTING: (&str, &str) = (
    "cert-manager: troubleshooting ACME",
    "https://cert-manager.io/docs/troubleshooting/acme/",
);
pub(super) const ACME_ISSUERS: (&str, &str) = (
    "cert-manager: ACME issuers",
    "https://cert-manager.io/docs/configuration/acme/",
);
pub(super) const APPROVAL: (&str, &str) = (
    "cert-manager: CertificateRequest approval",
    "https://cert-manager.io/docs/usage/certificaterequest/#approval",
);
pub(super) const SECURING_INGRESS: (&str, &str) = (
    "cert-manager: securing Ingress resources",
    "https://cert-manager.io/docs/usage/ingress/",
);
pub(super) const ESPEJOTE: (&str, &str) = (
    "Espejote: ManagedResource",
    "https://github.com/vshn/espejote/blob/main/docs/api.adoc",
);
pub(super) const GATEWAY_HTTP01: (&str, &str) = (
    "cert-manager: HTTP-01 with the Gateway API",
    "https://cert-manager.io/docs/configuration/acme/http01/#configuring-the-http-01-gateway-api-solver",
);
pub(super) const GATEWAY_TLS: (&str, &str) = (
    "Gateway API: TLS configuration and ReferenceGrant",
    "https://gateway-api.sigs.k8s.io/guides/tls/",
);

//! What a host serves, as Lookout's probe saw it from where Lookout runs: per host and
//! load-balancer address, the served certificate (or why there was none) and how the ACME
//! HTTP-01 path answered. The server's probe fills these; the `probe.*` rules judge them
//! against the chain (the certificate cert-manager issued, the Certificate's `notAfter`).

use std::net::IpAddr;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Why a probe got no answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "class", content = "detail")]
pub enum ProbeError {
    /// Nothing listens (RST to the SYN).
    Refused,
    /// The connection was reset after it was open (what a PROXY-protocol listener does to a
    /// client that sends none, among others).
    Reset,
    /// Closed before an answer (EOF), likewise.
    Closed,
    /// No answer within the timeout.
    Timeout,
    /// No route for the address (family): the network or host is unreachable.
    NoRoute,
    /// The TLS handshake failed: the text says why.
    Handshake(String),
    /// The answer was not HTTP.
    Malformed(String),
    /// Anything else the socket said.
    Io(String),
}

impl ProbeError {
    /// Whether the connection was open and then dropped before any answer: what a
    /// PROXY-protocol listener does to a client that sends no header.
    pub fn dropped_before_answer(&self) -> bool {
        matches!(self, ProbeError::Reset | ProbeError::Closed)
    }

    /// In words, for evidence.
    pub fn describe(&self) -> String {
        match self {
            ProbeError::Refused => "connection refused".into(),
            ProbeError::Reset => "connection reset before an answer".into(),
            ProbeError::Closed => "connection closed before an answer".into(),
            ProbeError::Timeout => "no answer (timeout)".into(),
            ProbeError::NoRoute => "no route to the address".into(),
            ProbeError::Handshake(t) => format!("TLS handshake failed: {t}"),
            ProbeError::Malformed(t) => format!("not an HTTP answer: {t}"),
            ProbeError::Io(t) => t.clone(),
        }
    }
}

/// One certificate, as read from its DER.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServedCertificate {
    pub subject: String,
    /// The DNS names of its subjectAltName.
    pub names: Vec<String>,
    pub issuer: String,
    /// Hex, as `openssl x509 -serial` prints it.
    pub serial: String,
    pub not_before: DateTime<Utc>,
    pub not_after: DateTime<Utc>,
    /// SHA-256 of the DER, lowercase hex: what compares it with the issued certificate.
    pub sha256: String,
}

impl ServedCertificate {
    /// Reads a DER certificate; None when it does not parse.
    pub fn parse(der: &[u8]) -> Option<Self> {
        use sha2::Digest;
        use x509_parser::prelude::*;
        let (_, cert) = X509Certificate::from_der(der).ok()?;
        let names = cert
            .subject_alternative_name()
            .ok()
            .flatten()
            .map(|san| {
                san.value
                    .general_names
                    .iter()
                    .filter_map(|n| match n {
                        GeneralName::DNSName(d) => Some(d.to_string()),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        let time = |t: ASN1Time| DateTime::from_timestamp(t.timestamp(), 0);
        Some(ServedCertificate {
            subject: cert.subject().to_string(),
            names,
            issuer: cert.issuer().to_string(),
            serial: cert.raw_serial_as_string().replace(':', "").to_uppercase(),
            not_before: time(cert.validity().not_before)?,
            not_after: time(cert.validity().not_after)?,
            sha256: sha2::Sha256::digest(der)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect(),
        })
    }

    /// The leaf of a PEM chain given as base64 (a CertificateRequest's `status.certificate`).
    pub fn from_base64_pem(value: &str) -> Option<Self> {
        use base64::Engine;
        let pem = base64::engine::general_purpose::STANDARD
            .decode(value.trim())
            .ok()?;
        let (_, block) = x509_parser::pem::parse_x509_pem(&pem).ok()?;
        Self::parse(&block.contents)
    }

    /// Self-signed: its issuer is its subject (a controller's fallback or default
    /// certificate).
    pub fn self_signed(&self) -> bool {
        self.subject == self.issuer
    }

    /// cert-manager's temporary certificate: signed by the throwaway CA named
    /// `cert-manager.local` (`pkg/util/pki/temporarycertificate.go`).
    pub fn is_temporary(&self) -> bool {
        self.issuer.contains("cert-manager.local")
    }

    /// Whether it names `host` (exactly, or by a wildcard one label deep).
    pub fn covers(&self, host: &str) -> bool {
        self.names.iter().any(|n| name_matches(n, host))
    }
}

/// Whether a certificate name matches a host (RFC 6125: `*.` covers exactly one label).
pub fn name_matches(name: &str, host: &str) -> bool {
    if name.eq_ignore_ascii_case(host) {
        return true;
    }
    match (name.strip_prefix("*."), host.split_once('.')) {
        (Some(base), Some((first, rest))) => !first.is_empty() && base.eq_ignore_ascii_case(rest),
        _ => false,
    }
}

/// What one address served for one host over TLS.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlsObservation {
    pub leaf: ServedCertificate,
    /// Certificates sent, the leaf included.
    pub chain_len: usize,
    /// None when the chain verifies against the roots for the host; else why not.
    pub untrusted: Option<Untrusted>,
    /// "TLSv1.3", "TLSv1.2".
    pub version: String,
}

/// Why a served chain does not verify.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "problem", content = "detail")]
pub enum Untrusted {
    NameMismatch(String),
    UnknownIssuer(String),
    Expired(String),
    NotYetValid(String),
    Other(String),
}

/// How the ACME path answered on port 80 (redirects not followed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AcmePathObservation {
    pub status: u16,
    /// The `Location` of a redirect.
    pub location: Option<String>,
}

impl AcmePathObservation {
    /// A redirect to `https://` (301, 302, 303, 307, 308).
    pub fn redirected_to_https(&self) -> bool {
        matches!(self.status, 301 | 302 | 303 | 307 | 308)
            && self
                .location
                .as_deref()
                .is_some_and(|l| l.to_ascii_lowercase().starts_with("https://"))
    }
}

/// Where a probed host was published: an Ingress's TLS host or a Gateway listener's.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ProbeSource {
    pub namespace: String,
    /// `Ingress` or `Gateway`.
    pub kind: String,
    pub name: String,
}

/// One host on one address: what the probe saw the last time it looked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observation {
    pub host: String,
    pub address: IpAddr,
    /// The objects that publish the host on this address (one cluster's).
    pub sources: Vec<ProbeSource>,
    /// Since when the probe has seen what it sees now (its rounds say when it last looked).
    pub since: DateTime<Utc>,
    /// What the HTTPS port served, or why nothing was.
    pub tls: Option<TlsObservation>,
    pub tls_error: Option<ProbeError>,
    /// The handshake only succeeded once a PROXY header was sent (the configuration asked
    /// for none): the load balancer expects PROXY protocol.
    pub needs_proxy_header: bool,
    /// How `GET /.well-known/acme-challenge/<token>` answered on the HTTP port.
    pub acme: Option<AcmePathObservation>,
    pub acme_error: Option<ProbeError>,
}

impl Observation {
    /// `IPv4` or `IPv6`.
    pub fn family(&self) -> &'static str {
        if self.address.is_ipv4() {
            "IPv4"
        } else {
            "IPv6"
        }
    }

    /// What was seen, without the times: two observations with the same outcome are one
    /// stored result.
    pub fn outcome(&self) -> String {
        let mut o = self.clone();
        o.since = DateTime::<Utc>::UNIX_EPOCH;
        serde_json::to_string(&o).unwrap_or_default()
    }

    /// Whether the HTTPS port gave no certificate at all.
    pub fn unanswered(&self) -> bool {
        self.tls.is_none()
    }
}

/// One host on one published address (an IP, or a hostname to resolve), with the objects
/// that publish it: what the probe connects to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub host: String,
    pub address: String,
    pub sources: Vec<ProbeSource>,
}

/// Every TLS host of a cluster on every address its Ingress or Gateway publishes, sorted by
/// host. Wildcard hosts are skipped (no name to send in SNI).
pub fn targets(data: &super::data::ClusterData) -> Vec<Target> {
    use std::collections::{BTreeMap, BTreeSet};
    let mut found: BTreeMap<(String, String), BTreeSet<ProbeSource>> = BTreeMap::new();
    let mut add = |host: &str, address: &str, source: ProbeSource| {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        if host.is_empty() || host.starts_with("*.") || address.is_empty() {
            return;
        }
        found
            .entry((host, address.to_string()))
            .or_default()
            .insert(source);
    };
    for ing in data.ingresses.values() {
        for t in &ing.tls {
            for host in t.hosts.iter() {
                for address in ing.addresses.iter() {
                    add(
                        host,
                        address,
                        ProbeSource {
                            namespace: ing.namespace.to_string(),
                            kind: "Ingress".into(),
                            name: ing.name.to_string(),
                        },
                    );
                }
            }
        }
    }
    for gw in data.gateways.values() {
        for l in &gw.listeners {
            let Some(host) = &l.hostname else { continue };
            for address in &gw.addresses {
                add(
                    host,
                    address,
                    ProbeSource {
                        namespace: gw.namespace.clone(),
                        kind: "Gateway".into(),
                        name: gw.name.clone(),
                    },
                );
            }
        }
    }
    found
        .into_iter()
        .map(|((host, address), sources)| Target {
            host,
            address,
            sources: sources.into_iter().collect(),
        })
        .collect()
}

/// What each probed host should serve, as the cluster's objects say it, summed up as one
/// number per host: the publishing Ingresses' addresses, TLS Secrets and the settings that
/// route the challenge path, and the state of the Certificate that writes each Secret (its
/// revision, `notAfter`, Ready). When a host's number changes — a certificate was issued, a
/// fix was applied, an address moved — what clients get may have changed too, so the probe
/// looks again at once instead of waiting for its round.
pub fn serving_signatures(
    data: &super::data::ClusterData,
) -> std::collections::HashMap<String, u64> {
    use std::collections::hash_map::DefaultHasher;
    use std::hash::{Hash, Hasher};
    let mut out: std::collections::HashMap<String, DefaultHasher> = Default::default();
    // One pass over the Certificates: (namespace, Secret) → what says it was (re)issued.
    let mut by_secret = std::collections::HashMap::new();
    for c in data.certificates.values() {
        if let Some(secret) = c.secret_name.as_deref() {
            let ready = c.ready.as_ref().map(|r| r.status);
            by_secret.insert((&*c.namespace, secret), (c.revision, c.not_after, ready));
        }
    }
    let certificate = |namespace: &str, secret: &str| by_secret.get(&(namespace, secret)).cloned();
    for ing in data.ingresses.values() {
        for t in &ing.tls {
            for host in t.hosts.iter() {
                let h = out
                    .entry(host.trim_end_matches('.').to_ascii_lowercase())
                    .or_default();
                (&ing.namespace, &ing.name, &ing.addresses).hash(h);
                (&ing.edit_in_place, &ing.rare.force_https, &t.secret_name).hash(h);
                t.secret_name
                    .as_deref()
                    .and_then(|s| certificate(&ing.namespace, s))
                    .hash(h);
            }
        }
    }
    for gw in data.gateways.values() {
        for l in &gw.listeners {
            if let Some(host) = &l.hostname {
                let h = out.entry(host.to_ascii_lowercase()).or_default();
                (&gw.namespace, &gw.name, &gw.addresses, &l.certificate_refs).hash(h);
            }
        }
    }
    out.into_iter().map(|(k, h)| (k, h.finish())).collect()
}

/// An observation as a caller may see it: its cluster, and only the publishing objects in
/// namespaces the caller sees.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProbeRow {
    pub cluster: String,
    #[serde(flatten)]
    pub observation: Observation,
}

/// The observations of one cluster that `sees` allows (by a publishing object's namespace),
/// for `host` when given, each with only the sources it may see.
pub fn visible_rows(
    cluster: &str,
    observations: &[Observation],
    sees: impl Fn(&str) -> bool,
    host: Option<&str>,
    namespace: Option<&str>,
) -> Vec<ProbeRow> {
    observations
        .iter()
        .filter(|o| host.is_none_or(|h| o.host.eq_ignore_ascii_case(h)))
        .filter_map(|o| {
            let sources: Vec<ProbeSource> = o
                .sources
                .iter()
                .filter(|s| sees(&s.namespace) && namespace.is_none_or(|n| n == s.namespace))
                .cloned()
                .collect();
            (!sources.is_empty()).then(|| ProbeRow {
                cluster: cluster.to_string(),
                observation: Observation {
                    sources,
                    ..o.clone()
                },
            })
        })
        .collect()
}

/// The observations published by objects in `namespace`, each with only those sources (what
/// a detail page of that namespace shows).
pub fn published_in(observations: &[Observation], namespace: &str) -> Vec<Observation> {
    visible_rows("", observations, |ns| ns == namespace, None, None)
        .into_iter()
        .map(|r| r.observation)
        .collect()
}

/// One cluster's latest observations, sorted by host then address.
pub type Observations = Arc<Vec<Observation>>;

/// A certificate as issued: the leaf of a CertificateRequest's `status.certificate`, kept
/// small in the cache.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IssuedLeaf {
    pub sha256: Box<str>,
    pub serial: Box<str>,
    pub not_after: DateTime<Utc>,
}

impl IssuedLeaf {
    pub fn of(value: &str) -> Option<Box<Self>> {
        let leaf = ServedCertificate::from_base64_pem(value)?;
        Some(Box::new(IssuedLeaf {
            sha256: leaf.sha256.into(),
            serial: leaf.serial.into(),
            not_after: leaf.not_after,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_cover_one_label() {
        assert!(name_matches("*.example.com", "a.example.com"));
        assert!(!name_matches("*.example.com", "a.b.example.com"));
        assert!(!name_matches("*.example.com", "example.com"));
        assert!(name_matches("Example.com", "example.com"));
    }

    #[test]
    fn garbage_is_no_certificate() {
        assert!(ServedCertificate::from_base64_pem("not base64").is_none());
        assert!(IssuedLeaf::of("aGVsbG8=").is_none());
        assert!(ServedCertificate::parse(b"\x30\x03\x02\x01\x01").is_none());
    }
}

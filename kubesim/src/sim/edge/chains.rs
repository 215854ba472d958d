//! The TLS filter chains of Cilium's listeners as Envoy takes them, and the certificates
//! Envoy's secret discovery loads into them.
//!
//! - Cilium translates the Ingresses of one listener (all shared-mode Ingresses of a cluster
//!   together, each dedicated one alone) into one filter chain per TLS Secret, matched by the
//!   server names of its TLS entries; there is no default chain
//!   (`operator/pkg/model/translation/envoy_listener.go`, `NewHTTPListener`,
//!   `toFilterChainMatch`). A server name no chain matches — or no server name at all — is
//!   closed by Envoy after the ClientHello ("no matching filter chain found"), which a
//!   client sees as a reset.
//! - Two Secrets for one server name on one listener make two chains with the same match:
//!   Envoy refuses the listener update ("multiple filter chains with the same matching
//!   rules") and keeps the chains it accepted last, so no later change of the listener's
//!   chains applies until the duplicate is gone (cilium/cilium#45925). A listener refused
//!   from its first version has no TLS chains here (Envoy would have no listener at all).
//! - A Secret's certificate reaches Envoy through secret discovery, apart from the listener:
//!   a version that does not load (not PEM, no key, a key of another certificate) is
//!   rejected and the last one that loaded keeps serving; a Secret that never loaded, or
//!   does not exist, leaves its chain without a certificate, and the handshake is reset
//!   (cilium/cilium#26988).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use base64::Engine;
use rustls::sign::CertifiedKey;
use serde_json::Value;

use super::super::cilium;
use super::super::{s, Api};

/// A Secret by namespace and name.
type SecretRef = (String, String);

/// A listener of a cluster: the shared one, or a dedicated Ingress's (namespace, name).
type ListenerId = (usize, Option<SecretRef>);

/// A Secret's last version that loaded: its resourceVersion and key.
type Loaded = (String, Arc<CertifiedKey>);

/// What a listener's Ingresses ask for: its addresses and, per server name, the Secrets.
type Wanted = (Vec<IpAddr>, BTreeMap<String, BTreeSet<SecretRef>>);

/// The certificate a server name gets.
#[derive(Clone)]
pub(super) enum Served {
    Loaded(Arc<CertifiedKey>),
    /// No chain for the name, or a chain whose Secret never loaded: the handshake is reset.
    Missing,
}

/// What Envoy holds across rebuilds of the routing table.
pub(super) struct Chains {
    /// Per listener: server name → Secret, as last accepted.
    accepted: Mutex<HashMap<ListenerId, BTreeMap<String, SecretRef>>>,
    /// Per (cluster, Secret): the last resourceVersion that loaded, and its key.
    loaded: Mutex<HashMap<(usize, SecretRef), Loaded>>,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl Chains {
    pub(super) fn new(provider: Arc<rustls::crypto::CryptoProvider>) -> Chains {
        Chains {
            accepted: Mutex::default(),
            loaded: Mutex::default(),
            provider,
        }
    }

    /// The certificate each (address, server name) of cluster `i` gets.
    pub(super) fn served(
        &self,
        i: usize,
        api: &Api<'_>,
        ingresses: &[Value],
    ) -> HashMap<(IpAddr, String), Served> {
        // Per listener: its addresses and, per server name, the Secrets its Ingresses name.
        let mut wanted: BTreeMap<ListenerId, Wanted> = BTreeMap::new();
        for ing in ingresses {
            let ns = s(ing, "/metadata/namespace")
                .unwrap_or_default()
                .to_string();
            let name = s(ing, "/metadata/name").unwrap_or_default().to_string();
            let id = (i, cilium::dedicated(api, ing).then(|| (ns.clone(), name)));
            let (addresses, names) = wanted.entry(id).or_default();
            addresses.extend(
                ing.pointer("/status/loadBalancer/ingress")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|a| s(a, "/ip")?.parse::<IpAddr>().ok()),
            );
            for t in ing
                .pointer("/spec/tls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let Some(secret) = s(t, "/secretName") else {
                    continue;
                };
                for host in t
                    .get("hosts")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    names
                        .entry(host.to_ascii_lowercase())
                        .or_default()
                        .insert((ns.clone(), secret.to_string()));
                }
            }
        }
        let mut served = HashMap::new();
        let mut accepted = self.accepted.lock().expect("edge chains");
        for (id, (addresses, names)) in wanted {
            let refused = names.values().any(|secrets| secrets.len() > 1);
            let chains = if refused {
                accepted.get(&id).cloned().unwrap_or_default()
            } else {
                let chains: BTreeMap<String, SecretRef> = names
                    .into_iter()
                    .filter_map(|(host, secrets)| Some((host, secrets.into_iter().next()?)))
                    .collect();
                accepted.insert(id, chains.clone());
                chains
            };
            for (host, secret) in chains {
                let certificate = self.load(i, api, &secret);
                for ip in &addresses {
                    served
                        .entry((*ip, host.clone()))
                        .or_insert_with(|| certificate.clone());
                }
            }
        }
        served
    }

    /// The Secret's certificate as secret discovery has it: this version when it loads,
    /// else the last version that did.
    pub(super) fn load(&self, i: usize, api: &Api<'_>, secret: &SecretRef) -> Served {
        let key = (i, secret.clone());
        let mut loaded = self.loaded.lock().expect("edge keys");
        let Some(object) = api.get("", "secrets", Some(&secret.0), &secret.1) else {
            loaded.remove(&key);
            return Served::Missing;
        };
        let rv = s(&object, "/metadata/resourceVersion")
            .unwrap_or_default()
            .to_string();
        if let Some((version, certified)) = loaded.get(&key) {
            if *version == rv {
                return Served::Loaded(certified.clone());
            }
        }
        let decode = |field: &str| {
            base64::engine::general_purpose::STANDARD
                .decode(s(&object, &format!("/data/{field}"))?)
                .ok()
        };
        match certified(
            &self.provider,
            &decode("tls.crt").unwrap_or_default(),
            &decode("tls.key").unwrap_or_default(),
        ) {
            Some(certified) => {
                loaded.insert(key, (rv, certified.clone()));
                Served::Loaded(certified)
            }
            None => loaded
                .get(&key)
                .map_or(Served::Missing, |(_, last)| Served::Loaded(last.clone())),
        }
    }
}

/// A certificate chain and key from PEM, when the key is the leaf's.
fn certified(
    provider: &rustls::crypto::CryptoProvider,
    chain: &[u8],
    key: &[u8],
) -> Option<Arc<CertifiedKey>> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(chain)
        .filter_map(Result::ok)
        .collect();
    let key = PrivateKeyDer::from_pem_slice(key).ok()?;
    if certs.is_empty() {
        return None;
    }
    // `from_der` refuses a key that is not the leaf's, as Envoy does.
    CertifiedKey::from_der(certs, key, provider)
        .ok()
        .map(Arc::new)
}

//! The chains a cluster's problems are made of: each Ingress with what it uses, and each
//! Certificate no Ingress owns — their objects, hosts, and how long their clients are served.

use foldhash::{HashSet, HashSetExt};

use chrono::{DateTime, Utc};

use super::super::chain::{certificate_objects, ingress_objects, ObjectRef};
use super::{problem_id, Issuance, ProblemObject};
use crate::model::chain::Index;
use crate::model::data::ClusterData;
use crate::model::ingress::IngressView;
use crate::model::rule::Rule;
use crate::model::text::Text;
use crate::model::{Finding, Kind};

/// One chain: its head (an Ingress, or a Certificate no Ingress owns), its objects, hosts
/// and the expiry of its certificates.
pub(super) struct Chain {
    pub head: ProblemObject,
    pub objects: HashSet<ObjectRef>,
    pub hosts: Vec<Text>,
    pub expires: Option<DateTime<Utc>>,
    /// A TLS host of it has no issued certificate yet.
    pub unissued: bool,
    /// Its certificates' issuance, for telling a fix under way from a failure.
    pub issuance: Vec<Issuance>,
    /// The issuer the chain names: (namespace — empty for a ClusterIssuer —, kind, name).
    pub issuer: Option<(Text, Text, Text)>,
}

/// The issuer a chain names, as a key.
fn issuer_key(namespace: &Text, r: &crate::model::IssuerRef) -> (Text, Text, Text) {
    let ns = if crate::model::Kind::from_name(&r.kind) == Some(crate::model::Kind::ClusterIssuer) {
        Text::from("")
    } else {
        namespace.clone()
    };
    (ns, r.kind.clone(), r.name.clone())
}

/// Which problem a chain's root makes: its own, except that `issuer.missing` (reported on
/// each Ingress or Certificate that names the issuer) is one problem per missing issuer, and
/// `cluster.cert-manager-missing` (reported on each Ingress that asks for a certificate) one
/// per cluster — one root cause, however many chains name it.
pub(super) fn gathering_key(root: &Finding, chain: &Chain) -> String {
    match (&chain.issuer, root.rule) {
        (Some((ns, kind, name)), Rule::IssuerMissing) => {
            format!("{}\0issuer.missing\0{ns}\0{kind}\0{name}", root.cluster)
        }
        // Reported on each Ingress that asks for a certificate: one cause, the cluster's.
        (_, Rule::ClusterCertManagerMissing) => {
            format!("{}\0cluster.cert-manager-missing", root.cluster)
        }
        _ => problem_id(root),
    }
}

/// For an Ingress whose TLS entries no Certificate covers (made by hand, or one
/// ingress-shim will not make): Some when the probe saw every one of its TLS hosts serve a
/// trusted certificate for it — a certificate clients get, if nothing renews it — holding
/// the earliest `notAfter` among them; None while a host is unprobed or served nothing
/// trusted.
fn served_expiry(ing: &IngressView, data: &ClusterData) -> Option<Option<DateTime<Utc>>> {
    let mut earliest: Option<DateTime<Utc>> = None;
    for host in ing.tls.iter().flat_map(|t| t.hosts.iter()) {
        // Every address of the host must serve one (an IPv6 listener failing is a failure).
        let mut served: Option<DateTime<Utc>> = None;
        for o in data.probes.iter().filter(|o| o.host == **host) {
            let tls = o
                .tls
                .as_ref()
                .filter(|tls| tls.untrusted.is_none() && tls.leaf.covers(host))?;
            served = Some(served.map_or(tls.leaf.not_after, |s| s.min(tls.leaf.not_after)));
        }
        let served = served?;
        earliest = Some(earliest.map_or(served, |e| e.min(served)));
    }
    Some(earliest)
}

pub(super) fn chains(cluster: &Text, idx: &Index<'_>, data: &ClusterData) -> Vec<Chain> {
    let mut out = Vec::new();
    let mut owned: HashSet<(&str, &str)> = HashSet::new();
    // One copy of each head's kind for all of them (a problem may hold thousands of heads).
    for ing in data.ingresses.values() {
        let certificates = idx.certificates_of(ing);
        for c in &certificates {
            owned.insert((&c.namespace, &c.name));
        }
        // TLS entries no issued Certificate covers: what the hosts serve, if anything
        // trusted (looked up once: it scans the probe's observations).
        let served = (certificates.iter().all(|c| c.issued_not_after().is_none())
            && !ing.tls.is_empty())
        .then(|| served_expiry(ing, data))
        .flatten();
        out.push(Chain {
            head: ProblemObject {
                cluster: cluster.clone(),
                namespace: ing.namespace.clone(),
                kind: Kind::Ingress.into(),
                name: ing.name.clone(),
            },
            objects: ingress_objects(idx, ing),
            hosts: ing.all_hosts(),
            expires: certificates
                .iter()
                .filter_map(|c| c.issued_not_after())
                .min()
                .or(served.flatten()),
            unissued: certificates.iter().any(|c| c.issued_not_after().is_none())
                || (certificates.is_empty() && !ing.tls.is_empty() && served.is_none()),
            issuance: certificates.iter().map(|c| Issuance::of(c)).collect(),
            issuer: ing
                .issuer
                .as_deref()
                .or_else(|| certificates.first().and_then(|c| c.issuer.as_deref()))
                .map(|r| issuer_key(&ing.namespace, r)),
        });
    }
    for c in data.certificates.values() {
        if owned.contains(&(&*c.namespace, &*c.name)) {
            continue;
        }
        let mut objects = HashSet::new();
        certificate_objects(idx, c, &mut objects);
        out.push(Chain {
            head: ProblemObject {
                cluster: cluster.clone(),
                namespace: c.namespace.clone(),
                kind: Kind::Certificate.into(),
                name: c.name.clone(),
            },
            objects,
            hosts: c.dns_names.to_vec(),
            expires: c.issued_not_after(),
            unissued: c.issued_not_after().is_none(),
            issuance: vec![Issuance::of(c)],
            issuer: c.issuer.as_deref().map(|r| issuer_key(&c.namespace, r)),
        });
    }
    out
}

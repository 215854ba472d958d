//! Real certificates for the simulated CAs: a production chain (root and intermediate, like
//! Let's Encrypt's `ISRG Root X1` → `R10`), a staging chain whose names carry `(STAGING)`
//! as Let's Encrypt's staging hierarchy does, and a private CA for CA/self-signed issuers.
//! cert-manager's simulation signs the leaf of each issuance with one of them; it lands in
//! the CertificateRequest's `status.certificate` and the Secret's `tls.crt`, and kubesim's
//! Cilium listeners serve it.

use std::sync::OnceLock;

use base64::Engine;
use chrono::{DateTime, Datelike, Timelike, Utc};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};

/// Which hierarchy signs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hierarchy {
    Production,
    Staging,
    Private,
}

/// One CA: its root, and the intermediate that signs leaves.
struct Ca {
    root_pem: String,
    intermediate: CertifiedIssuer<'static, KeyPair>,
}

impl Ca {
    fn new(root_name: &str, intermediate_name: &str) -> Result<Ca, rcgen::Error> {
        let mut root = CertificateParams::new(Vec::<String>::new())?;
        root.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        root.distinguished_name
            .push(DnType::OrganizationName, "kubesim");
        root.distinguished_name.push(DnType::CommonName, root_name);
        root.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        root.not_before = rcgen::date_time_ymd(2020, 1, 1);
        root.not_after = rcgen::date_time_ymd(2045, 1, 1);
        let root = CertifiedIssuer::self_signed(root, KeyPair::generate()?)?;
        let mut inter = CertificateParams::new(Vec::<String>::new())?;
        inter.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        inter
            .distinguished_name
            .push(DnType::OrganizationName, "kubesim");
        inter
            .distinguished_name
            .push(DnType::CommonName, intermediate_name);
        inter.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        inter.not_before = rcgen::date_time_ymd(2020, 1, 1);
        inter.not_after = rcgen::date_time_ymd(2044, 1, 1);
        let intermediate = CertifiedIssuer::signed_by(inter, KeyPair::generate()?, &root)?;
        Ok(Ca {
            root_pem: root.pem(),
            intermediate,
        })
    }
}

struct Pki {
    production: Ca,
    staging: Ca,
    private: Ca,
    /// One key for every leaf: keys are not what the simulation is about, and generating
    /// one per issuance would dominate large fleets.
    leaf_key: KeyPair,
}

fn pki() -> Option<&'static Pki> {
    static PKI: OnceLock<Option<Pki>> = OnceLock::new();
    PKI.get_or_init(|| {
        let built = (|| -> Result<Pki, rcgen::Error> {
            Ok(Pki {
                production: Ca::new("kubesim Root X1", "kubesim R10")?,
                staging: Ca::new(
                    "(STAGING) kubesim Pretend Pear X1",
                    "(STAGING) kubesim Pseudo Plum E5",
                )?,
                private: Ca::new("kubesim private CA", "kubesim private CA issuing")?,
                leaf_key: KeyPair::generate()?,
            })
        })();
        built
            .map_err(|e| tracing::error!(error = %e, "the simulated CAs could not be made"))
            .ok()
    })
    .as_ref()
}

/// The production root (PEM): what a client of the simulated fleet trusts.
pub fn production_root_pem() -> String {
    pki()
        .map(|p| p.production.root_pem.clone())
        .unwrap_or_default()
}

fn offset(t: DateTime<Utc>) -> time::OffsetDateTime {
    rcgen::date_time_ymd(t.year(), t.month() as u8, t.day() as u8)
        + time::Duration::seconds(i64::from(t.num_seconds_from_midnight()))
}

/// An issued leaf for `names`, valid from `not_before` to `not_after`: (base64 of the PEM
/// chain — leaf, then intermediate — as cert-manager stores `status.certificate` and
/// `tls.crt`; base64 of the key PEM for `tls.key`). None when signing fails.
pub fn issue(
    hierarchy: Hierarchy,
    names: &[String],
    not_before: DateTime<Utc>,
    not_after: DateTime<Utc>,
    serial: u64,
) -> Option<(String, String)> {
    let p = pki()?;
    let ca = match hierarchy {
        Hierarchy::Production => &p.production,
        Hierarchy::Staging => &p.staging,
        Hierarchy::Private => &p.private,
    };
    let mut params = CertificateParams::new(names.to_vec()).ok()?;
    if let Some(first) = names.first() {
        params
            .distinguished_name
            .push(DnType::CommonName, first.as_str());
    }
    params.not_before = offset(not_before);
    params.not_after = offset(not_after);
    params.serial_number = Some(rcgen::SerialNumber::from(serial.to_be_bytes().to_vec()));
    let leaf = params.signed_by(&p.leaf_key, &ca.intermediate).ok()?;
    let chain = format!("{}{}", leaf.pem(), ca.intermediate.pem());
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    Some((b64(&chain), b64(&p.leaf_key.serialize_pem())))
}

/// A PKCS#10 request for `names` (PEM), signed with the key the leaves issued here share:
/// the key a request's certificate is written with into the Secret is the request's own, as
/// cert-manager's issuing controller keeps them (its `SecretMismatch` check compares them).
pub fn request(names: &[String]) -> Option<String> {
    let p = pki()?;
    CertificateParams::new(names.to_vec())
        .and_then(|params| params.serialize_request(&p.leaf_key))
        .and_then(|r| r.pem())
        .ok()
}

/// cert-manager's temporary certificate for `names` (`pkg/util/pki/temporarycertificate.go`
/// `GenerateLocallySignedTemporaryCertificate`): a throwaway CA whose common name is
/// `cert-manager.local` signs a leaf made from the Certificate's spec — its names, the
/// subject serial number `1234567890`, valid from now for the Certificate's duration. Only the
/// leaf goes into `tls.crt`. Returns (base64 of the leaf's PEM, base64 of the key's PEM).
pub fn temporary(
    names: &[String],
    common_name: Option<&str>,
    not_before: DateTime<Utc>,
    not_after: DateTime<Utc>,
) -> Option<(String, String)> {
    let p = pki()?;
    let mut ca = CertificateParams::new(Vec::<String>::new()).ok()?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "cert-manager.local");
    ca.not_before = offset(not_before);
    ca.not_after = offset(not_after);
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().ok()?).ok()?;
    let mut params = CertificateParams::new(names.to_vec()).ok()?;
    if let Some(cn) = common_name {
        params.distinguished_name.push(DnType::CommonName, cn);
    }
    // The subject's serialNumber attribute (OID 2.5.4.5), as upstream's template sets it.
    params
        .distinguished_name
        .push(DnType::CustomDnType(vec![2, 5, 4, 5]), "1234567890");
    params.not_before = offset(not_before);
    params.not_after = offset(not_after);
    let leaf = params.signed_by(&p.leaf_key, &ca).ok()?;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    Some((b64(&leaf.pem()), b64(&p.leaf_key.serialize_pem())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leaf_chains_to_its_hierarchy() {
        let now = Utc::now();
        let (chain, key) = issue(
            Hierarchy::Staging,
            &["shop.example.com".into()],
            now,
            now + chrono::Duration::days(90),
            7,
        )
        .unwrap();
        let pem = base64::engine::general_purpose::STANDARD
            .decode(chain)
            .unwrap();
        let text = String::from_utf8(pem).unwrap();
        assert_eq!(text.matches("BEGIN CERTIFICATE").count(), 2);
        assert!(!key.is_empty());
        let (_, block) = x509_parser::pem::parse_x509_pem(text.as_bytes()).unwrap();
        let cert = block.parse_x509().unwrap();
        assert!(cert.issuer().to_string().contains("(STAGING)"));
        assert_eq!(
            cert.validity().not_after.timestamp(),
            (now + chrono::Duration::days(90)).timestamp()
        );
    }
}

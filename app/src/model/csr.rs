//! The names a CertificateRequest asks for, read from the PKCS#10 request in `spec.request`
//! (base64 of a PEM block, as cert-manager stores it).

use base64::Engine;
use x509_parser::extensions::{GeneralName, ParsedExtension};
use x509_parser::prelude::FromDer;
use x509_parser::x509::X509Name;

/// DNS names (subject alternative names, else the common name); empty when unreadable.
pub(crate) fn requested_names(spec_request: &str) -> Vec<String> {
    let Ok(pem_bytes) = base64::engine::general_purpose::STANDARD.decode(spec_request.trim())
    else {
        return Vec::new();
    };
    let Ok((_, pem)) = x509_parser::pem::parse_x509_pem(&pem_bytes) else {
        return Vec::new();
    };
    let Ok((_, csr)) =
        x509_parser::certification_request::X509CertificationRequest::from_der(&pem.contents)
    else {
        return Vec::new();
    };
    let mut names = Vec::new();
    if let Some(extensions) = csr.requested_extensions() {
        for ext in extensions {
            if let ParsedExtension::SubjectAlternativeName(san) = ext {
                for n in &san.general_names {
                    if let GeneralName::DNSName(d) = n {
                        names.push(d.to_string());
                    }
                }
            }
        }
    }
    if names.is_empty() {
        names.extend(common_names(&csr.certification_request_info.subject));
    }
    names
}

fn common_names(subject: &X509Name<'_>) -> Vec<String> {
    subject
        .iter_common_name()
        .filter_map(|cn| cn.as_str().ok().map(str::to_string))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::requested_names;

    #[test]
    fn garbage_yields_no_names() {
        assert!(requested_names("not base64!").is_empty());
        assert!(requested_names("aGVsbG8=").is_empty());
    }
}

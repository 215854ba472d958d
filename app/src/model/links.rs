//! Lookout's own URLs: percent-encoding of path segments and query values, and the pages
//! objects have. Pages, components and the read model (problems' next actions) build links
//! with these.

/// Percent-encodes everything but unreserved URL characters.
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    encode_into(&mut out, s);
    out
}

pub fn encode_into(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push('%');
            out.push(HEX[usize::from(b >> 4)] as char);
            out.push(HEX[usize::from(b & 15)] as char);
        }
    }
}

/// The list a kind's detail pages live under (`/ingresses/{cluster}/{namespace}/{name}`),
/// for the kinds Lookout has a page for.
pub fn detail_pages(kind: &str) -> Option<&'static str> {
    match crate::model::Kind::from_name(kind)? {
        crate::model::Kind::Ingress => Some("ingresses"),
        crate::model::Kind::Certificate => Some("certificates"),
        _ => None,
    }
}

/// The page of an object, for the kinds Lookout has one for.
pub fn object_path(kind: &str, cluster: &str, namespace: &str, name: &str) -> Option<String> {
    let base = detail_pages(kind)?;
    Some(format!(
        "/{base}/{}/{}/{}",
        encode(cluster),
        encode(namespace),
        encode(name)
    ))
}

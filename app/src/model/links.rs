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
        crate::model::Kind::Gateway => Some("gateways"),
        crate::model::Kind::ManagedResource
        | crate::model::Kind::ClusterPolicy
        | crate::model::Kind::Policy
        | crate::model::Kind::MutatingPolicy => Some("policies"),
        _ => None,
    }
}

/// The page of an object, for the kinds Lookout has one for.
pub fn object_path(kind: &str, cluster: &str, namespace: &str, name: &str) -> Option<String> {
    match crate::model::Kind::from_name(kind)? {
        crate::model::Kind::ClusterIssuer => return Some(issuer_path(cluster, None, name)),
        crate::model::Kind::Issuer => return Some(issuer_path(cluster, Some(namespace), name)),
        _ => {}
    }
    let base = detail_pages(kind)?;
    // A cluster-scoped object's namespace is `_` in a path.
    let namespace = if namespace.is_empty() { "_" } else { namespace };
    Some(format!(
        "/{base}/{}/{}/{}",
        encode(cluster),
        encode(namespace),
        encode(name)
    ))
}

/// The page of an issuer (`namespace` None: a ClusterIssuer, `_` in the path).
pub fn issuer_path(cluster: &str, namespace: Option<&str>, name: &str) -> String {
    format!(
        "/issuers/{}/{}/{}",
        encode(cluster),
        namespace.map(encode).unwrap_or_else(|| "_".into()),
        encode(name)
    )
}

/// Upstream issues the explanations cite, by the short names they use, and their GitHub
/// repositories.
const REPOSITORIES: &[(&str, &str)] = &[
    ("cert-manager", "cert-manager/cert-manager"),
    ("cilium", "cilium/cilium"),
    ("cilium/cilium", "cilium/cilium"),
    ("cilium/proxy", "cilium/proxy"),
    ("letsencrypt/boulder", "letsencrypt/boulder"),
    ("tailscale", "tailscale/tailscale"),
];

/// A piece of an explanation: text, or a cited upstream issue with its URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cited<'a> {
    Text(&'a str),
    Issue { label: &'a str, url: String },
}

/// Splits `text` at the upstream issues it cites (`cert-manager#6805`,
/// `cilium/cilium#42950`), so that pages can link them.
pub fn citations(text: &str) -> Vec<Cited<'_>> {
    let mut out = Vec::new();
    let mut rest = 0;
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(off) = text[i..].find('#') {
        let hash = i + off;
        let digits = text[hash + 1..]
            .bytes()
            .take_while(u8::is_ascii_digit)
            .count();
        let start = text[..hash]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '/'))
            .map_or(0, |p| p + 1);
        let name = &text[start..hash];
        let repo = REPOSITORIES.iter().find(|(short, _)| *short == name);
        match repo {
            Some((_, repo)) if digits > 0 && start >= rest => {
                let end = hash + 1 + digits;
                if start > rest {
                    out.push(Cited::Text(&text[rest..start]));
                }
                out.push(Cited::Issue {
                    label: &text[start..end],
                    url: format!("https://github.com/{repo}/issues/{}", &text[hash + 1..end]),
                });
                rest = end;
                i = end;
            }
            _ => i = hash + 1,
        }
        if i >= bytes.len() {
            break;
        }
    }
    if rest < text.len() {
        out.push(Cited::Text(&text[rest..]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cited_issues_become_links_and_the_rest_stays_text() {
        let text = "merges them (cilium/cilium#35347), see cert-manager#466; not #12 or foo#3.";
        let parts = citations(text);
        assert_eq!(
            parts,
            [
                Cited::Text("merges them ("),
                Cited::Issue {
                    label: "cilium/cilium#35347",
                    url: "https://github.com/cilium/cilium/issues/35347".into()
                },
                Cited::Text("), see "),
                Cited::Issue {
                    label: "cert-manager#466",
                    url: "https://github.com/cert-manager/cert-manager/issues/466".into()
                },
                Cited::Text("; not #12 or foo#3."),
            ]
        );
        assert_eq!(citations("no citation"), [Cited::Text("no citation")]);
        assert_eq!(
            citations("ends with cilium#"),
            [Cited::Text("ends with cilium#")]
        );
    }

    #[test]
    fn every_rule_of_the_readme_is_a_rule_with_upstream_docs() {
        let readme = include_str!("../../../README.md");
        let table = readme.split("| area | rules |").nth(1).unwrap();
        let rules: Vec<&str> = table
            .lines()
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .flat_map(|l| l.split('`').skip(1).step_by(2))
            .collect();
        assert!(rules.len() > 25, "{rules:?}");
        for id in &rules {
            let rule = crate::model::Rule::parse(id).unwrap_or_else(|| panic!("{id} is no rule"));
            assert!(rule.info().docs.1.starts_with("https://"), "{id}");
        }
        assert_eq!(
            rules.len(),
            crate::model::Rule::ALL.len(),
            "every rule is in the README"
        );
    }
}

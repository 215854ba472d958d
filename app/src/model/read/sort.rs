//! Sort orders of the lists. `sort=key` sorts in the key's natural direction (names A→Z,
//! the most severe or the soonest expiry first); `sort=-key` reverses it. Ties fall back to
//! cluster, namespace and name, so a page never reorders between two renders.

use std::cmp::Ordering;

use super::views::{CertificateRow, IngressRow};
use crate::model::choice::{choice, Choice};
use crate::model::finding::sort_by_urgency;
use crate::model::Finding;

/// A sort order from the query string: `sort=key` or `sort=-key` (reversed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sort<K> {
    pub key: K,
    pub reversed: bool,
}

impl<K: Choice> Sort<K> {
    /// Parses `key` or `-key`.
    pub fn parse(value: &str) -> Option<Sort<K>> {
        let (name, reversed) = match value.strip_prefix('-') {
            Some(rest) => (rest, true),
            None => (value, false),
        };
        K::parse(name).map(|key| Sort { key, reversed })
    }

    /// As a query-string value.
    pub fn param(&self) -> String {
        if self.reversed {
            format!("-{}", self.key.label())
        } else {
            self.key.label().to_string()
        }
    }

    fn apply(&self, ord: Ordering) -> Ordering {
        if self.reversed {
            ord.reverse()
        } else {
            ord
        }
    }
}

impl<'de, K: Choice> serde::Deserialize<'de> for Sort<K> {
    /// `key` or `-key`; anything else is an error that lists the keys.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Sort::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "{text:?} is not one of: {} (a leading - reverses)",
                K::labels().join(", ")
            ))
        })
    }
}

choice!(
    /// Keys of the Ingress list; the first is the default.
    IngressSort { Cluster = "cluster", Namespace = "namespace", Name = "name", Host = "host", Health = "health" }
);

choice!(
    /// Keys of the Certificate list; the first is the default.
    CertificateSort { Cluster = "cluster", Namespace = "namespace", Name = "name", Expiry = "expiry", Health = "health" }
);

choice!(
    /// Keys of the findings (triage board); the first is the default.
    FindingSort { Urgency = "urgency", Since = "since", Cluster = "cluster", Rule = "rule" }
);

choice!(
    /// Keys of the challenge history; the first is the default.
    ChallengeSort { Recent = "recent", Domain = "domain", State = "state" }
);

/// Severity rank for "health": the most severe first, healthy last.
fn health_rank(worst: Option<crate::model::Severity>) -> (bool, Option<crate::model::Severity>) {
    (worst.is_none(), worst)
}

/// Sorts Ingress rows; `cluster_order` is the configured order of the clusters.
pub fn ingresses(
    rows: &mut [IngressRow],
    sort: Option<Sort<IngressSort>>,
    cluster_order: &[String],
) {
    let rank = |c: &str| cluster_order.iter().position(|n| n == c);
    let identity = |r: &IngressRow| {
        let i = &r.ingress;
        (rank(&i.cluster), i.namespace.clone(), i.name.clone())
    };
    let Some(sort) = sort else {
        rows.sort_by_cached_key(identity);
        return;
    };
    rows.sort_by(|a, b| {
        let (x, y) = (&a.ingress, &b.ingress);
        let primary = match sort.key {
            IngressSort::Cluster => Ordering::Equal,
            IngressSort::Namespace => x.namespace.cmp(&y.namespace),
            IngressSort::Name => x.name.cmp(&y.name),
            IngressSort::Host => x.hosts.first().cmp(&y.hosts.first()),
            IngressSort::Health => health_rank(a.severity)
                .cmp(&health_rank(b.severity))
                .then(b.findings.cmp(&a.findings)),
        };
        sort.apply(primary.then_with(|| identity(a).cmp(&identity(b))))
    });
}

/// Sorts Certificate rows; "expiry" puts the soonest `notAfter` first and unknown last.
pub fn certificates(
    rows: &mut [CertificateRow],
    sort: Option<Sort<CertificateSort>>,
    cluster_order: &[String],
) {
    let rank = |c: &str| cluster_order.iter().position(|n| n == c);
    let identity = |r: &CertificateRow| {
        let c = &r.certificate;
        (rank(&c.cluster), c.namespace.clone(), c.name.clone())
    };
    let Some(sort) = sort else {
        rows.sort_by_cached_key(identity);
        return;
    };
    rows.sort_by(|a, b| {
        let (x, y) = (&a.certificate, &b.certificate);
        let primary = match sort.key {
            CertificateSort::Cluster => Ordering::Equal,
            CertificateSort::Namespace => x.namespace.cmp(&y.namespace),
            CertificateSort::Name => x.name.cmp(&y.name),
            CertificateSort::Expiry => {
                (x.not_after.is_none(), x.not_after).cmp(&(y.not_after.is_none(), y.not_after))
            }
            CertificateSort::Health => health_rank(a.severity).cmp(&health_rank(b.severity)),
        };
        sort.apply(primary.then_with(|| identity(a).cmp(&identity(b))))
    });
}

/// Sorts findings: by urgency (default), by `since` (newest first), cluster or rule.
pub fn findings(findings: &mut [Finding], sort: Option<Sort<FindingSort>>) {
    sort_by_urgency(findings);
    let Some(sort) = sort else { return };
    findings.sort_by(|a, b| {
        let primary = match sort.key {
            FindingSort::Urgency => Ordering::Equal,
            FindingSort::Since => (b.since.is_some(), b.since).cmp(&(a.since.is_some(), a.since)),
            FindingSort::Cluster => a.cluster.cmp(&b.cluster),
            FindingSort::Rule => a.rule.id().cmp(b.rule.id()),
        };
        sort.apply(primary)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Rule;
    use crate::model::Severity;

    #[test]
    fn keys_parse_with_an_optional_minus_and_nothing_else() {
        assert_eq!(
            Sort::<CertificateSort>::parse("-expiry"),
            Some(Sort {
                key: CertificateSort::Expiry,
                reversed: true
            })
        );
        assert_eq!(Sort::<IngressSort>::parse("host").unwrap().param(), "host");
        assert_eq!(Sort::<IngressSort>::parse("expiry"), None);
        assert_eq!(Sort::<IngressSort>::parse("--name"), None);
    }

    fn finding(name: &str, severity: Severity, since: Option<i64>) -> Finding {
        Finding {
            rule: Rule::CertNotReady,
            severity,
            cluster: "zrh".into(),
            namespace: "shop".into(),
            kind: crate::model::Kind::Certificate.into(),
            name: name.into(),
            title: "".into(),
            message: "".into(),
            remediation: "".into(),
            since: since.map(|s| chrono::DateTime::from_timestamp(s, 0).unwrap()),
            commands: None,
            host: None,
        }
    }

    #[test]
    fn findings_sort_by_urgency_or_by_since_newest_first_and_reversed() {
        let mut fs = vec![
            finding("old-warning", Severity::Warning, Some(100)),
            finding("unknown", Severity::Critical, None),
            finding("new-critical", Severity::Critical, Some(300)),
            finding("old-critical", Severity::Critical, Some(200)),
        ];
        let names = |fs: &[Finding]| fs.iter().map(|f| f.name.to_string()).collect::<Vec<_>>();
        findings(&mut fs, None);
        assert_eq!(
            names(&fs),
            ["old-critical", "new-critical", "unknown", "old-warning"]
        );
        findings(&mut fs, Sort::parse("since"));
        assert_eq!(
            names(&fs),
            ["new-critical", "old-critical", "old-warning", "unknown"]
        );
        findings(&mut fs, Sort::parse("-since"));
        assert_eq!(
            names(&fs),
            ["unknown", "old-warning", "old-critical", "new-critical"]
        );
    }
}

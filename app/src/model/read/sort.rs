//! Sort orders of the lists. `sort=key` sorts in the key's natural direction (names A→Z,
//! the most severe or the soonest expiry first); `sort=-key` reverses it. Ties fall back to
//! cluster, namespace and name, so a page never reorders between two renders.

use std::cmp::Ordering;

use super::views::{CertificateRow, IngressRow};
use crate::model::finding::sort_by_urgency;
use crate::model::Finding;

/// A sort order from the query string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sort {
    pub key: &'static str,
    pub reversed: bool,
}

impl Sort {
    /// Parses `key` or `-key` against the keys a list accepts.
    pub fn parse(value: &str, keys: &[&'static str]) -> Option<Sort> {
        let (name, reversed) = match value.strip_prefix('-') {
            Some(rest) => (rest, true),
            None => (value, false),
        };
        keys.iter()
            .find(|k| **k == name)
            .map(|key| Sort { key, reversed })
    }

    /// As a query-string value.
    pub fn param(&self) -> String {
        if self.reversed {
            format!("-{}", self.key)
        } else {
            self.key.to_string()
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

/// Keys of the Ingress list; the first is the default.
pub const INGRESS_SORTS: &[&str] = &["cluster", "namespace", "name", "host", "health"];
/// Keys of the Certificate list; the first is the default.
pub const CERTIFICATE_SORTS: &[&str] = &["cluster", "namespace", "name", "expiry", "health"];
/// Keys of the findings (triage board); the first is the default.
pub const FINDING_SORTS: &[&str] = &["urgency", "since", "cluster", "rule"];

/// Keys of the challenge history; the first is the default.
pub const CHALLENGE_SORTS: &[&str] = &["recent", "domain", "state"];

/// Severity rank for "health": the most severe first, healthy last.
fn health_rank(worst: Option<crate::model::Severity>) -> (bool, Option<crate::model::Severity>) {
    (worst.is_none(), worst)
}

/// Sorts Ingress rows; `cluster_order` is the configured order of the clusters.
pub fn ingresses(rows: &mut [IngressRow], sort: Option<Sort>, cluster_order: &[String]) {
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
            "namespace" => x.namespace.cmp(&y.namespace),
            "name" => x.name.cmp(&y.name),
            "host" => x.hosts.first().cmp(&y.hosts.first()),
            "health" => health_rank(a.worst)
                .cmp(&health_rank(b.worst))
                .then(b.findings.cmp(&a.findings)),
            _ => Ordering::Equal,
        };
        sort.apply(primary.then_with(|| identity(a).cmp(&identity(b))))
    });
}

/// Sorts Certificate rows; "expiry" puts the soonest `notAfter` first and unknown last.
pub fn certificates(rows: &mut [CertificateRow], sort: Option<Sort>, cluster_order: &[String]) {
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
            "namespace" => x.namespace.cmp(&y.namespace),
            "name" => x.name.cmp(&y.name),
            "expiry" => {
                (x.not_after.is_none(), x.not_after).cmp(&(y.not_after.is_none(), y.not_after))
            }
            "health" => health_rank(a.worst).cmp(&health_rank(b.worst)),
            _ => Ordering::Equal,
        };
        sort.apply(primary.then_with(|| identity(a).cmp(&identity(b))))
    });
}

/// Sorts findings: by urgency (default), by `since` (newest first), cluster or rule.
pub fn findings(findings: &mut [Finding], sort: Option<Sort>) {
    sort_by_urgency(findings);
    let Some(sort) = sort else { return };
    findings.sort_by(|a, b| {
        let primary = match sort.key {
            "since" => (b.since.is_some(), b.since).cmp(&(a.since.is_some(), a.since)),
            "cluster" => a.cluster.cmp(&b.cluster),
            "rule" => a.rule.cmp(b.rule),
            _ => Ordering::Equal,
        };
        sort.apply(primary)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Severity;

    #[test]
    fn keys_parse_with_an_optional_minus_and_nothing_else() {
        assert_eq!(
            Sort::parse("-expiry", CERTIFICATE_SORTS),
            Some(Sort {
                key: "expiry",
                reversed: true
            })
        );
        assert_eq!(Sort::parse("host", INGRESS_SORTS).unwrap().param(), "host");
        assert_eq!(Sort::parse("expiry", INGRESS_SORTS), None);
        assert_eq!(Sort::parse("--name", INGRESS_SORTS), None);
    }

    fn finding(name: &str, severity: Severity, since: Option<i64>) -> Finding {
        Finding {
            rule: "cert.not-ready",
            severity,
            cluster: "zrh".into(),
            namespace: "shop".into(),
            kind: "Certificate".into(),
            name: name.into(),
            title: "".into(),
            message: "".into(),
            remediation: "".into(),
            since: since.map(|s| chrono::DateTime::from_timestamp(s, 0).unwrap()),
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
        findings(&mut fs, Sort::parse("since", FINDING_SORTS));
        assert_eq!(
            names(&fs),
            ["new-critical", "old-critical", "old-warning", "unknown"]
        );
        findings(&mut fs, Sort::parse("-since", FINDING_SORTS));
        assert_eq!(
            names(&fs),
            ["unknown", "old-warning", "old-critical", "new-critical"]
        );
    }
}

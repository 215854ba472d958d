//! A finding: one rule firing on one object.

use super::kind::Kind;
use super::rule::Rule;
use super::text::Text;
use chrono::{DateTime, Utc};
use serde::Serialize;

/// How urgent a finding is. Ordered: `Critical` sorts first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Critical,
    Warning,
    Info,
}

impl<'de> serde::Deserialize<'de> for Severity {
    /// `critical`, `warning` or `info`; anything else is an error that lists them.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <String as serde::Deserialize>::deserialize(d)?;
        Severity::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format!("{text:?} is not one of: critical, warning, info"))
        })
    }
}

impl Severity {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "critical" => Some(Severity::Critical),
            "warning" => Some(Severity::Warning),
            "info" => Some(Severity::Info),
            _ => None,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Severity::Critical => "critical",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }

    /// The icon shown beside the word (never colour alone).
    pub fn icon(self) -> &'static str {
        match self {
            Severity::Critical => "✖",
            Severity::Warning => "▲",
            Severity::Info => "ℹ",
        }
    }
}

/// What a finding is about: the cluster itself, or one of its objects of a watched kind.
/// Serialized as the kind's name (`"Ingress"`, …), `"Cluster"` for the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Subject {
    Cluster,
    Object(Kind),
}

impl Subject {
    /// `"Cluster"`, or the kind's name.
    pub const fn name(self) -> &'static str {
        match self {
            Subject::Cluster => "Cluster",
            Subject::Object(k) => k.name(),
        }
    }

    /// The kind, when the subject is an object.
    pub const fn kind(self) -> Option<Kind> {
        match self {
            Subject::Cluster => None,
            Subject::Object(k) => Some(k),
        }
    }
}

impl From<Kind> for Subject {
    fn from(k: Kind) -> Self {
        Subject::Object(k)
    }
}

impl std::fmt::Display for Subject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Subject {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Subject {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        match &*name {
            "Cluster" => Ok(Subject::Cluster),
            other => Kind::from_name(other).map(Subject::Object).ok_or_else(|| {
                serde::de::Error::custom(format!("{other:?} is not a kind Lookout knows"))
            }),
        }
    }
}

impl PartialEq<Kind> for Subject {
    fn eq(&self, other: &Kind) -> bool {
        *self == Subject::Object(*other)
    }
}

/// One rule firing on one object, with its evidence and what to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub rule: Rule,
    pub severity: Severity,
    pub cluster: Text,
    /// Empty for cluster-scoped objects and the cluster itself.
    pub namespace: Text,
    pub kind: Subject,
    pub name: Text,
    /// One line.
    pub title: Text,
    /// The explanation with the evidence: field values, reason texts, times.
    pub message: Text,
    pub remediation: Text,
    /// Since when the condition holds, when known.
    pub since: Option<DateTime<Utc>>,
    /// The remediation as shell lines (commands and `#` comments) when the judgement could
    /// write the change in full — a manifest to apply server-side, a patch — for whoever
    /// makes it by hand or in Git. Only in the words the finding's readers may see.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commands: Option<Text>,
    /// The one host the finding is about, when it is about one host of an object that
    /// serves several (a Gateway listener's hostname, a probed host): what lets the probe's
    /// observation of a host join the problem of that host's listener.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<Text>,
}

impl Finding {
    /// Whether only callers who see every namespace of its cluster may see it: a finding
    /// about a cluster-scoped object may name objects of any namespace. That its cluster is
    /// unreachable is told to anyone who sees the cluster at all.
    pub fn needs_whole_cluster(&self) -> bool {
        self.namespace.is_empty() && self.rule != Rule::ClusterUnreachable
    }
}

/// A finding of a shared list, held by its place in the list: how a problem keeps its root
/// and symptoms — 16 bytes each instead of a copy of the finding beside the list it came
/// from. Reads, compares and serializes as the finding itself.
#[derive(Clone)]
pub struct FindingRef {
    list: std::sync::Arc<Vec<Finding>>,
    at: u32,
}

impl FindingRef {
    /// `finding`, which must be an element of `list`, by its place there.
    pub fn of(list: &std::sync::Arc<Vec<Finding>>, finding: &Finding) -> FindingRef {
        let size = std::mem::size_of::<Finding>();
        let offset = (finding as *const Finding as usize).wrapping_sub(list.as_ptr() as usize);
        let at = offset / size;
        assert!(
            offset.is_multiple_of(size) && at < list.len() && std::ptr::eq(&list[at], finding),
            "a finding held by reference must come from the list it is held in"
        );
        FindingRef {
            list: list.clone(),
            at: u32::try_from(at).expect("fewer than 2^32 findings in a list"),
        }
    }

    /// A list of its own for a finding that is in none (a fleet-wide one).
    pub fn alone(finding: Finding) -> FindingRef {
        FindingRef {
            list: std::sync::Arc::new(vec![finding]),
            at: 0,
        }
    }
}

impl std::ops::Deref for FindingRef {
    type Target = Finding;

    fn deref(&self) -> &Finding {
        &self.list[self.at as usize]
    }
}

impl std::fmt::Debug for FindingRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

impl PartialEq for FindingRef {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Serialize for FindingRef {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(s)
    }
}

/// Orders findings by urgency: severity, then the oldest first, then by object.
pub fn sort_by_urgency(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        a.severity
            .cmp(&b.severity)
            .then(a.since.is_none().cmp(&b.since.is_none()))
            .then(a.since.cmp(&b.since))
            .then(
                (&a.cluster, &a.namespace, &a.kind, &a.name, a.rule.id()).cmp(&(
                    &b.cluster,
                    &b.namespace,
                    &b.kind,
                    &b.name,
                    b.rule.id(),
                )),
            )
    });
}

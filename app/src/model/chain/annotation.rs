//! The edit-in-place annotation of an Ingress as Lookout reads it: its status, and the
//! states a list filters by.

use serde::Serialize;

use crate::model::choice::{choice, Choice};
use crate::model::text::{Text, Texts};

/// The edit-in-place annotation, as the Ingress list shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum AnnotationStatus {
    /// The Ingress asks cert-manager for no certificate.
    NotRequested,
    /// It asks for one, but cert-manager is not installed in its cluster: nothing would
    /// read the annotation.
    NotApplicable,
    /// `"true"`, owned by these field managers.
    Set { managers: Texts },
    /// `"true"`, but the Certificate was created without the override annotation.
    SetNotEffective {
        managers: Texts,
        certificates: Texts,
    },
    /// Asks for a certificate, annotation absent.
    Missing,
    /// Present with another value.
    Invalid { value: Text },
}

choice!(
    /// Which [`AnnotationStatus`] an Ingress has, without its details (`status=` filters by
    /// it).
    AnnotationState {
        NotRequested = "not-requested",
        NotApplicable = "not-applicable",
        Set = "set",
        SetNotEffective = "set-not-effective",
        Missing = "missing",
        Invalid = "invalid",
    }
);

impl AnnotationStatus {
    pub fn state(&self) -> AnnotationState {
        match self {
            AnnotationStatus::NotRequested => AnnotationState::NotRequested,
            AnnotationStatus::NotApplicable => AnnotationState::NotApplicable,
            AnnotationStatus::Set { .. } => AnnotationState::Set,
            AnnotationStatus::SetNotEffective { .. } => AnnotationState::SetNotEffective,
            AnnotationStatus::Missing => AnnotationState::Missing,
            AnnotationStatus::Invalid { .. } => AnnotationState::Invalid,
        }
    }

    pub fn label(&self) -> &'static str {
        self.state().label()
    }
}

impl AnnotationState {
    /// What the status means, in words, wherever it is shown.
    pub fn explanation(self) -> &'static str {
        match self {
            AnnotationState::NotRequested => {
                "no issuer annotation: cert-manager makes no certificate from this Ingress, so the annotation does not apply"
            }
            AnnotationState::NotApplicable => {
                "asks for a certificate, but cert-manager is not installed in its cluster"
            }
            AnnotationState::Set => "\"true\": the HTTP-01 solver is routed through this Ingress",
            AnnotationState::SetNotEffective => {
                "\"true\", but a Certificate was made before it and lacks the override: the next request still uses a separate solver"
            }
            AnnotationState::Missing => {
                "asks for a certificate and lacks the annotation where HTTPS enforcement makes HTTP-01 fail without it"
            }
            AnnotationState::Invalid => "has a value other than \"true\", which cert-manager ignores",
        }
    }
}

/// One or more annotation states (`status=missing,invalid`): the Ingress list and its CSV
/// take several at once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AnnotationStates(pub Vec<AnnotationState>);

impl AnnotationStates {
    pub fn contains(&self, s: AnnotationState) -> bool {
        self.0.contains(&s)
    }

    /// `missing,invalid`, as in URLs.
    pub fn label(&self) -> String {
        self.0
            .iter()
            .map(|s| s.label())
            .collect::<Vec<_>>()
            .join(",")
    }
}

impl<'de> serde::Deserialize<'de> for AnnotationStates {
    /// A comma-separated list of labels; any other word is an error that lists them.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use crate::model::choice::Choice;
        let text = <String as serde::Deserialize>::deserialize(d)?;
        let mut out = Vec::new();
        for word in text.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            let s = AnnotationState::parse(word).ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "{word:?} is not one of: {}",
                    AnnotationState::labels().join(", ")
                ))
            })?;
            if !out.contains(&s) {
                out.push(s);
            }
        }
        Ok(AnnotationStates(out))
    }
}

//! What an action (a fix, an undo, a renew, a bulk run) did or would do — the view types
//! the preview and result pages and the JSON API show. The server runs the actions
//! (`server/src/actions/`); this is only their shape and their words.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::model::budget::Impact;

/// The annotation the main fix sets.
pub const EDIT_IN_PLACE: &str = "acme.cert-manager.io/http01-edit-in-place";
/// What ingress-shim puts on a Certificate it creates for an edit-in-place Ingress.
pub const OVERRIDE_INGRESS_NAME: &str = "acme.cert-manager.io/http01-override-ingress-name";
pub use crate::model::certificate::ISSUE_TEMPORARY_CERTIFICATE;
/// The other two override annotations; only one of the three may be on a Certificate.
pub const OTHER_OVERRIDES: &[&str] = &[
    "acme.cert-manager.io/http01-override-ingress-class",
    "acme.cert-manager.io/http01-override-ingress-ingressclassname",
];
/// The field manager of every change Lookout makes (the model reads it in managedFields).
pub use crate::model::FIELD_MANAGER;

/// The actions Lookout offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ActionKind {
    EditInPlace,
    UndoEditInPlace,
    Renew,
    /// Deletes the in-flight CertificateRequest so that cert-manager makes a new one.
    Restart,
    BulkEditInPlace,
    BulkRenew,
}

impl ActionKind {
    pub fn label(self) -> &'static str {
        match self {
            ActionKind::EditInPlace => "edit-in-place",
            ActionKind::UndoEditInPlace => "undo-edit-in-place",
            ActionKind::Renew => "renew",
            ActionKind::Restart => "restart",
            ActionKind::BulkEditInPlace => "bulk-edit-in-place",
            ActionKind::BulkRenew => "bulk-renew",
        }
    }

    /// What it does, in words, for page titles.
    pub fn title(self) -> &'static str {
        match self {
            ActionKind::EditInPlace => "Add edit-in-place",
            ActionKind::UndoEditInPlace => "Undo edit-in-place",
            ActionKind::Renew => "Renew",
            ActionKind::Restart => "Restart issuance",
            ActionKind::BulkEditInPlace => "Add edit-in-place to many Ingresses",
            ActionKind::BulkRenew => "Renew many Certificates",
        }
    }

    pub fn is_bulk(self) -> bool {
        matches!(self, ActionKind::BulkEditInPlace | ActionKind::BulkRenew)
    }
}

/// How one step or a whole action ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Done (or, in a preview, would be done).
    Ok,
    /// Nothing to change: the object already is as wanted.
    Unchanged,
    /// Another field manager owns the field with another value.
    Conflict,
    /// Lookout will not do it (budget, already issuing, conflicting annotations, read-only).
    Refused,
    /// The object does not exist.
    NotFound,
    /// The cluster said no, or could not be reached.
    Error,
    /// A bulk run still going.
    Running,
    /// A bulk run where some items did not end `ok`/`unchanged`.
    Partial,
}

impl Outcome {
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Unchanged => "unchanged",
            Outcome::Conflict => "conflict",
            Outcome::Refused => "refused",
            Outcome::NotFound => "not-found",
            Outcome::Error => "error",
            Outcome::Running => "running",
            Outcome::Partial => "partial",
        }
    }

    /// Whether the step left things as wanted.
    pub fn succeeded(self) -> bool {
        matches!(self, Outcome::Ok | Outcome::Unchanged)
    }

    /// The worse of two outcomes (for an action made of steps).
    pub fn worst(self, other: Outcome) -> Outcome {
        let rank = |o: Outcome| match o {
            Outcome::Unchanged => 0,
            Outcome::Ok => 1,
            Outcome::Running => 2,
            Outcome::Partial => 3,
            Outcome::Refused => 4,
            Outcome::Conflict => 5,
            Outcome::NotFound => 6,
            Outcome::Error => 7,
        };
        if rank(other) > rank(self) {
            other
        } else {
            self
        }
    }
}

/// One object an action changes, and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub kind: crate::model::Kind,
    pub namespace: String,
    pub name: String,
    /// What the step does, in words.
    pub change: String,
    /// `+ path: value` / `- path: value` lines; empty when nothing changes.
    pub diff: Vec<String>,
    pub outcome: Outcome,
    /// Why it did not succeed (the manager that owns a conflicting field, the API error…).
    pub message: Option<String>,
}

/// The list a bulk run covers: its rows under its filters, exactly what the reader was
/// looking at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BulkList {
    /// The triage board (`/`): the objects of the problems its filters select.
    Board,
    /// `/ingresses`.
    Ingresses,
    /// `/certificates`.
    Certificates,
}

impl BulkList {
    pub fn label(self) -> &'static str {
        match self {
            BulkList::Board => "board",
            BulkList::Ingresses => "ingresses",
            BulkList::Certificates => "certificates",
        }
    }

    pub fn parse(s: &str) -> Option<BulkList> {
        [BulkList::Board, BulkList::Ingresses, BulkList::Certificates]
            .into_iter()
            .find(|l| l.label() == s)
    }

    /// The list's page, without filters.
    pub fn path(self) -> &'static str {
        match self {
            BulkList::Board => "/",
            BulkList::Ingresses => "/ingresses",
            BulkList::Certificates => "/certificates",
        }
    }
}

/// Where a bulk run looks: a list and its filters as that list's query string.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BulkScope {
    pub list: BulkList,
    /// The list's filters (`cluster=…&host=…`), as its page and `/api/v1` read them.
    pub filters: String,
}

impl BulkScope {
    /// The list's page with these filters: the rows the run covers.
    pub fn href(&self) -> String {
        if self.filters.is_empty() {
            self.list.path().to_string()
        } else {
            format!("{}?{}", self.list.path(), self.filters)
        }
    }
}

/// An object of a bulk run's list that the run leaves alone, and why: the single action
/// would be refused or fail there (a cause to fix first, another field manager's value, an
/// issuance already under way). Nothing is sent for it and nothing is charged to a budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skipped {
    pub object: crate::model::read::problems::ProblemObject,
    pub why: String,
}

/// An action on one object, or a bulk run over many (`items`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionRecord {
    /// Where the preview or result can be seen again (`/actions/{id}`).
    pub id: String,
    pub action: ActionKind,
    pub dry_run: bool,
    pub cluster: String,
    pub namespace: String,
    /// The object (empty for a bulk run).
    pub name: String,
    pub kind: crate::model::Kind,
    pub actor: String,
    /// Who the cluster was told the requests come from (`actions.impersonate`): the user
    /// and groups, as `alice (groups ops, team-a)`; None when Lookout sends them as itself.
    pub sent_as: Option<String>,
    pub at: DateTime<Utc>,
    pub outcome: Outcome,
    /// One line that says what happened.
    pub message: String,
    pub steps: Vec<Step>,
    /// What a renew (or a bulk renew) costs of the Let's Encrypt budgets.
    pub budget: Vec<Impact>,
    /// A renew that would exceed a budget runs only with `confirm_budget`.
    pub needs_confirmation: bool,
    /// The items of a bulk run.
    pub items: Vec<ActionRecord>,
    /// Items planned in a bulk run (`items.len()` of them are done).
    pub total: usize,
    /// A bulk run: the list and filters it covers.
    #[serde(default)]
    pub scope: Option<BulkScope>,
    /// A bulk run: the objects of its list it leaves alone, each with why (not in `total`).
    #[serde(default)]
    pub skipped: Vec<Skipped>,
    /// A bulk run applied from a preview: that preview's id. Such a run covers exactly the
    /// items the preview showed it would do, judged again at apply time.
    #[serde(default)]
    pub from_preview: Option<String>,
    /// What an applied action set going, step by step (request → order → challenge →
    /// issued → served by the host), as the reader sees the cluster now; empty for a
    /// preview, a bulk run, or a Certificate the reader does not see.
    /// Computed for each reader, never stored.
    #[serde(default, skip_deserializing)]
    pub progress: Vec<crate::model::read::progress::ProgressStep>,
    /// `ready` once issued and served, `failed` at the first failure, null while under way.
    #[serde(default, skip_deserializing)]
    pub settled: Option<crate::model::read::progress::Settled>,
    /// When the follow-through settled; null while under way. Computed for each reader.
    #[serde(default, skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub settled_at: Option<DateTime<Utc>>,
    /// The follow-through as it first settled, kept with the record: from then on a reader
    /// who sees the Certificate is shown it, so a settled page no longer moves (a later
    /// renewal of the Certificate does not reopen it). Stored, never sent to readers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_progress: Option<FinalProgress>,
}

/// A follow-through that settled: its steps, how it ended, and when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FinalProgress {
    pub at: DateTime<Utc>,
    pub steps: Vec<crate::model::read::progress::ProgressStep>,
    pub settled: crate::model::read::progress::Settled,
}

impl ActionRecord {
    /// Whether someone other than its actor may read this record through `view`: a single
    /// action when they see its object's namespace; a bulk run when they see every cluster it
    /// covered whole (each item and each object it left alone), as its actor's list did —
    /// one that covered nothing only by whoever sees everything.
    pub fn readable_through(&self, view: &crate::model::view::View) -> bool {
        if !self.action.is_bulk() {
            return view.sees(&self.cluster, &self.namespace);
        }
        if view.sees_everything() {
            return true;
        }
        let mut clusters = self
            .items
            .iter()
            .map(|i| i.cluster.as_str())
            .chain(self.skipped.iter().map(|s| &*s.object.cluster))
            .chain((!self.cluster.is_empty()).then_some(self.cluster.as_str()))
            .peekable();
        clusters.peek().is_some() && clusters.all(|c| view.sees_cluster_wide(c))
    }

    /// The `+`/`-` lines of every step, for the audit log.
    pub fn diff_text(&self) -> String {
        self.steps
            .iter()
            .filter(|s| !s.diff.is_empty())
            .map(|s| {
                format!(
                    "{} {}/{}:\n{}",
                    s.kind,
                    s.namespace,
                    s.name,
                    s.diff.join("\n")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The first message of a step that did not succeed.
    pub fn error_text(&self) -> Option<String> {
        self.steps
            .iter()
            .find(|s| !s.outcome.succeeded())
            .and_then(|s| s.message.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_outcome_wins() {
        assert_eq!(Outcome::Ok.worst(Outcome::Unchanged), Outcome::Ok);
        assert_eq!(Outcome::Ok.worst(Outcome::Conflict), Outcome::Conflict);
        assert_eq!(Outcome::Error.worst(Outcome::Refused), Outcome::Error);
        assert!(Outcome::Unchanged.succeeded() && !Outcome::Refused.succeeded());
    }
}

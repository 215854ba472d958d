//! What belongs to the whole fleet rather than to one cluster: the change counter that live
//! updates wait on, and the Let's Encrypt budgets (Let's Encrypt counts across accounts, so
//! a budget is the fleet's). `app.rs` makes both and hands them to whoever changes or reads
//! them.

use std::sync::{Arc, RwLock};

use lookout_app::model::budget::{as_seen_by, impact, Budget, Impact, Origin, Planned};
use lookout_app::model::read::Visibility;
use lookout_app::model::View;
use lookout_app::ports::BudgetReader;
use tokio::sync::watch;

/// Counts every change of anything Lookout shows: a cluster's data or state, the budgets, an
/// action's progress. Live updates (SSE) wake on it; pages carry the count they were
/// rendered at.
#[derive(Debug, Clone)]
pub struct Changes(Arc<watch::Sender<u64>>);

impl Default for Changes {
    fn default() -> Self {
        Changes(Arc::new(watch::Sender::new(0)))
    }
}

impl Changes {
    /// Something changed.
    pub fn touch(&self) {
        self.0.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// The count now.
    pub fn revision(&self) -> u64 {
        *self.0.borrow()
    }

    /// A receiver that wakes on every change.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.0.subscribe()
    }
}

/// The Let's Encrypt budgets, recomputed from the history by the budget task.
#[derive(Debug, Default)]
pub struct Budgets {
    current: RwLock<Vec<Budget>>,
    changes: Changes,
}

impl Budgets {
    pub fn new(changes: Changes) -> Self {
        Budgets {
            current: RwLock::default(),
            changes,
        }
    }

    /// Replaces the budgets (a change when they differ).
    pub fn set(&self, budgets: Vec<Budget>) {
        let mut current = self.current.write().expect("budgets lock");
        if *current != budgets {
            *current = budgets;
            self.changes.touch();
        }
    }

    /// Every budget, whoever may see it: for the rules and the actions' previews. Pages read
    /// them through [`BudgetReader`], scoped.
    pub fn all(&self) -> Vec<Budget> {
        self.current.read().expect("budgets lock").clone()
    }
}

impl Budgets {
    /// What planned issuances would cost of the budgets, as `view` may see it: the counts
    /// are the fleet's (the limits are shared); a caller who does not see everything reads
    /// them through [`Budget::for_viewer`] — how many came from elsewhere, not from where,
    /// nor when.
    pub fn impact_seen(&self, view: &View, planned: &[Planned]) -> Vec<Impact> {
        let mut out = impact(&self.all(), planned);
        self.render_seen(view, &mut out);
        out
    }

    /// Impacts kept in someone else's record, rendered through `view`'s sight of the
    /// current budgets (unchanged for whoever sees everything).
    pub fn render_seen(&self, view: &View, impacts: &mut [Impact]) {
        if let Some(sees) = partial(view) {
            as_seen_by(impacts, &self.all(), sees);
        }
    }
}

/// Whether an origin is `view`'s own — None for a caller who sees everything, who reads the
/// budgets as they are.
fn partial(view: &View) -> Option<impl Fn(&Origin) -> bool + '_> {
    (!view.sees_everything()).then_some(|o: &Origin| {
        Visibility::of(view, &o.cluster).is_some_and(|v| v.namespace(&o.namespace))
    })
}

impl BudgetReader for Budgets {
    /// Whoever sees everything gets every budget; anyone else the budgets their own objects
    /// spent, with how many of the counted spends came from elsewhere — never from where or
    /// when ([`Budget::for_viewer`]).
    fn budgets(&self, view: &View) -> Vec<Budget> {
        let all = self.all();
        match partial(view) {
            None => all,
            Some(sees) => all.iter().filter_map(|b| b.for_viewer(&sees)).collect(),
        }
    }
}

//! What belongs to the whole fleet rather than to one cluster: the change counter that live
//! updates wait on, and the Let's Encrypt budgets (Let's Encrypt counts across accounts, so
//! a budget is the fleet's). `app.rs` makes both and hands them to whoever changes or reads
//! them.

use std::sync::{Arc, RwLock};

use lookout_app::model::budget::Budget;
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

impl BudgetReader for Budgets {
    /// Whoever sees everything gets every budget; anyone else the budgets their own objects
    /// spent, with how many of the counted spends came from elsewhere — never from where or
    /// when ([`Budget::for_viewer`]).
    fn budgets(&self, view: &View) -> Vec<Budget> {
        let all = self.all();
        if view.sees_everything() {
            return all;
        }
        all.iter()
            .filter_map(|b| {
                b.for_viewer(|o| {
                    Visibility::of(view, &o.cluster).is_some_and(|v| v.namespace(&o.namespace))
                })
            })
            .collect()
    }
}

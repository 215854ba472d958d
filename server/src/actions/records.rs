//! An action's record as a reader may see it: their own as it is; someone else's only when
//! they may read it through their view ([`ActionRecord::readable_through`]), and then told
//! through that view.

use lookout_app::actions::ActionRecord;

use super::{Actions, Caller};

impl Actions {
    /// The record `id` as the caller may see it; None when there is no such record or it is
    /// not theirs to read (the two answer alike).
    pub async fn readable(&self, caller: &Caller, id: &str) -> Option<ActionRecord> {
        let r = self.get(id).await?;
        if r.actor == caller.actor() {
            return Some(r);
        }
        r.readable_through(&caller.view)
            .then(|| self.as_reader_sees(caller, r))
    }

    /// Someone else's record as the reader may see it. A record was made through its
    /// actor's view: its budget lines count what the actor may know (whose spends, when one
    /// frees up, another CA's address) and its message may quote cluster-wide state (an
    /// issuer's status and how many objects depend on it). A reader who does not see the
    /// whole cluster gets the budget lines through their own view of the current budgets,
    /// the steps on their own objects without the actor's words, and whom it was sent as
    /// without the actor's groups.
    fn as_reader_sees(&self, caller: &Caller, mut r: ActionRecord) -> ActionRecord {
        // A bulk run is readable only by whoever sees every cluster it covered whole.
        if r.action.is_bulk() || caller.view.sees_cluster_wide(&r.cluster) {
            return r;
        }
        self.budgets.render_seen(&caller.view, &mut r.budget);
        r.message = format!(
            "{} by {}: {}. Preview it yourself to see the details as you may see them.",
            r.action.label(),
            r.actor,
            r.outcome.label()
        );
        for s in &mut r.steps {
            s.message = None;
        }
        // Their name, as the message gives it; not their groups.
        r.sent_as = r.sent_as.as_ref().map(|_| r.actor.clone());
        r
    }
}

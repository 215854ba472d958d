//! Kubernetes' garbage collector, with its delay: a deleted owner's dependents are not
//! removed with it but a little later, by a collector that finds them orphaned
//! (`pkg/controller/garbagecollector`: background propagation, the default of a DELETE).
//! Until then they exist — an Order whose request was deleted still holds its name, which is
//! what cert-manager's next request under the same name runs into
//! (`certificaterequests/acme/acme.go`: "found Order resource not owned by this
//! CertificateRequest, retrying"). Without a delay set, deletes cascade at once.

use std::collections::HashSet;

use chrono::Duration;
use serde_json::Value;

use super::{meta_str, Cluster, ResourceType};

impl Cluster {
    /// Dependents of a deleted object are removed this long after it (None: at once).
    pub fn set_gc_delay(&self, delay: Option<Duration>) {
        *self.gc_delay.write().expect("gc delay lock") = delay;
    }

    pub(super) fn gc_delay(&self) -> Option<Duration> {
        *self.gc_delay.read().expect("gc delay lock")
    }

    /// Deletes every object whose owners are all gone, each once the delay has passed since
    /// its last owner went; returns how many. Their own dependents follow on later passes.
    pub fn collect_garbage(&self) -> usize {
        let Some(delay) = self.gc_delay() else {
            return 0;
        };
        let now = self.clock.now();
        let doomed: Vec<(ResourceType, Option<String>, String)> = {
            let mut st = self.lock();
            st.gone
                .retain(|_, at| now - *at < Duration::hours(1) + delay);
            if st.gone.is_empty() {
                return 0;
            }
            let live: HashSet<&str> = st
                .objects
                .values()
                .flat_map(|objs| objs.values())
                .filter_map(|o| meta_str(o, "uid"))
                .collect();
            let mut out = Vec::new();
            for t in &st.types {
                for ((ns, name), obj) in st
                    .objects
                    .get(&(t.group.clone(), t.plural.clone()))
                    .into_iter()
                    .flatten()
                {
                    let owners: Vec<&str> = obj
                        .pointer("/metadata/ownerReferences")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(|r| r["uid"].as_str())
                        .collect();
                    // Orphaned when every owner was deleted (and recorded so); since the
                    // last of them went.
                    let all_gone = !owners.is_empty()
                        && owners
                            .iter()
                            .all(|u| !live.contains(u) && st.gone.contains_key(*u));
                    let orphaned_since = owners.iter().filter_map(|u| st.gone.get(*u)).max();
                    if all_gone && orphaned_since.is_some_and(|at| now - *at >= delay) {
                        let ns = (!ns.is_empty()).then(|| ns.clone());
                        out.push((t.clone(), ns, name.clone()));
                    }
                }
            }
            out
        };
        let mut removed = 0;
        for (t, ns, name) in doomed {
            if self.delete(&t, ns.as_deref(), &name, false).is_ok() {
                removed += 1;
            }
        }
        removed
    }
}

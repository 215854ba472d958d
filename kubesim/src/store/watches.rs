//! Watches — the retained event window they resume from — and the faults that end or expire
//! them.

use super::*;

impl Cluster {
    /// Starts a watch: the events after `from` (or synthetic ADDED events for everything when
    /// `from` is None), and a receiver for what follows.
    pub fn watch_from(
        &self,
        rt: &ResourceType,
        sel: &Selection,
        from: Option<u64>,
    ) -> Result<WatchStart, ApiError> {
        let st = self.lock();
        let receiver = self.events.subscribe();
        let epoch = self.watch_epoch.subscribe();
        let backlog: Vec<Arc<WatchEvent>> = match from {
            None => st
                .objects
                .get(&(rt.group.clone(), rt.plural.clone()))
                .into_iter()
                .flatten()
                .filter(|(_, o)| sel.matches(o))
                .map(|((ns, _), o)| {
                    Arc::new(WatchEvent {
                        rv: st.rv,
                        group: rt.group.clone(),
                        plural: rt.plural.clone(),
                        namespace: (!ns.is_empty()).then(|| ns.clone()),
                        kind: "ADDED",
                        object: o.clone(),
                    })
                })
                .collect(),
            Some(rv) if rv < st.floor => {
                return Err(ApiError::gone(format!(
                    "too old resource version: {rv} ({})",
                    st.floor
                )));
            }
            Some(rv) if rv > st.rv => return Err(ApiError::too_large(rv, st.rv)),
            Some(rv) => st
                .log
                .iter()
                .filter(|e| {
                    e.rv > rv
                        && e.group == rt.group
                        && e.plural == rt.plural
                        && sel.matches(&e.object)
                })
                .cloned()
                .collect(),
        };
        Ok(WatchStart {
            backlog,
            receiver,
            epoch,
            start_rv: from.unwrap_or(st.rv),
        })
    }

    /// The faults in force.
    pub fn faults(&self) -> crate::faults::Faults {
        self.faults.lock().expect("faults lock").clone()
    }

    /// Switches faults on or off.
    pub fn set_faults(&self, faults: crate::faults::Faults) {
        *self.faults.lock().expect("faults lock") = faults;
    }

    /// How many requests fault injection has answered 429 so far.
    pub fn throttled(&self) -> u64 {
        self.throttled.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub(crate) fn count_throttled(&self) {
        self.throttled
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Fault injection: ends every open watch; clients resume from their resource version.
    pub fn drop_watches(&self) {
        self.watch_epoch.send_modify(|e| *e += 1);
    }

    /// Fault injection: the API server comes back on an etcd restored from an older backup —
    /// every object's resource version is handed out again from 1, lower than what clients
    /// hold, and open watches end. A client resuming from its version is told it is too large
    /// (504, `ResourceVersionTooLarge`) and must list again.
    pub fn reset_resource_versions(&self) {
        let mut st = self.lock();
        let mut rv = 0u64;
        for objects in st.objects.values_mut() {
            for obj in objects.values_mut() {
                rv += 1;
                Arc::make_mut(obj)["metadata"]["resourceVersion"] = json!(rv.to_string());
            }
        }
        st.rv = rv;
        st.floor = 0;
        st.log.clear();
        drop(st);
        self.watch_epoch.send_modify(|e| *e += 1);
    }

    /// Fault injection: ends every open watch and makes every resource version handed out so
    /// far too old, so clients must relist (a 410 Gone storm).
    pub fn expire_watches(&self) {
        let mut st = self.lock();
        st.rv += 1;
        st.floor = st.rv;
        st.log.clear();
        drop(st);
        self.watch_epoch.send_modify(|e| *e += 1);
    }
}

/// The opening of a watch stream.
pub struct WatchStart {
    pub backlog: Vec<Arc<WatchEvent>>,
    pub receiver: broadcast::Receiver<Arc<WatchEvent>>,
    /// Changes when the cluster ends all watches.
    pub epoch: watch::Receiver<u64>,
    pub start_rv: u64,
}

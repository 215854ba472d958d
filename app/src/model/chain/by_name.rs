//! A lookup table of views by namespace and name.

use std::sync::Arc;

use foldhash::{HashMap, HashMapExt};

/// Values grouped by (namespace, name) borrowed from the data, looked up with any `&str`.
pub(super) struct ByName<'a, V>(HashMap<&'a str, HashMap<&'a str, Vec<&'a Arc<V>>>>);

impl<'a, V> ByName<'a, V> {
    pub(super) fn new() -> Self {
        ByName(HashMap::new())
    }
    pub(super) fn add(&mut self, ns: &'a str, name: &'a str, v: &'a Arc<V>) {
        self.0
            .entry(ns)
            .or_default()
            .entry(name)
            .or_default()
            .push(v);
    }
    pub(super) fn get(&self, ns: &str, name: &str) -> &[&'a Arc<V>] {
        self.0
            .get(ns)
            .and_then(|m| m.get(name))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }
}

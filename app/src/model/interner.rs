//! The interner: one shared copy of each string, list of strings and issuer reference that
//! a cluster's views repeat (namespaces, kinds, issuer names, hosts, managers), so that a
//! cache of 10,000 objects holds each only once. It forgets what no view uses any more.

use std::borrow::Borrow;
use std::collections::HashSet;
use std::hash::Hash;
use std::sync::Arc;

use super::refs::IssuerRef;
use super::text::{Text, Texts};

/// Hands out one shared copy of each distinct string (and list of strings, and issuer
/// reference). Values nobody else holds any more are forgotten on [`Interner::prune`], and by
/// the interner itself whenever it has doubled since the last prune, so objects that come and
/// go never grow it without bound.
#[derive(Debug, Default)]
pub struct Interner {
    strings: Shared<str>,
    /// Lists of strings (hosts, addresses, field managers).
    lists: Shared<[Text]>,
    /// Issuer references: most objects name one of a few issuers.
    issuers: HashSet<Arc<IssuerRef>, Keyed>,
}

/// The sets' hash: foldhash, keyed per process (object names come from the clusters, so
/// the key keeps anyone from choosing colliding names), several times faster than the
/// standard library's SipHash on the short strings of objects.
type Keyed = foldhash::fast::RandomState;

/// Values a set may gain beyond twice what its last prune kept before it prunes.
const PRUNE_SLACK: usize = 1024;

/// One shared copy of each distinct value, forgetting the ones nobody else holds whenever it
/// has doubled since it last did.
#[derive(Debug)]
struct Shared<T: ?Sized> {
    set: HashSet<Arc<T>, Keyed>,
    /// Values kept by the last prune.
    kept: usize,
}

impl<T: ?Sized> Default for Shared<T> {
    fn default() -> Self {
        Shared {
            set: HashSet::default(),
            kept: 0,
        }
    }
}

impl<T: ?Sized + Hash + Eq> Shared<T> {
    fn get<V: Borrow<T> + Into<Arc<T>>>(&mut self, value: V) -> Arc<T> {
        if let Some(shared) = self.set.get(value.borrow()) {
            return shared.clone();
        }
        if self.set.len() >= 2 * self.kept + PRUNE_SLACK {
            self.prune();
        }
        let shared = value.into();
        self.set.insert(shared.clone());
        shared
    }

    fn prune(&mut self) {
        self.set.retain(|t| Arc::strong_count(t) > 1);
        self.set.shrink_to_fit();
        self.kept = self.set.len();
    }

    fn len(&self) -> usize {
        self.set.len()
    }
}

impl Interner {
    /// The shared copy of `s`.
    pub fn get(&mut self, s: &str) -> Text {
        self.strings.get(s)
    }

    /// The shared copy of an issuer reference.
    pub fn issuer(&mut self, r: IssuerRef) -> Arc<IssuerRef> {
        if let Some(shared) = self.issuers.get(&r) {
            return shared.clone();
        }
        if self.issuers.len() >= PRUNE_SLACK {
            self.issuers.retain(|t| Arc::strong_count(t) > 1);
        }
        let shared = Arc::new(r);
        self.issuers.insert(shared.clone());
        shared
    }

    /// The shared copy of a list of (interned) strings.
    pub fn list(&mut self, items: Vec<Text>) -> Texts {
        self.lists.get(items)
    }

    /// Forgets values nobody else holds (no view uses them any more).
    pub fn prune(&mut self) {
        self.strings.prune();
        self.lists.prune();
        self.issuers.retain(|t| Arc::strong_count(t) > 1);
    }

    pub fn len(&self) -> usize {
        self.strings.len()
    }

    pub fn is_empty(&self) -> bool {
        self.strings.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interned_strings_are_shared_and_pruned() {
        let mut i = Interner::default();
        let a = i.get("acme");
        let b = i.get("acme");
        assert!(Arc::ptr_eq(&a, &b));
        drop((a, b));
        i.prune();
        assert!(i.is_empty());
    }

    #[test]
    fn strings_of_objects_that_come_and_go_do_not_accumulate() {
        let mut i = Interner::default();
        let kept: Vec<Text> = (0..3000).map(|n| i.get(&format!("kept-{n}"))).collect();
        for n in 0..100_000 {
            drop(i.get(&format!("gone-{n}")));
            assert!(
                i.len() <= 2 * 3000 + PRUNE_SLACK + 1,
                "{} after {n}",
                i.len()
            );
        }
        let again = i.get("kept-7");
        assert!(Arc::ptr_eq(&again, &kept[7]), "what is held stays shared");
    }

    #[test]
    fn issuer_references_are_shared_and_do_not_accumulate() {
        let mut i = Interner::default();
        let r = |name: &str, i: &mut Interner| IssuerRef {
            kind: i.get("ClusterIssuer"),
            name: i.get(name),
            group: i.get("cert-manager.io"),
        };
        let a = {
            let v = r("letsencrypt-prod", &mut i);
            i.issuer(v)
        };
        let b = {
            let v = r("letsencrypt-prod", &mut i);
            i.issuer(v)
        };
        assert!(Arc::ptr_eq(&a, &b));
        let other = {
            let v = r("letsencrypt-staging", &mut i);
            i.issuer(v)
        };
        assert!(!Arc::ptr_eq(&a, &other));
        for n in 0..10_000 {
            let v = r(&format!("gone-{n}"), &mut i);
            drop(i.issuer(v));
            assert!(
                i.issuers.len() <= PRUNE_SLACK + 1,
                "{} after {n}",
                i.issuers.len()
            );
        }
        let again = {
            let v = r("letsencrypt-prod", &mut i);
            i.issuer(v)
        };
        assert!(Arc::ptr_eq(&again, &a), "what is held stays shared");
        drop((a, b, other, again));
        i.prune();
        assert!(i.issuers.is_empty());
    }

    #[test]
    fn lists_are_shared_and_do_not_accumulate() {
        let mut i = Interner::default();
        let hosts = |i: &mut Interner| vec![i.get("shop.example.com")];
        let a = {
            let v = hosts(&mut i);
            i.list(v)
        };
        let b = {
            let v = hosts(&mut i);
            i.list(v)
        };
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(&*a, [Text::from("shop.example.com")]);
        let empty = i.list(Vec::new());
        assert!(empty.is_empty() && Arc::ptr_eq(&empty, &i.list(Vec::new())));
        for n in 0..10_000 {
            let v = vec![i.get(&format!("gone-{n}"))];
            drop(i.list(v));
            assert!(
                i.lists.len() <= 2 * 2 + PRUNE_SLACK + 1,
                "{} after {n}",
                i.lists.len()
            );
        }
        let again = {
            let v = hosts(&mut i);
            i.list(v)
        };
        assert!(Arc::ptr_eq(&again, &a), "what is held stays shared");
    }
}

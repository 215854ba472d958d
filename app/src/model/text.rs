//! Compact text for cached views: shared immutable strings, interned when they repeat
//! (namespaces, classes, issuers, managers, hosts), and UIDs as 128-bit numbers.

use std::fmt;
use std::hash::Hash;
use std::sync::Arc;

use serde::{Serialize, Serializer};

/// An immutable string, cheap to clone and shared when interned.
pub type Text = Arc<str>;

/// An immutable list of strings, shared when interned: the hosts of an Ingress, its TLS
/// entry, its Certificate and the Certificate's request are usually one and the same list.
pub(crate) type Texts = Arc<[Text]>;

/// Whether `needle` occurs in `hay`, ASCII letters compared without case (no allocation:
/// list filters call this for every row).
pub(crate) fn contains_ignore_ascii_case(hay: &str, needle: &str) -> bool {
    let (hay, needle) = (hay.as_bytes(), needle.as_bytes());
    needle.is_empty()
        || hay
            .windows(needle.len())
            .any(|w| w.eq_ignore_ascii_case(needle))
}

/// A shell word: `s` as it is when it needs no quoting, else in single quotes.
pub fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._/=:".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// A YAML scalar that reads as `s` whatever it holds: a JSON string (YAML is a superset).
pub fn yaml_string(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// A Kubernetes UID in 16 bytes. UUIDs round-trip; anything else is hashed (and displayed as
/// the hash), which keeps equality for matching owner references.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Uid(pub u128);

impl Uid {
    pub fn parse(s: &str) -> Self {
        let hex: String = s.chars().filter(|c| *c != '-').collect();
        if hex.len() == 32 {
            if let Ok(v) = u128::from_str_radix(&hex, 16) {
                return Uid(v);
            }
        }
        // FNV-1a, 128-bit.
        let mut h: u128 = 0x6c62272e07bb014262b821756295c58d;
        for b in s.bytes() {
            h ^= u128::from(b);
            h = h.wrapping_mul(0x0000000001000000000000000000013B);
        }
        Uid(h)
    }
}

impl fmt::Display for Uid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = format!("{:032x}", self.0);
        write!(
            f,
            "{}-{}-{}-{}-{}",
            &h[0..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..]
        )
    }
}

impl Serialize for Uid {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// "1 cluster", "3 clusters": a count with its noun, never "cluster(s)".
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", noun(n, one, many))
}

/// The noun for `n` things.
pub fn noun<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 {
        one
    } else {
        many
    }
}

/// "Ingress shop and Certificate shop-tls", "a, b and c"; "nothing" for none.
pub fn and_list(items: &[String]) -> String {
    match items {
        [] => "nothing".into(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_read_as_words() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(and_list(&s(&[])), "nothing");
        assert_eq!(and_list(&s(&["Ingress shop"])), "Ingress shop");
        assert_eq!(
            and_list(&s(&["Ingress shop", "Certificate shop-tls"])),
            "Ingress shop and Certificate shop-tls"
        );
        assert_eq!(and_list(&s(&["a", "b", "c"])), "a, b and c");
    }

    #[test]
    fn contains_ignores_ascii_case_only() {
        assert!(contains_ignore_ascii_case(
            "Shop.Example.COM",
            "example.com"
        ));
        assert!(contains_ignore_ascii_case("shop", ""));
        assert!(!contains_ignore_ascii_case("shop", "shops"));
        assert!(!contains_ignore_ascii_case("bücher.example", "BÜCHER"));
        assert!(contains_ignore_ascii_case("bücher.example", "Bücher"));
    }

    #[test]
    fn uuids_round_trip_and_others_hash_consistently() {
        let s = "0685e8bb-0000-4000-8000-00000000000b";
        assert_eq!(Uid::parse(s).to_string(), s);
        assert_eq!(Uid::parse("not-a-uuid"), Uid::parse("not-a-uuid"));
        assert_ne!(Uid::parse("not-a-uuid"), Uid::parse("not-a-uuid2"));
    }
}

/// Fields most objects leave empty, in one box: a view holds one pointer for them, and the
/// box only when one of them is set. Reads as the fields (empty when there is no box).
#[derive(Debug, Clone, PartialEq)]
pub struct Rare<T: Seldom>(Option<Box<T>>);

/// A group of fields for [`Rare`]: `EMPTY` is the group with none of them set.
pub trait Seldom: Clone + PartialEq + Sync + 'static {
    const EMPTY: &'static Self;
}

impl<T: Seldom> Rare<T> {
    /// Boxes `fields` unless none is set.
    pub fn new(fields: T) -> Self {
        match fields == *T::EMPTY {
            true => Rare(None),
            false => Rare(Some(Box::new(fields))),
        }
    }

    /// The fields to change (boxed from now on).
    pub fn make_mut(&mut self) -> &mut T {
        self.0.get_or_insert_with(|| Box::new(T::EMPTY.clone()))
    }
}

impl<T: Seldom> std::ops::Deref for Rare<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.0.as_deref().unwrap_or(T::EMPTY)
    }
}

/// Serialized as the fields themselves (flattened into the view, they read as if inline).
impl<T: Seldom + Serialize> Serialize for Rare<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(s)
    }
}

impl<T: Seldom> Default for Rare<T> {
    fn default() -> Self {
        Rare(None)
    }
}

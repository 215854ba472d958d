//! Names that identify where an object lives, as types: a cluster's name and a namespace are
//! not interchangeable strings.

use std::fmt;
use std::ops::Deref;

use serde::{Deserialize, Serialize};

/// Declares a string newtype that reads as the string it holds.
macro_rules! name {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl Deref for $name {
            type Target = str;

            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                $name(s)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                $name(s.to_string())
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                &self.0 == other
            }
        }

        impl PartialEq<$name> for String {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }

        impl PartialEq<$name> for str {
            fn eq(&self, other: &$name) -> bool {
                self == other.0
            }
        }
    };
}

name!(
    /// A configured cluster's name (letters, digits, `-`, `_`, `.`: it is part of URLs).
    ClusterName
);

name!(
    /// A Kubernetes namespace (empty for cluster-scoped objects).
    Namespace
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_reads_and_serializes_as_the_string_it_holds() {
        let c = ClusterName::from("zrh-prod");
        assert_eq!(c, "zrh-prod");
        assert_eq!(c.len(), 8);
        assert_eq!(format!("cluster {c}"), "cluster zrh-prod");
        assert_eq!(serde_json::to_value(&c).unwrap(), "zrh-prod");
        let ns: Namespace = serde_json::from_value("acme-shop".into()).unwrap();
        assert_eq!(String::from("acme-shop"), ns);
    }
}

//! Closed sets of values a query parameter may take (a status, an outcome, a sort key), as
//! enums: each variant with the one spelling it has in URLs, forms and the API.

/// A value of a closed set, spelled as in URLs.
pub trait Choice: Copy + PartialEq + std::fmt::Debug + 'static {
    /// Every value, the default first where there is one.
    const ALL: &'static [Self];

    /// How the value is written in URLs, forms and the API.
    fn label(self) -> &'static str;

    /// The value written `s`, if there is one.
    fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|c| c.label() == s)
    }

    /// Every spelling, for messages and forms.
    fn labels() -> Vec<&'static str> {
        Self::ALL.iter().map(|c| c.label()).collect()
    }
}

/// Reads a [`Choice`] from its label; any other text is an error that lists the labels.
pub fn deserialize<'de, C: Choice, D: serde::Deserializer<'de>>(d: D) -> Result<C, D::Error> {
    let text = <String as serde::Deserialize>::deserialize(d)?;
    C::parse(&text).ok_or_else(|| {
        serde::de::Error::custom(format!(
            "{text:?} is not one of: {}",
            C::labels().join(", ")
        ))
    })
}

/// Declares an enum that is a [`Choice`]: `choice!(Name { Variant = "label", … })`.
macro_rules! choice {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $label:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant),+
        }

        impl $crate::model::choice::Choice for $name {
            const ALL: &'static [Self] = &[$($name::$variant),+];

            fn label(self) -> &'static str {
                match self {
                    $($name::$variant => $label),+
                }
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str($crate::model::choice::Choice::label(*self))
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                $crate::model::choice::deserialize(d)
            }
        }
    };
}

pub(crate) use choice;

#[cfg(test)]
mod tests {
    use super::*;

    choice!(
        /// For the test.
        Colour { Red = "red", DarkBlue = "dark-blue" }
    );

    #[test]
    fn a_choice_parses_its_labels_and_nothing_else() {
        assert_eq!(Colour::parse("dark-blue"), Some(Colour::DarkBlue));
        assert_eq!(Colour::parse("DarkBlue"), None);
        assert_eq!(Colour::labels(), ["red", "dark-blue"]);
        assert_eq!(serde_json::to_value(Colour::Red).unwrap(), "red");
        assert_eq!(
            serde_json::from_value::<Colour>("dark-blue".into()).unwrap(),
            Colour::DarkBlue
        );
        let wrong = serde_json::from_value::<Colour>("blue".into()).unwrap_err();
        assert_eq!(wrong.to_string(), "\"blue\" is not one of: red, dark-blue");
    }
}

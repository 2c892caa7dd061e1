//! A setting of a scripted world that an extension defines, as the scenario
//! writes it: `NAME(field: value, ...)` (`state_hash: Tau2(tables: [...])`).
//! The format reads any name and any fields; what they mean is the installed
//! extension's (see [`super::extend`]). A setting serialises exactly as the
//! enum variant it is written as would, so the scenario's key and the text
//! incidents embed do not depend on where its meaning is defined.

use std::fmt;

use serde::de::{self, Deserializer, EnumAccess, MapAccess, VariantAccess, Visitor};
use serde::ser::{SerializeStructVariant, Serializer};
use serde::{Deserialize, Serialize};

use agentsim_engine::Value;

use super::data::Data;
use super::intern::intern;

/// A setting as written: its name and its fields, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Setting {
    /// The variant's name (`Tau2`).
    pub name: &'static str,
    /// The fields and their values (`tables: [...]`).
    pub fields: Vec<(&'static str, Data)>,
}

impl Setting {
    /// A setting named `name` with `fields`.
    pub fn new(name: &str, fields: Vec<(&str, Value)>) -> Setting {
        Setting { name: intern(name), fields: fields.into_iter().map(|(k, v)| (intern(k), Data(v))).collect() }
    }

    /// The value of field `name`, if written.
    pub fn field(&self, name: &str) -> Option<&Value> {
        self.fields.iter().find(|(k, _)| *k == name).map(|(_, Data(v))| v)
    }

    /// Serialises as variant `index` of enum `enum_name` with struct fields.
    fn serialize_variant<S: Serializer>(
        &self,
        serializer: S,
        enum_name: &'static str,
        index: u32,
    ) -> Result<S::Ok, S::Error> {
        let mut variant = serializer.serialize_struct_variant(enum_name, index, self.name, self.fields.len())?;
        for (name, value) in &self.fields {
            variant.serialize_field(name, value)?;
        }
        variant.end()
    }
}

/// How a scripted world hashes its final state (`state_hash`; a `state_hash`
/// column in `trajectories.csv`): a hash an installed extension provides,
/// named (`Tau2(tables: [...])`).
#[derive(Clone, Debug, PartialEq)]
pub struct StateHash(pub Setting);

impl Serialize for StateHash {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize_variant(serializer, "StateHash", 0)
    }
}

impl<'de> Deserialize<'de> for StateHash {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<StateHash, D::Error> {
        let setting = deserializer.deserialize_enum("StateHash", &[], SettingVisitor { unit: None })?;
        Ok(StateHash(setting.expect("a state hash is never the unit variant")))
    }
}

/// How a scripted world refuses a call's arguments before the body runs:
/// by the tool's schema (the default), or in a style an installed extension
/// provides, named (`Python(class: "RetailTools")`).
#[derive(Clone, Debug, Default, PartialEq)]
pub enum ArgumentErrors {
    /// The tool's JSON schema is checked whole (types, required, unknown
    /// names when `additionalProperties` is false): a 400 naming the path.
    #[default]
    Schema,
    /// An extension's style.
    Named(Setting),
}

/// The name of [`ArgumentErrors::Schema`] as written.
const SCHEMA: &str = "Schema";

impl ArgumentErrors {
    /// Whether this is the default (the field is left out of the scenario).
    pub fn is_schema(&self) -> bool {
        *self == ArgumentErrors::Schema
    }
}

impl Serialize for ArgumentErrors {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ArgumentErrors::Schema => serializer.serialize_unit_variant("ArgumentErrors", 0, SCHEMA),
            ArgumentErrors::Named(setting) => setting.serialize_variant(serializer, "ArgumentErrors", 1),
        }
    }
}

impl<'de> Deserialize<'de> for ArgumentErrors {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ArgumentErrors, D::Error> {
        let setting = deserializer.deserialize_enum("ArgumentErrors", &[], SettingVisitor { unit: Some(SCHEMA) })?;
        Ok(setting.map_or(ArgumentErrors::Schema, ArgumentErrors::Named))
    }
}

/// Reads an enum variant of any name: `unit` (when given) as a unit variant
/// (`None`), every other name as a struct variant.
struct SettingVisitor {
    unit: Option<&'static str>,
}

impl<'de> Visitor<'de> for SettingVisitor {
    type Value = Option<Setting>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a setting: `NAME(field: value, ...)`")
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Option<Setting>, A::Error> {
        let (Identifier(name), variant) = data.variant()?;
        if self.unit == Some(name.as_str()) {
            variant.unit_variant()?;
            return Ok(None);
        }
        let fields = variant.struct_variant(&[], FieldsVisitor)?;
        Ok(Some(Setting { name: intern(&name), fields }))
    }
}

/// A name as a format writes an identifier (RON's bare `Tau2`, `tables`).
struct Identifier(String);

impl<'de> Deserialize<'de> for Identifier {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Identifier, D::Error> {
        deserializer.deserialize_identifier(IdentifierVisitor)
    }
}

struct IdentifierVisitor;

impl Visitor<'_> for IdentifierVisitor {
    type Value = Identifier;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a name")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Identifier, E> {
        Ok(Identifier(name.to_string()))
    }
}

struct FieldsVisitor;

impl<'de> Visitor<'de> for FieldsVisitor {
    type Value = Vec<(&'static str, Data)>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the setting's fields")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
        let mut fields: Vec<(&'static str, Data)> = Vec::new();
        while let Some(Identifier(name)) = map.next_key()? {
            if fields.iter().any(|(k, _)| *k == name) {
                return Err(de::Error::custom(format_args!("duplicate field `{name}`")));
            }
            let value: Data = map.next_value()?;
            fields.push((intern(&name), value));
        }
        Ok(fields)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The settings the scenario format had as enums read and write the same
    /// bytes as those enums did (their keys hash these bytes).
    #[test]
    fn settings_serialise_as_the_enums_they_replace() {
        #[derive(Serialize)]
        enum OldHash {
            Tau2 { tables: Vec<String> },
        }
        #[derive(Serialize)]
        #[allow(dead_code)]
        enum OldErrors {
            Schema,
            Python { class: String },
        }
        let hash: StateHash = ron::from_str(r#"Tau2(tables: ["b", "a"])"#).expect("reads");
        let old = OldHash::Tau2 { tables: vec!["b".into(), "a".into()] };
        assert_eq!(postcard::to_allocvec(&hash).ok(), postcard::to_allocvec(&old).ok());
        assert_eq!(ron::to_string(&hash).ok(), ron::to_string(&old).ok());
        let errors: ArgumentErrors = ron::from_str(r#"Python(class: "RetailTools")"#).expect("reads");
        let old = OldErrors::Python { class: "RetailTools".into() };
        assert_eq!(postcard::to_allocvec(&errors).ok(), postcard::to_allocvec(&old).ok());
        assert_eq!(ron::to_string(&errors).ok(), ron::to_string(&old).ok());
        assert_eq!(ron::from_str::<ArgumentErrors>("Schema").ok(), Some(ArgumentErrors::Schema));
        assert_eq!(ron::to_string(&ArgumentErrors::Schema).ok(), ron::to_string(&OldErrors::Schema).ok());
        assert!(ron::from_str::<StateHash>("Tau2(a: 1, a: 2)").is_err(), "a field written twice");
    }
}

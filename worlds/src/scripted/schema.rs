//! The JSON Schema subset a scripted tool's arguments are declared in, checked
//! before its body runs (a missing or mistyped argument is a 400, as in the
//! built-in worlds).
//!
//! Supported keywords: `type` (`string`, `integer`, `number`, `boolean`,
//! `array`, `object`, `null`), `properties`, `required`,
//! `additionalProperties` (a boolean), `items`, `enum`, `minimum`, `maximum`,
//! `minLength`, `maxLength` and `description`. Any other keyword is refused at
//! load, so a schema never silently checks less than its author thinks.

use agentsim_engine::{Value, ValueKind};

/// A JSON type name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Type {
    /// `string`
    String,
    /// `integer`
    Integer,
    /// `number` (an integer or a float)
    Number,
    /// `boolean`
    Boolean,
    /// `array`
    Array,
    /// `object`
    Object,
    /// `null`
    Null,
}

impl Type {
    fn parse(name: &str) -> Option<Type> {
        Some(match name {
            "string" => Type::String,
            "integer" => Type::Integer,
            "number" => Type::Number,
            "boolean" => Type::Boolean,
            "array" => Type::Array,
            "object" => Type::Object,
            "null" => Type::Null,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Type::String => "string",
            Type::Integer => "integer",
            Type::Number => "number",
            Type::Boolean => "boolean",
            Type::Array => "array",
            Type::Object => "object",
            Type::Null => "null",
        }
    }

    fn admits(self, value: &Value) -> bool {
        matches!(
            (self, value),
            (Type::String, Value::Str(_))
                | (Type::Integer, Value::Int(_))
                | (Type::Number, Value::Int(_) | Value::Float(_))
                | (Type::Boolean, Value::Bool(_))
                | (Type::Array, Value::List(_))
                | (Type::Object, Value::Map(_))
                | (Type::Null, Value::Null)
        )
    }

    /// The engine's kind for this type (what tool lists show).
    pub fn kind(self) -> ValueKind {
        match self {
            Type::String => ValueKind::Str,
            Type::Integer => ValueKind::Int,
            Type::Number => ValueKind::Float,
            Type::Boolean => ValueKind::Bool,
            Type::Array => ValueKind::List,
            Type::Object => ValueKind::Map,
            Type::Null => ValueKind::Null,
        }
    }
}

/// A checked schema.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Schema {
    /// The required type, if any.
    pub ty: Option<Type>,
    /// Declared properties of an object, in order.
    pub properties: Vec<(String, Schema)>,
    /// Properties that must be present.
    pub required: Vec<String>,
    /// Whether properties not declared are allowed (default true).
    pub additional: bool,
    /// The schema of every item of an array.
    pub items: Option<Box<Schema>>,
    /// The allowed values.
    pub allowed: Option<Vec<Value>>,
    /// Inclusive bounds of a number.
    pub minimum: Option<f64>,
    /// Inclusive upper bound of a number.
    pub maximum: Option<f64>,
    /// Bounds on a string's length in characters.
    pub min_length: Option<u64>,
    /// Upper bound on a string's length in characters.
    pub max_length: Option<u64>,
    /// What the value means (shown to agents).
    pub description: Option<String>,
}

fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Int(n) => Some(*n as f64),
        Value::Float(x) => Some(x.get()),
        _ => None,
    }
}

/// Why arguments do not fit a schema: the kind, the argument's path
/// (`items[2].id`, empty for the arguments whole) and the message a tool
/// call is refused with (a 400).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgumentError {
    /// What is wrong.
    pub kind: ArgumentErrorKind,
    /// The argument's path.
    pub path: String,
    message: String,
}

/// What is wrong with an argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgumentErrorKind {
    /// Not of the declared type.
    Type,
    /// Not among the `enum` values.
    NotAllowed,
    /// A number outside `minimum` and `maximum`.
    OutOfRange,
    /// A string outside `minLength` and `maxLength`.
    Length,
    /// A required argument absent.
    Missing,
    /// An argument the schema does not declare (`additionalProperties: false`).
    Unknown,
}

impl ArgumentError {
    fn new(kind: ArgumentErrorKind, path: &str, message: String) -> ArgumentError {
        ArgumentError { kind, path: path.to_string(), message }
    }
}

impl std::fmt::Display for ArgumentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ArgumentError {}

/// The message, as a refused call carries it.
impl From<ArgumentError> for String {
    fn from(e: ArgumentError) -> String {
        e.message
    }
}

/// Why a schema written as data cannot be used: the kind, the keyword's
/// path (`args.properties.id.type`) and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaError {
    /// What is wrong.
    pub kind: SchemaErrorKind,
    /// The keyword's path.
    pub path: String,
    /// What is wrong, in words (without the path).
    pub message: String,
}

/// What is wrong with a schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchemaErrorKind {
    /// A schema that is not a map.
    NotAMap,
    /// A keyword's value of the wrong shape.
    WrongValue,
    /// A `type` that is not a JSON Schema type.
    UnknownType,
    /// A keyword this subset does not support.
    UnsupportedKeyword,
    /// A `required` name the properties do not declare.
    UnknownRequired,
    /// A `minimum` above the `maximum`.
    Bounds,
}

impl SchemaError {
    fn new(kind: SchemaErrorKind, path: &str, message: impl Into<String>) -> SchemaError {
        SchemaError { kind, path: path.to_string(), message: message.into() }
    }
}

/// `` `PATH`: MESSAGE ``, as a scenario's error shows it.
impl std::fmt::Display for SchemaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`: {}", self.path, self.message)
    }
}

impl std::error::Error for SchemaError {}

impl Schema {
    /// Parses a schema written as data; errors name the keyword's path.
    pub fn parse(value: &Value, path: &str) -> Result<Schema, SchemaError> {
        let Value::Map(pairs) = value else {
            return Err(SchemaError::new(
                SchemaErrorKind::NotAMap,
                path,
                "a schema is a map such as {\"type\": \"string\"}",
            ));
        };
        let mut schema = Schema { additional: true, ..Schema::default() };
        for (key, v) in pairs {
            let at = format!("{path}.{key}");
            schema.keyword(key.as_ref(), v, &at)?;
        }
        for name in &schema.required {
            if !schema.properties.is_empty() && !schema.properties.iter().any(|(p, _)| p == name) {
                return Err(SchemaError::new(
                    SchemaErrorKind::UnknownRequired,
                    &format!("{path}.required"),
                    format!("`{name}` is not among the properties"),
                ));
            }
        }
        if let (Some(lo), Some(hi)) = (schema.minimum, schema.maximum)
            && lo > hi
        {
            return Err(SchemaError::new(SchemaErrorKind::Bounds, path, format!("minimum {lo} is above maximum {hi}")));
        }
        Ok(schema)
    }

    /// Reads one keyword of a schema written as data (`at`: its path).
    fn keyword(&mut self, key: &str, v: &Value, at: &str) -> Result<(), SchemaError> {
        match key {
            "type" => {
                let name = v
                    .as_str()
                    .ok_or_else(|| SchemaError::new(SchemaErrorKind::WrongValue, at, "expected a type name"))?;
                self.ty = Some(Type::parse(name).ok_or_else(|| {
                    let types = "string, integer, number, boolean, array, object, null";
                    SchemaError::new(SchemaErrorKind::UnknownType, at, format!("unknown type `{name}` ({types})"))
                })?);
            }
            "properties" => {
                let Value::Map(props) = v else {
                    return Err(SchemaError::new(SchemaErrorKind::WrongValue, at, "expected a map of schemas"));
                };
                for (name, prop) in props {
                    self.properties.push((name.to_string(), Schema::parse(prop, &format!("{at}.{name}"))?));
                }
            }
            "required" => {
                for item in v.as_list() {
                    let name = item
                        .as_str()
                        .ok_or_else(|| SchemaError::new(SchemaErrorKind::WrongValue, at, "expected a list of names"))?;
                    self.required.push(name.to_string());
                }
            }
            "additionalProperties" => {
                let Value::Bool(b) = v else {
                    return Err(SchemaError::new(SchemaErrorKind::WrongValue, at, "expected true or false"));
                };
                self.additional = *b;
            }
            "items" => self.items = Some(Box::new(Schema::parse(v, at)?)),
            "enum" => self.allowed = Some(v.as_list().to_vec()),
            "minimum" => {
                self.minimum = Some(
                    number(v).ok_or_else(|| SchemaError::new(SchemaErrorKind::WrongValue, at, "expected a number"))?,
                )
            }
            "maximum" => {
                self.maximum = Some(
                    number(v).ok_or_else(|| SchemaError::new(SchemaErrorKind::WrongValue, at, "expected a number"))?,
                )
            }
            "minLength" | "maxLength" => {
                let n = v.as_int().and_then(|n| u64::try_from(n).ok());
                let n = n.ok_or_else(|| {
                    SchemaError::new(SchemaErrorKind::WrongValue, at, "expected a non-negative integer")
                })?;
                if key == "minLength" { self.min_length = Some(n) } else { self.max_length = Some(n) }
            }
            "description" => self.description = v.as_str().map(str::to_string),
            other => {
                return Err(SchemaError::new(
                    SchemaErrorKind::UnsupportedKeyword,
                    at,
                    format!(
                        "keyword `{other}` is not supported (type, properties, required, \
                 additionalProperties, items, enum, minimum, maximum, minLength, maxLength, description)"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Checks `value`; the error names the argument path (`args.items[2]`).
    pub fn check(&self, value: &Value, path: &str) -> Result<(), ArgumentError> {
        self.check_at(value, &At::Root(path))
    }

    /// [`Schema::check`] at `at`, whose text is made only for an error (a call
    /// whose arguments fit builds no path).
    fn check_at(&self, value: &Value, at: &At<'_>) -> Result<(), ArgumentError> {
        if let Some(ty) = self.ty
            && !ty.admits(value)
        {
            let path = at.render();
            let message = format!("`{path}`: expected {}, found {}", ty.name(), value.render_short());
            return Err(ArgumentError::new(ArgumentErrorKind::Type, &path, message));
        }
        if let Some(allowed) = &self.allowed
            && !allowed.contains(value)
        {
            let path = at.render();
            let names: Vec<String> = allowed.iter().map(Value::render).collect();
            let message = format!("`{path}`: expected one of {}, found {}", names.join(", "), value.render_short());
            return Err(ArgumentError::new(ArgumentErrorKind::NotAllowed, &path, message));
        }
        if let Some(x) = number(value) {
            if self.minimum.is_some_and(|lo| x < lo) || self.maximum.is_some_and(|hi| x > hi) {
                let path = at.render();
                let lo = self.minimum.map_or("-inf".into(), |v| v.to_string());
                let hi = self.maximum.map_or("inf".into(), |v| v.to_string());
                let message = format!("`{path}`: {} is outside [{lo}, {hi}]", value.render());
                return Err(ArgumentError::new(ArgumentErrorKind::OutOfRange, &path, message));
            }
        }
        if let Value::Str(s) = value
            && (self.min_length.is_some() || self.max_length.is_some())
        {
            let chars = s.chars().count() as u64;
            if self.min_length.is_some_and(|n| chars < n) || self.max_length.is_some_and(|n| chars > n) {
                let path = at.render();
                let message = format!("`{path}`: a string of {chars} characters is outside the allowed length");
                return Err(ArgumentError::new(ArgumentErrorKind::Length, &path, message));
            }
        }
        match value {
            Value::Map(pairs) => {
                for name in &self.required {
                    if !pairs.iter().any(|(k, _)| k == name) {
                        let path = At::Field(at, name).render();
                        let message = format!("missing argument `{path}`");
                        return Err(ArgumentError::new(ArgumentErrorKind::Missing, &path, message));
                    }
                }
                for (k, v) in pairs {
                    match self.properties.iter().find(|(p, _)| p == k) {
                        Some((_, schema)) => schema.check_at(v, &At::Field(at, k))?,
                        None if !self.additional => {
                            let path = At::Field(at, k).render();
                            let message = format!("unknown argument `{path}`");
                            return Err(ArgumentError::new(ArgumentErrorKind::Unknown, &path, message));
                        }
                        None => {}
                    }
                }
            }
            Value::List(items) => {
                if let Some(schema) = &self.items {
                    for (i, item) in items.iter().enumerate() {
                        schema.check_at(item, &At::Item(at, i))?;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// Where a checked value sits in the arguments: the path [`Schema::check`]
/// was given, then fields and items, as a chain on the stack.
enum At<'a> {
    /// The path the check started at.
    Root(&'a str),
    /// Field `name` of the value at the parent.
    Field(&'a At<'a>, &'a str),
    /// Item `i` of the list at the parent.
    Item(&'a At<'a>, usize),
}

impl At<'_> {
    /// The path as errors name it: `a.b` (`b` at the root), `a[2]`.
    fn render(&self) -> String {
        match self {
            At::Root(path) => (*path).to_string(),
            At::Field(parent, name) => join(&parent.render(), name),
            At::Item(parent, i) => format!("{}[{i}]", parent.render()),
        }
    }
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() { name.to_string() } else { format!("{path}.{name}") }
}

/// A short rendering of a value for an error message.
trait RenderShort {
    fn render_short(&self) -> String;
}

impl RenderShort for Value {
    fn render_short(&self) -> String {
        let text = self.render();
        match text.char_indices().nth(40) {
            Some((cut, _)) => format!("{}...", &text[..cut]),
            None => text,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scripted::data::Data;

    fn schema(text: &str) -> Result<Schema, SchemaError> {
        let Data(v) = ron::from_str(text).expect("data");
        Schema::parse(&v, "args")
    }

    fn args(text: &str) -> Value {
        ron::from_str::<Data>(text).expect("data").0
    }

    #[test]
    fn checks_types_required_and_bounds() {
        let s = schema(
            r#"{"type": "object", "properties": {"id": {"type": "string"}, "n": {"type": "integer", "minimum": 1}},
                "required": ["id"], "additionalProperties": false}"#,
        )
        .expect("valid");
        assert_eq!(s.check(&args(r#"{"id": "A", "n": 2}"#), ""), Ok(()));
        let check = |a: &str| s.check(&args(a), "").map_err(|e| (e.kind, e.path.clone(), e.to_string()));
        assert_eq!(
            check(r#"{"n": 2}"#),
            Err((ArgumentErrorKind::Missing, "id".into(), "missing argument `id`".into()))
        );
        assert_eq!(
            check(r#"{"id": 3}"#),
            Err((ArgumentErrorKind::Type, "id".into(), "`id`: expected string, found 3".into()))
        );
        let outside = check(r#"{"id": "A", "n": 0}"#).unwrap_err();
        assert_eq!((outside.0, outside.2.contains("outside")), (ArgumentErrorKind::OutOfRange, true));
        assert_eq!(
            check(r#"{"id": "A", "x": 0}"#),
            Err((ArgumentErrorKind::Unknown, "x".into(), "unknown argument `x`".into()))
        );
    }

    #[test]
    fn refuses_what_it_cannot_check() {
        assert!(schema(r#"{"type": "strng"}"#).unwrap_err().to_string().contains("unknown type"));
        assert!(schema(r#"{"pattern": "^a"}"#).unwrap_err().to_string().contains("not supported"));
        assert!(schema(r#"{"properties": {"a": {}}, "required": ["b"]}"#).unwrap_err().to_string().contains("`b`"));
        assert!(schema(r#"{"minimum": 3, "maximum": 1}"#).unwrap_err().to_string().contains("above"));
    }

    /// The path of an error deep in the arguments, from a root path or none:
    /// fields joined by dots, items by index (the text is made only on an
    /// error, and must read as it did when every level built it).
    #[test]
    fn names_the_path_of_a_nested_error() {
        let s = schema(
            r#"{"type": "object", "properties": {
                "items": {"type": "array", "items": {"type": "object",
                    "properties": {"id": {"type": "string", "maxLength": 3}, "n": {"type": "integer", "maximum": 5},
                                   "kind": {"enum": ["a", "b"]}, "tags": {"type": "array", "items": {"type": "string"}}},
                    "required": ["id"], "additionalProperties": false}}},
                "required": ["items"]}"#,
        )
        .expect("valid");
        let cases = [
            (
                r#"{"items": [{"id": "A"}, {"id": 3}]}"#,
                ArgumentErrorKind::Type,
                "items[1].id",
                "`P`: expected string, found 3",
            ),
            (r#"{"items": [{"id": "A"}, {}]}"#, ArgumentErrorKind::Missing, "items[1].id", "missing argument `P`"),
            (r#"{"items": [{"id": "A", "zz": 1}]}"#, ArgumentErrorKind::Unknown, "items[0].zz", "unknown argument `P`"),
            (
                r#"{"items": [{"id": "A", "n": 9}]}"#,
                ArgumentErrorKind::OutOfRange,
                "items[0].n",
                "`P`: 9 is outside [-inf, 5]",
            ),
            (
                r#"{"items": [{"id": "ABCD"}]}"#,
                ArgumentErrorKind::Length,
                "items[0].id",
                "`P`: a string of 4 characters is outside the allowed length",
            ),
            (
                r#"{"items": [{"id": "A", "kind": "c"}]}"#,
                ArgumentErrorKind::NotAllowed,
                "items[0].kind",
                "`P`: expected one of \"a\", \"b\", found \"c\"",
            ),
            (
                r#"{"items": [{"id": "A", "tags": ["x", 2]}]}"#,
                ArgumentErrorKind::Type,
                "items[0].tags[1]",
                "`P`: expected string, found 2",
            ),
            (r#"{"items": 4}"#, ArgumentErrorKind::Type, "items", "`P`: expected array, found 4"),
            (r#"{}"#, ArgumentErrorKind::Missing, "items", "missing argument `P`"),
        ];
        for (text, kind, path, message) in cases {
            for root in ["", "args"] {
                let path = if root.is_empty() { path.to_string() } else { format!("{root}.{path}") };
                let e = s.check(&args(text), root).expect_err(text);
                assert_eq!(
                    (e.kind, e.path.as_str(), e.to_string()),
                    (kind, path.as_str(), message.replace('P', &path)),
                    "{text} at `{root}`"
                );
            }
        }
        assert_eq!(s.check(&args(r#"{"items": [{"id": "A", "n": 5, "kind": "b", "tags": ["x"]}]}"#), "args"), Ok(()));
    }
}

//! Values crossing into and out of a script: the engine's [`Value`] as Rhai's
//! [`Dynamic`] and back (shared by the sandbox, the tables and extensions).

use rhai::{Dynamic, Map};

use agentsim_engine::{Float, Key, Value};

use super::data::DEPTH_MAX;

/// A value as a script sees it (a copy: the script may change it).
pub fn to_dynamic(value: &Value) -> Dynamic {
    match value {
        Value::Null => Dynamic::UNIT,
        Value::Bool(b) => Dynamic::from_bool(*b),
        Value::Int(n) => Dynamic::from_int(*n),
        Value::Float(x) => Dynamic::from_float(x.get()),
        Value::Str(s) => Dynamic::from(rhai::ImmutableString::from(s.as_str())),
        Value::List(items) => Dynamic::from_array(items.iter().map(to_dynamic).collect()),
        Value::Map(pairs) => {
            Dynamic::from_map(pairs.iter().map(|(k, v)| (k.as_ref().into(), to_dynamic(v))).collect::<Map>())
        }
    }
}

/// Why a script's value cannot leave the script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ValueError {
    /// It nests deeper than [`DEPTH_MAX`] levels.
    TooDeep,
    /// A float that is NaN or infinite (the value, as Rust prints it).
    NotFinite(String),
    /// A type with no value counterpart (its Rhai name).
    Unsupported(String),
}

impl std::fmt::Display for ValueError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ValueError::TooDeep => write!(f, "a value nests deeper than {DEPTH_MAX} levels"),
            ValueError::NotFinite(x) => write!(f, "{x} is not a finite number"),
            ValueError::Unsupported(ty) => write!(f, "a script value of type `{ty}` cannot leave the script"),
        }
    }
}

impl std::error::Error for ValueError {}

/// A script's runtime error with the message, so that a registered function
/// can `?` a conversion.
impl From<ValueError> for Box<rhai::EvalAltResult> {
    fn from(e: ValueError) -> Self {
        e.to_string().into()
    }
}

/// What a script gave, as a value: maps come out with their keys sorted (a
/// script's maps are ordered by key), and nothing nests deeper than
/// [`DEPTH_MAX`].
pub fn to_value(value: &Dynamic, depth: usize) -> Result<Value, ValueError> {
    if depth > DEPTH_MAX {
        return Err(ValueError::TooDeep);
    }
    // The common kinds first, each asked with its cheap `is_` test: a failed
    // `as_` getter names the type it found, which costs a lookup every time.
    if value.is_map() {
        if let Ok(map) = value.as_map_ref() {
            let mut pairs = Vec::with_capacity(map.len());
            for (k, v) in map.iter() {
                pairs.push((Key::Owned(String::from(k.as_str())), to_value(v, depth + 1)?));
            }
            return Ok(Value::Map(pairs));
        }
    } else if value.is_string() {
        if let Ok(s) = value.as_immutable_string_ref() {
            return Ok(Value::Str(String::from(s.as_str())));
        }
    } else if value.is_int() {
        if let Ok(n) = value.as_int() {
            return Ok(Value::Int(n));
        }
    } else if value.is_array() {
        if let Ok(items) = value.as_array_ref() {
            let mut list = Vec::with_capacity(items.len());
            for v in items.iter() {
                list.push(to_value(v, depth + 1)?);
            }
            return Ok(Value::List(list));
        }
    } else if value.is_unit() {
        return Ok(Value::Null);
    } else if value.is_bool() {
        if let Ok(b) = value.as_bool() {
            return Ok(Value::Bool(b));
        }
    } else if value.is_float() {
        if let Ok(x) = value.as_float() {
            return Float::new(x).map(Value::Float).ok_or_else(|| ValueError::NotFinite(x.to_string()));
        }
    } else if value.is_char()
        && let Ok(c) = value.as_char()
    {
        return Ok(Value::Str(c.to_string()));
    }
    Err(ValueError::Unsupported(value.type_name().to_string()))
}

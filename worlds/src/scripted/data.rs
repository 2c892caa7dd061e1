//! JSON-like data written in a scenario (RON maps, lists, numbers, strings) or
//! read from the JSON and CSV files beside it, as engine [`Value`]s.

use std::fmt;

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use agentsim_engine::{Float, Key, Value};

/// How deep data may nest (tables, facts, schemas, script results). Far above
/// any real record; low enough that converting and hashing never exhaust the
/// stack.
pub const DEPTH_MAX: usize = 64;

/// A [`Value`] written as plain data: `{"id": "A1", "price": 12.99}`, `[1, 2]`,
/// `"text"`, `true`, `()` for null. Map keys keep their written order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Data(pub Value);

impl Serialize for Data {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        ValueRef(&self.0).serialize(serializer)
    }
}

struct ValueRef<'v>(&'v Value);

impl Serialize for ValueRef<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match self.0 {
            Value::Null => serializer.serialize_unit(),
            Value::Bool(b) => serializer.serialize_bool(*b),
            Value::Int(n) => serializer.serialize_i64(*n),
            Value::Float(x) => serializer.serialize_f64(x.get()),
            Value::Str(s) => serializer.serialize_str(s),
            Value::List(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&ValueRef(item))?;
                }
                seq.end()
            }
            Value::Map(pairs) => {
                let mut map = serializer.serialize_map(Some(pairs.len()))?;
                for (k, v) in pairs {
                    map.serialize_entry(k.as_ref(), &ValueRef(v))?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Data {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Data, D::Error> {
        deserializer.deserialize_any(DataVisitor).map(Data)
    }
}

struct DataVisitor;

impl<'de> Visitor<'de> for DataVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("data: a map, a list, a number, a string, a boolean or ()")
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::Int(n))
    }
    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Value, E> {
        i64::try_from(n).map(Value::Int).map_err(|_| E::custom(format!("{n} is larger than the largest integer")))
    }
    fn visit_f64<E: de::Error>(self, x: f64) -> Result<Value, E> {
        Float::new(x).map(Value::Float).ok_or_else(|| E::custom(format!("expected a finite number, found {x}")))
    }
    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::Str(s.to_string()))
    }
    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::Str(s))
    }
    fn visit_char<E>(self, c: char) -> Result<Value, E> {
        Ok(Value::Str(c.to_string()))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(DataVisitor)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Data(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::List(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut pairs: Vec<(Key, Value)> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            if pairs.iter().any(|(k, _)| *k == key) {
                return Err(de::Error::custom(format!("key `{key}` appears twice")));
            }
            let Data(value) = map.next_value()?;
            pairs.push((Key::Owned(key), value));
        }
        Ok(Value::Map(pairs))
    }
}

/// How deep `value` nests (a scalar is 0).
pub fn depth(value: &Value) -> usize {
    match value {
        Value::List(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Map(pairs) => 1 + pairs.iter().map(|(_, v)| depth(v)).max().unwrap_or(0),
        _ => 0,
    }
}

/// JSON text as a value; errors carry the 1-based line and column.
pub fn from_json_text(text: &str) -> Result<Value, (usize, usize, String)> {
    let mut de = serde_json::Deserializer::from_str(text);
    let Data(value) = Data::deserialize(&mut de).map_err(|e| (e.line(), e.column(), e.to_string()))?;
    de.end().map_err(|e| (e.line(), e.column(), e.to_string()))?;
    if depth(&value) > DEPTH_MAX {
        return Err((1, 1, format!("data nests deeper than {DEPTH_MAX} levels")));
    }
    Ok(value)
}

/// A CSV cell as a value: an integer (`-12`, `0`, not `007`), a decimal number
/// (`12.99`), `true` or `false`, and anything else (an empty cell, `007`, a zip
/// code with a leading zero) as the string it is.
pub fn csv_cell(cell: &str) -> Value {
    let digits = cell.strip_prefix('-').unwrap_or(cell);
    let integer =
        !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && (digits == "0" || !digits.starts_with('0'));
    if integer && let Ok(n) = cell.parse::<i64>() {
        return Value::Int(n);
    }
    let (whole, fraction) = digits.split_once('.').unwrap_or(("", ""));
    let decimal = !whole.is_empty()
        && !fraction.is_empty()
        && whole.bytes().all(|b| b.is_ascii_digit())
        && fraction.bytes().all(|b| b.is_ascii_digit())
        && (whole == "0" || !whole.starts_with('0'));
    if decimal && let Some(x) = cell.parse::<f64>().ok().and_then(Float::new) {
        return Value::Float(x);
    }
    match cell {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        _ => Value::Str(cell.to_string()),
    }
}

/// CSV text (a header line, then one record per line) as a list of records;
/// errors carry the 1-based line.
pub fn from_csv_text(text: &str) -> Result<Vec<Value>, (usize, usize, String)> {
    let mut reader = csv::ReaderBuilder::new().has_headers(true).from_reader(text.as_bytes());
    let headers: Vec<String> = reader
        .headers()
        .map_err(|e| (e.position().map_or(1, |p| p.line() as usize), 1, e.to_string()))?
        .iter()
        .map(str::to_string)
        .collect();
    let mut records = Vec::new();
    for row in reader.records() {
        let row = row.map_err(|e| (e.position().map_or(1, |p| p.line() as usize), 1, e.to_string()))?;
        let pairs = headers.iter().zip(row.iter()).map(|(h, cell)| (Key::Owned(h.clone()), csv_cell(cell))).collect();
        records.push(Value::Map(pairs));
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_cells_keep_leading_zeros_as_text() {
        assert_eq!(csv_cell("42"), Value::Int(42));
        assert_eq!(csv_cell("-3"), Value::Int(-3));
        assert_eq!(csv_cell("02139"), Value::str("02139"));
        assert_eq!(csv_cell("12.99"), Value::Float(Float::new(12.99).expect("finite")));
        assert_eq!(csv_cell("1e5"), Value::str("1e5"));
        assert_eq!(csv_cell(""), Value::str(""));
        assert_eq!(csv_cell("true"), Value::Bool(true));
    }

    #[test]
    fn ron_data_round_trips_in_order() {
        let text = r#"{"b": [1, 2.5, "x", true, ()], "a": {"c": -1}}"#;
        let data: Data = ron::from_str(text).expect("parses");
        assert_eq!(data.0.render(), r#"{"b":[1,2.5,"x",true,null],"a":{"c":-1}}"#);
        let again: Data = ron::from_str(&ron::to_string(&data).expect("writes")).expect("reads back");
        assert_eq!(again, data);
    }

    #[test]
    fn json_errors_have_positions() {
        let (line, column, _) = from_json_text("[1,\n  2,,]").unwrap_err();
        assert_eq!((line, column), (2, 5));
    }
}

//! The argument-error style `Python` of scripted worlds: arguments that do
//! not fit a tool are refused as Python binds keyword arguments to a method
//! (`argument_errors: Python(class: "RetailTools")`), for worlds ported from
//! Python services such as tau2-bench, whose model reads Python's `TypeError`.
//!
//! The Python style checks only names, as a call `Class.tool(**args)` does: an
//! argument the tool does not declare, then the declared ones missing, in
//! CPython's wording. Types are not checked: the value reaches the body, as it
//! reaches the Python code. An unknown tool is answered too, in the text the
//! ported service gives.

use std::sync::Arc;

use agentsim_engine::{ToolError, Value};
use agentsim_worlds::scripted::{ArgumentStyle, ArgumentStyleKind, Schema, Setting, SettingError};

/// `argument_errors: Python(class: "RetailTools")`: Python's binding of
/// keyword arguments to `class.tool(...)`. The properties of the schema are
/// the parameters, its `required` those without a default. The errors are
/// 400s with CPython's `TypeError` text (`RetailTools.cancel_pending_order()
/// got an unexpected keyword argument 'confirm'`); an unknown tool is a 404
/// `Tool 'think' not found.` (tau2-bench's toolkit). Types are left to the body.
pub struct PythonArguments;

/// The style's name as written.
const PYTHON: &str = "Python";

impl ArgumentStyleKind for PythonArguments {
    fn name(&self) -> &'static str {
        PYTHON
    }

    fn canonical(&self, setting: &Setting) -> Result<Setting, SettingError> {
        let class = class_of(setting).map_err(|e| SettingError::from(e.message))?;
        Ok(Setting::new(PYTHON, vec![("class", Value::str(class))]))
    }

    fn build(&self, setting: &Setting) -> Result<Arc<dyn ArgumentStyle>, SettingError> {
        Ok(Arc::new(Python { class: class_of(setting).map_err(|e| SettingError::from(e.message))?.to_string() }))
    }
}

/// The class the tools are methods of (named in the messages): the field
/// `class`, a string. Other fields are ignored, as they were when the style
/// was an enum variant of the scenario format.
fn class_of(setting: &Setting) -> Result<&str, ClassError> {
    match setting.field("class") {
        Some(Value::Str(class)) => Ok(class),
        Some(_) => Err(ClassError {
            kind: ClassErrorKind::NotAString,
            message: "`Python(class: ...)`: `class` is a string, the class the tools are methods of".into(),
        }),
        None => Err(ClassError {
            kind: ClassErrorKind::Missing,
            message: "`Python(class: ...)` needs `class`, the class the tools are methods of".into(),
        }),
    }
}

/// The field `class` of `Python(class: ...)` refused: what is wrong, and the
/// text shown to the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassError {
    /// What is wrong.
    pub kind: ClassErrorKind,
    /// The text shown to the user.
    pub message: String,
}

/// What is wrong with the field `class`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClassErrorKind {
    /// The setting has no `class`.
    Missing,
    /// `class` is not a string.
    NotAString,
}

impl std::fmt::Display for ClassError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ClassError {}

/// The Python style, built: calls are bound to methods of `class`.
pub struct Python {
    /// The class the tools are methods of (named in the messages).
    pub class: String,
}

impl ArgumentStyle for Python {
    fn check(&self, tool: &str, schema: &Schema, args: &Value) -> Result<(), ToolError> {
        python_binding(&format!("{}.{tool}()", self.class), schema, args).map_err(|e| ToolError::bad_request(e.message))
    }

    fn unknown_tool(&self, name: &str) -> Option<ToolError> {
        Some(ToolError::not_found(format!("Tool {} not found.", python_str_repr(name))))
    }
}

/// CPython's check of keyword arguments bound to `function` (named as its
/// qualified name and `()`): the first name not among the parameters, then
/// every required parameter missing.
pub fn python_binding(function: &str, schema: &Schema, args: &Value) -> Result<(), BindingError> {
    let given: Vec<&str> = match args {
        Value::Map(pairs) => pairs.iter().map(|(k, _)| k.as_ref()).collect(),
        _ => Vec::new(),
    };
    if let Some(extra) = given.iter().find(|k| !schema.properties.iter().any(|(p, _)| p == *k)) {
        return Err(BindingError {
            kind: BindingErrorKind::Unexpected(extra.to_string()),
            message: format!("{function} got an unexpected keyword argument {}", python_str_repr(extra)),
        });
    }
    let missing_names: Vec<String> = (schema.properties.iter())
        .filter(|(p, _)| schema.required.contains(p) && !given.contains(&p.as_str()))
        .map(|(p, _)| p.clone())
        .collect();
    let missing: Vec<String> = missing_names.iter().map(|p| python_str_repr(p)).collect();
    let names = match missing.as_slice() {
        [] => return Ok(()),
        [one] => one.clone(),
        [a, b] => format!("{a} and {b}"),
        [rest @ .., last] => format!("{}, and {last}", rest.join(", ")),
    };
    let (n, noun) = (missing.len(), if missing.len() == 1 { "argument" } else { "arguments" });
    Err(BindingError {
        kind: BindingErrorKind::Missing(missing_names),
        message: format!("{function} missing {n} required positional {noun}: {names}"),
    })
}

/// Arguments Python would not bind to a method: which, and the text of the
/// `TypeError` CPython raises (what the tool answers).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BindingError {
    /// Why they do not bind.
    pub kind: BindingErrorKind,
    /// CPython's `TypeError` text.
    pub message: String,
}

/// Why the arguments do not bind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BindingErrorKind {
    /// An argument the method does not declare (the first).
    Unexpected(String),
    /// Required parameters not given, in declaration order.
    Missing(Vec<String>),
}

impl std::fmt::Display for BindingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for BindingError {}

/// Python's `repr` of a string: single quotes unless the text has one and no
/// double quote; backslashes, the quote and control characters escaped.
pub fn python_str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentsim_worlds::scripted::{ArgumentErrors, Data};

    fn schema(text: &str) -> Schema {
        let Data(v) = ron::from_str(text).expect("data");
        Schema::parse(&v, "args").expect("schema")
    }

    fn args(text: &str) -> Value {
        ron::from_str::<Data>(text).expect("data").0
    }

    fn python() -> Python {
        Python { class: "RetailTools".into() }
    }

    /// The texts CPython 3.11 and 3.12 give (checked against tau2's tools).
    #[test]
    fn python_names_the_extra_then_every_missing_argument() {
        let s = schema(
            r#"{"type": "object", "properties": {"first_name": {"type": "string"}, "last_name": {"type": "string"},
                "zip": {"type": "string"}}, "required": ["first_name", "last_name", "zip"]}"#,
        );
        let check =
            |a: &str| python().check("find_user_id_by_name_zip", &s, &args(a)).map_err(|e| (e.status, e.message));
        let f = "RetailTools.find_user_id_by_name_zip()";
        assert_eq!(
            check("{}"),
            Err((400, format!("{f} missing 3 required positional arguments: 'first_name', 'last_name', and 'zip'")))
        );
        assert_eq!(
            check(r#"{"zip": 5}"#),
            Err((400, format!("{f} missing 2 required positional arguments: 'first_name' and 'last_name'")))
        );
        assert_eq!(
            check(r#"{"zip": 5, "last_name": 1}"#),
            Err((400, format!("{f} missing 1 required positional argument: 'first_name'")))
        );
        assert_eq!(
            check(r#"{"confirm": "x"}"#),
            Err((400, format!("{f} got an unexpected keyword argument 'confirm'")))
        );
        assert_eq!(check(r#"{"first_name": 1, "last_name": [], "zip": null}"#), Ok(()), "types are the body's");
        assert_eq!(
            python().unknown_tool("think").map(|e| (e.status, e.message)),
            Some((404, "Tool 'think' not found.".into()))
        );
        assert_eq!(ArgumentErrors::Schema.unknown_tool("think"), None);
        let written: ArgumentErrors = ron::from_str(r#"Python(class: "RetailTools")"#).expect("reads");
        let ArgumentErrors::Named(setting) = written else { panic!("a named style") };
        assert_eq!(PythonArguments.canonical(&setting), Ok(setting.clone()));
        assert!(PythonArguments.canonical(&Setting::new(PYTHON, vec![])).is_err(), "`class` is needed");
    }

    #[test]
    fn python_quotes_as_repr_does() {
        assert_eq!(python_str_repr("a"), "'a'");
        assert_eq!(python_str_repr("it's"), "\"it's\"");
        assert_eq!(python_str_repr("a'\"b"), "'a\\'\"b'");
        assert_eq!(python_str_repr("a\\b\n"), "'a\\\\b\\n'");
    }
}

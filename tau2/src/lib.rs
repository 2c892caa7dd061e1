//! tau2-bench in agentsim: everything that knows tau2 or the Python it is
//! written in.
//!
//! - [`import`] (`agentsim import-tau2`): a tau2-bench domain folder (retail
//!   or airline, told by its database's tables) as a scripted world; one
//!   importer, each domain a tools script and a small description.
//! - [`EXTENSION`]: what that world names and the scripted world does not
//!   know by itself: the state hash `Tau2` (tau2's database hash), the
//!   argument-error style `Python` (CPython's binding of keyword arguments),
//!   and the script functions `round_py`, `repr_py`, `json_py` and
//!   `arithmetic` (Python's numbers, JSON and arithmetic). [`install`] puts it
//!   in the scripted world's registry; agentsim's loader does so before it
//!   reads a scenario.

#![warn(missing_docs)]

mod arith;
mod import;
mod pyargs;
mod statehash;

use agentsim_worlds::scripted::rhai::{Dynamic, Engine, EvalAltResult, Map};
use agentsim_worlds::scripted::{self, ArgumentStyleKind, Extension, StateHashKind, to_value};

pub use arith::{Number, evaluate};
pub use import::*;
pub use pyargs::{
    BindingError, BindingErrorKind, ClassError, ClassErrorKind, Python, PythonArguments, python_binding,
    python_str_repr,
};
pub use statehash::{
    TablesError, TablesErrorKind, Tau2Hash, Tau2Hasher, python_float, python_json, python_round, sha256_hex,
};

/// tau2's additions to scripted worlds.
pub static EXTENSION: Extension = Extension {
    name: "tau2",
    state_hashes: &[&Tau2Hash as &dyn StateHashKind],
    argument_styles: &[&PythonArguments as &dyn ArgumentStyleKind],
    functions: register_functions,
};

/// Installs [`EXTENSION`] for every scripted world loaded from now on.
pub fn install() {
    scripted::install(&EXTENSION);
}

/// Python's numbers, for worlds ported from Python (tau2-bench): its `round`,
/// its float `repr`, `json.dumps`, and its arithmetic on `+ - * / // ** ( )`.
fn register_functions(engine: &mut Engine) {
    engine.register_fn("round_py", python_round);
    engine.register_fn("round_py", |x: i64, _ndigits: i64| x);
    engine.register_fn("repr_py", python_float);
    engine.register_fn("repr_py", |x: i64| x.to_string());
    engine.register_fn("json_py", |value: Dynamic| -> Result<String, Box<EvalAltResult>> {
        let value = to_value(&value, 0)?;
        let mut out = Vec::new();
        python_json(&mut out, &value);
        Ok(String::from_utf8(out).expect("the rendering is ASCII"))
    });
    engine.register_fn("arithmetic", |expression: &str| -> Dynamic {
        let mut map = Map::new();
        match evaluate(expression) {
            Ok(Number::Int(n)) => {
                let value = i64::try_from(n).map_or_else(|_| Dynamic::from_float(n as f64), Dynamic::from_int);
                map.insert("value".into(), value);
            }
            Ok(Number::Float(x)) => {
                map.insert("value".into(), Dynamic::from_float(x));
            }
            Err(message) => {
                map.insert("error".into(), Dynamic::from(message));
            }
        }
        Dynamic::from_map(map)
    });
}

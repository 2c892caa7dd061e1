//! The sandbox tool bodies, processes and predicates run in: Rhai, compiled once
//! per process, with no clock, no entropy, no I/O and no environment, and with
//! limits on operations, call depth, string, array and map sizes.
//!
//! A script reaches the world only through the functions registered here, which
//! act on the trajectory's [`Session`]: the session is handed to the running
//! thread for the length of one call (a thread-local slot), so one compiled
//! program serves every rayon thread and every trajectory without locks.

use std::cell::RefCell;

use rhai::packages::Package;
use rhai::{AST, ASTNode, Array, Dynamic, Engine, EvalAltResult, Expr, Map, Position, Scope, Stmt};

use agentsim_engine::{TimeMs, ToolError, Value};

use super::Limits;
pub use super::dynamic::{to_dynamic, to_value};
use super::lazy_stream::LazyStream;
use super::native::{Bindings, Conjunction, OPERATIONS_MIN};
use super::state::State;

/// What a running script may reach: the trajectory's tables, its virtual time,
/// its random stream, and what it reports.
pub struct Session {
    /// The tables.
    pub state: State,
    /// Virtual time now.
    pub now_ms: TimeMs,
    /// The stream `random()` draws from (derived on its first draw).
    pub rng: LazyStream,
    /// Whether the running body may change tables (a write tool or a process).
    pub writable: bool,
    /// Notes the script asked for (`note(...)`).
    pub notes: Vec<Value>,
    /// Minefields the script fired (`minefield(name, detail)`).
    pub minefields: Vec<(&'static str, String)>,
    /// The minefield names a script may fire (declared in the scenario;
    /// shared by every session of the world).
    pub minefield_names: std::sync::Arc<[&'static str]>,
    /// Calls that reached the world and succeeded: (tool, arguments).
    pub calls: Vec<(&'static str, Value)>,
    /// What the agent told the user with `send_message(kind: "done")`.
    pub told: Vec<Value>,
    /// Milestones reached so far.
    pub reached: Vec<&'static str>,
}

thread_local! {
    static SESSION: RefCell<Option<Box<Session>>> = const { RefCell::new(None) };
}

/// Runs `f` with `slot`'s session handed to the script functions of this thread.
fn entered<R>(slot: &mut Option<Box<Session>>, f: impl FnOnce() -> R) -> R {
    let session = slot.take();
    assert!(session.is_some(), "a script runs with its trajectory's session");
    SESSION.with(|s| *s.borrow_mut() = session);
    let result = f();
    *slot = SESSION.with(|s| s.borrow_mut().take());
    assert!(slot.is_some(), "the session comes back after a script ran");
    result
}

fn with_session<R>(f: impl FnOnce(&mut Session) -> Result<R, Box<EvalAltResult>>) -> Result<R, Box<EvalAltResult>> {
    SESSION.with(|s| match s.borrow_mut().as_mut() {
        Some(session) => f(session),
        None => Err("this function is only available while a tool, process or predicate runs".into()),
    })
}

/// Why a script call did not return a value.
#[derive(Debug, PartialEq, Eq)]
pub enum Failure {
    /// The body returned `error(status, message)`.
    Tool(ToolError),
    /// A runtime error or a limit hit: a 500 and a counted note. `limit` is true
    /// for a limit (operations, depth, sizes).
    Script {
        /// The script's message, with its position.
        message: String,
        /// A limit was hit.
        limit: bool,
    },
}

/// A compiled script plus its predicates.
pub struct Program {
    engine: Engine,
    ast: AST,
    predicates: Vec<AST>,
    /// Per predicate, the tool it is about when it reads
    /// `action.tool == "NAME" && ...`: false for any other tool's call.
    guards: Vec<Option<String>>,
    /// Per predicate, the chain of comparisons Rust may decide without Rhai
    /// (none under a tiny operation limit).
    natives: Vec<Option<Conjunction>>,
    /// Whether the operation limit leaves room for native predicates.
    native_ok: bool,
}

/// A syntax error: 1-based line and column (0 when unknown) and the message.
pub type SyntaxError = (usize, usize, String);

fn syntax_error(e: &rhai::ParseError) -> SyntaxError {
    let p = e.position();
    (p.line().unwrap_or(1), p.position().unwrap_or(1), e.err_type().to_string())
}

impl Program {
    /// Compiles `source` under `limits`.
    pub fn compile(source: &str, limits: &Limits) -> Result<Program, SyntaxError> {
        let engine = sandbox(limits);
        let ast = engine.compile(source).map_err(|e| syntax_error(&e))?;
        let native_ok = limits.operations_max >= OPERATIONS_MIN;
        Ok(Program { engine, ast, predicates: Vec::new(), guards: Vec::new(), natives: Vec::new(), native_ok })
    }

    /// Compiles a predicate (an expression) and returns its index.
    pub fn add_predicate(&mut self, expression: &str) -> Result<usize, SyntaxError> {
        let ast = self.engine.compile_expression(expression).map_err(|e| syntax_error(&e))?;
        self.predicates.push(ast);
        self.guards.push(tool_guard(expression));
        self.natives.push(Conjunction::parse(expression).filter(|_| self.native_ok));
        Ok(self.predicates.len() - 1)
    }

    /// Whether any code of the program (the script's functions and every
    /// predicate) may read a session's `calls`: it calls `calls` or `called`,
    /// or makes or calls a function pointer (which could name either). When
    /// none can, a world need not keep the list.
    pub fn may_read_calls(&self) -> bool {
        std::iter::once(&self.ast)
            .chain(&self.predicates)
            .any(|ast| !ast.walk(&mut |path: &[ASTNode]| !path.last().is_some_and(reads_calls)))
    }

    /// The type predicate `index` is known to give without running it, when
    /// that is not a boolean (`42`, `"yes"`, `facts.n + 1`, `count("t")`).
    pub fn static_non_boolean(&self, index: usize) -> Option<&'static str> {
        match self.predicates[index].statements() {
            [statement] => statement_type(statement),
            [] => Some("()"),
            _ => None,
        }
    }

    /// The type predicate `index` gives with the variables `vars` when that is
    /// not a boolean; `None` when it gives a boolean or fails (a failure is
    /// what a run notes, not a question of type).
    pub fn non_boolean(
        &self,
        session: &mut Option<Box<Session>>,
        index: usize,
        vars: &[(&'static str, &Value)],
    ) -> Option<&'static str> {
        let reached = session.as_ref().map_or(&[][..], |s| s.reached.as_slice());
        if self.native(index, &Vars(vars), reached).is_some() {
            return None;
        }
        let mut scope = Scope::new();
        for (name, value) in vars {
            scope.push_constant_dynamic(*name, to_dynamic(value));
        }
        let result =
            entered(session, || self.engine.eval_ast_with_scope::<Dynamic>(&mut scope, &self.predicates[index]));
        result.ok().filter(|v| !v.is_bool()).map(|v| type_name(&v))
    }

    /// Whether predicate `index` can hold after a call of `tool`: false only
    /// when it starts `action.tool == "OTHER" &&` (and has no `||` or `??`
    /// that could make it true anyway), which `&&` would cut short with no
    /// effect. Skipping those is what keeps a world with many predicates
    /// cheap per call.
    pub fn may_hold_for(&self, index: usize, tool: &str) -> bool {
        self.guards[index].as_deref().is_none_or(|guard| guard == tool)
    }

    /// Whether the script defines `name` taking `arity` parameters.
    pub fn defines(&self, name: &str, arity: usize) -> bool {
        self.ast.iter_functions().any(|f| f.name == name && f.params.len() == arity)
    }

    /// Calls the script function `name` with `args` on `session`.
    pub fn call(&self, session: &mut Option<Box<Session>>, name: &str, args: Vec<Dynamic>) -> Result<Value, Failure> {
        let result = entered(session, || {
            let mut scope = Scope::new();
            self.engine.call_fn::<Dynamic>(&mut scope, &self.ast, name, args)
        });
        match result {
            Ok(value) => to_value(&value, 0).map_err(|e| Failure::Script { message: e.to_string(), limit: false }),
            Err(e) => Err(failure(&e, &self.ast)),
        }
    }

    /// Whether predicate `index` holds, when Rust can decide it without Rhai
    /// (see [`super::native`]): `vars` are its variables, `reached` the
    /// milestones its session has reached.
    pub fn native(&self, index: usize, vars: &dyn Bindings, reached: &[&str]) -> Option<bool> {
        self.natives[index].as_ref()?.eval(vars, reached)
    }

    /// Evaluates predicate `index` with the variables `vars`: in Rust when it
    /// can, else in Rhai. A predicate that fails or does not give a boolean is
    /// an error (the caller notes it).
    pub fn predicate(
        &self,
        session: &mut Option<Box<Session>>,
        index: usize,
        vars: &[(&'static str, &Value)],
    ) -> Result<bool, PredicateError> {
        let reached = session.as_ref().map_or(&[][..], |s| s.reached.as_slice());
        if let Some(holds) = self.native(index, &Vars(vars), reached) {
            return Ok(holds);
        }
        let mut scope = Scope::new();
        for (name, value) in vars {
            scope.push_constant_dynamic(*name, to_dynamic(value));
        }
        self.predicate_in(session, &mut scope, index)
    }

    /// Evaluates predicate `index` in `scope` (constants only: a predicate
    /// cannot change it, so one scope serves every predicate after a call).
    pub fn predicate_in(
        &self,
        session: &mut Option<Box<Session>>,
        scope: &mut Scope<'static>,
        index: usize,
    ) -> Result<bool, PredicateError> {
        let result = entered(session, || self.engine.eval_ast_with_scope::<Dynamic>(scope, &self.predicates[index]));
        let (kind, message) = match result {
            Ok(v) => match v.as_bool() {
                Ok(holds) => return Ok(holds),
                Err(t) => {
                    (PredicateErrorKind::NotBoolean, format!("a predicate gives true or false, this one gave a {t}"))
                }
            },
            Err(e) => match failure(&e, &self.predicates[index]) {
                Failure::Tool(err) => (PredicateErrorKind::Tool, err.message),
                Failure::Script { message, .. } => (PredicateErrorKind::Script, message),
            },
        };
        Err(PredicateError { kind, message })
    }
}

/// Why a predicate did not decide: what kind of failure, and its message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PredicateError {
    /// What kind of failure.
    pub kind: PredicateErrorKind,
    /// What went wrong, as the `predicate_error` note and the verdict give it.
    pub message: String,
}

/// What kind of failure a [`PredicateError`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PredicateErrorKind {
    /// The predicate ran and gave something other than a boolean.
    NotBoolean,
    /// It called `error(status, message)`.
    Tool,
    /// A runtime error or a limit hit.
    Script,
}

impl std::fmt::Display for PredicateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for PredicateError {}

/// Named values as a predicate's variables.
pub struct Vars<'v>(pub &'v [(&'static str, &'v Value)]);

impl Bindings for Vars<'_> {
    fn scalar(&self, root: &str, fields: &[String]) -> Option<super::native::Scalar<'_>> {
        let (_, value) = self.0.iter().find(|(name, _)| *name == root)?;
        super::native::scalar_at(value, fields)
    }

    fn list(&self, root: &str, fields: &[String]) -> Option<&[Value]> {
        let (_, value) = self.0.iter().find(|(name, _)| *name == root)?;
        super::native::list_at(value, fields)
    }
}

/// The tool a predicate is about, when it is written `action.tool == "NAME"`
/// or `action.tool == "NAME" && ...` with no `||` or `??` anywhere.
fn tool_guard(expression: &str) -> Option<String> {
    if expression.contains("||") || expression.contains("??") {
        return None;
    }
    let rest = expression.trim_start().strip_prefix("action.tool")?.trim_start().strip_prefix("==")?.trim_start();
    let rest = rest.strip_prefix('"')?;
    let close = rest.find(['"', '\\'])?;
    if rest.as_bytes()[close] != b'"' {
        return None;
    }
    let (name, after) = (&rest[..close], rest[close + 1..].trim_start());
    (after.is_empty() || after.starts_with("&&")).then(|| name.to_string())
}

fn failure(e: &EvalAltResult, ast: &AST) -> Failure {
    let inner = e.unwrap_inner();
    if let EvalAltResult::ErrorRuntime(value, _) = inner
        && let Ok(map) = value.as_map_ref()
        && map.contains_key("__agentsim_error")
    {
        let status = map.get("status").and_then(|s| s.as_int().ok()).unwrap_or(500);
        let message = map.get("message").map(|m| m.to_string()).unwrap_or_default();
        let status = u16::try_from(status).ok().filter(|s| (400..600).contains(s)).unwrap_or(500);
        return Failure::Tool(ToolError { status, message });
    }
    let limit = matches!(
        inner,
        EvalAltResult::ErrorTooManyOperations(_)
            | EvalAltResult::ErrorStackOverflow(_)
            | EvalAltResult::ErrorDataTooLarge(..)
            | EvalAltResult::ErrorTooManyVariables(_)
    );
    let message = match missing_field(inner, ast) {
        Some(hint) => format!("{e}: {hint}"),
        None => e.to_string(),
    };
    Failure::Script { message, limit }
}

/// For a call that found no function because an argument is `()` (`+ ((),
/// i64)`), what that argument read, when it read a field: a map has no such
/// field (or holds `()` there), which is what a misspelt field looks like.
/// Only on the error path: the syntax tree is searched for the call.
fn missing_field(e: &EvalAltResult, ast: &AST) -> Option<String> {
    let EvalAltResult::ErrorFunctionNotFound(signature, position) = e else { return None };
    let types = signature.split_once(" (")?.1.strip_suffix(')')?;
    let units: Vec<usize> = types.split(", ").enumerate().filter(|(_, t)| *t == "()").map(|(i, _)| i).collect();
    let mut found = None;
    ast.walk(&mut |path: &[ASTNode]| {
        let call = match path.last() {
            Some(ASTNode::Expr(Expr::FnCall(call, at))) | Some(ASTNode::Stmt(Stmt::FnCall(call, at))) => {
                Some(call).filter(|_| at == position)
            }
            _ => None,
        };
        if let Some(call) = call {
            found = units.iter().find_map(|&i| call.args.get(i).and_then(field_read));
        }
        found.is_none()
    });
    let (read, field) = found?;
    Some(format!("`{read}` is `()`: no field `{field}` there (or it holds `()`)"))
}

/// `a.b.c` as text and its last field, when `expr` reads fields of a variable.
fn field_read(expr: &Expr) -> Option<(String, String)> {
    fn chain(expr: &Expr, out: &mut Vec<String>) -> Option<()> {
        match expr {
            Expr::Variable(x, ..) => out.push(x.1.to_string()),
            Expr::Property(x, ..) => out.push(x.2.to_string()),
            Expr::Dot(binary, ..) => {
                chain(&binary.lhs, out)?;
                chain(&binary.rhs, out)?;
            }
            _ => return None,
        }
        Some(())
    }
    let Expr::Dot(..) = expr else { return None };
    let mut parts = Vec::new();
    chain(expr, &mut parts)?;
    let field = parts.last()?.clone();
    Some((parts.join("."), field))
}

/// [`static_type`] of a statement that is an expression (a call alone is a
/// statement of its own kind).
fn statement_type(statement: &Stmt) -> Option<&'static str> {
    match statement {
        Stmt::Expr(expr) => static_type(expr),
        Stmt::FnCall(call, _) => not_boolean_call(call),
        _ => None,
    }
}

fn not_boolean_call(call: &rhai::FnCallExpr) -> Option<&'static str> {
    NOT_BOOLEAN.iter().find(|(name, _)| *name == call.name.as_str()).map(|(_, ty)| *ty)
}

/// A value's type as the scenario's errors name types.
fn type_name(value: &Dynamic) -> &'static str {
    match value.type_name() {
        "i64" => "integer",
        "f64" => "number",
        "string" | "char" => "string",
        "array" => "array",
        "map" => "map",
        "()" => "()",
        other => other,
    }
}

/// Functions that read a session's `calls`, or make or call a function
/// pointer (which could name them).
const READS_CALLS: [&str; 5] = ["calls", "called", "Fn", "call", "curry"];

/// Whether `node` may read a session's `calls`: a call of one of
/// [`READS_CALLS`], or a constant the optimiser folded that is not a plain
/// value (a function pointer `Fn("calls")` folds into one).
fn reads_calls(node: &ASTNode) -> bool {
    let named = |call: &rhai::FnCallExpr| READS_CALLS.contains(&call.name.as_str());
    match node {
        ASTNode::Stmt(Stmt::FnCall(call, _)) => named(call),
        ASTNode::Expr(Expr::FnCall(call, _) | Expr::MethodCall(call, _)) => named(call),
        ASTNode::Expr(Expr::DynamicConstant(value, _)) => {
            !(value.is_unit()
                || value.is_bool()
                || value.is_int()
                || value.is_float()
                || value.is_string()
                || value.is_char())
        }
        _ => false,
    }
}

/// Functions whose answer is never a boolean, with what it is: a predicate
/// that is one of them cannot hold.
const NOT_BOOLEAN: [(&str, &str); 21] = [
    ("+", "number or string"),
    ("-", "number"),
    ("*", "number"),
    ("/", "number"),
    ("%", "number"),
    ("**", "number"),
    ("<<", "integer"),
    (">>", "integer"),
    ("count", "integer"),
    ("now_ms", "integer"),
    ("random", "number"),
    ("random_int", "integer"),
    ("rows", "array"),
    ("keys", "array"),
    ("find", "array"),
    ("calls", "array"),
    ("told", "array"),
    ("session", "integer"),
    ("get", "record or ()"),
    ("json_py", "string"),
    ("len", "integer"),
];

/// The type an expression is known to give without running it, when that is
/// not a boolean: a literal, or a call of an operator or function that never
/// gives one. `None` when it is a boolean or cannot be known.
fn static_type(expr: &Expr) -> Option<&'static str> {
    match expr {
        Expr::BoolConstant(..) => None,
        Expr::IntegerConstant(..) => Some("integer"),
        Expr::FloatConstant(..) => Some("number"),
        Expr::CharConstant(..) | Expr::StringConstant(..) | Expr::InterpolatedString(..) => Some("string"),
        Expr::Array(..) => Some("array"),
        Expr::Map(..) => Some("map"),
        Expr::Unit(..) => Some("()"),
        Expr::DynamicConstant(value, _) => (!value.is_bool()).then(|| type_name(value)),
        Expr::FnCall(call, _) | Expr::MethodCall(call, _) => not_boolean_call(call),
        // `a.b.len()`: the method called last gives the value.
        Expr::Dot(binary, ..) => match &binary.rhs {
            rhs @ (Expr::MethodCall(..) | Expr::Dot(..)) => static_type(rhs),
            _ => None,
        },
        Expr::Stmt(block) => match block.statements() {
            [statement] => statement_type(statement),
            _ => None,
        },
        // `&&` and `||` refuse an operand that is not a boolean.
        Expr::And(operands, _) | Expr::Or(operands, _) => operands.iter().find_map(static_type),
        _ => None,
    }
}

/// A Rhai engine with nothing but the standard library (no `print` output, no
/// modules, no clock: the crate is built without `time` and `module`), the
/// limits, and the world functions.
fn sandbox(limits: &Limits) -> Engine {
    let mut engine = Engine::new_raw();
    engine.register_global_module(rhai::packages::StandardPackage::new().as_shared_module());
    engine.disable_symbol("eval");
    engine.set_max_operations(limits.operations_max);
    engine.set_max_call_levels(limits.call_depth_max);
    engine.set_max_expr_depths(limits.expr_depth_max, limits.expr_depth_max);
    engine.set_max_string_size(limits.string_bytes_max);
    engine.set_max_array_size(limits.array_len_max);
    engine.set_max_map_size(limits.map_len_max);
    engine.set_max_variables(limits.variables_max);
    register_world(&mut engine);
    // What installed extensions add (Python's numbers for ported worlds, say).
    super::extend::register_functions(&mut engine);
    engine
}

fn key_of(key: &Dynamic) -> Result<String, Box<EvalAltResult>> {
    if let Ok(s) = key.as_immutable_string_ref() {
        return Ok(s.to_string());
    }
    match key.as_int() {
        Ok(n) => Ok(n.to_string()),
        Err(t) => Err(format!("a record key is a string or an integer, not a {t}").into()),
    }
}

/// The world functions a script calls: tables, clock and chance, and what
/// it reports.
fn register_world(engine: &mut Engine) {
    register_tables(engine);
    register_clock_and_chance(engine);
    register_reports(engine);
}

/// `get`, `has`, `put`, `remove`, `find`, `first_key`, `rows`, `keys`, `count`.
fn register_tables(engine: &mut Engine) {
    engine.register_fn("get", |table: &str, key: Dynamic| -> Result<Dynamic, Box<EvalAltResult>> {
        let key = key_of(&key)?;
        with_session(|s| {
            s.state.note_read(table, &key);
            Ok(s.state.get_script(table, &key)?.unwrap_or(Dynamic::UNIT))
        })
    });
    engine.register_fn("has", |table: &str, key: Dynamic| -> Result<bool, Box<EvalAltResult>> {
        let key = key_of(&key)?;
        with_session(|s| {
            s.state.note_read(table, &key);
            Ok(s.state.get(table, &key)?.is_some())
        })
    });
    engine.register_fn("put", |table: &str, key: Dynamic, record: Dynamic| -> Result<(), Box<EvalAltResult>> {
        let key = key_of(&key)?;
        let record = to_value(&record, 0)?;
        with_session(|s| {
            if !s.writable {
                return Err("a read tool cannot change tables (declare the tool `kind: Write`)".into());
            }
            Ok(s.state.put(table, key, record)?)
        })
    });
    engine.register_fn("remove", |table: &str, key: Dynamic| -> Result<bool, Box<EvalAltResult>> {
        let key = key_of(&key)?;
        with_session(|s| {
            if !s.writable {
                return Err("a read tool cannot change tables (declare the tool `kind: Write`)".into());
            }
            Ok(s.state.remove(table, &key)?)
        })
    });
    engine.register_fn("find", |table: &str, field: &str, value: Dynamic| -> Result<Array, Box<EvalAltResult>> {
        let value = to_value(&value, 0)?;
        with_session(|s| Ok(s.state.find_script(table, field, &value)?))
    });
    engine.register_fn("first_key", |table: &str, folded: Map, exact: Map| -> Result<Dynamic, Box<EvalAltResult>> {
        let pairs = |m: &Map| -> Result<Vec<(String, Value)>, Box<EvalAltResult>> {
            m.iter().map(|(k, v)| Ok((k.to_string(), to_value(v, 0)?))).collect()
        };
        let (folded, exact) = (pairs(&folded)?, pairs(&exact)?);
        with_session(|s| Ok(s.state.first_key(table, &folded, &exact)?.map_or(Dynamic::UNIT, Dynamic::from)))
    });
    engine.register_fn("rows", |table: &str| -> Result<Array, Box<EvalAltResult>> {
        with_session(|s| Ok(s.state.rows_script(table)?))
    });
    engine.register_fn("keys", |table: &str| -> Result<Array, Box<EvalAltResult>> {
        with_session(|s| Ok(s.state.keys(table)?.into_iter().map(Dynamic::from).collect()))
    });
    engine.register_fn("count", |table: &str| -> Result<i64, Box<EvalAltResult>> {
        with_session(|s| Ok(s.state.keys(table)?.len() as i64))
    });
}

/// `now_ms`, `random`, `random_int`, `chance`: the virtual clock and the
/// trajectory's stream.
fn register_clock_and_chance(engine: &mut Engine) {
    engine.register_fn("now_ms", || -> Result<i64, Box<EvalAltResult>> {
        with_session(|s| Ok(i64::try_from(s.now_ms).unwrap_or(i64::MAX)))
    });
    engine.register_fn("random", || -> Result<f64, Box<EvalAltResult>> { with_session(|s| Ok(s.rng.get().unit())) });
    engine.register_fn("random_int", |lo: i64, hi: i64| -> Result<i64, Box<EvalAltResult>> {
        if lo > hi {
            return Err(format!("random_int({lo}, {hi}): the low bound is above the high one").into());
        }
        // The span of two i64 fits a u64 (as a wrapping difference).
        let span = hi.wrapping_sub(lo) as u64;
        with_session(|s| {
            Ok(lo.wrapping_add(
                if span == u64::MAX { s.rng.get().next_u64() } else { s.rng.get().below(span + 1) } as i64
            ))
        })
    });
    engine.register_fn("chance", |p: f64| -> Result<bool, Box<EvalAltResult>> {
        with_session(|s| Ok(s.rng.get().chance(p)))
    });
}

/// `error`, `note`, `minefield` (what a script reports) and `calls`,
/// `called`, `told`, `reached` (what it may ask of the conversation so far).
fn register_reports(engine: &mut Engine) {
    engine.register_fn("error", |status: i64, message: &str| -> Result<Dynamic, Box<EvalAltResult>> {
        let mut map = Map::new();
        map.insert("__agentsim_error".into(), Dynamic::TRUE);
        map.insert("status".into(), Dynamic::from(status));
        map.insert("message".into(), Dynamic::from(message.to_string()));
        Err(Box::new(EvalAltResult::ErrorRuntime(Dynamic::from_map(map), Position::NONE)))
    });
    engine.register_fn("note", |detail: Dynamic| -> Result<(), Box<EvalAltResult>> {
        let detail = to_value(&detail, 0)?;
        with_session(|s| {
            s.notes.push(detail);
            Ok(())
        })
    });
    engine.register_fn("minefield", |name: &str, detail: &str| -> Result<(), Box<EvalAltResult>> {
        with_session(|s| {
            let declared = s.minefield_names.iter().find(|n| **n == name).copied();
            let name =
                declared.ok_or_else(|| format!("minefield `{name}` is not declared in the world's `minefields`"))?;
            s.minefields.push((name, detail.to_string()));
            Ok(())
        })
    });
    engine.register_fn("calls", |tool: &str| -> Result<Array, Box<EvalAltResult>> {
        with_session(|s| Ok(s.calls.iter().filter(|(t, _)| *t == tool).map(|(_, a)| to_dynamic(a)).collect()))
    });
    engine.register_fn("called", |tool: &str| -> Result<bool, Box<EvalAltResult>> {
        with_session(|s| Ok(s.calls.iter().any(|(t, _)| *t == tool)))
    });
    engine.register_fn("told", || -> Result<Array, Box<EvalAltResult>> {
        with_session(|s| Ok(s.told.iter().map(to_dynamic).collect()))
    });
    engine.register_fn("reached", |milestone: &str| -> Result<bool, Box<EvalAltResult>> {
        with_session(|s| Ok(s.reached.contains(&milestone)))
    });
    register_sessions(engine);
}

/// `session`, `written_by_other`: what a predicate sees of the other sessions
/// in a run of many (`docs/sessions.md`).
fn register_sessions(engine: &mut Engine) {
    engine.register_fn("session", || -> Result<i64, Box<EvalAltResult>> {
        // 0 in a run of one session; -1 while a world process runs in a run
        // of many.
        with_session(|s| {
            Ok(match (s.state.acting(), s.state.tracks_writers()) {
                (Some(session), _) => i64::from(session),
                (None, true) => -1,
                (None, false) => 0,
            })
        })
    });
    engine.register_fn("written_by_other", |table: &str, key: Dynamic| -> Result<bool, Box<EvalAltResult>> {
        let key = key_of(&key)?;
        with_session(|s| {
            let writer = s.state.writer_before(table, &key)?;
            Ok(writer.is_some() && writer != s.state.acting())
        })
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentsim_engine::{Float, StreamSource};

    /// A session over no tables, with milestones `reached`.
    fn session(reached: Vec<&'static str>) -> Option<Box<Session>> {
        Some(Box::new(Session {
            state: State::new(std::sync::Arc::new(Vec::new())),
            now_ms: 0,
            rng: StreamSource::new([0; 32], 0).stream("test").into(),
            writable: false,
            notes: Vec::new(),
            minefields: Vec::new(),
            minefield_names: std::sync::Arc::from([]),
            calls: Vec::new(),
            told: Vec::new(),
            reached,
        }))
    }

    /// Every predicate of a small grammar over values of every kind: where
    /// Rust decides one, Rhai gives the same answer; and Rust decides the
    /// common shapes.
    #[test]
    fn native_predicates_agree_with_rhai() {
        let facts = Value::Map(vec![
            ("id".into(), Value::str("A1")),
            ("n".into(), Value::Int(3)),
            ("flag".into(), Value::Bool(true)),
            ("x".into(), Value::Float(Float::new(3.0).expect("finite"))),
            ("none".into(), Value::Null),
            ("twice".into(), Value::Int(1)),
            ("twice".into(), Value::Int(2)),
            (
                "items".into(),
                Value::List(vec![
                    Value::map([("id", Value::str("A1")), ("n", Value::Int(3))]),
                    Value::map([("id", Value::str("B2")), ("n", Value::Int(4))]),
                ]),
            ),
            ("empty".into(), Value::List(Vec::new())),
            (
                "mixed".into(),
                Value::List(vec![
                    Value::map([("id", Value::str("A1"))]),
                    Value::Int(7),
                    Value::map([("n", Value::Int(3))]),
                ]),
            ),
            ("long".into(), Value::List((0..20).map(|n| Value::map([("n", Value::Int(n))])).collect())),
        ]);
        let args = Value::map([
            ("id", Value::str("A1")),
            ("n", Value::Int(3)),
            ("m", Value::str("3")),
            ("nested", Value::map([("k", Value::str("v"))])),
        ]);
        let action = Value::map([
            ("tool", Value::str("t")),
            ("args", args),
            ("ok", Value::Bool(true)),
            ("status", Value::Int(200)),
            (
                "result",
                Value::map([
                    ("list", Value::List(vec![Value::Int(1)])),
                    (
                        "items",
                        Value::List(vec![
                            Value::map([("id", Value::str("A1")), ("n", Value::Int(3))]),
                            Value::map([("id", Value::str("B2")), ("n", Value::Int(4)), ("flag", Value::Bool(true))]),
                        ]),
                    ),
                ]),
            ),
        ]);
        let operands = [
            "facts.id",
            "facts.n",
            "facts.flag",
            "facts.x",
            "facts.none",
            "facts.twice",
            "facts.missing",
            "action.args.id",
            "action.args.n",
            "action.args.m",
            "action.args.nested.k",
            "action.args.nested",
            "action.args.id.k",
            "action.tool",
            "action.ok",
            "action.status",
            "action.result.list",
            "\"A1\"",
            "\"t\"",
            "\"\"",
            "3",
            "200",
            "true",
            "false",
        ];
        let mut texts: Vec<String> = Vec::new();
        for a in operands {
            texts.push(a.to_string());
            for b in operands {
                texts.push(format!("{a} == {b}"));
                texts.push(format!("{a}!={b}"));
            }
        }
        let terms: Vec<String> = texts.clone();
        for (i, a) in terms.iter().enumerate().step_by(7) {
            let b = &terms[(i * 31 + 5) % terms.len()];
            texts.push(format!("{a} && {b}"));
            texts.push(format!("reached(\"m1\") && {a} && {b}"));
            texts.push(format!("{a} && reached(\"m2\")"));
        }
        // Quantified terms: over lists of maps, empty lists, items of mixed
        // kinds, a list too long to read natively, a value that is no list;
        // closures that shadow a variable, nest, or read outside variables.
        for list in [
            "facts.items",
            "facts.empty",
            "facts.mixed",
            "facts.long",
            "facts.id",
            "facts.missing",
            "action.result.items",
            "action.result.list",
        ] {
            for quantifier in ["some", "all"] {
                for body in [
                    "r.id == facts.id",
                    "r.n == 3",
                    "r.n != 3 && r.id == \"B2\"",
                    "r.n == facts.n && reached(\"m1\")",
                    "r.flag",
                    "r == 7",
                    "facts.n == 3",
                    "r.n == 4 && facts.items.all(|q| q.n != 0)",
                    "r.n == 4 && action.result.items.all(|q| q.n != 0)",
                    "r.n == 4 && facts.items.all(|q| q.n != r.n)",
                ] {
                    texts.push(format!("{list}.{quantifier}(|r| {body})"));
                    texts.push(format!("action.ok && {list}.{quantifier}(|r| {body})"));
                }
                texts.push(format!("{list}.{quantifier}(|facts| facts.n == 3)"));
            }
        }
        texts.push("action.result.list.some(|x| x == 1)".into());
        let mut program = Program::compile("", &Limits::default()).expect("compiles");
        let vars = [("facts", &facts), ("action", &action)];
        let (mut decided, mut quantified_decided) = (0, 0);
        for text in &texts {
            let Ok(index) = program.add_predicate(text) else { continue };
            let native = program.native(index, &Vars(&vars), &["m1"]);
            let mut session = session(vec!["m1"]);
            let mut scope = Scope::new();
            for (name, value) in vars {
                scope.push_constant_dynamic(name, to_dynamic(value));
            }
            let rhai = program.predicate_in(&mut session, &mut scope, index);
            if let Some(holds) = native {
                assert_eq!(Ok(holds), rhai, "`{text}`");
                decided += 1;
                quantified_decided += usize::from(text.contains(".some(") || text.contains(".all("));
            }
        }
        assert!(decided >= 300, "Rust decided only {decided} of {} predicates", texts.len());
        assert!(quantified_decided >= 50, "Rust decided only {quantified_decided} quantified predicates");
        for text in [
            r#"action.tool == "issue_refund" && action.ok && action.args.order_id != facts.order_id"#,
            r#"action.tool == "send_message" && action.args.kind == "done" && reached("refunded")"#,
            "result.status == facts.status",
            "result.refunds.some(|r| r.amount_cents == facts.amount_cents)",
            "result.items.all(|item| item.status == \"returned\" && item.ok)",
        ] {
            assert!(super::super::native::Conjunction::parse(text).is_some(), "`{text}` is native");
        }
        for text in [
            r#"calls("a").len() > 1"#,
            r#"get("t", facts.id).status == "closed""#,
            "result.refunds.some(|r, i| r.amount_cents == i)",
            "result.refunds.some(|| true)",
            "result.refunds.some(|r| r.a == 1 || r.b == 2)",
            "result.refunds.filter(|r| r.a == 1)",
            "result.refunds.some(|r| r.a == 1).b",
            "a == result.refunds.some(|r| r.a == 1)",
            "result.refunds.some(|this| this.a == 1)",
            "x.some(|a| a.p == 1 && a.p == 1 && a.p == 1 && a.p == 1 && a.p == 1)",
            "x.some(|a| a.p == 1) && x.some(|a| a.p == 1) && x.some(|a| a.p == 1) && x.some(|a| a.p == 1) && x.some(|a| a.p == 1) && x.some(|a| a.p == 1)",
            "a == 1.5",
            "a == -1",
            "a == 0x1",
            "a == 1_000",
            r#"a == "x\"y""#,
            "a == b || c",
            "a == b == c",
            "a === b",
            "(a == b)",
            "a == b // note",
            "a.b[0] == 1",
        ] {
            assert_eq!(super::super::native::Conjunction::parse(text), None, "`{text}` is left to Rhai");
        }
    }

    /// The costliest predicate Rust decides runs in Rhai within the smallest
    /// operation limit under which Rust decides at all: a native answer never
    /// stands where Rhai would have stopped at the limit.
    #[test]
    fn native_predicates_stay_under_the_operations_floor() {
        use super::super::native::{COST_MAX, Conjunction, ELEMENTS_MAX, OPERATIONS_MIN};
        let item = Value::map([("a", Value::Int(1)), ("b", Value::str("x")), ("c", Value::Bool(true))]);
        let facts = Value::map([("a", Value::Int(1)), ("b", Value::str("x"))]);
        let result = Value::map([("list", Value::List(vec![item; ELEMENTS_MAX]))]);
        // Every item satisfies every closure term, so `all` reads them all.
        let quantified = "result.list.all(|r| r.a == facts.a && r.b == facts.b && r.c && r.a != 2)";
        let mut text = quantified.to_string();
        while let Some(cost) = Conjunction::parse(&format!("{text} && facts.b == \"x\"")).map(|c| c.cost()) {
            assert!(cost <= COST_MAX);
            text = format!("{text} && facts.b == \"x\"");
        }
        assert_eq!(Conjunction::parse(&text).map(|c| c.cost()), Some(COST_MAX), "`{text}`");
        let limits = Limits { operations_max: OPERATIONS_MIN, ..Limits::default() };
        let mut program = Program::compile("", &limits).expect("compiles");
        let index = program.add_predicate(&text).expect("a predicate");
        let vars = [("facts", &facts), ("result", &result)];
        assert_eq!(program.native(index, &Vars(&vars), &[]), Some(true));
        let mut session = session(Vec::new());
        let mut scope = Scope::new();
        for (name, value) in vars {
            scope.push_constant_dynamic(name, to_dynamic(value));
        }
        assert_eq!(program.predicate_in(&mut session, &mut scope, index), Ok(true), "`{text}` in Rhai");
    }

    /// A misspelt field reads `()`; the error that follows names the field
    /// and keeps the line it is on.
    #[test]
    fn an_error_on_a_missing_field_names_it() {
        let source = "fn f(args) {\n    let record = #{name: \"x\", n: 1};\n    record.nmae + 1\n}\nfn g(args) { 1 + args.item.cnt }";
        let program = Program::compile(source, &Limits::default()).expect("compiles");
        let message = |name: &str| match program.call(
            &mut session(Vec::new()),
            name,
            vec![to_dynamic(&Value::map([("item", Value::map([("n", Value::Int(1))]))]))],
        ) {
            Err(Failure::Script { message, .. }) => message,
            other => panic!("{other:?}"),
        };
        let f = message("f");
        assert!(f.contains("line 3"), "{f}");
        assert!(f.contains("`record.nmae` is `()`: no field `nmae` there"), "{f}");
        let g = message("g");
        assert!(g.contains("`args.item.cnt` is `()`: no field `cnt` there"), "{g}");
        let mut program = Program::compile("", &Limits::default()).expect("compiles");
        let index = program.add_predicate("facts.nmae + 1 > 1").expect("a predicate");
        let facts = Value::map([("name", Value::str("x"))]);
        let answer = program.predicate(&mut session(Vec::new()), index, &[("facts", &facts)]);
        assert!(answer.as_ref().is_err_and(|e| e.message.contains("no field `nmae`")), "{answer:?}");
    }

    #[test]
    fn predicates_of_another_type_are_known_before_they_run() {
        let mut program = Program::compile("", &Limits::default()).expect("compiles");
        for (text, ty) in [
            ("42", Some("integer")),
            ("\"yes\"", Some("string")),
            ("1 + 2", Some("integer")),
            ("facts.n + 1", Some("number or string")),
            ("count(\"t\")", Some("integer")),
            ("facts.list.len()", Some("integer")),
            ("action.ok && facts.n + 1", Some("number or string")),
            ("true", None),
            ("facts.n > 1", None),
            ("facts.flag", None),
            ("has(\"t\", facts.id)", None),
            ("facts.n ?? true", None),
        ] {
            let index = program.add_predicate(text).expect("a predicate");
            assert_eq!(program.static_non_boolean(index), ty, "`{text}`");
        }
    }

    #[test]
    fn a_predicate_about_one_tool_is_guarded_by_it() {
        let guard = |e: &str| tool_guard(e).map(|g| g.to_string());
        assert_eq!(guard(r#"action.tool == "issue_refund""#), Some("issue_refund".into()));
        assert_eq!(guard(r#"  action.tool=="a" && action.ok"#), Some("a".into()));
        // Anything that could hold for another tool is not guarded.
        assert_eq!(guard(r#"action.tool == "a" && x || y"#), None);
        assert_eq!(guard(r#"action.tool == "a" && (x ?? true)"#), None);
        assert_eq!(guard(r#"action.tool == "a" == false"#), None);
        assert_eq!(guard(r#"action.tool == "a\"b" && x"#), None);
        assert_eq!(guard(r#"x && action.tool == "a""#), None);
        assert_eq!(guard(r#"action.tool != "a" && x"#), None);
    }

    /// A program keeps a session's `calls` exactly when some code may read
    /// them: `calls`/`called` in a function or a predicate, as a method, or
    /// through a function pointer (made by `Fn`, folded into a constant, or
    /// a closure's body); not for code that never can.
    #[test]
    fn knows_whether_code_may_read_the_calls() {
        let limits = Limits::default();
        let cases: [(&str, &[&str], bool); 12] = [
            ("fn step(args) { put(\"done\", args.step, args); args }", &["facts.n == 1"], false),
            ("fn step(args) { args }", &[r#"action.tool == "a" && action.ok"#], false),
            ("fn step(args) { args } // calls(\"a\") in a comment", &[], false),
            ("fn step(args) { let recall = 1; args }", &[r#"count("calls") > 0"#], false),
            ("fn step(args) { calls(\"a\"); args }", &[], true),
            ("fn step(args) { if called(\"a\") { 1 } else { 2 } }", &[], true),
            ("fn step(args) { args }", &[r#"calls("a").len() > 1"#], true),
            ("fn step(args) { args }", &[r#"facts.n == 1"#, r#""a".called()"#], true),
            ("fn step(args) { let f = Fn(\"calls\"); f.call(\"a\") }", &[], true),
            ("fn step(args) { let f = Fn(\"cal\" + \"ls\"); args }", &[], true),
            ("fn step(args) { let g = |t| called(t); args }", &[], true),
            ("fn step(args) { args }", &[r#"call(Fn("called"), "a")"#], true),
        ];
        for (script, predicates, reads) in cases {
            let mut program = Program::compile(script, &limits).expect("compiles");
            for p in predicates {
                program.add_predicate(p).expect("compiles");
            }
            assert_eq!(program.may_read_calls(), reads, "{script} with {predicates:?}");
        }
    }
}

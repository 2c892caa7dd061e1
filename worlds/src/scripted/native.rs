//! Predicates simple enough to decide without Rhai. Most predicates a world
//! declares are a chain of comparisons, `action.tool == "issue_refund" &&
//! action.args.order_id == facts.order_id`, and are evaluated after every call
//! they may hold for: converting the call and the facts into script values and
//! running the interpreter for them cost more than the tool body did.
//!
//! A [`Conjunction`] is read from the predicate's text when the whole text is
//! `TERM && TERM && ...`, each term one of
//! - `OPERAND == OPERAND` or `OPERAND != OPERAND`, an operand being a path
//!   (`facts.order_id`, `action.args.amount_cents`), a string literal without
//!   escapes, a decimal integer or `true`/`false`;
//! - a bare path (`action.ok`);
//! - `reached("NAME")`;
//! - `PATH.some(|NAME| TERM && ...)` or `PATH.all(|NAME| TERM && ...)`, the
//!   path leading to a list of at most [`ELEMENTS_MAX`] items and the closure's
//!   terms of these same kinds, `NAME` standing for each item in turn (the
//!   `verify` predicates of gold actions are mostly of this shape:
//!   `result.refunds.some(|r| r.amount_cents == facts.amount_cents)`).
//!   A closure that reads the variable a quantified list is read from
//!   (`facts.items.some(|r| r.id == facts.id)`) is a data-race error in Rhai,
//!   so such a predicate is left to Rhai whole.
//!
//! Rust decides it only where Rhai's answer is certain: every path it reads
//! leads through maps to a string, an integer or a boolean, and the two sides
//! of a comparison have the same type (where `==` is plain equality in Rhai
//! too). Anything else (a missing field, a float, a list, types that differ, a
//! bare path that is not a boolean) gives `None`, and the caller runs the
//! predicate in Rhai as before, so a predicate's answer, and the error a
//! failing one notes, never depend on which of the two decided it. Terms are
//! read left to right and a false one ends the reading, as `&&` does; none has
//! an effect, so a predicate Rhai finishes after Rust gave up on it sees the
//! same world.

use agentsim_engine::Value;

/// A predicate as a chain of terms joined by `&&`.
#[derive(Clone, Debug, PartialEq)]
pub struct Conjunction {
    terms: Vec<Term>,
}

#[derive(Clone, Debug, PartialEq)]
enum Term {
    /// `left == right` (`equal`) or `left != right`.
    Compare { left: Operand, right: Operand, equal: bool },
    /// A path that must lead to a boolean.
    Path(Path),
    /// `reached("NAME")`.
    Reached(String),
    /// `list.some(|var| body)` (`all` false) or `list.all(|var| body)`.
    Quantified { list: Path, var: String, body: Conjunction, all: bool },
}

#[derive(Clone, Debug, PartialEq)]
enum Operand {
    Path(Path),
    Str(String),
    Int(i64),
    Bool(bool),
}

/// A variable and the fields read from it, in order.
#[derive(Clone, Debug, PartialEq)]
struct Path {
    root: String,
    fields: Vec<String>,
}

/// A value a native predicate compares: the types where Rhai's `==` between
/// two values of the same type is plain equality.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scalar<'v> {
    /// A string.
    Str(&'v str),
    /// An integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
}

/// Terms in a conjunction at most: with Rhai's default operation limits far
/// above what this many terms cost, a native answer cannot hide a limit hit.
const TERMS_MAX: usize = 32;

/// Items of a list a quantified term reads at most; longer lists are left to
/// Rhai.
pub const ELEMENTS_MAX: usize = 16;

/// Terms in a quantified term's closure at most.
const BODY_TERMS_MAX: usize = 4;

/// The most terms a native predicate may read in all, counting a quantified
/// term as its closure's terms once per item it may read (see
/// [`Conjunction::cost`]): Rhai spends a few operations per term read, so a
/// predicate within this bound stays below [`OPERATIONS_MIN`] (checked by
/// `script::tests::native_predicates_stay_under_the_operations_floor`) and a
/// native answer cannot hide a limit hit.
pub const COST_MAX: usize = 96;

/// The operation limit under which predicates always run in Rhai (a tiny
/// limit could stop a long chain that Rust would have finished).
pub const OPERATIONS_MIN: u64 = 1_000;

/// What a predicate's variables hold.
pub trait Bindings {
    /// The scalar at `fields` under variable `root`; `None` when the variable
    /// is not bound, a field is missing or given twice, a step is not a map,
    /// or the value there is not a string, an integer or a boolean.
    fn scalar(&self, root: &str, fields: &[String]) -> Option<Scalar<'_>>;

    /// The items of the list at `fields` under variable `root`; `None` as for
    /// [`Bindings::scalar`], or when the value there is not a list.
    fn list(&self, root: &str, fields: &[String]) -> Option<&[Value]>;
}

/// The value at `fields` under `value`: `None` when a field is missing or given
/// twice, or a step is not a map.
fn walk<'v>(value: &'v Value, fields: &[String]) -> Option<&'v Value> {
    let mut at = value;
    for field in fields {
        let Value::Map(pairs) = at else { return None };
        let mut found = pairs.iter().filter(|(k, _)| k == field);
        let (_, next) = found.next()?;
        if found.next().is_some() {
            // A script sees the last of two equal keys; leave that to Rhai.
            return None;
        }
        at = next;
    }
    Some(at)
}

/// The scalar at `fields` under `value` (see [`Bindings::scalar`]).
pub fn scalar_at<'v>(value: &'v Value, fields: &[String]) -> Option<Scalar<'v>> {
    match walk(value, fields)? {
        Value::Str(s) => Some(Scalar::Str(s)),
        Value::Int(n) => Some(Scalar::Int(*n)),
        Value::Bool(b) => Some(Scalar::Bool(*b)),
        _ => None,
    }
}

/// The items of the list at `fields` under `value` (see [`Bindings::list`]).
pub fn list_at<'v>(value: &'v Value, fields: &[String]) -> Option<&'v [Value]> {
    match walk(value, fields)? {
        Value::List(items) => Some(items),
        _ => None,
    }
}

/// The variables of a quantified term's closure: the item under its name,
/// everything else as outside.
struct Item<'b> {
    var: &'b str,
    item: &'b Value,
    outer: &'b dyn Bindings,
}

impl Bindings for Item<'_> {
    fn scalar(&self, root: &str, fields: &[String]) -> Option<Scalar<'_>> {
        if root == self.var { scalar_at(self.item, fields) } else { self.outer.scalar(root, fields) }
    }

    fn list(&self, root: &str, fields: &[String]) -> Option<&[Value]> {
        if root == self.var { list_at(self.item, fields) } else { self.outer.list(root, fields) }
    }
}

impl Conjunction {
    /// The conjunction `text` is, when it is one (see the module docs).
    pub fn parse(text: &str) -> Option<Conjunction> {
        let tokens = tokens(text)?;
        let mut parser = Parser { tokens: &tokens, at: 0 };
        let conjunction = parser.conjunction(TERMS_MAX)?;
        if parser.at != tokens.len() || conjunction.cost() > COST_MAX {
            return None;
        }
        let (mut captured, mut lists) = (Vec::new(), Vec::new());
        conjunction.variables(&[], false, &mut captured, &mut lists);
        // A closure shares what it captures; Rhai then refuses to call a
        // method on a list read from a shared variable.
        (!captured.iter().any(|root| lists.contains(root))).then_some(conjunction)
    }

    /// The free variables the closures read (`captured`, when `in_closure`)
    /// and the variables quantified lists are read from (`lists`), with the
    /// closure parameters in `bound` not counted.
    fn variables<'c>(
        &'c self,
        bound: &[&str],
        in_closure: bool,
        captured: &mut Vec<&'c str>,
        lists: &mut Vec<&'c str>,
    ) {
        let read = |path: &'c Path, captured: &mut Vec<&'c str>| {
            if in_closure && !bound.contains(&path.root.as_str()) {
                captured.push(&path.root);
            }
        };
        for term in &self.terms {
            match term {
                Term::Compare { left, right, .. } => {
                    for operand in [left, right] {
                        if let Operand::Path(path) = operand {
                            read(path, captured);
                        }
                    }
                }
                Term::Path(path) => read(path, captured),
                Term::Reached(_) => {}
                Term::Quantified { list, var, body, .. } => {
                    read(list, captured);
                    lists.push(&list.root);
                    let mut inner = bound.to_vec();
                    inner.push(var);
                    body.variables(&inner, true, captured, lists);
                }
            }
        }
    }

    /// The most terms reading it may take: a quantified term counts its
    /// closure's terms once per item, for the longest list read natively.
    pub fn cost(&self) -> usize {
        self.terms
            .iter()
            .map(|term| match term {
                Term::Quantified { body, .. } => 1 + ELEMENTS_MAX * body.cost(),
                _ => 1,
            })
            .sum()
    }

    /// Whether the predicate holds, when Rust can say so for certain;
    /// `reached` lists the milestones reached so far.
    pub fn eval(&self, vars: &dyn Bindings, reached: &[&str]) -> Option<bool> {
        for term in &self.terms {
            let holds = match term {
                Term::Compare { left, right, equal } => {
                    let (left, right) = (operand(left, vars)?, operand(right, vars)?);
                    let same = match (left, right) {
                        (Scalar::Str(a), Scalar::Str(b)) => a == b,
                        (Scalar::Int(a), Scalar::Int(b)) => a == b,
                        (Scalar::Bool(a), Scalar::Bool(b)) => a == b,
                        _ => return None,
                    };
                    same == *equal
                }
                Term::Path(path) => match vars.scalar(&path.root, &path.fields)? {
                    Scalar::Bool(b) => b,
                    _ => return None,
                },
                Term::Reached(name) => reached.contains(&name.as_str()),
                Term::Quantified { list, var, body, all } => {
                    let items = vars.list(&list.root, &list.fields)?;
                    if items.len() > ELEMENTS_MAX {
                        return None;
                    }
                    // As Rhai's `some`/`all`: items in order, the first that
                    // decides ends the reading.
                    let mut holds = *all;
                    for item in items {
                        let one = body.eval(&Item { var, item, outer: vars }, reached)?;
                        if one != *all {
                            holds = one;
                            break;
                        }
                    }
                    holds
                }
            };
            if !holds {
                return Some(false);
            }
        }
        Some(true)
    }
}

fn operand<'v>(operand: &'v Operand, vars: &'v dyn Bindings) -> Option<Scalar<'v>> {
    match operand {
        Operand::Path(path) => vars.scalar(&path.root, &path.fields),
        Operand::Str(s) => Some(Scalar::Str(s)),
        Operand::Int(n) => Some(Scalar::Int(*n)),
        Operand::Bool(b) => Some(Scalar::Bool(*b)),
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Ident(String),
    Str(String),
    Int(i64),
    Dot,
    Equal,
    NotEqual,
    And,
    Open,
    Close,
    Pipe,
}

/// The tokens of `text`, or `None` at anything outside the small language.
fn tokens(text: &str) -> Option<Vec<Token>> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let rest = &text[i..];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let len = rest.find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_')).unwrap_or(rest.len());
            out.push(Token::Ident(rest[..len].to_string()));
            i += len;
        } else if c.is_ascii_digit() {
            let len = rest.find(|ch: char| !ch.is_ascii_alphanumeric()).unwrap_or(rest.len());
            let digits = &rest[..len];
            // Plain decimal only (no `_`, no `0x`, no leading zero, no float).
            if !digits.bytes().all(|d| d.is_ascii_digit()) || (digits.len() > 1 && digits.starts_with('0')) {
                return None;
            }
            if bytes.get(i + len) == Some(&b'.') {
                return None;
            }
            out.push(Token::Int(digits.parse().ok()?));
            i += len;
        } else if c == b'"' {
            let close = rest[1..].find(['"', '\\'])? + 1;
            if bytes[i + close] != b'"' {
                return None;
            }
            out.push(Token::Str(rest[1..close].to_string()));
            i += close + 1;
        } else {
            let (token, len) = match (c, bytes.get(i + 1)) {
                (b'=', Some(b'=')) => (Token::Equal, 2),
                (b'!', Some(b'=')) => (Token::NotEqual, 2),
                (b'&', Some(b'&')) => (Token::And, 2),
                // `||` (or, or a closure without parameters) is not ours.
                (b'|', Some(b'|')) => return None,
                (b'|', _) => (Token::Pipe, 1),
                (b'.', _) => (Token::Dot, 1),
                (b'(', _) => (Token::Open, 1),
                (b')', _) => (Token::Close, 1),
                _ => return None,
            };
            // `===`, `!==`, `&&&` and the like are not ours.
            if len == 2 && matches!(bytes.get(i + 2), Some(b'=' | b'&')) {
                return None;
            }
            out.push(token);
            i += len;
        }
    }
    Some(out)
}

struct Parser<'t> {
    tokens: &'t [Token],
    at: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn eat(&mut self, token: &Token) -> bool {
        let next = self.peek() == Some(token);
        self.at += usize::from(next);
        next
    }

    /// `TERM && TERM ...`, at most `terms_max` terms.
    fn conjunction(&mut self, terms_max: usize) -> Option<Conjunction> {
        let mut terms = vec![self.term()?];
        while self.eat(&Token::And) {
            terms.push(self.term()?);
        }
        (terms.len() <= terms_max).then_some(Conjunction { terms })
    }

    /// `.some(|NAME| CONJUNCTION)` or `.all(...)` after the path `list`.
    fn quantified(&mut self, list: Path) -> Option<Term> {
        let all = match self.peek() {
            Some(Token::Ident(name)) if name == "some" => false,
            Some(Token::Ident(name)) if name == "all" => true,
            _ => return None,
        };
        self.at += 1;
        if !(self.eat(&Token::Open) && self.eat(&Token::Pipe)) {
            return None;
        }
        let Some(Token::Ident(var)) = self.peek().cloned() else { return None };
        if KEYWORDS.contains(&var.as_str()) || var == "true" || var == "false" {
            return None;
        }
        self.at += 1;
        if !self.eat(&Token::Pipe) {
            return None;
        }
        let body = self.conjunction(BODY_TERMS_MAX)?;
        self.eat(&Token::Close).then_some(Term::Quantified { list, var, body, all })
    }

    fn term(&mut self) -> Option<Term> {
        if self.peek() == Some(&Token::Ident("reached".into())) && self.tokens.get(self.at + 1) == Some(&Token::Open) {
            self.at += 2;
            let Some(Token::Str(name)) = self.peek().cloned() else { return None };
            self.at += 1;
            return self.eat(&Token::Close).then_some(Term::Reached(name));
        }
        let left = self.operand()?;
        if let Operand::Path(list) = &left
            && self.peek() == Some(&Token::Dot)
        {
            // The path stopped before a call: only `.some(...)`/`.all(...)` are ours.
            self.at += 1;
            return self.quantified(list.clone());
        }
        let equal = match self.peek() {
            Some(Token::Equal) => true,
            Some(Token::NotEqual) => false,
            _ => {
                return match left {
                    Operand::Path(path) => Some(Term::Path(path)),
                    _ => None,
                };
            }
        };
        self.at += 1;
        let right = self.operand()?;
        Some(Term::Compare { left, right, equal })
    }

    fn operand(&mut self) -> Option<Operand> {
        let token = self.peek()?.clone();
        self.at += 1;
        match token {
            Token::Str(s) => Some(Operand::Str(s)),
            Token::Int(n) => Some(Operand::Int(n)),
            Token::Ident(name) if name == "true" || name == "false" => Some(Operand::Bool(name == "true")),
            Token::Ident(root) if !KEYWORDS.contains(&root.as_str()) => {
                let mut fields = Vec::new();
                while self.peek() == Some(&Token::Dot) {
                    match self.tokens.get(self.at + 1) {
                        // `.some(` / `.all(`: a method call, left to the caller.
                        Some(Token::Ident(_)) if self.tokens.get(self.at + 2) == Some(&Token::Open) => break,
                        Some(Token::Ident(field)) => fields.push(field.clone()),
                        _ => return None,
                    }
                    self.at += 2;
                }
                // A call (`calls("x")`, `x.len()`) is not a path.
                if self.peek() == Some(&Token::Open) {
                    return None;
                }
                Some(Operand::Path(Path { root, fields }))
            }
            _ => None,
        }
    }
}

/// Names Rhai reads as something other than a variable.
const KEYWORDS: [&str; 8] = ["this", "global", "fn", "let", "const", "if", "reached", "Fn"];

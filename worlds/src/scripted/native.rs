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
//! - `reached("NAME")`.
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

/// The operation limit under which predicates always run in Rhai (a tiny
/// limit could stop a long chain that Rust would have finished).
pub const OPERATIONS_MIN: u64 = 1_000;

/// What a predicate's variables hold.
pub trait Bindings {
    /// The scalar at `fields` under variable `root`; `None` when the variable
    /// is not bound, a field is missing or given twice, a step is not a map,
    /// or the value there is not a string, an integer or a boolean.
    fn scalar(&self, root: &str, fields: &[String]) -> Option<Scalar<'_>>;
}

/// The scalar at `fields` under `value` (see [`Bindings::scalar`]).
pub fn scalar_at<'v>(value: &'v Value, fields: &[String]) -> Option<Scalar<'v>> {
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
    match at {
        Value::Str(s) => Some(Scalar::Str(s)),
        Value::Int(n) => Some(Scalar::Int(*n)),
        Value::Bool(b) => Some(Scalar::Bool(*b)),
        _ => None,
    }
}

impl Conjunction {
    /// The conjunction `text` is, when it is one (see the module docs).
    pub fn parse(text: &str) -> Option<Conjunction> {
        let tokens = tokens(text)?;
        let mut parser = Parser { tokens: &tokens, at: 0 };
        let mut terms = vec![parser.term()?];
        while parser.eat(&Token::And) {
            terms.push(parser.term()?);
        }
        (parser.at == tokens.len() && terms.len() <= TERMS_MAX).then_some(Conjunction { terms })
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

    fn term(&mut self) -> Option<Term> {
        if self.peek() == Some(&Token::Ident("reached".into())) && self.tokens.get(self.at + 1) == Some(&Token::Open) {
            self.at += 2;
            let Some(Token::Str(name)) = self.peek().cloned() else { return None };
            self.at += 1;
            return self.eat(&Token::Close).then_some(Term::Reached(name));
        }
        let left = self.operand()?;
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
                while self.eat(&Token::Dot) {
                    match self.peek() {
                        Some(Token::Ident(field)) => fields.push(field.clone()),
                        _ => return None,
                    }
                    self.at += 1;
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

//! Arithmetic as Python evaluates it, for scripts of worlds ported from Python
//! (tau2-bench's `calculate`, `float(eval(expression))` over digits, `+ - * /`,
//! parentheses, dots and spaces): integers stay exact, `/` divides as floats,
//! `//` floors, `**` raises, unary signs, `()` is the empty tuple and `a(b)` a
//! call. The whole text is parsed before anything is evaluated, as Python
//! compiles it first; the errors are CPython's texts (3.11 and 3.12), syntax
//! errors with their `(<string>, line 1)`.
//!
//! Integers past 128 bits are kept as an approximation (a float, possibly
//! infinite): enough for Python's verdict on them (`int too large to convert
//! to float`), not for exact digits beyond a float's.
//!
//! The `String` errors here are deliberate, unlike the rest of agentsim's:
//! they are not library errors but CPython's error texts, the result a script
//! receives as data (`arithmetic` gives it to the world's code, which shows it
//! to the agent as Python would); nothing matches on them.

/// A result of [`evaluate`]: what `float()` accepts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Number {
    /// An integer (exact within 128 bits).
    Int(i128),
    /// A float.
    Float(f64),
}

/// A Python value an expression can produce on the way.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Py {
    Int(i128),
    /// An integer too large for 128 bits, approximated.
    Big(f64),
    Float(f64),
    /// A complex number (a negative base to a fractional power); its value is
    /// never needed: `float()` refuses it.
    Complex,
    /// `()`.
    Tuple,
}

impl Py {
    fn type_name(self) -> &'static str {
        match self {
            Py::Int(_) | Py::Big(_) => "int",
            Py::Float(_) => "float",
            Py::Complex => "complex",
            Py::Tuple => "tuple",
        }
    }

    /// Python's `float(x)` of a number, as the int-to-float conversion of a
    /// mixed operation does it.
    fn to_float(self) -> Result<f64, String> {
        match self {
            Py::Int(n) => Ok(n as f64),
            Py::Big(x) if x.is_finite() => Ok(x),
            Py::Big(_) => Err("int too large to convert to float".into()),
            Py::Float(x) => Ok(x),
            other => Err(format!("float() argument must be a string or a real number, not '{}'", other.type_name())),
        }
    }

    fn is_int(self) -> bool {
        matches!(self, Py::Int(_) | Py::Big(_))
    }

    fn approx(self) -> f64 {
        match self {
            Py::Int(n) => n as f64,
            Py::Big(x) | Py::Float(x) => x,
            _ => f64::NAN,
        }
    }
}

/// Tokens of an expression.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Token {
    Num(Py),
    Op(&'static str),
    Open,
    Close,
    /// A `.` that starts no number (an attribute access: a syntax error).
    Dot,
}

/// Expressions longer than this are refused (a bound on work and depth).
const EXPRESSION_BYTES_MAX: usize = 4_096;
/// Nesting of parentheses and unary signs, at most (CPython's tokenizer
/// allows 200 levels of parentheses).
const DEPTH_MAX: usize = 200;

/// A syntax error as `eval` words it.
fn syntax(message: &str) -> String {
    format!("{message} (<string>, line 1)")
}

/// One number literal from `at`: digits with at most one dot (`1.`, `.5`).
fn literal(text: &str, at: usize) -> (Result<Py, String>, usize) {
    let bytes = text.as_bytes();
    let mut end = at;
    let mut dot = false;
    while end < bytes.len() && (bytes[end].is_ascii_digit() || (bytes[end] == b'.' && !dot)) {
        dot |= bytes[end] == b'.';
        end += 1;
    }
    let lit = &text[at..end];
    if dot {
        return (lit.parse().map(Py::Float).map_err(|_| syntax("invalid syntax")), end);
    }
    if lit.len() > 1 && lit.starts_with('0') && lit.bytes().any(|d| d != b'0') {
        let message =
            "leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers";
        return (Err(syntax(message)), end);
    }
    let value = lit.parse::<i128>().map_or_else(|_| Py::Big(lit.parse().unwrap_or(f64::INFINITY)), Py::Int);
    (Ok(value), end)
}

/// The tokens, or the tokenizer's first error (a literal with leading zeros,
/// a `)` that closes nothing, a `(` never closed, too deep a nesting).
fn tokens(text: &str) -> Result<Vec<Token>, String> {
    let bytes = text.as_bytes();
    let (mut out, mut i, mut depth) = (Vec::new(), 0, 0usize);
    while i < bytes.len() {
        let next = bytes.get(i + 1).copied();
        let (token, len) = match bytes[i] {
            b' ' | b'\t' => (None, 1),
            b'0'..=b'9' => {
                let (value, end) = literal(text, i);
                (Some(Token::Num(value?)), end - i)
            }
            b'.' if next.is_some_and(|b| b.is_ascii_digit()) => {
                let (value, end) = literal(text, i);
                (Some(Token::Num(value?)), end - i)
            }
            b'.' => (Some(Token::Dot), 1),
            b'+' => (Some(Token::Op("+")), 1),
            b'-' => (Some(Token::Op("-")), 1),
            b'*' if next == Some(b'*') => (Some(Token::Op("**")), 2),
            b'*' => (Some(Token::Op("*")), 1),
            b'/' if next == Some(b'/') => (Some(Token::Op("//")), 2),
            b'/' => (Some(Token::Op("/")), 1),
            b'(' => {
                depth += 1;
                if depth >= DEPTH_MAX {
                    return Err(syntax("too many nested parentheses"));
                }
                (Some(Token::Open), 1)
            }
            b')' if depth == 0 => return Err(syntax("unmatched ')'")),
            b')' => (depth -= 1, (Some(Token::Close), 1)).1,
            _ => return Err(syntax("invalid syntax")),
        };
        out.extend(token);
        i += len;
    }
    if depth > 0 {
        return Err(syntax("'(' was never closed"));
    }
    Ok(out)
}

/// An expression, parsed.
#[derive(Debug)]
enum Ast {
    Num(Py),
    Tuple,
    Unary(&'static str, Box<Ast>),
    Binary(&'static str, Box<Ast>, Box<Ast>),
    /// `callee(argument)`.
    Call(Box<Ast>, Option<Box<Ast>>),
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
    /// Parentheses open around the current token.
    level: usize,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> Option<Token> {
        self.tokens.get(self.at).copied()
    }

    /// The error at the current token: inside parentheses, an expression
    /// right after another is Python's missing comma.
    fn error(&self) -> String {
        let juxtaposed = self.at > 0
            && matches!(self.tokens[self.at - 1], Token::Num(_) | Token::Close)
            && matches!(self.peek(), Some(Token::Num(_)));
        if juxtaposed && self.level > 0 {
            syntax("invalid syntax. Perhaps you forgot a comma?")
        } else {
            syntax("invalid syntax")
        }
    }

    fn binary_level(&mut self, ops: &[&str], next: fn(&mut Parser) -> Result<Ast, String>) -> Result<Ast, String> {
        let mut left = next(self)?;
        while let Some(Token::Op(op)) = self.peek() {
            if !ops.contains(&op) {
                break;
            }
            self.at += 1;
            left = Ast::Binary(op, Box::new(left), Box::new(next(self)?));
        }
        Ok(left)
    }

    fn expr(&mut self) -> Result<Ast, String> {
        self.binary_level(&["+", "-"], Parser::term)
    }

    fn term(&mut self) -> Result<Ast, String> {
        self.binary_level(&["*", "/", "//"], Parser::factor)
    }

    fn factor(&mut self) -> Result<Ast, String> {
        if let Some(Token::Op(op @ ("+" | "-"))) = self.peek() {
            self.at += 1;
            self.depth += 1;
            if self.depth > DEPTH_MAX {
                return Err(syntax("too many nested parentheses"));
            }
            let operand = self.factor()?;
            self.depth -= 1;
            return Ok(Ast::Unary(op, Box::new(operand)));
        }
        let base = self.primary()?;
        if let Some(Token::Op("**")) = self.peek() {
            self.at += 1;
            return Ok(Ast::Binary("**", Box::new(base), Box::new(self.factor()?)));
        }
        Ok(base)
    }

    fn primary(&mut self) -> Result<Ast, String> {
        let mut value = self.atom()?;
        while self.peek() == Some(Token::Open) {
            self.at += 1;
            self.level += 1;
            let argument = if self.peek() == Some(Token::Close) { None } else { Some(Box::new(self.expr()?)) };
            self.close()?;
            value = Ast::Call(Box::new(value), argument);
        }
        Ok(value)
    }

    fn atom(&mut self) -> Result<Ast, String> {
        match self.peek() {
            Some(Token::Num(n)) => {
                self.at += 1;
                Ok(Ast::Num(n))
            }
            Some(Token::Open) => {
                self.at += 1;
                self.level += 1;
                if self.peek() == Some(Token::Close) {
                    self.close()?;
                    return Ok(Ast::Tuple);
                }
                let value = self.expr()?;
                self.close()?;
                Ok(value)
            }
            _ => Err(self.error()),
        }
    }

    fn close(&mut self) -> Result<(), String> {
        if self.peek() != Some(Token::Close) {
            return Err(self.error());
        }
        self.at += 1;
        self.level -= 1;
        Ok(())
    }
}

fn eval(ast: &Ast) -> Result<Py, String> {
    match ast {
        Ast::Num(n) => Ok(*n),
        Ast::Tuple => Ok(Py::Tuple),
        Ast::Unary(op, operand) => match (eval(operand)?, *op) {
            (Py::Tuple, op) => Err(format!("bad operand type for unary {op}: 'tuple'")),
            (v, "+") => Ok(v),
            (Py::Int(n), _) => Ok(n.checked_neg().map_or(Py::Big(-(n as f64)), Py::Int)),
            (Py::Big(x), _) => Ok(Py::Big(-x)),
            (Py::Float(x), _) => Ok(Py::Float(-x)),
            (v, _) => Ok(v),
        },
        Ast::Binary(op, a, b) => binary(op, eval(a)?, eval(b)?),
        Ast::Call(callee, argument) => {
            let callee = eval(callee)?;
            if let Some(argument) = argument {
                eval(argument)?;
            }
            Err(format!("'{}' object is not callable", callee.type_name()))
        }
    }
}

/// A binary operation on values of any kind: the tuple's and the complex
/// number's rules first, then numbers.
fn binary(op: &str, a: Py, b: Py) -> Result<Py, String> {
    let unsupported = || {
        let shown = if op == "**" { "** or pow()" } else { op };
        format!("unsupported operand type(s) for {shown}: '{}' and '{}'", a.type_name(), b.type_name())
    };
    match (op, a, b) {
        ("+", Py::Tuple, Py::Tuple) => Ok(Py::Tuple),
        ("+", Py::Tuple, other) => Err(format!("can only concatenate tuple (not \"{}\") to tuple", other.type_name())),
        ("*", Py::Tuple, n) | ("*", n, Py::Tuple) if n.is_int() => Ok(Py::Tuple),
        ("*", Py::Tuple, other) | ("*", other, Py::Tuple) => {
            Err(format!("can't multiply sequence by non-int of type '{}'", other.type_name()))
        }
        (_, Py::Tuple, _) | (_, _, Py::Tuple) => Err(unsupported()),
        ("//", Py::Complex, _) | ("//", _, Py::Complex) => Err(unsupported()),
        ("/", Py::Complex, d) if d.approx() == 0.0 => Err("complex division by zero".into()),
        (_, Py::Complex, _) | (_, _, Py::Complex) => Ok(Py::Complex),
        _ if a.is_int() && b.is_int() => integers(op, a, b),
        _ => floats(op, a.to_float()?, b.to_float()?),
    }
}

/// `a op b` on two integers, exact within 128 bits.
fn integers(op: &str, a: Py, b: Py) -> Result<Py, String> {
    let (x, y) = (a.approx(), b.approx());
    let exact = match (a, b) {
        (Py::Int(p), Py::Int(q)) => Some((p, q)),
        _ => None,
    };
    let big = |checked: Option<i128>, approx: f64| Ok(checked.map_or(Py::Big(approx), Py::Int));
    match op {
        "+" => big(exact.and_then(|(p, q)| p.checked_add(q)), x + y),
        "-" => big(exact.and_then(|(p, q)| p.checked_sub(q)), x - y),
        "*" => big(exact.and_then(|(p, q)| p.checked_mul(q)), x * y),
        "/" if y == 0.0 => Err("division by zero".into()),
        "/" if !x.is_finite() || !y.is_finite() => Err("integer division result too large for a float".into()),
        "/" => Ok(Py::Float(x / y)),
        "//" if y == 0.0 => Err("integer division or modulo by zero".into()),
        "//" => Ok(match exact {
            Some((p, q)) => Py::Int(p.div_euclid(q) - i128::from(q < 0 && p.rem_euclid(q) != 0)),
            None => Py::Big((x / y).floor()),
        }),
        _ if y < 0.0 && x == 0.0 => Err("0.0 cannot be raised to a negative power".into()),
        _ if y < 0.0 => floats("**", a.to_float()?, b.to_float()?),
        _ => {
            let checked = exact.and_then(|(p, q)| u32::try_from(q).ok().and_then(|e| p.checked_pow(e)));
            big(checked, x.powf(y))
        }
    }
}

/// `x op y` on floats, as Python's float operations do it.
fn floats(op: &str, x: f64, y: f64) -> Result<Py, String> {
    Ok(Py::Float(match op {
        "+" => x + y,
        "-" => x - y,
        "*" => x * y,
        "/" if y == 0.0 => return Err("float division by zero".into()),
        "/" => x / y,
        "//" if y == 0.0 => return Err("float floor division by zero".into()),
        "//" => (x / y).floor(),
        _ if x == 0.0 && y < 0.0 => return Err("0.0 cannot be raised to a negative power".into()),
        _ if x < 0.0 && y.is_finite() && y.fract() != 0.0 => return Ok(Py::Complex),
        _ => {
            let r = x.powf(y);
            if r.is_infinite() && x.is_finite() && y.is_finite() {
                return Err("(34, 'Numerical result out of range')".into());
            }
            r
        }
    }))
}

/// Evaluates `text` as `float(eval(text))` does up to the float (an integer
/// result is kept exact); the error is Python's message.
pub fn evaluate(text: &str) -> Result<Number, String> {
    if text.len() > EXPRESSION_BYTES_MAX {
        return Err("expression too long".into());
    }
    // `eval` strips leading spaces and tabs; nothing left is line 0's error.
    if text.trim_start_matches([' ', '\t']).is_empty() {
        return Err("invalid syntax (<string>, line 0)".into());
    }
    let tokens = tokens(text)?;
    let mut parser = Parser { tokens, at: 0, level: 0, depth: 0 };
    let ast = parser.expr()?;
    if parser.at != parser.tokens.len() {
        return Err(parser.error());
    }
    match eval(&ast)? {
        Py::Int(n) => Ok(Number::Int(n)),
        other => other.to_float().map(Number::Float),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evaluates_as_python() {
        assert_eq!(evaluate("2 + 2"), Ok(Number::Int(4)));
        assert_eq!(evaluate("7 / 2"), Ok(Number::Float(3.5)));
        assert_eq!(evaluate("-7 // 2"), Ok(Number::Int(-4)));
        assert_eq!(evaluate("2 ** 3 ** 2"), Ok(Number::Int(512)));
        assert_eq!(evaluate("-2 ** 2"), Ok(Number::Int(-4)));
        assert_eq!(evaluate("(1.5 + 2) * 2"), Ok(Number::Float(7.0)));
        assert_eq!(evaluate("0.1 + 0.2"), Ok(Number::Float(0.1 + 0.2)));
        assert_eq!(evaluate("2**-1"), Ok(Number::Float(0.5)));
        assert_eq!(evaluate("10.0**300 * 10.0**300"), Ok(Number::Float(f64::INFINITY)));
        assert!(evaluate(&"(".repeat(300)).is_err());
    }

    /// CPython 3.11's texts for each (the same in 3.12), from tau2's `calculate`.
    #[test]
    fn errors_are_pythons() {
        let cases = [
            ("(1", "'(' was never closed (<string>, line 1)"),
            ("1)", "unmatched ')' (<string>, line 1)"),
            (
                "01",
                "leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers (<string>, line 1)",
            ),
            (
                "* 01",
                "leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers (<string>, line 1)",
            ),
            ("()", "float() argument must be a string or a real number, not 'tuple'"),
            ("(1)(2)", "'int' object is not callable"),
            ("(1)(1/0)", "division by zero"),
            ("2**1024", "int too large to convert to float"),
            ("(-8)**0.5", "float() argument must be a string or a real number, not 'complex'"),
            ("(-8)**0.5//1", "unsupported operand type(s) for //: 'complex' and 'int'"),
            ("10.0**400", "(34, 'Numerical result out of range')"),
            ("1/0", "division by zero"),
            ("3 / 0.0", "float division by zero"),
            ("1.0//0", "float floor division by zero"),
            ("0**-1", "0.0 cannot be raised to a negative power"),
            ("", "invalid syntax (<string>, line 0)"),
            ("  ", "invalid syntax (<string>, line 0)"),
            ("1 +", "invalid syntax (<string>, line 1)"),
            ("1..2", "invalid syntax (<string>, line 1)"),
            ("1 2", "invalid syntax (<string>, line 1)"),
            ("(1 2)", "invalid syntax. Perhaps you forgot a comma? (<string>, line 1)"),
            ("(1 2", "'(' was never closed (<string>, line 1)"),
            ("(*", "'(' was never closed (<string>, line 1)"),
            ("1 2)", "unmatched ')' (<string>, line 1)"),
            ("() + 1", "can only concatenate tuple (not \"int\") to tuple"),
            ("-()", "bad operand type for unary -: 'tuple'"),
            ("()()", "'tuple' object is not callable"),
        ];
        for (text, message) in cases {
            assert_eq!(evaluate(text), Err(message.to_string()), "{text:?}");
        }
        assert_eq!(evaluate("2**1024/2**1000").map_err(|_| ()), Err(()), "approximated: Python gives 16777216.0");
    }
}

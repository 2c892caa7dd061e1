//! Arithmetic as Python evaluates it, for scripts of worlds ported from Python
//! (tau2-bench's `calculate`): integers stay exact, `/` divides as floats,
//! `//` floors, `**` raises, unary signs, parentheses. Nothing else parses.

/// A Python number.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Number {
    /// An integer (exact within 128 bits).
    Int(i128),
    /// A float.
    Float(f64),
}

impl Number {
    fn float(self) -> f64 {
        match self {
            Number::Int(n) => n as f64,
            Number::Float(x) => x,
        }
    }
}

/// Tokens of an expression.
#[derive(Clone, Debug, PartialEq)]
enum Token {
    Num(Number),
    Op(&'static str),
    Open,
    Close,
}

/// Expressions longer than this are refused (a bound on work and depth).
const EXPRESSION_BYTES_MAX: usize = 4_096;
/// Nesting of parentheses and unary signs, at most.
const DEPTH_MAX: usize = 64;

fn tokens(text: &str) -> Result<Vec<Token>, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b' ' | b'\t' => i += 1,
            b'0'..=b'9' | b'.' => {
                let start = i;
                while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
                    i += 1;
                }
                let lit = &text[start..i];
                if lit.matches('.').count() > 1 || lit == "." {
                    return Err("invalid syntax".into());
                }
                if lit.contains('.') {
                    out.push(Token::Num(Number::Float(lit.parse().map_err(|_| "invalid syntax".to_string())?)));
                } else {
                    if lit.len() > 1 && lit.starts_with('0') && lit.bytes().any(|d| d != b'0') {
                        return Err("leading zeros in decimal integer literals are not permitted".into());
                    }
                    out.push(Token::Num(Number::Int(lit.parse().map_err(|_| "integer too large".to_string())?)));
                }
            }
            b'+' => (out.push(Token::Op("+")), i += 1).1,
            b'-' => (out.push(Token::Op("-")), i += 1).1,
            b'*' if bytes.get(i + 1) == Some(&b'*') => (out.push(Token::Op("**")), i += 2).1,
            b'*' => (out.push(Token::Op("*")), i += 1).1,
            b'/' if bytes.get(i + 1) == Some(&b'/') => (out.push(Token::Op("//")), i += 2).1,
            b'/' => (out.push(Token::Op("/")), i += 1).1,
            b'(' => (out.push(Token::Open), i += 1).1,
            b')' => (out.push(Token::Close), i += 1).1,
            _ => return Err("invalid syntax".into()),
        }
    }
    Ok(out)
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn deeper(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > DEPTH_MAX { Err("too many nested parentheses".into()) } else { Ok(()) }
    }

    fn expr(&mut self) -> Result<Number, String> {
        let mut left = self.term()?;
        while let Some(Token::Op(op @ ("+" | "-"))) = self.peek() {
            let op = *op;
            self.at += 1;
            let right = self.term()?;
            left = binary(op, left, right)?;
        }
        Ok(left)
    }

    fn term(&mut self) -> Result<Number, String> {
        let mut left = self.factor()?;
        while let Some(Token::Op(op @ ("*" | "/" | "//"))) = self.peek() {
            let op = *op;
            self.at += 1;
            let right = self.factor()?;
            left = binary(op, left, right)?;
        }
        Ok(left)
    }

    fn factor(&mut self) -> Result<Number, String> {
        if let Some(Token::Op(op @ ("+" | "-"))) = self.peek() {
            let op = *op;
            self.at += 1;
            self.deeper()?;
            let value = self.factor()?;
            self.depth -= 1;
            return Ok(match (op, value) {
                ("-", Number::Int(n)) => Number::Int(-n),
                ("-", Number::Float(x)) => Number::Float(-x),
                (_, v) => v,
            });
        }
        let base = self.atom()?;
        if let Some(Token::Op("**")) = self.peek() {
            self.at += 1;
            let exponent = self.factor()?;
            return binary("**", base, exponent);
        }
        Ok(base)
    }

    fn atom(&mut self) -> Result<Number, String> {
        match self.peek().cloned() {
            Some(Token::Num(n)) => {
                self.at += 1;
                Ok(n)
            }
            Some(Token::Open) => {
                self.at += 1;
                self.deeper()?;
                let value = self.expr()?;
                self.depth -= 1;
                if self.peek() != Some(&Token::Close) {
                    return Err("'(' was never closed".into());
                }
                self.at += 1;
                Ok(value)
            }
            _ => Err("invalid syntax".into()),
        }
    }
}

fn binary(op: &str, a: Number, b: Number) -> Result<Number, String> {
    use Number::{Float, Int};
    let overflow = || "integer result too large".to_string();
    Ok(match (op, a, b) {
        ("+", Int(x), Int(y)) => Int(x.checked_add(y).ok_or_else(overflow)?),
        ("-", Int(x), Int(y)) => Int(x.checked_sub(y).ok_or_else(overflow)?),
        ("*", Int(x), Int(y)) => Int(x.checked_mul(y).ok_or_else(overflow)?),
        ("+", x, y) => Float(x.float() + y.float()),
        ("-", x, y) => Float(x.float() - y.float()),
        ("*", x, y) => Float(x.float() * y.float()),
        ("/", Int(_), Int(0)) => return Err("division by zero".into()),
        ("/", _, y) if y.float() == 0.0 => return Err("float division by zero".into()),
        ("/", x, y) => Float(x.float() / y.float()),
        ("//", Int(_), Int(0)) => return Err("integer division or modulo by zero".into()),
        ("//", Int(x), Int(y)) => Int(x.div_euclid(y) - i128::from(y < 0 && x.rem_euclid(y) != 0)),
        ("//", _, y) if y.float() == 0.0 => return Err("float floor division by zero".into()),
        ("//", x, y) => Float((x.float() / y.float()).floor()),
        ("**", Int(x), Int(y)) if y >= 0 => {
            let e = u32::try_from(y).map_err(|_| overflow())?;
            Int(x.checked_pow(e).ok_or_else(overflow)?)
        }
        ("**", x, y) => {
            if x.float() == 0.0 && y.float() < 0.0 {
                return Err("0.0 cannot be raised to a negative power".into());
            }
            let r = x.float().powf(y.float());
            if r.is_nan() {
                return Err("complex result".into());
            }
            Float(r)
        }
        _ => return Err("invalid syntax".into()),
    })
}

/// Evaluates `text`; the error is Python's message, as near as it goes.
pub fn evaluate(text: &str) -> Result<Number, String> {
    if text.len() > EXPRESSION_BYTES_MAX {
        return Err("expression too long".into());
    }
    let tokens = tokens(text)?;
    let mut parser = Parser { tokens, at: 0, depth: 0 };
    let value = parser.expr()?;
    if parser.at != parser.tokens.len() {
        return Err(if parser.peek() == Some(&Token::Close) {
            "unmatched ')'".into()
        } else {
            "invalid syntax".into()
        });
    }
    match value {
        Number::Float(x) if !x.is_finite() => Err("numerical result out of range".into()),
        v => Ok(v),
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
        assert!(evaluate("1 / 0").is_err());
        assert!(evaluate("2 3").is_err());
        assert!(evaluate("(2").is_err());
        assert!(evaluate(&"(".repeat(100)).is_err());
    }
}

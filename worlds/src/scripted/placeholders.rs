//! `{name}` placeholders in the texts and gold arguments of a scripted world:
//! a text's pieces, a text filled with the user's facts, and the facts a
//! template needs.

use agentsim_engine::Value;

/// A placeholder `{name}` whose fact the user does not have.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MissingFact(pub String);

impl std::fmt::Display for MissingFact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no fact `{}`", self.0)
    }
}

impl std::error::Error for MissingFact {}

pub(super) fn is_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The pieces of a text: literal runs and `{name}` placeholders, in order (a
/// `{` that opens no name is literal).
pub(super) enum Piece<'t> {
    Text(&'t str),
    Fact(&'t str),
}

pub(super) fn pieces(text: &str) -> impl Iterator<Item = Piece<'_>> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let Some(open) = rest.find('{') else {
            return Some(Piece::Text(std::mem::take(&mut rest)));
        };
        if open > 0 {
            let (text, tail) = rest.split_at(open);
            rest = tail;
            return Some(Piece::Text(text));
        }
        let after = &rest[1..];
        match after.find('}').filter(|close| is_name(&after[..*close])) {
            Some(close) => {
                rest = &after[close + 1..];
                Some(Piece::Fact(&after[..close]))
            }
            None => {
                let (brace, tail) = rest.split_at(1);
                rest = tail;
                Some(Piece::Text(brace))
            }
        }
    })
}

/// `{name}` in a text replaced by the fact's value (a string without quotes).
pub fn fill_text(text: &str, facts: &Value) -> Result<String, MissingFact> {
    let mut out = String::with_capacity(text.len());
    for piece in pieces(text) {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Fact(name) => match facts.get(name) {
                Some(Value::Str(s)) => out.push_str(s),
                Some(v) => v.render_into(&mut out),
                None => return Err(MissingFact(name.to_string())),
            },
        }
    }
    Ok(out)
}

/// The names of the facts a template needs.
pub fn needed_facts(template: &Value, out: &mut Vec<String>) {
    match template {
        Value::Str(s) => {
            for piece in pieces(s) {
                if let Piece::Fact(name) = piece
                    && !out.iter().any(|n| n == name)
                {
                    out.push(name.to_string());
                }
            }
        }
        Value::List(items) => items.iter().for_each(|v| needed_facts(v, out)),
        Value::Map(pairs) => pairs.iter().for_each(|(_, v)| needed_facts(v, out)),
        _ => {}
    }
}

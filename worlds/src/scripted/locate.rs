//! Finding a field of a scenario's RON text by its path
//! (`world.tasks[1].milestones[0].when`), so that an error found after
//! parsing points at the value it is about, not at the first text that looks
//! like it (two tasks often share a predicate word for word).
//!
//! The reader is a small tokenizer and a tree of spans over the text: only
//! what a path can name is kept (the fields of structs, the items of lists and
//! tuples, the entries of maps by key). It is run only on an error, on text
//! `ron` has already parsed, so it gives up (`None`) at anything unexpected
//! rather than guessing.

/// A value of the text: where it starts and ends (bytes), and what is inside.
struct Node {
    start: usize,
    end: usize,
    inner: Inner,
}

enum Inner {
    /// A number, string, identifier or other leaf.
    Leaf,
    /// `Name(a: 1, b: 2)` or `(1, 2)`: entries with their field names, if any.
    Group(Vec<(Option<String>, Node)>),
    /// `[1, 2]`.
    List(Vec<Node>),
    /// `{"k": v}`: entries by key (a string key without its quotes).
    Map(Vec<(String, Node)>),
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    /// An identifier, a number, `true`/`false` or a char literal.
    Word,
    /// A string literal, its value decoded.
    Str(String),
    /// One of `( ) [ ] { } : ,`.
    Punct(u8),
}

/// The tokens of `text` with their byte spans, comments skipped.
fn tokens(text: &str) -> Option<Vec<(Token, usize, usize)>> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if text[i..].starts_with("//") {
            i = text[i..].find('\n').map_or(bytes.len(), |n| i + n);
        } else if text[i..].starts_with("/*") {
            i = block_comment_end(text, i)?;
        } else if b"()[]{}:,".contains(&c) {
            out.push((Token::Punct(c), i, i + 1));
            i += 1;
        } else if c == b'"' {
            let (value, end) = quoted(text, i)?;
            out.push((Token::Str(value), i, end));
            i = end;
        } else if c == b'r' && matches!(bytes.get(i + 1), Some(b'#' | b'"')) {
            let (value, end) = raw(text, i)?;
            out.push((Token::Str(value), i, end));
            i = end;
        } else if c == b'\'' {
            let (_, end) = quoted(text, i)?;
            out.push((Token::Word, i, end));
            i = end;
        } else {
            let len =
                text[i..].find(|ch: char| ch.is_whitespace() || "()[]{}:,\"'".contains(ch)).unwrap_or(text.len() - i);
            if len == 0 {
                return None;
            }
            out.push((Token::Word, i, i + len));
            i += len;
        }
    }
    Some(out)
}

/// Past a `/* ... */` comment starting at `at` (RON's nest).
fn block_comment_end(text: &str, at: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = at;
    while i < text.len() {
        if text[i..].starts_with("/*") {
            depth += 1;
            i += 2;
        } else if text[i..].starts_with("*/") {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return Some(i);
            }
        } else {
            i += text[i..].chars().next()?.len_utf8();
        }
    }
    None
}

/// The decoded value of the string (or char) literal at `at`, and where it ends.
fn quoted(text: &str, at: usize) -> Option<(String, usize)> {
    let quote = text[at..].chars().next()?;
    let mut value = String::new();
    let mut chars = text[at + 1..].char_indices();
    while let Some((o, ch)) = chars.next() {
        match ch {
            '\\' => {
                let (_, escaped) = chars.next()?;
                value.push(match escaped {
                    'n' => '\n',
                    't' => '\t',
                    'r' => '\r',
                    '0' => '\0',
                    other => other,
                });
            }
            c if c == quote => return Some((value, at + 1 + o + 1)),
            c => value.push(c),
        }
    }
    None
}

/// The value of the raw string `r#"..."#` at `at`, and where it ends.
fn raw(text: &str, at: usize) -> Option<(String, usize)> {
    let hashes = text[at + 1..].bytes().take_while(|b| *b == b'#').count();
    let open = at + 1 + hashes;
    if text.as_bytes().get(open) != Some(&b'"') {
        return None;
    }
    let close = format!("\"{}", "#".repeat(hashes));
    let body = open + 1;
    let len = text[body..].find(&close)?;
    Some((text[body..body + len].to_string(), body + len + close.len()))
}

struct Reader<'t> {
    text: &'t str,
    tokens: &'t [(Token, usize, usize)],
    at: usize,
}

impl Reader<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at).map(|(t, ..)| t)
    }

    fn punct(&self, c: u8) -> bool {
        self.peek() == Some(&Token::Punct(c))
    }

    /// Where the token just read ends.
    fn last_end(&self) -> usize {
        self.tokens[self.at - 1].2
    }

    fn value(&mut self, depth: usize) -> Option<Node> {
        if depth > DEPTH_MAX {
            return None;
        }
        let (token, start, end) = self.tokens.get(self.at)?.clone();
        self.at += 1;
        match token {
            Token::Punct(b'(') => self.group(start, depth),
            Token::Punct(b'[') => {
                let mut items = Vec::new();
                while !self.punct(b']') {
                    items.push(self.value(depth + 1)?);
                    self.comma_or(b']')?;
                }
                self.at += 1;
                Some(Node { start, end: self.last_end(), inner: Inner::List(items) })
            }
            Token::Punct(b'{') => {
                let mut entries = Vec::new();
                while !self.punct(b'}') {
                    let key = match self.peek()? {
                        Token::Str(s) => s.clone(),
                        _ => String::new(),
                    };
                    self.value(depth + 1)?;
                    self.punct(b':').then_some(())?;
                    self.at += 1;
                    entries.push((key, self.value(depth + 1)?));
                    self.comma_or(b'}')?;
                }
                self.at += 1;
                Some(Node { start, end: self.last_end(), inner: Inner::Map(entries) })
            }
            Token::Punct(_) => None,
            Token::Word if self.punct(b'(') => {
                // `Name(...)`: a struct, an enum variant, `Some(...)`.
                self.at += 1;
                let node = self.group(start, depth)?;
                Some(Node { start, ..node })
            }
            Token::Word | Token::Str(_) => Some(Node { start, end, inner: Inner::Leaf }),
        }
    }

    /// The entries of `( ... )`, its opening parenthesis (or name) at `start`.
    fn group(&mut self, start: usize, depth: usize) -> Option<Node> {
        let mut entries = Vec::new();
        while !self.punct(b')') {
            let named = matches!(self.peek(), Some(Token::Word))
                && self.tokens.get(self.at + 1).map(|(t, ..)| t) == Some(&Token::Punct(b':'));
            let name = named.then(|| {
                let (_, s, e) = self.tokens[self.at];
                self.at += 2;
                self.text[s..e].to_string()
            });
            entries.push((name, self.value(depth + 1)?));
            self.comma_or(b')')?;
        }
        self.at += 1;
        Some(Node { start, end: self.last_end(), inner: Inner::Group(entries) })
    }

    fn comma_or(&mut self, close: u8) -> Option<()> {
        if self.punct(b',') {
            self.at += 1;
            Some(())
        } else {
            self.punct(close).then_some(())
        }
    }
}

/// Values nest at most this deep (deeper text is left unlocated).
const DEPTH_MAX: usize = 256;

/// A step of a field path: `.name` or `[index]`.
enum Step<'p> {
    Field(&'p str),
    Index(usize),
}

/// The steps of `world.tasks[1].when`, or `None` if it is not a path.
fn steps(path: &str) -> Option<Vec<Step<'_>>> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let (name, mut rest) = part.split_once('[').map_or((part, ""), |(n, r)| (n, r));
        if name.is_empty() {
            return None;
        }
        out.push(Step::Field(name));
        while !rest.is_empty() {
            let (index, after) = rest.split_once(']')?;
            out.push(Step::Index(index.parse().ok()?));
            rest = after.strip_prefix('[').unwrap_or(after);
            if !after.is_empty() && !after.starts_with('[') {
                return None;
            }
        }
    }
    Some(out)
}

impl Node {
    /// The value a step leads to. A group with one unnamed entry
    /// (`Some(...)`, a newtype) is looked through.
    fn step(&self, step: &Step<'_>) -> Option<&Node> {
        match (&self.inner, step) {
            (Inner::Group(entries), Step::Field(name)) => {
                match entries.iter().find(|(n, _)| n.as_deref() == Some(*name)) {
                    Some((_, value)) => Some(value),
                    None => match entries.as_slice() {
                        [(None, only)] => only.step(step),
                        _ => None,
                    },
                }
            }
            (Inner::Map(entries), Step::Field(name)) => entries.iter().find(|(k, _)| k == name).map(|(_, v)| v),
            (Inner::List(items), Step::Index(i)) => items.get(*i),
            (Inner::Group(entries), Step::Index(i)) => match entries.as_slice() {
                // `Some([...])`, a newtype around a list or tuple.
                [(None, only)] if !matches!(only.inner, Inner::Leaf) => only.step(step),
                _ => match entries.get(*i) {
                    Some((None, value)) => Some(value),
                    _ => None,
                },
            },
            _ => None,
        }
    }
}

/// The byte span of the value at `path` (`world.tasks[1].milestones[0].when`)
/// in the RON `text` of a scenario, or `None` when the path leads nowhere.
pub fn field_span(text: &str, path: &str) -> Option<(usize, usize)> {
    let steps = steps(path)?;
    let tokens = tokens(text)?;
    let mut reader = Reader { text, tokens: &tokens, at: 0 };
    let root = reader.value(0)?;
    let mut node = &root;
    for step in &steps {
        node = node.step(step)?;
    }
    Some((node.start, node.end))
}

/// The byte offset in `text` of the 1-based `line` and `column` (in
/// characters) inside the value of the string literal at `literal` (a plain
/// string with escapes, or a raw one): where a predicate's own syntax error is.
pub fn offset_in_literal(text: &str, literal: usize, line: usize, column: usize) -> Option<usize> {
    let rest = &text[literal..];
    let (body, escapes) = if let Some(after_r) = rest.strip_prefix('r') {
        let hashes = after_r.bytes().take_while(|b| *b == b'#').count();
        (literal + 1 + hashes + 1, false)
    } else if rest.starts_with('"') {
        (literal + 1, true)
    } else {
        return None;
    };
    // Walk the decoded characters with the offset each starts at.
    let (mut at_line, mut at_column) = (1, 1);
    let mut chars = text[body..].char_indices();
    while let Some((o, ch)) = chars.next() {
        if (at_line, at_column) == (line, column) {
            return Some(body + o);
        }
        let decoded = if escapes && ch == '\\' {
            match chars.next()?.1 {
                'n' => '\n',
                other => other,
            }
        } else if escapes && ch == '"' {
            return None;
        } else {
            ch
        };
        if decoded == '\n' {
            at_line += 1;
            at_column = 1;
        } else {
            at_column += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at<'t>(text: &'t str, path: &str) -> Option<&'t str> {
        field_span(text, path).map(|(s, e)| &text[s..e])
    }

    #[test]
    fn paths_lead_to_their_values() {
        let text = r##"// a comment (with: "parens")
Scenario(
    name: "x", /* block /* nested */ */
    world: Scripted(
        tables: [(name: "t", rows: {"k": {"a": 1}})],
        tasks: [
            (id: "a", milestones: [(name: "m", when: "true")]),
            (id: "b", milestones: [(name: "m", when: r#"x == "y""#), (name: "n", when: "1")], opt: Some((when: "z"))),
        ],
        pairs: [("p", "q")],
    ),
)"##;
        assert_eq!(at(text, "name"), Some("\"x\""));
        assert_eq!(at(text, "world.tasks[0].milestones[0].when"), Some("\"true\""));
        assert_eq!(at(text, "world.tasks[1].milestones[0].when"), Some(r##"r#"x == "y""#"##));
        assert_eq!(at(text, "world.tasks[1].milestones[1]"), Some(r#"(name: "n", when: "1")"#));
        assert_eq!(at(text, "world.tasks[1].opt.when"), Some("\"z\""));
        assert_eq!(at(text, "world.tables[0].rows.k.a"), Some("1"));
        assert_eq!(at(text, "world.pairs[0][1]"), Some("\"q\""));
        assert_eq!(at(text, "world.tasks[2]"), None);
        assert_eq!(at(text, "world.nothing"), None);
        assert_eq!(at("(a: [1, 2", "a[0]"), None, "broken text is not located");
    }

    #[test]
    fn positions_inside_a_literal_count_decoded_characters() {
        let text = r##"(when: "a \"b\" + c", raw: r#"x "y" z"#)"##;
        let plain = text.find("\"a").unwrap();
        let plus = text.find('+').unwrap();
        assert_eq!(offset_in_literal(text, plain, 1, 7), Some(plus));
        let raw = text.find("r#").unwrap();
        let z = text.rfind('z').unwrap();
        assert_eq!(offset_in_literal(text, raw, 1, 7), Some(z));
        assert_eq!(offset_in_literal(text, plain, 2, 1), None);
    }
}

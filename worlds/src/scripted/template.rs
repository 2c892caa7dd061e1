//! Gold-action arguments as templates, compiled once when the world loads.
//!
//! The gold expert fills a template with the user's facts before every call it
//! makes and compares reads with it; scanning each string for `{name}`
//! placeholders and copying every map key again at each fill cost a scripted
//! trajectory more than the Rust world's whole expert did. A [`Template`] keeps
//! the placeholders found, the subtrees that hold none as finished values, and
//! map keys as process-wide names (a key from a scenario file is copied as a
//! pointer).

use agentsim_engine::{Args, Key, Value};

use super::intern::intern;
use super::placeholders::{MissingFact, Piece, is_name, pieces};

/// A template and its compiled form.
#[derive(Clone, Debug)]
pub struct Template {
    source: Value,
    node: Node,
    /// The template filled, when it has no placeholder: what every fill
    /// gives, made once and shared by every call made of it (a call's
    /// arguments are copied on write, so a call that changes its copy does
    /// not change this one).
    literal: Option<Args>,
}

#[derive(Clone, Debug)]
enum Node {
    /// A value without placeholders, keys interned.
    Literal(Value),
    /// `"{name}"`: the fact itself, of any type.
    Fact(String),
    /// A string with placeholders inside: the fact's text in each.
    Text(Vec<Part>),
    List(Vec<Node>),
    Map(Vec<(Key, Node)>),
}

#[derive(Clone, Debug)]
enum Part {
    Text(String),
    Fact(String),
}

impl Template {
    /// Compiles `source`.
    pub fn new(source: Value) -> Template {
        let node = compile(&source);
        let literal = match &node {
            Node::Literal(value) => Some(Args::from(value.clone())),
            _ => None,
        };
        Template { source, node, literal }
    }

    /// The arguments every fill gives, shared, when the template has no
    /// placeholder (`fill` gives a copy of them).
    #[cfg(test)]
    fn literal(&self) -> Option<&Args> {
        self.literal.as_ref()
    }

    /// The template with `facts` put in, as a call's arguments: shared when
    /// the template has no placeholder, else as [`Template::fill`] gives them.
    pub fn fill_args(&self, facts: &Value) -> Result<Args, MissingFact> {
        match &self.literal {
            Some(args) => Ok(args.clone()),
            None => fill(&self.node, facts).map(Args::from),
        }
    }

    /// The template as written.
    pub fn source(&self) -> &Value {
        &self.source
    }

    /// The template with `facts` put in: a string that is exactly `"{name}"`
    /// becomes the fact's value; `{name}` inside a longer string, its text
    /// (as [`super::placeholders::fill_text`] puts it).
    pub fn fill(&self, facts: &Value) -> Result<Value, MissingFact> {
        fill(&self.node, facts)
    }

    /// The first fact the template needs and `facts` lacks, in the order of
    /// [`super::placeholders::needed_facts`].
    pub fn missing_fact(&self, facts: &Value) -> Option<&str> {
        missing(&self.node, facts)
    }

    /// Whether the template puts in the fact `name`.
    pub fn uses(&self, name: &str) -> bool {
        uses(&self.node, name)
    }
}

fn uses(node: &Node, name: &str) -> bool {
    match node {
        Node::Literal(_) => false,
        Node::Fact(fact) => fact == name,
        Node::Text(parts) => parts.iter().any(|p| matches!(p, Part::Fact(fact) if fact == name)),
        Node::List(items) => items.iter().any(|n| uses(n, name)),
        Node::Map(pairs) => pairs.iter().any(|(_, n)| uses(n, name)),
    }
}

fn compile(value: &Value) -> Node {
    match value {
        Value::Str(s) => {
            if let Some(name) = s.strip_prefix('{').and_then(|r| r.strip_suffix('}')).filter(|n| is_name(n)) {
                return Node::Fact(name.to_string());
            }
            let parts: Vec<Part> = pieces(s)
                .map(|piece| match piece {
                    Piece::Text(t) => Part::Text(t.to_string()),
                    Piece::Fact(name) => Part::Fact(name.to_string()),
                })
                .collect();
            if parts.iter().any(|p| matches!(p, Part::Fact(_))) {
                Node::Text(parts)
            } else {
                Node::Literal(value.clone())
            }
        }
        Value::List(items) => {
            let nodes: Vec<Node> = items.iter().map(compile).collect();
            if nodes.iter().all(|n| matches!(n, Node::Literal(_))) {
                Node::Literal(interned(value))
            } else {
                Node::List(nodes)
            }
        }
        Value::Map(pairs) => {
            let nodes: Vec<(Key, Node)> = pairs.iter().map(|(k, v)| (Key::Borrowed(intern(k)), compile(v))).collect();
            if nodes.iter().all(|(_, n)| matches!(n, Node::Literal(_))) {
                Node::Literal(interned(value))
            } else {
                Node::Map(nodes)
            }
        }
        other => Node::Literal(other.clone()),
    }
}

/// `value` with every map key interned.
fn interned(value: &Value) -> Value {
    match value {
        Value::List(items) => Value::List(items.iter().map(interned).collect()),
        Value::Map(pairs) => Value::Map(pairs.iter().map(|(k, v)| (Key::Borrowed(intern(k)), interned(v))).collect()),
        other => other.clone(),
    }
}

fn fill(node: &Node, facts: &Value) -> Result<Value, MissingFact> {
    Ok(match node {
        Node::Literal(v) => v.clone(),
        Node::Fact(name) => facts.get(name).cloned().ok_or_else(|| MissingFact(name.clone()))?,
        Node::Text(parts) => {
            let mut out = String::new();
            for part in parts {
                match part {
                    Part::Text(t) => out.push_str(t),
                    Part::Fact(name) => match facts.get(name) {
                        Some(Value::Str(s)) => out.push_str(s),
                        Some(v) => v.render_into(&mut out),
                        None => return Err(MissingFact(name.clone())),
                    },
                }
            }
            Value::Str(out)
        }
        Node::List(items) => Value::List(items.iter().map(|n| fill(n, facts)).collect::<Result<_, _>>()?),
        Node::Map(pairs) => {
            Value::Map(pairs.iter().map(|(k, n)| Ok((k.clone(), fill(n, facts)?))).collect::<Result<_, MissingFact>>()?)
        }
    })
}

fn missing<'t>(node: &'t Node, facts: &Value) -> Option<&'t str> {
    match node {
        Node::Literal(_) => None,
        Node::Fact(name) => facts.get(name).is_none().then_some(name.as_str()),
        Node::Text(parts) => parts.iter().find_map(|p| match p {
            Part::Fact(name) if facts.get(name).is_none() => Some(name.as_str()),
            _ => None,
        }),
        Node::List(items) => items.iter().find_map(|n| missing(n, facts)),
        Node::Map(pairs) => pairs.iter().find_map(|(_, n)| missing(n, facts)),
    }
}

#[cfg(test)]
mod tests {
    use super::super::placeholders::{fill_text, needed_facts};
    use super::*;
    use agentsim_engine::Float;

    /// What filling means, from the parts the world also uses for messages:
    /// a string that is exactly `"{name}"` is the fact itself, any other
    /// string is `fill_text`'s, lists and maps are filled item by item, and
    /// the missing fact is the first of `needed_facts` the facts lack.
    fn expected(template: &Value, facts: &Value) -> Result<Value, MissingFact> {
        Ok(match template {
            Value::Str(s) => match s.strip_prefix('{').and_then(|r| r.strip_suffix('}')).filter(|n| is_name(n)) {
                Some(name) => facts.get(name).cloned().ok_or_else(|| MissingFact(name.to_string()))?,
                None => Value::Str(fill_text(s, facts)?),
            },
            Value::List(items) => Value::List(items.iter().map(|v| expected(v, facts)).collect::<Result<_, _>>()?),
            Value::Map(pairs) => Value::Map(
                pairs.iter().map(|(k, v)| Ok((k.clone(), expected(v, facts)?))).collect::<Result<_, MissingFact>>()?,
            ),
            other => other.clone(),
        })
    }

    #[test]
    fn compiled_templates_fill_as_the_rules_say() {
        let facts = Value::map([
            ("id", Value::str("A1")),
            ("n", Value::Int(3)),
            ("x", Value::Float(Float::new(2.5).expect("finite"))),
            ("flag", Value::Bool(false)),
            ("items", Value::List(vec![Value::str("a"), Value::Int(1)])),
            ("none", Value::Null),
        ]);
        let strings = [
            "{id}",
            "{n}",
            "{x}",
            "{flag}",
            "{items}",
            "{none}",
            "{nope}",
            "order {id}, {n} items {x",
            "{} {a b} x{",
            "{{id}}",
            "plain",
            "",
            "{id}{n}",
            "{ id }",
            "{id} and {nope}",
            "{nope} and {id} and {other}",
        ];
        let mut templates: Vec<Value> = strings.iter().map(|s| Value::str(*s)).collect();
        templates.push(Value::Int(7));
        templates.push(Value::Null);
        templates.push(Value::List(strings.iter().map(|s| Value::str(*s)).collect()));
        templates.push(Value::map(strings.iter().enumerate().map(|(i, s)| (format!("k{i}"), Value::str(*s)))));
        templates.push(Value::map([
            ("kind", Value::str("confirm")),
            ("nested", Value::map([("a", Value::str("{n}")), ("b", Value::List(vec![Value::str("x")]))])),
            ("literal", Value::map([("c", Value::Int(1))])),
        ]));
        for template in templates {
            let compiled = Template::new(template.clone());
            assert_eq!(compiled.fill(&facts), expected(&template, &facts), "{template:?}");
            let args = compiled.fill_args(&facts).map(Args::into_value);
            assert_eq!(args, expected(&template, &facts), "{template:?}: as a call's arguments");
            let mut needed_any = Vec::new();
            needed_facts(&template, &mut needed_any);
            assert_eq!(
                compiled.literal().is_some(),
                needed_any.is_empty(),
                "{template:?}: literal when it needs no fact"
            );
            let mut needed = Vec::new();
            needed_facts(&template, &mut needed);
            let missing = needed.iter().find(|n| facts.get(n.as_str()).is_none()).map(String::as_str);
            assert_eq!(compiled.missing_fact(&facts), missing, "{template:?}");
            assert_eq!(compiled.source(), &template);
        }
        assert_eq!(Template::new(Value::str("{id}{n}")).fill(&facts), Ok(Value::str("A13")));
        assert_eq!(Template::new(Value::str("{nope} and {id} and {other}")).missing_fact(&Value::Null), Some("nope"));
    }

    #[test]
    fn templates_take_facts() {
        let facts = Value::map([("id", Value::str("A1")), ("n", Value::Int(3))]);
        let fill = |text: &str| Template::new(Value::str(text)).fill(&facts);
        assert_eq!(fill("{n}"), Ok(Value::Int(3)));
        assert_eq!(fill("order {id}, {n} items {x"), Ok(Value::str("order A1, 3 items {x")));
        assert_eq!(fill("{nope}"), Err(MissingFact("nope".into())));
        assert_eq!(MissingFact("nope".into()).to_string(), "no fact `nope`");
        assert_eq!(fill_text("{} {a b} x{", &facts), Ok("{} {a b} x{".into()), "a brace that opens no name is text");
        assert_eq!(fill_text("{{id}}", &facts), Ok("{A1}".into()));
        let mut needed = Vec::new();
        needed_facts(&Value::map([("a", Value::str("{id} and {n}"))]), &mut needed);
        assert_eq!(needed, vec!["id", "n"]);
    }
}

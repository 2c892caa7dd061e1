//! The simulated user reads what the agent writes: free text, by documented,
//! deterministic rules (`docs/conversation.md`), never by guessing.
//!
//! A user holds [`Fact`]s: a name, the phrases people use for it (its aliases:
//! "order number", "order id"), and a value. [`read`] turns a message into a
//! [`Reading`]: what the message does (its [`Intent`]: a question, a proposal,
//! a statement, small talk, or something the user does not follow) and every
//! value it states, each placed on the fact it is about and checked against
//! it. A value is placed only when its writing and its context make the place
//! certain (an id of the fact's shape, an amount beside the fact's alias, a
//! name the world knows); anything else is left unplaced. So a reading may miss
//! a value (recall), and never reads one wrongly (precision): the corpus test
//! (`tests/conversation/`) holds the reader to that.
//!
//! - [`scan`]: amounts, ids, dates and words in the text.
//! - [`count`]: how many of something a message says (`3 stories`, `a table for 4`).
//! - [`intent`]: what a message does.
//! - [`voice`]: how a user says things back, varied by the seed and the persona.

pub mod claims;
pub mod count;
pub mod intent;
pub mod rules;
pub mod scan;
pub mod voice;

pub use intent::Intent;
pub use scan::Written;

use scan::{Found, Word};

/// The minefield of a statement to the user that carries a value the world
/// never held (an amount, an id, a count): every world's user judges what it
/// is told by the same name.
pub const TOLD_WRONG_VALUE: &str = "told_wrong_value";

/// What a fact holds, which decides how the reader finds it in text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FactValue {
    /// An identifier (`A1002`, `#W9121070`, a zip code): found by its shape
    /// (the letters before its digits and the number of digits).
    Id(String),
    /// An amount of money in cents: found where a currency marks it.
    Money(i64),
    /// A name or phrase (`wireless keyboard`, `Paris`, an email): found as whole
    /// words, case-insensitively; a known name of the same kind written instead
    /// is a wrong value.
    Name(String),
    /// A calendar date.
    Date {
        /// Year.
        year: u16,
        /// Month, 1 to 12.
        month: u8,
        /// Day, 1 to 31.
        day: u8,
    },
}

impl FactValue {
    /// The value as a user would write it (`$89.00` for money).
    pub fn shown(&self) -> String {
        match self {
            FactValue::Id(s) | FactValue::Name(s) => s.clone(),
            FactValue::Money(cents) => money_text(*cents),
            FactValue::Date { year, month, day } => format!("{year:04}-{month:02}-{day:02}"),
        }
    }
}

impl FactValue {
    /// The value as structured content carries it: cents as an integer, the
    /// rest as the text a user writes.
    pub fn to_value(&self) -> agentsim_engine::Value {
        match self {
            FactValue::Money(c) => agentsim_engine::Value::Int(*c),
            other => agentsim_engine::Value::Str(other.shown()),
        }
    }
}

/// `$89.00`, `-$1.50`.
pub fn money_text(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let c = cents.unsigned_abs();
    format!("{sign}${}.{:02}", c / 100, c % 100)
}

/// One thing the user knows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fact {
    /// Its name (`order_id`): what structured content calls it.
    pub name: String,
    /// Lower-case phrases that name it in a message (`order id`, `order number`);
    /// [`Fact::new`] derives the usual ones from the name.
    pub aliases: Vec<String>,
    /// What it is.
    pub value: FactValue,
}

impl Fact {
    /// A fact with the aliases its name gives: `order_id` is named by
    /// `order_id`, `order id`, `order number`, `order #` and `order`; `email` by
    /// `email`; `zip` by `zip`. Add more with [`Fact::alias`].
    pub fn new(name: &str, value: FactValue) -> Self {
        let spaced = name.replace('_', " ");
        let mut aliases = Vec::with_capacity(6);
        aliases.extend([scan::lower(name), scan::lower(&spaced)]);
        if let Some(stem) = spaced.strip_suffix(" id") {
            for suffix in [" number", " #", " no", ""] {
                // Built in one allocation: facts are made for every
                // trajectory that talks.
                let mut alias = String::with_capacity(stem.len() + suffix.len());
                alias.push_str(stem);
                alias.push_str(suffix);
                aliases.push(if alias.is_ascii() {
                    {
                        alias.make_ascii_lowercase();
                        alias
                    }
                } else {
                    scan::lower(&alias)
                });
            }
        }
        aliases.dedup();
        Self { name: name.to_string(), aliases, value }
    }

    /// Adds a phrase that names this fact.
    pub fn alias(mut self, phrase: &str) -> Self {
        let phrase = scan::lower(phrase.trim());
        if !phrase.is_empty() && !self.aliases.contains(&phrase) {
            self.aliases.push(phrase);
        }
        self
    }
}

/// Names the world knows beyond the user's facts, per fact (every item of the
/// shop for `item`): a known name written where the fact's value was expected
/// is a wrong value, not an unknown word.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lexicon {
    /// Per fact, its known names in the order added: one `String` per name,
    /// and a fact's names found without comparing every entry's fact (a world
    /// makes its lexicon for every trajectory that talks).
    names: Vec<(String, Vec<String>)>,
    /// Other ways people write a known name (`entire order` for `whole
    /// order`): each name with its spellings, lower case.
    spellings: Vec<(String, Vec<String>)>,
}

impl Lexicon {
    /// Adds `spelling` as another way to write the known name `name` (`the
    /// entire order` for `whole order`): a message that writes it states the
    /// name.
    pub fn spelling(&mut self, name: &str, spelling: &str) {
        let (name, spelling) = (scan::lower(name.trim()), scan::lower(spelling.trim()));
        if spelling.is_empty() {
            return;
        }
        match self.spellings.iter_mut().find(|(n, _)| *n == name) {
            Some((_, all)) if !all.contains(&spelling) => all.push(spelling),
            Some(_) => {}
            None => self.spellings.push((name, vec![spelling])),
        }
    }

    /// Where a spelling of the known name `name` is written in `ws`, if one is.
    fn spelling_of(&self, name: &str, ws: &[Word]) -> Option<(usize, usize)> {
        let (_, all) = self.spellings.iter().find(|(n, _)| n == name)?;
        all.iter().find_map(|spelling| {
            let len = spelling.split_whitespace().count();
            phrase_positions(ws, spelling).next().map(|at| (ws[at].span.0, ws[at + len - 1].span.1))
        })
    }

    /// An empty lexicon.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `name` as a known value of the fact called `fact`.
    pub fn add(&mut self, fact: &str, name: &str) {
        let name = scan::lower(name.trim());
        if name.is_empty() {
            return;
        }
        let at = match self.names.iter().position(|(f, _)| f == fact) {
            Some(at) => at,
            None => {
                self.names.push((fact.to_string(), Vec::new()));
                self.names.len() - 1
            }
        };
        let names = &mut self.names[at].1;
        if !names.contains(&name) {
            names.push(name);
        }
    }

    fn of<'a>(&'a self, fact: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.names.iter().filter(move |(f, _)| f == fact).flat_map(|(_, ns)| ns.iter().map(String::as_str))
    }

    /// For each word of `ws`, whether it is part of a known name.
    fn covered(&self, ws: &[Word]) -> Vec<bool> {
        let mut covered = vec![false; ws.len()];
        for name in self.names.iter().flat_map(|(_, ns)| ns) {
            let len = name.split_whitespace().count();
            for at in phrase_positions(ws, name) {
                covered[at..at + len].iter_mut().for_each(|c| *c = true);
            }
        }
        covered
    }
}

/// A value the message states about one of the user's facts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stated {
    /// Which fact (an index into the facts read against).
    pub fact: usize,
    /// Whether it is the fact's value.
    pub right: bool,
    /// As written (`$89.00`, `A1003`, `monitor`).
    pub written: String,
    /// The value read, for an amount, an id or a date (`None` for a name).
    pub value: Option<Written>,
    /// Where it is written: byte offsets into the message (`None` when the
    /// world placed it from its own reading).
    pub span: Option<(usize, usize)>,
}

/// What a message says, as the user reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reading {
    /// What the message does.
    pub intent: Intent,
    /// The facts a question asks for (empty for other intents, and for a
    /// question about nothing the user holds).
    pub asked: Vec<usize>,
    /// Values placed on facts, in the order written.
    pub stated: Vec<Stated>,
    /// Values written that the reader could place on no fact.
    pub unplaced: Vec<Written>,
    /// Whether an action is named (`refund`, `cancel`, `book`, ...): a proposal
    /// or a statement is about doing something.
    pub acts: bool,
    /// Whether a statement says something was done (`refunded`, `has been
    /// issued`, `booked`): a closing. Only an affirmed, unhedged done claim
    /// says so ([`claims`]).
    pub done: bool,
    /// What each sentence claims ([`claims::claims`]).
    pub claims: Vec<claims::Claim>,
}

impl Reading {
    /// The first wrong value stated, if any.
    pub fn wrong(&self) -> Option<&Stated> {
        self.stated.iter().find(|s| !s.right)
    }

    /// Whether the message states fact `fact` (rightly or not).
    pub fn states(&self, fact: usize) -> bool {
        self.stated.iter().any(|s| s.fact == fact)
    }

    /// Whether the message states fact `fact` rightly.
    pub fn states_right(&self, fact: usize) -> bool {
        self.stated.iter().any(|s| s.fact == fact && s.right)
    }

    /// The amounts of money written, placed or not, in cents.
    pub fn amounts(&self) -> Vec<i64> {
        let placed = self.stated.iter().filter_map(|s| match s.value {
            Some(Written::Money(c)) => Some(c),
            _ => None,
        });
        let unplaced = self.unplaced.iter().filter_map(|w| match w {
            Written::Money(c) => Some(*c),
            _ => None,
        });
        placed.chain(unplaced).collect()
    }
}

/// Reads `text` against the user's `facts`, with the world's `lexicon`.
pub fn read(text: &str, facts: &[Fact], lexicon: &Lexicon) -> Reading {
    read_scanned(text, &scan::words(text), facts, lexicon)
}

/// [`read`] of `text` already cut into its words `ws` (`scan::words(text)`):
/// for a user that reads the words again afterwards (a closing's amount), so
/// that the message is scanned once.
pub fn read_scanned(text: &str, ws: &[Word], facts: &[Fact], lexicon: &Lexicon) -> Reading {
    let found = scan::values_of(text, ws);
    let sentences = intent::sentences_of(text, ws);
    let (mut stated, unplaced) = place(text, ws, &found, facts);
    stated.extend(names(ws, facts, lexicon));
    stated.sort_by_cached_key(|s| text.find(&s.written).unwrap_or(usize::MAX));
    // A value counts when it is about a fact, or is money or a date: a bare
    // number of no fact's shape ("404") states nothing.
    let has_values = !stated.is_empty() || found.iter().any(|f| !matches!(f.value, Written::Token(_)));
    let intent = intent::classify(text, ws, &sentences, facts, has_values);
    let mut asked = match intent {
        Intent::Ask => intent::asked(text, &sentences, facts, lexicon),
        _ => Vec::new(),
    };
    // A fact the message states is not asked for ("For order #W2378156, which
    // payment method?").
    asked.retain(|&i| !stated.iter().any(|s| s.fact == i));
    let claims = claims::claims(text, ws, intent == Intent::Propose);
    let done = claims.iter().any(claims::Claim::says_done);
    Reading { intent, asked, stated, unplaced, acts: intent::names_action(ws), done, claims }
}

/// Letters before the digits, upper-cased (a leading `#` dropped), and the count
/// of digits: `A1002` and `a1003` share a shape, `C001` has another.
fn shape(id: &str) -> (String, usize) {
    let id = id.trim_start_matches('#');
    let prefix: String = id.chars().take_while(|c| !c.is_ascii_digit()).collect::<String>().to_uppercase();
    let digits = id.chars().filter(char::is_ascii_digit).count();
    (prefix, digits)
}

/// Whether two ids have one [`shape`], with digits. Allocates nothing for
/// ASCII ids (every id the worlds hold); others are compared as [`shape`]
/// upper-cases them.
fn same_shape(a: &str, b: &str) -> bool {
    fn split(id: &str) -> (&str, usize, usize) {
        let id = id.trim_start_matches('#');
        let prefix_len = id.find(|c: char| c.is_ascii_digit()).unwrap_or(id.len());
        (id, prefix_len, id.bytes().filter(u8::is_ascii_digit).count())
    }
    let ((a, a_len, a_digits), (b, b_len, b_digits)) = (split(a), split(b));
    if a_digits != b_digits || a_digits == 0 {
        return false;
    }
    let (a_prefix, b_prefix) = (&a[..a_len], &b[..b_len]);
    if a_prefix.is_ascii() && b_prefix.is_ascii() {
        a_prefix.eq_ignore_ascii_case(b_prefix)
    } else {
        shape(a) == shape(b)
    }
}

fn same_id(a: &str, b: &str) -> bool {
    a.trim_start_matches('#').eq_ignore_ascii_case(b.trim_start_matches('#'))
}

/// Places each scanned value on a fact: ids by shape, amounts and dates on the
/// fact of their kind (by value, else by the alias written closest before them
/// in the same sentence, else the only fact of that kind).
fn place(text: &str, ws: &[Word], found: &[Found], facts: &[Fact]) -> (Vec<Stated>, Vec<Written>) {
    let mut stated = Vec::new();
    let mut unplaced = Vec::new();
    for f in found {
        let written = text[f.span.0..f.span.1].to_string();
        let candidates: Vec<usize> = (0..facts.len()).filter(|&i| fits(&facts[i].value, &f.value)).collect();
        let equal: Vec<usize> = candidates.iter().copied().filter(|&i| equals(&facts[i].value, &f.value)).collect();
        let placed = if let Some(&i) = equal.first() {
            Some((i, true))
        } else if candidates.len() == 1 {
            Some((candidates[0], false))
        } else {
            nearest_alias(ws, f.span.0, &candidates, facts).map(|i| (i, false))
        };
        match placed {
            Some((fact, right)) => {
                stated.push(Stated { fact, right, written, value: Some(f.value.clone()), span: Some(f.span) })
            }
            None => unplaced.push(f.value.clone()),
        }
    }
    (stated, unplaced)
}

/// Whether a written value is of the kind (and, for ids, the shape) of a fact.
fn fits(fact: &FactValue, written: &Written) -> bool {
    match (fact, written) {
        (FactValue::Id(id), Written::Token(t)) => same_shape(id, t),
        (FactValue::Money(_), Written::Money(_)) => true,
        (FactValue::Date { .. }, Written::Date { .. }) => true,
        _ => false,
    }
}

fn equals(fact: &FactValue, written: &Written) -> bool {
    match (fact, written) {
        (FactValue::Id(id), Written::Token(t)) => same_id(id, t),
        (FactValue::Money(a), Written::Money(b)) => a == b,
        (FactValue::Date { year, month, day }, Written::Date { year: y, month: m, day: d }) => {
            (year, month, day) == (y, m, d)
        }
        _ => false,
    }
}

/// Of `candidates`, the fact whose alias is written closest before byte `at`,
/// within the five words before it.
fn nearest_alias(ws: &[Word], at: usize, candidates: &[usize], facts: &[Fact]) -> Option<usize> {
    let before: Vec<&Word> = ws.iter().filter(|w| w.span.1 <= at).collect();
    let window = &before[before.len().saturating_sub(5)..];
    let mut best: Option<(usize, usize)> = None;
    for &i in candidates {
        for alias in &facts[i].aliases {
            if let Some(pos) = phrase_end(window, alias) {
                let distance = window.len() - pos;
                if best.is_none_or(|(d, _)| distance < d) {
                    best = Some((distance, i));
                }
            }
        }
    }
    best.map(|(_, i)| i)
}

/// The index after the last place `phrase` (words) is written in `ws`.
fn phrase_end(ws: &[&Word], phrase: &str) -> Option<usize> {
    let parts: Vec<&str> = phrase.split_whitespace().collect();
    if parts.is_empty() || parts.len() > ws.len() {
        return None;
    }
    (0..=ws.len() - parts.len())
        .rev()
        .find(|&s| parts.iter().enumerate().all(|(k, p)| ws[s + k].text == *p))
        .map(|s| s + parts.len())
}

/// Whether the words of `phrase` stand in `ws` from index `at` on. Allocates
/// nothing: the reader runs this for every phrase of its rules on every message.
fn phrase_at(ws: &[Word], at: usize, phrase: &str) -> bool {
    let mut k = at;
    for part in phrase.split_whitespace() {
        match ws.get(k) {
            Some(w) if w.text == part => k += 1,
            _ => return false,
        }
    }
    k > at
}

/// The indices of `ws` where `phrase` (lower-case words) starts, found without
/// allocating: a position is tried only when its word is the phrase's first.
pub(crate) fn phrase_positions<'a>(ws: &'a [Word], phrase: &'a str) -> impl Iterator<Item = usize> + 'a {
    let first = phrase.split_whitespace().next().unwrap_or("");
    (0..ws.len()).filter(move |&at| same_word(&ws[at].text, first) && phrase_at(ws, at, phrase))
}

/// `a == b`, deciding most unequal words by their length and first byte
/// before comparing the rest (the reader compares every word of a message
/// with every alias of every fact).
#[inline]
fn same_word(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.as_bytes().first() == b.as_bytes().first() && a == b
}

/// Whether `phrase` (lower-case words) is written in `ws`.
pub(crate) fn has_phrase(ws: &[Word], phrase: &str) -> bool {
    phrase_positions(ws, phrase).next().is_some()
}

/// Name facts: the fact's value written (right), or a name the lexicon knows
/// for that fact written instead (wrong). A known name that contains the
/// fact's value, or is contained in it, is not read as another name.
fn names(ws: &[Word], facts: &[Fact], lexicon: &Lexicon) -> Vec<Stated> {
    let mut out = Vec::new();
    for (i, fact) in facts.iter().enumerate() {
        let FactValue::Name(value) = &fact.value else { continue };
        let value = scan::lower(value);
        // A name offered as one of alternatives ("the keyboard or the monitor?")
        // is not stated; where it is stated, its span.
        let stated_at = |name: &str| {
            let len = name.split_whitespace().count();
            phrase_positions(ws, name)
                .find(|&at| {
                    let near = |j: Option<usize>| j.and_then(|j| ws.get(j)).is_some_and(|w| w.text == "or");
                    !(near(at.checked_sub(1)) || near(at.checked_sub(2)) || near(Some(at + len)))
                })
                .map(|at| (ws[at].span.0, ws[at + len - 1].span.1))
        };
        if let Some(span) = stated_at(&value).or_else(|| lexicon.spelling_of(&value, ws)) {
            out.push(Stated { fact: i, right: true, written: value.clone(), value: None, span: Some(span) });
            continue;
        }
        // Whether a name is written is asked first: it rules out nearly every
        // name at once, and costs less than the containment tests.
        let other = lexicon.of(&fact.name).find_map(|n| {
            let span = stated_at(n).or_else(|| lexicon.spelling_of(n, ws))?;
            (!n.contains(value.as_str()) && !value.contains(n)).then_some((n, span))
        });
        if let Some((n, span)) = other {
            out.push(Stated { fact: i, right: false, written: n.to_string(), value: None, span: Some(span) });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desk() -> (Vec<Fact>, Lexicon) {
        let facts = vec![
            Fact::new("customer_id", FactValue::Id("C001".into())),
            Fact::new("order_id", FactValue::Id("A1002".into())),
            Fact::new("item", FactValue::Name("keyboard".into())).alias("product"),
            Fact::new("amount", FactValue::Money(8_900)).alias("refund").alias("price"),
        ];
        let mut lexicon = Lexicon::new();
        for n in ["keyboard", "monitor", "mouse"] {
            lexicon.add("item", n);
        }
        (facts, lexicon)
    }

    #[test]
    fn a_proposal_is_checked_value_by_value() {
        let (facts, lexicon) = desk();
        let r = read("Shall I refund the keyboard from A1002, $89.00?", &facts, &lexicon);
        assert_eq!(r.intent, Intent::Propose);
        assert!(r.wrong().is_none(), "{r:?}");
        assert!(r.states_right(1) && r.states_right(2) && r.states_right(3));
        let r = read("Shall I refund the monitor from A1003, $89.00?", &facts, &lexicon);
        assert_eq!(r.intent, Intent::Propose);
        let wrong: Vec<&str> = r.stated.iter().filter(|s| !s.right).map(|s| s.written.as_str()).collect();
        assert_eq!(wrong, vec!["monitor", "A1003"]);
    }

    #[test]
    fn a_question_names_the_fact_it_asks_for() {
        let (facts, lexicon) = desk();
        let r = read("Could you tell me your order number?", &facts, &lexicon);
        assert_eq!((r.intent, r.asked.clone()), (Intent::Ask, vec![1]));
        for question in ["What's the order number?", "What’s the order number?", "Which order is it?"] {
            let r = read(question, &facts, &lexicon);
            assert_eq!((r.intent, r.asked.clone()), (Intent::Ask, vec![1]), "{question}");
        }
        let r = read("What is your favourite colour?", &facts, &lexicon);
        assert_eq!((r.intent, r.asked.clone()), (Intent::Ask, vec![]));
    }

    #[test]
    fn a_closing_is_read_for_what_it_tells() {
        let (facts, lexicon) = desk();
        let r = read("I've refunded $98.00 for the keyboard on order A1002.", &facts, &lexicon);
        assert_eq!(r.intent, Intent::Tell);
        assert!(r.done);
        assert_eq!(r.wrong().map(|s| s.written.as_str()), Some("$98.00"));
    }

    #[test]
    fn an_id_of_no_fact_shape_is_left_unplaced() {
        let (facts, lexicon) = desk();
        let r = read("Your ticket T-77 is open.", &facts, &lexicon);
        assert!(r.stated.is_empty());
        assert_eq!(r.unplaced, vec![Written::Token("T-77".into())]);
    }
}

//! Values found in a message: amounts of money, ids, dates and words, each with
//! where it stands in the text. The scanner only finds what a value's own
//! writing makes certain (a `$`, a currency word, `cents`, a month name, a
//! token with a digit in it); a bare number is a token, never money, so that
//! nothing is read as a value it was not written as.

/// The most bytes of a message the scanner reads (the engine cuts what an agent
/// says at the same size).
pub const SCAN_BYTES_MAX: usize = 8 * 1024;

/// A value written in a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Written {
    /// An amount of money, in cents (`$154.49`, `154.49 USD`, `15,449 cents`).
    Money(i64),
    /// A token with at least one digit (`A1002`, `#W9121070`, `12345`), as written
    /// without surrounding punctuation.
    Token(String),
    /// A calendar date (`2024-05-01`, `May 1, 2024`, `1 May 2024`).
    Date {
        /// Year.
        year: u16,
        /// Month, 1 to 12.
        month: u8,
        /// Day, 1 to 31.
        day: u8,
    },
}

/// A value and the byte range of the text it was read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// What was written.
    pub value: Written,
    /// Where: byte offsets into the scanned text.
    pub span: (usize, usize),
}

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// A word of the text, lower-cased, with its byte range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Word {
    /// The word, lower case (letters, digits, `#`, `-`, `_`, `'` and inner `.`/`,`).
    pub text: String,
    /// Byte offsets.
    pub span: (usize, usize),
    /// Its bits in the reader's rule-word table (`rules::rule`), looked up
    /// once here.
    pub(crate) rules: u16,
}

impl Word {
    /// The word `text` (lower case) at `span`.
    fn new(text: String, span: (usize, usize)) -> Self {
        let rules = super::rules::rules_of(&text);
        Self { text, span, rules }
    }
}

/// Splits `text` into words: runs of characters that are neither space nor
/// punctuation that ends a word. A `.` or `,` between two digits stays inside
/// (`154.49`, `15,449`); a `$` stays at the front of an amount.
pub fn words(text: &str) -> Vec<Word> {
    let text = cut(text);
    let mut out = Vec::new();
    let mut offset = 0;
    for chunk in text.split_inclusive(char::is_whitespace) {
        let body = chunk.trim_end();
        if let Some(email) = email_in(body) {
            let start = offset + (body.len() - body.trim_start_matches(|c: char| !c.is_alphanumeric()).len());
            out.push(Word::new(lower(email), (start, start + email.len())));
        } else {
            words_in(body, offset, &mut out);
        }
        offset += chunk.len();
    }
    // A message that is nothing but a name written as code
    // ("(transfer_to_human_agents)", a tool call leaked into the text) says
    // nothing in words: it stays one word.
    if let (Some(first), Some(last)) = (out.first(), out.last())
        && out.len() > 1
        && text[first.span.0..last.span.1].split('_').count() == out.len()
        && !text[first.span.0..last.span.1].contains(char::is_whitespace)
    {
        let span = (first.span.0, last.span.1);
        out = vec![Word::new(lower(&text[span.0..span.1]), span)];
    }
    out
}

/// An email address that makes up `chunk` (punctuation around it aside): one
/// word, dots and all.
fn email_in(chunk: &str) -> Option<&str> {
    if !chunk.as_bytes().contains(&b'@') {
        return None;
    }
    let trimmed = chunk.trim_matches(|c: char| !c.is_alphanumeric());
    let (user, domain) = trimmed.split_once('@')?;
    let ok = |part: &str| {
        !part.is_empty() && part.chars().all(|c| c.is_alphanumeric() || matches!(c, '.' | '-' | '_' | '+'))
    };
    (ok(user) && ok(domain) && domain.contains('.')).then_some(trimmed)
}

/// The words of one whitespace-free chunk starting at byte `offset`.
fn words_in(chunk: &str, offset: usize, out: &mut Vec<Word>) {
    if chunk.is_ascii() {
        return ascii_words_in(chunk, offset, out);
    }
    let bytes = chunk.as_bytes();
    let mut start: Option<usize> = None;
    let mut chars = chunk.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        let inner_sep = (c == '.' || c == ',')
            && start.is_some()
            && i > 0
            && bytes[i - 1].is_ascii_digit()
            && next.is_some_and(|n| n.is_ascii_digit());
        let part = c.is_alphanumeric() || matches!(c, '#' | '-' | '_' | '\'' | '$' | '€') || inner_sep;
        match (part, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                push_word(out, chunk, offset, s, i);
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        push_word(out, chunk, offset, s, chunk.len());
    }
}

/// [`words_in`] of an ASCII chunk, byte by byte: the same rules, for which an
/// ASCII character is alphanumeric exactly when its byte is (nearly every chunk
/// of every message is ASCII).
fn ascii_words_in(chunk: &str, offset: usize, out: &mut Vec<Word>) {
    let bytes = chunk.as_bytes();
    let mut start: Option<usize> = None;
    for (i, &c) in bytes.iter().enumerate() {
        let inner_sep = (c == b'.' || c == b',')
            && start.is_some()
            && i > 0
            && bytes[i - 1].is_ascii_digit()
            && bytes.get(i + 1).is_some_and(u8::is_ascii_digit);
        let part = c.is_ascii_alphanumeric() || matches!(c, b'#' | b'-' | b'_' | b'\'' | b'$') || inner_sep;
        match (part, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                push_word(out, chunk, offset, s, i);
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        push_word(out, chunk, offset, s, chunk.len());
    }
}

fn push_word(out: &mut Vec<Word>, chunk: &str, offset: usize, start: usize, end: usize) {
    // Leading or trailing hyphens and apostrophes are punctuation ("-- ",
    // "'A1002'"), except a minus before an amount ("-$89.00").
    let raw = &chunk[start..end];
    let minus = raw.starts_with("-$") || (raw.starts_with('-') && raw[1..].starts_with(|c: char| c.is_ascii_digit()));
    let trimmed_front = if minus { raw } else { raw.trim_start_matches(['-', '\'', '_']) };
    let trimmed = trimmed_front.trim_end_matches(['-', '\'', '_']);
    if trimmed.is_empty() {
        return;
    }
    let s = offset + start + (raw.len() - trimmed_front.len());
    // A name written as code ("return_delivered_order_items", an agent naming
    // the tool it will call) reads as its words; an id keeps its underscores
    // ("credit_card_9513926").
    if trimmed.contains('_') && !trimmed.contains(|c: char| c.is_ascii_digit()) {
        let mut at = s;
        for part in trimmed.split('_') {
            if !part.is_empty() {
                out.push(Word::new(lower(part), (at, at + part.len())));
            }
            at += part.len() + 1;
        }
        return;
    }
    out.push(Word::new(lower(trimmed), (s, s + trimmed.len())));
}

/// `text` in lower case. ASCII text (nearly every word) is lowered byte by
/// byte, which gives what `str::to_lowercase` gives without its Unicode
/// tables; other text goes through `to_lowercase`.
pub(crate) fn lower(text: &str) -> String {
    if text.is_ascii() { text.to_ascii_lowercase() } else { text.to_lowercase() }
}

/// The text the scanner reads: at most [`SCAN_BYTES_MAX`] bytes, cut at a
/// character boundary.
fn cut(text: &str) -> &str {
    if text.len() <= SCAN_BYTES_MAX {
        return text;
    }
    let mut end = SCAN_BYTES_MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Every amount of money written in `ws`: the index of the word it starts at,
/// and the amount in cents.
pub fn amounts_at(ws: &[Word]) -> Vec<(usize, i64)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < ws.len() {
        match money_at(ws, i) {
            Some((Found { value: Written::Money(cents), .. }, used)) => {
                out.push((i, cents));
                i += used;
            }
            _ => i += 1,
        }
    }
    out
}

/// Whether the words hold a value (an amount, a date or a token with a digit).
pub fn has_values(ws: &[Word]) -> bool {
    (0..ws.len()).any(|i| {
        money_at(ws, i).is_some() || date_at(ws, i).is_some() || ws[i].text.chars().any(|c| c.is_ascii_digit())
    })
}

/// Every value written in `text`, in the order they stand.
pub fn values(text: &str) -> Vec<Found> {
    values_of(text, &words(text))
}

/// [`values`] of `text` already cut into its [`words`] `ws`.
pub fn values_of(text: &str, ws: &[Word]) -> Vec<Found> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < ws.len() {
        if let Some((found, used)) = money_at(ws, i).or_else(|| date_at(ws, i)) {
            out.push(found);
            i += used;
            continue;
        }
        let w = &ws[i];
        if w.text.chars().any(|c| c.is_ascii_digit()) && !w.text.starts_with(['$', '€', '-']) && !w.text.contains('@')
        {
            let original = &cut(text)[w.span.0..w.span.1];
            out.push(Found { value: Written::Token(original.to_string()), span: w.span });
        }
        i += 1;
    }
    out
}

/// An amount of money starting at word `i`: the found value and how many words it
/// took. Amounts need a currency mark: `$154.49`, `$ 154.49`, `154.49 USD`,
/// `USD 154.49`, `154.49 dollars`, `154.49$`, `15,449 cents`.
fn money_at(ws: &[Word], i: usize) -> Option<(Found, usize)> {
    let w = &ws[i].text;
    // Every amount has a `$` in its first word, or is `usd` and a number, or
    // starts with a digit (a number before `usd` or `cents`): most words are
    // none of these and are passed over at once.
    if !w.as_bytes().first().is_some_and(u8::is_ascii_digit) && !w.contains('$') && w != "usd" {
        return None;
    }
    let next = ws.get(i + 1).map(|w| w.text.as_str());
    let span_to = |j: usize| (ws[i].span.0, ws[j].span.1);
    if let Some(rest) = w.strip_prefix("-$") {
        let cents = dollars(rest)?;
        return Some((Found { value: Written::Money(-cents), span: span_to(i) }, 1));
    }
    if let Some(rest) = w.strip_prefix("us$")
        && !rest.is_empty()
    {
        let cents = dollars(rest)?;
        return Some((Found { value: Written::Money(cents), span: span_to(i) }, 1));
    }
    if let Some(rest) = w.strip_prefix('$') {
        if rest.is_empty() {
            let cents = dollars(next?)?;
            return Some((Found { value: Written::Money(cents), span: span_to(i + 1) }, 2));
        }
        let cents = dollars(rest)?;
        return Some((Found { value: Written::Money(cents), span: span_to(i) }, 1));
    }
    if matches!(w.as_str(), "usd" | "us$") {
        let cents = dollars(next?)?;
        return Some((Found { value: Written::Money(cents), span: span_to(i + 1) }, 2));
    }
    if let Some(amount) = w.strip_suffix('$') {
        let cents = dollars(amount)?;
        return Some((Found { value: Written::Money(cents), span: span_to(i) }, 1));
    }
    match next {
        Some("usd" | "dollars" | "dollar" | "bucks") => {
            let cents = dollars(w)?;
            Some((Found { value: Written::Money(cents), span: span_to(i + 1) }, 2))
        }
        Some("cents" | "cent") => {
            let cents = whole(w)?;
            Some((Found { value: Written::Money(cents), span: span_to(i + 1) }, 2))
        }
        _ => None,
    }
}

/// `154.49`, `1,544.90`, `89`, `89.5` as cents; `None` for anything else (three
/// decimals, misplaced separators, more than 15 digits).
pub fn dollars(text: &str) -> Option<i64> {
    let (int_part, frac) = match text.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (text, None),
    };
    let units = whole(int_part)?;
    let cents = match frac {
        None => 0,
        Some(f) if f.len() == 1 && f.bytes().all(|b| b.is_ascii_digit()) => i64::from(f.as_bytes()[0] - b'0') * 10,
        Some(f) if f.len() == 2 && f.bytes().all(|b| b.is_ascii_digit()) => f.parse::<i64>().ok()?,
        Some(_) => return None,
    };
    units.checked_mul(100)?.checked_add(cents)
}

/// A whole number with optional thousands separators (`15,449`, `15449`).
fn whole(text: &str) -> Option<i64> {
    if text.is_empty() || text.len() > 19 {
        return None;
    }
    let groups: Vec<&str> = text.split(',').collect();
    let well_grouped = groups.len() == 1
        || (!groups[0].is_empty() && groups[0].len() <= 3 && groups[1..].iter().all(|g| g.len() == 3));
    if !well_grouped || !groups.iter().all(|g| g.bytes().all(|b| b.is_ascii_digit())) {
        return None;
    }
    let digits: String = groups.concat();
    if digits.len() > 15 {
        return None;
    }
    digits.parse().ok()
}

/// A date starting at word `i`: `2024-05-01`, `May 1, 2024`, `May 1 2024`,
/// `1 May 2024`, `May 1st`. A date without a year is not read (which year would
/// it be?).
fn date_at(ws: &[Word], i: usize) -> Option<(Found, usize)> {
    let w = &ws[i].text;
    if let Some((y, m, d)) = iso_date(w) {
        return Some((Found { value: Written::Date { year: y, month: m, day: d }, span: ws[i].span }, 1));
    }
    let month_of = |t: &str| MONTHS.iter().position(|m| *m == t || (t.len() == 3 && m.starts_with(t)));
    let day_of = |t: &str| {
        let digits = t.trim_end_matches(|c: char| c.is_ascii_alphabetic());
        let suffix = &t[digits.len()..];
        (matches!(suffix, "" | "st" | "nd" | "rd" | "th") && (1..=2).contains(&digits.len()))
            .then(|| digits.parse::<u8>().ok())
            .flatten()
            .filter(|d| (1..=31).contains(d))
    };
    let year_of = |t: &str| (t.len() == 4).then(|| t.parse::<u16>().ok()).flatten().filter(|y| *y >= 1900);
    let span = |j: usize| (ws[i].span.0, ws[j].span.1);
    // Month day year.
    if let Some(m) = month_of(w)
        && let Some(d) = ws.get(i + 1).and_then(|x| day_of(&x.text))
        && let Some(y) = ws.get(i + 2).and_then(|x| year_of(&x.text))
    {
        let value = Written::Date { year: y, month: m as u8 + 1, day: d };
        return Some((Found { value, span: span(i + 2) }, 3));
    }
    // Day month year.
    if let Some(d) = day_of(w)
        && let Some(m) = ws.get(i + 1).and_then(|x| month_of(&x.text))
        && let Some(y) = ws.get(i + 2).and_then(|x| year_of(&x.text))
    {
        let value = Written::Date { year: y, month: m as u8 + 1, day: d };
        return Some((Found { value, span: span(i + 2) }, 3));
    }
    None
}

/// `YYYY-MM-DD`.
pub fn iso_date(text: &str) -> Option<(u16, u8, u8)> {
    let b = text.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let y: u16 = text[..4].parse().ok()?;
    let m: u8 = text[5..7].parse().ok()?;
    let d: u8 = text[8..].parse().ok()?;
    ((1..=12).contains(&m) && (1..=31).contains(&d)).then_some((y, m, d))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn money(text: &str) -> Vec<i64> {
        values(text)
            .into_iter()
            .filter_map(|f| match f.value {
                Written::Money(c) => Some(c),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn amounts_in_the_formats_people_write() {
        assert_eq!(money("a refund of $154.49."), vec![15_449]);
        assert_eq!(money("154.49 USD"), vec![15_449]);
        assert_eq!(money("USD 154.49"), vec![15_449]);
        assert_eq!(money("15,449 cents"), vec![15_449]);
        assert_eq!(money("$1,544.90 and $89"), vec![154_490, 8_900]);
        assert_eq!(money("$ 12.5"), vec![1_250]);
        assert_eq!(money("89 dollars"), vec![8_900]);
        assert_eq!(money("US$89.00 and US$ 42.50"), vec![8_900, 4_250]);
        assert_eq!(money("order 154.49"), Vec::<i64>::new(), "a bare number is no amount");
        assert_eq!(money("$1.234"), Vec::<i64>::new(), "three decimals are no amount");
        assert_eq!(money("$12,34"), Vec::<i64>::new(), "a misplaced separator is no amount");
    }

    #[test]
    fn ids_and_dates() {
        let v = values("Order #W9121070 (A1002), zip 12345, on 2024-05-01 or May 3, 2024.");
        let kinds: Vec<Written> = v.into_iter().map(|f| f.value).collect();
        assert_eq!(
            kinds,
            vec![
                Written::Token("#W9121070".into()),
                Written::Token("A1002".into()),
                Written::Token("12345".into()),
                Written::Date { year: 2024, month: 5, day: 1 },
                Written::Date { year: 2024, month: 5, day: 3 },
            ]
        );
    }

    #[test]
    fn words_keep_amounts_whole_and_drop_punctuation() {
        let ws: Vec<String> = words("Hi -- it's 'A1002', $15.49!").into_iter().map(|w| w.text).collect();
        assert_eq!(ws, vec!["hi", "it's", "a1002", "$15.49"]);
    }

    #[test]
    fn a_name_written_as_code_reads_as_words_and_an_id_keeps_its_underscores() {
        let text = "Shall I call return_delivered_order_items with credit_card_9513926?";
        let ws = words(text);
        let texts: Vec<&str> = ws.iter().map(|w| w.text.as_str()).collect();
        assert_eq!(
            texts,
            vec!["shall", "i", "call", "return", "delivered", "order", "items", "with", "credit_card_9513926"]
        );
        for w in &ws {
            assert_eq!(text[w.span.0..w.span.1].to_lowercase(), w.text);
        }
    }

    #[test]
    fn long_text_is_cut_at_a_character_boundary() {
        let text = "é".repeat(SCAN_BYTES_MAX);
        assert_eq!(words(&text).len(), 1);
        assert!(words(&text)[0].span.1 <= SCAN_BYTES_MAX);
    }
}

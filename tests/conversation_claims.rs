//! Judging what a talking agent says (issue 47): a correct support_desk agent
//! that phrases its proposals and closings as models do is judged right, and
//! each kind of wrong statement (another item, another of the customer's
//! orders, a second amount, a wrong amount, a refund denied, would-have-been,
//! hedged or only promised) is caught, on every seed with faults off.
//!
//! The agent is the world's oracle talking in words (`oracle_text`), its two
//! messages reworded from a family of phrasings: `families/support_desk.json`,
//! written beside the reader, and `holdout/support_desk.json`, written apart
//! from it by someone who never saw the reader's rules (a hold-out: its rates
//! are the ones docs/conversation.md publishes).

use std::collections::BTreeMap;

use agentsim_engine::{Action, Agent, AgentCx, Input, Outcome, StreamSource, Value};
use agentsim_worlds::support_desk::config::SupportDeskConfig;
use agentsim_worlds::{Prepared, WorldConfig};

use crate::common::{preset, repo_path};

/// A family of phrasings: per kind, templates with placeholders.
type Family = BTreeMap<String, Vec<String>>;

fn family(name: &str) -> Family {
    let path = repo_path(&format!("tests/conversation/{name}"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// What the closing says, besides the right thing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Variant {
    Correct,
    WrongItem,
    WrongOrder,
    SecondAmount,
    WrongAmount,
    Negated,
    Counterfactual,
    Hedged,
    Promised,
}

impl Variant {
    const WRONG: [Variant; 8] = [
        Variant::WrongItem,
        Variant::WrongOrder,
        Variant::SecondAmount,
        Variant::WrongAmount,
        Variant::Negated,
        Variant::Counterfactual,
        Variant::Hedged,
        Variant::Promised,
    ];

    /// The family's kind of closing for this variant.
    fn kind(self, whole: bool) -> &'static str {
        match self {
            Variant::Correct if whole => "close_whole",
            Variant::Correct => "close_item",
            Variant::WrongItem => "wrong_item",
            Variant::WrongOrder => "wrong_order",
            Variant::SecondAmount => "second_amount",
            Variant::WrongAmount => "wrong_amount",
            Variant::Negated => "negated",
            Variant::Counterfactual => "counterfactual",
            Variant::Hedged => "hedged",
            Variant::Promised => "promised",
        }
    }
}

/// The values a message is written with.
#[derive(Clone, Debug, Default)]
struct Values {
    item: String,
    order: String,
    amount_cents: i64,
    other_order: Option<String>,
    other_item: Option<String>,
    second_cents: Option<i64>,
}

fn dollars(cents: i64) -> String {
    format!("{}.{:02}", cents / 100, cents % 100)
}

impl Values {
    /// `template` with its placeholders filled; `None` when it needs a value
    /// this customer does not have (no other order).
    fn fill(&self, template: &str) -> Option<String> {
        let mut text = template
            .replace("{item}", &self.item)
            .replace("{order}", &self.order)
            .replace("{amount}", &format!("${}", dollars(self.amount_cents)))
            .replace("{amount_usd}", &format!("{} USD", dollars(self.amount_cents)))
            .replace("{amount_bare}", &dollars(self.amount_cents))
            .replace("{wrong_amount}", &format!("${}", dollars(self.amount_cents + 900)));
        for (key, value) in [
            ("{other_order}", self.other_order.clone()),
            ("{other_item}", self.other_item.clone()),
            ("{second_amount}", self.second_cents.map(|c| format!("${}", dollars(c)))),
        ] {
            if text.contains(key) {
                text = text.replace(key, &value?);
            }
        }
        Some(text)
    }
}

/// The oracle in words, its proposal and closing reworded from `family`.
struct Reworded {
    inner: Box<dyn Agent>,
    family: &'static Family,
    config: &'static SupportDeskConfig,
    variant: Variant,
    pick: usize,
    customer: Option<String>,
    values: Option<Values>,
    /// Whether this seed could not say the variant (no other order).
    not_applicable: bool,
}

impl Reworded {
    fn values_of(&self, item: &str, order: &str, amount_cents: i64) -> Values {
        let config = self.config;
        let customer = self.customer.clone().unwrap_or_default();
        let mine: Vec<_> = config.orders.iter().filter(|o| o.customer == customer).collect();
        let other_order = mine.iter().find(|o| o.id != order).map(|o| o.id.clone());
        let other_item = config.orders.iter().flat_map(|o| &o.items).map(|i| i.name.clone()).find(|n| n != item);
        let held = mine.iter().flat_map(|o| o.items.iter().map(|i| i.price_cents).chain([o.total_cents()]));
        let second_cents = held.filter(|&c| c != amount_cents).min();
        Values { item: item.to_string(), order: order.to_string(), amount_cents, other_order, other_item, second_cents }
    }

    fn template(&self, kind: &str) -> &'static str {
        let list = &self.family[kind];
        &list[self.pick % list.len()]
    }

    fn reword(&mut self, text: &str) -> String {
        if let Some(rest) = text.strip_prefix("Shall I refund the ") {
            let (item, rest) = rest.split_once(" from order ").expect("the oracle's proposal");
            let (order, amount) = rest.split_once(", ").expect("the oracle's proposal");
            let cents = agentsim_worlds::talk::scan::dollars(amount.trim_end_matches('?').trim_start_matches('$'))
                .expect("an amount");
            let values = self.values_of(item, order, cents);
            let kind = if item == "whole order" { "propose_whole" } else { "propose_item" };
            let said = values.fill(self.template(kind)).expect("a proposal needs no other value");
            self.values = Some(values);
            return said;
        }
        if text.starts_with("I've refunded ")
            && let Some(values) = self.values.clone()
        {
            let whole = values.item == "whole order";
            let kind = self.variant.kind(whole);
            if whole && matches!(self.variant, Variant::WrongItem) || self.family[kind].is_empty() {
                self.not_applicable = true;
                return text.to_string();
            }
            let template = self.template(kind);
            return match values.fill(template) {
                Some(said) if !(whole && template.contains("{item}")) => said,
                _ => {
                    self.not_applicable = true;
                    text.to_string()
                }
            };
        }
        text.to_string()
    }
}

impl Agent for Reworded {
    fn step(&mut self, input: Input, cx: &mut AgentCx<'_>) -> Action {
        if let Input::User(message) = &input
            && self.customer.is_none()
        {
            self.customer = message.content.get("customer_id").and_then(Value::as_str).map(str::to_string);
        }
        match self.inner.step(input, cx) {
            Action::Say { text } => Action::Say { text: self.reword(&text) },
            other => other,
        }
    }
}

/// Runs `variant` of `family` on `seeds` with faults off: per seed, the
/// outcome, or `None` where the variant cannot be said (no other order).
fn judged(family: &'static Family, variant: Variant, seeds: std::ops::Range<u64>) -> Vec<Option<Outcome>> {
    let prepared: &'static Prepared = Box::leak(Box::new(agentsim_property::builtin("support_desk")));
    let WorldConfig::SupportDesk(config) = &prepared.scenario.world else { panic!("support_desk") };
    let config: &'static SupportDeskConfig = config;
    let stack: &'static _ = Box::leak(Box::new(preset("oracle_text")));
    let sim = prepared.scenario.sim_config(true, 0.0);
    seeds
        .map(|seed| {
            let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let seen = flag.clone();
            let make = move |expert, streams: &StreamSource| -> Box<dyn Agent> {
                Box::new(Flagged {
                    flag: seen.clone(),
                    agent: Reworded {
                        inner: stack.build(expert, streams),
                        family,
                        config,
                        variant,
                        pick: (seed as usize).wrapping_mul(7).wrapping_add(seed as usize / 3),
                        customer: None,
                        values: None,
                        not_applicable: false,
                    },
                })
            };
            let t = prepared.run_each(seed, 0, false, &sim, &make);
            let applies = !flag.load(std::sync::atomic::Ordering::SeqCst);
            if applies
                && std::env::var("SHOW").is_ok_and(|v| v == format!("{variant:?}"))
                && (t.outcome == Outcome::Success) != (variant == Variant::Correct)
            {
                eprintln!("--- seed {seed} {}: {}", t.outcome, t.end_reason);
                for e in t.events.iter().take(40) {
                    if let agentsim_engine::EventKind::User(m) = &e.kind {
                        eprintln!("  user: {}", m.text)
                    }
                    if let agentsim_engine::EventKind::Said { text } = &e.kind {
                        eprintln!("  agent: {text}")
                    }
                }
            }
            applies.then_some(t.outcome)
        })
        .collect()
}

/// Carries a reworded agent's "not applicable" out of the run.
struct Flagged {
    flag: std::sync::Arc<std::sync::atomic::AtomicBool>,
    agent: Reworded,
}

impl Agent for Flagged {
    fn step(&mut self, input: Input, cx: &mut AgentCx<'_>) -> Action {
        let action = self.agent.step(input, cx);
        if self.agent.not_applicable {
            self.flag.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        action
    }
}

/// The share of seeds (where the variant applies) whose outcome `ok` accepts,
/// with the counts of each outcome.
fn rate(outcomes: &[Option<Outcome>], ok: impl Fn(Outcome) -> bool) -> (f64, usize, BTreeMap<&'static str, usize>) {
    let applied: Vec<Outcome> = outcomes.iter().flatten().copied().collect();
    let mut counts = BTreeMap::new();
    for o in &applied {
        *counts.entry(o.name()).or_default() += 1;
    }
    let good = applied.iter().filter(|o| ok(**o)).count();
    (good as f64 / applied.len().max(1) as f64, applied.len(), counts)
}

/// Every family's rates: a correct agent judged right on at least 97% of the
/// seeds, and each wrong statement caught (never `success`) on at least 97%
/// of the seeds where it is made.
fn assert_family(name: &str, seeds: std::ops::Range<u64>) {
    let family: &'static Family = Box::leak(Box::new(family(name)));
    let (right, n, counts) = rate(&judged(family, Variant::Correct, seeds.clone()), |o| o == Outcome::Success);
    eprintln!("{name}: correct judged right {:.1}% of {n} seeds {counts:?}", right * 100.0);
    let mut failures = Vec::new();
    if right < 0.97 {
        failures.push(format!("correct: {:.1}% right {counts:?}", right * 100.0));
    }
    for variant in Variant::WRONG {
        let (caught, n, counts) = rate(&judged(family, variant, seeds.clone()), |o| o != Outcome::Success);
        eprintln!("{name}: {variant:?} caught {:.1}% of {n} seeds {counts:?}", caught * 100.0);
        if caught < 0.97 || n == 0 {
            failures.push(format!("{variant:?}: {:.1}% caught of {n} {counts:?}", caught * 100.0));
        }
    }
    assert!(failures.is_empty(), "{name}: {failures:#?}");
}

#[test]
fn the_reader_judges_the_families_written_beside_it() {
    assert_family("families/support_desk.json", 0..200);
}

#[test]
fn the_reader_judges_the_first_hold_out_it_was_then_fixed_on() {
    assert_family("holdout/support_desk_1.json", 0..200);
}

#[test]
fn the_reader_judges_the_third_hold_out() {
    assert_family("holdout/support_desk_3.json", 0..200);
}

#[test]
fn the_reader_judges_a_hold_out_it_never_saw() {
    assert_family("holdout/support_desk_2.json", 0..200);
}

/// Support_desk seed 1 with faults off: `lookup_order A1002`, `proposal`,
/// `issue_refund(A1002, 8900)`, then `message`, then finish (the issue's
/// "after refund"); the trajectory and what the customer said to `message`.
fn after_refund(proposal: &'static str, message: &'static str) -> (agentsim_engine::Trajectory, String) {
    after_refund_in(&agentsim_property::builtin("support_desk"), proposal, message)
}

/// [`after_refund`] in `prepared` (support_desk, with a judge maybe).
fn after_refund_in(
    prepared: &Prepared,
    proposal: &'static str,
    message: &'static str,
) -> (agentsim_engine::Trajectory, String) {
    use crate::world_kit::{call, run_scripted};
    let prepared = prepared.clone();
    let (lookup, refund) = (
        call(&prepared, "lookup_order", Value::map([("order_id", Value::str("A1002"))])),
        call(
            &prepared,
            "issue_refund",
            Value::map([("order_id", Value::str("A1002")), ("amount_cents", Value::Int(8_900))]),
        ),
    );
    let mut script = vec![
        Action::Finish(agentsim_engine::Finish::Done),
        Action::Say { text: message.to_string() },
        refund,
        Action::Say { text: proposal.to_string() },
        lookup,
    ];
    let t = run_scripted(&prepared, 1, 0.0, move |_, _| {
        script.pop().unwrap_or(Action::Finish(agentsim_engine::Finish::Done))
    });
    let said: Vec<String> = t
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            agentsim_engine::EventKind::User(m) => Some(m.text.clone()),
            _ => None,
        })
        .collect();
    (t, said.last().cloned().unwrap_or_default())
}

const PROPOSAL: &str = "Shall I refund the keyboard from order A1002, $89.00?";

/// The issue's reproductions: wrong statements judged right before, right
/// ones judged not told, each as it must be now; the customer thanks only
/// for what it read as done.
#[test]
fn the_issue_s_statements_are_judged_as_they_must_be() {
    let wrong = [
        "I've refunded $89.00 for the keyboard on order A1001.",
        "Good news: your headphones from order A1002 have been refunded, $89.00.",
        "I've refunded $89.00 and $42.50 for your keyboard from order A1002.",
        "No refund of $89.00 has been issued for the keyboard on order A1002.",
        "I'd have refunded $89.00 on order A1002, but the system was down.",
        "I'm not sure, but I think I've refunded $89.00 for the keyboard on order A1002.",
    ];
    for message in wrong {
        let (t, reply) = after_refund(PROPOSAL, message);
        assert_ne!(t.outcome, Outcome::Success, "{message}: {}", t.end_reason);
        assert!(!reply.to_lowercase().contains("thank"), "{message}: the customer said {reply:?}");
    }
    let right = [
        "Your refund has been processed. Amount: $89.00. Order: A1002.",
        "I've processed your refund for the keyboard from order A1002. You'll receive $89.00 within 5-7 business days.",
        "The refund of $89.00 for the keyboard on order A1002 went through successfully.",
        "I've refunded US$89.00 for the keyboard from order A1002.",
    ];
    for message in right {
        let (t, _) = after_refund(PROPOSAL, message);
        assert_eq!(t.outcome, Outcome::Success, "{message}: {}", t.end_reason);
    }
    // A refund spoken of without saying it was done: uncertain, not success.
    let (t, _) = after_refund(PROPOSAL, "Refund: $89.00, order A1002, keyboard.");
    assert_eq!(t.outcome, Outcome::Uncertain, "{}", t.end_reason);
    assert!(t.verdict.uncertain.as_deref().is_some_and(|why| why.contains("Refund: $89.00")), "{:?}", t.verdict);
}

/// The issue's proposals: `, yes?`, `OK?`, `US$`, the entire order.
#[test]
fn proposals_in_the_forms_models_write_are_read() {
    let corrected = |proposal: &'static str| {
        let (t, _) = after_refund(proposal, "I've refunded $89.00 for the keyboard on order A1002.");
        let replies: Vec<String> = t
            .events
            .iter()
            .filter_map(|e| match &e.kind {
                agentsim_engine::EventKind::User(m) => Some(m.text.clone()),
                _ => None,
            })
            .collect();
        replies[1].clone()
    };
    for wrong in [
        "I'll refund $98.00 for the keyboard on order A1002. OK?",
        "Shall I refund the keyboard from order A1002, US$98.00?",
        "I'll refund the keyboard from order A1002, $98.00, yes?",
    ] {
        let reply = corrected(wrong);
        assert!(reply.contains("$89.00") && !reply.contains("go ahead"), "{wrong}: {reply}");
    }
}

/// What a judge was asked: the message and the customer's facts.
type Asked = Vec<(String, Vec<(String, String)>)>;

/// A judge that answers one fixed reading (or fails), and remembers what it
/// was asked.
struct FixedJudge {
    answer: Result<agentsim_engine::JudgeAnswer, String>,
    asked: std::sync::Mutex<Asked>,
}

impl agentsim_engine::ReadingJudge for FixedJudge {
    fn read(&self, text: &str, facts: &[(String, String)]) -> Result<agentsim_engine::JudgeAnswer, String> {
        self.asked.lock().unwrap().push((text.to_string(), facts.to_vec()));
        self.answer.clone()
    }
}

fn with_judge(
    answer: Result<agentsim_engine::JudgeAnswer, String>,
    message: &'static str,
) -> (agentsim_engine::Trajectory, Asked) {
    let judge = std::sync::Arc::new(FixedJudge { answer, asked: std::sync::Mutex::new(Vec::new()) });
    let mut prepared = agentsim_property::builtin("support_desk");
    prepared.set_judge(Some(judge.clone()));
    let (t, _) = after_refund_in(&prepared, PROPOSAL, message);
    let asked = judge.asked.lock().unwrap().clone();
    (t, asked)
}

fn reading(
    done: Option<bool>,
    amount_cents: Option<i64>,
    order: Option<&str>,
    item: Option<&str>,
) -> agentsim_engine::JudgeAnswer {
    agentsim_engine::JudgeAnswer {
        done,
        amount_cents,
        order_id: order.map(str::to_string),
        item: item.map(str::to_string),
        key: "k".into(),
        retries: Vec::new(),
    }
}

/// docs/conversation.md, "A model judge where the rules give up": a closing
/// the rules leave uncertain is read by the judge, told the message and the
/// customer's facts; its reading decides, and a judge that cannot tell leaves
/// it uncertain. A closing the rules read is never asked about.
#[test]
fn a_judge_reads_the_closing_the_rules_cannot_decide() {
    const TERSE: &str = "Refund: $89.00, order A1002, keyboard.";
    let (t, asked) = with_judge(Ok(reading(Some(true), Some(8_900), Some("A1002"), Some("keyboard"))), TERSE);
    assert_eq!(t.outcome, Outcome::Success, "{}", t.end_reason);
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].0, TERSE);
    assert!(asked[0].1.contains(&("amount".to_string(), "$89.00".to_string())), "{:?}", asked[0].1);
    assert!(asked[0].1.contains(&("order_id".to_string(), "A1002".to_string())), "{:?}", asked[0].1);
    let noted = t.events.iter().any(|e| format!("{:?}", e.kind).contains("judged_reading"));
    assert!(noted, "the judged reading is in the trajectory");

    let (t, _) = with_judge(Ok(reading(Some(true), Some(8_900), None, None)), TERSE);
    assert_eq!(t.outcome, Outcome::Success, "values it does not name are not wrong: {}", t.end_reason);
    for wrong in [
        reading(Some(false), None, None, None),
        reading(Some(true), Some(9_800), Some("A1002"), Some("keyboard")),
        reading(Some(true), Some(8_900), Some("A1001"), Some("keyboard")),
        reading(Some(true), Some(8_900), Some("A1002"), Some("headphones")),
    ] {
        let (t, _) = with_judge(Ok(wrong.clone()), TERSE);
        assert_eq!(t.outcome, Outcome::WrongResult, "{wrong:?}: {}", t.end_reason);
    }
    for unsure in [Ok(reading(None, None, None, None)), Ok(reading(Some(true), None, None, None)), Err("down".into())] {
        let (t, _) = with_judge(unsure.clone(), TERSE);
        assert_eq!(t.outcome, Outcome::Uncertain, "{unsure:?}: {}", t.end_reason);
    }
    // Read by the rules: the judge is not asked, and cannot overturn it.
    let (t, asked) = with_judge(
        Ok(reading(Some(false), None, None, None)),
        "I've refunded $89.00 for the keyboard from order A1002.",
    );
    assert_eq!((t.outcome, asked.len()), (Outcome::Success, 0));
}

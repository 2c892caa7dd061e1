//! Reads after writing: a defence against writes that half-happen
//! (`PartialCommit`) or happen twice (`DuplicateEffect`), which neither the
//! write's answer nor an idempotency key reveals.
//!
//! For each write a check names (`issue_refund`), the layer reads the record the
//! write touches through the check's read tool (`lookup_order`, with the write's
//! id argument) before the write goes out, and again after it returns, ok or not.
//! The difference of the read's running total (`refunded_cents`) is what the
//! write applied; the write's amount argument (`amount_cents`) is what it should
//! have applied. Then:
//!
//! - **as asked** (`verified`): the planner receives the write's answer as it came;
//! - **nothing** (`not_applied`): the answer goes to the planner as it came (an
//!   error the planner or a retry layer handles; a replayed key applies nothing);
//! - **part of it** (`partial`): the layer sends the missing part as a write of
//!   its own, with an idempotency key derived from the write's (so a retried
//!   completion cannot apply twice), and reads back again, up to
//!   `completions_max` completions. Once the total is right (`completed`), the
//!   planner receives the first ok answer among the write's and the
//!   completions' (its call is the planner's: the planner learns that what it
//!   asked for happened);
//! - **more than asked** (`duplicated`), or a part the completions could not
//!   fill (`incomplete`): a layer cannot take money back, and saying "done" would
//!   hide it. The layer hands the case to a human through the `escalate` tool
//!   (its id argument taken from the read-back record, the reason in words) and
//!   stops the agent (`Finish::Halted`), so the planner never tells the user a
//!   total that is not true. Without an `escalate` tool it only stops.
//!
//! With a `cap` (`total_cents`), the read before the write is also a check: a
//! write that would take the total past the cap (the record changed since the
//! planner read it: another session refunded meanwhile) is not sent; the
//! planner receives it as refused by the layer (`stale`) and looks again.
//!
//! A read-back that fails (an error, a timeout, a malformed body) is sent again,
//! up to `reads_max` reads; when none succeeds the write goes out unverified, or
//! its answer reaches the planner unverified (`unverified`). The cost is real
//! calls: two reads per checked write, plus completions and their reads.
//! Decisions are noted as `("verify_write", WHAT, {tool, expected, applied})`.

use agentsim_engine::tool::ToolDef;
use agentsim_engine::{Action, Agent, AgentCx, Catalog, Finish, Input, Reply, ToolCall, ToolKind, ToolResult, Value};
use serde::{Deserialize, Serialize};

use crate::catalog;
use crate::layers::idempotency_key;

/// The layer's name in notes and in `Finish::Halted`.
pub const LAYER: &str = "verify_write";
/// The most reads of one record per read-back (`reads_max`).
pub const READS_MAX: u32 = 8;
/// The most completing writes after one partial write (`completions_max`).
pub const COMPLETIONS_MAX: u32 = 8;

/// One write to verify and the read that shows its effect.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteCheck {
    /// The write tool (`issue_refund`).
    pub write: String,
    /// Its integer argument that says how much it applies (`amount_cents`).
    pub amount: String,
    /// The read tool that shows the record (`lookup_order`), called with the
    /// write's id argument under the read's id argument name.
    pub read: String,
    /// The read's integer field that sums what writes applied (`refunded_cents`).
    pub total: String,
    /// The read's integer field that bounds that sum (`total_cents`), if any: a
    /// write the fresh read shows would take the sum past it is not sent, and
    /// the planner is told it was refused (`stale`). The planner decided on
    /// what it read earlier; another agent (another session) may have written
    /// since: this is the check right before the write that closes that window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap: Option<String>,
}

/// How the [`VerifyWrite`] layer checks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VerifyWriteConfig {
    /// The writes to verify (default none: the layer passes everything through).
    pub checks: Vec<WriteCheck>,
    /// Reads of the record per read-back at most, the first included: 1..=8
    /// (default 3).
    pub reads_max: u32,
    /// Completing writes after one partial write at most: 0..=8 (default 2).
    pub completions_max: u32,
    /// The tool that hands the case to a human (default `escalate`; a name the
    /// catalog lacks, or empty, stops the agent without escalating).
    pub escalate: String,
}

impl Default for VerifyWriteConfig {
    fn default() -> Self {
        Self { checks: Vec::new(), reads_max: 3, completions_max: 2, escalate: "escalate".into() }
    }
}

/// What a result of the layer's own calls leads to.
enum Next {
    /// Send this (a read, a completing write, an escalation) or stop.
    Act(Action),
    /// Hand this to the planner.
    Deliver(Input),
}

/// A checked write in flight.
#[derive(Clone, Debug)]
struct Job {
    /// The planner's write.
    write: ToolCall,
    /// The read that shows the record.
    read: ToolCall,
    /// The record's total before the write.
    baseline: i64,
    /// What the write should apply.
    expected: i64,
    /// The answer to the planner's write, once back.
    answer: Option<ToolResult>,
    /// Ok answers of completing writes, in order.
    completed: Vec<ToolResult>,
    /// Completing writes sent.
    completions: u32,
}

/// Where the layer is.
#[derive(Debug)]
enum Phase {
    /// Nothing checked in flight.
    Idle,
    /// Reading the record before the write (the baseline).
    Before { write: ToolCall, read: ToolCall, reads: u32 },
    /// A write of the job (the planner's or a completion) is out.
    Writing { job: Job, sent: ToolCall },
    /// Reading the record back after a write.
    After { job: Job, reads: u32 },
    /// Handing the case over; the agent stops when the answer comes.
    Escalating { call: ToolCall, reason: String },
}

/// A stack layer that reads a record after writing to it, completes a write the
/// service applied in part, and escalates one it applied more than once.
pub struct VerifyWrite {
    inner: Box<dyn Agent>,
    config: VerifyWriteConfig,
    phase: Phase,
}

impl VerifyWrite {
    /// Wraps `inner`. The layer draws no randomness.
    pub fn new(inner: Box<dyn Agent>, config: VerifyWriteConfig) -> Self {
        Self { inner, config, phase: Phase::Idle }
    }

    fn reads_max(&self) -> u32 {
        self.config.reads_max.clamp(1, READS_MAX)
    }

    /// The check for `call` and the read that shows its record, when `call` is a
    /// checked write whose record can be named.
    fn check_for(&self, call: &ToolCall, cx: &AgentCx<'_>) -> Option<(&WriteCheck, ToolCall)> {
        let def = catalog::def(cx.catalog, call.tool).filter(|d| d.kind == ToolKind::Write)?;
        let check = self.config.checks.iter().find(|c| c.write == def.name)?;
        // Only a positive amount has an effect to check.
        call.args.get(&check.amount).and_then(Value::as_int).filter(|n| *n > 0)?;
        let read_id = cx.catalog.id(&check.read)?;
        let read_def = catalog::def(cx.catalog, read_id)?;
        let record = call.args.get(id_arg(def)?)?.clone();
        Some((check, ToolCall::new(read_id, Value::map([(id_arg(read_def)?.to_string(), record)]))))
    }

    /// The record's total in a read-back, if the answer is well formed.
    fn total(&self, result: &ToolResult, write: &ToolCall, cx: &AgentCx<'_>) -> Option<i64> {
        self.field(result, write, cx, |check| Some(&check.total))
    }

    /// The record's cap in a read, when the check names one and the answer is
    /// well formed.
    fn cap(&self, result: &ToolResult, write: &ToolCall, cx: &AgentCx<'_>) -> Option<i64> {
        self.field(result, write, cx, |check| check.cap.as_ref())
    }

    /// An integer field of a read (as the tool names it at this time), the one
    /// `which` picks of the write's check.
    fn field(
        &self,
        result: &ToolResult,
        write: &ToolCall,
        cx: &AgentCx<'_>,
        which: impl Fn(&WriteCheck) -> Option<&String>,
    ) -> Option<i64> {
        if !catalog::well_formed(cx.catalog, result.call.tool, cx.now_ms, &result.reply) {
            return None;
        }
        let Reply::Ok(body) = &result.reply else { return None };
        let write_name = catalog::name(cx.catalog, write.tool);
        let check = self.config.checks.iter().find(|c| c.write == write_name)?;
        let field = catalog::field_name_at(cx.catalog, result.call.tool, which(check)?, cx.now_ms)?;
        body.get(field).and_then(Value::as_int)
    }

    fn note(cx: &mut AgentCx<'_>, what: &'static str, job: &Job, applied: Option<i64>) {
        let tool = catalog::name(cx.catalog, job.write.tool);
        let applied = applied.map_or(Value::Null, Value::Int);
        cx.note(
            LAYER,
            what,
            Value::map([("tool", Value::str(tool)), ("expected", Value::Int(job.expected)), ("applied", applied)]),
        );
    }

    /// A result of the layer's own calls: the next action, or the input the
    /// planner receives.
    fn on_result(&mut self, result: ToolResult, cx: &mut AgentCx<'_>) -> Next {
        match std::mem::replace(&mut self.phase, Phase::Idle) {
            Phase::Before { write, read, reads } => self.after_baseline(write, read, reads, &result, cx),
            Phase::Writing { mut job, sent } => {
                if sent == job.write {
                    job.answer = Some(result);
                } else if matches!(result.reply, Reply::Ok(_)) {
                    job.completed.push(result);
                }
                let read = job.read.clone();
                self.phase = Phase::After { job, reads: 1 };
                Next::Act(Action::Call(read))
            }
            Phase::After { job, reads } => self.after_read_back(job, reads, &result, cx),
            Phase::Escalating { reason, .. } => Next::Act(Action::Finish(Finish::Halted { layer: LAYER, reason })),
            Phase::Idle => Next::Deliver(Input::Tool(result)),
        }
    }

    /// The baseline read came back: send the write (verified or not), read
    /// again, or refuse a write past the record's cap.
    fn after_baseline(
        &mut self,
        write: ToolCall,
        read: ToolCall,
        reads: u32,
        result: &ToolResult,
        cx: &mut AgentCx<'_>,
    ) -> Next {
        let Some(baseline) = self.total(result, &write, cx) else {
            if reads < self.reads_max() {
                self.phase = Phase::Before { write, read: read.clone(), reads: reads + 1 };
                return Next::Act(Action::Call(read));
            }
            let job = self.job(write.clone(), read, 0, cx);
            Self::note(cx, "unverified", &job, None);
            return Next::Act(Action::Call(write));
        };
        let cap = self.cap(result, &write, cx);
        let job = self.job(write.clone(), read, baseline, cx);
        if let Some(cap) = cap
            && baseline.saturating_add(job.expected) > cap
        {
            Self::note(cx, "stale", &job, Some(baseline));
            let reason = format!(
                "the record changed since it was read: {baseline} of {cap} applied already, {} more would exceed it",
                job.expected
            );
            return Next::Deliver(Input::Blocked { call: write, layer: LAYER, reason });
        }
        self.phase = Phase::Writing { job, sent: write.clone() };
        Next::Act(Action::Call(write))
    }

    fn job(&self, write: ToolCall, read: ToolCall, baseline: i64, cx: &AgentCx<'_>) -> Job {
        let expected = self
            .check_for(&write, cx)
            .and_then(|(check, _)| write.args.get(&check.amount).and_then(Value::as_int))
            .unwrap_or_default();
        Job { write, read, baseline, expected, answer: None, completed: Vec::new(), completions: 0 }
    }

    /// A read-back came back: judge what the write applied.
    fn after_read_back(&mut self, job: Job, reads: u32, result: &ToolResult, cx: &mut AgentCx<'_>) -> Next {
        let Some(total) = self.total(result, &job.write, cx) else {
            if reads < self.reads_max() {
                let read = job.read.clone();
                self.phase = Phase::After { job, reads: reads + 1 };
                return Next::Act(Action::Call(read));
            }
            Self::note(cx, "unverified", &job, None);
            return Next::Deliver(Self::deliver(job));
        };
        let applied = total.saturating_sub(job.baseline);
        if applied == job.expected {
            Self::note(cx, if job.completions == 0 { "verified" } else { "completed" }, &job, Some(applied));
            return Next::Deliver(Self::deliver(job));
        }
        if applied == 0 && job.completions == 0 {
            Self::note(cx, "not_applied", &job, Some(applied));
            return Next::Deliver(Self::deliver(job));
        }
        let short = applied < job.expected;
        if short && applied > 0 && job.completions < self.config.completions_max.min(COMPLETIONS_MAX) {
            Self::note(cx, "partial", &job, Some(applied));
            return Next::Act(self.complete(job, applied, cx));
        }
        let what = if short { "incomplete" } else { "duplicated" };
        Self::note(cx, what, &job, Some(applied));
        let tool = catalog::name(cx.catalog, job.write.tool);
        let reason = format!("{tool} applied {applied} of {} ({what}); checked by reading back", job.expected);
        Next::Act(self.escalate(&job, result, reason, cx))
    }

    /// Sends the missing part of a partial write, keyed so it applies once.
    fn complete(&mut self, mut job: Job, applied: i64, cx: &AgentCx<'_>) -> Action {
        job.completions += 1;
        let mut rest = job.write.clone();
        if let Some((check, _)) = self.check_for(&job.write, cx) {
            rest.args.set(check.amount.clone(), Value::Int(job.expected - applied));
        }
        rest.idempotency_key = Some(format!("{}-rest{}", base_key(&job.write, cx.catalog), job.completions));
        self.phase = Phase::Writing { job, sent: rest.clone() };
        Action::Call(rest)
    }

    /// Hands the case to a human, or stops when the world has no one to hand it to.
    fn escalate(&mut self, job: &Job, read_back: &ToolResult, reason: String, cx: &AgentCx<'_>) -> Action {
        let tool = cx.catalog.id(&self.config.escalate);
        let def = tool.and_then(|id| catalog::def(cx.catalog, id));
        let (Some(id), Some(def), Reply::Ok(record)) = (tool, def, &read_back.reply) else {
            return Action::Finish(Finish::Halted { layer: LAYER, reason });
        };
        let mut args = Value::map([("reason", Value::str(&reason))]);
        for arg in def.args.iter().filter(|a| a.is_id) {
            let Some(value) = record.get(&arg.name) else {
                return Action::Finish(Finish::Halted { layer: LAYER, reason });
            };
            args.set(arg.name.clone(), value.clone());
        }
        let mut call = ToolCall::new(id, args);
        call.idempotency_key = Some(format!("{}-escalate", base_key(&job.write, cx.catalog)));
        self.phase = Phase::Escalating { call: call.clone(), reason };
        Action::Call(call)
    }

    /// What the planner receives for its write: its own answer, unless a
    /// completion made the effect whole, when the first ok answer stands for it.
    fn deliver(job: Job) -> Input {
        let answer = job.answer.expect("a read-back follows the planner's write");
        if job.completions == 0 || matches!(answer.reply, Reply::Ok(_)) {
            return Input::Tool(answer);
        }
        match job.completed.into_iter().next() {
            Some(ok) => Input::Tool(ToolResult { call: answer.call, ..ok }),
            None => Input::Tool(answer),
        }
    }

    /// Whether `result` answers the call the layer is waiting for.
    fn awaited(&self, result: &ToolResult) -> bool {
        match &self.phase {
            Phase::Idle => false,
            Phase::Before { read, .. } => result.call == *read,
            Phase::Writing { sent, .. } => result.call == *sent,
            Phase::After { job, .. } => result.call == job.read,
            Phase::Escalating { call, .. } => result.call == *call,
        }
    }
}

/// The first id argument of a tool.
fn id_arg(def: &ToolDef) -> Option<&str> {
    def.args.iter().find(|a| a.is_id).map(|a| a.name.as_str())
}

/// The key the layer's own writes derive theirs from: the write's key, or the
/// content key the `Idempotency` layer would give it.
fn base_key(write: &ToolCall, catalog: &Catalog) -> String {
    write.idempotency_key.clone().unwrap_or_else(|| idempotency_key(&catalog::name(catalog, write.tool), &write.args))
}

impl Agent for VerifyWrite {
    fn step(&mut self, input: Input, cx: &mut AgentCx<'_>) -> Action {
        let input = match input {
            Input::Tool(result) if self.awaited(&result) => match self.on_result(result, cx) {
                Next::Act(action) => return action,
                Next::Deliver(input) => input,
            },
            other => {
                self.phase = Phase::Idle;
                other
            }
        };
        let action = self.inner.step(input, cx);
        if let Action::Call(call) = &action
            && let Some((_, read)) = self.check_for(call, cx)
        {
            self.phase = Phase::Before { write: call.clone(), read: read.clone(), reads: 1 };
            return Action::Call(read);
        }
        action
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{self, Script, lookup, ok, order_body, refund, step};

    /// The test catalog's `total_cents` stands for the running total.
    fn verifier(inner: Box<dyn Agent>) -> VerifyWrite {
        let check = WriteCheck {
            write: "refund_order".into(),
            amount: "amount_cents".into(),
            read: "lookup_order".into(),
            total: "total_cents".into(),
            cap: None,
        };
        VerifyWrite::new(inner, VerifyWriteConfig { checks: vec![check], ..VerifyWriteConfig::default() })
    }

    #[test]
    fn a_write_past_the_cap_of_a_fresh_read_is_refused_before_it_is_sent() {
        // The cap is the running total's own field: any refund of the record
        // the fresh read shows at 50 would take it past 50.
        let catalog = testkit::catalog();
        let (inner, seen) = Script::new([Action::Call(refund("o-1", 100))], testkit::idle());
        let check = WriteCheck {
            write: "refund_order".into(),
            amount: "amount_cents".into(),
            read: "lookup_order".into(),
            total: "total_cents".into(),
            cap: Some("total_cents".into()),
        };
        let mut layer =
            VerifyWrite::new(inner, VerifyWriteConfig { checks: vec![check], ..VerifyWriteConfig::default() });
        let Action::Call(read) = step(&mut layer, &catalog, 0, testkit::user("refund o-1")).action else {
            panic!("the layer reads first")
        };
        assert_eq!(read.tool, testkit::LOOKUP);
        let s = step(&mut layer, &catalog, 10, ok(&read, order_body("o-1", 50)));
        assert!(
            !matches!(&s.action, Action::Call(c) if c.tool != testkit::LOOKUP),
            "no write goes out: {:?}",
            s.action
        );
        assert_eq!(s.notes.iter().map(|n| n.what).collect::<Vec<_>>(), vec!["stale"]);
        let saw = testkit::seen(&seen);
        assert!(
            matches!(saw.last(), Some(Input::Blocked { layer: LAYER, reason, .. }) if reason.contains("50 of 50")),
            "the planner hears the write was refused: {saw:?}"
        );
    }

    /// Runs a planner that refunds 100 on o-1 once, answering the layer's calls
    /// with `answer` in turn: (actions the layer sent, what the planner saw after
    /// its first input, note names).
    fn verified_refund(mut answer: impl FnMut(&ToolCall) -> Input) -> (Vec<Action>, Vec<Input>, Vec<&'static str>) {
        let catalog = testkit::catalog();
        let (inner, seen) = Script::new([Action::Call(refund("o-1", 100))], testkit::idle());
        let mut layer = verifier(inner);
        let mut action = step(&mut layer, &catalog, 0, testkit::user("refund o-1")).action;
        let (mut actions, mut notes) = (vec![action.clone()], Vec::new());
        while let Action::Call(call) = &action {
            let s = step(&mut layer, &catalog, 10, answer(call));
            notes.extend(s.notes.iter().map(|n| n.what));
            action = s.action;
            actions.push(action.clone());
            assert!(actions.len() < 20, "the layer keeps calling: {actions:?}");
        }
        (actions, testkit::seen(&seen).into_iter().skip(1).collect(), notes)
    }

    /// A service whose record's total goes `totals` on successive reads.
    fn reads(totals: &'static [i64]) -> impl FnMut(&ToolCall) -> Input {
        let mut totals = totals.iter().copied();
        move |call: &ToolCall| {
            if call.tool == testkit::LOOKUP {
                ok(call, order_body("o-1", totals.next().expect("no more reads scripted")))
            } else {
                ok(call, Value::map([("refund_id", Value::str("r-1"))]))
            }
        }
    }

    #[test]
    fn a_write_applied_as_asked_reaches_the_planner_after_two_reads() {
        let (actions, seen, notes) = verified_refund(reads(&[0, 100]));
        let calls: Vec<&ToolCall> =
            actions.iter().filter_map(|a| if let Action::Call(c) = a { Some(c) } else { None }).collect();
        assert_eq!(calls, [&lookup("o-1"), &refund("o-1", 100), &lookup("o-1")]);
        assert_eq!(seen, [ok(&refund("o-1", 100), Value::map([("refund_id", Value::str("r-1"))]))]);
        assert_eq!(notes, ["verified"]);
    }

    #[test]
    fn a_partial_write_is_completed_under_a_derived_key() {
        let mut totals = reads(&[0, 50, 100]);
        let mut writes = 0;
        let (actions, seen, notes) = verified_refund(|call| {
            if call.tool == testkit::REFUND {
                writes += 1;
                if writes == 1 {
                    return testkit::error(call, 500, None);
                }
            }
            totals(call)
        });
        let Action::Call(rest) = &actions[3] else { panic!("{actions:?}") };
        assert_eq!(rest.args.get("amount_cents"), Some(&Value::Int(50)), "only the missing part");
        let base = idempotency_key("refund_order", &refund("o-1", 100).args);
        assert_eq!(rest.idempotency_key.as_deref(), Some(format!("{base}-rest1").as_str()));
        let Input::Tool(delivered) = &seen[0] else { panic!("{seen:?}") };
        assert_eq!(delivered.call, refund("o-1", 100), "the planner's own call");
        assert!(matches!(delivered.reply, Reply::Ok(_)), "the effect is whole: {:?}", delivered.reply);
        assert_eq!(notes, ["partial", "completed"]);
    }

    #[test]
    fn a_duplicated_write_stops_the_agent_and_the_planner_never_hears_done() {
        let (actions, seen, notes) = verified_refund(reads(&[0, 200]));
        let Some(Action::Finish(Finish::Halted { layer, reason })) = actions.last() else { panic!("{actions:?}") };
        assert_eq!(*layer, LAYER);
        assert!(reason.contains("applied 200 of 100"), "{reason}");
        assert!(seen.is_empty(), "{seen:?}");
        assert_eq!(notes, ["duplicated"]);
    }

    #[test]
    fn a_completion_that_cannot_fill_the_gap_is_incomplete() {
        // Every write applies half of what it asks.
        let (actions, _, notes) = verified_refund(reads(&[0, 50, 75, 87]));
        assert!(matches!(actions.last(), Some(Action::Finish(Finish::Halted { .. }))), "{actions:?}");
        assert_eq!(notes, ["partial", "partial", "incomplete"], "completions_max 2");
    }

    #[test]
    fn nothing_applied_or_nothing_readable_passes_the_answer_through() {
        let mut totals = reads(&[0, 0]);
        let (_, seen, notes) =
            verified_refund(
                |call| {
                    if call.tool == testkit::REFUND { testkit::error(call, 503, None) } else { totals(call) }
                },
            );
        assert_eq!(seen, [testkit::error(&refund("o-1", 100), 503, None)]);
        assert_eq!(notes, ["not_applied"]);

        let mut first = true;
        let (actions, seen, notes) = verified_refund(|call| match call.tool {
            testkit::LOOKUP if first => {
                first = false;
                ok(call, order_body("o-1", 0))
            }
            testkit::LOOKUP => testkit::error(call, 503, None),
            _ => ok(call, Value::map([("refund_id", Value::str("r-1"))])),
        });
        assert_eq!(actions.len(), 6, "one baseline, the write, three read-backs: {actions:?}");
        assert_eq!(seen, [ok(&refund("o-1", 100), Value::map([("refund_id", Value::str("r-1"))]))]);
        assert_eq!(notes, ["unverified"]);
    }

    #[test]
    fn reads_and_unchecked_writes_pass_through() {
        let catalog = testkit::catalog();
        let (inner, _) = Script::new([Action::Call(lookup("o-1"))], testkit::idle());
        let mut layer = verifier(inner);
        assert_eq!(step(&mut layer, &catalog, 0, testkit::user("hi")).action, Action::Call(lookup("o-1")));
        let (inner, _) = Script::new([Action::Call(refund("o-1", 0))], testkit::idle());
        let mut layer = verifier(inner);
        assert_eq!(step(&mut layer, &catalog, 0, testkit::user("hi")).action, Action::Call(refund("o-1", 0)));
    }
}

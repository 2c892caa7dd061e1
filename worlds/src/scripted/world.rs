//! One trajectory of a scripted world: the user built from the task's facts and
//! a persona, the tools served by the script, processes on the clock, and the
//! judge (milestones, minefields, the gold state, the success predicate).

use agentsim_engine::{
    Catalog, Message, Progress, Stream, StreamSource, TimeMs, ToolCall, ToolError, ToolKind, Value, Verdict, World,
    WorldCx,
};

use super::model::{ScriptedModel, Served, Task};
use super::native::{Bindings, Scalar, list_at, scalar_at};
use super::placeholders::fill_text;
use super::script::{Failure, Vars, to_dynamic};
use crate::kit::escalation::escalate;
use crate::kit::goodbye::leave;
use crate::kit::outbox::Outbox;
use crate::talk::voice::Voice;

#[path = "hear.rs"]
mod hear;
#[path = "judge.rs"]
mod judge;

/// The world's own events.
pub enum ScriptEvent {
    /// Process `n` runs.
    Process(usize),
    /// The user's patience runs out.
    PatienceOut,
}

/// One trajectory's scripted world.
pub struct ScriptedWorld<'m> {
    model: &'m ScriptedModel,
    task: &'m Task,
    session: Option<Box<super::script::Session>>,
    user_rng: Stream,
    world_rng: Stream,
    persona: usize,
    /// The facts the user holds now (changed by a change of mind).
    facts: Value,
    /// The user switched to the task's alternative.
    changed_mind: bool,
    outbox: Outbox,
    progress: Progress,
    escalated: bool,
    left_at_ms: Option<TimeMs>,
    /// Answers of writes sent with an idempotency key: (tool, key, answer).
    keyed: Vec<(agentsim_engine::ToolId, String, Result<Value, ToolError>)>,
    /// The tables before each write (a write tool or a process), with the time
    /// of the write: what a stale read (a `Stale` fault) sees.
    history: Vec<(TimeMs, super::state::State)>,
    /// Whether a stale read can happen in this run (the catalog has a `Stale`
    /// fault): without one, `history` stays empty and no write copies the tables.
    keeps_history: bool,
    /// How the user words its answers to text (made on the first one).
    voice: Option<Voice>,
    /// What the agent said to the user, as the communicate check compares it
    /// (kept only when the task has strings to communicate).
    said: Vec<String>,
    /// The judgement of the final state, made once when the trajectory ends
    /// (`judge` and `checks` both read it).
    state_judged: std::cell::OnceCell<Result<(), judge::Unmet>>,
}

/// Snapshots kept for stale reads, at most (the oldest go first; the call
/// budgets keep real runs far below it).
const HISTORY_MAX: usize = 1_024;

impl<'m> ScriptedWorld<'m> {
    /// A fresh world for one seed, on task `task`; the persona is drawn from the
    /// user's stream.
    pub fn new(model: &'m ScriptedModel, task: usize, streams: &StreamSource, catalog: &Catalog) -> Self {
        let mut user_rng = streams.stream("user.0");
        let weights: Vec<f64> = model.personas.iter().map(|p| p.weight).collect();
        let persona = user_rng.weighted(&weights).unwrap_or(0);
        let task = &model.tasks[task];
        Self {
            model,
            task,
            session: model.session(streams.stream("script")),
            user_rng,
            world_rng: streams.stream("world"),
            persona,
            facts: task.facts.clone(),
            changed_mind: false,
            outbox: Outbox::new(),
            progress: Progress::new(),
            escalated: false,
            left_at_ms: None,
            keyed: Vec::new(),
            history: Vec::new(),
            keeps_history: catalog.may_serve_stale(),
            voice: None,
            said: Vec::new(),
            state_judged: std::cell::OnceCell::new(),
        }
    }

    fn session(&mut self) -> &mut super::script::Session {
        self.session.as_mut().expect("the session is home between script calls")
    }

    fn reply_at(&mut self, now_ms: TimeMs) -> TimeMs {
        now_ms.saturating_add(self.model.reply_ms.sample(&mut self.user_rng))
    }

    /// The facts this persona states, as the message's structured content.
    fn stated(&self) -> Value {
        let states = &self.model.personas[self.persona].states;
        match &self.facts {
            Value::Map(pairs) => Value::Map(
                pairs
                    .iter()
                    .filter(|(k, _)| states.as_ref().is_none_or(|s| s.iter().any(|n| n == k)))
                    .cloned()
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// Reports what the script asked for (notes, minefields) to the trajectory.
    fn drain(&mut self, cx: &mut WorldCx<'_, ScriptEvent>) {
        let session = self.session();
        let notes = std::mem::take(&mut session.notes);
        let minefields = std::mem::take(&mut session.minefields);
        for note in notes {
            cx.note("script", note);
        }
        for (name, detail) in minefields {
            cx.minefield(name, detail);
        }
    }

    /// Predicate `index` after a call: decided in Rust when it can be, else in
    /// Rhai with `scope` (built on first need and kept for the call's other
    /// predicates). A failure is noted and does not hold.
    fn holds(
        &mut self,
        view: &CallView<'_>,
        scope: &mut Option<rhai::Scope<'static>>,
        index: usize,
        what: &str,
        cx: &mut WorldCx<'_, ScriptEvent>,
    ) -> bool {
        let program = &self.model.program;
        let reached = &self.session.as_ref().expect("the session is home between script calls").reached;
        if let Some(holds) = program.native(index, view, reached) {
            return holds;
        }
        let scope = scope.get_or_insert_with(|| view.scope());
        match program.predicate_in(&mut self.session, scope, index) {
            Ok(holds) => holds,
            Err(e) => {
                cx.note("predicate_error", Value::map([("of", Value::str(what)), ("message", Value::Str(e.message))]));
                false
            }
        }
    }

    /// After a call: minefields on it, then the milestones it may have reached.
    fn after_call(
        &mut self,
        call: &ToolCall,
        name: &str,
        reply: &Result<Value, ToolError>,
        cx: &mut WorldCx<'_, ScriptEvent>,
    ) {
        if reply.is_ok() {
            self.session().calls.push((name.to_string(), call.args.clone()));
        }
        let program = &self.model.program;
        let mines: Vec<(&'static str, usize)> = (self.model.minefields.iter().chain(&self.task.minefields))
            .filter_map(|m| m.when.filter(|&when| program.may_hold_for(when, name)).map(|when| (m.name, when)))
            .collect();
        let milestones: Vec<(&'static str, usize)> = match reply {
            Ok(_) => (self.task.milestones.iter())
                .filter(|&&(m, when)| !self.progress.has(m) && program.may_hold_for(when, name))
                .copied()
                .collect(),
            Err(_) => Vec::new(),
        };
        if mines.is_empty() && milestones.is_empty() {
            // No predicate can hold after this call: nothing to evaluate.
            return;
        }
        // The facts are copied out of `self` for the length of the
        // predicates (they change only on a change of mind, in `confirm`).
        let facts = std::mem::take(&mut self.facts);
        let view = CallView { facts: &facts, tool: name, args: &call.args, reply };
        let mut scope = None;
        self.session().now_ms = cx.now_ms;
        self.session().writable = false;
        for (mine, when) in mines {
            if self.holds(&view, &mut scope, when, mine, cx) {
                cx.minefield(mine, format!("after {name} {}", call.args.render()));
            }
        }
        for (milestone, when) in milestones {
            if self.holds(&view, &mut scope, when, milestone, cx) {
                self.progress.reach(milestone, cx.now_ms);
                self.session().reached.push(milestone);
            }
        }
        self.facts = facts;
    }

    /// Keeps the tables as they are before a write at `now_ms`.
    fn snapshot(&mut self, now_ms: TimeMs) {
        if !self.keeps_history {
            return;
        }
        if self.history.len() == HISTORY_MAX {
            self.history.remove(0);
        }
        let state = self.session().state.clone();
        self.history.push((now_ms, state));
    }

    fn serve_script(
        &mut self,
        i: usize,
        call: &ToolCall,
        as_of_ms: TimeMs,
        cx: &mut WorldCx<'_, ScriptEvent>,
    ) -> Result<Value, ToolError> {
        let tool = &self.model.tools[i];
        self.model.argument_errors.check(&tool.name, &tool.schema, &call.args)?;
        if tool.kind == ToolKind::Write {
            self.snapshot(cx.now_ms);
        }
        // A stale read runs on the tables as they were at `as_of_ms`: the state
        // before the first write after it.
        let stale = if tool.kind == ToolKind::Read && as_of_ms < cx.now_ms {
            self.history.iter().find(|(at, _)| *at > as_of_ms).map(|(_, state)| state.clone())
        } else {
            None
        };
        let current = stale.map(|old| std::mem::replace(&mut self.session().state, old));
        let session = self.session();
        session.now_ms = cx.now_ms;
        session.writable = tool.kind == ToolKind::Write;
        let result = self.model.run_body(&mut self.session, tool, &call.args);
        if let Some(current) = current {
            self.session().state = current;
        }
        self.drain(cx);
        match result {
            Ok(body @ Value::Map(_)) => Ok(body),
            // Agents read objects: any other answer is wrapped.
            Ok(other) => Ok(Value::map([("result", other)])),
            Err(Failure::Tool(e)) => Err(e),
            Err(Failure::Script { message, limit }) => {
                let what = if limit { "script_limit" } else { "script_error" };
                cx.note(what, Value::map([("tool", Value::str(&tool.name)), ("message", Value::str(&message))]));
                Err(ToolError { status: 500, message: format!("script error in `{}`: {message}", tool.name) })
            }
        }
    }

    /// A message to the user: checked against the world's `recipient` when
    /// messages are addressed (an unknown id is a 404; another user's id fires
    /// the minefield and reaches nobody), then answered.
    fn deliver(&mut self, args: &Value, cx: &mut WorldCx<'_, ScriptEvent>) -> Result<Value, ToolError> {
        // The request is checked whole first, as a service does: a kind it
        // declares, and the fact an `ask` asks for.
        let kind = crate::kit::args::one_of_arg(args, "kind", super::MESSAGE_KINDS)?;
        if kind == "ask" {
            crate::kit::args::str_arg(args, "fact")?;
        }
        if let Some((recipient, minefield)) = &self.model.recipient {
            let to = crate::kit::args::str_arg(args, &recipient.arg)?;
            if self.session().state.get(&recipient.table, to).ok().flatten().is_none() {
                return Err(ToolError::not_found(format!("no {} `{to}`", recipient.arg)));
            }
            let user = self.facts.get(&recipient.fact).and_then(Value::as_str).unwrap_or_default();
            if to != user {
                cx.minefield(minefield, format!("message meant for {user} sent to {to}"));
                return Ok(self.outbox.sent());
            }
        }
        Ok(self.answer(args, cx))
    }

    fn answer(&mut self, args: &Value, cx: &mut WorldCx<'_, ScriptEvent>) -> Value {
        self.remember_message(args);
        let now_ms = cx.now_ms;
        match args.get("kind").and_then(Value::as_str).unwrap_or_default() {
            "confirm" => {
                let at = self.reply_at(now_ms);
                let reply = self.confirm(args);
                cx.tell_agent(at, reply);
            }
            "ask" => {
                let fact = args.get("fact").and_then(Value::as_str).unwrap_or_default().to_string();
                let at = self.reply_at(now_ms);
                let reply = match self.facts.get(&fact) {
                    Some(v) => {
                        let shown = v.as_str().map_or_else(|| v.render(), str::to_string);
                        Message {
                            text: format!("My {fact} is {shown}."),
                            content: Value::map([(fact.clone(), v.clone())]),
                        }
                    }
                    None => Message {
                        text: format!("Sorry, I don't know my {fact}."),
                        content: Value::map([("unknown", Value::Str(fact))]),
                    },
                };
                cx.tell_agent(at, reply);
            }
            "done" => self.session().told.push(args.clone()),
            _ => {}
        }
        self.outbox.sent()
    }

    /// The user's answer to a proposal: every argument named as a fact must be
    /// that fact; then yes, or (once, at the persona's rate) a change of mind.
    fn confirm(&mut self, args: &Value) -> Message {
        let wrong = self.facts_differ(args);
        let changes_mind = self.model.personas[self.persona].changes_mind;
        // Drawn on every confirmation, whatever the answer, so the stream does
        // not depend on what the agent proposed.
        let mind_draw = self.user_rng.chance(changes_mind);
        if let Some(fact) = wrong {
            let mut content = self.facts.clone();
            content.set("confirm", Value::Bool(false));
            return Message { text: format!("No, that's not right: check the {fact}."), content };
        }
        if mind_draw
            && !self.changed_mind
            && let Some((facts, _)) = &self.task.alternative
        {
            self.changed_mind = true;
            self.facts = facts.clone();
            let mut content = self.facts.clone();
            content.set("confirm", Value::Bool(false));
            content.set("changed_mind", Value::Bool(true));
            let text = fill_text(&self.task.request, &self.facts).unwrap_or_default();
            return Message { text: format!("Actually, sorry, I changed my mind. {text}"), content };
        }
        let mut content = self.facts.clone();
        content.set("confirm", Value::Bool(true));
        Message { text: "Yes, that's right, go ahead.".into(), content }
    }

    /// The first argument that names a fact and differs from it.
    fn facts_differ(&self, args: &Value) -> Option<String> {
        let Value::Map(pairs) = args else { return None };
        pairs.iter().find(|(k, v)| self.facts.get(k).is_some_and(|f| f != v)).map(|(k, _)| k.to_string())
    }

    /// Whether the task's success conditions hold now, apart from milestones.
    fn state_ok(&self) -> Result<(), judge::Unmet> {
        let state = &self.session.as_ref().expect("the session is home").state;
        if let Some((gold, alternative)) = &self.task.gold_state {
            let target = if self.changed_mind { alternative.as_ref().unwrap_or(gold) } else { gold };
            if !state.same_records(target, self.task.compared.as_deref()) {
                return Err(judge::Unmet::TablesDiffer);
            }
        }
        Ok(())
    }
}

impl ScriptedWorld<'_> {
    /// The success predicate `when` on the final state.
    fn success_holds(&self, when: usize) -> Result<bool, crate::scripted::script::PredicateError> {
        let home = self.session.as_ref().expect("the session is home");
        let vars = [("facts", &self.facts)];
        if let Some(holds) = self.model.program.native(when, &Vars(&vars), &home.reached) {
            return Ok(holds);
        }
        // The judge reads state only: evaluate on a copy of the session so
        // `judge` can stay `&self`.
        let mut session = Some(Box::new(super::script::Session {
            state: home.state.clone(),
            now_ms: home.now_ms,
            rng: StreamSource::new([0; 32], 0).stream("judge"),
            writable: false,
            notes: Vec::new(),
            minefields: Vec::new(),
            minefield_names: Vec::new(),
            calls: home.calls.clone(),
            told: home.told.clone(),
            reached: home.reached.clone(),
        }));
        self.model.program.predicate(&mut session, when, &vars)
    }
}

/// What the predicates after a call read: `facts`, and `action` (the call's
/// `tool`, `args`, whether it was `ok`, its `status` and `result`).
struct CallView<'v> {
    facts: &'v Value,
    tool: &'v str,
    args: &'v Value,
    reply: &'v Result<Value, ToolError>,
}

impl CallView<'_> {
    /// The call's status: 200, or the error's.
    fn status(&self) -> i64 {
        self.reply.as_ref().map_or_else(|e| i64::from(e.status), |_| 200)
    }

    /// `action` as a value, as scripts see it.
    fn action(&self) -> Value {
        Value::map([
            ("tool", Value::str(self.tool)),
            ("args", self.args.clone()),
            ("ok", Value::Bool(self.reply.is_ok())),
            ("status", Value::Int(self.status())),
            ("result", self.reply.as_ref().map_or(Value::Null, Clone::clone)),
        ])
    }

    /// The variables as a Rhai scope, for the predicates Rust leaves to Rhai.
    fn scope(&self) -> rhai::Scope<'static> {
        let mut scope = rhai::Scope::new();
        scope.push_constant_dynamic("facts", to_dynamic(self.facts));
        scope.push_constant_dynamic("action", to_dynamic(&self.action()));
        scope
    }
}

impl Bindings for CallView<'_> {
    fn scalar(&self, root: &str, fields: &[String]) -> Option<Scalar<'_>> {
        match root {
            "facts" => scalar_at(self.facts, fields),
            "action" => {
                let (first, rest) = fields.split_first()?;
                match (first.as_str(), rest.is_empty()) {
                    ("tool", true) => Some(Scalar::Str(self.tool)),
                    ("ok", true) => Some(Scalar::Bool(self.reply.is_ok())),
                    ("status", true) => Some(Scalar::Int(self.status())),
                    ("args", _) => scalar_at(self.args, rest),
                    ("result", _) => scalar_at(self.reply.as_ref().ok()?, rest),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    fn list(&self, root: &str, fields: &[String]) -> Option<&[Value]> {
        match root {
            "facts" => list_at(self.facts, fields),
            "action" => {
                let (first, rest) = fields.split_first()?;
                match first.as_str() {
                    "args" => list_at(self.args, rest),
                    "result" => list_at(self.reply.as_ref().ok()?, rest),
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

/// The facts a model playing the user is told it knows, one `name: value`
/// per line (`unknown_info`, tau2's, is said apart).
fn known_lines(facts: &Value) -> String {
    let Value::Map(pairs) = facts else { return String::new() };
    let shown = |v: &Value| v.as_str().map_or_else(|| v.render(), str::to_string);
    pairs
        .iter()
        .filter(|(k, _)| k.as_ref() != "unknown_info")
        .map(|(k, v)| format!("\t\t{k}: {}\n", shown(v)))
        .collect()
}

impl World for ScriptedWorld<'_> {
    type Event = ScriptEvent;

    /// tau2's layout of a user scenario (`Instructions:` with the reason for
    /// the call, the known and unknown info and the task's instructions),
    /// from the task's request, facts and description.
    fn user_instructions(&self) -> Option<String> {
        let persona = &self.model.personas[self.persona];
        let request = fill_text(&self.task.request, &self.facts).unwrap_or_else(|_| self.task.request.clone());
        let mut out =
            format!("Persona:\n\t{}\nInstructions:\n\tReason for call:\n\t\t{}\n", persona.name, request.trim());
        let known = known_lines(&self.facts);
        if !known.is_empty() {
            out.push_str("\tKnown info:\n");
            out.push_str(&known);
        }
        if let Some(unknown) = self.facts.get("unknown_info").and_then(Value::as_str) {
            out.push_str(&format!("\tUnknown info:\n\t\t{}\n", unknown.trim()));
        }
        if !self.task.description.trim().is_empty() {
            out.push_str(&format!("\tTask instructions:\n\t\t{}\n", self.task.description.trim()));
        }
        Some(out)
    }

    fn start(&mut self, cx: &mut WorldCx<'_, ScriptEvent>) {
        for (i, process) in self.model.processes.iter().enumerate() {
            let at = match (&process.at_ms, &process.every) {
                (Some(at), _) => *at,
                (None, Some(every)) => every.sample(&mut self.world_rng),
                (None, None) => continue,
            };
            cx.schedule(at, ScriptEvent::Process(i));
        }
        let persona = &self.model.personas[self.persona];
        cx.note("persona", Value::str(&persona.name));
        cx.note("task", Value::str(&self.task.id));
        if let Some(patience) = persona.patience_ms {
            cx.schedule(patience, ScriptEvent::PatienceOut);
        }
        let template =
            self.task.openings.iter().find(|(p, _)| *p == persona.name).map_or(&self.task.request, |(_, t)| t);
        let text = fill_text(template, &self.facts).unwrap_or_else(|_| template.clone());
        self.progress.reach("started", cx.now_ms);
        cx.tell_agent(0, Message { text, content: self.stated() });
    }

    fn on_event(&mut self, event: ScriptEvent, cx: &mut WorldCx<'_, ScriptEvent>) {
        match event {
            ScriptEvent::Process(i) => {
                self.snapshot(cx.now_ms);
                let process = &self.model.processes[i];
                let session = self.session();
                session.now_ms = cx.now_ms;
                session.writable = true;
                let result = self.model.program.call(&mut self.session, &process.body, Vec::new());
                self.drain(cx);
                let mut note = Value::map([("name", Value::str(&process.name))]);
                if let Err(f) = result {
                    let message = match f {
                        Failure::Tool(e) => e.message,
                        Failure::Script { message, .. } => message,
                    };
                    note.set("error", Value::Str(message));
                }
                cx.note("process", note);
                if let Some(every) = &process.every {
                    let at = cx.now_ms.saturating_add(every.sample(&mut self.world_rng).max(1));
                    cx.schedule(at, ScriptEvent::Process(i));
                }
            }
            ScriptEvent::PatienceOut => {
                if self.left_at_ms.is_none() && !self.escalated && self.state_ok().is_err() {
                    let content = self.stated();
                    leave(&mut self.left_at_ms, "user_left", "Forget it, I'll sort this out another way.", content, cx);
                }
            }
        }
    }

    fn handle(
        &mut self,
        call: &ToolCall,
        as_of_ms: TimeMs,
        cx: &mut WorldCx<'_, ScriptEvent>,
    ) -> Result<Value, ToolError> {
        if let Some(key) = &call.idempotency_key
            && let Some((_, _, answer)) = self.keyed.iter().find(|(t, k, _)| *t == call.tool && k == key)
        {
            // Like the built-in worlds' services, a scripted world honours
            // idempotency keys: the same key gets the first answer, and the
            // body does not run again.
            cx.note("idempotent_replay", Value::map([("key", Value::str(key))]));
            return answer.clone();
        }
        let (name, reply) = match self.model.served(call.tool) {
            Served::Script(i) => (self.model.tools[i].name.as_str(), self.serve_script(i, call, as_of_ms, cx)),
            Served::SendMessage => (super::SEND_MESSAGE, self.deliver(&call.args, cx)),
            Served::Escalate => {
                self.escalated = true;
                (super::ESCALATE, Ok(escalate(call, cx)))
            }
            Served::Other => return Err(ToolError::not_found("no such tool")),
        };
        self.after_call(call, name, &reply, cx);
        if let Some(key) = &call.idempotency_key
            && reply.as_ref().is_ok()
        {
            self.keyed.push((call.tool, key.clone(), reply.clone()));
        }
        reply
    }

    fn state_hash(&self) -> Option<String> {
        let hasher = self.model.state_hasher.as_ref()?;
        Some(hasher.hash(&self.session.as_ref().expect("the session is home").state))
    }

    fn hear(&mut self, text: &str, cx: &mut WorldCx<'_, ScriptEvent>) {
        self.remember_said(text);
        self.hear_text(text, cx);
    }

    fn judge(&self) -> Verdict {
        self.verdict()
    }

    fn checks(&self) -> Vec<agentsim_engine::Check> {
        self.checks_now()
    }
}

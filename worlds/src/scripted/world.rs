//! One trajectory of a scripted world: the user built from the task's facts and
//! a persona, the tools served by the script, processes on the clock, and the
//! judge (milestones, minefields, the gold state, the success predicate).

use agentsim_engine::{
    Catalog, Message, SessionId, StreamSource, TimeMs, ToolCall, ToolError, ToolKind, Value, Verdict, World, WorldCx,
};

use super::lazy_stream::LazyStream;
use super::model::{ScriptedModel, Served};
use super::native::{Bindings, Scalar, list_at, scalar_at};
use super::placeholders::fill_text;
use super::rebase::{rebase, same};
use super::script::{Failure, Vars, to_dynamic};
use crate::kit::escalation::escalate;
use crate::kit::goodbye::leave;

#[path = "caller.rs"]
mod caller;
#[path = "hear.rs"]
mod hear;
#[path = "judge.rs"]
mod judge;
#[path = "unmet.rs"]
mod unmet;

use caller::{Caller, Seat};

/// The world's own events.
pub enum ScriptEvent {
    /// Process `n` runs.
    Process(usize),
    /// The patience of a session's user runs out.
    PatienceOut(SessionId),
}

/// One trajectory's scripted world.
pub struct ScriptedWorld<'m> {
    model: &'m ScriptedModel,
    /// The script's home: the tables (every session's), the clock and the
    /// current session's lists.
    session: Option<Box<super::script::Session>>,
    /// The processes' stream (derived on its first draw).
    world_rng: LazyStream,
    /// The user of the session handled now.
    user: Caller<'m>,
    /// The session `user` belongs to.
    current: SessionId,
    /// Every session's user, by session (`Seat::Here` for `current`).
    parked: Vec<Seat<'m>>,
    /// The task of every session (a run of many sessions), and the streams
    /// its users draw from.
    sessions: Option<(Vec<usize>, StreamSource)>,
    /// Answers of writes sent with an idempotency key: (tool, key, answer).
    keyed: Vec<(agentsim_engine::ToolId, String, Result<Value, ToolError>)>,
    /// The tables before each write (a write tool or a process), with the time
    /// of the write: what a stale read (a `Stale` fault) sees.
    history: Vec<(TimeMs, super::state::State)>,
    /// Whether a stale read can happen in this run (the catalog has a `Stale`
    /// fault): without one, `history` stays empty and no write copies the tables.
    keeps_history: bool,
}

/// Snapshots kept for stale reads, at most (the oldest go first; the call
/// budgets keep real runs far below it).
const HISTORY_MAX: usize = 1_024;

impl<'m> ScriptedWorld<'m> {
    /// A fresh world for one seed, on task `task`; the persona is drawn from the
    /// user's stream.
    pub fn new(model: &'m ScriptedModel, task: usize, streams: &StreamSource, catalog: &Catalog) -> Self {
        Self {
            model,
            session: model.session(LazyStream::later(streams, "script")),
            world_rng: LazyStream::later(streams, "world"),
            user: Caller::new(model, task, streams, 0),
            current: 0,
            parked: vec![Seat::Here],
            sessions: None,
            keyed: Vec::new(),
            history: Vec::new(),
            keeps_history: catalog.may_serve_stale(),
        }
    }

    /// A fresh world for a run of many sessions, session `s` on task
    /// `tasks[s]`: the tables keep who wrote each record.
    pub fn with_sessions(
        model: &'m ScriptedModel,
        tasks: Vec<usize>,
        streams: &StreamSource,
        catalog: &Catalog,
    ) -> Self {
        assert!(!tasks.is_empty(), "a run has at least one session");
        let mut world = Self::new(model, tasks[0], streams, catalog);
        world.session().state.track_writers();
        world.sessions = Some((tasks, streams.clone()));
        world
    }

    fn session(&mut self) -> &mut super::script::Session {
        self.session.as_mut().expect("the session is home between script calls")
    }

    fn reply_at(&mut self, now_ms: TimeMs) -> TimeMs {
        now_ms.saturating_add(self.model.reply_ms.sample(&mut self.user.user_rng))
    }

    /// The facts this persona states, as the message's structured content.
    fn stated(&self) -> Value {
        let states = &self.model.personas[self.user.persona].states;
        match &self.user.facts {
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
        if session.notes.is_empty() && session.minefields.is_empty() {
            // What nearly every call leaves: nothing to report.
            return;
        }
        let notes = std::mem::take(&mut session.notes);
        let minefields = std::mem::take(&mut session.minefields);
        for note in notes {
            cx.note("script", note);
        }
        for (name, detail) in minefields {
            self.fire(name, detail, cx);
        }
    }

    /// Records that a minefield fired: a race with another session when the
    /// running call reached a record that session wrote last (a run of many
    /// sessions), else the acting session's own.
    fn fire(&self, name: &'static str, detail: String, cx: &mut WorldCx<'_, ScriptEvent>) {
        let state = &self.session.as_ref().expect("the session is home").state;
        match (state.acting(), state.other_writer_reached()) {
            (Some(session), Some(against)) => cx.race(name, detail, session, against),
            _ => cx.minefield(name, detail),
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
        name: &'static str,
        reply: &Result<Value, ToolError>,
        cx: &mut WorldCx<'_, ScriptEvent>,
    ) {
        if reply.is_ok() && self.model.keeps_calls {
            self.session().calls.push((name, Value::clone(&call.args)));
        }
        let task = self.user.task;
        if self.model.minefields.is_empty()
            && task.minefields.is_empty()
            && (reply.is_err() || task.milestones.is_empty())
        {
            // No minefield, and no milestone this call could reach.
            return;
        }
        let program = &self.model.program;
        let mines: Vec<(&'static str, usize)> = (self.model.minefields.iter().chain(&self.user.task.minefields))
            .filter_map(|m| m.when.filter(|&when| program.may_hold_for(when, name)).map(|when| (m.name, when)))
            .collect();
        let milestones: Vec<(&'static str, usize)> = match reply {
            Ok(_) => (self.user.task.milestones.iter())
                .filter(|&&(m, when)| !self.user.progress.has(m) && program.may_hold_for(when, name))
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
        let facts = std::mem::take(&mut self.user.facts);
        let view = CallView { facts: &facts, tool: name, args: &call.args, reply };
        let mut scope = None;
        self.session().now_ms = cx.now_ms;
        self.session().writable = false;
        for (mine, when) in mines {
            if self.holds(&view, &mut scope, when, mine, cx) {
                self.fire(mine, format!("after {name} {}", call.args.render()), cx);
            }
        }
        for (milestone, when) in milestones {
            if self.holds(&view, &mut scope, when, milestone, cx) {
                self.user.progress.reach(milestone, cx.now_ms);
                self.session().reached.push(milestone);
            }
        }
        self.user.facts = facts;
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
        self.model.argument_errors.check(tool.name, &tool.schema, &call.args)?;
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
                cx.note(what, Value::map([("tool", Value::str(tool.name)), ("message", Value::str(&message))]));
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
            let user = self.user.facts.get(&recipient.fact).and_then(Value::as_str).unwrap_or_default();
            if to != user {
                cx.minefield(minefield, format!("message meant for {user} sent to {to}"));
                return Ok(self.user.outbox.sent());
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
                let reply = match self.user.facts.get(&fact) {
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
        self.user.outbox.sent()
    }

    /// The user's answer to a proposal: every argument named as a fact must be
    /// that fact; then yes, or (once, at the persona's rate) a change of mind.
    fn confirm(&mut self, args: &Value) -> Message {
        let wrong = self.facts_differ(args);
        let changes_mind = self.model.personas[self.user.persona].changes_mind;
        // Drawn on every confirmation, whatever the answer, so the stream does
        // not depend on what the agent proposed.
        let mind_draw = self.user.user_rng.chance(changes_mind);
        if let Some(fact) = wrong {
            let mut content = self.user.facts.clone();
            content.set("confirm", Value::Bool(false));
            return Message { text: format!("No, that's not right: check the {fact}."), content };
        }
        if mind_draw
            && !self.user.changed_mind
            && let Some((facts, _)) = &self.user.task.alternative
        {
            self.user.changed_mind = true;
            self.user.facts = facts.clone();
            let mut content = self.user.facts.clone();
            content.set("confirm", Value::Bool(false));
            content.set("changed_mind", Value::Bool(true));
            let text = fill_text(&self.user.task.request, &self.user.facts).unwrap_or_default();
            return Message { text: format!("Actually, sorry, I changed my mind. {text}"), content };
        }
        let mut content = self.user.facts.clone();
        content.set("confirm", Value::Bool(true));
        Message { text: "Yes, that's right, go ahead.".into(), content }
    }

    /// The first argument that names a fact and differs from it.
    fn facts_differ(&self, args: &Value) -> Option<String> {
        let Value::Map(pairs) = args else { return None };
        pairs.iter().find(|(k, v)| self.user.facts.get(k).is_some_and(|f| f != v)).map(|(k, _)| k.to_string())
    }

    /// Whether `caller`'s task's tables hold, apart from milestones: every
    /// record the gold actions give, in a run of one session. In a run of
    /// many, the others' tasks write the same tables: only the records this
    /// task's gold actions write and those this session wrote are judged.
    fn state_ok(&self, caller: &Caller<'_>) -> Result<(), unmet::Unmet> {
        let state = &self.session.as_ref().expect("the session is home").state;
        let Some(target) = gold_of(caller) else { return Ok(()) };
        let same = if self.sessions.is_some() {
            self.differing(caller, target).next().is_none()
        } else {
            state.same_records(target, caller.task.compared.as_deref())
        };
        if same { Ok(()) } else { Err(unmet::Unmet::TablesDiffer) }
    }

    /// The records judged for `caller` in a run of many sessions whose final
    /// value is not the one its task should leave: (table index, key). The
    /// task's change (initial to gold) is rebased onto the record as the
    /// session found it before its first write, or onto the final record if
    /// it never wrote it (`rebase`). A record another session wrote after this
    /// one first wrote it is not judged for this session: their changes
    /// interleave, and which is whose cannot be told.
    fn differing<'a>(
        &'a self,
        caller: &'a Caller<'_>,
        target: &'a super::state::State,
    ) -> impl Iterator<Item = (usize, &'a str)> + 'a {
        let state = &self.session.as_ref().expect("the session is home").state;
        let compared = caller.task.compared.as_deref();
        let gold =
            target.changes().map(|(t, k, _)| (t, k)).filter(|(t, k)| !caller.wrote.contains_key(&(*t, k.to_string())));
        let own = caller.wrote.keys().map(|(t, k)| (*t, k.as_str()));
        let superseded = move |t: usize, k: &str| state.written_after_by_other(t, k, caller.id);
        gold.chain(own)
            .filter(move |(t, _)| compared.is_none_or(|list| list.contains(t)))
            .filter(move |(t, k)| !superseded(*t, k))
            .filter(move |(t, k)| {
                let now = state.record_at(*t, k);
                let found = caller.wrote.get(&(*t, k.to_string())).map_or(now, Option::as_ref);
                let should = rebase(state.base_record(*t, k), target.record_at(*t, k), found);
                !same(now, should.as_ref())
            })
    }

    /// The other session that last wrote a record session `session`'s task
    /// is judged on and that differs from its gold state, if any.
    fn hurt_by(&self, session: SessionId) -> Option<SessionId> {
        let (caller, _) = self.caller_of(session);
        let target = gold_of(caller)?;
        let state = &self.session.as_ref().expect("the session is home").state;
        self.differing(caller, target).find_map(|(t, k)| state.writer_at(t, k).filter(|w| *w != session))
    }
}

/// The tables `caller`'s task should end with (its alternative's when the
/// user changed their mind), when the task has gold actions.
fn gold_of<'a>(caller: &Caller<'a>) -> Option<&'a super::state::State> {
    let (gold, alternative) = caller.task.gold_state.as_ref()?;
    Some(if caller.changed_mind { alternative.as_ref().unwrap_or(gold) } else { gold })
}

impl<'m> ScriptedWorld<'m> {
    /// The success predicate `when` on the final state, for `caller`.
    fn success_holds(
        &self,
        caller: &Caller<'m>,
        lists: caller::ListsRef<'_>,
        when: usize,
    ) -> Result<bool, crate::scripted::script::PredicateError> {
        let home = self.session.as_ref().expect("the session is home");
        let vars = [("facts", &caller.facts)];
        if let Some(holds) = self.model.program.native(when, &Vars(&vars), lists.reached) {
            return Ok(holds);
        }
        // The judge reads state only: evaluate on a copy of the session so
        // `judge` can stay `&self`.
        let mut state = home.state.clone();
        state.act_for(Some(caller.id));
        let mut session = Some(Box::new(super::script::Session {
            state,
            now_ms: home.now_ms,
            rng: LazyStream::later(&StreamSource::new([0; 32], 0), "judge"),
            writable: false,
            notes: Vec::new(),
            minefields: Vec::new(),
            minefield_names: std::sync::Arc::from([]),
            calls: lists.calls.to_vec(),
            told: lists.told.to_vec(),
            reached: lists.reached.to_vec(),
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

/// tau2's layout of a user scenario (`Instructions:` with the reason for
/// the call, the known and unknown info and the task's instructions), from
/// `caller`'s task's request, facts and description.
fn instructions(model: &ScriptedModel, caller: &Caller<'_>) -> String {
    let persona = &model.personas[caller.persona];
    let task = caller.task;
    let request = fill_text(&task.request, &caller.facts).unwrap_or_else(|_| task.request.clone());
    let mut out = format!("Persona:\n\t{}\nInstructions:\n\tReason for call:\n\t\t{}\n", persona.name, request.trim());
    let known = known_lines(&caller.facts);
    if !known.is_empty() {
        out.push_str("\tKnown info:\n");
        out.push_str(&known);
    }
    if let Some(unknown) = caller.facts.get("unknown_info").and_then(Value::as_str) {
        out.push_str(&format!("\tUnknown info:\n\t\t{}\n", unknown.trim()));
    }
    if !task.description.trim().is_empty() {
        out.push_str(&format!("\tTask instructions:\n\t\t{}\n", task.description.trim()));
    }
    out
}

impl ScriptedWorld<'_> {
    /// The current session's user arrives: its persona and task noted, its
    /// patience set, its opening message sent.
    fn open(&mut self, cx: &mut WorldCx<'_, ScriptEvent>) {
        let persona = &self.model.personas[self.user.persona];
        cx.note("persona", Value::str(&persona.name));
        cx.note("task", Value::str(&self.user.task.id));
        if let Some(patience) = persona.patience_ms {
            cx.schedule(cx.now_ms.saturating_add(patience), ScriptEvent::PatienceOut(self.current));
        }
        let task = self.user.task;
        let template = task.openings.iter().find(|(p, _)| *p == persona.name).map_or(&task.request, |(_, t)| t);
        let text = fill_text(template, &self.user.facts).unwrap_or_else(|_| template.clone());
        self.user.progress.reach("started", cx.now_ms);
        cx.tell_agent(cx.now_ms, Message { text, content: self.stated() });
    }

    /// Handles what session `session` (or session 0, in a run of one) does
    /// next: its user is made current, and the tables learn who acts.
    fn enter(&mut self, session: Option<SessionId>) {
        let session = session.unwrap_or(0);
        self.switch(session);
        self.session().state.act_for(Some(session));
    }

    /// Runs a world process (no session acts).
    fn run_process(&mut self, i: usize, cx: &mut WorldCx<'_, ScriptEvent>) {
        self.snapshot(cx.now_ms);
        let process = &self.model.processes[i];
        let session = self.session();
        session.now_ms = cx.now_ms;
        session.writable = true;
        session.state.act_for(None);
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
            let at = cx.now_ms.saturating_add(every.sample(self.world_rng.get()).max(1));
            cx.schedule(at, ScriptEvent::Process(i));
        }
    }

    /// Keeps the records the call just handled wrote as the current
    /// session's (a run of many sessions).
    fn keep_writes(&mut self) {
        if !self.session().state.tracks_writers() {
            // A run of one session: nothing is kept of who wrote what.
            return;
        }
        let reached = self.session().state.take_reached();
        for r in reached.into_iter().filter(|r| r.wrote) {
            self.user.wrote.entry((r.table, r.key)).or_insert(r.replaced);
        }
    }
}

impl World for ScriptedWorld<'_> {
    type Event = ScriptEvent;

    fn user_instructions(&self) -> Option<String> {
        Some(instructions(self.model, self.caller_of(0).0))
    }

    fn session_instructions(&self, session: SessionId) -> Option<String> {
        Some(instructions(self.model, self.caller_of(session).0))
    }

    fn start(&mut self, cx: &mut WorldCx<'_, ScriptEvent>) {
        for (i, process) in self.model.processes.iter().enumerate() {
            let at = match (&process.at_ms, &process.every) {
                (Some(at), _) => *at,
                (None, Some(every)) => every.sample(self.world_rng.get()),
                (None, None) => continue,
            };
            cx.schedule(at, ScriptEvent::Process(i));
        }
        self.open(cx);
    }

    fn sessions_max(&self) -> u32 {
        self.sessions.as_ref().map_or(1, |(tasks, _)| u32::try_from(tasks.len()).unwrap_or(u32::MAX))
    }

    fn start_session(&mut self, session: SessionId, cx: &mut WorldCx<'_, ScriptEvent>) {
        let (tasks, streams) = self.sessions.as_ref().expect("a world of many sessions knows their tasks");
        let caller = Caller::new(self.model, tasks[session as usize], streams, session);
        assert_eq!(self.parked.len(), session as usize, "sessions start in order");
        self.parked.push(Seat::Parked(Box::new(caller)));
        self.enter(Some(session));
        self.open(cx);
    }

    fn session_ended(&mut self, session: SessionId) {
        // Its words are over: what the judge reads stays.
        if session == self.current {
            self.user.voice = None;
        } else if let Seat::Parked(caller) = &mut self.parked[session as usize] {
            caller.voice = None;
        }
    }

    fn on_event(&mut self, event: ScriptEvent, cx: &mut WorldCx<'_, ScriptEvent>) {
        match event {
            ScriptEvent::Process(i) => self.run_process(i, cx),
            ScriptEvent::PatienceOut(session) => {
                self.enter(Some(session));
                if self.sessions.is_some() {
                    cx.act_for(session);
                }
                if self.user.left_at_ms.is_none() && !self.user.escalated && self.state_ok(&self.user).is_err() {
                    let content = self.stated();
                    leave(
                        &mut self.user.left_at_ms,
                        "user_left",
                        "Forget it, I'll sort this out another way.",
                        content,
                        cx,
                    );
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
        self.enter(cx.session());
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
            Served::Script(i) => (self.model.tools[i].name, self.serve_script(i, call, as_of_ms, cx)),
            Served::SendMessage => (super::SEND_MESSAGE, self.deliver(&call.args, cx)),
            Served::Escalate => {
                self.user.escalated = true;
                (super::ESCALATE, Ok(escalate(call, cx)))
            }
            Served::Other => return Err(ToolError::not_found("no such tool")),
        };
        self.after_call(call, name, &reply, cx);
        self.keep_writes();
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
        self.enter(cx.session());
        self.remember_said(text);
        self.hear_text(text, cx);
    }

    fn judge(&self) -> Verdict {
        self.verdict(0)
    }

    fn judge_session(&self, session: SessionId) -> Verdict {
        self.verdict(session)
    }

    fn session_hurt_by(&self, session: SessionId) -> Option<SessionId> {
        self.hurt_by(session)
    }

    fn checks(&self) -> Vec<agentsim_engine::Check> {
        self.checks_now()
    }
}

//! The default expert of a built world: it follows a plan, a list of tool
//! calls whose arguments are filled in from what the user said and what
//! earlier calls answered, and fails as every built-in expert does (back off,
//! renew a session after a 401, pause on a loop block, hand the case to a
//! human after too many failures). A write whose answer was lost is checked
//! with a read before it is sent again, when the plan says how.

use std::sync::Arc;

use agentsim_engine::{
    Action, Agent, AgentCx, Args, Catalog, Finish, Input, Reply, TimeMs, ToolId, ToolKind, ToolResult, Value,
};

use super::error::{BuildError, BuildErrorKind};
use crate::kit::case::{Case, begin_step, call};
use crate::read::{LOOP_PAUSE_MS, accepted, backoff_ms};

/// What the expert knows when it fills in a step's arguments.
#[derive(Clone, Debug, Default)]
pub struct Known {
    /// The facts of the user's first message.
    said: Value,
    /// The latest accepted answer of each tool, and the arguments of its
    /// latest call, by tool name.
    results: Vec<Learnt>,
}

impl Known {
    /// The fact `name` the user stated (`Null` when not stated).
    pub fn said(&self, name: &str) -> Value {
        self.said.get(name).cloned().unwrap_or_default()
    }

    /// The field `field` of `tool`'s latest accepted answer (`Null` when none).
    pub fn result(&self, tool: &str, field: &str) -> Value {
        self.answer(tool).and_then(|a| a.get(field)).cloned().unwrap_or_default()
    }

    /// `tool`'s latest accepted answer.
    pub fn answer(&self, tool: &str) -> Option<&Value> {
        self.results.iter().find(|l| *l.name == *tool).map(|l| &l.answer)
    }

    fn args_of(&self, tool: &str) -> Value {
        self.results.iter().find(|l| *l.name == *tool).map_or(Value::Map(Vec::new()), |l| Value::clone(&l.args))
    }

    /// Keeps `answer` and `args` as the latest of `tool` (called `name`, asked
    /// for only the first time; the id is compared, the name is what steps
    /// ask by). Taken, not copied: the
    /// result is the expert's own once delivered.
    fn learn(&mut self, tool: ToolId, name: impl FnOnce() -> Arc<str>, answer: Value, args: Args) {
        match self.results.iter_mut().find(|l| l.tool == tool) {
            Some(learnt) => (learnt.answer, learnt.args) = (answer, args),
            None => self.results.push(Learnt { tool, name: name(), answer, args }),
        }
    }
}

/// A tool's latest accepted answer and the arguments of its call.
#[derive(Clone, Debug)]
struct Learnt {
    tool: ToolId,
    /// The tool's name in the catalog (one name for one id), shared with
    /// the resolved plan's names: learning a tool allocates no name.
    name: Arc<str>,
    answer: Value,
    args: Args,
}

type ArgsFn = Arc<dyn Fn(&Known) -> Value + Send + Sync>;
type CheckFn = Arc<dyn Fn(&Known) -> bool + Send + Sync>;

/// The steps the default expert takes, in order.
///
/// ```
/// use agentsim_engine::Value;
/// use agentsim_worlds::builder::Plan;
/// let plan = Plan::new()
///     .call("find_book", |k| Value::map([("title", k.said("title"))]))
///     .call("lend", |k| Value::map([("book_id", k.result("find_book", "book_id"))]))
///     // A lend whose answer was lost: look the book up again before lending again.
///     .verify("find_book", |k| k.result("find_book", "loans").as_int() > Some(0));
/// ```
#[derive(Clone, Default)]
pub struct Plan {
    steps: Vec<Step<String>>,
}

#[derive(Clone)]
struct Step<T> {
    tool: T,
    args: ArgsFn,
    /// After a lost answer: the read that tells, and whether it says applied.
    verify: Option<(T, CheckFn)>,
}

impl Plan {
    /// No steps yet.
    pub fn new() -> Self {
        Plan::default()
    }

    /// Then call `tool` with the arguments `args` fills in.
    pub fn call(mut self, tool: &str, args: impl Fn(&Known) -> Value + Send + Sync + 'static) -> Self {
        self.steps.push(Step { tool: tool.to_string(), args: Arc::new(args), verify: None });
        self
    }

    /// The last step, when its answer is lost (a timeout), is checked by
    /// calling `read` again with its latest arguments: `applied` says from
    /// the answer whether the step took effect. Without it a lost answer is
    /// retried like any failure.
    pub fn verify(mut self, read: &str, applied: impl Fn(&Known) -> bool + Send + Sync + 'static) -> Self {
        if let Some(step) = self.steps.last_mut() {
            step.verify = Some((read.to_string(), Arc::new(applied)));
        }
        self
    }

    /// The plan over `catalog`'s tool ids; an unknown tool is an error.
    pub(crate) fn resolve(&self, catalog: &Catalog) -> Result<Steps, BuildError> {
        let id = |name: &str| {
            catalog.id(name).ok_or_else(|| {
                BuildError::new(BuildErrorKind::UnknownTool, name, "the plan calls a tool the world does not declare")
            })
        };
        let steps = self.steps.iter().map(|s| {
            let verify = s.verify.as_ref().map(|(read, check)| Ok::<_, BuildError>((id(read)?, Arc::clone(check))));
            Ok(Step { tool: id(&s.tool)?, args: Arc::clone(&s.args), verify: verify.transpose()? })
        });
        let names = catalog.specs().iter().map(|spec| Arc::from(spec.def.name.as_str())).collect();
        Ok(Steps(steps.collect::<Result<_, BuildError>>()?, names))
    }
}

/// A plan resolved over a catalog, and the catalog's tool names by id.
#[derive(Clone)]
pub(crate) struct Steps(Vec<Step<ToolId>>, Vec<Arc<str>>);

impl Steps {
    /// `tool`'s name in `catalog`: the resolved name when the catalog is the
    /// one the plan was resolved over (it always is; compared, to be sure).
    fn name(&self, tool: ToolId, catalog: &Catalog) -> Arc<str> {
        let name = catalog.name(tool);
        match self.1.get(usize::from(tool.0)) {
            Some(resolved) if **resolved == *name => Arc::clone(resolved),
            _ => Arc::from(name),
        }
    }
}

/// The expert that follows a plan.
pub(crate) struct PlanExpert {
    steps: Arc<Steps>,
    case: Case,
    escalate: ToolId,
    heard: bool,
    known: Known,
    next: usize,
    /// The write at `next` lost its answer: its verify read comes first.
    verifying: bool,
}

impl PlanExpert {
    pub(crate) fn new(steps: Arc<Steps>, escalate: ToolId, authenticate: ToolId) -> Self {
        let case = Case::new(escalate, authenticate);
        PlanExpert { steps, case, escalate, heard: false, known: Known::default(), next: 0, verifying: false }
    }

    fn hear(&mut self, content: Value) {
        self.case.hear(&content);
        if !self.heard {
            self.known.said = content;
            self.heard = true;
        }
    }

    /// Takes in a result (its body and arguments are kept, not copied); how
    /// long to wait before the next call, if at all.
    fn learn(&mut self, r: ToolResult, cx: &AgentCx<'_>) -> Option<TimeMs> {
        let is_accepted = accepted(&r, cx).is_some();
        let ToolResult { call, reply, .. } = r;
        let body = match reply {
            Reply::Ok(body) if is_accepted => body,
            reply => return self.failed(call.tool, &reply, cx),
        };
        let tool = call.tool;
        self.case.accepted(tool);
        let steps = &self.steps;
        self.known.learn(tool, || steps.name(tool, cx.catalog), body.into_value(), call.args);
        let step = self.steps.0.get(self.next)?;
        match &step.verify {
            Some((read, applied)) if self.verifying && *read == tool => {
                self.verifying = false;
                self.next += usize::from(applied(&self.known));
            }
            _ if step.tool == tool => self.next += 1,
            _ => {}
        }
        None
    }

    /// Takes in a failed call of `tool`; how long to wait.
    fn failed(&mut self, tool: ToolId, reply: &Reply, cx: &AgentCx<'_>) -> Option<TimeMs> {
        self.case.failures += 1;
        let write = cx.catalog.spec(tool).def.kind == ToolKind::Write;
        let step = self.steps.0.get(self.next);
        if matches!(reply, Reply::Timeout) && write && step.is_some_and(|s| s.tool == tool && s.verify.is_some()) {
            // The write may have been applied before its answer was lost.
            self.verifying = true;
            return Some(backoff_ms(self.case.failures, reply));
        }
        self.case.after_failure(reply)
    }

    fn next_action(&mut self, cx: &AgentCx<'_>) -> Action {
        if let Some(last) = self.case.closed("user") {
            return last;
        }
        if !self.heard {
            return Action::Idle { wake_at_ms: None };
        }
        if self.case.must_escalate() {
            self.case.escalating = true;
            let reason = format!("{} failures, {} refusals", self.case.failures, self.case.blocks);
            return call(self.escalate, Value::map([("reason", Value::Str(reason))]));
        }
        if self.case.needs_auth {
            return self.case.renew_session();
        }
        let Some(step) = self.steps.0.get(self.next) else { return Action::Finish(Finish::Done) };
        match (&step.verify, self.verifying) {
            (Some((read, _)), true) => call(*read, self.known.args_of(cx.catalog.name(*read))),
            _ => call(step.tool, (step.args)(&self.known)),
        }
    }
}

impl Agent for PlanExpert {
    fn step(&mut self, input: Input, cx: &mut AgentCx<'_>) -> Action {
        begin_step(&input, cx);
        let wait_ms = match input {
            Input::User(message) => {
                self.hear(message.content);
                None
            }
            Input::Tool(result) => self.learn(result, cx),
            Input::Blocked { layer, .. } => {
                self.case.blocks += 1;
                (layer == "loop_detector" || layer == "circuit_breaker").then_some(LOOP_PAUSE_MS)
            }
            Input::Wake => None,
        };
        match wait_ms {
            Some(ms) => Action::Idle { wake_at_ms: Some(cx.now_ms.saturating_add(ms)) },
            None => self.next_action(cx),
        }
    }
}

/// The expert of a world built without one: it gives up at once, saying so,
/// so that a sweep with a preset that wraps the expert shows why it fails.
pub(crate) struct NoExpert;

/// Why [`NoExpert`] gives up.
pub const NO_EXPERT: &str =
    "this world has no expert: give it a plan or an expert, or run an agent of your own (cmd:, llm:, Python)";

impl Agent for NoExpert {
    fn step(&mut self, input: Input, cx: &mut AgentCx<'_>) -> Action {
        begin_step(&input, cx);
        Action::Finish(Finish::GaveUp { reason: NO_EXPERT.into() })
    }
}

//! A world written in Rust outside agentsim: a library lends a book.
//!
//! The member asks to borrow a title; the agent finds the book (`find_book`,
//! a read that fails with 503s) and lends it (`lend`, a write whose answer may
//! be lost after it was applied). Success is judged from the world: exactly
//! one loan, of the right book, and the member told. A second loan of the same
//! book is the minefield `double_loan`.
//!
//! It uses only public parts of agentsim: the engine's `World` and `Agent`
//! traits, the worlds' kit (`Case`, `accepted`, `str_arg`, the escalate tool)
//! and `WorldModel`, and runs through `Prepared::from_model` (see the tests).

use std::sync::Arc;

use agentsim_engine::{
    Action, Agent, AgentCx, Catalog, Finish, Input, Message, Reply, SimConfig, StreamSource, TimeMs, ToolCall,
    ToolConfig, ToolDef, ToolError, ToolKind, Trajectory, Value, ValueKind, Verdict, World, WorldCx,
};
use agentsim_worlds::kit::args::str_arg;
use agentsim_worlds::kit::case::{Case, begin_step, call};
use agentsim_worlds::kit::catalog::{escalate_def, specs_with_authenticate};
use agentsim_worlds::kit::escalation::escalate;
use agentsim_worlds::read::accepted;
use agentsim_worlds::talk::{Fact, FactValue, Intent, Lexicon, read};
use agentsim_worlds::{Prepared, Scenario, WorldModel, scenario::run_world};

/// The books: (id, title).
const BOOKS: [(&str, &str); 3] = [("B1", "Dune"), ("B2", "Emma"), ("B3", "Ulysses")];

/// The library's tools, with faults: 503s on a fifth of lookups, and lends that
/// are applied and then time out in the first two minutes.
pub fn catalog() -> Catalog {
    let faults = |text: &str| -> ToolConfig {
        agentsim_worlds::scenario::ron_options().from_str(text).expect("the example's tool configuration parses")
    };
    let find = ToolDef::new("find_book", ToolKind::Read, "Finds a book by title.")
        .arg("title", ValueKind::Str, true)
        .field("book_id", ValueKind::Str)
        .field("loans", ValueKind::Int);
    let lend = ToolDef::new("lend", ToolKind::Write, "Lends a book to the member.")
        .id_arg("book_id")
        .field("loan_id", ValueKind::Str);
    let tell = ToolDef::new("tell", ToolKind::Write, "Tells the member which book was lent.").id_arg("book_id");
    let find_config = faults("(faults: [(fault: Error(status: 503), probability: 0.2)])");
    let lend_config = faults(
        "(timeout_ms: 5000, faults: [(fault: CommitThenTimeout, when: Window(from_ms: 0, to_ms: 120000), probability: 0.3)])",
    );
    let escalate_config = ToolConfig::default();
    let defs = [
        (find, &find_config),
        (lend, &lend_config),
        (tell, &escalate_config),
        (escalate_def("book_id", "Hands the request to a librarian."), &escalate_config),
    ];
    Catalog::new(specs_with_authenticate(defs, &ToolConfig::default()))
}

/// One trajectory's library.
struct Library {
    wanted: usize,
    loans: Vec<usize>,
    told: bool,
    /// Idempotency keys of lends applied, and the loan each made.
    keys: Vec<(String, usize)>,
}

impl World for Library {
    type Event = ();

    fn start(&mut self, cx: &mut WorldCx<'_, ()>) {
        let title = BOOKS[self.wanted].1;
        let content = Value::map([("title", Value::str(title))]);
        cx.tell_agent(0, Message { text: format!("Hello, I'd like to borrow {title}."), content });
    }

    fn on_event(&mut self, _: (), _: &mut WorldCx<'_, ()>) {}

    fn handle(&mut self, call: &ToolCall, _as_of_ms: TimeMs, cx: &mut WorldCx<'_, ()>) -> Result<Value, ToolError> {
        let book = |id: &str| BOOKS.iter().position(|(b, _)| *b == id);
        match tool_name(call) {
            "find_book" => {
                let title = str_arg(&call.args, "title")?;
                let i =
                    BOOKS.iter().position(|(_, t)| *t == title).ok_or_else(|| ToolError::not_found("no such title"))?;
                let loans = self.loans.iter().filter(|l| **l == i).count() as i64;
                Ok(Value::map([("book_id", Value::str(BOOKS[i].0)), ("loans", Value::Int(loans))]))
            }
            "lend" => {
                let i = book(str_arg(&call.args, "book_id")?).ok_or_else(|| ToolError::not_found("no such book"))?;
                // The service honours idempotency keys: a retry with the same key
                // gets the first loan back instead of a second one.
                if let Some(key) = &call.idempotency_key
                    && let Some((_, loan)) = self.keys.iter().find(|(k, _)| k == key)
                {
                    return Ok(Value::map([("loan_id", Value::Str(format!("L{loan}")))]));
                }
                if self.loans.contains(&i) {
                    cx.minefield("double_loan", format!("{} lent twice", BOOKS[i].0));
                }
                self.loans.push(i);
                if let Some(key) = &call.idempotency_key {
                    self.keys.push((key.clone(), self.loans.len()));
                }
                Ok(Value::map([("loan_id", Value::Str(format!("L{}", self.loans.len())))]))
            }
            "tell" => {
                self.told = book(str_arg(&call.args, "book_id")?) == Some(self.wanted);
                Ok(Value::map::<&str>([]))
            }
            _ => Ok(escalate(call, cx)),
        }
    }

    /// The member reads the agent's words with the worlds' text reader: a
    /// question gets the title, and a statement that names the right book as
    /// lent tells the member (as the `tell` tool does).
    fn hear(&mut self, text: &str, cx: &mut WorldCx<'_, ()>) {
        let (id, title) = BOOKS[self.wanted];
        let facts = [
            Fact::new("title", FactValue::Name(title.to_string())).alias("book"),
            Fact::new("book_id", FactValue::Id(id.to_string())),
        ];
        let mut lexicon = Lexicon::new();
        for (_, t) in BOOKS {
            lexicon.add("title", t);
        }
        let reading = read(text, &facts, &lexicon);
        let content = Value::map([("title", Value::str(title))]);
        let words = match reading.intent {
            Intent::Tell if reading.done && reading.wrong().is_none() && reading.states_right(0) => {
                self.told = true;
                "Thanks!".to_string()
            }
            Intent::Ask if !reading.asked.is_empty() => format!("The title is {title}."),
            _ => format!("I'd like to borrow {title}."),
        };
        cx.tell_agent(cx.now_ms.saturating_add(2_000), Message { text: words, content });
    }

    fn judge(&self) -> Verdict {
        let success = self.loans == [self.wanted] && self.told;
        let milestone = if self.told {
            "told"
        } else if self.loans.is_empty() {
            "started"
        } else {
            "lent"
        };
        Verdict {
            success,
            escalated: false,
            milestone,
            detail: format!("loans {:?}", self.loans),
            told_accurately: None,
        }
    }
}

/// The tool's name: [`catalog`] is fixed, so ids map to names by position.
fn tool_name(call: &ToolCall) -> &'static str {
    ["find_book", "lend", "tell", "escalate", "authenticate"].get(call.tool.0 as usize).copied().unwrap_or("")
}

/// The library's expert: find the book, lend it (checking with a lookup after
/// a lost answer), tell the member, finish.
struct Librarian {
    case: Case,
    title: Option<String>,
    book: Option<(String, i64)>,
    lent: bool,
    verify: bool,
    told: bool,
}

impl Agent for Librarian {
    fn step(&mut self, input: Input, cx: &mut AgentCx<'_>) -> Action {
        begin_step(&input, cx);
        match &input {
            Input::User(m) => self.title = m.content.get("title").and_then(Value::as_str).map(str::to_string),
            Input::Tool(r) => match (accepted(r, cx), &r.reply) {
                (Some(body), _) => {
                    self.case.accepted(r.call.tool);
                    match r.call.tool.0 {
                        0 => {
                            let id = body.get("book_id").and_then(Value::as_str).unwrap_or_default().to_string();
                            let loans = body.get("loans").and_then(Value::as_int).unwrap_or(0);
                            self.lent |= self.verify && loans > 0;
                            self.verify = false;
                            self.book = Some((id, loans));
                        }
                        1 => self.lent = true,
                        2 => self.told = true,
                        _ => {}
                    }
                }
                (None, Reply::Timeout) if r.call.tool.0 == 1 => {
                    self.case.failures += 1;
                    self.verify = true;
                }
                (None, reply) => {
                    self.case.failures += 1;
                    if let Some(wait) = self.case.after_failure(reply) {
                        return Action::Idle { wake_at_ms: Some(cx.now_ms.saturating_add(wait)) };
                    }
                }
            },
            Input::Blocked { .. } => self.case.blocks += 1,
            Input::Wake => {}
        }
        self.next()
    }
}

impl Librarian {
    fn next(&mut self) -> Action {
        let Some(title) = self.title.clone() else { return Action::Idle { wake_at_ms: None } };
        if self.case.needs_auth {
            return self.case.renew_session();
        }
        if self.case.must_escalate() {
            return Action::Finish(Finish::GaveUp { reason: "too many failures".into() });
        }
        let find = || call(agentsim_engine::ToolId(0), Value::map([("title", Value::Str(title.clone()))]));
        match (&self.book, self.lent, self.told) {
            (None, _, _) => find(),
            (Some(_), false, _) if self.verify => find(),
            (Some((id, _)), false, _) => call(agentsim_engine::ToolId(1), Value::map([("book_id", Value::str(id))])),
            (Some((id, _)), true, false) => call(agentsim_engine::ToolId(2), Value::map([("book_id", Value::str(id))])),
            (Some(_), true, true) => Action::Finish(Finish::Done),
        }
    }
}

/// The library as a world model: what `Prepared::from_model` runs.
pub struct LibraryModel;

impl WorldModel for LibraryModel {
    fn expert(&self, _task: usize) -> Box<dyn Agent> {
        let catalog = catalog();
        let id = |name| catalog.id(name).expect("the library's tools");
        Box::new(Librarian {
            case: Case::new(id("escalate"), id("authenticate")),
            title: None,
            book: None,
            lent: false,
            verify: false,
            told: false,
        })
    }

    fn run(
        &self,
        _task: usize,
        catalog: &Catalog,
        streams: &StreamSource,
        config: &SimConfig,
        agent: &mut dyn Agent,
        note: Option<Value>,
    ) -> Trajectory {
        // The member's wish is drawn from the user's stream, like any world's.
        let wanted = streams.stream("user.0").below(BOOKS.len() as u64) as usize;
        run_world(
            Library { wanted, loans: Vec::new(), told: false, keys: Vec::new() },
            catalog,
            streams,
            config,
            agent,
            note,
        )
    }
}

/// The library, ready to run seeds.
pub fn prepared() -> Prepared {
    Prepared::from_model(Scenario::named("library", "library"), catalog(), Arc::new(LibraryModel))
}

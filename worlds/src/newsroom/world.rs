//! The newsroom world: a feed where stories arrive and get corrected, tasks that
//! form a DAG, and an editor who wants a summary of the latest stories.

use std::sync::LazyLock;

use petgraph::algo::{has_path_connecting, toposort};
use petgraph::graph::{DiGraph, NodeIndex};

use agentsim_engine::{
    Message, MilestoneDag, Progress, Stream, StreamSource, TimeMs, ToolCall, ToolError, Value, Verdict, WorldCx,
};

use super::config::NewsroomConfig;
use crate::kit::args::{int_arg, str_arg};
use crate::kit::goodbye::Goodbye;
use crate::kit::outbox::Outbox;
pub use crate::kit::persona::Persona;
use crate::kit::persona::draw;
use crate::kit::world::{Handover, KitWorld, Served, no_such_tool};
use crate::talk::voice::Voice;

/// How the impatient user leaves.
const GOODBYE: Goodbye = Goodbye { note: "editor_left", text: "Too late, we're going to print without it." };

#[path = "hear.rs"]
mod hear;

/// A step after the editor left this long is a minefield (time to read the goodbye).
pub const LEAVE_NOTICE_MS: TimeMs = 10_000;
/// A summary is current if it matches the latest stories as they stood at some
/// time in this window before it was sent (the time to read the feed and write).
pub const SUMMARY_GRACE_MS: TimeMs = 15_000;
/// The task kinds the service knows.
pub const TASK_KINDS: [&str; 3] = ["check", "summarise", "publish"];

/// The task's milestones.
/// (Built once per process: the judge of every trajectory reads it.)
pub fn milestones() -> &'static MilestoneDag {
    static MILESTONES: LazyLock<MilestoneDag> = LazyLock::new(|| {
        MilestoneDag::chain(&["started", "feed_read", "tasks_created", "summary_sent"])
            .expect("the newsroom milestones form a DAG")
    });
    &MILESTONES
}

struct Story {
    id: String,
    title: String,
    published_ms: TimeMs,
    /// (time, version), oldest first; version 1 at publication.
    versions: Vec<(TimeMs, i64)>,
}

struct Task {
    id: String,
    key: String,
    kind: String,
    story_id: Option<String>,
    depends_on: Vec<String>,
    idempotency_key: Option<String>,
}

struct Summary {
    stories: Vec<(String, i64)>,
    stale_flag: bool,
    current: bool,
}

/// The world's own events.
pub enum NewsEvent {
    /// A new story arrives.
    Arrival,
    /// A story gets a correction (a new version).
    Correction {
        /// Story index.
        story: usize,
    },
    /// An impatient editor's patience runs out.
    PatienceOut,
}

/// One trajectory's newsroom.
pub struct Newsroom<'c> {
    config: &'c NewsroomConfig,
    user_rng: Stream,
    world_rng: Stream,
    editor: usize,
    persona: Persona,
    wanted: i64,
    stories: Vec<Story>,
    tasks: Vec<Task>,
    summaries: Vec<Summary>,
    left_at_ms: Option<TimeMs>,
    outbox: Outbox,
    progress: Progress,
    /// How the editor words its answers to text (made on the first one).
    voice: Option<Voice>,
}

impl<'c> Newsroom<'c> {
    /// A fresh world for one seed: editor, request and persona from the user's
    /// stream; the feed from the world's.
    pub fn new(config: &'c NewsroomConfig, streams: &StreamSource) -> Self {
        let mut user_rng = streams.stream("user.0");
        let world_rng = streams.stream("world");
        let editor = user_rng.below(config.editors.len() as u64) as usize;
        let wanted = user_rng.between(u64::from(config.summary_size_min), u64::from(config.summary_size_max)) as i64;
        let persona = draw(&config.personas.weights(), &mut user_rng).unwrap_or(Persona::Clear);
        let mut world = Self {
            config,
            user_rng,
            world_rng,
            editor,
            persona,
            wanted,
            stories: Vec::new(),
            tasks: Vec::new(),
            summaries: Vec::new(),
            left_at_ms: None,
            outbox: Outbox::new(),
            progress: Progress::new(),
            voice: None,
        };
        for _ in 0..config.initial_stories {
            world.publish(0);
        }
        world
    }

    /// The persona drawn for this seed.
    pub fn persona(&self) -> Persona {
        self.persona
    }

    fn publish(&mut self, now_ms: TimeMs) -> usize {
        let topic = &self.config.topics[self.world_rng.below(self.config.topics.len() as u64) as usize];
        let index = self.stories.len();
        self.stories.push(Story {
            id: format!("S{}", 101 + index),
            title: topic.clone(),
            published_ms: now_ms,
            versions: vec![(now_ms, 1)],
        });
        index
    }

    fn editor_id(&self) -> &str {
        &self.config.editors[self.editor].id
    }

    fn version_at(&self, story: usize, at_ms: TimeMs) -> i64 {
        let version = self.stories[story].versions.iter().rev().find(|(t, _)| *t <= at_ms).map_or(1, |(_, v)| *v);
        // A story starts at version 1 and corrections only add versions.
        assert!(version >= 1, "story {} at version {version}", self.stories[story].id);
        version
    }

    /// The `n` newest stories published by `at_ms`, newest first, with their
    /// versions then.
    fn newest(&self, n: usize, at_ms: TimeMs) -> Vec<(usize, i64)> {
        let mut published: Vec<usize> =
            (0..self.stories.len()).filter(|&s| self.stories[s].published_ms <= at_ms).collect();
        // Newest first; among equal times, the later story is newer.
        published.sort_by_key(|&s| std::cmp::Reverse((self.stories[s].published_ms, s)));
        published.into_iter().take(n).map(|s| (s, self.version_at(s, at_ms))).collect()
    }

    fn request(&self, with_count: bool) -> Value {
        let mut v = Value::map([("editor_id", Value::str(self.editor_id()))]);
        if with_count {
            v.set("count", Value::Int(self.wanted));
        }
        v
    }

    fn latest_news(&mut self, args: &Value, as_of_ms: TimeMs, now_ms: TimeMs) -> Result<Value, ToolError> {
        let limit = int_arg(args, "limit")?;
        if !(1..=50).contains(&limit) {
            return Err(ToolError::bad_request(format!("`limit` must be in 1..=50, found {limit}")));
        }
        assert!(as_of_ms <= now_ms, "the feed is read as of the past, not the future");
        if as_of_ms == now_ms {
            self.progress.reach("feed_read", now_ms);
        }
        let stories = self
            .newest(limit as usize, as_of_ms)
            .into_iter()
            .map(|(s, version)| {
                let st = &self.stories[s];
                Value::map([
                    ("story_id", Value::str(&st.id)),
                    ("version", Value::Int(version)),
                    ("title", Value::str(&st.title)),
                    ("published_at_ms", Value::Int(st.published_ms as i64)),
                ])
            })
            .collect();
        Ok(Value::map([("stories", Value::List(stories)), ("generated_at_ms", Value::Int(as_of_ms as i64))]))
    }

    fn get_story(&self, args: &Value, as_of_ms: TimeMs) -> Result<Value, ToolError> {
        let id = str_arg(args, "story_id")?;
        let s = self
            .stories
            .iter()
            .position(|s| s.id == id && s.published_ms <= as_of_ms)
            .ok_or_else(|| ToolError::not_found(format!("no story `{id}`")))?;
        Ok(Value::map([
            ("story_id", Value::str(id)),
            ("version", Value::Int(self.version_at(s, as_of_ms))),
            ("title", Value::str(&self.stories[s].title)),
        ]))
    }

    fn create_task(&mut self, call: &ToolCall, cx: &mut WorldCx<'_, NewsEvent>) -> Result<Value, ToolError> {
        let key = str_arg(&call.args, "key")?.to_string();
        let kind = str_arg(&call.args, "kind")?.to_string();
        if !TASK_KINDS.contains(&kind.as_str()) {
            return Err(ToolError::bad_request(format!("`kind` must be one of {TASK_KINDS:?}, found `{kind}`")));
        }
        if let Some(k) = &call.idempotency_key
            && let Some(t) = self.tasks.iter().find(|t| t.idempotency_key.as_deref() == Some(k))
        {
            cx.note("idempotent_replay", Value::map([("task_id", Value::str(&t.id))]));
            return Ok(Value::map([("task_id", Value::str(&t.id)), ("key", Value::str(&t.key))]));
        }
        let story_id = call.args.get("story_id").and_then(Value::as_str).map(str::to_string);
        let depends_on: Vec<String> = call
            .args
            .get("depends_on")
            .map(Value::as_list)
            .unwrap_or(&[])
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect();
        if self.tasks.iter().any(|t| t.key == key) {
            cx.minefield("duplicate_task", format!("task `{key}` created twice"));
        }
        if let Some(missing) = depends_on.iter().find(|d| !self.tasks.iter().any(|t| t.key == **d)) {
            cx.minefield("task_before_dependency", format!("task `{key}` created before its dependency `{missing}`"));
        }
        if let Some(left) = self.left_at_ms
            && cx.now_ms >= left + LEAVE_NOTICE_MS
        {
            cx.minefield("work_after_editor_left", format!("task `{key}`; the editor left at {left} ms"));
        }
        let id = format!("K{}", 701 + self.tasks.len());
        assert!(self.tasks.iter().all(|t| t.id != id), "task ids are unique");
        cx.note("task_created", Value::map([("key", Value::str(&key)), ("kind", Value::str(&kind))]));
        let body = Value::map([("task_id", Value::str(&id)), ("key", Value::str(&key))]);
        let is_publish = kind == "publish";
        self.tasks.push(Task { id, key, kind, story_id, depends_on, idempotency_key: call.idempotency_key.clone() });
        if is_publish && self.plan_problem(&self.newest(self.wanted as usize, cx.now_ms)).is_none() {
            self.progress.reach("tasks_created", cx.now_ms);
        }
        Ok(body)
    }

    fn send_summary(&mut self, args: &Value, cx: &mut WorldCx<'_, NewsEvent>) -> Result<Value, ToolError> {
        let to = str_arg(args, "editor_id")?;
        if !self.config.editors.iter().any(|e| e.id == to) {
            return Err(ToolError::not_found(format!("no editor `{to}`")));
        }
        if to != self.editor_id() {
            cx.minefield("message_to_wrong_editor", format!("summary meant for {} sent to {to}", self.editor_id()));
            return Ok(self.sent("summary_id"));
        }
        let stories: Vec<(String, i64)> = args
            .get("stories")
            .map(Value::as_list)
            .unwrap_or(&[])
            .iter()
            .map(|s| {
                (
                    s.get("story_id").and_then(Value::as_str).unwrap_or_default().to_string(),
                    s.get("version").and_then(Value::as_int).unwrap_or_default(),
                )
            })
            .collect();
        let stale_flag = args.get("stale") == Some(&Value::Bool(true));
        assert_eq!(to, self.editor_id(), "a summary is recorded only for the editor who asked");
        self.record_summary(stories, stale_flag, cx);
        Ok(self.sent("summary_id"))
    }

    /// Judges and keeps a summary of `stories` (id, version) sent now, flagged
    /// as possibly stale or not (by `send_summary`, or in words).
    fn record_summary(&mut self, stories: Vec<(String, i64)>, stale_flag: bool, cx: &mut WorldCx<'_, NewsEvent>) {
        let now_ms = cx.now_ms;
        let set_at = |at_ms: TimeMs| {
            let mut set: Vec<(String, i64)> = self
                .newest(self.wanted as usize, at_ms)
                .into_iter()
                .map(|(s, v)| (self.stories[s].id.clone(), v))
                .collect();
            set.sort();
            set
        };
        let current_set = set_at(now_ms);
        let mut sent_sorted = stories.clone();
        sent_sorted.sort();
        // The feed changes only at arrivals and corrections: check the window's start
        // and every change inside it.
        let from_ms = now_ms.saturating_sub(SUMMARY_GRACE_MS);
        assert!(from_ms <= now_ms, "the grace window ends now");
        let mut times: Vec<TimeMs> = vec![from_ms, now_ms];
        for st in &self.stories {
            times.push(st.published_ms);
            times.extend(st.versions.iter().map(|(t, _)| *t));
        }
        let current = times.into_iter().filter(|t| (from_ms..=now_ms).contains(t)).any(|t| set_at(t) == sent_sorted);
        if !current && !stale_flag {
            cx.minefield(
                "unflagged_stale_summary",
                format!("summary of {stories:?} presented as current; current at answer time: {current_set:?}"),
            );
        }
        if self.left_at_ms.is_some_and(|left| now_ms >= left + LEAVE_NOTICE_MS) {
            cx.minefield("work_after_editor_left", "summary sent after the editor left");
        }
        if current && self.progress.has("tasks_created") {
            self.progress.reach("summary_sent", now_ms);
        }
        cx.note("summary", Value::map([("current", Value::Bool(current)), ("stale_flag", Value::Bool(stale_flag))]));
        self.summaries.push(Summary { stories, stale_flag, current });
    }

    fn send_message(&mut self, args: &Value, cx: &mut WorldCx<'_, NewsEvent>) -> Result<Value, ToolError> {
        let kind = crate::kit::args::one_of_arg(args, "kind", super::tools::MESSAGE_KINDS)?;
        let to = str_arg(args, "editor_id")?;
        if !self.config.editors.iter().any(|e| e.id == to) {
            return Err(ToolError::not_found(format!("no editor `{to}`")));
        }
        if to != self.editor_id() {
            cx.minefield("message_to_wrong_editor", format!("message meant for {} sent to {to}", self.editor_id()));
        } else if self.left_at_ms.is_none() && kind == "ask" {
            assert!(self.wanted >= 1, "the editor wants at least one story");
            let at = cx.now_ms.saturating_add(self.config.reply_ms.sample(&mut self.user_rng));
            let text = format!("The latest {}, please.", self.wanted);
            cx.tell_agent(at, Message { text, content: self.request(true) });
        }
        Ok(self.sent("message_id"))
    }

    /// The response of `send_summary` or `send_message`: the id under `field`
    /// (the two tools number from the same outbox).
    fn sent(&mut self, field: &'static str) -> Value {
        Value::map([(field, Value::Str(self.outbox.next_id()))])
    }

    /// What is wrong with the task plan for `stories` (index, version), if anything:
    /// a cycle, a dependency never created, a story without its check → summarise
    /// pair, or no publish task after every summarise task.
    fn plan_problem(&self, stories: &[(usize, i64)]) -> Option<String> {
        let mut graph: DiGraph<usize, ()> = DiGraph::new();
        let nodes: Vec<NodeIndex> = (0..self.tasks.len()).map(|i| graph.add_node(i)).collect();
        let node_of = |key: &str| self.tasks.iter().position(|t| t.key == key).map(|i| nodes[i]);
        for (i, t) in self.tasks.iter().enumerate() {
            for d in &t.depends_on {
                match node_of(d) {
                    Some(from) => {
                        graph.add_edge(from, nodes[i], ());
                    }
                    None => return Some(format!("task `{}` depends on `{d}`, which was never created", t.key)),
                }
            }
        }
        if let Err(cycle) = toposort(&graph, None) {
            return Some(format!("the tasks form a cycle through `{}`", self.tasks[graph[cycle.node_id()]].key));
        }
        let of_kind = |kind: &str, story: &str| {
            (0..self.tasks.len())
                .filter(|&i| self.tasks[i].kind == kind && self.tasks[i].story_id.as_deref() == Some(story))
                .collect::<Vec<usize>>()
        };
        let publishes: Vec<usize> = (0..self.tasks.len()).filter(|&i| self.tasks[i].kind == "publish").collect();
        for (s, _) in stories {
            let id = &self.stories[*s].id;
            let summarise = of_kind("summarise", id);
            let checks = of_kind("check", id);
            let Some(&sum) = summarise
                .iter()
                .find(|&&u| checks.iter().any(|&c| has_path_connecting(&graph, nodes[c], nodes[u], None)))
            else {
                return Some(format!("no `summarise` task for {id} after a `check` task"));
            };
            if !publishes.iter().any(|&p| has_path_connecting(&graph, nodes[sum], nodes[p], None)) {
                return Some(format!("no `publish` task after the summary of {id}"));
            }
        }
        None
    }
}

impl KitWorld for Newsroom<'_> {
    type Event = NewsEvent;

    fn serve(&mut self, served: Served<'_>, cx: &mut WorldCx<'_, NewsEvent>) -> Result<Value, ToolError> {
        let (call, as_of_ms) = (served.call, served.as_of_ms);
        match served.name {
            "latest_news" => self.latest_news(&call.args, as_of_ms, cx.now_ms),
            "get_story" => self.get_story(&call.args, as_of_ms),
            "create_task" => self.create_task(call, cx),
            "list_tasks" => {
                let tasks = self
                    .tasks
                    .iter()
                    .map(|t| {
                        Value::map([
                            ("task_id", Value::str(&t.id)),
                            ("key", Value::str(&t.key)),
                            ("kind", Value::str(&t.kind)),
                        ])
                    })
                    .collect();
                Ok(Value::map([("tasks", Value::List(tasks))]))
            }
            "send_summary" => self.send_summary(&call.args, cx),
            "send_message" => self.send_message(&call.args, cx),
            _ => Err(no_such_tool()),
        }
    }

    fn start(&mut self, cx: &mut WorldCx<'_, NewsEvent>) {
        for story in 0..self.stories.len() {
            if self.world_rng.chance(self.config.correction_probability.get()) {
                let at = self.config.correction_delay_ms.sample(&mut self.world_rng).max(1);
                cx.schedule(at, NewsEvent::Correction { story });
            }
        }
        let first = self.config.arrival_ms.sample(&mut self.world_rng).max(1);
        cx.schedule(first, NewsEvent::Arrival);
        if self.persona == Persona::Impatient {
            cx.schedule(self.config.patience_ms, NewsEvent::PatienceOut);
        }
        let e = &self.config.editors[self.editor];
        let (text, content) = match self.persona {
            Persona::Vague => (
                format!("{} ({}) here: what's the latest? I need a summary and a task list.", e.name, e.id),
                self.request(false),
            ),
            _ => (
                format!(
                    "{} ({}) here: summarise the latest {} stories and set up the tasks to check, summarise and publish them.",
                    e.name, e.id, self.wanted
                ),
                self.request(true),
            ),
        };
        cx.note("persona", Value::str(self.persona.name()));
        self.progress.reach("started", cx.now_ms);
        cx.tell_agent(0, Message { text, content });
    }

    fn on_event(&mut self, event: NewsEvent, cx: &mut WorldCx<'_, NewsEvent>) {
        match event {
            NewsEvent::Arrival => {
                let story = self.publish(cx.now_ms);
                cx.note(
                    "story",
                    Value::map([
                        ("story_id", Value::str(&self.stories[story].id)),
                        ("title", Value::str(&self.stories[story].title)),
                    ]),
                );
                if self.world_rng.chance(self.config.correction_probability.get()) {
                    let at =
                        cx.now_ms.saturating_add(self.config.correction_delay_ms.sample(&mut self.world_rng).max(1));
                    cx.schedule(at, NewsEvent::Correction { story });
                }
                let next = cx.now_ms.saturating_add(self.config.arrival_ms.sample(&mut self.world_rng).max(1));
                cx.schedule(next, NewsEvent::Arrival);
            }
            NewsEvent::Correction { story } => {
                let version = self.version_at(story, cx.now_ms) + 1;
                self.stories[story].versions.push((cx.now_ms, version));
                cx.note(
                    "correction",
                    Value::map([("story_id", Value::str(&self.stories[story].id)), ("version", Value::Int(version))]),
                );
            }
            NewsEvent::PatienceOut => {
                let request = self.request(true);
                GOODBYE.patience_out(!self.summaries.is_empty(), &mut self.left_at_ms, request, cx);
            }
        }
    }

    fn hear(&mut self, text: &str, cx: &mut WorldCx<'_, NewsEvent>) {
        self.hear_text(text, cx);
    }

    fn judge(&self, case: Handover) -> Verdict {
        let milestone = self.progress.last();
        let verdict = |success, detail| case.verdict(success, milestone, detail);
        if let Some(left) = self.left_at_ms {
            return verdict(false, format!("the editor left after {} s without a summary", left / 1_000));
        }
        let Some(summary) = self.summaries.last() else {
            return verdict(false, "no summary sent".into());
        };
        if !summary.current {
            let how = if summary.stale_flag { "flagged as possibly stale" } else { "presented as current" };
            return verdict(false, format!("the summary was not current when sent ({how})"));
        }
        // The plan must cover the stories summarised (current within the grace window).
        let stories: Vec<(usize, i64)> = summary
            .stories
            .iter()
            .filter_map(|(id, v)| self.stories.iter().position(|s| s.id == *id).map(|i| (i, *v)))
            .collect();
        if let Some(problem) = self.plan_problem(&stories) {
            return verdict(false, problem);
        }
        if let Err(why) = self.progress.check(milestones()) {
            return verdict(false, format!("milestones out of order: {why}"));
        }
        verdict(true, format!("summarised the latest {} stories with a valid task DAG", summary.stories.len()))
    }
}

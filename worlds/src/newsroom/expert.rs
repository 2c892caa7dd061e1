//! The newsroom expert: the policy that solves the task from observations alone.
//! It is the `oracle` planner, and the noisy planner wraps it with mistakes.
//!
//! Read the feed, read each story at its current version, create the tasks in a
//! topological order (check, then summarise, per story; publish last), read the
//! feed again if it has aged, and send the summary. A feed is suspect when it came
//! from a cache (`cache_age_ms` on the result) or its `generated_at_ms` is old (a
//! lagging replica): the expert reads it again twice, then sends what it has with
//! `stale: true` rather than present it as current. A task whose answer was lost
//! is checked with `list_tasks` before it is created again.

use agentsim_engine::{Action, AgentCx, Finish, Reply, TimeMs, ToolResult, Value};

use super::tools::Ids;
use crate::kit::case::{Case, Opening, call};
use crate::kit::expert::{Policy, take_int, take_str};
use crate::read::{Reader, arg_str};

/// Who the expert serves and what it is after.
const OPENING: Opening = Opening { who: "editor", user_arg: "editor_id", goal: "summarise" };

/// A feed read longer ago than this is read again before the summary is sent.
const FEED_FRESH_MS: TimeMs = 10_000;
/// A feed generated longer ago than this is suspect.
const FEED_LAG_MS_MAX: TimeMs = 20_000;
/// Reads of a suspect feed before sending it flagged.
const STALE_REREADS_MAX: u32 = 2;
/// Wait before reading a suspect feed again.
const STALE_WAIT_MS: TimeMs = 5_000;

#[derive(Clone, Debug)]
struct Feed {
    /// (story id, version), newest first.
    stories: Vec<(String, i64)>,
    read_at_ms: TimeMs,
    suspect: bool,
}

/// The expert planner for newsroom.
pub struct Expert {
    ids: Ids,
    case: Case,
    editor_id: Option<String>,
    count: Option<i64>,
    feed: Option<Feed>,
    /// Stories read with `get_story`: (id, version).
    verified: Vec<(String, i64)>,
    suspect_reads: u32,
    created: Vec<String>,
    /// The summarise keys the last publish task depends on.
    published_over: Option<Vec<String>>,
    publishes: u32,
    uncertain_tasks: bool,
    sent: bool,
}

impl Expert {
    /// A fresh expert using the tools `ids`.
    pub fn new(ids: Ids) -> Self {
        Self {
            ids,
            case: Case::new(ids.escalate, ids.authenticate),
            editor_id: None,
            count: None,
            feed: None,
            verified: Vec::new(),
            suspect_reads: 0,
            created: Vec::new(),
            published_over: None,
            publishes: 0,
            uncertain_tasks: false,
            sent: false,
        }
    }

    fn task(&self, key: String, kind: &str, story: Option<&str>, depends_on: Vec<String>) -> Action {
        let mut args = Value::map([("key", Value::Str(key)), ("kind", Value::str(kind))]);
        if let Some(s) = story {
            args.set("story_id", Value::str(s));
        }
        args.set("depends_on", Value::List(depends_on.into_iter().map(Value::Str).collect()));
        call(self.ids.create_task, args)
    }
}

impl Policy for Expert {
    fn next(&mut self, now_ms: TimeMs) -> Action {
        if self.sent {
            return Action::Finish(Finish::Done);
        }
        let editor = match self.case.opening(&OPENING, self.editor_id.as_ref(), false, String::new) {
            Ok(editor) => editor,
            Err(first) => return first,
        };
        let ids = self.ids;
        if self.uncertain_tasks {
            return call(ids.list_tasks, Value::map::<&str>([]));
        }
        if self.case.awaiting_user {
            return Action::Idle { wake_at_ms: None };
        }
        let Some(count) = self.count else {
            if self.case.asked {
                return Action::Idle { wake_at_ms: None };
            }
            return call(
                ids.send_message,
                Value::map([("editor_id", Value::Str(editor)), ("kind", Value::str("ask"))]),
            );
        };
        let Some(feed) = self.feed.clone() else {
            return call(ids.latest_news, Value::map([("limit", Value::Int(count))]));
        };
        if let Some((id, _)) = feed.stories.iter().find(|(id, _)| !self.verified.iter().any(|(v, _)| v == id)) {
            return call(ids.get_story, Value::map([("story_id", Value::str(id))]));
        }
        for (id, _) in &feed.stories {
            let check = format!("check:{id}");
            if !self.created.contains(&check) {
                return self.task(check, "check", Some(id), Vec::new());
            }
            let summarise = format!("summarise:{id}");
            if !self.created.contains(&summarise) {
                return self.task(summarise, "summarise", Some(id), vec![check]);
            }
        }
        let over: Vec<String> = feed.stories.iter().map(|(id, _)| format!("summarise:{id}")).collect();
        if now_ms.saturating_sub(feed.read_at_ms) > FEED_FRESH_MS {
            // The feed has aged while we worked: read it again before answering.
            self.feed = None;
            self.suspect_reads = 0;
            return call(ids.latest_news, Value::map([("limit", Value::Int(count))]));
        }
        let covered = self.published_over.as_ref().is_some_and(|p| over.iter().all(|k| p.contains(k)));
        if !covered {
            self.publishes += 1;
            let key = if self.publishes == 1 { "publish".to_string() } else { format!("publish:{}", self.publishes) };
            self.published_over = Some(over.clone());
            return self.task(key, "publish", None, over);
        }
        let stories = feed
            .stories
            .iter()
            .map(|(id, v)| Value::map([("story_id", Value::str(id)), ("version", Value::Int(*v))]))
            .collect();
        call(
            ids.send_summary,
            Value::map([
                ("editor_id", Value::Str(editor)),
                ("stories", Value::List(stories)),
                ("stale", Value::Bool(feed.suspect)),
            ]),
        )
    }

    fn hear(&mut self, content: &Value) {
        take_str(content, "editor_id", &mut self.editor_id);
        take_int(content, "count", &mut self.count);
    }

    fn answer_lost(&mut self, name: &str) -> bool {
        // The task may exist already: look before creating it again.
        (name == "create_task").then(|| self.uncertain_tasks = true).is_some()
    }

    /// Learns from a tool result; returns how long to wait before acting again.
    fn learn(&mut self, name: &str, r: &ToolResult, body: &Value, cx: &AgentCx<'_>) -> Option<TimeMs> {
        let tool = r.call.tool;
        let read = Reader { cx, tool };
        let now_ms = cx.now_ms;
        if name == "latest_news" {
            let generated_at = read.int(body, "generated_at_ms").max(0) as TimeMs;
            let suspect = r.cache_age_ms.is_some() || now_ms.saturating_sub(generated_at) > FEED_LAG_MS_MAX;
            let stories: Vec<(String, i64)> = read
                .list(body, "stories")
                .iter()
                .map(|s| {
                    let id = read.str(s, "story_id");
                    // A story read since may show a correction the feed does not.
                    let seen = self.verified.iter().find(|(v, _)| *v == id).map_or(0, |(_, version)| *version);
                    let version = read.int(s, "version").max(seen);
                    (id, version)
                })
                .collect();
            if suspect && self.suspect_reads < STALE_REREADS_MAX {
                self.suspect_reads += 1;
                self.feed = None;
                return Some(STALE_WAIT_MS);
            }
            self.feed = Some(Feed { stories, read_at_ms: now_ms, suspect });
        } else if name == "get_story" {
            let id = read.str(body, "story_id");
            let version = read.int(body, "version");
            if let Some(feed) = &mut self.feed {
                for (s, v) in feed.stories.iter_mut() {
                    if *s == id {
                        // A correction since the feed was built: keep the newer version.
                        *v = (*v).max(version);
                    }
                }
            }
            if r.cache_age_ms.is_some()
                && let Some(feed) = &mut self.feed
            {
                feed.suspect = true;
            }
            self.verified.retain(|(v, _)| *v != id);
            self.verified.push((id, version));
        } else if name == "create_task" {
            let key = arg_str(&r.call.args, "key").to_string();
            if !self.created.contains(&key) {
                self.created.push(key);
            }
        } else if name == "list_tasks" {
            self.uncertain_tasks = false;
            for t in read.list(body, "tasks") {
                let key = read.str(t, "key");
                if !self.created.contains(&key) {
                    self.created.push(key);
                }
            }
        } else if name == "send_summary" {
            self.sent = true;
        } else if name == "send_message" && r.call.args.get("kind").and_then(Value::as_str) == Some("ask") {
            self.case.asked_user();
        }
        None
    }

    fn learn_failure(&mut self, name: &str, r: &ToolResult) -> Option<TimeMs> {
        match &r.reply {
            Reply::Error { status: 404, .. } if name == "get_story" => {
                // The id we asked for is not in the feed: read the feed again.
                self.feed = None;
                None
            }
            reply => self.case.after_failure(reply),
        }
    }

    fn case(&mut self) -> &mut Case {
        &mut self.case
    }
}

#[cfg(test)]
mod tests {
    use agentsim_engine::{Agent, Catalog, Input, Message};

    use super::*;
    use crate::kit::expert::Planner;
    use crate::newsroom::config::NewsroomConfig;
    use crate::newsroom::tools::specs;

    /// Drives the expert against canned, well-formed answers; `cache_age_ms` is put
    /// on every `latest_news` result. Returns the `stale` flag of the summary sent.
    fn summary_flag(cache_age_ms: Option<TimeMs>) -> bool {
        let catalog = Catalog::new(specs(&NewsroomConfig::default().tools));
        let ids = Ids::find(&catalog).expect("tools");
        let mut expert = Planner::new(Expert::new(ids), ids);
        let mut now_ms = 0;
        let mut input = Input::User(Message {
            text: "the latest 2".into(),
            content: Value::map([("editor_id", Value::str("E01")), ("count", Value::Int(2))]),
        });
        for _ in 0..40 {
            let mut cx = AgentCx::new(now_ms, &catalog);
            let call = match expert.step(input, &mut cx) {
                Action::Call(call) => call,
                Action::Idle { wake_at_ms: Some(at) } => {
                    now_ms = at;
                    input = Input::Wake;
                    continue;
                }
                other => panic!("unexpected {other:?}"),
            };
            now_ms += 100;
            let (body, cache) = if call.tool == ids.latest_news {
                let story = |id: &str| {
                    Value::map([
                        ("story_id", Value::str(id)),
                        ("version", Value::Int(1)),
                        ("title", Value::str("t")),
                        ("published_at_ms", Value::Int(0)),
                    ])
                };
                (
                    Value::map([
                        ("stories", Value::List(vec![story("S2"), story("S1")])),
                        ("generated_at_ms", Value::Int(now_ms as i64)),
                    ]),
                    cache_age_ms,
                )
            } else if call.tool == ids.get_story {
                let id = call.args.get("story_id").cloned().unwrap_or_default();
                (Value::map([("story_id", id), ("version", Value::Int(1)), ("title", Value::str("t"))]), None)
            } else if call.tool == ids.create_task {
                let key = call.args.get("key").cloned().unwrap_or_default();
                (Value::map([("task_id", Value::str("K1")), ("key", key)]), None)
            } else if call.tool == ids.send_summary {
                return call.args.get("stale") == Some(&Value::Bool(true));
            } else {
                panic!("unexpected call {call:?}");
            };
            input =
                Input::Tool(ToolResult { call, reply: Reply::Ok(body.into()), latency_ms: 100, cache_age_ms: cache });
        }
        panic!("no summary sent");
    }

    #[test]
    fn a_summary_from_cached_news_is_flagged_and_a_fresh_one_is_not() {
        assert!(summary_flag(Some(90_000)));
        assert!(!summary_flag(None));
    }
}

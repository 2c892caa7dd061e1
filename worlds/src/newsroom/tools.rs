//! The newsroom tools as a service documents them.

use agentsim_engine::{ToolDef, ToolKind, ToolSpec, ValueKind};

use super::config::Tools;
use crate::kit::catalog::{escalate_def, specs_by_name};
use crate::kit::tool_ids::tool_ids;

/// The kinds of message `send_message` sends.
pub const MESSAGE_KINDS: &[&str] = &["ask", "info"];

tool_ids! {
    /// Tool ids of newsroom in a catalog.
    pub struct Ids { latest_news, get_story, create_task, list_tasks, send_summary, send_message, escalate }
}

/// The tools with their documentation and the scenario's configuration.
pub fn specs(tools: &Tools) -> Vec<ToolSpec> {
    specs_by_name(
        vec![
            latest_news(),
            get_story(),
            create_task(),
            list_tasks(),
            send_summary(),
            send_message(),
            escalate_def("editor_id", "Hands the request to a human."),
        ],
        &tools.configs(),
    )
}

/// `latest_news`, as the service documents it.
fn latest_news() -> ToolDef {
    use ValueKind::{Int, List};
    ToolDef::new(
        "latest_news",
        ToolKind::Read,
        "The newest stories, newest first, with their versions, and `generated_at_ms`, when the feed \
         was built (a lagging replica serves an old feed).",
    )
    .arg("limit", Int, true)
    .field("stories", List)
    .field("generated_at_ms", Int)
}

/// `get_story`, as the service documents it.
fn get_story() -> ToolDef {
    use ValueKind::{Int, Str};
    ToolDef::new("get_story", ToolKind::Read, "One story at its current version (corrections included).")
        .id_arg("story_id")
        .field("story_id", Str)
        .field("version", Int)
        .field("title", Str)
}

/// `create_task`, as the service documents it.
fn create_task() -> ToolDef {
    use ValueKind::{List, Str};
    ToolDef::new(
        "create_task",
        ToolKind::Write,
        "Creates a task `kind` (`check`, `summarise` or `publish`) under a client-chosen `key`, \
         depending on the tasks keyed in `depends_on`. The service accepts keys not created yet; \
         create prerequisites first.",
    )
    .arg("key", Str, true)
    .arg("kind", Str, true)
    .arg("story_id", Str, false)
    .arg("depends_on", List, false)
    .field("task_id", Str)
    .field("key", Str)
}

/// `list_tasks`, as the service documents it.
fn list_tasks() -> ToolDef {
    use ValueKind::List;
    ToolDef::new("list_tasks", ToolKind::Read, "The tasks created so far, oldest first.").field("tasks", List)
}

/// `send_summary`, as the service documents it.
fn send_summary() -> ToolDef {
    use ValueKind::{Bool, List, Str};
    ToolDef::new(
        "send_summary",
        ToolKind::Write,
        "Sends the editor the summary: `stories` as a list of {story_id, version}, and `stale: true` \
         when it may be built from stale data.",
    )
    .id_arg("editor_id")
    .arg("stories", List, true)
    .arg("stale", Bool, false)
    .field("summary_id", Str)
}

/// `send_message`, as the service documents it.
fn send_message() -> ToolDef {
    use ValueKind::Str;
    ToolDef::new(
        "send_message",
        ToolKind::Write,
        "Sends the editor a message: kind `ask` (how many stories) or `info`.",
    )
    .id_arg("editor_id")
    .arg_one_of("kind", MESSAGE_KINDS)
    .field("message_id", Str)
    .phrase("ask", "How many stories would you like in the summary?")
    .phrase("info", "{details}")
}

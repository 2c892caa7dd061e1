//! tau2's tasks as the scenario's tasks, the same for every domain: the
//! user's facts and opening, the reward basis and what to communicate, and
//! the gold actions (each write proposed to the user first, each with the
//! read that tells whether it was applied).

use serde::Deserialize;

use super::{Domain, ImportError};

#[derive(Deserialize)]
pub(crate) struct Task {
    pub(crate) id: String,
    pub(crate) user_scenario: UserScenario,
    pub(crate) evaluation_criteria: Criteria,
}

#[derive(Deserialize)]
pub(crate) struct UserScenario {
    pub(crate) instructions: Instructions,
}

#[derive(Deserialize)]
pub(crate) struct Instructions {
    #[serde(default)]
    pub(crate) reason_for_call: String,
    #[serde(default)]
    pub(crate) known_info: Option<String>,
    #[serde(default)]
    pub(crate) unknown_info: Option<String>,
    #[serde(default)]
    pub(crate) task_instructions: String,
}

#[derive(Deserialize)]
pub(crate) struct Criteria {
    #[serde(default)]
    pub(crate) actions: Option<Vec<Action>>,
    #[serde(default)]
    pub(crate) communicate_info: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) nl_assertions: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) reward_basis: Option<Vec<String>>,
}

/// tau2's reward basis names and the scripted world's.
const BASES: [(&str, &str); 3] = [("DB", "Db"), ("COMMUNICATE", "Communicate"), ("NL_ASSERTION", "NlAssertion")];

/// A task's `success`: tau2's strings to communicate, its natural-language
/// assertions (reported, never judged) and its reward basis.
pub(crate) fn success_ron(task: &Task, n: usize, tasks_json: &str) -> Result<String, ImportError> {
    let criteria = &task.evaluation_criteria;
    let mut basis = Vec::new();
    for name in criteria.reward_basis.as_deref().unwrap_or(&["DB".to_string()]) {
        let Some((_, ours)) = BASES.iter().find(|(theirs, _)| theirs == name) else {
            return Err(located(
                tasks_json,
                &format!("\"{name}\""),
                "tasks.json",
                format!(
                    "field `[{n}].evaluation_criteria.reward_basis`: `{name}` is not supported (DB, COMMUNICATE, NL_ASSERTION)"
                ),
            ));
        };
        if !basis.contains(ours) {
            basis.push(*ours);
        }
    }
    let strings = |list: &Option<Vec<String>>| -> String {
        list.iter().flatten().map(|s| ron_string(s)).collect::<Vec<_>>().join(", ")
    };
    Ok(format!(
        "(communicate: [{}], nl_assertions: [{}], reward_basis: [{}])",
        strings(&criteria.communicate_info),
        strings(&criteria.nl_assertions),
        basis.join(", ")
    ))
}

#[derive(Deserialize)]
pub(crate) struct Action {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) arguments: serde_json::Map<String, serde_json::Value>,
    #[serde(default = "assistant")]
    pub(crate) requestor: String,
}

fn assistant() -> String {
    "assistant".into()
}

/// A string arg equal to a fact's value becomes the fact's template.
fn templated(value: &serde_json::Value, facts: &[(String, String)]) -> serde_json::Value {
    match value {
        serde_json::Value::String(text) => match facts.iter().find(|(_, v)| v == text) {
            Some((name, _)) => serde_json::Value::String(format!("{{{name}}}")),
            None => value.clone(),
        },
        other => other.clone(),
    }
}

pub(crate) fn ron_string(text: &str) -> String {
    // JSON string syntax is RON string syntax for these texts (RON reads the
    // same escapes), and a JSON string never holds a raw line break.
    serde_json::to_string(text).expect("a string serialises")
}

/// Data (JSON) written as a RON value: JSON maps, lists, strings, numbers and
/// booleans are RON's data syntax; null is `()`.
pub(crate) fn ron_data(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Null => "()".into(),
        serde_json::Value::Array(items) => format!("[{}]", items.iter().map(ron_data).collect::<Vec<_>>().join(", ")),
        serde_json::Value::Object(pairs) => format!(
            "{{{}}}",
            pairs.iter().map(|(k, v)| format!("{}: {}", ron_string(k), ron_data(v))).collect::<Vec<_>>().join(", ")
        ),
        other => other.to_string(),
    }
}

pub(crate) fn located(text: &str, needle: &str, file: &str, message: String) -> ImportError {
    located_nth(text, needle, 0, file, message)
}

/// [`located`] at the `nth` (0-based) occurrence of `needle`.
fn located_nth(text: &str, needle: &str, nth: usize, file: &str, message: String) -> ImportError {
    let (line, column) = match text.match_indices(needle).nth(nth).map(|(at, _)| at) {
        Some(at) => {
            let before = &text[..at];
            (before.matches('\n').count() + 1, before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1)
        }
        None => (1, 1),
    };
    ImportError { file: file.into(), line, column, message }
}

/// Refuses a task id that an earlier task has: the scenario's loader refuses a
/// task declared twice, so the world would be written and then never load.
pub(crate) fn check_unique_ids(tasks: &[Task], tasks_json: &str) -> Result<(), ImportError> {
    let mut seen: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for (n, task) in tasks.iter().enumerate() {
        if let Some(&first) = seen.get(task.id.as_str()) {
            let before = tasks[..n].iter().filter(|t| t.id == task.id).count();
            return Err(located_nth(
                tasks_json,
                &format!("\"id\": {}", ron_string(&task.id)),
                before,
                "tasks.json",
                format!("field `[{n}].id`: task `{}` is declared twice (first as task [{first}])", task.id),
            ));
        }
        seen.insert(&task.id, n);
    }
    Ok(())
}

/// Task `n`'s actions the assistant takes, each checked against the tool it
/// names (a tool of the port, its arguments of the types the tool takes).
pub(crate) fn assistant_actions<'t>(
    domain: &Domain,
    task: &'t Task,
    n: usize,
    tasks_json: &str,
) -> Result<Vec<&'t Action>, ImportError> {
    let field = |f: &str| format!("field `[{n}].{f}`");
    let actions: Vec<&Action> = task
        .evaluation_criteria
        .actions
        .as_deref()
        .unwrap_or_default()
        .iter()
        .filter(|a| a.requestor == "assistant")
        .collect();
    for (a, action) in actions.iter().enumerate() {
        let Some(shape) = domain.tools.iter().find(|t| t.name == action.name) else {
            return Err(located(
                tasks_json,
                &format!("\"name\": {}", ron_string(&action.name)),
                "tasks.json",
                format!(
                    "{}: unknown tool `{}` (the {} tools: {})",
                    field(&format!("evaluation_criteria.actions[{a}].name")),
                    action.name,
                    domain.name,
                    domain.tools.iter().map(|t| t.name).collect::<Vec<_>>().join(", ")
                ),
            ));
        };
        for (arg, ty) in shape.args {
            if !action.arguments.get(*arg).is_some_and(|v| ty.admits(v)) {
                return Err(located(
                    tasks_json,
                    &format!("\"action_id\": \"{}_{a}\"", task.id),
                    "tasks.json",
                    format!(
                        "{}: tool `{}` takes `{arg}` as a {}",
                        field(&format!("evaluation_criteria.actions[{a}].arguments.{arg}")),
                        action.name,
                        ty.described()
                    ),
                ));
            }
        }
    }
    Ok(actions)
}

/// Task `n` as a task of the scenario: its facts, request, success and gold
/// actions (each write after the user's confirmation).
pub(crate) fn push_task(
    domain: &Domain,
    ron: &mut String,
    task: &Task,
    n: usize,
    actions: &[&Action],
    tasks_json: &str,
) -> Result<(), ImportError> {
    let owned: Vec<Action> = actions
        .iter()
        .map(|a| Action { name: a.name.clone(), arguments: a.arguments.clone(), requestor: a.requestor.clone() })
        .collect();
    let facts = (domain.facts)(task, &owned);
    let i = &task.user_scenario.instructions;
    let mut request = i.reason_for_call.trim().to_string();
    if let Some(known) = i.known_info.as_deref().filter(|k| !k.trim().is_empty()) {
        request = format!("{} {}", known.trim(), request);
    }
    // Braces in the text would read as fact templates.
    let request = request.replace(['{', '}'], "");
    let mut facts_ron: Vec<String> =
        facts.iter().map(|(k, v)| format!("{}: {}", ron_string(k), ron_string(v))).collect();
    if let Some(unknown) = i.unknown_info.as_deref().filter(|u| !u.trim().is_empty()) {
        facts_ron.push(format!("\"unknown_info\": {}", ron_string(unknown.trim())));
    }
    ron.push_str(&format!(
        "            (\n                id: {},\n                description: {},\n                facts: {{{}}},\n                request: {},\n                success: {},\n                gold: [\n",
        ron_string(&task.id),
        ron_string(i.task_instructions.trim()),
        facts_ron.join(", "),
        ron_string(&request),
        success_ron(task, n, tasks_json)?,
    ));
    push_gold(domain, ron, task, &owned, &facts);
    Ok(())
}

/// The gold actions of a task: its `owned` actions with their arguments
/// templated on the `facts`, each write proposed first, and the closing.
fn push_gold(domain: &Domain, ron: &mut String, task: &Task, owned: &[Action], facts: &[(String, String)]) {
    for (a, action) in owned.iter().enumerate() {
        let shape = domain.tools.iter().find(|t| t.name == action.name).expect("checked above");
        let args: serde_json::Map<String, serde_json::Value> =
            action.arguments.iter().map(|(k, v)| (k.clone(), templated(v, facts))).collect();
        let args_ron = ron_data(&serde_json::Value::Object(args));
        if shape.write {
            // tau2's policy: the details, and the user's explicit yes,
            // before any write. The details make each proposal a message
            // of its own (an idempotency layer keys writes by content).
            ron.push_str(&format!(
                "                    (tool: \"send_message\", args: {{\"kind\": \"confirm\", \"action\": \"{}\", \"details\": {args_ron}}}),\n",
                shape.name
            ));
        }
        match (domain.verify)(&action.name, &action.arguments, &owned[..a]) {
            Some((tool, vargs, applied)) if shape.write => ron.push_str(&format!(
                "                    (tool: \"{}\", args: {args_ron}, verify: (tool: \"{tool}\", args: {vargs}, applied: {})),\n",
                action.name,
                ron_string(&applied)
            )),
            _ => ron.push_str(&format!("                    (tool: \"{}\", args: {args_ron}),\n", action.name)),
        }
    }
    let communicate = task.evaluation_criteria.communicate_info.as_deref().unwrap_or_default();
    if !communicate.is_empty() {
        // What the agent must tell the user, said in the closing.
        ron.push_str(&format!(
            "                    (tool: \"send_message\", args: {{\"kind\": \"done\", \"details\": {}}}),\n",
            ron_string(&communicate.join(", "))
        ));
    } else if owned.is_empty() {
        // Nothing to change (the user must be refused or only informed):
        // the gold is to answer and leave the database as it is.
        ron.push_str("                    (tool: \"send_message\", args: {\"kind\": \"done\"}),\n");
    }
    ron.push_str("                ],\n            ),\n");
}

//! Renders a recorded trajectory as a readable timeline.

use std::fmt::Write as _;

use agentsim_engine::time::format_time;
use agentsim_engine::{Catalog, EventKind, Finish, Reply, Trajectory, Value};

/// The longest response body shown on one line before it is cut.
const BODY_CHARS_MAX: usize = 110;

/// One line per event: virtual time, what, details.
pub fn render(t: &Trajectory, catalog: &Catalog) -> String {
    render_events(t, catalog, true)
}

/// [`render`] without a model's diagnostics (its wall-clock latency, where its
/// answer came from, why an attempt failed), which a replay from a cassette or
/// an incident does not repeat: the timeline an incident keeps, which its
/// replay must repeat line for line. Other diagnostics (an external agent's
/// stderr, which its recorded decisions replay) stay.
pub fn render_replayable(t: &Trajectory, catalog: &Catalog) -> String {
    render_events(t, catalog, false)
}

/// Whether an event is a model's diagnostic (see [`render_replayable`]).
fn models_diagnostic(event: &agentsim_engine::Event) -> bool {
    event.diagnostic && matches!(&event.kind, EventKind::Note(n) if n.source == "llm" || n.source == "llm_user")
}

fn render_events(t: &Trajectory, catalog: &Catalog, models_diagnostics: bool) -> String {
    let mut out = String::new();
    // A run of many sessions names the session of each line; the events that
    // only say which session acts are that column.
    let many = !t.sessions.is_empty();
    for event in t.events.iter().filter(|e| models_diagnostics || !models_diagnostic(e)) {
        if matches!(event.kind, EventKind::Session { .. }) {
            continue;
        }
        let time = format_time(event.at_ms);
        let (what, detail) = match &event.kind {
            EventKind::User(m) => ("user".to_string(), m.text.clone()),
            EventKind::Said { text } => ("agent says".to_string(), text.clone()),
            EventKind::Turn { turn, prompt_tokens, completion_tokens, think_ms } => (
                format!("turn {turn}"),
                format!("model call: {prompt_tokens} prompt + {completion_tokens} completion tokens, {think_ms} ms"),
            ),
            EventKind::Call { id, call } => {
                let key = call.idempotency_key.as_ref().map(|k| format!("  key={k}")).unwrap_or_default();
                (format!("call #{id}"), format!("{} {}{key}", catalog.name(call.tool), call.args.render()))
            }
            EventKind::Result { id, reply, latency_ms, fault } => {
                let fault = fault.map(|f| format!("  [fault: {}]", f.name())).unwrap_or_default();
                (format!("result #{id}"), format!("{}  ({latency_ms} ms){fault}", reply_text(reply)))
            }
            EventKind::Note(note) => (note.source.to_string(), format!("{} {}", note.what, compact(&note.detail))),
            EventKind::World { what, detail } => ("world".to_string(), format!("{what} {}", compact(detail))),
            EventKind::Minefield(m) => ("MINEFIELD".to_string(), format!("{}: {}", m.name, m.detail)),
            EventKind::Wait { until_ms: Some(at) } => ("wait".to_string(), format!("until {}", format_time(*at))),
            EventKind::Wait { until_ms: None } => ("wait".to_string(), "for the user".to_string()),
            EventKind::Finish(f) => ("finish".to_string(), finish_text(f)),
            EventKind::End { outcome, reason, verdict } => (
                "END".to_string(),
                format!("{outcome} ({reason}; milestone {}): {}", verdict.milestone, verdict.detail),
            ),
            EventKind::Queued { queue_ms } => ("queued".to_string(), format!("{queue_ms} ms for the model's capacity")),
            EventKind::SessionEnd { reason } => ("session end".to_string(), reason.clone()),
            EventKind::Session { .. } => unreachable!("skipped above"),
        };
        if many {
            let session = event.session.map_or_else(|| "world".to_string(), |s| format!("s{s}"));
            let _ = write!(out, "{time}  {session:<6}");
            let _ = writeln!(out, "{what:<13} {}", printable(&detail));
            continue;
        }
        let _ = writeln!(out, "{time}  {what:<13} {}", printable(&detail));
    }
    out
}

/// `text` with every control character escaped (`\u{1b}`, `\n`): names and
/// messages from files and agents reach the terminal as visible text, never as
/// escape sequences, and a timeline event stays on one line.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

fn reply_text(reply: &Reply) -> String {
    match reply {
        Reply::Ok(body) => format!("200 {}", cut(&body.render())),
        Reply::Error { status, retry_after_ms: Some(ms), message } => {
            format!("{status} {message} (retry after {ms} ms)")
        }
        Reply::Error { status, message, .. } => format!("{status} {message}"),
        Reply::Timeout => "timeout (no answer)".to_string(),
        Reply::Garbled(text) => format!("200 unparseable body: {}", cut(text)),
    }
}

fn finish_text(f: &Finish) -> String {
    match f {
        Finish::Done => "done".to_string(),
        Finish::Absent => "absent (no agent came)".to_string(),
        Finish::GaveUp { reason } => format!("gave up: {reason}"),
        Finish::Halted { layer, reason } => format!("halted by {layer}: {reason}"),
        Finish::Failed { reason } => format!("failed: {reason}"),
    }
}

fn compact(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::Str(s) => s.clone(),
        other => cut(&other.render()),
    }
}

fn cut(text: &str) -> String {
    if text.chars().count() <= BODY_CHARS_MAX {
        text.to_string()
    } else {
        let head: String = text.chars().take(BODY_CHARS_MAX).collect();
        format!("{head}…")
    }
}

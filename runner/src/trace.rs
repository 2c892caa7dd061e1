//! Production traces: one JSON object per tool call, turned into a scenario whose
//! tools replay the recorded latencies and failures (`ToolConfig::trace`). The
//! format is documented in `docs/traces.md`.

use std::collections::BTreeMap;

use serde::Deserialize;

use agentsim_engine::{Fault, MalformedKind, TIME_MS_MAX, TimeMs, TracedCall};
use agentsim_worlds::{Scenario, ScenarioError};

/// The most records one trace may hold: a bound, like every input.
pub const RECORDS_MAX: usize = 100_000;

/// One recorded tool call.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    /// RFC 3339 UTC time (`2026-11-02T10:15:03.120Z`); or `ts_ms`.
    #[serde(default)]
    timestamp: Option<String>,
    /// Milliseconds on any clock; or `timestamp`.
    #[serde(default)]
    ts_ms: Option<u64>,
    tool: String,
    /// Kept in the trace for its reader; the world model answers the call.
    #[serde(default, rename = "arguments")]
    _arguments: Option<serde::de::IgnoredAny>,
    /// HTTP status; absent or null when no answer came back.
    #[serde(default)]
    status: Option<u16>,
    #[serde(default, deserialize_with = "agentsim_engine::time::bounded_ms_opt")]
    latency_ms: Option<TimeMs>,
    /// `"timeout"` when no answer came back; otherwise the error message.
    #[serde(default)]
    error: Option<String>,
    #[serde(default, deserialize_with = "agentsim_engine::time::bounded_ms_opt")]
    retry_after_ms: Option<TimeMs>,
    /// For a timed-out write: the server applied it although the answer was lost.
    #[serde(default)]
    committed: bool,
    /// The body broke the schema: `missing_field`, `wrong_type`, `truncated`, `garbage`.
    #[serde(default)]
    malformed: Option<String>,
    /// Kept in the trace for its reader; the world model answers the call.
    #[serde(default, rename = "body")]
    _body: Option<serde::de::IgnoredAny>,
}

/// A parsed trace: per tool, its calls in recorded order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    /// Tool name → its calls, in the order they were made.
    pub calls: BTreeMap<String, Vec<TracedCall>>,
    /// Number of records.
    pub records: usize,
    /// Records that were failures.
    pub failures: usize,
    /// Virtual span of the trace, first to last timestamp.
    pub span_ms: u64,
}

/// Parses JSON lines; `origin` names the file in errors. `tools` are the names the
/// scenario knows.
pub fn parse(text: &str, origin: &str, tools: &[String]) -> Result<Trace, ScenarioError> {
    let error = |line: usize, column: usize, message: String| ScenarioError {
        origin: origin.to_string(),
        line,
        column,
        message,
    };
    // (time, line, column of the time field, record)
    let mut timed: Vec<(u64, usize, usize, Record)> = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        if timed.len() >= RECORDS_MAX {
            return Err(error(number, 1, format!("a trace holds at most {RECORDS_MAX} records")));
        }
        let record: Record =
            serde_json::from_str(line).map_err(|e| error(number, e.column(), json_message(line, &e)))?;
        let at_ms = match (&record.timestamp, record.ts_ms) {
            (_, Some(ms)) => ms,
            (Some(ts), None) => rfc3339_ms(ts).ok_or_else(|| {
                error(
                    number,
                    1,
                    format!("field `timestamp`: expected RFC 3339 UTC like 2026-11-02T10:15:03.120Z, found `{ts}`"),
                )
            })?,
            (None, None) => {
                return Err(error(number, 1, "field `timestamp`: each record needs `timestamp` or `ts_ms`".into()));
            }
        };
        if !tools.contains(&record.tool) {
            return Err(error(
                number,
                1,
                format!("field `tool`: the scenario has no tool `{}` (its tools: {})", record.tool, tools.join(", ")),
            ));
        }
        let field = if record.ts_ms.is_some() { "\"ts_ms\"" } else { "\"timestamp\"" };
        let column = line.find(field).map_or(1, |at| line[..at].chars().count() + 1);
        timed.push((at_ms, number, column, record));
    }
    if timed.is_empty() {
        return Err(error(1, 1, "the trace holds no records (one JSON object per line, docs/traces.md)".into()));
    }
    // Stable: records with the same time keep their order in the file.
    timed.sort_by_key(|(at_ms, number, _, _)| (*at_ms, *number));
    let mut trace = Trace { span_ms: span_ms(&timed).map_err(|(l, c, m)| error(l, c, m))?, ..Trace::default() };
    for (_, number, _, record) in timed {
        let fault =
            fault_of(&record).map_err(|(field, message)| error(number, 1, format!("field `{field}`: {message}")))?;
        trace.records += 1;
        trace.failures += usize::from(fault.is_some());
        trace.calls.entry(record.tool.clone()).or_default().push(TracedCall { latency_ms: record.latency_ms, fault });
    }
    Ok(trace)
}

/// The span of `timed` (sorted by time), first to last record: at most
/// `TIME_MS_MAX` like every duration read, else the clock of the replayed
/// calls could wrap. Refused at the latest record's time field, naming the
/// earliest record's line.
fn span_ms(timed: &[(u64, usize, usize, Record)]) -> Result<u64, (usize, usize, String)> {
    let (Some(first), Some(last)) = (timed.first(), timed.last()) else { return Ok(0) };
    let field = if last.3.ts_ms.is_some() { "ts_ms" } else { "timestamp" };
    let span_ms = last.0 - first.0;
    if span_ms > TIME_MS_MAX {
        return Err((
            last.1,
            last.2,
            format!(
                "field `{field}`: expected at most {TIME_MS_MAX} ms (ten years) after the earliest record (line {}), found {span_ms}",
                first.1
            ),
        ));
    }
    Ok(span_ms)
}

/// serde_json's message without its position (the line is the file's, not the
/// JSON text's), naming the field whose value was wrong when serde did not.
fn json_message(line: &str, e: &serde_json::Error) -> String {
    let text = e.to_string();
    let text = text.rsplit_once(" at line ").map_or(text.as_str(), |(message, _)| message).to_string();
    if !(text.starts_with("invalid type") || text.starts_with("invalid value") || text.starts_with("expected at most"))
    {
        return text;
    }
    // The key is the last `"name":` before the column where the value failed.
    let before = line.get(..e.column().min(line.len())).unwrap_or(line);
    let key = before.rfind("\":").and_then(|end| {
        let start = before[..end].rfind('"')? + 1;
        Some(&before[start..end])
    });
    match key {
        Some(key) => format!("field `{key}`: {text}"),
        None => text,
    }
}

fn fault_of(r: &Record) -> Result<Option<Fault>, (&'static str, String)> {
    if let Some(kind) = &r.malformed {
        let kind = match kind.as_str() {
            "missing_field" => MalformedKind::MissingField,
            "wrong_type" => MalformedKind::WrongType,
            "truncated" => MalformedKind::Truncated,
            "garbage" => MalformedKind::Garbage,
            other => {
                return Err((
                    "malformed",
                    format!("expected missing_field, wrong_type, truncated or garbage, found `{other}`"),
                ));
            }
        };
        return Ok(Some(Fault::Malformed(kind)));
    }
    let timed_out = r.error.as_deref().is_some_and(|e| e.eq_ignore_ascii_case("timeout"));
    Ok(match r.status {
        None if timed_out && r.committed => Some(Fault::CommitThenTimeout),
        None if timed_out => Some(Fault::Timeout),
        None => return Err(("status", "a record without a status must have `\"error\": \"timeout\"`".into())),
        Some(401) => Some(Fault::AuthExpired),
        Some(status @ 400..=599) => Some(Fault::Error { status, retry_after_ms: r.retry_after_ms }),
        Some(200..=299) => None,
        Some(other) => return Err(("status", format!("expected 2xx, 4xx or 5xx, found {other}"))),
    })
}

/// Milliseconds since 1970 for an RFC 3339 UTC timestamp (`Z` only; fractional
/// seconds optional, read to the millisecond).
fn rfc3339_ms(text: &str) -> Option<u64> {
    let text = text.strip_suffix('Z').or_else(|| text.strip_suffix("+00:00"))?;
    let (date, time) = text.split_once('T')?;
    let mut d = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (year, month, day) = (d.next()??, d.next()??, d.next()??);
    let (hms, fraction) = time.split_once('.').unwrap_or((time, "0"));
    let mut t = hms.splitn(3, ':').map(|p| p.parse::<i64>().ok());
    let (hour, minute, second) = (t.next()??, t.next()??, t.next()??);
    // Four-digit years, as RFC 3339 has: the day count below cannot overflow.
    if !(0..=9999).contains(&year)
        || !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let millis: i64 = format!("{:0<3}", fraction.get(..3.min(fraction.len()))?).parse().ok()?;
    // Days from civil (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(((days * 24 + hour) * 60 + minute) * 60_000 + second * 1_000 + millis).ok()
}

/// `scenario` with the trace's calls on its tools.
pub fn apply(scenario: &Scenario, trace: &Trace) -> Scenario {
    let mut edited = scenario.clone();
    for (name, config) in edited.tool_configs_mut() {
        if let Some(calls) = trace.calls.get(&name) {
            config.trace = calls.clone();
        }
    }
    edited
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_reads_dates_and_milliseconds() {
        assert_eq!(rfc3339_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(rfc3339_ms("1970-01-02T00:00:01.5Z"), Some(86_401_500));
        assert_eq!(rfc3339_ms("2000-03-01T00:00:00Z"), Some(951_868_800_000));
        assert_eq!(rfc3339_ms("2026-13-01T00:00:00Z"), None);
        assert_eq!(rfc3339_ms("yesterday"), None);
    }
}

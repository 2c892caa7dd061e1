//! Random cases: a world, a stack, a seed, a fault scale and an explicit fault
//! schedule drawn from the input, every fault kind included (the quiet ones
//! shaped to fit their tool, as a scenario file must). Every run must end within
//! its bounds.
#![no_main]
use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;

use agentsim_property::{Case, builtin, run_case};
use agentsim::shrink::ToolFault;
use agentsim_engine::tool::ToolDef;
use agentsim_engine::{
    CallFault, Corruption, Fault, FieldPath, InjectedArg, InjectionStyle, MalformedKind, ToolKind, ValueKind,
};

/// Stack files whose layers answer the quiet faults, beside the presets.
const STACK_FILES: [&str; 3] = [
    include_str!("../../seeds/stacks/cross_check.ron"),
    include_str!("../../seeds/stacks/provenance.ron"),
    include_str!("../../seeds/stacks/verify_write.ron"),
];

fn fault(u: &mut Unstructured<'_>, def: &ToolDef, tools: &[ToolDef]) -> arbitrary::Result<Fault> {
    Ok(match u.int_in_range(0..=12)? {
        0 => Fault::Error { status: u.int_in_range(400..=599)?, retry_after_ms: Option::<u32>::arbitrary(u)?.map(u64::from) },
        1 => Fault::Timeout,
        2 => Fault::Latency { extra_ms: u64::from(u16::arbitrary(u)?) * 10 },
        3 => Fault::Malformed(*u.choose(&[
            MalformedKind::MissingField,
            MalformedKind::WrongType,
            MalformedKind::Truncated,
            MalformedKind::Garbage,
        ])?),
        4 => Fault::AuthExpired,
        5 => Fault::Stale { lag_ms: u64::from(u32::arbitrary(u)?) },
        6 => Fault::CommitThenTimeout,
        7 => Fault::RateLimit { capacity: 1, refill_ms: 1 },
        9 => corrupt(u, def)?,
        10 => inject(u, def, tools)?,
        11 if def.kind == ToolKind::Write => Fault::DuplicateEffect,
        12 if def.kind == ToolKind::Write => match def.args.iter().find(|a| a.kind == ValueKind::Int) {
            Some(arg) => Fault::PartialCommit { arg: arg.name.clone(), percent: u.int_in_range(1..=99)? },
            None => Fault::DuplicateEffect,
        },
        _ => Fault::Error { status: 503, retry_after_ms: None },
    })
}

fn path(name: &str) -> FieldPath {
    FieldPath::try_from(name.to_string()).expect("a documented field is a path")
}

/// A corruption of one documented field, of a kind that field keeps.
fn corrupt(u: &mut Unstructured<'_>, def: &ToolDef) -> arbitrary::Result<Fault> {
    let fields: Vec<_> = def
        .response
        .iter()
        .filter(|f| matches!(f.kind, ValueKind::Str | ValueKind::Int | ValueKind::Float | ValueKind::List))
        .collect();
    let Ok(field) = u.choose(&fields) else { return Ok(Fault::Timeout) };
    let corruption = match field.kind {
        _ if def.kind == ToolKind::Read && bool::arbitrary(u)? => Corruption::Old { lag_ms: u64::from(u32::arbitrary(u)?) },
        ValueKind::Str => Corruption::OneOf(vec![String::from("delivered")]),
        ValueKind::Int if bool::arbitrary(u)? => Corruption::Offset(i64::from(i16::arbitrary(u)?).max(1)),
        ValueKind::List => Corruption::DropItem,
        _ => Corruption::Factor(*u.choose(&[0.5, 2.0, 10.0])?),
    };
    Ok(Fault::Corrupt { path: path(&field.name), corruption })
}

/// Instructions planted in a string field, asking for a call to any tool.
fn inject(u: &mut Unstructured<'_>, def: &ToolDef, tools: &[ToolDef]) -> arbitrary::Result<Fault> {
    let texts: Vec<_> = def.response.iter().filter(|f| f.kind == ValueKind::Str).collect();
    let (Ok(field), Ok(target)) = (u.choose(&texts), u.choose(tools)) else { return Ok(Fault::Timeout) };
    let style = *u.choose(&[InjectionStyle::IgnorePrevious, InjectionStyle::SystemNotice, InjectionStyle::UserNote])?;
    let mut args = std::collections::BTreeMap::new();
    if let Ok(arg) = u.choose(&target.args) {
        let value = match arg.kind {
            ValueKind::Int => InjectedArg::Int(i64::from(u16::arbitrary(u)?)),
            _ => InjectedArg::Str(format!("X{}", u16::arbitrary(u)?)),
        };
        args.insert(arg.name.clone(), value);
    }
    Ok(Fault::Inject { path: path(&field.name), style, tool: target.name.clone(), args })
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(world) = u.choose(&["support_desk", "flight_booking", "newsroom", "weather_dining"]) else { return };
    let Ok(stack) = u.int_in_range(0..=7usize) else { return };
    let Ok(seed) = u64::arbitrary(&mut u) else { return };
    let prepared = builtin(world);
    let defs: Vec<ToolDef> = prepared.catalog.specs().iter().map(|s| s.def.clone()).collect();
    let mut faults = Vec::new();
    while let Ok(true) = bool::arbitrary(&mut u) {
        let Ok(def) = u.choose(&defs) else { break };
        let (Ok(call), Ok(f)) = (u.int_in_range(1..=40u64), fault(&mut u, def, &defs)) else { break };
        faults.push(ToolFault { tool: def.name.clone(), fault: CallFault { call, fault: f } });
        if faults.len() > 64 {
            break;
        }
    }
    let stack = match ["oracle", "naive", "retry", "backoff", "resilient"].get(stack) {
        Some(preset) => agentsim_agents::preset(preset).expect("preset exists"),
        None => agentsim::spec::parse_stack(STACK_FILES[stack - 5], "stack file").expect("the stack files parse"),
    };
    let t = run_case(&prepared, &stack, &Case { seed, faults });
    let b = &prepared.scenario.budgets;
    assert!(t.metrics.events <= b.events_max + 64, "events bounded: {}", t.metrics.events);
    assert!(t.metrics.virtual_ms <= prepared.scenario.horizon_ms, "horizon bounded");
    assert!(t.metrics.tool_calls <= b.tool_calls_max, "tool calls bounded");
});

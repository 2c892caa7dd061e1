//! Random cases: a world, a preset, a seed, a fault scale and an explicit fault
//! schedule drawn from the input. Every run must end within its bounds.
#![no_main]
use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;

use agentsim::property::{Case, builtin, run_case};
use agentsim::shrink::ToolFault;
use agentsim_engine::{CallFault, Fault, MalformedKind};

fn fault(u: &mut Unstructured<'_>) -> arbitrary::Result<Fault> {
    Ok(match u.int_in_range(0..=8)? {
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
        _ => Fault::Error { status: 503, retry_after_ms: None },
    })
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(world) = u.choose(&["support_desk", "flight_booking", "newsroom", "weather_dining"]) else { return };
    let Ok(preset) = u.choose(&["oracle", "naive", "retry", "backoff", "resilient"]) else { return };
    let Ok(seed) = u64::arbitrary(&mut u) else { return };
    let prepared = builtin(world);
    let tools: Vec<String> = prepared.catalog.specs().iter().map(|s| s.def.name.clone()).collect();
    let mut faults = Vec::new();
    while let Ok(true) = bool::arbitrary(&mut u) {
        let (Ok(tool), Ok(call), Ok(f)) = (u.choose(&tools), u.int_in_range(1..=40u64), fault(&mut u)) else { break };
        faults.push(ToolFault { tool: tool.clone(), fault: CallFault { call, fault: f } });
        if faults.len() > 64 {
            break;
        }
    }
    let stack = agentsim_agents::preset(preset).expect("preset exists");
    let t = run_case(&prepared, &stack, &Case { seed, faults });
    let b = &prepared.scenario.budgets;
    assert!(t.metrics.events <= b.events_max + 64, "events bounded: {}", t.metrics.events);
    assert!(t.metrics.virtual_ms <= prepared.scenario.horizon_ms, "horizon bounded");
    assert!(t.metrics.tool_calls <= b.tool_calls_max, "tool calls bounded");
});

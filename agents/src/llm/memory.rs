//! The answers this process has had, by request key: every answer a model
//! gave (live, from a cassette or from an incident) is kept, and a request
//! asked again in the same process gets the same answer.
//!
//! Two things rest on it. A sweep re-runs its failing seeds to record them as
//! incidents: the re-run gets the answers the sweep had, so the incident is
//! the row it stands for, cassette or not. And an incident embeds the answers
//! its episode used (`Incident::answers`), found here, so that `agentsim
//! replay` and `shrink` need no cassette and no network.
//!
//! It holds at most [`MEMORY_BYTES_MAX`] bytes of responses; past that, new
//! answers are not kept (an incident then finds its answers in the cassette
//! folder, when there is one).

use std::collections::BTreeMap;
use std::sync::Mutex;

use super::cassette::Entry;

/// The most bytes of responses (as JSON text) kept.
pub const MEMORY_BYTES_MAX: u64 = 1 << 30;

struct Memory {
    entries: BTreeMap<String, Entry>,
    bytes: u64,
}

static MEMORY: Mutex<Memory> = Mutex::new(Memory { entries: BTreeMap::new(), bytes: 0 });

fn memory() -> std::sync::MutexGuard<'static, Memory> {
    MEMORY.lock().unwrap_or_else(|p| p.into_inner())
}

/// The answer this process had for `key`, if any.
pub fn recall(key: &str) -> Option<Entry> {
    memory().entries.get(key).cloned()
}

/// Keeps the answer to `key` (the first one kept stays: every later asker
/// read it), while the memory has room.
pub fn keep(key: &str, entry: &Entry) {
    let bytes = entry.response.to_string().len() as u64;
    let mut memory = memory();
    if memory.entries.contains_key(key) || memory.bytes.saturating_add(bytes) > MEMORY_BYTES_MAX {
        return;
    }
    memory.bytes += bytes;
    memory.entries.insert(key.to_string(), entry.clone());
}

//! Names from scenario files that the engine keeps as `&'static str`
//! (milestones, minefields): each distinct name is stored once per process, so
//! loading a scenario many times does not grow memory.

use std::collections::BTreeSet;
use std::sync::Mutex;

/// The process-wide copy of `name`.
pub fn intern(name: &str) -> &'static str {
    static NAMES: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    // A poisoned lock only means another thread panicked while inserting; the
    // set itself is still consistent (an insert is one step).
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(stored) = names.get(name) {
        return stored;
    }
    let stored: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.insert(stored);
    stored
}

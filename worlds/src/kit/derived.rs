//! A value derived from a world's configuration once per process, kept beside
//! it: look-ups by id, built on first use by whichever trajectory needs them
//! first and read by every other (on any thread).
//!
//! A configuration is cloned into its world model (`WorldKind::model`) and
//! never changed after; a clone starts empty, so a changed copy never reads
//! what was derived from the original. It is no part of the configuration's
//! form: not serialized, not compared, not in the scenario's key.
//!
//! The value's type is named where it is made, not where it is kept: a
//! configuration holds a `Derived` without importing what is derived from it
//! (which imports the configuration), so neither module imports the other.

use std::any::Any;
use std::sync::OnceLock;

/// A value derived on first use from the configuration holding it.
pub struct Derived(OnceLock<Box<dyn Any + Send + Sync>>);

impl Derived {
    /// The derived value, made by `make` the first time. One configuration
    /// field derives one type: asking for another is a bug, and panics.
    pub fn get_or_init<T: Any + Send + Sync>(&self, make: impl FnOnce() -> T) -> &T {
        let value = self.0.get_or_init(|| Box::new(make()));
        value.downcast_ref::<T>().expect("a Derived field always derives the same type")
    }
}

impl Default for Derived {
    fn default() -> Self {
        Derived(OnceLock::new())
    }
}

impl Clone for Derived {
    /// Empty: the clone derives its own from its own configuration.
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl PartialEq for Derived {
    /// Always equal: what is derived follows from what is compared.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for Derived {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() { "Derived(made)" } else { "Derived(not yet)" })
    }
}

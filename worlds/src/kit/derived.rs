//! A value derived from a world's configuration once per process, kept beside
//! it: look-ups by id, built on first use by whichever trajectory needs them
//! first and read by every other (on any thread).
//!
//! A configuration is cloned into its world model (`WorldKind::model`) and
//! never changed after; a clone starts empty, so a changed copy never reads
//! what was derived from the original. It is no part of the configuration's
//! form: not serialized, not compared, not in the scenario's key.

use std::sync::OnceLock;

/// `T`, derived on first use from the configuration holding it.
pub struct Derived<T>(OnceLock<T>);

impl<T> Derived<T> {
    /// The derived value, made by `make` the first time.
    pub fn get_or_init(&self, make: impl FnOnce() -> T) -> &T {
        self.0.get_or_init(make)
    }
}

impl<T> Default for Derived<T> {
    fn default() -> Self {
        Derived(OnceLock::new())
    }
}

impl<T> Clone for Derived<T> {
    /// Empty: the clone derives its own from its own configuration.
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl<T> PartialEq for Derived<T> {
    /// Always equal: what is derived follows from what is compared.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<T> std::fmt::Debug for Derived<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() { "Derived(made)" } else { "Derived(not yet)" })
    }
}

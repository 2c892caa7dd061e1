//! worlds
